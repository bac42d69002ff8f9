"""Which matrix-instruction rows the amdgpu lowering can emit.

The lowering emits `amdgpu.mfma` (MLIR's AMDGPU dialect), which ROCDL turns
into the `llvm.amdgcn.mfma.*` intrinsic of the row's shape and types: only
MFMAs. A row of another kind (RDNA's `v_wmma_*`, a sparse `v_smfmac_*`) would
be emitted as the MFMA of its shape, so such a descriptor is refused when it
is loaded. Of the MFMA rows, selection takes those whose lane layout
`tilemlir/mma_layouts.py` documents (one block, 16x16 or 32x32, wave64); the
others (4x4, multi-block) stay in the table as facts for the peak numbers.

    check_mma_row(wmma_row, target)
    # "'v_wmma_f32_16x16x16_f16' is not an MFMA: the amdgpu lowering emits amdgpu.mfma only ..."
"""

from __future__ import annotations

import re

from tilemlir.targets.model import MmaInstr, Target, is_unknown

MNEMONIC_PREFIX = "v_mfma_"
INTRINSIC_PREFIX = "llvm.amdgcn.mfma."
# The first MxNxK in a mnemonic or intrinsic: v_mfma_f32_32x32x8_f16, llvm.amdgcn.mfma.f32.32x32x8f16.
SHAPE = re.compile(r"(\d+)x(\d+)x(\d+)")

SUPPORTED = (
    f"the amdgpu lowering emits amdgpu.mfma only: rows named {MNEMONIC_PREFIX}* with an "
    f"intrinsic {INTRINSIC_PREFIX}*, their MxNxK the row's m, n, k; selection takes the "
    "MFMAs with a lane layout in tilemlir/mma_layouts.py (one block, 16x16 or 32x32, wave64)"
)


def check_mma_row(row: MmaInstr, target: Target) -> str | None:
    """Why the amdgpu lowering cannot emit `row`, or None."""
    intrinsic = row.intrinsic if not is_unknown(row.intrinsic) else ""
    if not row.name.startswith(MNEMONIC_PREFIX) or (intrinsic and not intrinsic.startswith(INTRINSIC_PREFIX)):
        return f"'{row.name}' ({intrinsic or 'no intrinsic'}) is not an MFMA; {SUPPORTED}"
    for what, text in (("name", row.name), ("intrinsic", intrinsic)):
        shape = SHAPE.search(text)
        if text and (shape is None or tuple(map(int, shape.groups())) != (row.m, row.n, row.k)):
            said = "x".join(shape.groups()) if shape else "no MxNxK"
            return (f"its {what} '{text}' says {said}, but m, n, k = {row.m}, {row.n}, {row.k}; "
                    f"{SUPPORTED}")
    return None
