// RUN: tile-opt %s --target=amdgpu:gfx942 --tile-lower-to-gpu | filecheck %s

// AMD's MFMAs read XOR-swizzled rows with their ordinary vector reads
// (MfmaCore.reads_swizzled_rows; tile-infer-layout swizzles the rows of a
// buffer whose padding it drops to fit the LDS): each read's column is
// col ^ ((row * swizzle) mod chunks) x the elements of a 16-byte chunk,
// here (row * 2) & 7, times 8 f16 elements.
// CHECK-LABEL: gpu.func
// CHECK: %[[PHASE:.+]] = arith.andi %{{.+}}, %c7{{.*}} : index
// CHECK: %[[SHIFT:.+]] = arith.muli %[[PHASE]], %c8
// CHECK: %[[COLUMN:.+]] = arith.xori %{{.+}}, %[[SHIFT]]
// CHECK: vector.load %{{.+}}[%{{.+}}, %[[COLUMN]]] : memref<64x64xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK: amdgpu.mfma
#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
func.func @swizzled_vector_reads(%C: memref<64x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {tile.smem_layout = {pad = 0 : i64, swizzle = 2 : i64, transpose_read = false, transposed = false}} : () -> memref<64x64xf16, #S>
    %b = "tile.alloc_shared"() {tile.smem_layout = {pad = 0 : i64, swizzle = 2 : i64, transpose_read = false, transposed = false}} : () -> memref<64x64xf16, #S>
    %acc = "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 32, 32, 8>, kind = "mma_accumulator", warps = array<i64: 1, 2>}} : () -> memref<64x64xf32, #F>
    "tile.gemm"(%a, %b, %acc) {accum_dtype = f32, tile.mma = {name = "v_mfma_f32_32x32x8_f16", shape = array<i64: 32, 32, 8, 1>, types = ["f16", "f16", "f32"]}, tile.warp_grid = array<i64: 1, 2>, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    "tile.copy"(%acc, %C) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<64x64xf32, #F>, memref<64x64xf32>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}
