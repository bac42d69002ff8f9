// RUN: tile-opt %s --verify-diagnostics --target=metax:xcore1000 -p "tile-select-mma,tile-lower-to-gpu"

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// A transposed accumulator (tile.layout transposed = true, C^T += B^T A^T) is
// lowered only by a matrix core that issues it so (amdgpu's); MetaX's does not,
// and must not lower it as if it were its instruction's own layout.
func.func @transposed_on_metax() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    // expected-error@below {{this family's matrix core does not issue transposed accumulators}}
    %c = "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 16, 16, 16>, kind = "mma_accumulator", transposed = true, warps = array<i64: 2, 2>}} : () -> memref<64x64xf32, #F>
    "tile.gemm"(%a, %a, %c) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<64x32xf16, #S>, memref<64x32xf16, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
