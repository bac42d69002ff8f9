// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 -p 'tile-infer-layout'

#F = #gpu.address_space<private>
// The T.Parallel runs over %x (4 elements per thread access, from f32
// memory), and the column sums it reads take its columns' layout; they are
// reduced from %z (8 per access, from f16): the reduction's result is
// converted through shared memory, and the compiler says so.
func.func @converted_row_vector(%X: memref<16x64xf32>, %Z: memref<16x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %x = "tile.alloc_fragment"() : () -> memref<16x64xf32, #F>
    %z = "tile.alloc_fragment"() : () -> memref<16x64xf32, #F>
    %colsum = "tile.alloc_fragment"() : () -> memref<64xf32, #F>
    "tile.copy"(%X, %x, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<16x64xf32>, memref<16x64xf32, #F>, index, index) -> ()
    "tile.copy"(%Z, %z, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<16x64xf16>, memref<16x64xf32, #F>, index, index) -> ()
    // expected-remark@below {{the result of this reduction (blocked layout of a 64 fragment (8 registers per thread)) is converted through shared memory to the layout of its destination at}}
    "tile.reduce"(%z, %colsum) {clear = true, dim = 0 : i64, kind = "sum"} : (memref<16x64xf32, #F>, memref<64xf32, #F>) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c64) step (%c1, %c1) {
      %v = memref.load %x[%i, %j] : memref<16x64xf32, #F>
      %s = memref.load %colsum[%j] : memref<64xf32, #F>
      %d = arith.subf %v, %s : f32
      memref.store %d, %x[%i, %j] : memref<16x64xf32, #F>
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// The same with %z made first: the sums take %z's columns from the
// reduction, and the T.Parallel over %x converts them before the loop.
func.func @converted_before_the_loop(%X: memref<16x64xf32>, %Z: memref<16x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %z = "tile.alloc_fragment"() : () -> memref<16x64xf32, #F>
    %x = "tile.alloc_fragment"() : () -> memref<16x64xf32, #F>
    %colsum = "tile.alloc_fragment"() : () -> memref<64xf32, #F>
    "tile.copy"(%X, %x, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<16x64xf32>, memref<16x64xf32, #F>, index, index) -> ()
    "tile.copy"(%Z, %z, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<16x64xf16>, memref<16x64xf32, #F>, index, index) -> ()
    "tile.reduce"(%z, %colsum) {clear = true, dim = 0 : i64, kind = "sum"} : (memref<16x64xf32, #F>, memref<64xf32, #F>) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c64) step (%c1, %c1) {
      %v = memref.load %x[%i, %j] : memref<16x64xf32, #F>
      // expected-remark@below {{(blocked layout of a 64 fragment (8 registers per thread)) is read in a T.Parallel over the fragment at}}
      %s = memref.load %colsum[%j] : memref<64xf32, #F>
      %d = arith.subf %v, %s : f32
      memref.store %d, %x[%i, %j] : memref<16x64xf32, #F>
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}
