// Online softmax over column blocks (the recurrence flash attention uses):
// one pass keeps a running row max m and a running sum l of exp(x - m),
// rescaling l by exp(m_old - m_new) as the max grows; a second pass writes
// exp(x - m) / l. Rows of 2048 f16 in blocks of 256 columns, 8 rows per
// workgroup; f32 math.
!X = memref<256x2048xf16>
!block = memref<8x256xf32, #gpu.address_space<private>>
!rows = memref<8xf32, #gpu.address_space<private>>

func.func @online_softmax(%X: !X, %Y: !X) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bm = arith.constant 8 : index
    %bn = arith.constant 256 : index
    %blocks = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %minus_inf = arith.constant 0xFF800000 : f32
    %x = "tile.alloc_fragment"() : () -> !block
    %m = "tile.alloc_fragment"() : () -> !rows
    %m_prev = "tile.alloc_fragment"() : () -> !rows
    %l = "tile.alloc_fragment"() : () -> !rows
    %block_sum = "tile.alloc_fragment"() : () -> !rows
    %row = arith.muli %bx, %bm : index
    "tile.fill"(%m, %minus_inf) : (!rows, f32) -> ()
    "tile.fill"(%l, %zero) : (!rows, f32) -> ()
    scf.for %kb = %c0 to %blocks step %c1 {
      %col = arith.muli %kb, %bn : index
      "tile.copy"(%X, %x, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (!X, !block, index, index) -> ()
      "tile.copy"(%m, %m_prev) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (!rows, !rows) -> ()
      "tile.reduce"(%x, %m) {clear = false, dim = 1 : i64, kind = "max"} : (!block, !rows) -> ()
      scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %bn) step (%c1, %c1) {
        %v = memref.load %x[%i, %j] : !block
        %mi = memref.load %m[%i] : !rows
        %d = arith.subf %v, %mi : f32
        %e = math.exp %d : f32
        memref.store %e, %x[%i, %j] : !block
        scf.reduce
      }
      "tile.reduce"(%x, %block_sum) {clear = true, dim = 1 : i64, kind = "sum"} : (!block, !rows) -> ()
      scf.parallel (%i) = (%c0) to (%bm) step (%c1) {
        %old = memref.load %m_prev[%i] : !rows
        %new = memref.load %m[%i] : !rows
        %d = arith.subf %old, %new : f32
        %scale = math.exp %d : f32
        %li = memref.load %l[%i] : !rows
        %s = memref.load %block_sum[%i] : !rows
        %scaled = arith.mulf %li, %scale : f32
        %next = arith.addf %scaled, %s : f32
        memref.store %next, %l[%i] : !rows
        scf.reduce
      }
    }
    scf.for %kb = %c0 to %blocks step %c1 {
      %col = arith.muli %kb, %bn : index
      "tile.copy"(%X, %x, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (!X, !block, index, index) -> ()
      scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %bn) step (%c1, %c1) {
        %v = memref.load %x[%i, %j] : !block
        %mi = memref.load %m[%i] : !rows
        %li = memref.load %l[%i] : !rows
        %d = arith.subf %v, %mi : f32
        %e = math.exp %d : f32
        %y = arith.divf %e, %li : f32
        memref.store %y, %x[%i, %j] : !block
        scf.reduce
      }
      "tile.copy"(%x, %Y, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (!block, !X, index, index) -> ()
    }
    gpu.yield
  }) {grid = array<i64: 32>, threads = 256 : i64} : () -> ()
  return
}
