// RUN: tile-opt %s --split-input-file -p tile-prove-bounds | filecheck %s

// A K/V loop over a sequence that is a multiple of the block: every window of
// both copies lies inside K (kb < 64, so kb * 64 + 64 <= 4096), and the
// store of the block's rows too (bx < 64).
// CHECK-LABEL: func.func @multiple_of_the_block
// CHECK: "tile.copy"{{.*}}tile.in_bounds
// CHECK: "tile.copy"{{.*}}tile.in_bounds
func.func @multiple_of_the_block(%K: memref<4096x128xf16>, %O: memref<4096x128xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %k_s = "tile.alloc_shared"() : () -> memref<64x128xf16, #gpu.address_space<workgroup>>
    %acc = "tile.alloc_fragment"() : () -> memref<64x128xf32, #gpu.address_space<private>>
    scf.for %kb = %c0 to %c64 step %c1 {
      %k0 = arith.muli %kb, %c64 : index
      "tile.copy"(%K, %k_s, %k0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<4096x128xf16>, memref<64x128xf16, #gpu.address_space<workgroup>>, index, index) -> ()
    }
    %row = arith.muli %bx, %c64 : index
    "tile.copy"(%acc, %O, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x128xf32, #gpu.address_space<private>>, memref<4096x128xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 64>, threads = 128 : i64} : () -> ()
  return
}

// -----

// 200 rows in blocks of 64: the last block reads past the end (192 + 64 >
// 200), so the copy keeps its checks; a causal bound (the diagonal's block,
// at most the block count) is followed through minui and divui; a 4-D window
// (tile.window) fixes its other dims at block indices inside their extents.
// CHECK-LABEL: func.func @ragged_and_causal
// CHECK: "tile.copy"(%{{[^)]*}}) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<200x64xf16>
// CHECK: "tile.copy"{{.*}}tile.in_bounds{{.*}} : (memref<2x4096x8x64xf16>
func.func @ragged_and_causal(%K: memref<200x64xf16>, %Q: memref<2x4096x8x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %head: index, %b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c63 = arith.constant 63 : index
    %blocks = arith.constant 64 : index
    %k_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    scf.for %kb = %c0 to %c4 step %c1 {
      %k0 = arith.muli %kb, %c64 : index
      "tile.copy"(%K, %k_s, %k0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<200x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
    }
    %row0 = arith.muli %bx, %c64 : index
    %last = arith.addi %row0, %c63 : index
    %diag = arith.divui %last, %c64 : index
    %upper_diag = arith.addi %diag, %c1 : index
    %upper = arith.minui %upper_diag, %blocks : index
    scf.for %kb = %c0 to %upper step %c1 {
      %k0 = arith.muli %kb, %c64 : index
      "tile.copy"(%Q, %k_s, %b, %k0, %head, %c0) {operandSegmentSizes = array<i32: 1, 1, 4, 0>, tile.window = array<i64: 1, 3>} : (memref<2x4096x8x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index, index, index) -> ()
    }
    gpu.yield
  }) {grid = array<i64: 64, 8, 2>, threads = 128 : i64} : () -> ()
  return
}

// -----

// Offsets the pass cannot bound keep the checks: a kernel argument (a value
// from outside the kernel), and a grid larger than the memref (bx up to 99
// over 64 blocks of rows).
// CHECK-LABEL: func.func @unbounded
// CHECK-NOT: tile.in_bounds
// CHECK: return
func.func @unbounded(%A: memref<4096x64xf16>, %start: index) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %a_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    "tile.copy"(%A, %a_s, %start, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<4096x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
    %row = arith.muli %bx, %c64 : index
    "tile.copy"(%A, %a_s, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<4096x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 100>, threads = 128 : i64} : () -> ()
  return
}

// -----

// A copy that converts on its way into shared memory keeps its checks (llc
// hoists the address arithmetic of unguarded ones into scalar registers: the
// fp8 GEMM computed in f16 on gfx950 spilled); one converting on its way out
// of a fragment is marked.
// CHECK-LABEL: func.func @converting
// CHECK: "tile.copy"(%{{[^)]*}}) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x64xf8E4M3FN>
// CHECK: "tile.copy"{{.*}}tile.in_bounds{{.*}} : (memref<64x64xf32
func.func @converting(%A: memref<256x64xf8E4M3FN>, %C: memref<256x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %a_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %acc = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    %row = arith.muli %bx, %c64 : index
    "tile.copy"(%A, %a_s, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x64xf8E4M3FN>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
    "tile.copy"(%acc, %C, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #gpu.address_space<private>>, memref<256x64xf16>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 128 : i64} : () -> ()
  return
}

// -----

// What could wrap proves nothing (each marked by an earlier version, found by
// a review): a cast through i8 that truncates block indices past 127, an i32
// product past 2^31, index_castui of a value that can be negative, an index
// product past 2^31 (nvidia lowers index to 32 bits), an unsigned loop, and a
// loop whose last increment wraps.
// CHECK-LABEL: func.func @trunc_i8
// CHECK-NOT: tile.in_bounds
// CHECK-LABEL: func.func @wrap_i32
// CHECK-NOT: tile.in_bounds
// CHECK-LABEL: func.func @castui
// CHECK-NOT: tile.in_bounds
// CHECK-LABEL: func.func @index32
// CHECK-NOT: tile.in_bounds
// CHECK-LABEL: func.func @unsigned_loop
// CHECK-NOT: tile.in_bounds
// CHECK-LABEL: func.func @iv_wrap
// CHECK-NOT: tile.in_bounds
// CHECK: return
func.func @trunc_i8(%A: memref<12800x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %a_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %b8 = arith.index_cast %bx : index to i8
    %bi = arith.index_cast %b8 : i8 to index
    %row = arith.muli %bi, %c64 : index
    "tile.copy"(%A, %a_s, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<12800x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 200>, threads = 128 : i64} : () -> ()
  return
}

// -----

func.func @wrap_i32(%A: memref<16384x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %s = arith.constant 16777216 : i32
    %a_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %b32 = arith.index_cast %bx : index to i32
    %big = arith.muli %b32, %s : i32
    %q = arith.divsi %big, %s : i32
    %qi = arith.index_cast %q : i32 to index
    %row = arith.muli %qi, %c64 : index
    "tile.copy"(%A, %a_s, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<16384x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 256>, threads = 128 : i64} : () -> ()
  return
}

// -----

func.func @castui(%A: memref<4096x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %one = arith.constant 1 : i32
    %a_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %b32 = arith.index_cast %bx : index to i32
    %x = arith.subi %b32, %one : i32
    %xu = arith.index_castui %x : i32 to index
    %m = arith.maxsi %xu, %c0 : index
    %row = arith.muli %m, %c64 : index
    "tile.copy"(%A, %a_s, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<4096x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 64>, threads = 128 : i64} : () -> ()
  return
}

// -----

func.func @index32(%A: memref<16384x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %s = arith.constant 67108864 : index
    %a_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %big = arith.muli %bx, %s : index
    %q = arith.divsi %big, %s : index
    %row = arith.muli %q, %c64 : index
    "tile.copy"(%A, %a_s, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<16384x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 256>, threads = 128 : i64} : () -> ()
  return
}

// -----

func.func @unsigned_loop(%A: memref<4096x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cm1 = arith.constant -1 : index
    %c64 = arith.constant 64 : index
    %a_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    scf.for unsigned %i = %c0 to %cm1 step %c1 {
      %row = arith.muli %i, %c64 : index
      "tile.copy"(%A, %a_s, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<4096x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

// -----

func.func @iv_wrap(%A: memref<4096x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %cmax = arith.constant 9223372036854775807 : index
    %cstep = arith.constant 4611686018427387904 : index
    %c4032 = arith.constant 4032 : index
    %a_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    scf.for %i = %c0 to %cmax step %cstep {
      %row = arith.minsi %i, %c4032 : index
      "tile.copy"(%A, %a_s, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<4096x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}
