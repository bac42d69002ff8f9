func.func @small(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  "tile.fill"(%C, %zero) : (memref<64x64xf32>, f32) -> ()
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf32>) -> ()
  return
}
