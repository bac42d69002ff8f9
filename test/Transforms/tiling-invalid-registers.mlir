// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 -p 'tile-tiling{block=512,256,16 threads=64 stages=1}'

// A 512x256 f32 accumulator over one wave needs 2048 registers per lane.
func.func @registers_over_budget(%A: memref<1024x1024xf16>, %B: memref<1024x1024xf16>, %C: memref<1024x1024xf32>) {
  // expected-error@below {{tile-tiling: the 512x256 accumulator needs 2048 registers per lane with 64 threads, gfx942 leaves 256 for it}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<1024x1024xf16>, memref<1024x1024xf16>, memref<1024x1024xf32>) -> ()
  return
}

// -----

// Only a zero fill that clears the gemm's C is absorbed.
func.func @standalone_fill(%C: memref<64x64xf32>) {
  %one = arith.constant 1.0 : f32
  // expected-error@below {{tile-tiling: a whole-problem tile.fill is only tiled when it clears the C of the tile.gemm right after it}}
  "tile.fill"(%C, %one) : (memref<64x64xf32>, f32) -> ()
  return
}
