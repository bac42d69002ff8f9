// int8 GEMM, i32 accumulation and output: exact.
// Written by test/python/kernel_text.py.
func.func @gemm(%A: memref<200x96xi8>, %B: memref<96x160xi8>, %C: memref<200x160xi32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bM = arith.constant 64 : index
    %bN = arith.constant 64 : index
    %bK = arith.constant 32 : index
    %num_k = arith.constant 3 : index
    %zero = arith.constant 0 : i32
    %A_s = "tile.alloc_shared"() : () -> memref<64x32xi8, #gpu.address_space<workgroup>>
    %B_s = "tile.alloc_shared"() : () -> memref<32x64xi8, #gpu.address_space<workgroup>>
    %C_l = "tile.alloc_fragment"() : () -> memref<64x64xi32, #gpu.address_space<private>>
    "tile.fill"(%C_l, %zero) : (memref<64x64xi32, #gpu.address_space<private>>, i32) -> ()
    %row = arith.muli %by, %bM : index
    %col = arith.muli %bx, %bN : index
    scf.for %ko = %c0 to %num_k step %c1 {
      %k = arith.muli %ko, %bK : index
      "tile.copy"(%A, %A_s, %row, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<200x96xi8>, memref<64x32xi8, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.copy"(%B, %B_s, %k, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<96x160xi8>, memref<32x64xi8, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.gemm"(%A_s, %B_s, %C_l) {accum_dtype = i32, transpose_a = false, transpose_b = false} : (memref<64x32xi8, #gpu.address_space<workgroup>>, memref<32x64xi8, #gpu.address_space<workgroup>>, memref<64x64xi32, #gpu.address_space<private>>) -> ()
    } {tile.num_stages = 3 : i64}
    "tile.copy"(%C_l, %C, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xi32, #gpu.address_space<private>>, memref<200x160xi32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 3, 4>, threads = 256 : i64} : () -> ()
  return
}
