// RMSNorm over rows of 2048 f16: Y = X * rsqrt(mean(X^2) + eps) * weight.
// 2 rows per workgroup of 256 threads; f32 math.
!X = memref<128x2048xf16>
!vec = memref<2048xf16>
!tile = memref<2x2048xf32, #gpu.address_space<private>>
!rows = memref<2xf32, #gpu.address_space<private>>

func.func @rmsnorm(%X: !X, %weight: !vec, %Y: !X) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bm = arith.constant 2 : index
    %n = arith.constant 2048 : index
    %inv_n = arith.constant 4.8828125e-04 : f32
    %eps = arith.constant 1.0e-06 : f32
    %x = "tile.alloc_fragment"() : () -> !tile
    %sq = "tile.alloc_fragment"() : () -> !tile
    %ss = "tile.alloc_fragment"() : () -> !rows
    %row = arith.muli %bx, %bm : index
    "tile.copy"(%X, %x, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (!X, !tile, index, index) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %n) step (%c1, %c1) {
      %v = memref.load %x[%i, %j] : !tile
      %v2 = arith.mulf %v, %v : f32
      memref.store %v2, %sq[%i, %j] : !tile
      scf.reduce
    }
    "tile.reduce"(%sq, %ss) {clear = true, dim = 1 : i64, kind = "sum"} : (!tile, !rows) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %n) step (%c1, %c1) {
      %v = memref.load %x[%i, %j] : !tile
      %s = memref.load %ss[%i] : !rows
      %w = memref.load %weight[%j] : !vec
      %ms = arith.mulf %s, %inv_n : f32
      %mse = arith.addf %ms, %eps : f32
      %r = math.rsqrt %mse : f32
      %w32 = arith.extf %w : f16 to f32
      %xn = arith.mulf %v, %r : f32
      %y = arith.mulf %xn, %w32 : f32
      memref.store %y, %x[%i, %j] : !tile
      scf.reduce
    }
    "tile.copy"(%x, %Y, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (!tile, !X, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 64>, threads = 256 : i64} : () -> ()
  return
}
