// The deferred promotion of wgmma-fp8.mlir over a longer K (1536: 12
// iterations of block K 128): a loop of 4 iterations a trip (a count 4 does
// not divide promotes at once), each
// issuing its wgmmas then adding the last one's sums (wait_group 1); each
// trip ends with wait_group 0 and the last sums, so no partial sums in flight
// are carried from one trip to the next (ptxas serializes wgmmas whose
// registers another instruction reads in flight). The 128x128 block of two
// warpgroups holds the third copy of its accumulator at one block per SM.
//
// RUN: tile-compile %s --emit gpu --tiling "block=128,128,128 threads=256 stages=3" --select prefer=wgmma | filecheck %s

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @gemm(%A: memref<256x1536xf8E4M3FN>, %B: memref<256x1536xf8E4M3FN>, %C: memref<256x256xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<256x1536xf8E4M3FN>, memref<256x1536xf8E4M3FN>, memref<256x256xf16>) -> ()
    return
  }
}

// CHECK: gpu.func @gemm_kernel0
// CHECK: nvvm.setmaxregister  increase
// CHECK: scf.for %{{.*}} = %c0 to %c12 step %c4 iter_args
// CHECK-COUNT-4: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-COUNT-16: arith.addf {{.*}} : vector<4xf32>
// CHECK-NEXT: scf.yield
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: } else {
