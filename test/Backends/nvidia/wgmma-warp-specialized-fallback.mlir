// A TMA + wgmma kernel the producer warpgroup cannot serve keeps one role
// (backends/nvidia/warp_specialize.py): here the block's rows come from a
// table in memory (a grouped GEMM's tile list, say), which only the kernel's
// own threads read; thread 0 then issues the loads as well.
//
// RUN: tile-compile %s --emit gpu | filecheck %s

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @gathered(%A: memref<512x256xf16>, %B: memref<256x256xf16>, %C: memref<512x256xf16>, %rows: memref<4xindex>) {
    "tile.kernel"() ({
    ^bb0(%bx: index, %by: index):
      %a = "tile.alloc_shared"() : () -> memref<128x64xf16, #gpu.address_space<workgroup>>
      %b = "tile.alloc_shared"() : () -> memref<64x128xf16, #gpu.address_space<workgroup>>
      %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
      %zero = arith.constant 0.000000e+00 : f32
      "tile.fill"(%c, %zero) : (memref<128x128xf32, #gpu.address_space<private>>, f32) -> ()
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %row = memref.load %rows[%by] : memref<4xindex>
      %col = arith.muli %bx, %c128 : index
      scf.for %k = %c0 to %c4 step %c1 {
        %kk = arith.muli %k, %c64 : index
        "tile.copy"(%A, %a, %row, %kk) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<512x256xf16>, memref<128x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.copy"(%B, %b, %kk, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<64x128xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.gemm"(%a, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x64xf16, #gpu.address_space<workgroup>>, memref<64x128xf16, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 3 : i64}
      "tile.copy"(%c, %C, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x128xf32, #gpu.address_space<private>>, memref<512x256xf16>, index, index) -> ()
      gpu.yield
    }) {grid = array<i64: 2, 4>, threads = 128 : i64} : () -> ()
    return
  }

  // A body that reads the launch itself (gpu.block_id, gpu.block_dim, ...): a
  // persistent kernel's 1-D grid of fewer blocks, or a block with a producer
  // warpgroup more, would change what it reads; the kernel keeps one role, one
  // block per tile.
  func.func @raw_ids(%A: memref<512x256xf16>, %B: memref<256x256xf16>, %C: memref<512x256xf16>) {
    "tile.kernel"() ({
    ^bb0(%bx: index, %by: index):
      %a = "tile.alloc_shared"() : () -> memref<128x64xf16, #gpu.address_space<workgroup>>
      %b = "tile.alloc_shared"() : () -> memref<64x128xf16, #gpu.address_space<workgroup>>
      %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
      %zero = arith.constant 0.000000e+00 : f32
      "tile.fill"(%c, %zero) : (memref<128x128xf32, #gpu.address_space<private>>, f32) -> ()
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %row = arith.muli %by, %c128 : index
      %col = arith.muli %bx, %c128 : index
      scf.for %k = %c0 to %c4 step %c1 {
        %kk = arith.muli %k, %c64 : index
        "tile.copy"(%A, %a, %row, %kk) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<512x256xf16>, memref<128x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.copy"(%B, %b, %kk, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<64x128xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.gemm"(%a, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x64xf16, #gpu.address_space<workgroup>>, memref<64x128xf16, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 3 : i64}
      %y = gpu.block_id y
      %r = arith.muli %y, %c128 : index
      "tile.copy"(%c, %C, %r, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x128xf32, #gpu.address_space<private>>, memref<512x256xf16>, index, index) -> ()
      gpu.yield
    }) {grid = array<i64: 2, 4>, threads = 128 : i64} : () -> ()
    return
  }
}

// CHECK-LABEL: func.func @gathered
// CHECK: gpu.launch_func @gathered_kernels::@gathered_kernel0 blocks in (%c2, %c4, %c1) threads in (%c128, %c1, %c1)
// CHECK-LABEL: func.func @raw_ids
// CHECK: gpu.launch_func @raw_ids_kernels::@raw_ids_kernel0 blocks in (%c2, %c4, %c1) threads in (%c128, %c1, %c1)
// CHECK-LABEL: gpu.func @gathered_kernel0
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK-NOT: nvvm.setmaxregister
// CHECK: nvvm.wgmma.mma_async
// CHECK-NOT: nvvm.setmaxregister
// CHECK-LABEL: gpu.func @raw_ids_kernel0
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK-NOT: nvvm.setmaxregister
// CHECK: nvvm.wgmma.mma_async
// CHECK-NOT: nvvm.setmaxregister
