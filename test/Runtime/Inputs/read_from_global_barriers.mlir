// A 128x256 tile copied once and read only as the gemm's A: on gfx942, where
// not one stage of B's 256x64 tile fits beside it, tile-pipeline takes it
// out of LDS (tile.read_from_global). Its copy stays fenced as a copy into
// LDS is (tile-insert-barriers counts on that): %s2, written transposed
// before the copy and read after it, needs those barriers.
#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
func.func @f(%A: memref<256x256xf16>, %B: memref<256x512xf16>, %C: memref<256x64xf32>, %D: memref<128x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %row = arith.muli %b, %c128 : index
    %a = "tile.alloc_shared"() : () -> memref<128x256xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<256x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    %zero = arith.constant 0.0 : f32
    %s2 = "tile.alloc_shared"() : () -> memref<64x64xf32, #S>
    scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
      %ii = arith.index_cast %i : index to i32
      %jj = arith.index_cast %j : index to i32
      %s = arith.addi %ii, %jj : i32
      %v = arith.sitofp %s : i32 to f32
      memref.store %v, %s2[%j, %i] : memref<64x64xf32, #S>
      scf.reduce
    }
    "tile.copy"(%A, %a, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<128x256xf16, #S>, index, index) -> ()
    %drow = arith.muli %b, %c64 : index
    "tile.copy"(%s2, %D, %drow, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #S>, memref<128x64xf32>, index, index) -> ()
    "tile.fill"(%c, %zero) : (memref<128x64xf32, #F>, f32) -> ()
    scf.for %j = %c0 to %c8 step %c1 {
      %col = arith.muli %j, %c64 : index
      "tile.copy"(%B, %bb, %c0, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x512xf16>, memref<256x64xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x256xf16, #S>, memref<256x64xf16, #S>, memref<128x64xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    "tile.copy"(%c, %C, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x64xf32, #F>, memref<256x64xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 2>, threads = 256 : i64} : () -> ()
  return
}
