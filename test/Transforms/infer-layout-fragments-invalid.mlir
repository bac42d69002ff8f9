// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 -p 'tile-select-mma,tile-infer-layout'

#F = #gpu.address_space<private>
// Blocked layouts split the thread id into bit fields: 96 threads have none.
func.func @threads_not_a_power_of_two() {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    // expected-error@below {{tile-infer-layout: this kernel has 96 threads; fragments other than gemm accumulators need a power-of-two thread count}}
    %x = "tile.alloc_fragment"() : () -> memref<4x64xf32, #F>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 96 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// Register fragments are at most 2-D.
func.func @rank_three() {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    // expected-error@below {{tile-infer-layout: fragments of rank 3 are not supported (rank 0, 1 and 2 are)}}
    %x = "tile.alloc_fragment"() : () -> memref<2x4x64xf32, #F>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// The row vector's layout is fixed by the reduction into it (the accumulator's
// rows); a T.Parallel over another tile cannot write it where that tile's
// threads are: the error names both fragments.
func.func @written_in_another_layout(%A: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    // A of the gemm reads %a along its rows, B down its columns: one layout serves both.
    // expected-remark@+2 {{want it stored both ways: stored as written, operand B of the gemm at}}
    // expected-remark@below {{no row padding up to 64 elements makes the reads of the 64x64xf16 tile.alloc_shared}}
    %a = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %acc = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    %x = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    %rows = "tile.alloc_fragment"() : () -> memref<64xf32, #F>
    "tile.copy"(%A, %a, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<64x64xf16, #S>, index, index) -> ()
    "tile.gemm"(%a, %a, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    "tile.reduce"(%acc, %rows) {clear = true, dim = 1 : i64, kind = "max"} : (memref<64x64xf32, #F>, memref<64xf32, #F>) -> ()
    "tile.copy"(%A, %x, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<64x64xf32, #F>, index, index) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
      %v = memref.load %x[%i, %j] : memref<64x64xf32, #F>
      // expected-error@below {{this T.Parallel runs over the fragment at}}
      memref.store %v, %rows[%i] : memref<64xf32, #F>
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
