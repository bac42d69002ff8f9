// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx942 -p 'tile-select-mma,tile-infer-layout' | filecheck %s

#F = #gpu.address_space<private>
// A tile copied from f16 memory gets the blocked layout: 8 f16 (128 bits) per
// thread per access, 128 threads along a 1024-column row; the row vectors
// reduced from it follow its rows (dims = [0]); a reduction across the
// row's two waves gets a scratch of one f32 per wave and register (2 x 4).
// CHECK-LABEL: func.func @row_reduction
// CHECK: %[[SCRATCH:.+]] = "tile.alloc_shared"() {tile.scratch} : () -> memref<8xf32, #gpu.address_space<workgroup>>
// CHECK: "tile.alloc_fragment"() {tile.layout = {base_shape = array<i64: 4, 1024>, dims = array<i64: 0, 1>, kind = "blocked", rows_per_pass = 1 : i64, threads_per_row = 128 : i64, vector = 8 : i64}} : () -> memref<4x1024xf32
// CHECK: "tile.alloc_fragment"() {tile.layout = {base_shape = array<i64: 4, 1024>, dims = array<i64: 0>, kind = "blocked", rows_per_pass = 1 : i64, threads_per_row = 128 : i64, vector = 8 : i64}} : () -> memref<4xf32
func.func @row_reduction(%X: memref<64x1024xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %x = "tile.alloc_fragment"() : () -> memref<4x1024xf32, #F>
    %m = "tile.alloc_fragment"() : () -> memref<4xf32, #F>
    "tile.copy"(%X, %x, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x1024xf16>, memref<4x1024xf32, #F>, index, index) -> ()
    "tile.reduce"(%x, %m) {clear = true, dim = 1 : i64, kind = "max"} : (memref<4x1024xf32, #F>, memref<4xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 16>, threads = 128 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// A row vector read in a T.Parallel over a gemm accumulator takes the
// accumulator's rows (its projection onto dim 0); no scratch is needed. The
// accumulator is laid out transposed (its MFMAs issued as C^T += B^T A^T),
// and the row vector with it.
// CHECK-LABEL: func.func @accumulator_rows
// CHECK-NOT: tile.scratch
// CHECK: "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 32, 32, 8>, kind = "mma_accumulator", transposed = true, warps = array<i64: 2, 2>}}
// CHECK: "tile.alloc_fragment"() {tile.layout = {base_shape = array<i64: 64, 64>, dims = array<i64: 0>, instruction = array<i64: 32, 32, 8>, kind = "mma_accumulator", transposed = true, warps = array<i64: 2, 2>}} : () -> memref<64xf32
func.func @accumulator_rows(%A: memref<64x64xf16>, %Y: memref<64x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %a = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %acc = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    %scale = "tile.alloc_fragment"() : () -> memref<64xf32, #F>
    "tile.copy"(%A, %a, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<64x64xf16, #S>, index, index) -> ()
    "tile.gemm"(%a, %a, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
      %v = memref.load %acc[%i, %j] : memref<64x64xf32, #F>
      %s = memref.load %scale[%i] : memref<64xf32, #F>
      %p = arith.mulf %v, %s : f32
      memref.store %p, %acc[%i, %j] : memref<64x64xf32, #F>
      scf.reduce
    }
    "tile.copy"(%acc, %Y, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #F>, memref<64x64xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// A kernel that reduces the accumulator's rows lays it out transposed too (a
// lane holds one row of each instruction tile), and the row vector follows it.
// CHECK-LABEL: func.func @accumulator_reduced
// CHECK: "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 32, 32, 8>, kind = "mma_accumulator", transposed = true, warps = array<i64: 2, 2>}}
// CHECK: "tile.alloc_fragment"() {tile.layout = {base_shape = array<i64: 64, 64>, dims = array<i64: 0>, instruction = array<i64: 32, 32, 8>, kind = "mma_accumulator", transposed = true, warps = array<i64: 2, 2>}} : () -> memref<64xf32
func.func @accumulator_reduced(%A: memref<64x64xf16>, %Y: memref<64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %a = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %acc = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    %rows = "tile.alloc_fragment"() : () -> memref<64xf32, #F>
    "tile.copy"(%A, %a, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<64x64xf16, #S>, index, index) -> ()
    "tile.gemm"(%a, %a, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    "tile.reduce"(%acc, %rows) {clear = true, dim = 1 : i64, kind = "max"} : (memref<64x64xf32, #F>, memref<64xf32, #F>) -> ()
    "tile.copy"(%rows, %Y, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<64xf32, #F>, memref<64xf32>, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
