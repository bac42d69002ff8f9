// Row softmax, as TileLang's example writes it: Y = softmax(X) along rows,
// f16 in and out, f32 math. One workgroup per 4 rows of 1024; the row max and
// the row sum are tile.reduce into row vectors that follow the rows' threads.
// exp(x - max) is exp2((x - max) * log2(e)) on the hardware's exp2 unit
// (fastmath<afn>: terms below 2^-126 may flush to 0 beside the row's 1).
!X = memref<512x1024xf16>
!tile = memref<4x1024xf32, #gpu.address_space<private>>
!rows = memref<4xf32, #gpu.address_space<private>>

func.func @softmax(%X: !X, %Y: !X) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bm = arith.constant 4 : index
    %n = arith.constant 1024 : index
    %log2e = arith.constant 1.44269504 : f32
    %x = "tile.alloc_fragment"() : () -> !tile
    %max = "tile.alloc_fragment"() : () -> !rows
    %sum = "tile.alloc_fragment"() : () -> !rows
    %row = arith.muli %bx, %bm : index
    "tile.copy"(%X, %x, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (!X, !tile, index, index) -> ()
    "tile.reduce"(%x, %max) {clear = true, dim = 1 : i64, kind = "max"} : (!tile, !rows) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %n) step (%c1, %c1) {
      %v = memref.load %x[%i, %j] : !tile
      %m = memref.load %max[%i] : !rows
      %d = arith.subf %v, %m : f32
      %l = arith.mulf %d, %log2e : f32
      %e = math.exp2 %l fastmath<afn> : f32
      memref.store %e, %x[%i, %j] : !tile
      scf.reduce
    }
    "tile.reduce"(%x, %sum) {clear = true, dim = 1 : i64, kind = "sum"} : (!tile, !rows) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %n) step (%c1, %c1) {
      %e = memref.load %x[%i, %j] : !tile
      %s = memref.load %sum[%i] : !rows
      %y = arith.divf %e, %s : f32
      memref.store %y, %x[%i, %j] : !tile
      scf.reduce
    }
    "tile.copy"(%x, %Y, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (!tile, !X, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 128>, threads = 128 : i64} : () -> ()
  return
}
