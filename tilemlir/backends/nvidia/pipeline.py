"""The nvidia compile pipeline as data: every pass, in order.

    tile IR --TILE_PIPELINE--> GPU-level IR (gpu.func, nvgpu.mma.sync, ldmatrix, cp.async)
        --GPU_TO_NVVM--> LLVM + NVVM dialects --(dynamic shared memory made extern)-->
        --TO_BINARY--> PTX text (LLVM's NVPTX backend, in process)

`--emit tile` stops before `EMIT_TILE_BEFORE`, `--emit gpu` after TILE_PIPELINE,
`--emit llvm` after GPU_TO_NVVM (the LLVM dialect, not LLVM IR text), `--emit
ptx` after TO_BINARY. `{chip}` and `{features}` come from the target.
"""

from __future__ import annotations

from tilemlir.backends.amdgpu import pipeline as _amd

# Tile level -> GPU level: the amdgpu list without tile-pipeline, because loops
# marked tile.num_stages are software-pipelined while lowering, with cp.async
# (backends/nvidia/pipelining.py).
TILE_PIPELINE: tuple[str, ...] = tuple(p for p in _amd.TILE_PIPELINE if p != "tile-pipeline")
# `--emit tile` prints the IR just before this pass, as on amdgpu.
EMIT_TILE_BEFORE = _amd.EMIT_TILE_BEFORE

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
    # pointers (static shapes only), so a launcher passes one pointer per memref.
    # Index arithmetic in 32 bits when every memref of the module has fewer than
    # 2^31 elements (`index_bitwidth`): half the integer work in the K loop.
    "convert-gpu-to-nvvm{{index-bitwidth={index_bits} use-bare-ptr-memref-call-conv=true}}",
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


def gpu_to_nvvm_pipeline(chip: str, features: str = PTX_FEATURES, index_bits: int = 64) -> str:
    nested = ",".join(step.format(index_bits=index_bits) for step in GPU_TO_NVVM)
    attach = ATTACH_TARGET.format(chip=chip, features=features)
    return f"builtin.module({attach},gpu.module({nested}))"


def tile_pipeline(stop_before: str | None = None, tiling: str = "", select: str = "",
                  passes: str = "", start_at: str | None = None) -> str:
    """TILE_PIPELINE as a string, as the amdgpu one is built
    (e.g. tiling="block=128,128,64 threads=256 stages=3", select="prefer=wgmma")."""
    return _amd.tile_pipeline(stop_before, tiling, TILE_PIPELINE, select, passes, start_at)
