// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 -p 'builtin.module(tile-tiling{split-k=3})'

// A given split-K the gemm cannot take is an error that says why: C in f16
// would round the partial sums at every addition.
func.func @rounded_c(%A: memref<64x4096xf16>, %B: memref<4096x128xf16>, %C: memref<64x128xf16>) {
  %zero = arith.constant 0.0 : f16
  "tile.fill"(%C, %zero) : (memref<64x128xf16>, f16) -> ()
  // expected-error@+1 {{tile-tiling: split-k=3 is not possible for this 64x128x4096 f16 x f16 -> f16 (sum in f32) gemm: C holds f16, not the accumulator type f32: the slices' partial sums would be rounded to f16 as they are added into C}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x4096xf16>, memref<4096x128xf16>, memref<64x128xf16>) -> ()
  return
}

// -----

// The slices are equal: 3 does not divide K's 128 blocks of 32 (the fixed rule's
// block, as no configuration of the model's takes 3 slices).
func.func @uneven_slices(%A: memref<64x4096xf16>, %B: memref<4096x128xf16>, %C: memref<64x128xf32>) {
  %zero = arith.constant 0.0 : f32
  "tile.fill"(%C, %zero) : (memref<64x128xf32>, f32) -> ()
  // expected-error@+1 {{tile-tiling: split-k=3: K = 4096 is 128 blocks of 32, which 3 slices do not divide}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x4096xf16>, memref<4096x128xf16>, memref<64x128xf32>) -> ()
  return
}
