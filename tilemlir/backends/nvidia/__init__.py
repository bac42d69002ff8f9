"""The NVIDIA GPU backend (sm_90a: H100, H200) — its manifest.

Targets are `targets/<sm>.toml`. The lowering goes through upstream MLIR:
warp-level `nvgpu.mma.sync` (fp8 through inline PTX, see `matrix.py`),
`nvgpu.ldmatrix` and `nvgpu.device_async_copy` (cp.async, `cp_async_pipelining.py`);
or, on sm_90a with tile-select-mma{prefer=wgmma}, warpgroup `wgmma` fed by TMA
and mbarriers (`wgmma.py`, which can also feed mma.sync:
tile-lower-to-gpu{tma-copies=true}); then `convert-nvgpu-to-nvvm`,
`convert-gpu-to-nvvm`, `convert-nvvm-to-llvm` and `gpu-module-to-binary` to
PTX in process (`pass_lists.py`, `stages.py`). PTX runs through the CUDA
driver (`tilemlir.runtime.cuda_launch`), which also encodes TMA tensor maps.
"""

from pathlib import Path

from tilemlir.backends.nvidia.chips import LLVM_ARCH, NVPTX_NAME, nvptx_fatal_error
from tilemlir.backends.nvidia.mma_rows import check_mma_row
from tilemlir.targets.llvm_processors import processor_problem
from tilemlir.targets.model import Backend, Target

# cp.async, ldmatrix and mma.sync.m16n8k16, which every kernel uses (PTX ISA:
# "cp.async" and "mma" need sm_80), are selected by NVPTX, which aborts on an
# older chip ("Cannot select").
MIN_SM = 80


def check_target(target: Target) -> tuple[str, str] | None:
    """The processor (sm_NN[a]) must be one the in-process NVPTX backend
    compiles our kernels for without a fatal error: a processor LLVM knows, at
    least sm_80, and one the PTX version the pipeline asks for can target."""
    from tilemlir.backends.nvidia.pass_lists import PTX_FEATURES

    name = target.processor
    problem = processor_problem(name, LLVM_ARCH, NVPTX_NAME)
    if problem:
        return ("processor", problem)
    digits = name.removeprefix("sm_").rstrip("af")
    if not digits.isdigit() or int(digits) < MIN_SM:
        return ("processor", (f"'{name}': the nvidia lowering needs sm_{MIN_SM} or newer "
                              "(cp.async, ldmatrix, mma.sync)"))
    fatal = nvptx_fatal_error(name, PTX_FEATURES)
    if fatal:
        return ("processor", f"LLVM's NVPTX backend cannot compile for '{name}' with {PTX_FEATURES}: {fatal}")
    return None


BACKEND = Backend(
    family="nvidia",
    summary="NVIDIA GPUs through NVGPU/NVVM and LLVM's NVPTX backend (PTX)",
    targets_dir=Path(__file__).parent / "targets",
    # The operand types of mma.sync / wgmma (PTX ISA "Warp Level Matrix Multiply-
    # Accumulate Instructions"): fp8 is the OCP pair .e4m3 / .e5m2 only.
    mma_operand_types=frozenset({"f64", "f32", "tf32", "f16", "bf16", "i8", "f8E4M3FN", "f8E5M2"}),
    mma_accumulator_types=frozenset({"f64", "f32", "f16", "i32"}),
    # Rows are PTX instructions, emitted through nvgpu ops or inline PTX: no
    # per-row intrinsic is needed.
    mma_row_keys=(),
    check_target=check_target,
    stages="tilemlir.backends.nvidia.stages:STAGES",
    report_stage="ptx",
    passes={"nvidia-dynamic-shared-extern": "tilemlir.backends.nvidia.dynamic_shared:NvidiaDynamicSharedExtern",
            "nvidia-dynamic-memref-arguments":
                "tilemlir.backends.nvidia.dynamic_arguments:NvidiaDynamicMemrefArguments",
            "nvidia-tensor-maps-by-value": "tilemlir.backends.nvidia.tensor_map_params:NvidiaTensorMapsByValue"},
    check_mma_row=check_mma_row,
    matrix_core="tilemlir.backends.nvidia.wgmma:NvidiaMatrixCore",
    lowering_hooks="tilemlir.backends.nvidia.wgmma:NvidiaLoweringHooks",
    tilelang_names=("cuda",),
    default_chip="sm_90a",
    detect_gpu="tilemlir.backends.nvidia.detect:present_chips",
    # Loops of 2 stages or more are pipelined while lowering (cp.async, TMA);
    # nvidia runs no tile-pipeline (pass_lists.TILE_PIPELINE).
    prefetches_single_stage=False,
    copies_through_registers=False,
    # ptxas 12.8 -v on this compiler's sm_90a GEMMs (bench/tune_model.py's PTX,
    # 2026-12-03): 154 registers for a 128-register accumulator, 90 for 64.
    address_registers=26,
    partial_sums_prefix="wgmma.",  # backends/nvidia/wgmma.py: 8-bit gemms promote per block K
    # backends/nvidia/warp_specialize.py reads these: one producer warpgroup,
    # 40 registers per thread (CUTLASS's count, speed_techniques.md 1.3)
    producer_prefix="wgmma.",
    producer_threads=128,
    producer_registers=40,
    # Measured on the H200 (bench/gemm_defaults.py, 2026-12-04, TMA-store
    # epilogues): the same 128x256 warp-specialized f16/bf16 kernel at 4096^3
    # with block K 32 (128 iterations a tile) against 64 (64): 21-61 ns more per
    # extra iteration in three runs, 38-112 clocks at the descriptor's 1830 MHz;
    # about the lower half.
    producer_loop_sync_clocks=64,
    # Measured on the H200 (bench/gemm_defaults.py --sweep, 2026-12-04, f16
    # and bf16 16x8192x8192, 128 workgroups of mma.sync 32x64 blocks fed by
    # cp.async): 36 KiB in flight per SM (block K 64, 4 stages) 44-45 TFLOP/s,
    # 72-144 KiB (block K 64 in 8 stages, 128 in 4 or 6, 256 in 3 or 4)
    # 49.7-52.5; fp8 36 KiB 73.2, 72-96 KiB 75.9-77.9. The memory latency
    # under load (891 clocks) would have 18 KiB suffice.
    stream_bytes_in_flight=64 * 1024,
)
