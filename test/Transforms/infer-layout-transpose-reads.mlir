// RUN: tile-opt %s --target=amdgpu:gfx950 -p 'tile-select-mma,tile-infer-layout{transpose-reads=true}' | filecheck %s
// RUN: tile-opt %s --target=amdgpu:gfx950 -p 'tile-select-mma,tile-infer-layout{transpose-reads=true},tile-lower-to-gpu' | filecheck %s --check-prefix=GPU
// RUN: tile-opt %s --target=amdgpu:gfx950 -p 'tile-select-mma,tile-infer-layout' | filecheck %s --check-prefix=AUTO
// RUN: tile-opt %s --target=amdgpu:gfx950 -p 'tile-select-mma,tile-infer-layout{transpose-reads=false}' | filecheck %s --check-prefix=OFF
// RUN: tile-opt %s --target=amdgpu:gfx942 -p 'tile-select-mma,tile-infer-layout{transpose-reads=true}' | filecheck %s --check-prefix=OFF
// RUN: not tile-opt %s --target=amdgpu:gfx950 -p 'tile-infer-layout{transpose-reads=yes}' 2>&1 | filecheck %s --check-prefix=BAD

// gfx950 lists ds_read_b64_tr_b16 in memory.shared_transpose_reads: with the
// option, B (K x N, not K-contiguous) stays as stored and is read by transpose
// loads, 4 halves per lane, 2 per 32x32x16 operand (4 for block K 32 on a 2x2 wave grid); A is K-contiguous and
// keeps ordinary reads. With transpose-reads=false, or on gfx942, B is stored
// transposed. The default, auto, reads transposed where the accumulator takes
// at most a quarter of a lane's 512 registers: @b_row_major's 64x64 f32 over
// 256 lanes takes 16, @large_accumulator's 256x256 takes 256.
// BAD: tile-infer-layout: option 'transpose-reads' expects auto, true or false, got 'yes'

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// CHECK-LABEL: func.func @b_row_major
// CHECK: %[[A:.*]] = "tile.alloc_shared"() {tile.smem_layout = {{{.*}}transpose_read = false, transposed = false{{.*}}}}
// CHECK: %[[B:.*]] = "tile.alloc_shared"() {tile.smem_layout = {{{.*}}conflicts = 0 : i64, pad = 0 : i64, swizzle = 2 : i64, transpose_read = true, transposed = false{{.*}}}}
// GPU-LABEL: gpu.func @b_row_major
// B's rows of 8 16-byte chunks are XOR-swizzled (no row padding makes transpose
// reads conflict-free for 32 and 64 banks at once): chunk c of row r is stored
// at c ^ (2r mod 8), so both the stores and the reads XOR the column.
// GPU: arith.muli %{{.*}}, %c2
// GPU: arith.andi %{{.*}}, %c7
// GPU: arith.muli %{{.*}}, %c8
// GPU: arith.xori
// GPU: vector.store
// GPU-COUNT-4: amdgpu.transpose_load {{.*}} -> vector<4xf16>
// GPU-NOT: amdgpu.transpose_load
// AUTO-LABEL: func.func @b_row_major
// AUTO: "tile.alloc_shared"() {tile.smem_layout = {{{.*}}transpose_read = false, transposed = false{{.*}}}}
// AUTO: "tile.alloc_shared"() {tile.smem_layout = {{{.*}}transpose_read = true, transposed = false{{.*}}}}
// OFF-LABEL: func.func @b_row_major
// OFF: "tile.alloc_shared"() {tile.smem_layout = {{{.*}}transpose_read = false, transposed = false{{.*}}}}
// OFF: "tile.alloc_shared"() {tile.smem_layout = {{{.*}}transpose_read = false, transposed = true{{.*}}}}
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

// GPU-LABEL: gpu.func @large_accumulator
// AUTO-LABEL: func.func @large_accumulator
// AUTO: "tile.alloc_shared"() {tile.smem_layout = {{{.*}}transpose_read = false, transposed = false{{.*}}}}
// AUTO: "tile.alloc_shared"() {tile.smem_layout = {{{.*}}transpose_read = false, transposed = true{{.*}}}}
func.func @large_accumulator(%A: memref<256x256xf16>, %B: memref<256x256xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<256x32xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<32x256xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<256x256xf32, #F>
    "tile.copy"(%A, %a, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<256x32xf16, #S>, index, index) -> ()
    "tile.copy"(%B, %bb, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<32x256xf16, #S>, index, index) -> ()
    "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x32xf16, #S>, memref<32x256xf16, #S>, memref<256x256xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
