// Row softmax from tile.reduce (max, sum) and scf.parallel (exp, divide); 100 rows in blocks of 32.
// Written by test/python/kernel_text.py.
func.func @softmax(%X: memref<100x64xf32>, %Y: memref<100x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bM = arith.constant 32 : index
    %n = arith.constant 64 : index
    %X_l = "tile.alloc_fragment"() : () -> memref<32x64xf32, #gpu.address_space<private>>
    %max = "tile.alloc_fragment"() : () -> memref<32xf32, #gpu.address_space<private>>
    %sum = "tile.alloc_fragment"() : () -> memref<32xf32, #gpu.address_space<private>>
    %row = arith.muli %bx, %bM : index
    "tile.copy"(%X, %X_l, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<100x64xf32>, memref<32x64xf32, #gpu.address_space<private>>, index, index) -> ()
    "tile.reduce"(%X_l, %max) {clear = true, dim = 1 : i64, kind = "max"} : (memref<32x64xf32, #gpu.address_space<private>>, memref<32xf32, #gpu.address_space<private>>) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%bM, %n) step (%c1, %c1) {
      %x = memref.load %X_l[%i, %j] : memref<32x64xf32, #gpu.address_space<private>>
      %mx = memref.load %max[%i] : memref<32xf32, #gpu.address_space<private>>
      %d = arith.subf %x, %mx : f32
      %e = math.exp %d : f32
      memref.store %e, %X_l[%i, %j] : memref<32x64xf32, #gpu.address_space<private>>
      scf.reduce
    }
    "tile.reduce"(%X_l, %sum) {clear = true, dim = 1 : i64, kind = "sum"} : (memref<32x64xf32, #gpu.address_space<private>>, memref<32xf32, #gpu.address_space<private>>) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%bM, %n) step (%c1, %c1) {
      %e = memref.load %X_l[%i, %j] : memref<32x64xf32, #gpu.address_space<private>>
      %s = memref.load %sum[%i] : memref<32xf32, #gpu.address_space<private>>
      %y = arith.divf %e, %s : f32
      memref.store %y, %X_l[%i, %j] : memref<32x64xf32, #gpu.address_space<private>>
      scf.reduce
    }
    "tile.copy"(%X_l, %Y, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<32x64xf32, #gpu.address_space<private>>, memref<100x64xf16>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 256 : i64} : () -> ()
  return
}
