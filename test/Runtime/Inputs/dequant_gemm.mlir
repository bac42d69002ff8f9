// Dequantise B (i8, per-column f16 scale) into shared memory from a T.Parallel
// over the accumulator's shape (which it also clears), then gemm.
func.func @dequant_gemm(%A: memref<64x64xf16>, %Bq: memref<64x64xi8>, %S: memref<64xf16>, %C: memref<64x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %a = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %b = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    scf.parallel (%k, %n) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
      memref.store %zero, %c[%k, %n] : memref<64x64xf32, #gpu.address_space<private>>
      %q = memref.load %Bq[%k, %n] : memref<64x64xi8>
      %f = arith.sitofp %q : i8 to f16
      %s = memref.load %S[%n] : memref<64xf16>
      %v = arith.mulf %f, %s : f16
      memref.store %v, %b[%k, %n] : memref<64x64xf16, #gpu.address_space<workgroup>>
      scf.reduce
    }
    "tile.copy"(%A, %a, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
    "tile.gemm"(%a, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
    "tile.copy"(%c, %C, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #gpu.address_space<private>>, memref<64x64xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
