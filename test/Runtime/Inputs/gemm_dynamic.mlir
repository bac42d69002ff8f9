// The whole-problem GEMM on dynamic shapes: M and N come from tile-run's
// --dim; the gemm ties A's rows to C's, B's columns to C's and the K of A to B's.
func.func @gemm(%A: memref<?x96xf16>, %B: memref<?x?xf16>, %C: memref<?x?xf32>) {
  %zero = arith.constant 0.0 : f32
  "tile.fill"(%C, %zero) : (memref<?x?xf32>, f32) -> ()
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<?x96xf16>, memref<?x?xf16>, memref<?x?xf32>) -> ()
  return
}
