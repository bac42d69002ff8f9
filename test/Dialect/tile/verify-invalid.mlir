// RUN: tile-opt %s --split-input-file --verify-diagnostics

// Shared and fragment buffers exist only inside a kernel.
func.func @alloc_outside_kernel() {
  // expected-error@below {{tile.alloc_shared is only valid inside a tile.kernel}}
  %s = "tile.alloc_shared"() : () -> memref<16x16xf16, #gpu.address_space<workgroup>>
  return
}

// -----

// alloc_shared must produce workgroup memory.
func.func @alloc_shared_wrong_space() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    // expected-error@below {{tile.alloc_shared must produce a memref in #gpu.address_space<workgroup>}}
    %s = "tile.alloc_shared"() : () -> memref<16x16xf16, #gpu.address_space<private>>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// alloc_fragment must produce private memory.
func.func @alloc_fragment_wrong_space() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    // expected-error@below {{tile.alloc_fragment must produce a memref in #gpu.address_space<private>}}
    %f = "tile.alloc_fragment"() : () -> memref<16x16xf32>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// Tile buffers have static shapes.
func.func @alloc_dynamic_shape() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    // expected-error@below {{tile.alloc_fragment needs a static shape, got ?x16}}
    %f = "tile.alloc_fragment"() : () -> memref<?x16xf32, #gpu.address_space<private>>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// i4 is not one of the supported element types.
func.func @unsupported_element_type() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    // expected-error@below {{the result has element type i4, which tile buffers cannot hold}}
    %f = "tile.alloc_fragment"() : () -> memref<16xi4, #gpu.address_space<private>>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// A numeric memory space is none of global, shared or fragment.
func.func @unknown_memory_space() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    // expected-error@below {{the result is in memory space 5 : i64}}
    %f = "tile.alloc_fragment"() : () -> memref<16xf32, 5>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// Kernels do not nest.
