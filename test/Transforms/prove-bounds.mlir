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
