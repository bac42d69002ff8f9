// View ops in a host function under tile-run: the output written only through
// a collapsed view is found and its rows come from a rank-reducing copy; a
// view form the engine does not run is refused at its location, exit 1.
// RUN: not tile-run %s --entry collapsed --dim X.0=3 | filecheck %s --check-prefix=COLLAPSED
// RUN: not tile-run %s --entry transposed 2>&1 | filecheck %s --check-prefix=TRANSPOSED
// RUN: not tile-run %s --entry unknown_base 2>&1 | filecheck %s --check-prefix=BASE

// COLLAPSED: argument 0 %X: memref<?x4x8xf16> (input, 3x4x8)
// COLLAPSED-NEXT: argument 1 %Y: memref<12x8xf16> (output)
// COLLAPSED: NOT CHECKED: no float64 oracle for %Y (not a plain GEMM result)
func.func @collapsed(%X: memref<?x4x8xf16>, %Y: memref<12x8xf16>) {
  %y = memref.expand_shape %Y [[0, 1], [2]] output_shape [3, 4, 8] : memref<12x8xf16> into memref<3x4x8xf16>
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %t = "tile.alloc_fragment"() : () -> memref<4x8xf32, #gpu.address_space<private>>
    "tile.copy"(%X, %t, %b, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 3, 0>} : (memref<?x4x8xf16>, memref<4x8xf32, #gpu.address_space<private>>, index, index, index) -> ()
    "tile.copy"(%t, %y, %b, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 3>} : (memref<4x8xf32, #gpu.address_space<private>>, memref<3x4x8xf16>, index, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 3>, threads = 64 : i64} : () -> ()
  return
}

// TRANSPOSED: host-views.mlir:26:8: error: 'memref.transpose' is not supported by the reference engine
func.func @transposed(%A: memref<4x8xf32>) {
  %t = memref.transpose %A (i, j) -> (j, i) : memref<4x8xf32> to memref<8x4xf32, strided<[1, 8]>>
  return
}

// BASE: host-views.mlir:33:8: error: memref.reinterpret_cast: the source is a view of memref<4x8xf32, strided<[8, 1], offset: ?>>, whose base (where its layout's offset counts from) the reference engine does not know; cast a buffer of identity layout
// BASE-NOT: Traceback
func.func @unknown_base(%A: memref<4x8xf32, strided<[8, 1], offset: ?>>) {
  %r = memref.reinterpret_cast %A to offset: [0], sizes: [32], strides: [1] : memref<4x8xf32, strided<[8, 1], offset: ?>> to memref<32xf32>
  return
}
