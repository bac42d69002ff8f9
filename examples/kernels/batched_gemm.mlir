// Batched GEMM on 3-D tensors: C[b] = A[b] * B[b] for 4 batches of
// 128x96x64 f16, f32 accumulation, f16 out. The grid's third dim is the
// batch; each copy fixes the leading (batch) index of its 3-D operand and
// moves a 2-D tile (a rank-reducing tile.copy).
!A = memref<4x128x64xf16>
!B = memref<4x64x96xf16>
!C = memref<4x128x96xf16>
!a = memref<64x32xf16, #gpu.address_space<workgroup>>
!b = memref<32x32xf16, #gpu.address_space<workgroup>>
!acc = memref<64x32xf32, #gpu.address_space<private>>

func.func @batched_gemm(%A: !A, %B: !B, %C: !C) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index, %bz: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bm = arith.constant 64 : index
    %bn = arith.constant 32 : index
    %bk = arith.constant 32 : index
    %k_blocks = arith.constant 2 : index
    %zero = arith.constant 0.0 : f32
    %a_s = "tile.alloc_shared"() : () -> !a
    %b_s = "tile.alloc_shared"() : () -> !b
    %acc = "tile.alloc_fragment"() : () -> !acc
    "tile.fill"(%acc, %zero) : (!acc, f32) -> ()
    %row0 = arith.muli %by, %bm : index
    %col0 = arith.muli %bx, %bn : index
    scf.for %kb = %c0 to %k_blocks step %c1 {
      %k0 = arith.muli %kb, %bk : index
      "tile.copy"(%A, %a_s, %bz, %row0, %k0) {operandSegmentSizes = array<i32: 1, 1, 3, 0>} : (!A, !a, index, index, index) -> ()
      "tile.copy"(%B, %b_s, %bz, %k0, %col0) {operandSegmentSizes = array<i32: 1, 1, 3, 0>} : (!B, !b, index, index, index) -> ()
      "tile.gemm"(%a_s, %b_s, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (!a, !b, !acc) -> ()
    } {tile.num_stages = 2 : i64}
    "tile.copy"(%acc, %C, %bz, %row0, %col0) {operandSegmentSizes = array<i32: 1, 1, 0, 3>} : (!acc, !C, index, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 3, 2, 4>, threads = 128 : i64} : () -> ()
  return
}
