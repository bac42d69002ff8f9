// RUN: tile-opt %s --split-input-file -p 'tile-insert-barriers' | FileCheck %s

// Per-thread code (TileLang's, after T.get_thread_binding): a thread writes
// its element and reads its neighbour's: a barrier between, in the region.
// CHECK-LABEL: func.func @neighbour
// CHECK: scf.parallel
// CHECK: memref.store
// CHECK: gpu.barrier
// CHECK-NEXT: memref.load %{{.*}} : memref<64xf32, #gpu.address_space<workgroup>>
func.func @neighbour(%g: memref<64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c63 = arith.constant 63 : index
    %c64 = arith.constant 64 : index
    %s = "tile.alloc_shared"() : () -> memref<64xf32, #gpu.address_space<workgroup>>
    scf.parallel (%t) = (%c0) to (%c64) step (%c1) {
      %x = memref.load %g[%t] : memref<64xf32>
      memref.store %x, %s[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      %n = arith.addi %t, %c1 : index
      %m = arith.minui %n, %c63 : index
      %y = memref.load %s[%m] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %y, %g[%t] : memref<64xf32>
      scf.reduce
    } {tile.per_thread}
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// A branch on the thread reads and writes the thread's own element (t + 32,
// one-to-one in t) in a loop every thread runs alike: nothing inside the
// branch (it would be divergent; the two accesses are one thread's), one
// barrier after it, at the end of the loop's body (its back edge); the
// zeroing under `t == 0` is ordered before the atomics by one before them.
// CHECK-LABEL: func.func @scan_step
// CHECK: scf.for
// CHECK: scf.if
// CHECK-NOT: gpu.barrier
// CHECK: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: }
// CHECK: scf.if
// CHECK: gpu.barrier
// CHECK-NEXT: memref.atomic_rmw
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: memref.load
func.func @scan_step(%g: memref<64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c6 = arith.constant 6 : index
    %c32 = arith.constant 32 : index
    %f = arith.constant 0.0 : f32
    %s = "tile.alloc_shared"() : () -> memref<64xf32, #gpu.address_space<workgroup>>
    %r = "tile.alloc_shared"() : () -> memref<1xf32, #gpu.address_space<workgroup>>
    scf.parallel (%t) = (%c0) to (%c32) step (%c1) {
      scf.for %level = %c0 to %c6 step %c1 {
        %lt = arith.cmpi ult, %t, %level : index
        scf.if %lt {
          %i = arith.addi %t, %c32 : index
          %a = memref.load %s[%i] : memref<64xf32, #gpu.address_space<workgroup>>
          %sum = arith.addf %a, %a : f32
          %j = arith.addi %t, %c32 : index
          memref.store %sum, %s[%j] : memref<64xf32, #gpu.address_space<workgroup>>
        }
      }
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        memref.store %f, %r[%c0] : memref<1xf32, #gpu.address_space<workgroup>>
      }
      %v = memref.load %g[%t] : memref<64xf32>
      %old = memref.atomic_rmw addf %v, %r[%c0] : (f32, memref<1xf32, #gpu.address_space<workgroup>>) -> f32
      %total = memref.load %r[%c0] : memref<1xf32, #gpu.address_space<workgroup>>
      memref.store %total, %g[%t] : memref<64xf32>
      scf.reduce
    } {tile.per_thread}
    gpu.yield
  }) {grid = array<i64: 1>, threads = 32 : i64} : () -> ()
  return
}
