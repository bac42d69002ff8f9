// Instruction choice per chip: full-rate first, 32x32 when the warp tile allows,
// larger K when it divides the block's K.
// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx942 --tile-select-mma | filecheck %s --check-prefix=GFX942
// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx950 --tile-select-mma | filecheck %s --check-prefix=GFX950
// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx90a --tile-select-mma | filecheck %s --check-prefix=GFX90A

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// GFX942-LABEL: func.func @f16_128x128x32
// GFX942: tile.mma = {name = "v_mfma_f32_32x32x8_f16", shape = array<i64: 32, 32, 8, 1>, types = ["f16", "f16", "f32"]}, tile.warp_grid = array<i64: 2, 2>
// gfx950: the doubled-K full-rate instruction, not the inherited half-rate one.
// GFX950-LABEL: func.func @f16_128x128x32
// GFX950: name = "v_mfma_f32_32x32x16_f16"
// GFX90A-LABEL: func.func @f16_128x128x32
// GFX90A: name = "v_mfma_f32_32x32x8f16"
func.func @f16_128x128x32() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<128x32xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<32x128xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #F>
    "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x32xf16, #S>, memref<32x128xf16, #S>, memref<128x128xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// A 32x32 block over 4 waves leaves 16x16 warp tiles: the 16x16 instruction.
// GFX942-LABEL: func.func @small_block
// GFX942: name = "v_mfma_f32_16x16x16_bf16"
// GFX942-SAME: tile.warp_grid = array<i64: 2, 2>
// GFX950-LABEL: func.func @small_block
// GFX950: name = "v_mfma_f32_16x16x32_bf16"
// GFX90A-LABEL: func.func @small_block
// GFX90A: name = "v_mfma_f32_16x16x16bf16_1k"
func.func @small_block() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<32x32xbf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<32x32xf32, #F>
    "tile.gemm"(%a, %a, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<32x32xbf16, #S>, memref<32x32xbf16, #S>, memref<32x32xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// i8 with i32 accumulation.
// GFX942-LABEL: func.func @int8
// GFX942: name = "v_mfma_i32_32x32x16_i8"
// GFX950-LABEL: func.func @int8
// GFX950: name = "v_mfma_i32_32x32x32_i8"
// GFX90A-LABEL: func.func @int8
// GFX90A: name = "v_mfma_i32_32x32x8i8"
func.func @int8() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<128x64xi8, #S>
    %bb = "tile.alloc_shared"() : () -> memref<64x128xi8, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x128xi32, #F>
    "tile.gemm"(%a, %bb, %c) {accum_dtype = i32, transpose_a = false, transpose_b = false} : (memref<128x64xi8, #S>, memref<64x128xi8, #S>, memref<128x128xi32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
