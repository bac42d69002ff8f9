"""Which matrix-instruction rows the nvidia lowering can emit.

Rows are PTX instructions, named as PTX spells them; the lowering emits
warp-level `mma.sync.aligned.mMnNkK.*` (nvgpu.mma.sync, or inline PTX for fp8:
`matrix.py`) and, on sm_90a, warpgroup-level `wgmma.mma_async.sync.aligned.*`
(`wgmma.py`, which picks a row as wgmma by that name). A row of another kind
would be lowered as an mma.sync of its shape, so it is refused when the file
is loaded, as is a wgmma row on a chip other than sm_90a (PTX ISA, "wgmma":
requires sm_90a) and a name whose mMnNkK disagrees with the row's shape.

    check_mma_row(row, target)   # None, or what is wrong and what is supported
"""

from __future__ import annotations

import re

from tilemlir.targets.model import MmaInstr, Target

# PTX ISA 8.5, "Warp Level Matrix Multiply-Accumulate Instructions" and
# "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions".
ROW_NAME = re.compile(r"(?P<kind>mma\.sync\.aligned|wgmma\.mma_async\.sync\.aligned)"
                      r"\.m(?P<m>\d+)n(?P<n>\d+)k(?P<k>\d+)\..+")
WGMMA_CHIPS = frozenset({"sm_90a"})

SUPPORTED = (
    "the nvidia lowering emits PTX mma.sync.aligned.mMnNkK.* (warp level; it selects m16n8k16 "
    "and m16n8k32) and, on sm_90a, wgmma.mma_async.sync.aligned.m64nNkK.* (warpgroup level; K 16 "
    "or 32, N a multiple of 8 up to 256), each named as PTX spells it"
)


def check_mma_row(row: MmaInstr, target: Target) -> str | None:
    """Why the nvidia lowering cannot emit `row` on `target`, or None."""
    parsed = ROW_NAME.fullmatch(row.name)
    if parsed is None:
        return f"'{row.name}' is not a PTX mma.sync or wgmma instruction; {SUPPORTED}"
    shape = (int(parsed["m"]), int(parsed["n"]), int(parsed["k"]))
    if shape != (row.m, row.n, row.k):
        return (f"its name says m{shape[0]}n{shape[1]}k{shape[2]}, but m, n, k = "
                f"{row.m}, {row.n}, {row.k}; {SUPPORTED}")
    if parsed["kind"].startswith("wgmma") and target.processor not in WGMMA_CHIPS:
        return f"wgmma needs sm_90a, not {target.processor}; {SUPPORTED}"
    return None
