// RUN: tile-opt %s --verify-diagnostics --target=metax:xcore1000 --tile-lower-to-gpu

// A family whose matrix instructions read XOR-swizzled rows only with LDS
// transpose reads (MatrixCore.reads_swizzled_rows unset: MetaX, NVIDIA)
// refuses a gemm that reads a swizzled buffer along its rows (a
// tile.smem_layout written by hand or left stale) rather than giving it
// wrong addresses. AMD's MFMAs read them (lower-to-gpu-swizzle-vector-reads.mlir).

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
func.func @swizzled_read_along(%C: memref<64x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {tile.smem_layout = {pad = 0 : i64, swizzle = 2 : i64, transpose_read = true, transposed = false}} : () -> memref<64x64xf16, #S>
    %b = "tile.alloc_shared"() {tile.smem_layout = {pad = 0 : i64, swizzle = 2 : i64, transpose_read = true, transposed = false}} : () -> memref<64x64xf16, #S>
    %acc = "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 16, 16, 16>, kind = "mma_accumulator", warps = array<i64: 1, 2>}} : () -> memref<64x64xf32, #F>
    // expected-error@below {{tile-lower-to-gpu: operand A of this gemm is XOR-swizzled (tile.smem_layout swizzle = 2), which metax's matrix instructions read only with LDS transpose reads, but this gemm reads it along its stored rows}}
    "tile.gemm"(%a, %b, %acc) {accum_dtype = f32, tile.mma = {name = "mma_16x16x16f16", shape = array<i64: 16, 16, 16, 1>, types = ["f16", "f16", "f32"]}, tile.warp_grid = array<i64: 1, 2>, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    "tile.copy"(%acc, %C) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<64x64xf32, #F>, memref<64x64xf32>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}
