// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx942 -p 'tile-select-mma,tile-infer-layout' | filecheck %s

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// The accumulator takes the chosen instruction's layout over the wave grid,
// transposed (the MFMAs compute C^T += B^T A^T); copies into
// LDS get 128-bit accesses (16 fp8 or 8 f16 elements per lane).
// CHECK-LABEL: func.func @accumulator
// CHECK: "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 32, 32, 16>, kind = "mma_accumulator", transposed = true, warps = array<i64: 2, 2>}}
// CHECK: "tile.copy"{{.*}}tile.vector_width = 16 : i64
// CHECK: "tile.copy"{{.*}}tile.vector_width = 8 : i64
func.func @accumulator(%A: memref<256x256xf8E4M3FNUZ>, %H: memref<256x256xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<128x32xf8E4M3FNUZ, #S>
    %h = "tile.alloc_shared"() : () -> memref<16x8xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #F>
    "tile.copy"(%A, %a, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf8E4M3FNUZ>, memref<128x32xf8E4M3FNUZ, #S>, index, index) -> ()
    "tile.copy"(%H, %h, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<16x8xf16, #S>, index, index) -> ()
    "tile.gemm"(%a, %a, %c) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<128x32xf8E4M3FNUZ, #S>, memref<128x32xf8E4M3FNUZ, #S>, memref<128x128xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
