// LayerNorm over rows of 1024 bf16: Y = (X - mean) * rstd * gamma + beta,
// also writing each row's mean and rstd (f32), as a training forward pass
// keeps them. 4 rows per workgroup; statistics in f32.
!X = memref<256x1024xbf16>
!vec = memref<1024xbf16>
!stat = memref<256xf32>
!tile = memref<4x1024xf32, #gpu.address_space<private>>
!rows = memref<4xf32, #gpu.address_space<private>>

func.func @layernorm(%X: !X, %gamma: !vec, %beta: !vec, %Y: !X, %Mean: !stat, %Rstd: !stat) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bm = arith.constant 4 : index
    %n = arith.constant 1024 : index
    %inv_n = arith.constant 9.765625e-04 : f32
    %eps = arith.constant 1.0e-05 : f32
    %x = "tile.alloc_fragment"() : () -> !tile
    %sq = "tile.alloc_fragment"() : () -> !tile
    %sum = "tile.alloc_fragment"() : () -> !rows
    %mean = "tile.alloc_fragment"() : () -> !rows
    %rstd = "tile.alloc_fragment"() : () -> !rows
    %row = arith.muli %bx, %bm : index
    "tile.copy"(%X, %x, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (!X, !tile, index, index) -> ()
    "tile.reduce"(%x, %sum) {clear = true, dim = 1 : i64, kind = "sum"} : (!tile, !rows) -> ()
    scf.parallel (%i) = (%c0) to (%bm) step (%c1) {
      %s = memref.load %sum[%i] : !rows
      %mu = arith.mulf %s, %inv_n : f32
      memref.store %mu, %mean[%i] : !rows
      scf.reduce
    }
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %n) step (%c1, %c1) {
      %v = memref.load %x[%i, %j] : !tile
      %mu = memref.load %mean[%i] : !rows
      %d = arith.subf %v, %mu : f32
      %d2 = arith.mulf %d, %d : f32
      memref.store %d, %x[%i, %j] : !tile
      memref.store %d2, %sq[%i, %j] : !tile
      scf.reduce
    }
    "tile.reduce"(%sq, %sum) {clear = true, dim = 1 : i64, kind = "sum"} : (!tile, !rows) -> ()
    scf.parallel (%i) = (%c0) to (%bm) step (%c1) {
      %s = memref.load %sum[%i] : !rows
      %var = arith.mulf %s, %inv_n : f32
      %ve = arith.addf %var, %eps : f32
      %r = math.rsqrt %ve : f32
      memref.store %r, %rstd[%i] : !rows
      scf.reduce
    }
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %n) step (%c1, %c1) {
      %d = memref.load %x[%i, %j] : !tile
      %r = memref.load %rstd[%i] : !rows
      %g = memref.load %gamma[%j] : !vec
      %b = memref.load %beta[%j] : !vec
      %g32 = arith.extf %g : bf16 to f32
      %b32 = arith.extf %b : bf16 to f32
      %xn = arith.mulf %d, %r : f32
      %xg = arith.mulf %xn, %g32 : f32
      %y = arith.addf %xg, %b32 : f32
      memref.store %y, %x[%i, %j] : !tile
      scf.reduce
    }
    "tile.copy"(%x, %Y, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (!tile, !X, index, index) -> ()
    "tile.copy"(%mean, %Mean, %row) {operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (!rows, !stat, index) -> ()
    "tile.copy"(%rstd, %Rstd, %row) {operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (!rows, !stat, index) -> ()
    gpu.yield
  }) {grid = array<i64: 64>, threads = 128 : i64} : () -> ()
  return
}
