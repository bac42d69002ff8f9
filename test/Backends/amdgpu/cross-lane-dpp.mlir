// tile.reduce's cross-lane steps on AMD (backends/amdgpu/cross_lane.py): DPP
// moves in the VALU instead of gpu.shuffle (ds_swizzle/ds_bpermute, each waited
// for with s_waitcnt lgkmcnt). A row of 512 spread over the 64 lanes of a wave
// reduces over lane bits 1 to 32: within rows of 16 lanes by quad_perm,
// row_half_mirror and row_ror:8; across rows by row_bcast:15/31 and a readlane
// of lane 63 on gfx942, by permlane swaps on gfx950.
// (gfx942: one compile, its GPU-level IR kept by --save-temps=DIR.)
// RUN: rm -rf %t && tile-compile %s --target amdgpu:gfx942 --emit isa --save-temps=%t -o %t.s
// RUN: filecheck %s --check-prefixes=CHECK,GFX942 --input-file %t/cross-lane-dpp.gpu.mlir
// RUN: tile-compile %s --target amdgpu:gfx950 --emit gpu | filecheck %s --check-prefixes=CHECK,GFX950
// RUN: filecheck %s --check-prefix=ISA --input-file %t.s

#F = #gpu.address_space<private>
// CHECK-LABEL: gpu.func @row_sum_kernel0
// CHECK-NOT: gpu.shuffle
// CHECK: %[[Q1:.+]] = amdgpu.dpp %[[V:.+]] %[[V]] quad_perm([1 : i32, 0 : i32, 3 : i32, 2 : i32]) {bound_ctrl = true} : f32
// CHECK: %[[S1:.+]] = arith.addf %[[V]], %[[Q1]] : f32
// CHECK: %[[Q2:.+]] = amdgpu.dpp %[[S1]] %[[S1]] quad_perm([2 : i32, 3 : i32, 0 : i32, 1 : i32]) {bound_ctrl = true} : f32
// CHECK: %[[S2:.+]] = arith.addf %[[S1]], %[[Q2]] : f32
// CHECK: %[[H:.+]] = amdgpu.dpp %[[S2]] %[[S2]] row_half_mirror {bound_ctrl = true} : f32
// CHECK: %[[S4:.+]] = arith.addf %[[S2]], %[[H]] : f32
// CHECK: %[[R:.+]] = amdgpu.dpp %[[S4]] %[[S4]] row_ror(8 : i32) {bound_ctrl = true} : f32
// CHECK: %[[S8:.+]] = arith.addf %[[S4]], %[[R]] : f32
// GFX942: %[[B15:.+]] = amdgpu.dpp %[[S8]] %[[S8]] row_bcast_15 {row_mask = 10 : i32} : f32
// GFX942: %[[S16:.+]] = arith.addf %[[S8]], %[[B15]] : f32
// GFX942: %[[B31:.+]] = amdgpu.dpp %[[S16]] %[[S16]] row_bcast_31 {row_mask = 12 : i32} : f32
// GFX942: %[[S32:.+]] = arith.addf %[[S16]], %[[B31]] : f32
// GFX942: rocdl.readlane %[[S32]], %{{.+}} : (f32, i32) -> f32
// GFX950: %[[P16:.+]] = amdgpu.permlane_swap %[[S8]] 16 : f32
// GFX950: %[[S16:.+]] = arith.addf %[[S8]], %[[P16]] : f32
// GFX950: %[[P32:.+]] = amdgpu.permlane_swap %[[S16]] 32 : f32
// GFX950: arith.addf %[[S16]], %[[P32]] : f32
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.return

// No LDS-path exchange is left in the ISA.
// ISA-LABEL: row_sum_kernel0:
// ISA-NOT: ds_swizzle
// ISA-NOT: ds_bpermute
// ISA: row_bcast:15
// ISA: v_readlane_b32
// ISA-NOT: ds_swizzle
// ISA-NOT: ds_bpermute
// ISA: s_endpgm
func.func @row_sum(%X: memref<8x512xf32>, %Y: memref<8xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %x = "tile.alloc_fragment"() : () -> memref<8x512xf32, #F>
    %y = "tile.alloc_fragment"() : () -> memref<8xf32, #F>
    "tile.copy"(%X, %x, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<8x512xf32>, memref<8x512xf32, #F>, index, index) -> ()
    "tile.reduce"(%x, %y) {clear = true, dim = 1 : i64, kind = "sum"} : (memref<8x512xf32, #F>, memref<8xf32, #F>) -> ()
    "tile.copy"(%y, %Y, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<8xf32, #F>, memref<8xf32>, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}
