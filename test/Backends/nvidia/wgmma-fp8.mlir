// e4m3 GEMM on the warpgroup path: wgmma m64n128k32 reads both operands
// K-major (A as M x K, B as N x K). Hopper's 8-bit wgmma does not sum in f32,
// so each block K starts a fresh accumulator (scale-d off on its first
// instruction), waits for it, and adds it to the f32 accumulator with FADDs.
// Here (2 iterations) at once; a loop whose count 4 divides adds each block
// K's sums one iteration late (wgmma-fp8-deferred.mlir).
//
// RUN: tile-compile %s --emit gpu --tiling "block=128,128,128 threads=256 stages=3" --select prefer=wgmma | filecheck %s --check-prefix=GPU
// RUN: tile-compile %s --emit ptx --tiling "block=128,128,128 threads=256 stages=3" --select prefer=wgmma | filecheck %s --check-prefix=PTX

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @gemm(%A: memref<256x256xf8E4M3FN>, %B: memref<256x256xf8E4M3FN>, %C: memref<256x256xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<256x256xf8E4M3FN>, memref<256x256xf8E4M3FN>, memref<256x256xf16>) -> ()
    return
  }
}

// GPU: gpu.func @gemm_kernel0
// GPU-SAME: \22dtype\22: \22f8E4M3FN\22, \22shape\22: [256, 256], \22box\22: [128, 128]
// GPU: scf.for
// GPU: nvvm.wgmma.fence.aligned
// GPU: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// GPU-COUNT-3: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 32>, D[<f32>, <one>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// GPU: nvvm.wgmma.commit.group.sync.aligned
// GPU: nvvm.wgmma.wait.group.sync.aligned 0
// GPU-COUNT-16: arith.addf {{.*}} : vector<4xf32>

// PTX: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
