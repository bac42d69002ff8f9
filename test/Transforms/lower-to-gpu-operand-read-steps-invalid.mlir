// RUN: tile-opt %s --verify-diagnostics --split-input-file --target=amdgpu:gfx942 --tile-lower-to-gpu
// RUN: tile-opt %s --verify-diagnostics --split-input-file --target=amdgpu:gfx1100 --tile-lower-to-gpu

// A tile.operand_read_steps the target's matrix instructions do not read
// so (written by hand, or left by another target's tile-infer-layout) is
// refused at the gemm rather than read with the wrong K order: gfx942's
// MFMAs read this gemm two K steps at a time, RDNA3's WMMAs one.

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
func.func @four_steps(%C: memref<64x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %b = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %acc = "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 16, 16, 16>, kind = "mma_accumulator", warps = array<i64: 1, 2>}} : () -> memref<64x64xf32, #F>
    // expected-error@below {{tile-lower-to-gpu: this gemm's tile.operand_read_steps is 4, but}}
    "tile.gemm"(%a, %b, %acc) {accum_dtype = f32, tile.mma = {name = "mfma_16x16x16f16", shape = array<i64: 16, 16, 16, 1>, types = ["f16", "f16", "f32"]}, tile.operand_read_steps = 4 : i64, tile.warp_grid = array<i64: 1, 2>, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    "tile.copy"(%acc, %C) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<64x64xf32, #F>, memref<64x64xf32>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}
