"""The amdgpu compile pipeline as data: every pass and tool flag, in order.

    tile IR --TILE_PIPELINE--> GPU-level IR --GPU_TO_LLVM--> LLVM dialect
        --(in-process translation)--> LLVM IR --LLVM_IR_PASSES (opt)--> LLVM IR
        --llc LLC_FLAGS--> ISA (.s) --llvm-mc--> object --ld.lld -shared--> HSACO

`--emit tile` stops before `EMIT_TILE_BEFORE`; `--emit gpu` after the whole
TILE_PIPELINE. Everything here is printable: `tile-compile --dump-pass-pipeline`
shows these lists with the chip filled in, as strings `tile-opt -p`,
`mlir-opt --pass-pipeline`, `opt -passes` and `llc` accept.
"""

from __future__ import annotations

TRIPLE = "amdgcn-amd-amdhsa"

# Tile level -> GPU level; each tile pass takes the target through its
# `target` option (the --target flag arrives there as an override).
TILE_PIPELINE: tuple[str, ...] = (
    # Whole-problem ops become kernels first: every later pass works per kernel.
    "tile-tiling",
    "canonicalize",
    # Casts and accumulator types must be final before an instruction is chosen by dtype.
    "tile-legalize-precision",
    "tile-select-mma",
    # Layouts follow from the chosen instruction's lane layouts.
    "tile-infer-layout",
    # Multi-buffers shared tiles and prefetches ahead; after layouts (it keeps
    # the copies' vector widths) and before lowering (which emits its barriers).
    "tile-pipeline",
    "tile-lower-to-gpu",
    "canonicalize",
    "cse",
)
# `--emit tile` prints the IR just before this pass.
EMIT_TILE_BEFORE = "tile-lower-to-gpu"

# GPU level -> LLVM dialect. `{chip}` is the target's name (gfx942, ...).
# Runs on the builtin.module.
ATTACH_TARGET = "rocdl-attach-target{{chip={chip} O=3}}"
# Runs inside every gpu.module, in this order.
GPU_TO_LLVM: tuple[str, ...] = (
    "canonicalize",
    "cse",
    # vector.transfer_* -> scf loops + vector.load/store; must precede scf->cf.
    "convert-vector-to-scf",
    # subview/reinterpret_cast/expand_shape -> offsets and strides as affine.apply;
    # must precede lower-affine (it creates affine.apply) and the memref->llvm patterns.
    "expand-strided-metadata",
    "lower-affine",
    # convert-gpu-to-rocdl converts cf, not scf.
    "convert-scf-to-cf",
    # fp8 truncf/extf become the chip's packed conversion instructions; arith's
    # generic lowering inside convert-gpu-to-rocdl has no fp8 LLVM type to use.
    "convert-arith-to-amdgpu{{chipset={chip}}}",
    # amdgpu.mfma -> rocdl.mfma.* before convert-gpu-to-rocdl, which rejects amdgpu ops.
    "convert-amdgpu-to-rocdl{{chipset={chip}}}",
    # gpu/arith/memref/vector/math/cf -> llvm + rocdl; gpu.func -> llvm.func rocdl.kernel.
    # 64-bit indices: offsets into tensors of more than 2^31 elements stay exact.
    "convert-gpu-to-rocdl{{chipset={chip} index-bitwidth=64}}",
    # Last: only casts left by the conversions above cancel here.
    "reconcile-unrealized-casts",
    "canonicalize",
    "cse",
)

# LLVM IR passes (opt-22 -passes=...) before llc, whose own IR pipeline lacks
# these. Deliberately not -O3: its unrolling would change the main loop we report.
LLVM_IR_PASSES: tuple[str, ...] = (
    # MLIR gives kernel memref pointers the flat address space: promote kernel
    # pointer arguments to global (addrspace 1) and propagate that, so memory
    # accesses become global_load_*/global_store_* instead of flat_*.
    "amdgpu-promote-kernel-arguments",
    "function(infer-address-spaces)",
    # scf-to-cf leaves while-shaped loops (test at the top); rotated, the
    # accumulator stays in AGPRs instead of moving to VGPRs every iteration.
    "function(loop-mssa(loop-rotate,licm))",
    # As in LLVM's default pipelines, InstCombine does not insist on reaching
    # a fixpoint in one run (opt -passes=instcombine does, and aborts on the
    # readfirstlane'd wave ids that address loads into LDS).
    "function(instcombine<no-verify-fixpoint>,simplifycfg,early-cse)",
)

# llc-22: LLVM IR -> ISA text; -mtriple/-mcpu are added from the target.
LLC_FLAGS: tuple[str, ...] = (
    "-O3",
    # MFMA C/D in ordinary VGPRs (allowed from gfx90a on; only gfx908 needs
    # AGPRs [MC22], and no tilemlir target is gfx908). With AGPRs, llc failed to
    # coalesce the loop-carried accumulators and copied every one of them
    # (v_accvgpr_mov_b32) each main-loop iteration. Measured with
    # bench/amd_vs_triton.py: mfma_busy_ratio f16 128x128x64 gfx942 0.509 -> 0.627,
    # fp8 gfx950 0.192 -> 0.401, f16 256x256x64 gfx950 318 spills -> 0; llc
    # still takes AGPRs where VGPRs run out.
    "-amdgpu-mfma-vgpr-form",
)


def gpu_to_llvm_pipeline(chip: str) -> str:
    """The GPU_TO_LLVM list as one MLIR pipeline string for `chip`."""
    nested = ",".join(step.format(chip=chip) for step in GPU_TO_LLVM)
    return f"builtin.module({ATTACH_TARGET.format(chip=chip)},gpu.module({nested}))"


def tile_pipeline(stop_before: str | None = None, tiling: str = "",
                  steps: tuple[str, ...] = TILE_PIPELINE, select: str = "",
                  passes: str = "", start_at: str | None = None) -> str:
    """`steps` (TILE_PIPELINE, or a backend's own list) as a pipeline string;
    with `stop_before`, only the passes before that one (e.g. EMIT_TILE_BEFORE),
    with `start_at` only that one and those after it; `tiling` gives
    tile-tiling its options ("block=128,128,64 threads=256 stages=2"), `select`
    tile-select-mma its options ("prefer=wgmma"), and `passes` any step its
    options ("tile-infer-layout{transpose-reads=true},
    tile-lower-to-gpu{direct-lds-loads=true}"; a pass not in the list is an error)."""
    from tilemlir.diagnostics import UserError
    from tilemlir.passes.pipeline import parse_pipeline

    given = {element.name: element.options or "" for element in parse_pipeline(passes)}
    unknown = sorted(set(given) - set(steps))
    if unknown:
        raise UserError(f"--pass-options: {', '.join(unknown)} is not a step of this pipeline "
                        f"(steps: {', '.join(steps)})")
    given.update({name: value for name, value in (("tile-tiling", tiling),
                                                  ("tile-select-mma", select)) if value})
    first = steps.index(start_at) if start_at is not None else 0
    last = steps.index(stop_before) if stop_before is not None else len(steps)
    return ",".join(f"{step}{{{given[step]}}}" if given.get(step) else step
                    for step in steps[first:last])

