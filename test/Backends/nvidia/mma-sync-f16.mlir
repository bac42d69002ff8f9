// f16 GEMM for sm_90a: warp-level mma.sync fed by ldmatrix (.trans for B stored
// K x N), global -> shared through cp.async in a 2-stage pipeline. A's slots
// (rows of 32 f16, 64 bytes) are padded by 16 bytes a row; B's (rows of 128
// f16, two 128-byte lines) are boxes of 128-byte lines whose 16-byte chunks are
// XOR-swizzled by row, written by cp.async and read by ldmatrix at the same
// swizzled places.
//
// The 128x128 block of 4 warps is given: the cost model would spread this
// small GEMM over 32x32 blocks (test/python/test_nvidia.py compiles that).
// RUN: tile-compile %s --emit gpu --tiling "block=128,128,32 threads=128 stages=2" | filecheck %s --check-prefix=GPU
// RUN: tile-compile %s --emit ptx --tiling "block=128,128,32 threads=128 stages=2" | filecheck %s --check-prefix=PTX

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @gemm(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf16>, memref<256x256xf16>, memref<256x256xf16>) -> ()
    return
  }
}

// GPU-LABEL: func.func @gemm
// 2 x 128 x 40 x 2 bytes of A, then 2 x 32 x 128 x 2 bytes of B:
// GPU: gpu.launch_func @gemm_kernels::@gemm_kernel0 blocks in ({{.*}}) threads in ({{.*}}) dynamic_shared_memory_size %c36864_i32
// GPU: gpu.func @gemm_kernel0
// GPU: gpu.dynamic_shared_memory
// GPU: memref.view {{.*}} to memref<2x128x40xf16, #gpu.address_space<workgroup>>
// 256 is a multiple of the block: the copies are in bounds, no byte counts or selects.
// GPU: nvgpu.device_async_copy {{.*}}, 8 {bypassL1}
// GPU: %[[B:.*]] = memref.view %{{.*}}[%c20480][] : {{.*}} to memref<32x128xf16, #gpu.address_space<workgroup>>
// GPU: memref.collapse_shape %[[B]] {{\[\[}}0, 1]] : memref<32x128xf16, #gpu.address_space<workgroup>> into memref<4096xf16
// GPU: arith.xori
// GPU: nvgpu.device_async_copy %arg1{{.*}} to memref<4096xf16, #gpu.address_space<workgroup>>
// GPU: nvgpu.device_async_create_group
// GPU: scf.for
// GPU: nvgpu.device_async_wait {{.*}} {numGroups = 0 : i32}
// GPU: gpu.barrier
// A's padded rows are read at their logical (row, column); B's boxes through
// the same flattened, swizzled index the copies wrote (4096 = 32 x 128):
// GPU: nvgpu.ldmatrix %{{.*}}[%{{.*}}, %{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<128x40xf16, strided<[40, 1], offset: ?>
// GPU: nvgpu.ldmatrix %{{.*}}[%{{.*}}] {numTiles = 4 : i32, transpose = true} : memref<4096xf16, #gpu.address_space<workgroup>>
// GPU: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// GPU: nvgpu.device_async_wait {{.*}} {numGroups = 0 : i32}

// PTX: .target sm_90a
// PTX: .extern .shared .align 1024 .b8 __dynamic_shmem__0[];
// PTX: .visible .entry gemm_kernel0(
// PTX: cp.async.cg.shared.global
// PTX: cp.async.commit_group
// PTX: cp.async.wait_group 0;
// PTX: bar.sync 0;
// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
