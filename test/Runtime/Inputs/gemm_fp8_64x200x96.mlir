// The seed's FP8 GEMM at 64x200x96: M smaller than one block, N and K not multiples.
// Written by test/python/kernel_text.py.
func.func @gemm(%A: memref<64x96xf8E4M3FNUZ>, %B: memref<96x200xf8E4M3FNUZ>, %C: memref<64x200xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bM = arith.constant 128 : index
    %bN = arith.constant 128 : index
    %bK = arith.constant 32 : index
    %num_k = arith.constant 3 : index
    %zero = arith.constant 0.0 : f32
    %A_s = "tile.alloc_shared"() : () -> memref<128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>
    %B_s = "tile.alloc_shared"() : () -> memref<32x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>
    %C_l = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
    "tile.fill"(%C_l, %zero) : (memref<128x128xf32, #gpu.address_space<private>>, f32) -> ()
    %row = arith.muli %by, %bM : index
    %col = arith.muli %bx, %bN : index
    scf.for %ko = %c0 to %num_k step %c1 {
      %k = arith.muli %ko, %bK : index
      "tile.copy"(%A, %A_s, %row, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x96xf8E4M3FNUZ>, memref<128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.copy"(%B, %B_s, %k, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<96x200xf8E4M3FNUZ>, memref<32x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.gemm"(%A_s, %B_s, %C_l) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>, memref<32x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
    } {tile.num_stages = 3 : i64}
    "tile.copy"(%C_l, %C, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x128xf32, #gpu.address_space<private>>, memref<64x200xf16>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 2, 1>, threads = 256 : i64} : () -> ()
  return
}
