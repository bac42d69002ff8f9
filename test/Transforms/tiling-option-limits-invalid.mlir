// Options beyond what any workgroup or pipeline holds are refused at once
// (the model would otherwise weigh every split of 2^32 threads).
// RUN: tile-opt %s --verify-diagnostics --target=amdgpu:gfx942 -p 'tile-tiling{threads=4294967296}'
// RUN: not tile-opt %s --target=amdgpu:gfx942 -p 'tile-tiling{stages=65}' 2>&1 | filecheck %s --check-prefix=STAGES
// STAGES: error: tile-tiling: stages=65: a pipeline has at most 64

func.func @gemm(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf32>) {
  // expected-error@below {{tile-tiling: threads=4294967296: a workgroup of amdgpu:gfx942 has at most 1024 threads}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf16>, memref<256x256xf16>, memref<256x256xf32>) -> ()
  return
}
