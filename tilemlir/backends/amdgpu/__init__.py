"""The AMD GPU backend (CDNA: gfx90a, gfx942, gfx950) — its manifest.

Targets are `targets/<chip>.toml`; a new chip of the family is a new file.
The stages after the shared tile and gpu ones (`stages.py`): `llvm` (ROCDL and
the LLVM dialect, LLVM IR, opt), `isa` (llc, the resource report) and `hsaco`
(llvm-mc, ld.lld); tile-compile prints `isa` by default.
"""

from pathlib import Path

from tilemlir.backends.base import Backend, Target
from tilemlir.backends.llvm_targets import AMDGPU_NAME, processor_problem


def check_target(target: Target) -> tuple[str, str] | None:
    """The chip must be a processor LLVM knows: it becomes llc's -mcpu."""
    problem = processor_problem(target.name, "amdgcn", AMDGPU_NAME)
    return ("name", problem) if problem else None


BACKEND = Backend(
    family="amdgpu",
    summary="AMD Instinct GPUs through ROCDL and LLVM's AMDGPU backend",
    targets_dir=Path(__file__).parent / "targets",
    # Every type some MFMA reads. fp8: FNUZ on gfx942, OCP on gfx950; which one a
    # chip takes is its descriptor's matrix.fp8_formats (MLIR Chipset.h hasOcpFp8).
    mma_operand_types=frozenset(
        ("f64", "f32", "xf32", "f16", "bf16", "i8")
        + ("f8E4M3FNUZ", "f8E5M2FNUZ")  # gfx942's fp8
        + ("f8E4M3FN", "f8E5M2")  # gfx950's (OCP) fp8
    ),
    mma_accumulator_types=frozenset({"f64", "f32", "i32"}),
    # The lowering emits LLVM intrinsics, so every row names its intrinsic.
    mma_row_keys=("intrinsic",),
    check_target=check_target,
    stages="tilemlir.backends.amdgpu.stages:STAGES",
    default_emit="isa",
    report_stage="isa",
    passes={
        "amdgpu-check-resources": "tilemlir.backends.amdgpu.gpu_checks:AmdgpuCheckResources",
        "amdgpu-order-lds-dma": "tilemlir.backends.amdgpu.order_lds_dma:AmdgpuOrderLdsDma",
    },
)
