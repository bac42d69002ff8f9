// RUN: tile-opt %s --target=amdgpu:gfx950 -p 'tile-select-mma,tile-infer-layout{transpose-reads=true}' | filecheck %s
// RUN: tile-opt %s --target=amdgpu:gfx950 -p 'tile-select-mma,tile-infer-layout{transpose-reads=true},tile-lower-to-gpu' | filecheck %s --check-prefix=GPU
// RUN: tile-opt %s --target=amdgpu:gfx950 -p 'tile-select-mma,tile-infer-layout' | filecheck %s --check-prefix=DEFAULT
// RUN: tile-opt %s --target=amdgpu:gfx942 -p 'tile-select-mma,tile-infer-layout{transpose-reads=true}' | filecheck %s --check-prefix=DEFAULT

// gfx950 lists ds_read_b64_tr_b16 in memory.shared_transpose_reads: with the
// option, B (K x N, not K-contiguous) stays as stored and is read by transpose
// loads, 4 halves per lane, 2 per 32x32x16 operand (4 for block K 32 on a 2x2 wave grid); A is K-contiguous and
// keeps ordinary reads. Without the option, or on gfx942, B is stored transposed.
#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// CHECK-LABEL: func.func @b_row_major
// CHECK: %[[A:.*]] = "tile.alloc_shared"() {tile.smem_layout = {{{.*}}transpose_read = false, transposed = false{{.*}}}}
// CHECK: %[[B:.*]] = "tile.alloc_shared"() {tile.smem_layout = {{{.*}}transpose_read = true, transposed = false{{.*}}}}
// GPU-LABEL: gpu.func @b_row_major
// GPU-COUNT-4: amdgpu.transpose_load {{.*}} -> vector<4xf16>
// GPU-NOT: amdgpu.transpose_load
// DEFAULT-LABEL: func.func @b_row_major
// DEFAULT: "tile.alloc_shared"() {tile.smem_layout = {{{.*}}transpose_read = false, transposed = false{{.*}}}}
// DEFAULT: "tile.alloc_shared"() {tile.smem_layout = {{{.*}}transpose_read = false, transposed = true{{.*}}}}
func.func @b_row_major(%A: memref<128x128xf16>, %B: memref<128x128xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<32x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    "tile.copy"(%A, %a, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x128xf16>, memref<64x32xf16, #S>, index, index) -> ()
    "tile.copy"(%B, %bb, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x128xf16>, memref<32x64xf16, #S>, index, index) -> ()
    "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x32xf16, #S>, memref<32x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
