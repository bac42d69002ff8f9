// RUN: tile-opt %s --split-input-file -p 'tile-insert-barriers' | filecheck %s
// An existing pipelined GEMM (3 stages, and 1) gets no barrier: its copies are
// the lowering's (fenced, or prefetches the pipelined loop orders) and gemms only read.
// RUN: tile-opt %examples/seed_fp8_gemm.mlir -p 'tile-pipeline,tile-insert-barriers' | filecheck %s --check-prefix=SEED
// RUN: sed 's/tile.num_stages = 3/tile.num_stages = 1/' %examples/seed_fp8_gemm.mlir | tile-opt -p 'tile-pipeline,tile-insert-barriers' | filecheck %s --check-prefix=SEED
// SEED-LABEL: func.func @mixed_precision_gemm
// SEED-NOT: gpu.barrier
// SEED: tile.pipelined
// SEED-NOT: gpu.barrier

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// P written by a T.Parallel and read by the next gemm (other threads read
// what one wrote): a barrier between them.
// CHECK-LABEL: func.func @write_then_gemm
// CHECK: scf.parallel
// CHECK: memref.store
// CHECK: scf.reduce
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: "tile.gemm"(%[[P:.+]], %{{.+}}, %{{.+}})
// CHECK-NOT: gpu.barrier
// CHECK: gpu.yield
func.func @write_then_gemm(%V: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %v = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %p = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %s = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    %o = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    "tile.copy"(%V, %v, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<64x64xf16, #S>, index, index) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
      %x = memref.load %s[%i, %j] : memref<64x64xf32, #F>
      %h = arith.truncf %x : f32 to f16
      memref.store %h, %p[%i, %j] : memref<64x64xf16, #S>
      scf.reduce
    }
    "tile.gemm"(%p, %v, %o) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// In a loop, P is written at the top and read at the bottom: a barrier before
// the read, and one at the end of the iteration (the next iteration's write
// must wait for every thread's read: write after read over the back edge).
// CHECK-LABEL: func.func @loop_back_edge
// CHECK-NOT: gpu.barrier
// CHECK: scf.for
// CHECK-NOT: gpu.barrier
// CHECK: scf.parallel
// CHECK: scf.reduce
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: "tile.gemm"
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: }
// CHECK-NOT: gpu.barrier
func.func @loop_back_edge() {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %v = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %p = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %s = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    %o = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    scf.for %k = %c0 to %c4 step %c1 {
      scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
        %x = memref.load %s[%i, %j] : memref<64x64xf32, #F>
        %h = arith.truncf %x : f32 to f16
        memref.store %h, %p[%i, %j] : memref<64x64xf16, #S>
        scf.reduce
      }
      "tile.gemm"(%p, %v, %o) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// A gemm reads P, then a T.Parallel overwrites it (write after read): a
// barrier before the write; and what precedes a loop conflicting with the
// start of its body gets one barrier before the loop, not one per iteration.
// CHECK-LABEL: func.func @write_after_read
// CHECK: "tile.gemm"
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.parallel
// CHECK: "tile.gemm"
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.for
// CHECK-NOT: gpu.barrier
// CHECK: gpu.yield
func.func @write_after_read() {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %f = arith.constant 1.0 : f16
    %v = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %p = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %o = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    "tile.gemm"(%p, %v, %o) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
      memref.store %f, %p[%i, %j] : memref<64x64xf16, #S>
      scf.reduce
    }
    "tile.gemm"(%p, %v, %o) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    scf.for %k = %c0 to %c4 step %c1 {
      scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
        %x = memref.load %v[%i, %j] : memref<64x64xf16, #S>
        memref.store %x, %p[%i, %j] : memref<64x64xf16, #S>
        scf.reduce
      }
      // Written by one loop (global -> shared copy), fenced by the lowering.
      "tile.fill"(%p, %f) : (memref<64x64xf16, #S>, f16) -> ()
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// Already ordered: a copy into shared memory (the lowering fences it with
// barriers), a barrier the program wrote, reads after reads, fragments: no barrier added.
// CHECK-LABEL: func.func @already_ordered
// CHECK-COUNT-1: gpu.barrier
// CHECK-NOT: gpu.barrier
func.func @already_ordered(%A: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %v = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %p = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %w = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %o = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    "tile.gemm"(%p, %v, %o) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    "tile.copy"(%A, %p, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<64x64xf16, #S>, index, index) -> ()
    "tile.gemm"(%p, %v, %o) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    "tile.gemm"(%p, %p, %o) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
      %x = memref.load %o[%i, %j] : memref<64x64xf32, #F>
      %h = arith.truncf %x : f32 to f16
      memref.store %h, %w[%i, %j] : memref<64x64xf16, #S>
      scf.reduce
    }
    gpu.barrier
    "tile.gemm"(%p, %w, %o) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
