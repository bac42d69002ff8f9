// The seed's FP8 GEMM at M = N = K = 1000: not a multiple of the 128x128x32 blocks,
// so edge blocks read zeros and drop their writes (tile.copy epilogue).
// Written by test/python/kernel_text.py.
func.func @gemm(%A: memref<1000x1000xf8E4M3FNUZ>, %B: memref<1000x1000xf8E4M3FNUZ>, %C: memref<1000x1000xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bM = arith.constant 128 : index
    %bN = arith.constant 128 : index
    %bK = arith.constant 32 : index
    %num_k = arith.constant 32 : index
    %zero = arith.constant 0.0 : f32
    %A_s = "tile.alloc_shared"() : () -> memref<128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>
    %B_s = "tile.alloc_shared"() : () -> memref<32x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>
    %C_l = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
    "tile.fill"(%C_l, %zero) : (memref<128x128xf32, #gpu.address_space<private>>, f32) -> ()
    %row = arith.muli %by, %bM : index
    %col = arith.muli %bx, %bN : index
    scf.for %ko = %c0 to %num_k step %c1 {
      %k = arith.muli %ko, %bK : index
      "tile.copy"(%A, %A_s, %row, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1000x1000xf8E4M3FNUZ>, memref<128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.copy"(%B, %B_s, %k, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1000x1000xf8E4M3FNUZ>, memref<32x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.gemm"(%A_s, %B_s, %C_l) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>, memref<32x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
    } {tile.num_stages = 3 : i64}
    "tile.copy"(%C_l, %C, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x128xf32, #gpu.address_space<private>>, memref<1000x1000xf16>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 8, 8>, threads = 256 : i64} : () -> ()
  return
}
