// f16 GEMM for sm_90a with mma.sync fed by TMA (tile-lower-to-gpu{tma-copies}):
// the shared tiles are TMA boxes of rows x 128 bytes with the 128-byte
// swizzle, counted by mbarriers; ldmatrix addresses undo the swizzle (16-byte
// chunk XOR row % 8) on a flat view of the slot. No cp.async, no CTA barrier
// in the K loop.
//
// RUN: tile-compile %s --emit gpu --tiling "block=128,128,64 threads=128 stages=3" --pass-options 'tile-lower-to-gpu{tma-copies=true}' | filecheck %s --check-prefix=GPU
// RUN: tile-compile %s --emit ptx --tiling "block=128,128,64 threads=128 stages=3" --pass-options 'tile-lower-to-gpu{tma-copies=true}' | filecheck %s --check-prefix=PTX

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @gemm(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf16>, memref<256x256xf16>, memref<256x256xf16>) -> ()
    return
  }
}

// GPU: gpu.func @gemm_kernel0
// GPU-SAME: tile.kernel_arguments
// GPU: nvgpu.mbarrier.create
// GPU: nvgpu.tma.async.load
// Before the loop: slot 0 landed, its first K step's registers are read.
// GPU: nvgpu.mbarrier.try_wait.parity
// GPU: nvgpu.ldmatrix
// GPU: scf.for
// Thread 0 first refills the slot every warp released in the previous
// iteration: no CTA barrier anywhere in the loop.
// GPU-NOT: gpu.barrier
// GPU: nvgpu.mbarrier.try_wait.parity
// GPU: nvgpu.tma.async.load
// The slot's operands through ldmatrix on the flat slot at a swizzled index.
// GPU: memref.collapse_shape {{.*}} into memref<8192xf16, #gpu.address_space<workgroup>>
// GPU: arith.xori
// GPU: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// GPU: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// GPU: nvgpu.mma.sync
// After the last K step's ldmatrix the warp releases the slot, waits for the
// next one (not past the last iteration) and reads its first K step's
// registers before the last K step's mma.sync.
// GPU-NOT: gpu.barrier
// GPU: nvgpu.mbarrier.arrive
// GPU: scf.if
// GPU: nvgpu.mbarrier.try_wait.parity
// GPU: nvgpu.ldmatrix
// GPU: nvgpu.mma.sync
// GPU-NOT: gpu.barrier
// GPU: scf.yield
// GPU-NOT: nvgpu.device_async_copy

// PTX: cp.async.bulk.tensor.2d
// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-NOT: cp.async.cg

// With a strided A (no tensor map describes it) the loop keeps cp.async:
// RUN: sed 's/memref<256x256xf16>, %B/memref<256x256xf16, strided<[512, 1]>>, %B/; s/(memref<256x256xf16>, memref<256x256xf16>, memref<256x256xf16>) -> ()/(memref<256x256xf16, strided<[512, 1]>>, memref<256x256xf16>, memref<256x256xf16>) -> ()/' %s | tile-compile - --emit gpu --tiling "block=128,128,64 threads=128 stages=3" --pass-options 'tile-lower-to-gpu{tma-copies=true}' | filecheck %s --check-prefix=STRIDED
// STRIDED: nvgpu.device_async_copy
// STRIDED-NOT: nvgpu.tma.async.load
