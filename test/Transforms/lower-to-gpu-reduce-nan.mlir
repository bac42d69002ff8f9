// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx942 -p 'tile-infer-layout,tile-lower-to-gpu' | filecheck %s

// tile.reduce's NaN semantics on floats: `max`/`min` ignore a NaN operand
// (IEEE 754-2008 maxNum/minNum, TileLang's and Triton's default) and lower to
// arith.maxnumf/minnumf, one v_max_f32/v_min_f32 per step on AMD; `maximum`/
// `minimum` propagate NaN and lower to arith.maximumf/minimumf. Every step
// (within a thread, across lanes by DPP moves, folding the old value when clear = false)
// uses the kind's op. A row of 256 over one wave of 64 threads.

#F = #gpu.address_space<private>
// CHECK-LABEL: gpu.func @row_max_kernel0
// CHECK-NOT: arith.maximumf
// CHECK: arith.maxnumf
// CHECK: amdgpu.dpp
// CHECK: arith.maxnumf
// CHECK-NOT: arith.maximumf
// CHECK: gpu.return
func.func @row_max(%X: memref<1x256xf32>, %Y: memref<1xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %x = "tile.alloc_fragment"() : () -> memref<1x256xf32, #F>
    %m = "tile.alloc_fragment"() : () -> memref<1xf32, #F>
    "tile.copy"(%X, %x, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1x256xf32>, memref<1x256xf32, #F>, index, index) -> ()
    "tile.copy"(%Y, %m, %c0) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<1xf32>, memref<1xf32, #F>, index) -> ()
    "tile.reduce"(%x, %m) {clear = false, dim = 1 : i64, kind = "max"} : (memref<1x256xf32, #F>, memref<1xf32, #F>) -> ()
    "tile.copy"(%m, %Y, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<1xf32, #F>, memref<1xf32>, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// CHECK-LABEL: gpu.func @row_maximum_kernel0
// CHECK-NOT: arith.maxnumf
// CHECK: arith.maximumf
// CHECK: amdgpu.dpp
// CHECK: arith.maximumf
// CHECK-NOT: arith.maxnumf
// CHECK: gpu.return
func.func @row_maximum(%X: memref<1x256xf32>, %Y: memref<1xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %x = "tile.alloc_fragment"() : () -> memref<1x256xf32, #F>
    %m = "tile.alloc_fragment"() : () -> memref<1xf32, #F>
    "tile.copy"(%X, %x, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1x256xf32>, memref<1x256xf32, #F>, index, index) -> ()
    "tile.copy"(%Y, %m, %c0) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<1xf32>, memref<1xf32, #F>, index) -> ()
    "tile.reduce"(%x, %m) {clear = false, dim = 1 : i64, kind = "maximum"} : (memref<1x256xf32, #F>, memref<1xf32, #F>) -> ()
    "tile.copy"(%m, %Y, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<1xf32, #F>, memref<1xf32>, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// CHECK-LABEL: gpu.func @row_min_kernel0
// CHECK-NOT: arith.minimumf
// CHECK: arith.minnumf
// CHECK: amdgpu.dpp
// CHECK: arith.minnumf
// CHECK-NOT: arith.minimumf
// CHECK: gpu.return
func.func @row_min(%X: memref<1x256xf32>, %Y: memref<1xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %x = "tile.alloc_fragment"() : () -> memref<1x256xf32, #F>
    %m = "tile.alloc_fragment"() : () -> memref<1xf32, #F>
    "tile.copy"(%X, %x, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1x256xf32>, memref<1x256xf32, #F>, index, index) -> ()
    "tile.reduce"(%x, %m) {clear = true, dim = 1 : i64, kind = "min"} : (memref<1x256xf32, #F>, memref<1xf32, #F>) -> ()
    "tile.copy"(%m, %Y, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<1xf32, #F>, memref<1xf32>, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// CHECK-LABEL: gpu.func @row_minimum_kernel0
// CHECK-NOT: arith.minnumf
// CHECK: arith.minimumf
// CHECK: amdgpu.dpp
// CHECK: arith.minimumf
// CHECK-NOT: arith.minnumf
// CHECK: gpu.return
func.func @row_minimum(%X: memref<1x256xf32>, %Y: memref<1xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %x = "tile.alloc_fragment"() : () -> memref<1x256xf32, #F>
    %m = "tile.alloc_fragment"() : () -> memref<1xf32, #F>
    "tile.copy"(%X, %x, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1x256xf32>, memref<1x256xf32, #F>, index, index) -> ()
    "tile.reduce"(%x, %m) {clear = true, dim = 1 : i64, kind = "minimum"} : (memref<1x256xf32, #F>, memref<1xf32, #F>) -> ()
    "tile.copy"(%m, %Y, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<1xf32, #F>, memref<1xf32>, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// Integers have no NaN: maximum is max, compared signed.
#F = #gpu.address_space<private>
// CHECK-LABEL: gpu.func @int_maximum_kernel0
// CHECK: amdgpu.dpp
// CHECK: arith.maxsi
// CHECK: gpu.return
func.func @int_maximum(%X: memref<1x256xi32>, %Y: memref<1xi32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %x = "tile.alloc_fragment"() : () -> memref<1x256xi32, #F>
    %m = "tile.alloc_fragment"() : () -> memref<1xi32, #F>
    "tile.copy"(%X, %x, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1x256xi32>, memref<1x256xi32, #F>, index, index) -> ()
    "tile.reduce"(%x, %m) {clear = true, dim = 1 : i64, kind = "maximum"} : (memref<1x256xi32, #F>, memref<1xi32, #F>) -> ()
    "tile.copy"(%m, %Y, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<1xi32, #F>, memref<1xi32>, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}
