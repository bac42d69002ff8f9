"""The nvidia compile pipeline as data: every pass, in order.

    tile IR --TILE_PIPELINE--> GPU-level IR (gpu.func, nvgpu.mma.sync, ldmatrix, cp.async)
        --gpu-check-input, nvidia-dynamic-memref-arguments, GPU_TO_NVVM,
          nvidia-dynamic-shared-extern, nvidia-tensor-maps-by-value--> LLVM + NVVM dialects
        --TO_BINARY--> PTX text (LLVM's NVPTX backend, in process)

The stages that run these are in stages.py: `tile` stops before
EMIT_TILE_BEFORE, `gpu` after TILE_PIPELINE, `ptx` after TO_BINARY. `{chip}`
and `{features}` come from the target.
"""

from __future__ import annotations

from tilemlir.backends.driver import TILE_PIPELINE as SHARED_TILE_PIPELINE

# Tile level -> GPU level: the shared list without tile-pipeline, because loops
# marked tile.num_stages are software-pipelined while lowering, with cp.async
# (backends/nvidia/cp_async_pipelining.py).
TILE_PIPELINE: tuple[str, ...] = tuple(p for p in SHARED_TILE_PIPELINE if p != "tile-pipeline")

# PTX 8.5: mma.sync on .e4m3/.e5m2 needs PTX 8.4 (PTX ISA, "Warp Level Matrix
# Multiply-Accumulate Instructions"); CUDA 12.5+ drivers take it.
PTX_FEATURES = "+ptx85"

# Runs on the builtin.module: every gpu.module gets an #nvvm.target.
ATTACH_TARGET = "nvvm-attach-target{{chip={chip} features={features} O=3}}"
# Runs inside every gpu.module, in this order.
GPU_TO_NVVM: tuple[str, ...] = (
    "canonicalize",
    "cse",
    # nvgpu.mma.sync / ldmatrix / device_async_* -> nvvm ops; before the vector
    # lowering, which does not know nvgpu's 2-D register vectors.
    "convert-nvgpu-to-nvvm",
    "convert-vector-to-scf",
    # subview/view -> offsets and strides as affine.apply, then arith.
    "expand-strided-metadata",
    "lower-affine",
    "convert-scf-to-cf",
    # gpu/arith/memref/math/cf -> llvm + nvvm; kernel arguments are bare
    # pointers (static shapes only: DYNAMIC_MEMREF_ARGUMENTS made them so), so a
    # launcher passes one pointer per memref and scalars by value.
    # Index arithmetic in 32 bits when every memref of the module has fewer than
    # 2^31 elements (`index_bitwidth`): half the integer work in the K loop.
    "convert-gpu-to-nvvm{{index-bitwidth={index_bits} use-bare-ptr-memref-call-conv=true}}",
    # math.trunc, the one math op convert-gpu-to-nvvm leaves (every other one
    # becomes an NVVM op or a libdevice call): llvm.intr.trunc, cvt.rzi in PTX.
    "convert-math-to-llvm",
    # What is left of n-D vectors (shape_cast of the mma register tiles) -> LLVM
    # arrays; after the GPU conversion, which maps the workgroup address space
    # that this pass alone cannot.
    "convert-vector-to-llvm",
    # NVVM ops that are PTX text (mbarrier try_wait, wgmma, TMA copies) ->
    # inline assembly; the others stay intrinsics.
    "convert-nvvm-to-llvm",
    # ub.poison that the vector lowerings create.
    "convert-ub-to-llvm",
    "reconcile-unrealized-casts",
    "canonicalize",
    "cse",
)
# The whole module: serialize every gpu.module to PTX (`assembly` of its gpu.object).
TO_BINARY = "gpu-module-to-binary{format=isa}"


# Before the conversion, on the builtin.module (kernels and their launches): a
# dynamic-shape memref argument becomes a pointer and index extents, the only
# form the bare-pointer convention below takes (dynamic_arguments.py).
DYNAMIC_MEMREF_ARGUMENTS = "nvidia-dynamic-memref-arguments"
# After the conversion: the dynamic shared memory global as PTX needs it
# (dynamic_shared.py); on the builtin.module.
DYNAMIC_SHARED_EXTERN = "nvidia-dynamic-shared-extern"
# After the conversion: TMA tensor maps as 128-byte grid-constant kernel
# parameters, which the launcher encodes (tensor_map_params.py).
TENSOR_MAPS_BY_VALUE = "nvidia-tensor-maps-by-value"


def gpu_to_nvvm_pipeline(chip: str, features: str = PTX_FEATURES, index_bits: int = 64,
                         check: str = "") -> str:
    """GPU-level IR -> the LLVM and NVVM dialects, as one pipeline string:
    `check` first (gpu-check-input with its target: NVPTX aborts on a symbol
    PTX cannot spell, and serialization reads a target's `link` files),
    DYNAMIC_MEMREF_ARGUMENTS, the attached target, GPU_TO_NVVM in every
    gpu.module, then DYNAMIC_SHARED_EXTERN and TENSOR_MAPS_BY_VALUE."""
    nested = ",".join(step.format(index_bits=index_bits) for step in GPU_TO_NVVM)
    steps = [check] if check else []
    steps += [DYNAMIC_MEMREF_ARGUMENTS, ATTACH_TARGET.format(chip=chip, features=features),
              f"gpu.module({nested})", DYNAMIC_SHARED_EXTERN, TENSOR_MAPS_BY_VALUE]
    return f"builtin.module({','.join(steps)})"
