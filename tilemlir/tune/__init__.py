"""The tuner: tile-tune's search over kernel configurations and its database.

`search.py` lists a problem's candidate configurations, compiles them (through
the passes and the driver) and ranks them, by the cost model
(`tilemlir.cost`) or by measurement; `ranking.py` orders the results;
`db.py` is the tuning database that tile-compile reads.

Where this package sits (DESIGN.md section 2): above `tilemlir.compiler`,
since it drives compiles; the cost model it ranks with lives below the passes
(`tilemlir.cost`), which consult it too. This module imports nothing, so
importing `tilemlir.tune.db` never drags the search in.
"""
