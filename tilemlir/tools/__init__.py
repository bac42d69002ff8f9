"""Command-line tools: tile-opt, tile-compile, tile-run and tile-tune.

Each is a short-lived process whose NumPy (the MLIR bindings import it) would
start OpenBLAS's thread pool, one thread per core, for arrays far too small to
share out: about 0.1 s of CPU a start, a third of tile-opt's. The tools ask
for one thread unless the environment says otherwise (OPENBLAS_NUM_THREADS);
this package is imported before any of them imports NumPy.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
