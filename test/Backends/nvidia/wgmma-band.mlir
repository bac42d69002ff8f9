// A kernel written with its own sizes (the docs' Python matmul: 128x128x32, 128
// threads, 3 stages) takes wgmma on sm_90a without options, because its K loop
// can be fed by TMA (NvidiaMatrixCore.preference); index arithmetic between the
// copies is fine. One warpgroup holds the 128 rows as a band of two m64n128
// instructions per K step; A rows of 32 f16 (64 bytes) are stored with the
// 64-byte swizzle, B rows of 128 f16 as two 128-byte-swizzled boxes.
//
// RUN: tile-compile %s --emit tile | filecheck %s --check-prefix=TILE
// RUN: tile-compile %s --emit gpu | filecheck %s --check-prefix=GPU
// RUN: tile-compile %s --emit ptx | filecheck %s --check-prefix=PTX

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @matmul(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
    "tile.kernel"() ({
    ^bb0(%bx: index, %by: index):
      %a = "tile.alloc_shared"() : () -> memref<128x32xf16, #gpu.address_space<workgroup>>
      %b = "tile.alloc_shared"() : () -> memref<32x128xf16, #gpu.address_space<workgroup>>
      %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
      %zero = arith.constant 0.000000e+00 : f32
      "tile.fill"(%c, %zero) : (memref<128x128xf32, #gpu.address_space<private>>, f32) -> ()
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %c128 = arith.constant 128 : index
      scf.for %k = %c0 to %c8 step %c1 {
        %row = arith.muli %by, %c128 : index
        %kk = arith.muli %k, %c32 : index
        "tile.copy"(%A, %a, %row, %kk) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<128x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        %col = arith.muli %bx, %c128 : index
        "tile.copy"(%B, %b, %kk, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<32x128xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.gemm"(%a, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x32xf16, #gpu.address_space<workgroup>>, memref<32x128xf16, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 3 : i64}
      %r = arith.muli %by, %c128 : index
      %q = arith.muli %bx, %c128 : index
      "tile.copy"(%c, %C, %r, %q) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x128xf32, #gpu.address_space<private>>, memref<256x256xf16>, index, index) -> ()
      gpu.yield
    }) {grid = array<i64: 2, 2>, threads = 128 : i64} : () -> ()
    return
  }
}

// TILE: tile.layout = {instruction = array<i64: 64, 128, 16>, kind = "mma_accumulator", warps = array<i64: 4, 1>}
// TILE: "tile.gemm"
// TILE-SAME: name = "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"
// TILE-SAME: tile.warp_grid = array<i64: 4, 1>

// GPU: gpu.func @matmul_kernel0
// GPU-SAME: \22box\22: [128, 32], \22swizzle\22: 64
// GPU-SAME: \22box\22: [32, 64], \22swizzle\22: 128
// Descriptors (PTX ISA, "Matrix Descriptor Format"): B is N-major, 128-byte
// swizzle (1 << 62), 8-line groups 1024 bytes apart (64 << 32), boxes of 32
// rows x 128 bytes (256 << 16); A is K-major with the 64-byte swizzle
// (2 << 62, negative as an i64), 8-line groups 512 bytes apart (32 << 32).
// GPU-DAG: arith.constant 4611686293322072064 : i64
// GPU-DAG: arith.constant -9223371899415756800 : i64
// Warp-specialized (backends/nvidia/warp_specialize.py): the kernel's 128
// threads consume, a producer warpgroup after them loads. 48 KiB of slots let
// 2 blocks share an SM when the consumers get 216 registers (128 for the
// accumulator): 2 x (128 x 216 + 128 x 40) = 65536.
// GPU: scf.if
// GPU: nvvm.setmaxregister increase 216
// GPU: scf.for
// Two K steps of 16, each a band of two instructions (rows 0-63 and 64-127).
// GPU: nvvm.wgmma.fence.aligned
// GPU-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>
// GPU: nvvm.wgmma.commit.group.sync.aligned
// GPU: nvvm.wgmma.wait.group.sync.aligned 1
// GPU: } else {
// GPU: nvvm.setmaxregister decrease 40
// 8 KiB of A and 8 KiB of B per slot.
// GPU: nvgpu.mbarrier.arrive.expect_tx %{{.*}}, %c16384

// PTX: .maxntid 256, 1, 1
// PTX: .minnctapersm 2
// PTX-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// PTX-NOT: mma.sync
// PTX: setmaxnreg.dec.sync.aligned.u32 40
// PTX: cp.async.bulk.tensor.2d
