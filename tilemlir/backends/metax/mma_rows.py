"""Which matrix-instruction rows the metax lowering can emit.

The lowering calls the MACA built-in `__builtin_mxc_<row name>` with MetaX's
16x16 wave64 lane layout (`matrix.py`, `builtin_name`): every MetaX MMA is
16x16 ("all the M,N are {16,16}", mcTriton MMAMACA.cpp) and runs on a wave of
64 lanes (mcTlass kWarpSize = 64). A row that is not such a built-in, whose
`builtin` is not the name the lowering calls, or whose name disagrees with its
shape would be emitted as something else, so it is refused when the file is
loaded.

    check_mma_row(row, target)   # None, or what is wrong and what is supported
"""

from __future__ import annotations

import re

from tilemlir.targets.model import MmaInstr, Target, is_unknown

BUILTIN_PREFIX = "__builtin_mxc_"  # matrix.builtin_name puts it before the row's name
ROW_NAME = re.compile(r"mma_(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)[a-z0-9]+")
TILE = 16
WAVE = 64

SUPPORTED = (
    f"the metax lowering calls {BUILTIN_PREFIX}mma_MxNxK<type> built-ins, 16x16 on a wave of "
    f"{WAVE} lanes (lane layouts in tilemlir/backends/metax/matrix.py): a row named "
    f"mma_16x16xK<type> whose builtin is {BUILTIN_PREFIX} followed by its name"
)


def check_mma_row(row: MmaInstr, target: Target) -> str | None:
    """Why the metax lowering cannot emit `row` on `target`, or None."""
    parsed = ROW_NAME.fullmatch(row.name)
    if parsed is None:
        return f"'{row.name}' is not a MetaX MMA built-in name; {SUPPORTED}"
    shape = (int(parsed["m"]), int(parsed["n"]), int(parsed["k"]))
    if shape != (row.m, row.n, row.k):
        return (f"its name says {shape[0]}x{shape[1]}x{shape[2]}, but m, n, k = "
                f"{row.m}, {row.n}, {row.k}; {SUPPORTED}")
    if (row.m, row.n) != (TILE, TILE):
        return f"a {row.m}x{row.n} instruction; {SUPPORTED}"
    builtin = row.key("builtin")
    if builtin != BUILTIN_PREFIX + row.name:
        return f"builtin '{builtin}' is not the one the lowering calls ({BUILTIN_PREFIX}{row.name}); {SUPPORTED}"
    wave = target.compute.wave_size
    if not is_unknown(wave) and wave != WAVE:
        return f"MetaX MMAs run on a wave of {WAVE} lanes, not {wave}; {SUPPORTED}"
    return None
