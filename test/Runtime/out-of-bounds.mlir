// The seed's scf.parallel epilogue stores without a bounds check; at a shape
// that is not a multiple of the block (100 rows, blocks of 64) the second
// block stores past the end of %C. Out-of-bounds memref.store/load is an
// error at the op (tile.copy, by contrast, drops such writes).
// RUN: not tile-run %s 2>&1 | filecheck %s

// CHECK: out-of-bounds.mlir:23:7: error: memref.store: index 100 is out of bounds for dimension 0 of size 100
// CHECK-NOT: Traceback
func.func @epilogue(%C: memref<100x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %one = arith.constant 1.0 : f32
    %acc = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    "tile.fill"(%acc, %one) : (memref<64x64xf32, #gpu.address_space<private>>, f32) -> ()
    %row = arith.muli %bx, %c64 : index
    scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
      %v = memref.load %acc[%i, %j] : memref<64x64xf32, #gpu.address_space<private>>
      %h = arith.truncf %v : f32 to f16
      %gi = arith.addi %row, %i : index
      memref.store %h, %C[%gi, %j] : memref<100x64xf16>
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 2>, threads = 64 : i64} : () -> ()
  return
}
