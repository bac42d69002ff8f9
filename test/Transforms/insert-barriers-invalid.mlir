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
