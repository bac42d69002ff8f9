// f16 GEMM for sm_90a on the warpgroup path (tile-select-mma{prefer=wgmma}):
// two warpgroups of 4 warps, each one wgmma m64n128k16 per K step; A (M x K)
// and B (K x N) reach shared memory as TMA boxes of rows x 128 bytes with the
// 128-byte swizzle, counted by one mbarrier per slot; tensor maps are extra
// kernel arguments the launcher fills.
//
// RUN: tile-compile %s --emit tile --tiling "block=128,128,64 threads=256 stages=3" --select prefer=wgmma | filecheck %s --check-prefix=TILE
// One role (tile-lower-to-gpu{warp-specialize=false}): thread 0 also loads.
// RUN: tile-compile %s --emit gpu --tiling "block=128,128,64 threads=256 stages=3" --select prefer=wgmma --pass-options 'tile-lower-to-gpu{warp-specialize=false}' | filecheck %s --check-prefix=GPU
// RUN: tile-compile %s --emit ptx --tiling "block=128,128,64 threads=256 stages=3" --select prefer=wgmma | filecheck %s --check-prefix=PTX
// Without the preference the warp-level path stays the default:
// RUN: tile-compile %s --emit tile --tiling "block=128,128,64 threads=256 stages=3" | filecheck %s --check-prefix=DEFAULT

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @gemm(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf16>, memref<256x256xf16>, memref<256x256xf16>) -> ()
    return
  }
}

// Eight warps stacked along M, 16 rows each: warpgroup g holds rows 64g .. 64g+63.
// TILE: "tile.gemm"
// TILE-SAME: name = "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"
// TILE-SAME: tile.warp_grid = array<i64: 8, 1>
// DEFAULT: name = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"

// The host passes null pointers where the tensor maps go; the gpu.func says what they map.
// GPU-LABEL: func.func @gemm
// GPU: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// GPU: gpu.launch_func @gemm_kernels::@gemm_kernel0 {{.*}} dynamic_shared_memory_size %c98304_i32 args({{.*}}, %[[NULL]] : !llvm.ptr, %[[NULL]] : !llvm.ptr)
// GPU: gpu.func @gemm_kernel0({{.*}}, %[[MAP_A:.*]]: !llvm.ptr, %[[MAP_B:.*]]: !llvm.ptr) kernel
// GPU-SAME: tile.kernel_arguments = [
// GPU-SAME: \22box\22: [128, 64], \22swizzle\22: 128
// GPU-SAME: \22box\22: [64, 64], \22swizzle\22: 128
// Descriptor constants (PTX ISA, "Matrix Descriptor Format"): 128-byte swizzle
// (1 << 62), stride byte offset 1024 (64 << 32); B is N-major, so its leading
// byte offset is one 64-column box, 64 rows x 128 bytes (512 << 16); A is
// K-major (leading offset unused, 1 << 16).
// GPU-DAG: arith.constant 4611686293338849280 : i64
// GPU-DAG: arith.constant 4611686293305360384 : i64
// GPU: nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
// GPU: nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
// GPU: nvgpu.mbarrier.init %{{.*}}[%c0], %c1
// GPU: nvgpu.mbarrier.init %{{.*}}[%c0], %c8
// Prologue: slots 0 and 1, 16 KiB of A (one box) + 16 KiB of B (two boxes) each.
// GPU: nvgpu.mbarrier.arrive.expect_tx %{{.*}}[%c0], %c32768
// GPU-COUNT-3: nvgpu.tma.async.load
// GPU: nvgpu.mbarrier.arrive.expect_tx %{{.*}}[%c1], %c32768
// GPU-COUNT-3: nvgpu.tma.async.load
// GPU: scf.for
// GPU: nvgpu.mbarrier.try_wait.parity
// GPU: nvvm.wgmma.fence.aligned
// GPU-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <row>]
// GPU: nvvm.wgmma.commit.group.sync.aligned
// GPU: nvvm.wgmma.wait.group.sync.aligned 1
// Each warp releases the slot of iteration i-1 (lane 0 arrives on its "empty"
// barrier); thread 0 waits for all eight arrivals before refilling it. No CTA
// barrier in the loop.
// GPU-NOT: gpu.barrier
// GPU: nvgpu.mbarrier.arrive %[[EMPTY:.*]][%{{.*}}]
// GPU: nvgpu.mbarrier.try_wait.parity %[[EMPTY]]
// GPU: nvgpu.mbarrier.arrive.expect_tx
// GPU-COUNT-3: nvgpu.tma.async.load
// GPU-NOT: gpu.barrier
// GPU: nvvm.wgmma.wait.group.sync.aligned 0

// PTX: .extern .shared .align 1024 .b8 __dynamic_shmem__0[];
// PTX: mbarrier.try_wait.parity.shared.b64
// PTX: wgmma.fence.sync.aligned;
// B N-major: imm-trans-a 0, imm-trans-b 1.
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{.*}}, p, 1, 1, 0, 1;
// PTX: wgmma.commit_group.sync.aligned;
// PTX: wgmma.wait_group.sync.aligned 1;
// The producer warpgroup's loads come after the consumers' code.
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
