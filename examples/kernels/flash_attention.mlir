// FlashAttention forward (one head, 256 x 64, f16), written as TileLang's
// example_mha_fwd is written: S = Q K^T into a fragment, online softmax on its
// rows (tile.reduce, exp2 with the 1/sqrt(d) scale folded in, on the
// hardware's exp2 unit: fastmath<afn>), P cast to an f16 fragment, O += P V
// with P taken from registers; K and V prefetched one block ahead
// (num_stages = 2). Where the family's matrix instructions read P as their A
// (AMD, NVIDIA's mma.sync with whole rows per warp) it stays in registers,
// else tile-stage-operands stages it through shared memory; a remark says which.
!QKV = memref<256x64xf16>
!tile = memref<64x64xf16, #gpu.address_space<workgroup>>
!acc = memref<64x64xf32, #gpu.address_space<private>>
!p = memref<64x64xf16, #gpu.address_space<private>>
!rows = memref<64xf32, #gpu.address_space<private>>

func.func @flash_attention(%Q: !QKV, %K: !QKV, %V: !QKV, %O: !QKV) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bm = arith.constant 64 : index
    %bn = arith.constant 64 : index
    %d = arith.constant 64 : index
    %blocks = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    %minus_inf = arith.constant 0xFF800000 : f32
    // log2(e) / sqrt(64): softmax(QK^T / sqrt(d)) with exp2
    %scale = arith.constant 0.18033688 : f32
    %q_s = "tile.alloc_shared"() : () -> !tile
    %k_s = "tile.alloc_shared"() : () -> !tile
    %v_s = "tile.alloc_shared"() : () -> !tile
    %acc_s = "tile.alloc_fragment"() : () -> !acc
    %acc_s_cast = "tile.alloc_fragment"() : () -> !p
    %acc_o = "tile.alloc_fragment"() : () -> !acc
    %m = "tile.alloc_fragment"() : () -> !rows
    %m_prev = "tile.alloc_fragment"() : () -> !rows
    %rescale = "tile.alloc_fragment"() : () -> !rows
    %row_sum = "tile.alloc_fragment"() : () -> !rows
    %l = "tile.alloc_fragment"() : () -> !rows
    %row0 = arith.muli %bx, %bm : index
    "tile.copy"(%Q, %q_s, %row0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (!QKV, !tile, index, index) -> ()
    "tile.fill"(%acc_o, %zero) : (!acc, f32) -> ()
    "tile.fill"(%l, %zero) : (!rows, f32) -> ()
    "tile.fill"(%m, %minus_inf) : (!rows, f32) -> ()
    scf.for %kb = %c0 to %blocks step %c1 {
      %k0 = arith.muli %kb, %bn : index
      "tile.copy"(%K, %k_s, %k0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (!QKV, !tile, index, index) -> ()
      "tile.fill"(%acc_s, %zero) : (!acc, f32) -> ()
      "tile.gemm"(%q_s, %k_s, %acc_s) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (!tile, !tile, !acc) -> ()
      "tile.copy"(%m, %m_prev) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (!rows, !rows) -> ()
      "tile.reduce"(%acc_s, %m) {clear = false, dim = 1 : i64, kind = "max"} : (!acc, !rows) -> ()
      scf.parallel (%i) = (%c0) to (%bm) step (%c1) {
        %old = memref.load %m_prev[%i] : !rows
        %new = memref.load %m[%i] : !rows
        %a = arith.mulf %old, %scale : f32
        %b = arith.mulf %new, %scale : f32
        %diff = arith.subf %a, %b : f32
        %r = math.exp2 %diff fastmath<afn> : f32
        memref.store %r, %rescale[%i] : !rows
        scf.reduce
      }
      scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %bn) step (%c1, %c1) {
        %s = memref.load %acc_s[%i, %j] : !acc
        %mi = memref.load %m[%i] : !rows
        %a = arith.mulf %s, %scale : f32
        %b = arith.mulf %mi, %scale : f32
        %diff = arith.subf %a, %b : f32
        %e = math.exp2 %diff fastmath<afn> : f32
        memref.store %e, %acc_s[%i, %j] : !acc
        scf.reduce
      }
      "tile.reduce"(%acc_s, %row_sum) {clear = true, dim = 1 : i64, kind = "sum"} : (!acc, !rows) -> ()
      scf.parallel (%i) = (%c0) to (%bm) step (%c1) {
        %li = memref.load %l[%i] : !rows
        %r = memref.load %rescale[%i] : !rows
        %s = memref.load %row_sum[%i] : !rows
        %scaled = arith.mulf %li, %r : f32
        %next = arith.addf %scaled, %s : f32
        memref.store %next, %l[%i] : !rows
        scf.reduce
      }
      "tile.copy"(%acc_s, %acc_s_cast) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (!acc, !p) -> ()
      scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %d) step (%c1, %c1) {
        %o = memref.load %acc_o[%i, %j] : !acc
        %r = memref.load %rescale[%i] : !rows
        %scaled = arith.mulf %o, %r : f32
        memref.store %scaled, %acc_o[%i, %j] : !acc
        scf.reduce
      }
      "tile.copy"(%V, %v_s, %k0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (!QKV, !tile, index, index) -> ()
      "tile.gemm"(%acc_s_cast, %v_s, %acc_o) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (!p, !tile, !acc) -> ()
    } {tile.num_stages = 2 : i64}
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %d) step (%c1, %c1) {
      %o = memref.load %acc_o[%i, %j] : !acc
      %li = memref.load %l[%i] : !rows
      %y = arith.divf %o, %li : f32
      memref.store %y, %acc_o[%i, %j] : !acc
      scf.reduce
    }
    "tile.copy"(%acc_o, %O, %row0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (!acc, !QKV, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 128 : i64} : () -> ()
  return
}
