"""The MetaX GPU backend (MACA: xcore1000 = C500, xcore1500 = C600) — its manifest.

Targets are `targets/<arch>.toml`. tile-lower-to-gpu emits the MMA built-ins
through `matrix.py`; after the shared tile and gpu stages, the `maca` stage
prints GPU-level IR as MACA C++ for mxcc (`stages.py`, `emitter.py`).
"""

from pathlib import Path

from tilemlir.backends.metax.mma_rows import check_mma_row
from tilemlir.targets.model import Backend, Target

# The architectures mxcc takes as --offload-arch (shared/reference/hardware_facts.md
# C.1): xcore1000 (C500: tilelang-metax mxcc.py's default, mcFlashMLA's
# Arch::xcore1000), xcore1500 (mcFlashMLA's Arch::xcore1500; C600 by a
# third-party mapping), xcore1600 (C600U, third-party mapping only).
OFFLOAD_ARCHS = ("xcore1000", "xcore1500", "xcore1600")


def check_target(target: Target) -> tuple[str, str] | None:
    """The processor becomes mxcc's --offload-arch: one of the MetaX
    architectures known to exist (OFFLOAD_ARCHS)."""
    if target.processor in OFFLOAD_ARCHS:
        return None
    return ("processor", (f"'{target.processor}' is not a MetaX architecture mxcc is known to take "
                          f"(known: {', '.join(OFFLOAD_ARCHS)})"))

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
    check_target=check_target,
    check_mma_row=check_mma_row,
    matrix_core="tilemlir.backends.metax.matrix:MetaxMmaCore",
    stages="tilemlir.backends.metax.stages:STAGES",
    report_stage="maca",
    converts_fp8=True,
    tilelang_names=("maca", "metax"),
    default_chip="xcore1000",
    # The M of its 16x16x16 MMAs (__builtin_mxc_mma_16x16x16f16, the targets' rows).
    skinny_block=16,
)
