// Hand-written layouts the lowering cannot follow are located errors, not
// internal ones: an accumulator layout of warps that cannot hold a warpgroup
// instruction (wgmma's four warps split its rows, so the warp grid must be
// waves x 1), and a gemm whose instruction is not the one its accumulator's
// layout was made for.
//
// RUN: tile-opt %s --split-input-file --tile-lower-to-gpu --verify-diagnostics

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @matmul(%arg0: memref<256x256xf16>, %arg1: memref<256x256xf16>, %arg2: memref<256x256xf16>) {
    %c128 = arith.constant 128 : index
    %c32 = arith.constant 32 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c0 = arith.constant 0 : index
    %cst = arith.constant 0.000000e+00 : f32
    "tile.kernel"() ({
    ^bb0(%arg3: index, %arg4: index):
      %0 = "tile.alloc_shared"() : () -> memref<128x32xf16, #gpu.address_space<workgroup>>
      %1 = "tile.alloc_shared"() : () -> memref<32x128xf16, #gpu.address_space<workgroup>>
      // expected-error@+1 {{the warp grid must be a multiple of 4 waves by 1, not 2x2}}
      %2 = "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 64, 128, 16>, kind = "mma_accumulator", warps = array<i64: 2, 2>}} : () -> memref<128x128xf32, #gpu.address_space<private>>
      "tile.fill"(%2, %cst) : (memref<128x128xf32, #gpu.address_space<private>>, f32) -> ()
      scf.for %arg5 = %c0 to %c8 step %c1 {
        %5 = arith.muli %arg4, %c128 : index
        %6 = arith.muli %arg5, %c32 : index
        "tile.copy"(%arg0, %0, %5, %6) {operandSegmentSizes = array<i32: 1, 1, 2, 0>, tile.vector_width = 8 : i64} : (memref<256x256xf16>, memref<128x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        %7 = arith.muli %arg3, %c128 : index
        "tile.copy"(%arg1, %1, %6, %7) {operandSegmentSizes = array<i32: 1, 1, 2, 0>, tile.vector_width = 8 : i64} : (memref<256x256xf16>, memref<32x128xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.gemm"(%0, %1, %2) {accum_dtype = f32, tile.mma = {name = "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", shape = array<i64: 64, 128, 16, 1>, types = ["f16", "f16", "f32"]}, tile.warp_grid = array<i64: 2, 2>, transpose_a = false, transpose_b = false} : (memref<128x32xf16, #gpu.address_space<workgroup>>, memref<32x128xf16, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 3 : i64}
      %3 = arith.muli %arg4, %c128 : index
      %4 = arith.muli %arg3, %c128 : index
      "tile.copy"(%2, %arg2, %3, %4) {operandSegmentSizes = array<i32: 1, 1, 0, 2>, tile.cast = {from = f32, rounding = "nearest_even", to = f16}} : (memref<128x128xf32, #gpu.address_space<private>>, memref<256x256xf16>, index, index) -> ()
      gpu.yield
    }) {grid = array<i64: 2, 2>, threads = 128 : i64} : () -> ()
    return
  }
}

// -----

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @matmul(%arg0: memref<256x256xf16>, %arg1: memref<256x256xf16>, %arg2: memref<256x256xf16>) {
    %c128 = arith.constant 128 : index
    %c32 = arith.constant 32 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c0 = arith.constant 0 : index
    %cst = arith.constant 0.000000e+00 : f32
    "tile.kernel"() ({
    ^bb0(%arg3: index, %arg4: index):
      %0 = "tile.alloc_shared"() : () -> memref<128x32xf16, #gpu.address_space<workgroup>>
      %1 = "tile.alloc_shared"() : () -> memref<32x128xf16, #gpu.address_space<workgroup>>
      %2 = "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 64, 128, 16>, kind = "mma_accumulator", warps = array<i64: 4, 1>}} : () -> memref<128x128xf32, #gpu.address_space<private>>
      "tile.fill"(%2, %cst) : (memref<128x128xf32, #gpu.address_space<private>>, f32) -> ()
      scf.for %arg5 = %c0 to %c8 step %c1 {
        %5 = arith.muli %arg4, %c128 : index
        %6 = arith.muli %arg5, %c32 : index
        "tile.copy"(%arg0, %0, %5, %6) {operandSegmentSizes = array<i32: 1, 1, 2, 0>, tile.vector_width = 8 : i64} : (memref<256x256xf16>, memref<128x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        %7 = arith.muli %arg3, %c128 : index
        "tile.copy"(%arg1, %1, %6, %7) {operandSegmentSizes = array<i32: 1, 1, 2, 0>, tile.vector_width = 8 : i64} : (memref<256x256xf16>, memref<32x128xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        // expected-error@+1 {{this gemm issues wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 over 4x1 waves, but its accumulator's tile.layout is laid out for a 64x128x16 instruction over 4x1 waves}}
        "tile.gemm"(%0, %1, %2) {accum_dtype = f32, tile.mma = {name = "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", shape = array<i64: 64, 64, 16, 1>, types = ["f16", "f16", "f32"]}, tile.warp_grid = array<i64: 4, 1>, transpose_a = false, transpose_b = false} : (memref<128x32xf16, #gpu.address_space<workgroup>>, memref<32x128xf16, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 3 : i64}
      %3 = arith.muli %arg4, %c128 : index
      %4 = arith.muli %arg3, %c128 : index
      "tile.copy"(%2, %arg2, %3, %4) {operandSegmentSizes = array<i32: 1, 1, 0, 2>, tile.cast = {from = f32, rounding = "nearest_even", to = f16}} : (memref<128x128xf32, #gpu.address_space<private>>, memref<256x256xf16>, index, index) -> ()
      gpu.yield
    }) {grid = array<i64: 2, 2>, threads = 128 : i64} : () -> ()
    return
  }
}
