// A kernel written with its own sizes whose K loop the TMA path cannot take
// whole keeps mma.sync without a remark (NvidiaMatrixCore.preference): here B
// is copied once before the loop (a tile loaded once, as Q in attention).
//
// RUN: tile-compile %s --emit ptx --verify-diagnostics
// RUN: tile-compile %s --emit ptx | filecheck %s

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
      %col = arith.muli %bx, %c128 : index
      "tile.copy"(%B, %b, %c0, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<32x128xf16, #gpu.address_space<workgroup>>, index, index) -> ()
      scf.for %k = %c0 to %c8 step %c1 {
        %row = arith.muli %by, %c128 : index
        %kk = arith.muli %k, %c32 : index
        "tile.copy"(%A, %a, %row, %kk) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<128x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
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

// CHECK: mma.sync.aligned.m16n8k16
// CHECK-NOT: wgmma.mma_async
