"""The AMD GPU backend (CDNA: gfx90a, gfx942, gfx950; RDNA3: gfx1100, gfx1101,
gfx1102; RDNA4: gfx1200, gfx1201) — its manifest.

Targets are `targets/<chip>.toml`; a new chip of the family is a new file.
tile-lower-to-gpu reaches the family through `matrix.py` (MFMA, WMMA) and
`lowering.py` (loads into LDS, scheduling hints). After the shared tile and gpu
stages come the family's own (`stages.py`): `llvm` (ROCDL and the LLVM dialect,
LLVM IR, opt), `isa` (llc, the resource report) and `hsaco` (llvm-mc, ld.lld);
tile-compile prints `isa` by default. CDNA's matrix instructions are MFMAs
(wave64), RDNA's WMMAs (wave32); `matrix.py` takes either by the target's
`architecture` (`tilemlir.mma_layouts`).
"""

import re
from pathlib import Path

from tilemlir.backends.amdgpu.facts import AmdgpuFacts
from tilemlir.backends.amdgpu.mma_rows import check_mma_row
from tilemlir.targets.llvm_processors import processor_problem
from tilemlir.targets.model import Backend, Target, is_none, is_unknown

# The LLVM architecture whose processors the chips are (llc -march), and the
# shape of their names (checked when llc is not there to list them).
LLVM_ARCH = "amdgcn"
AMDGPU_NAME = re.compile(r"gfx[0-9a-f]+")


# GFX10 and later (four hex digits): llc compiles their kernels for wave32,
# and the lowering asks for nothing else.
WAVE32_NAME = re.compile(r"gfx1[0-9a-f]{3}")


def check_target(target: Target) -> tuple[str, str] | None:
    """The processor must be one LLVM knows: it becomes llc's -mcpu and ROCDL's
    chipset. A GFX10+ processor's waves are 32 lanes (llc's default there, what
    the lowering compiles for); accumulation registers and their offset granule
    are both stated or both none."""
    problem = processor_problem(target.processor, LLVM_ARCH, AMDGPU_NAME)
    if problem:
        return ("processor", problem)
    wave = target.compute.wave_size
    if WAVE32_NAME.fullmatch(target.processor) and not is_unknown(wave) and wave != 32:
        return ("compute.wave_size", (f"{target.processor} runs wave32 code from the amdgpu lowering (llc's "
                                     f"default on GFX10 and later; wave64 is not compiled), not {wave} lanes"))
    agprs, granule = target.registers.acc_vgprs_max, target.family_facts.acc_offset_granule
    if is_none(agprs) != is_none(granule):
        return ("amdgpu.acc_offset_granule", (f"is {granule} while registers.acc_vgprs_max is {agprs}: a chip "
                                             "without accumulation registers has no offset for them, and one "
                                             "with them has one (both none, or both stated)"))
    return None


# Backend.loop_issue_clocks: the median, by chip, of llvm-mca-22's main-loop
# clocks less the descriptor's MFMA/WMMA clocks over the GEMM loops this
# compiler makes for the 14 configurations its cost model ranks fastest for
# f16 256^3, 1024^3, 4096^3, 16x8192x8192 and 200x96x136 (and fp8 on gfx942
# and gfx950), 2026-12-06: gfx90a 434 (60 loops), gfx942 652 (129), gfx950 388
# (113). Measured apart by the MFMA's rows (LOOP_ISSUE_CLOCKS_BY_ROWS), the
# loops around 16-row instructions take 1.3-1.7x the clocks of those around
# 32-row ones, on every chip and type: a 16x16 instruction's operands are read
# for half the matrix work of a 32x32 one (gfx90a 508 against 368, gfx942 696
# against 508, f16 654/492 and fp8 852/516, gfx950 456 against 308); one
# figure for both made 256^3 on gfx942 take 32x64x128 blocks of 16x16 MFMAs
# (busy ratio 0.278, 1.21 us with it) over 64x64x128 of 32x32 ones (0.640,
# 1.05 us). gfx1100 207 (60 loops, 2026-12-05; its WMMAs all have 16 rows).
# gfx1101 and gfx1102 take gfx1100's (LLVM's one GFX11 scheduling model:
# llvm-mca-22 gives the same cycles for one of its loops with either -mcpu), as
# do gfx1200 and gfx1201, the other wave32 chips, whose own loops measure
# nothing of this (llvm-mca-22 stalls some 2,000 cycles at gfx12's split
# barrier). Other chips take the median of the CDNA loops, 492 (16 rows 552,
# 32 rows 404).
LOOP_ISSUE_CLOCKS = (("gfx90a", 434), ("gfx942", 652), ("gfx950", 388),
                     *((chip, 207) for chip in ("gfx1100", "gfx1101", "gfx1102", "gfx1200", "gfx1201")),
                     ("", 492))
