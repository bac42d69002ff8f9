"""The amdgpu compile pipeline as data: every pass and tool flag, in order.

    tile IR --TILE_PIPELINE (backends/driver.py)--> GPU-level IR
        --amdgpu-check-resources, GPU_TO_LLVM, amdgpu-order-lds-dma,
          amdgpu-scope-atomics, amdgpu-contract-float-ops--> LLVM dialect
        --(in-process translation)--> LLVM IR --LLVM_IR_PASSES (opt)--> LLVM IR
        --llc LLC_FLAGS--> ISA (.s) --llvm-mc--> object --ld.lld -shared--> HSACO

The stages that run these are in stages.py. Everything here is printable:
`tile-compile --dump-pass-pipeline` shows these lists with the chip filled in,
as strings `tile-opt -p`, `opt -passes` and `llc` accept.
"""

from __future__ import annotations

from types import MappingProxyType

TRIPLE = "amdgcn-amd-amdhsa"

# The float math ops this pipeline lowers to instructions, by element type (on
# f16/bf16 they are computed in f32, EXPAND_MATH's first step). Measured with
# llc-22 for gfx90a, gfx942 and gfx950 (test/python/test_expand_math.py): each is
# an LLVM intrinsic llc expands into VALU instructions (v_exp_f32, v_log_f32,
# v_sin_f32, v_floor_f32, v_sqrt_f64 with a Newton step, ...). The others have
# no lowering in llc ("no libcall available for ftanh") or become OCML calls
# in convert-gpu-to-rocdl (__ocml_erf_f32), which need the ROCm device libraries
# this toolchain does not have; expm1 and log1p do lower, as exp(x) - 1 and
# log(1 + x), which lose every digit near 0. tile-expand-math expands those it
# can from the f32 ops listed here and refuses the rest (f64 transcendentals).
_ROUNDING = ("absf", "copysign", "fma", "sqrt", "rsqrt", "floor", "ceil", "trunc", "round", "roundeven")
NATIVE_MATH = MappingProxyType({
    "f32": frozenset(_ROUNDING + ("exp", "exp2", "log", "log2", "log10", "sin", "cos")),
    "f64": frozenset(_ROUNDING),
    # math-extend-to-supported-types leaves fma alone (one rounding, not two).
    "f16": frozenset({"fma"}),
    "bf16": frozenset({"fma"}),
})

# Runs first inside every gpu.module: the math ops left are NATIVE_MATH's.
EXPAND_MATH: tuple[str, ...] = (
    # f16/bf16 math computed in f32 and rounded once.
    "math-extend-to-supported-types{{target-type=f32}}",
    # Upstream's expansions where they are accurate: tan = sin/cos. (Its
    # sinh and tanh subtract exponentials, which cancel near 0.)
    "math-expand-ops{{ops=tan}}",
    "tile-expand-math{{target={spec}}}",
)

# GPU level -> LLVM dialect. `{chip}` is the target's name (gfx942, ...).
# Runs on the builtin.module.
ATTACH_TARGET = "rocdl-attach-target{{chip={chip} O=3}}"
# Runs inside every gpu.module, in this order.
GPU_TO_LLVM: tuple[str, ...] = (
    "canonicalize",
    "cse",
    *EXPAND_MATH,
    # The native ops as LLVM intrinsic calls, which llc lowers itself; left to
    # convert-gpu-to-rocdl they would become OCML calls (math_intrinsics.py).
    "amdgpu-math-to-intrinsics",
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

# Loads into LDS in an alias scope of their own, so LDS reads do not wait for them
# (order_lds_dma.py); on the LLVM dialect, so after GPU_TO_LLVM.
ORDER_LDS_DMA = "amdgpu-order-lds-dma"
# memref.atomic_rmw's atomics relaxed at agent scope, as HIP's atomicAdd
# (scope_atomics.py): one global_atomic_add_f32, not a compare-swap loop.
SCOPE_ATOMICS = "amdgpu-scope-atomics"
# The kernels' float multiplies may fuse into the adds that use them
# (contract_float_ops.py; docs/kernels.md), llc's own expansions excepted.
# Measured with bench/amd_attention_vs_triton.py (mfma_busy_ratio, ours):
# flash attention d 128 f16 gfx942 0.572 -> 0.590, gfx950 0.403 -> 0.430,
# d 64 gfx942 0.490 -> 0.528, gfx950 0.282 -> 0.303 (the scores' scale and
# max subtraction one v_fma); every GEMM default of bench/amd_vs_triton.py
# unchanged.
CONTRACT_FLOAT_OPS = "amdgpu-contract-float-ops"
# A fragment's element-wise float math over whole vectors as vector ops, which
# llc selects as packed f32 instructions on gfx90a, gfx942 and gfx950
# (pack_float_ops.py). After the contraction, whose flags the vector ops keep.
PACK_FLOAT_OPS = "amdgpu-pack-float-ops"
# f32 -> bf16 rounded in four instructions where the chip has no conversion
# instruction (truncate_bf16.py; gfx950 has one): llc's expansion takes five.
TRUNCATE_BF16 = "amdgpu-truncate-bf16{{target={spec}}}"

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


def gpu_to_llvm_pipeline(chip: str, check: str = "", spec: str = "") -> str:
    """GPU-level IR -> the LLVM dialect for `chip`, as one pipeline string:
    `check` first (amdgpu-check-resources with its target), GPU_TO_LLVM, then
    the LDS-DMA ordering, which needs the LLVM dialect's loads, the atomics'
    scope and the float ops' contraction. `spec` names
    the target in tile-expand-math (default amdgpu:CHIP)."""
    nested = ",".join(step.format(chip=chip, spec=spec or f"amdgpu:{chip}") for step in GPU_TO_LLVM)
    steps = [check] if check else []
    steps += [ATTACH_TARGET.format(chip=chip), f"gpu.module({nested})", ORDER_LDS_DMA, SCOPE_ATOMICS,
              CONTRACT_FLOAT_OPS, PACK_FLOAT_OPS, TRUNCATE_BF16.format(spec=spec or f"amdgpu:{chip}")]
    return f"builtin.module({','.join(steps)})"