func.func @nested_kernel() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    // expected-error@below {{tile.kernel cannot be nested inside another tile.kernel}}
    "tile.kernel"() ({
    ^bb0(%c: index):
      gpu.yield
    }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// The grid is an array<i64>.
func.func @grid_not_i64() {
  // expected-error@below {{tile.kernel: grid must be array<i64: ...>, got array<i32: 4>}}
  "tile.kernel"() ({
  ^bb0(%b: index):
    gpu.yield
  }) {grid = array<i32: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

// A grid has one to three dimensions.
func.func @grid_rank_four() {
  // expected-error@below {{tile.kernel: grid must have 1 to 3 dimensions, got 4}}
  "tile.kernel"() ({
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    gpu.yield
  }) {grid = array<i64: 1, 1, 1, 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// Grid extents are positive.
func.func @grid_zero() {
  // expected-error@below {{tile.kernel: grid extents must be positive, got [4, 0]}}
  "tile.kernel"() ({
  ^bb0(%a: index, %b: index):
    gpu.yield
  }) {grid = array<i64: 4, 0>, threads = 64 : i64} : () -> ()
  return
}

// -----

// A kernel has at least one thread.
func.func @threads_zero() {
  // expected-error@below {{tile.kernel: threads must be positive, got 0}}
  "tile.kernel"() ({
  ^bb0(%a: index):
    gpu.yield
  }) {grid = array<i64: 4>, threads = 0 : i64} : () -> ()
  return
}

// -----

// One block argument per grid dimension.
func.func @region_arity() {
  // expected-error@below {{the body has 1 block arguments but the grid has 2 dimensions}}
  "tile.kernel"() ({
  ^bb0(%a: index):
    gpu.yield
  }) {grid = array<i64: 4, 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

// Block indices are index values.
func.func @region_argument_type() {
  // expected-error@below {{tile.kernel: block argument #0 must be index, got i32}}
  "tile.kernel"() ({
  ^bb0(%a: i32):
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

// The body ends with gpu.yield, not another terminator.
func.func @missing_yield(%x: memref<4xf32>) {
  // expected-error@below {{tile.kernel: the body must end with gpu.yield}}
  "tile.kernel"() ({
  ^bb0(%a: index):
    llvm.unreachable
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

// The body is a single block (structured control flow only).
func.func @two_blocks() {
  // expected-error@below {{tile.kernel: the body must be exactly one block, got 2}}
  "tile.kernel"() ({
  ^bb0(%a: index):
    cf.br ^bb1
  ^bb1:
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

// The fill value has the buffer's element type.
func.func @fill_type_mismatch(%C: memref<16x16xf16>) {
  %zero = arith.constant 0.0 : f32
  // expected-error@below {{tile.fill: the value is f32 but the buffer holds f16}}
  "tile.fill"(%C, %zero) : (memref<16x16xf16>, f32) -> ()
  return
}

// -----

// Outside a kernel (whole-problem form) a fill writes global memory.
func.func @fill_shared_outside(%S: memref<16xf32, #gpu.address_space<workgroup>>) {
  %zero = arith.constant 0.0 : f32
  // expected-error@below {{tile.fill: outside a tile.kernel the buffer must be global memory, got shared memory}}
  "tile.fill"(%S, %zero) : (memref<16xf32, #gpu.address_space<workgroup>>, f32) -> ()
  return
}

// -----

// Inside a kernel a fill writes a shared or fragment buffer.
func.func @fill_global_inside(%C: memref<16xf32>) {
  "tile.kernel"() ({
  ^bb0(%a: index):
    %zero = arith.constant 0.0 : f32
    // expected-error@below {{tile.fill: inside a tile.kernel the buffer must be shared or fragment, got global memory}}
    "tile.fill"(%C, %zero) : (memref<16xf32>, f32) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// Copies move tiles inside a kernel; outside, tiling has not happened yet.
func.func @copy_outside_kernel(%A: memref<16x16xf16>, %B: memref<16x16xf16>) {
  // expected-error@below {{tile.copy is only valid inside a tile.kernel}}
  "tile.copy"(%A, %B) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<16x16xf16>, memref<16x16xf16>) -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// The window is the un-indexed side's shape, so only one side has indices.
func.func @copy_both_indexed(%A: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_shared"() : () -> memref<16x16xf16, #S>
    // expected-error@below {{tile.copy: only one side may be indexed}}
    "tile.copy"(%A, %s, %b, %b, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 2>} : (memref<64x64xf16>, memref<16x16xf16, #S>, index, index, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// One index per dimension of the indexed side.
func.func @copy_index_count(%A: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_shared"() : () -> memref<16x16xf16, #S>
    // expected-error@below {{tile.copy: the source has rank 2 but 1 indices were given}}
    "tile.copy"(%A, %s, %b) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<64x64xf16>, memref<16x16xf16, #S>, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// Too many destination indices.
func.func @copy_dst_index_count(%A: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_shared"() : () -> memref<16x16xf16, #S>
    // expected-error@below {{tile.copy: the destination has rank 2 but 3 indices were given}}
    "tile.copy"(%s, %A, %b, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 0, 3>} : (memref<16x16xf16, #S>, memref<64x64xf16>, index, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// The window (the un-indexed side) is cut from the indexed side: it cannot have more dims.
func.func @copy_rank_mismatch(%A: memref<64xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_shared"() : () -> memref<16x16xf16, #S>
    // expected-error@below {{tile.copy: the indexed source (64) has rank 1, lower than the destination's (16x16, rank 2); the window, the un-indexed side's shape, is cut from the indexed side, so it cannot have more dimensions}}
    "tile.copy"(%A, %s, %b) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<64xf16>, memref<16x16xf16, #S>, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// Without indices the two shapes must be the same.
func.func @copy_shape_mismatch() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_shared"() : () -> memref<16x16xf16, #S>
    %f = "tile.alloc_fragment"() : () -> memref<16x32xf16, #F>
    // expected-error@below {{tile.copy: shapes 16x16 and 16x32 differ and neither side is indexed}}
    "tile.copy"(%s, %f) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<16x16xf16, #S>, memref<16x32xf16, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// A rank-reducing copy still takes one index per dim of the higher-rank side (here 3, not 2).
func.func @copy_rank_reducing_index_count(%A: memref<4x128x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    // expected-error@below {{tile.copy: the source has rank 3 but 2 indices were given}}
    "tile.copy"(%A, %s, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<4x128x64xf16>, memref<64x64xf16, #S>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// Without indices nothing says where the lower-rank side sits in the higher-rank one.
func.func @copy_rank_mismatch_unindexed() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_shared"() : () -> memref<1x16x16xf16, #S>
    %f = "tile.alloc_fragment"() : () -> memref<16x16xf16, #F>
    // expected-error@below {{tile.copy: source rank 3 and destination rank 2 differ and neither side is indexed (the higher-rank side takes one index per dimension)}}
    "tile.copy"(%s, %f) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<1x16x16xf16, #S>, memref<16x16xf16, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// tile.window lists the spanned dims in increasing order (a transpose is not a window).
func.func @copy_window_not_increasing(%Q: memref<2x128x8x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    // expected-error@below {{tile.copy: tile.window must be array<i64: d0, d1, ...> (strictly increasing dims >= 0 of the indexed side); got array<i64: 3, 1>}}
    "tile.copy"(%Q, %s, %b, %b, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 4, 0>, tile.window = array<i64: 3, 1>} : (memref<2x128x8x64xf16>, memref<64x64xf16, #S>, index, index, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// A repeated dim is not increasing either.
func.func @copy_window_repeated(%Q: memref<2x128x8x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    // expected-error@below {{tile.copy: tile.window must be array<i64: d0, d1, ...> (strictly increasing dims >= 0 of the indexed side); got array<i64: 1, 1>}}
    "tile.copy"(%Q, %s, %b, %b, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 4, 0>, tile.window = array<i64: 1, 1>} : (memref<2x128x8x64xf16>, memref<64x64xf16, #S>, index, index, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// One window dim per dim of the lower-rank side: 1 dim for a 2-D tile.
func.func @copy_window_count(%Q: memref<2x128x8x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    // expected-error@below {{tile.copy: tile.window names 1 dim(s) but the destination (64x64) has rank 2: one dim of the source per dim of the destination}}
    "tile.copy"(%Q, %s, %b, %b, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 4, 0>, tile.window = array<i64: 3>} : (memref<2x128x8x64xf16>, memref<64x64xf16, #S>, index, index, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// A window dim names a dim of the indexed side (here the rank-4 destination has no dim 4).
func.func @copy_window_out_of_range(%O: memref<2x128x8x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %f = "tile.alloc_fragment"() : () -> memref<64x64xf16, #F>
    // expected-error@below {{tile.copy: tile.window dim 4 is out of range for the rank-4 destination (2x128x8x64)}}
    "tile.copy"(%f, %O, %b, %b, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 0, 4>, tile.window = array<i64: 1, 4>} : (memref<64x64xf16, #F>, memref<2x128x8x64xf16>, index, index, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// tile.window places the window in the indexed side; a copy of equal shapes has none.
func.func @copy_window_unindexed() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_shared"() : () -> memref<16x16xf16, #S>
    %f = "tile.alloc_fragment"() : () -> memref<16x16xf16, #F>
    // expected-error@below {{tile.copy: tile.window places the window in the indexed side, but neither side is indexed}}
    "tile.copy"(%s, %f) {operandSegmentSizes = array<i32: 1, 1, 0, 0>, tile.window = array<i64: 0, 1>} : (memref<16x16xf16, #S>, memref<16x16xf16, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

// A rank-reducing window follows the same-rank rules: its side needs a static shape.
func.func @copy_rank_reducing_dynamic_window(%A: memref<4x64x64xf16>, %D: memref<?x16xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    // expected-error@below {{tile.copy: the window side needs a static shape, got ?x16}}
    "tile.copy"(%D, %A, %b, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 0, 3>} : (memref<?x16xf16>, memref<4x64x64xf16>, index, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

// The window side needs a static shape.
func.func @copy_dynamic_window(%A: memref<64x64xf16>, %D: memref<?x16xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    // expected-error@below {{tile.copy: the window side needs a static shape, got ?x16}}
    "tile.copy"(%D, %A, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<?x16xf16>, memref<64x64xf16>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// K must agree: A is 64x32 (K=32), B is 64x64 (K=64).
func.func @gemm_k_mismatch() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    // expected-error@below {{tile.gemm: K of A (32) and K of B (64) differ: A is 64x32, B is 64x64, C is 64x64}}
    "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x32xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// With transpose_b, B is N x K: here K=16 against A's K=32.
func.func @gemm_k_mismatch_transposed() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<32x16xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<64x32xf32, #F>
    // expected-error@below {{tile.gemm: K of A (32) and K of B (16) differ: A is 64x32, B is 32x16 (transposed)}}
    "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<64x32xf16, #S>, memref<32x16xf16, #S>, memref<64x32xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// With transpose_a, A is K x M: M=16 but C has 64 rows.
func.func @gemm_m_mismatch() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<32x16xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<32x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    // expected-error@below {{tile.gemm: M of A (16) and rows of C (64) differ}}
    "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = true, transpose_b = false} : (memref<32x16xf16, #S>, memref<32x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// N of B must match C's columns (whole-problem form).
func.func @gemm_n_mismatch(%A: memref<64x32xf16>, %B: memref<32x48xf16>, %C: memref<64x64xf16>) {
  // expected-error@below {{tile.gemm: N of B (48) and columns of C (64) differ}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x32xf16>, memref<32x48xf16>, memref<64x64xf16>) -> ()
  return
}

// -----

// GEMM operands are matrices.
func.func @gemm_rank(%A: memref<64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf16>) {
  // expected-error@below {{tile.gemm: A must be rank 2, got 64}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64xf16>, memref<64x64xf16>, memref<64x64xf16>) -> ()
  return
}

// -----

// f16 products summed in f16 lose precision: the seed's "wrong results from
// low-precision accumulation" becomes a compile-time error.
func.func @gemm_narrow_accumulator(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf16>) {
  // expected-error@below {{tile.gemm: accum_dtype f16 is too narrow to accumulate f16 x f16 products; use f32}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f16, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf16>) -> ()
  return
}

// -----

// f64 inputs need an f64 accumulator.
func.func @gemm_f64_needs_f64(%A: memref<8x8xf64>, %C: memref<8x8xf64>) {
  // expected-error@below {{accum_dtype f32 is too narrow to accumulate f64 x f64 products; use f64}}
  "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<8x8xf64>, memref<8x8xf64>, memref<8x8xf64>) -> ()
  return
}

// -----

// i8 products accumulate in i32, never in a float.
func.func @gemm_int_float_accumulator(%A: memref<64x64xi8>, %C: memref<64x64xi32>) {
  // expected-error@below {{tile.gemm: accum_dtype f32 cannot accumulate i8 x i8 products (use i32)}}
  "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xi8>, memref<64x64xi8>, memref<64x64xi32>) -> ()
  return
}

// -----

// i8 products summed in i8 overflow.
func.func @gemm_i8_accumulator(%A: memref<64x64xi8>, %C: memref<64x64xi8>) {
  // expected-error@below {{accum_dtype i8 is too narrow to accumulate i8 x i8 products; use i32}}
  "tile.gemm"(%A, %A, %C) {accum_dtype = i8, transpose_a = false, transpose_b = false} : (memref<64x64xi8>, memref<64x64xi8>, memref<64x64xi8>) -> ()
  return
}

// -----

// Mixing an integer and a float operand has no matrix instruction.
func.func @gemm_mixed_kinds(%A: memref<64x64xi8>, %B: memref<64x64xf16>, %C: memref<64x64xf32>) {
  // expected-error@below {{tile.gemm: A (i8) and B (f16) must both be floating-point or both integer}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xi8>, memref<64x64xf16>, memref<64x64xf32>) -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// Inside a kernel the accumulator fragment holds accum_dtype.
func.func @gemm_accum_not_c_type() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<16x16xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<16x16xf64, #F>
    // expected-error@below {{tile.gemm: accum_dtype f32 must equal the element type of the accumulator fragment C (f64)}}
    "tile.gemm"(%a, %a, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<16x16xf16, #S>, memref<16x16xf16, #S>, memref<16x16xf64, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// Inside a kernel C is a register fragment, not shared memory.
func.func @gemm_c_in_shared() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<16x16xf16, #S>
    %c = "tile.alloc_shared"() : () -> memref<16x16xf32, #S>
    // expected-error@below {{tile.gemm: inside a tile.kernel C must be fragment, got shared memory}}
    "tile.gemm"(%a, %a, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<16x16xf16, #S>, memref<16x16xf16, #S>, memref<16x16xf32, #S>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// Inside a kernel A and B come from shared memory or registers, not global memory.
func.func @gemm_a_global_in_kernel(%A: memref<16x16xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c = "tile.alloc_fragment"() : () -> memref<16x16xf32, #F>
    // expected-error@+2 {{tile.gemm: inside a tile.kernel A must be shared or fragment, got global memory}}
    // expected-error@+1 {{tile.gemm: inside a tile.kernel B must be shared or fragment, got global memory}}
    "tile.gemm"(%A, %A, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<16x16xf16>, memref<16x16xf16>, memref<16x16xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// The whole-problem form works on global memory only.
func.func @gemm_outside_non_global(%A: memref<16x16xf16, #gpu.address_space<workgroup>>, %C: memref<16x16xf32>) {
  // expected-error@+2 {{tile.gemm: outside a tile.kernel A must be global memory, got shared memory}}
  // expected-error@+1 {{tile.gemm: outside a tile.kernel B must be global memory, got shared memory}}
  "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<16x16xf16, #gpu.address_space<workgroup>>, memref<16x16xf16, #gpu.address_space<workgroup>>, memref<16x16xf32>) -> ()
  return
}

// -----

// Reductions run on tiles inside a kernel.
func.func @reduce_outside_kernel(%s: memref<4x4xf32>, %d: memref<4xf32>) {
  // expected-error@below {{tile.reduce is only valid inside a tile.kernel}}
  "tile.reduce"(%s, %d) {kind = "sum", dim = 1 : i64, clear = true} : (memref<4x4xf32>, memref<4xf32>) -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// dim names a dimension of the source.
func.func @reduce_dim_range() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_fragment"() : () -> memref<4x4xf32, #F>
    %d = "tile.alloc_fragment"() : () -> memref<4xf32, #F>
    // expected-error@below {{tile.reduce: dim 2 is out of range for a rank-2 source}}
    "tile.reduce"(%s, %d) {kind = "sum", dim = 2 : i64, clear = true} : (memref<4x4xf32, #F>, memref<4xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// Reducing 4x8 along dim 1 leaves 4 elements, not 8.
func.func @reduce_shape() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_fragment"() : () -> memref<4x8xf32, #F>
    %d = "tile.alloc_fragment"() : () -> memref<8xf32, #F>
    // expected-error@below {{tile.reduce: reducing 4x8 along dim 1 gives 4, but the destination is 8}}
    "tile.reduce"(%s, %d) {kind = "max", dim = 1 : i64, clear = true} : (memref<4x8xf32, #F>, memref<8xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// A reduction keeps its element type.
func.func @reduce_element_type() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_fragment"() : () -> memref<4x8xf32, #F>
    %d = "tile.alloc_fragment"() : () -> memref<4xf16, #F>
    // expected-error@below {{tile.reduce: source (f32) and destination (f16) element types differ}}
    "tile.reduce"(%s, %d) {kind = "max", dim = 1 : i64, clear = true} : (memref<4x8xf32, #F>, memref<4xf16, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// Only scf.for loops are pipelined.
func.func @num_stages_on_parallel() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  // expected-error@below {{tile.num_stages belongs on scf.for, not on scf.parallel}}
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.reduce
  } {tile.num_stages = 2 : i64}
  return
}

// -----

// A pipeline has at least one stage.
func.func @num_stages_zero() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  // expected-error@below {{scf.for: tile.num_stages must be an integer from 1 to 64; got 0 : i64}}
  scf.for %i = %c0 to %c4 step %c1 {
  } {tile.num_stages = 0 : i64}
  return
}

// -----

// Nor more than 64 (a loop copied that often, beyond any chip's shared memory).
func.func @num_stages_huge() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  // expected-error@below {{scf.for: tile.num_stages must be an integer from 1 to 64; got 9223372036854775807 : i64}}
  scf.for %i = %c0 to %c4 step %c1 {
  } {tile.num_stages = 9223372036854775807 : i64}
  return
}

// -----

// The stage count is an integer.
func.func @num_stages_not_integer() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  // expected-error@below {{scf.for: tile.num_stages must be an integer from 1 to 64; got "three"}}
  scf.for %i = %c0 to %c4 step %c1 {
  } {tile.num_stages = "three"}
  return
}

// -----

// A grid of f16 values is no grid; refused before any pass reads it.
func.func @grid_of_f16() {
  // expected-error@below {{tile.kernel: grid must be array<i64: ...>, got array<f16>}}
  "tile.kernel"() ({
  ^bb0(%b: index):
    gpu.yield
  }) {grid = array<f16>, threads = 64 : i64} : () -> ()
  return
}

// -----

// 2^33 blocks along a dimension: no GPU launches that many (launch sizes are 32-bit).
func.func @grid_too_large() {
  // expected-error@below {{tile.kernel: grid extents must be at most 2^31 - 1 = 2147483647}}
  "tile.kernel"() ({
  ^bb0(%x: index, %y: index):
    gpu.yield
  }) {grid = array<i64: 1, 8589934592>, threads = 64 : i64} : () -> ()
  return
}

// -----

// A boolean is an i1 IntegerAttr to IRDL, but not a thread count.
func.func @threads_boolean() {
  // expected-error@below {{tile.kernel: threads must be an integer such as 256 : i64, got true}}
  "tile.kernel"() ({
  ^bb0(%b: index):
    gpu.yield
  }) {grid = array<i64: 1>, threads = true} : () -> ()
  return
}

// -----

// Negative thread counts are refused.
func.func @threads_negative() {
  // expected-error@below {{tile.kernel: threads must be positive, got -64}}
  "tile.kernel"() ({
  ^bb0(%b: index):
    gpu.yield
  }) {grid = array<i64: 1>, threads = -64 : i64} : () -> ()
  return
}

// -----

// A shared buffer without elements has nothing to hold (and crashed the AMD backend).
func.func @zero_size_shared() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    // expected-error@below {{tile.alloc_shared: the buffer 0x64 has no elements}}
    %s = "tile.alloc_shared"() : () -> memref<0x64xf16, #gpu.address_space<workgroup>>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// M = 0 would launch a grid with no blocks along y.
func.func @gemm_zero_m(%A: memref<0x64xf16>, %B: memref<64x64xf16>, %C: memref<0x64xf32>) {
  // expected-error@below {{tile.gemm: M is 0: C has no rows}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<0x64xf16>, memref<64x64xf16>, memref<0x64xf32>) -> ()
  return
}

// -----

// N = 0 would launch a grid with no blocks along x.
func.func @gemm_zero_n(%A: memref<64x64xf16>, %B: memref<64x0xf16>, %C: memref<64x0xf32>) {
  // expected-error@below {{tile.gemm: N is 0: C has no columns}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x0xf16>, memref<64x0xf32>) -> ()
  return
}

// -----

// K = 0: C += (nothing); said plainly instead of a failure deeper in the pipeline.
func.func @gemm_zero_k(%A: memref<64x0xf16>, %B: memref<0x64xf16>, %C: memref<64x64xf32>) {
  // expected-error@below {{tile.gemm: K is 0: nothing to accumulate, C would be left as it is; remove the tile.gemm}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x0xf16>, memref<0x64xf16>, memref<64x64xf32>) -> ()
  return
}

// -----

// C written while A is read: the product would read its own partial sums.
func.func @gemm_c_is_a(%A: memref<64x64xf32>, %B: memref<64x64xf32>) {
  // expected-error@below {{tile.gemm: C must not alias A}}
  "tile.gemm"(%A, %B, %A) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>) -> ()
  return
}

// -----

// C and B are overlapping views of one buffer.
func.func @gemm_c_overlaps_b(%A: memref<64x64xf32>, %X: memref<64x128xf32>) {
  %b = memref.subview %X[0, 0] [64, 64] [1, 1] : memref<64x128xf32> to memref<64x64xf32, strided<[128, 1]>>
  %c = memref.subview %X[0, 32] [64, 64] [1, 1] : memref<64x128xf32> to memref<64x64xf32, strided<[128, 1], offset: 32>>
  // expected-error@below {{tile.gemm: C must not alias B}}
  "tile.gemm"(%A, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf32>, memref<64x64xf32, strided<[128, 1]>>, memref<64x64xf32, strided<[128, 1], offset: 32>>) -> ()
  return
}

// -----

// C may be A or B: a select of memrefs is not known to be fresh memory.
func.func @gemm_c_selected(%A: memref<64x64xf32>, %B: memref<64x64xf32>, %c: i1) {
  %C = arith.select %c, %A, %B : memref<64x64xf32>
  // expected-error@+2 {{tile.gemm: C must not alias A}}
  // expected-error@below {{tile.gemm: C must not alias B}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>) -> ()
  return
}

// -----

// Two memref.get_global of one global are one buffer; an argument may be
// that global too.
memref.global "private" @buf : memref<64x64xf32> = uninitialized
func.func @gemm_c_same_global(%B: memref<64x64xf32>) {
  %A = memref.get_global @buf : memref<64x64xf32>
  %C = memref.get_global @buf : memref<64x64xf32>
  // expected-error@+2 {{tile.gemm: C must not alias A}}
  // expected-error@below {{tile.gemm: C must not alias B}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>) -> ()
  return
}

// -----

// A C in fragment registers aliasing A in the kernel form.
func.func @gemm_fragment_c_is_a() {
  "tile.kernel"() ({
  ^bb0(%i: index):
    %b = "tile.alloc_shared"() : () -> memref<64x64xf32, #gpu.address_space<workgroup>>
    %f = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    // expected-error@below {{tile.gemm: C must not alias A}}
    "tile.gemm"(%f, %b, %f) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf32, #gpu.address_space<private>>, memref<64x64xf32, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// An affine-map layout cannot be addressed by the lowerings (it was an internal error on nvidia).
func.func @affine_map_layout(%A: memref<64x64xf16, affine_map<(d0, d1) -> (d1, d0)>>, %B: memref<64x64xf16>, %C: memref<64x64xf32>) {
  // expected-error@below {{tile.gemm: A has layout affine_map<(d0, d1) -> (d1, d0)>: tile buffers take an identity or strided<[...]> layout}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, affine_map<(d0, d1) -> (d1, d0)>>, memref<64x64xf16>, memref<64x64xf32>) -> ()
  return
}

// -----

// A column-major operand (last stride not 1) is what transpose_a is for.
func.func @non_unit_last_stride(%A: memref<64x64xf16, strided<[1, 64]>>, %B: memref<64x64xf16>, %C: memref<64x64xf32>) {
  // expected-error@below {{tile.gemm: A has layout strided<[1, 64]>: the last dimension must have stride 1}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, strided<[1, 64]>>, memref<64x64xf16>, memref<64x64xf32>) -> ()
  return
}

// -----

// A hand-written tile.layout must have the form tile-infer-layout writes (was an internal error).
func.func @malformed_layout() {
  "tile.kernel"() ({
  ^bb0(%i: index):
    // expected-error@below {{either with an optional dims = array<i64: ...>; 'instruction': got array<i64: 16, 16>}}
    %f = "tile.alloc_fragment"() {tile.layout = {kind = "mma_accumulator", instruction = array<i64: 16, 16>, warps = array<i64: 2, 2>}} : () -> memref<64x64xf32, #gpu.address_space<private>>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

// A layout of neither kind tile-infer-layout writes.
func.func @unknown_layout_kind() {
  "tile.kernel"() ({
  ^bb0(%i: index):
    // expected-error@below {{tile.layout must be {kind = "mma_accumulator"}}
    %f = "tile.alloc_fragment"() {tile.layout = {kind = "striped"}} : () -> memref<64xf32, #gpu.address_space<private>>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

// A blocked layout without its thread counts.
func.func @incomplete_blocked_layout() {
  "tile.kernel"() ({
  ^bb0(%i: index):
    // expected-error@below {{'threads_per_row' is missing}}
    %f = "tile.alloc_fragment"() {tile.layout = {kind = "blocked", base_shape = array<i64: 1, 64>, vector = 4, rows_per_pass = 1}} : () -> memref<64xf32, #gpu.address_space<private>>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

// tile.mma is a dictionary naming the instruction, not a number.
func.func @malformed_mma(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf32>) {
  // expected-error@below {{tile.gemm: tile.mma must be {name = "...", shape = array<i64: m, n, k, blocks>, types = ["a", "b", "c"]}; got 3 : i64}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false, tile.mma = 3} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf32>) -> ()
  return
}

// -----

// tile.smem_layout describes a shared buffer; on a fragment no pass would read it.
func.func @smem_layout_on_fragment() {
  "tile.kernel"() ({
  ^bb0(%i: index):
    // expected-error@below {{tile.smem_layout belongs on tile.alloc_shared, not on tile.alloc_fragment}}
    %f = "tile.alloc_fragment"() {tile.smem_layout = {transposed = false, pad = 0}} : () -> memref<64x64xf32, #gpu.address_space<private>>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

// A negative row padding would shrink the stored rows.
func.func @smem_layout_negative_pad() {
  "tile.kernel"() ({
  ^bb0(%i: index):
    // expected-error@below {{tile.alloc_shared: tile.smem_layout must be {transposed = true|false, pad = N >= 0, ...} (tile-infer-layout); 'pad': got -8 : i64}}
    %s = "tile.alloc_shared"() {tile.smem_layout = {transposed = false, pad = -8}} : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

// The copy width is a positive number of elements.
func.func @zero_vector_width(%A: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%i: index):
    %s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    // expected-error@below {{tile.copy: tile.vector_width must be a positive integer; got 0 : i64}}
    "tile.copy"(%A, %s) {operandSegmentSizes = array<i32: 1, 1, 0, 0>, tile.vector_width = 0} : (memref<64x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

// tile.tiling says who decided a kernel's configuration: one of three sources.
func.func @tiling_unknown_source() {
  // expected-error@below {{tile.kernel: tile.tiling must be {source = "model" | "user" | "tuning-db", split_k = N >= 1, predicted_seconds = F (optional), prefer = S (optional)}; 'source': got "compiler" (expected 'model' or 'user' or 'tuning-db')}}
  "tile.kernel"() ({
  ^bb0(%i: index):
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64, tile.tiling = {source = "compiler", split_k = 1 : i64}} : () -> ()
  return
}

// -----

// Split-K divides K among at least one workgroup.
func.func @tiling_split_k_zero() {
  // expected-error@below {{tile.kernel: tile.tiling must be {source = "model" | "user" | "tuning-db", split_k = N >= 1, predicted_seconds = F (optional), prefer = S (optional)}; 'split_k': got 0 : i64}}
  "tile.kernel"() ({
  ^bb0(%i: index):
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64, tile.tiling = {source = "model", split_k = 0 : i64}} : () -> ()
  return
}

// -----

// The prediction is a float (seconds).
func.func @tiling_prediction_not_float() {
  // expected-error@below {{'predicted_seconds': got "fast"}}
  "tile.kernel"() ({
  ^bb0(%i: index):
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64, tile.tiling = {source = "model", split_k = 1 : i64, predicted_seconds = "fast"}} : () -> ()
  return
}

// -----

// The instruction preference tile-tiling records is a name's prefix (a string).
func.func @tiling_prefer_not_a_string() {
  // expected-error@below {{tile.kernel: tile.tiling must be {source = "model" | "user" | "tuning-db", split_k = N >= 1, predicted_seconds = F (optional), prefer = S (optional)}; 'prefer': got 1 : i64}}
  "tile.kernel"() ({
  ^bb0(%i: index):
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64, tile.tiling = {source = "model", split_k = 1 : i64, prefer = 1 : i64}} : () -> ()
  return
}

// -----

// The module's target is a string such as "amdgpu:gfx942".
// expected-error@below {{builtin.module: tile.target must be a string such as "amdgpu:gfx942"; got 942 : i64}}
module attributes {tile.target = 942} {
}

// -----

// Accepted: C and B are disjoint views of one buffer (columns 0-63 and 64-127).
func.func @gemm_disjoint_views(%A: memref<64x64xf32>, %X: memref<64x128xf32>) {
  %b = memref.subview %X[0, 0] [64, 64] [1, 1] : memref<64x128xf32> to memref<64x64xf32, strided<[128, 1]>>
  %c = memref.subview %X[0, 64] [64, 64] [1, 1] : memref<64x128xf32> to memref<64x64xf32, strided<[128, 1], offset: 64>>
  "tile.gemm"(%A, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf32>, memref<64x64xf32, strided<[128, 1]>>, memref<64x64xf32, strided<[128, 1], offset: 64>>) -> ()
  return
}

// -----

// tile.atomic_add adds a tile into global memory: not into shared memory.
func.func @atomic_add_into_shared(%g: memref<64x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%i: index):
    %c0 = arith.constant 0 : index
    %s = "tile.alloc_shared"() : () -> memref<16x16xf32, #gpu.address_space<workgroup>>
    // expected-error@below {{tile.copy: tile.atomic_add adds a fragment or shared tile into global memory, not global into shared}}
    "tile.copy"(%g, %s, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>, tile.atomic_add} : (memref<64x64xf32>, memref<16x16xf32, #gpu.address_space<workgroup>>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// tile.atomic_add does not convert: the sum would be rounded to the destination's type.
func.func @atomic_add_converting(%g: memref<64x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%i: index):
    %c0 = arith.constant 0 : index
    %f = "tile.alloc_fragment"() : () -> memref<16x16xf16, #gpu.address_space<private>>
    // expected-error@below {{tile.copy: tile.atomic_add adds without converting, but the source holds f16 and the destination f32}}
    "tile.copy"(%f, %g, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>, tile.atomic_add} : (memref<16x16xf16, #gpu.address_space<private>>, memref<64x64xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// Only types every backend adds atomically.
func.func @atomic_add_f16(%g: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%i: index):
    %c0 = arith.constant 0 : index
    %f = "tile.alloc_fragment"() : () -> memref<16x16xf16, #gpu.address_space<private>>
    // expected-error@below {{tile.copy: tile.atomic_add of f16 is not supported (only f32 and i32, which every backend adds atomically)}}
    "tile.copy"(%f, %g, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>, tile.atomic_add} : (memref<16x16xf16, #gpu.address_space<private>>, memref<64x64xf16>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// It is a marker.
func.func @atomic_add_not_unit(%g: memref<64x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%i: index):
    %c0 = arith.constant 0 : index
    %f = "tile.alloc_fragment"() : () -> memref<16x16xf32, #gpu.address_space<private>>
    // expected-error@below {{tile.atomic_add must be a unit attribute}}
    "tile.copy"(%f, %g, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>, tile.atomic_add = 1 : i64} : (memref<16x16xf32, #gpu.address_space<private>>, memref<64x64xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// Per-thread code runs once per thread: its extents multiply to the kernel's threads.
func.func @per_thread_extents(%g: memref<64xf32>) {
  "tile.kernel"() ({
  ^bb0(%i: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %f = arith.constant 1.0 : f32
    // expected-error@below {{tile.per_thread: the loop runs once per thread: from 0 to constant extents, step 1, whose product is the kernel's 64 threads}}
    scf.parallel (%t) = (%c0) to (%c32) step (%c1) {
      memref.store %f, %g[%t] : memref<64xf32>
      scf.reduce
    } {tile.per_thread}
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// Tile ops run on the block together, not inside per-thread code.
func.func @per_thread_tile_op(%g: memref<64xf32>) {
  "tile.kernel"() ({
  ^bb0(%i: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %s = "tile.alloc_shared"() : () -> memref<64xf32, #gpu.address_space<workgroup>>
    scf.parallel (%t) = (%c0) to (%c64) step (%c1) {
      // expected-error@below {{tile.per_thread: tile.copy in per-thread code; tile ops and T.Parallel run on the block together, outside it}}
      "tile.copy"(%g, %s) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<64xf32>, memref<64xf32, #gpu.address_space<workgroup>>) -> ()
      scf.reduce
    } {tile.per_thread}
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}
