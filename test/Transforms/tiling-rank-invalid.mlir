// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 -p 'builtin.module(tile-tiling{rank=100000})'

// rank=N (tile-compile's fallback when the model's choice spills) takes the
// model's N-th configuration; past the last one it is an error with the count.
func.func @past_the_ranking(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf16>) {
  %zero = arith.constant 0.0 : f16
  "tile.fill"(%C, %zero) : (memref<64x64xf16>, f16) -> ()
  // expected-error@+1 {{tile-tiling: rank=100000, but the model ranks}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf16>) -> ()
  return
}
