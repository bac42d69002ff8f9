// The nvidia backend's stages are tile, gpu and ptx; AMD stages are refused.
//
// RUN: not tile-compile %s --emit isa 2>&1 | filecheck %s --check-prefix=ISA
// RUN: not tile-compile %s --target amdgpu:gfx942 --emit ptx 2>&1 | filecheck %s --check-prefix=AMD

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @gemm(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<64x64xf16>, f16) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf16>) -> ()
    return
  }
}

// ISA: error: --emit isa is not a stage of the nvidia backend (for nvidia:sm_90a: tile, gpu, ptx); isa is a stage of amdgpu
// AMD: error: --emit ptx is not a stage of the amdgpu backend (for amdgpu:gfx942: tile, gpu, llvm, isa, hsaco); ptx is a stage of nvidia

// The dumped pipeline is the nvidia one (its tile passes, NVVM, PTX):
// RUN: tile-compile %s --emit ptx --dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s --check-prefix=DUMP
// DUMP: tile: builtin.module(tile-tiling{target=nvidia:sm_90a}
// DUMP-NOT: tile-pipeline
// DUMP: gpu: builtin.module(tile-lower-to-gpu{target=nvidia:sm_90a}
// DUMP: gpu-to-nvvm: builtin.module(gpu-check-input{target=nvidia:sm_90a},nvidia-dynamic-memref-arguments,nvvm-attach-target{chip=sm_90a
// DUMP-SAME: ,nvidia-dynamic-shared-extern,nvidia-tensor-maps-by-value)
// DUMP: ptx: builtin.module(gpu-module-to-binary{format=isa}){{$}}
