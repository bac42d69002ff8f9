// FP8 GEMM with both operands transposed (A stored K x M, B stored N x K).
// Written by test/python/kernel_text.py.
func.func @gemm(%A: memref<160x256xf8E4M3FNUZ>, %B: memref<192x160xf8E4M3FNUZ>, %C: memref<256x192xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bM = arith.constant 64 : index
    %bN = arith.constant 64 : index
    %bK = arith.constant 32 : index
    %num_k = arith.constant 5 : index
    %zero = arith.constant 0.0 : f32
    %A_s = "tile.alloc_shared"() : () -> memref<32x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>
    %B_s = "tile.alloc_shared"() : () -> memref<64x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>
    %C_l = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    "tile.fill"(%C_l, %zero) : (memref<64x64xf32, #gpu.address_space<private>>, f32) -> ()
    %row = arith.muli %by, %bM : index
    %col = arith.muli %bx, %bN : index
    scf.for %ko = %c0 to %num_k step %c1 {
      %k = arith.muli %ko, %bK : index
      "tile.copy"(%A, %A_s, %k, %row) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<160x256xf8E4M3FNUZ>, memref<32x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.copy"(%B, %B_s, %col, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<192x160xf8E4M3FNUZ>, memref<64x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.gemm"(%A_s, %B_s, %C_l) {accum_dtype = f32, transpose_a = true, transpose_b = true} : (memref<32x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>, memref<64x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
    } {tile.num_stages = 3 : i64}
    "tile.copy"(%C_l, %C, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #gpu.address_space<private>>, memref<256x192xf16>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 3, 4>, threads = 256 : i64} : () -> ()
  return
}
