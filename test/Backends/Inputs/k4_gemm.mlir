// K = 4 is no multiple of any f16 instruction's K: tile-select-mma refuses it,
// naming the target.
#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
func.func @k_too_small() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<64x4xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<4x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x4xf16, #S>, memref<4x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
