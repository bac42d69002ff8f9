// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 -p 'tile-infer-layout'

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// Two gemms accumulate into one fragment with different instructions (chosen
// here by hand): the diagnostic names the other use.
func.func @conflict() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    %b1 = "tile.alloc_shared"() : () -> memref<32x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    "tile.gemm"(%a, %b1, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false, tile.mma = {name = "v_mfma_f32_32x32x8_f16", shape = array<i64: 32, 32, 8, 1>, types = ["f16", "f16", "f32"]}, tile.warp_grid = array<i64: 2, 2>} : (memref<64x32xf16, #S>, memref<32x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    // expected-error@below {{tile-infer-layout: conflicting layouts for one accumulator fragment: this gemm uses v_mfma_f32_16x16x16_f16 over 4x1 waves, the gemm at}}
    "tile.gemm"(%a, %b1, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false, tile.mma = {name = "v_mfma_f32_16x16x16_f16", shape = array<i64: 16, 16, 16, 1>, types = ["f16", "f16", "f32"]}, tile.warp_grid = array<i64: 4, 1>} : (memref<64x32xf16, #S>, memref<32x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// A in registers that is no gemm accumulator's copy: tile-stage-operands (not run here) stages it.
func.func @register_operand() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_fragment"() : () -> memref<64x32xf16, #F>
    %b1 = "tile.alloc_shared"() : () -> memref<32x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    // expected-error@below {{tile-infer-layout: gemm operand A is held in registers where the matrix instruction cannot read it (run tile-stage-operands, which stages it through shared memory)}}
    "tile.gemm"(%a, %b1, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false, tile.mma = {name = "v_mfma_f32_32x32x8_f16", shape = array<i64: 32, 32, 8, 1>, types = ["f16", "f16", "f32"]}, tile.warp_grid = array<i64: 2, 2>} : (memref<64x32xf16, #F>, memref<32x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// Layouts come from the chosen instruction: tile-select-mma must run first.
func.func @no_instruction() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    // expected-error@below {{tile-infer-layout: tile.gemm has no chosen instruction; run tile-select-mma first}}
    "tile.gemm"(%a, %a, %c) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<64x32xf16, #S>, memref<64x32xf16, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

// A tile.mma written by hand with a shape the target's matrix core has no
// lane layout for is refused at the gemm, not an internal error.
func.func @no_lane_layout(%C: memref<64x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %b = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %acc = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    // expected-error@below {{tile-infer-layout: this gemm's tile.mma (mfma_16x16x16f16, 16x16x7) has no lane layout on amdgpu:gfx942: no documented lane layout for a 16x16x7 instruction on wave64 (run tile-select-mma, which chooses one)}}
    "tile.gemm"(%a, %b, %acc) {accum_dtype = f32, tile.mma = {name = "mfma_16x16x16f16", shape = array<i64: 16, 16, 7, 1>, types = ["f16", "f16", "f32"]}, tile.warp_grid = array<i64: 1, 2>, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}