LOOP_ISSUE_CLOCKS_BY_ROWS = (("gfx90a", 16, 508), ("gfx90a", 32, 368), ("gfx942", 16, 696), ("gfx942", 32, 508),
                             ("gfx950", 16, 456), ("gfx950", 32, 308), ("", 16, 552), ("", 32, 404))

BACKEND = Backend(
    family="amdgpu",
    summary="AMD Instinct (CDNA) and Radeon (RDNA3, RDNA4) GPUs through ROCDL and LLVM's AMDGPU backend",
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
    # AGPR offsets and loads into LDS: the [amdgpu] table of its files.
    target_facts=AmdgpuFacts,
    check_target=check_target,
    check_mma_row=check_mma_row,
    matrix_core="tilemlir.backends.amdgpu.matrix:MfmaCore",
    lowering_hooks="tilemlir.backends.amdgpu.lowering:AmdgpuLoweringHooks",
    stages="tilemlir.backends.amdgpu.stages:STAGES",
    default_emit="isa",
    report_stage="isa",
    # The math ops llc lowers to instructions; tile-expand-math handles the rest.
    native_math="tilemlir.backends.amdgpu.pass_lists:NATIVE_MATH",
    # The main loop's prefetch addresses then step by a constant (llvm-mca's busy
    # ratio per wave, bench/results/gemm-defaults-amd.md: 1024^3 f16 on gfx942
    # 0.533 -> 0.577, every gfx950 row 2-16% up).
    peels_pipeline_tail=True,
    passes={
        "amdgpu-check-resources": "tilemlir.backends.amdgpu.gpu_checks:AmdgpuCheckResources",
        "amdgpu-order-lds-dma": "tilemlir.backends.amdgpu.order_lds_dma:AmdgpuOrderLdsDma",
        "amdgpu-scope-atomics": "tilemlir.backends.amdgpu.scope_atomics:AmdgpuScopeAtomics",
        "amdgpu-contract-float-ops": "tilemlir.backends.amdgpu.contract_float_ops:AmdgpuContractFloatOps",
        "amdgpu-pack-float-ops": "tilemlir.backends.amdgpu.pack_float_ops:AmdgpuPackFloatOps",
        "amdgpu-truncate-bf16": "tilemlir.backends.amdgpu.truncate_bf16:AmdgpuTruncateBf16",
        "amdgpu-math-to-intrinsics": "tilemlir.backends.amdgpu.math_intrinsics:AmdgpuMathToIntrinsics",
    },
    converts_fp8=True,
    tilelang_names=("hip", "rocm"),
    default_chip="gfx942",
    detect_gpu="tilemlir.backends.amdgpu.detect:present_chips",
    loop_issue_clocks=LOOP_ISSUE_CLOCKS,
    loop_issue_clocks_by_rows=LOOP_ISSUE_CLOCKS_BY_ROWS,
    # The M of the 16x16 MFMAs and WMMAs every chip has.
    skinny_block=16,
)
