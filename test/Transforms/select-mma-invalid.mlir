// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 --tile-select-mma

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// K = 4 is no multiple of any f16 instruction's K on gfx942, so every row is rejected with its reason.
func.func @k_too_small() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<64x4xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<4x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    // expected-error@below {{tile-select-mma: no matrix instruction of amdgpu:gfx942 fits this 64x64x4 f16 x f16 -> f32 gemm with 256 threads; tried: v_mfma_f32_16x16x16_f16: K=4 is not a multiple of 16; v_mfma_f32_32x32x8_f16: K=4 is not a multiple of 8; v_mfma_f32_16x16x4_4b_f16: no documented lane layout for 16x16x4 with 4 blocks; v_mfma_f32_32x32x4_2b_f16: no documented lane layout for 32x32x4 with 2 blocks; v_mfma_f32_4x4x4_16b_f16: no documented lane layout for 4x4x4 with 16 blocks; options: a block whose M x N splits into the instructions' tiles (32x32x8, 16x16x16) over the 4 waves and whose K is a multiple of theirs, set by tile-tiling}}
    "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x4xf16, #S>, memref<4x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// gfx942 has no OCP fp8 instruction (tile-legalize-precision converts or rejects before this);
// the error names the ways out.
func.func @ocp_fp8() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<64x64xf8E4M3FN, #S>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    // expected-error@below {{amdgpu:gfx942 has no matrix instruction for f8E4M3FN x f8E4M3FN -> f32; options: compute it exactly in f16 with tile-legalize-precision}}
    "tile.gemm"(%a, %a, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf8E4M3FN, #S>, memref<64x64xf8E4M3FN, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// 100 threads are not whole waves.
func.func @partial_wave() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    // expected-error@below {{tried: 100 threads are not a whole number of 64-lane waves; options: a thread count that is a multiple of 64}}
    "tile.gemm"(%a, %a, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 100 : i64} : () -> ()
  return
}
