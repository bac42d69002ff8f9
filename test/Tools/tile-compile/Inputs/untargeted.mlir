module {
  func.func @f(%A: memref<16x16xf16>, %C: memref<16x16xf32>) {
    "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<16x16xf16>, memref<16x16xf16>, memref<16x16xf32>) -> ()
    return
  }
}
