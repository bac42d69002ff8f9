// RUN: tile-opt %s --split-input-file --verify-diagnostics -p 'tile-insert-barriers'

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// An scf.if writes P and then reads it: the read needs a barrier inside the
// branch, which would be divergent, so the program is refused.
func.func @write_then_read_in_branch(%flag: i1) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %f = arith.constant 1.0 : f16
    %p = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %o = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    scf.if %flag {
      memref.store %f, %p[%c0, %c0] : memref<64x64xf16, #S>
      // expected-error@below {{tile-insert-barriers: this access of a shared buffer conflicts with an earlier one in the same scf.if}}
      "tile.gemm"(%p, %p, %o) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

// Per-thread code: a branch on the thread writes its element and reads its
// neighbour's; the barrier between would be divergent, so it is refused.
func.func @exchange_under_a_branch(%g: memref<64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c63 = arith.constant 63 : index
    %c64 = arith.constant 64 : index
    %s = "tile.alloc_shared"() : () -> memref<64xf32, #gpu.address_space<workgroup>>
    scf.parallel (%t) = (%c0) to (%c64) step (%c1) {
      %low = arith.cmpi ult, %t, %c63 : index
      scf.if %low {
        %x = memref.load %g[%t] : memref<64xf32>
        memref.store %x, %s[%t] : memref<64xf32, #gpu.address_space<workgroup>>
        %n = arith.addi %t, %c1 : index
        // expected-error@below {{tile-insert-barriers: under a condition on the thread, this access of memory conflicts with an earlier one in the same branch}}
        %y = memref.load %s[%n] : memref<64xf32, #gpu.address_space<workgroup>>
        memref.store %y, %g[%t] : memref<64xf32>
      }
      scf.reduce
    } {tile.per_thread}
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}
