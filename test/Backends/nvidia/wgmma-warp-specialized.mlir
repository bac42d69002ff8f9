// Warp-specialized sm_90a kernels (backends/nvidia/warp_specialize.py): a
// kernel whose K loop is TMA + wgmma runs its body in its own threads (the
// consumers) and gets a producer warpgroup after them that issues the loads.
//
// RUN: tile-compile %s --emit gpu | filecheck %s --check-prefix=GPU
// RUN: tile-compile %s --emit ptx | filecheck %s --check-prefix=PTX
// Off: one role, the kernel's own 128 threads.
// RUN: tile-compile %s --emit gpu --pass-options 'tile-lower-to-gpu{warp-specialize=false}' | filecheck %s --check-prefix=OFF
// Not persistent: one workgroup per tile.
// RUN: tile-compile %s --emit gpu --pass-options 'tile-lower-to-gpu{persistent=false}' | filecheck %s --check-prefix=TILES

// A 128x128x64 block of one warpgroup whose C goes through shared memory: the
// epilogue's CTA barriers become named barrier 1 of the 128 consumer threads.
module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @staged(%A: memref<2048x512xf16>, %B: memref<512x2048xf16>, %C: memref<2048x2048xf16>) {
    "tile.kernel"() ({
    ^bb0(%bx: index, %by: index):
      %a = "tile.alloc_shared"() : () -> memref<128x64xf16, #gpu.address_space<workgroup>>
      %b = "tile.alloc_shared"() : () -> memref<64x128xf16, #gpu.address_space<workgroup>>
      %cs = "tile.alloc_shared"() : () -> memref<128x128xf16, #gpu.address_space<workgroup>>
      %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
      %zero = arith.constant 0.000000e+00 : f32
      "tile.fill"(%c, %zero) : (memref<128x128xf32, #gpu.address_space<private>>, f32) -> ()
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %row = arith.muli %by, %c128 : index
      %col = arith.muli %bx, %c128 : index
      scf.for %k = %c0 to %c8 step %c1 {
        %kk = arith.muli %k, %c64 : index
        "tile.copy"(%A, %a, %row, %kk) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<2048x512xf16>, memref<128x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.copy"(%B, %b, %kk, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<512x2048xf16>, memref<64x128xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.gemm"(%a, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x64xf16, #gpu.address_space<workgroup>>, memref<64x128xf16, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 4 : i64}
      "tile.copy"(%c, %cs) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<128x128xf32, #gpu.address_space<private>>, memref<128x128xf16, #gpu.address_space<workgroup>>) -> ()
      "tile.copy"(%cs, %C, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x128xf16, #gpu.address_space<workgroup>>, memref<2048x2048xf16>, index, index) -> ()
      gpu.yield
    }) {grid = array<i64: 16, 16>, threads = 128 : i64} : () -> ()
    return
  }
}

// 128 + 128 threads. Four 32 KiB slots and the 32 KiB C tile: one block per SM
// (2 x 161 KiB > 228 KiB), so every thread already gets the most registers
// (65536 / 256 > 255): no setmaxnreg. Persistent: min(256 tiles, 132 SMs x 1)
// workgroups, each looping over tiles.
// GPU-LABEL: func.func @staged
// GPU: gpu.launch_func @staged_kernels::@staged_kernel0 blocks in (%c132, %c1, %c1) threads in (%c256, %c1, %c1)
// GPU: gpu.func @staged_kernel0
// GPU-SAME: known_block_size = array<i32: 256, 1, 1>
// GPU-NOT: nvvm.minctasm
// Thread 0 makes the barriers before the split: 4 arrivals (one per consumer warp) empty a slot.
// GPU: nvgpu.mbarrier.init %{{.*}}[%c0], %c1
// GPU: nvgpu.mbarrier.init %{{.*}}[%c0], %c4
// GPU: gpu.barrier
// GPU: %[[CONSUMER:.*]] = arith.cmpi ult, %{{.*}}, %c128
// GPU: scf.if %[[CONSUMER]] {
// GPU-NOT: nvvm.setmaxregister
// The consumers' tiles: t = block id, + 132, ...; 8 rows of tiles at a time.
// GPU: %[[BID:.*]] = gpu.block_id x
// GPU: scf.for %{{.*}} = %[[BID]] to %c256 step %c132 iter_args(%[[CBASE:.*]] = %c0) -> (index) {
// GPU: arith.minui %{{.*}}, %c8
// The consumers wait for each slot and release it; they issue no copies. The
// slot and phase count the iterations of the workgroup's earlier tiles too.
// GPU: scf.for %[[CI:.*]] = %c0 to %c8 step %c1
// GPU: %[[CG:.*]] = arith.addi %[[CBASE]], %[[CI]]
// GPU: arith.divui %[[CG]], %c4
// GPU: arith.remui %[[CG]], %c4
// GPU: nvgpu.mbarrier.try_wait.parity
// GPU-NOT: nvgpu.tma.async.load
// GPU: nvvm.wgmma.wait.group.sync.aligned 1
// GPU-NOT: nvgpu.tma.async.load
// GPU: nvgpu.mbarrier.arrive
// GPU-NOT: nvgpu.tma.async.load
// GPU: nvvm.wgmma.wait.group.sync.aligned 0
// The tile's last slot is released too: the next tile's loads reuse it.
// GPU: nvgpu.mbarrier.arrive
// The epilogue through shared memory synchronizes the consumers only, and
// so does the end of each tile (the next tile's epilogue rewrites the buffer).
// GPU-NOT: gpu.barrier
// GPU: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// GPU-NOT: gpu.barrier
// GPU: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// GPU-NEXT: arith.addi %{{.*}}, %c8 : index
// GPU-NEXT: scf.yield
// GPU: } else {
// The producer: thread 128 alone, over the same tiles; from the launch's
// fifth iteration on it first waits until the consumers released the slot.
// GPU: %[[LEADER:.*]] = arith.cmpi eq, %{{.*}}, %c128
// GPU: scf.if %[[LEADER]] {
// GPU: scf.for %{{.*}} = %{{.*}} to %c256 step %c132 iter_args(%[[BASE:.*]] = %c0) -> (index) {
// GPU: scf.for %[[I:.*]] = %c0 to %c8 step %c1 {
// GPU: %[[G:.*]] = arith.addi %[[BASE]], %[[I]]
// GPU: %[[REUSED:.*]] = arith.cmpi uge, %[[G]], %c4
// GPU: scf.if %[[REUSED]] {
// GPU: nvgpu.mbarrier.try_wait.parity
// GPU: nvgpu.mbarrier.arrive.expect_tx %{{.*}}, %c32768
// GPU-COUNT-3: nvgpu.tma.async.load
// GPU-NOT: nvgpu.tma.async.load
// GPU: scf.yield %{{.*}} : index
// GPU: gpu.return

// TILES: gpu.launch_func @staged_kernels::@staged_kernel0 blocks in (%c16, %c16, %c1) threads in (%c256, %c1, %c1)
// TILES-NOT: arith.minui
// TILES-NOT: -> (index)

// PTX-LABEL: .entry staged_kernel0
// PTX: .maxntid 256, 1, 1
// PTX-NOT: setmaxnreg
// PTX: bar.sync {{\s*}}0;
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// PTX-DAG: bar.sync {{\s*}}1, 128;

// OFF-LABEL: func.func @staged
// OFF: threads in (%c128, %c1, %c1)
// OFF-NOT: nvvm.barrier
// OFF-NOT: nvvm.setmaxregister
