// W4A16 GEMM: C = A * dequant(Bq), A f16, B as signed 4-bit values packed two
// per byte along K (low nibble: even k, high nibble: odd k; stored as x + 8),
// one f16 scale per output column. The dequantisation runs in a T.Parallel
// into shared memory; the gemm reads that tile; f32 accumulation.
!A = memref<128x256xf16>
!Bq = memref<128x128xi8>
!scales = memref<128xf16>
!C = memref<128x128xf16>
!a = memref<64x32xf16, #gpu.address_space<workgroup>>
!b = memref<32x64xf16, #gpu.address_space<workgroup>>
!acc = memref<64x64xf32, #gpu.address_space<private>>

func.func @w4a16_gemm(%A: !A, %Bq: !Bq, %scales: !scales, %C: !C) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %bm = arith.constant 64 : index
    %bn = arith.constant 64 : index
    %bk = arith.constant 32 : index
    %k_blocks = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %mask = arith.constant 15 : i8
    %eight = arith.constant 8.0 : f16
    %a_s = "tile.alloc_shared"() : () -> !a
    %b_s = "tile.alloc_shared"() : () -> !b
    %acc = "tile.alloc_fragment"() : () -> !acc
    "tile.fill"(%acc, %zero) : (!acc, f32) -> ()
    %row0 = arith.muli %by, %bm : index
    %col0 = arith.muli %bx, %bn : index
    scf.for %kb = %c0 to %k_blocks step %c1 {
      %k0 = arith.muli %kb, %bk : index
      "tile.copy"(%A, %a_s, %row0, %k0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (!A, !a, index, index) -> ()
      scf.parallel (%i, %j) = (%c0, %c0) to (%bk, %bn) step (%c1, %c1) {
        %k = arith.addi %k0, %i : index
        %col = arith.addi %col0, %j : index
        %byte_row = arith.divui %k, %c2 : index
        %odd = arith.remui %k, %c2 : index
        %shift_index = arith.muli %odd, %c4 : index
        %shift = arith.index_cast %shift_index : index to i8
        %byte = memref.load %Bq[%byte_row, %col] : !Bq
        %shifted = arith.shrui %byte, %shift : i8
        %nibble = arith.andi %shifted, %mask : i8
        %biased = arith.uitofp %nibble : i8 to f16
        %value = arith.subf %biased, %eight : f16
        %scale = memref.load %scales[%col] : !scales
        %w = arith.mulf %value, %scale : f16
        memref.store %w, %b_s[%i, %j] : !b
        scf.reduce
      }
      "tile.gemm"(%a_s, %b_s, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (!a, !b, !acc) -> ()
    }
    "tile.copy"(%acc, %C, %row0, %col0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (!acc, !C, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 2, 2>, threads = 128 : i64} : () -> ()
  return
}
