// Batched GEMM on 3-D tensors: C[b] = A[b] @ B[b], grid (n-block, m-block, batch).
// Rank-reducing tile.copy: each block cuts 2-D tiles out of the 3-D A and B
// (their last two dims, the batch index fixed) and stores its accumulator
// into the 3-D C. M, N, K (96, 80, 72) are not block multiples: edge blocks
// read zeros and drop writes.
#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
func.func @batched_gemm(%A: memref<3x96x72xf16>, %B: memref<3x72x80xf16>, %C: memref<3x96x80xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index, %bz: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bM = arith.constant 64 : index
    %bN = arith.constant 64 : index
    %bK = arith.constant 32 : index
    %num_k = arith.constant 3 : index
    %zero = arith.constant 0.0 : f32
    %A_s = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    %B_s = "tile.alloc_shared"() : () -> memref<32x64xf16, #S>
    %C_l = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    "tile.fill"(%C_l, %zero) : (memref<64x64xf32, #F>, f32) -> ()
    %row = arith.muli %by, %bM : index
    %col = arith.muli %bx, %bN : index
    scf.for %ko = %c0 to %num_k step %c1 {
      %k = arith.muli %ko, %bK : index
      "tile.copy"(%A, %A_s, %bz, %row, %k) {operandSegmentSizes = array<i32: 1, 1, 3, 0>} : (memref<3x96x72xf16>, memref<64x32xf16, #S>, index, index, index) -> ()
      "tile.copy"(%B, %B_s, %bz, %k, %col) {operandSegmentSizes = array<i32: 1, 1, 3, 0>} : (memref<3x72x80xf16>, memref<32x64xf16, #S>, index, index, index) -> ()
      "tile.gemm"(%A_s, %B_s, %C_l) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x32xf16, #S>, memref<32x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    "tile.copy"(%C_l, %C, %bz, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 3>} : (memref<64x64xf32, #F>, memref<3x96x80xf16>, index, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 2, 2, 3>, threads = 256 : i64} : () -> ()
  return
}
