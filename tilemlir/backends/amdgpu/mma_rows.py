"""Which matrix-instruction rows the amdgpu lowering can emit.

The lowering emits `amdgpu.mfma` on CDNA and `amdgpu.wmma` on RDNA (MLIR's
AMDGPU dialect), which ROCDL turns into the `llvm.amdgcn.mfma.*` or
`llvm.amdgcn.wmma.*` intrinsic of the row's shape and types. A row of another
kind (a sparse `v_smfmac_*` or `v_swmmac_*`) would be emitted as the dense
instruction of its shape, so such a descriptor is refused when it is loaded;
so is a WMMA row on a target whose `architecture` is not a WMMA generation
whose lane layouts `tilemlir/mma_layouts.py` documents (RDNA3, RDNA4: wave32),
and an MFMA row on such a target. Of the rows left, selection takes those whose
lane layout is documented (MFMA: one block, 16x16 or 32x32, wave64; WMMA:
16x16x16, wave32); the others stay in the table as facts for the peak numbers.

    check_mma_row(wmma_row, gfx942)
    # "'v_wmma_f32_16x16x16_f16' is a WMMA, but CDNA3 is not an architecture ..."
"""

from __future__ import annotations

import re

from tilemlir.mma_layouts import WMMA_GENERATIONS, WMMA_WAVE
from tilemlir.targets.model import MmaInstr, Target, is_unknown

# Mnemonic and intrinsic prefixes of each kind, and whether the kind is RDNA's.
KINDS = {"MFMA": ("v_mfma_", "llvm.amdgcn.mfma.", False), "WMMA": ("v_wmma_", "llvm.amdgcn.wmma.", True)}
# The first MxNxK in a mnemonic or intrinsic: v_mfma_f32_32x32x8_f16, llvm.amdgcn.mfma.f32.32x32x8f16.
SHAPE = re.compile(r"(\d+)x(\d+)x(\d+)")

SUPPORTED = (
    "the amdgpu lowering emits amdgpu.mfma (rows named v_mfma_* with an intrinsic "
    "llvm.amdgcn.mfma.*) on CDNA and amdgpu.wmma (v_wmma_*, llvm.amdgcn.wmma.*) on "
    f"{', '.join(WMMA_GENERATIONS)} in wave{WMMA_WAVE}, their MxNxK the row's m, n, k; selection "
    "takes those with a lane layout in tilemlir/mma_layouts.py (MFMA: one block, 16x16 or 32x32, "
    "wave64; WMMA: 16x16x16)"
)


def check_mma_row(row: MmaInstr, target: Target) -> str | None:
    """Why the amdgpu lowering cannot emit `row` on `target`, or None."""
    intrinsic = row.key("intrinsic")
    intrinsic = "" if is_unknown(intrinsic) else intrinsic
    kind = next((name for name, (mnemonic, _, _) in KINDS.items() if row.name.startswith(mnemonic)), None)
    if kind is None or (intrinsic and not intrinsic.startswith(KINDS[kind][1])):
        return f"'{row.name}' ({intrinsic or 'no intrinsic'}) is neither an MFMA nor a WMMA; {SUPPORTED}"
    rdna = target.architecture in WMMA_GENERATIONS and target.compute.wave_size == WMMA_WAVE
    if KINDS[kind][2] != rdna:
        wave = target.compute.wave_size
        where = (f"{target.architecture} in {f'wave{wave}' if not is_unknown(wave) else 'waves of unknown size'}"
                 f" is {'a WMMA' if rdna else 'not a WMMA'} target")
        return f"'{row.name}' is {'a WMMA' if kind == 'WMMA' else 'an MFMA'}, but {where}; {SUPPORTED}"
    for what, text in (("name", row.name), ("intrinsic", intrinsic)):
        shape = SHAPE.search(text)
        if text and (shape is None or tuple(map(int, shape.groups())) != (row.m, row.n, row.k)):
            said = "x".join(shape.groups()) if shape else "no MxNxK"
            return (f"its {what} '{text}' says {said}, but m, n, k = {row.m}, {row.n}, {row.k}; "
                    f"{SUPPORTED}")
    return None
