"""The MetaX GPU backend (MACA: xcore1000 = C500, xcore1500 = C600) — its manifest.

Targets are `targets/<arch>.toml`. tile-lower-to-gpu emits the MMA built-ins
through `matrix.py`; after the shared tile and gpu stages, the `maca` stage
prints GPU-level IR as MACA C++ for mxcc (`stages.py`, `emitter.py`).
"""

from pathlib import Path

from tilemlir.backends.metax.mma_rows import check_mma_row
from tilemlir.target.model import Backend

BACKEND = Backend(
    family="metax",
    summary="MetaX GPUs through MACA C++ (mxcc)",
    targets_dir=Path(__file__).parent / "targets",
    # The MMA operand types of MetaX's compilers (mcTriton MMAMACA.cpp): fp8 is
    # OCP E4M3FN / E5M2 only; TF32 is MLIR's builtin tf32.
    mma_operand_types=frozenset({"f64", "f32", "tf32", "f16", "bf16", "i8", "f8E4M3FN", "f8E5M2"}),
    mma_accumulator_types=frozenset({"f64", "f32", "i32"}),
    # The lowering emits MACA C++, so every row names its __builtin_mxc_mma_*.
    mma_row_keys=("builtin", "intrinsic"),
    check_mma_row=check_mma_row,
    matrix_core="tilemlir.backends.metax.matrix:MetaxMmaCore",
    stages="tilemlir.backends.metax.stages:STAGES",
    report_stage="maca",
    converts_fp8=True,
    tilelang_names=("maca", "metax"),
    default_chip="xcore1000",
)
