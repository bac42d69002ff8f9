// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx942 -p 'tile-infer-layout,tile-lower-to-gpu' | filecheck %s

#F = #gpu.address_space<private>
// A row of 1024 over 128 threads (two waves of 64): each thread loads its 8
// columns with one 128-bit vector load, combines its own registers, then the
// 64 lanes of its wave (on amdgpu by DPP moves, xor 1 first, then row_bcast:31
// and a readlane of lane 63: backends/amdgpu/cross_lane.py), then the two waves
// through the scratch: lane 0 of each wave stores, a barrier, every thread
// reads both partials in the same order.
// CHECK-LABEL: gpu.func @row_sum_kernel0
// CHECK-SAME: workgroup(%[[SCRATCH:.+]] : memref<2xf32, #gpu.address_space<workgroup>>)
// CHECK: vector.load %{{.+}} : memref<1x1024xf16>, vector<8xf16>
// CHECK: amdgpu.dpp %{{.+}} quad_perm([1 : i32, 0 : i32, 3 : i32, 2 : i32]) {bound_ctrl = true} : f32
// CHECK: amdgpu.dpp %{{.+}} row_bcast_31 {row_mask = 12 : i32} : f32
// CHECK: rocdl.readlane
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: memref.store %{{.+}}, %[[SCRATCH]][%{{.+}}] : memref<2xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK: memref.load %[[SCRATCH]]
// CHECK: memref.load %[[SCRATCH]]
// CHECK: arith.addf
// CHECK: gpu.return
func.func @row_sum(%X: memref<1x1024xf16>, %Y: memref<1xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %x = "tile.alloc_fragment"() : () -> memref<1x1024xf32, #F>
    %s = "tile.alloc_fragment"() : () -> memref<1xf32, #F>
    "tile.copy"(%X, %x, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1x1024xf16>, memref<1x1024xf32, #F>, index, index) -> ()
    "tile.reduce"(%x, %s) {clear = true, dim = 1 : i64, kind = "sum"} : (memref<1x1024xf32, #F>, memref<1xf32, #F>) -> ()
    "tile.copy"(%s, %Y, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<1xf32, #F>, memref<1xf32>, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

// -----

// A T.Parallel over global memory only: a blocked layout of its 8x256 index
// space, every thread 16 elements, the body once per element.
// CHECK-LABEL: gpu.func @scale_kernel0
// CHECK-COUNT-16: arith.mulf
// CHECK-NOT: arith.mulf
// CHECK: gpu.return
func.func @scale(%X: memref<8x256xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c256 = arith.constant 256 : index
    %two = arith.constant 2.0 : f32
    scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c256) step (%c1, %c1) {
      %v = memref.load %X[%i, %j] : memref<8x256xf32>
      %d = arith.mulf %v, %two : f32
      memref.store %d, %X[%i, %j] : memref<8x256xf32>
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// One row per block, as canonicalize leaves it: the unit loop dim is gone and
// the fragments' extent-1 dims are indexed by the constant 0; the row's
// statistic is held by every thread and read outside any loop.
// CHECK-LABEL: gpu.func @one_row_kernel0
// CHECK: vector.load %{{.+}} : memref<8x1024xf32>, vector<4xf32>
// CHECK-COUNT-6: amdgpu.dpp
// CHECK: vector.store %{{.+}} : memref<8x1024xf32>, vector<4xf32>
func.func @one_row(%X: memref<8x1024xf32>, %M: memref<8xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c1024 = arith.constant 1024 : index
    %x = "tile.alloc_fragment"() : () -> memref<1x1024xf32, #F>
    %m = "tile.alloc_fragment"() : () -> memref<1xf32, #F>
    "tile.copy"(%X, %x, %bx, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<8x1024xf32>, memref<1x1024xf32, #F>, index, index) -> ()
    "tile.reduce"(%x, %m) {clear = true, dim = 1 : i64, kind = "max"} : (memref<1x1024xf32, #F>, memref<1xf32, #F>) -> ()
    %mx = memref.load %m[%c0] : memref<1xf32, #F>
    scf.parallel (%j) = (%c0) to (%c1024) step (%c1) {
      %v = memref.load %x[%c0, %j] : memref<1x1024xf32, #F>
      %d = arith.subf %v, %mx : f32
      memref.store %d, %x[%c0, %j] : memref<1x1024xf32, #F>
      scf.reduce
    }
    "tile.copy"(%x, %X, %bx, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<1x1024xf32, #F>, memref<8x1024xf32>, index, index) -> ()
    "tile.copy"(%m, %M, %bx) {operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (memref<1xf32, #F>, memref<8xf32>, index) -> ()
    gpu.yield
  }) {grid = array<i64: 8>, threads = 256 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// An epilogue that stores only some rows (a convolution's rows past the
// image's edge are not outputs): the condition is on the row alone, so each
// thread's run of a row's columns is one vector store under it
// (fragment_ops.guarded_store); a condition on the column keeps the
// element stores.
// CHECK-LABEL: gpu.func @rows_kept_kernel0
// CHECK: scf.if
// CHECK: vector.store %{{.+}} : memref<64x256xf16>, vector<8xf16>
// CHECK-LABEL: gpu.func @columns_kept_kernel0
// CHECK-NOT: vector.store %{{.+}} : memref<64x256xf16>
// CHECK: memref.store %{{.+}} : memref<64x256xf16>
func.func @rows_kept(%X: memref<64x256xf16>, %Y: memref<64x256xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c10 = arith.constant 10 : index
    %c16 = arith.constant 16 : index
    %c256 = arith.constant 256 : index
    %x = "tile.alloc_fragment"() : () -> memref<16x256xf16, #F>
    "tile.copy"(%X, %x, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x256xf16>, memref<16x256xf16, #F>, index, index) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c256) step (%c1, %c1) {
      %keep = arith.cmpi ult, %i, %c10 : index
      scf.if %keep {
        %v = memref.load %x[%i, %j] : memref<16x256xf16, #F>
        %d = arith.addf %v, %v : f16
        memref.store %d, %Y[%i, %j] : memref<64x256xf16>
      }
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

func.func @columns_kept(%X: memref<64x256xf16>, %Y: memref<64x256xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c10 = arith.constant 10 : index
    %c16 = arith.constant 16 : index
    %c256 = arith.constant 256 : index
    %x = "tile.alloc_fragment"() : () -> memref<16x256xf16, #F>
    "tile.copy"(%X, %x, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x256xf16>, memref<16x256xf16, #F>, index, index) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c256) step (%c1, %c1) {
      %keep = arith.cmpi ult, %j, %c10 : index
      scf.if %keep {
        %v = memref.load %x[%i, %j] : memref<16x256xf16, #F>
        memref.store %v, %Y[%i, %j] : memref<64x256xf16>
      }
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}
