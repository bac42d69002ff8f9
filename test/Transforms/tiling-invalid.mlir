// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 -p 'tile-tiling{block=256,256,128 stages=3}'

// The seed's "compiles, then crashes at run time" (shared memory overflow) is a
// compile-time error with the numbers: 3 x (256x128 + 128x256) f16 bytes.
func.func @lds_over_budget(%A: memref<1024x1024xf16>, %B: memref<1024x1024xf16>, %C: memref<1024x1024xf32>) {
  // expected-error@below {{tile-tiling: needs 393216 bytes of LDS (3 stages x (256x128 A + 128x256 B tiles)), gfx942 allows 65536}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<1024x1024xf16>, memref<1024x1024xf16>, memref<1024x1024xf32>) -> ()
  return
}
