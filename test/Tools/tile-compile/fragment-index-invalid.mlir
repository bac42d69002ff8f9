// A replicated fragment (a one-row block's statistic, held by every thread)
// read outside any T.Parallel at a constant index past its end: refused with
// the index and the shape (it was an internal KeyError; found by
// test_fuzz.py's mutated corpus).
// RUN: tile-compile %s --target amdgpu:gfx942 --emit gpu --verify-diagnostics

#F = #gpu.address_space<private>
func.func @one_row(%X: memref<8x1024xf32>, %M: memref<8xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c5 = arith.constant 5 : index
    %c1024 = arith.constant 1024 : index
    %x = "tile.alloc_fragment"() : () -> memref<1x1024xf32, #F>
    %m = "tile.alloc_fragment"() : () -> memref<1xf32, #F>
    "tile.copy"(%X, %x, %bx, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<8x1024xf32>, memref<1x1024xf32, #F>, index, index) -> ()
    "tile.reduce"(%x, %m) {clear = true, dim = 1 : i64, kind = "max"} : (memref<1x1024xf32, #F>, memref<1xf32, #F>) -> ()
    // expected-error@below {{tile-lower-to-gpu: memref.load of element (5,) of a register fragment of shape (1,): out of bounds}}
    %mx = memref.load %m[%c5] : memref<1xf32, #F>
    scf.parallel (%j) = (%c0) to (%c1024) step (%c1) {
      %v = memref.load %x[%c0, %j] : memref<1x1024xf32, #F>
      %d = arith.subf %v, %mx : f32
      memref.store %d, %x[%c0, %j] : memref<1x1024xf32, #F>
      scf.reduce
    }
    "tile.copy"(%x, %X, %bx, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<1x1024xf32, #F>, memref<8x1024xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 8>, threads = 256 : i64} : () -> ()
  return
}
