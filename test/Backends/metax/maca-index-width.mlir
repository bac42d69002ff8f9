// Index arithmetic in MACA C++ (issue 28): computed in 32 bits where MLIR's
// integer range analysis bounds it (block ids by the constant grid, thread ids
// by the block), and an element offset is formed in 32 bits only inside an
// allocation of fewer than 2^31 elements: X (65536 x 65536 = 2^32 elements) is
// indexed in 64 bits, Y (64 x 64) in 32 bits. A 32-bit value is widened only
// where a 64-bit offset uses it, never into a variable of its own.
//
// RUN: tile-compile %s --target metax:xcore1000 --emit maca | filecheck %s

// CHECK-LABEL: void rows_kernel0(
// CHECK-NEXT: int32_t {{v[0-9]+}} = (int32_t)((int32_t)blockIdx.x * (int32_t)64);
// CHECK-NOT: int64_t {{v[0-9]+}} =
// The thread's row of Y (32 rows a pass): an int32_t.
// CHECK: int32_t [[YROW:v[0-9]+]] = (int32_t)((uint32_t){{v[0-9]+}} % (uint32_t)(int32_t)32);
// X's row and column (64 * block + the thread's): 32-bit sums, widened in X's offset.
// CHECK: int32_t [[ROW:v[0-9]+]] = (int32_t)({{v[0-9]+}} + [[YROW]]);
// CHECK-NEXT: int32_t [[COL:v[0-9]+]] = (int32_t)({{v[0-9]+}} + {{v[0-9]+}});
// CHECK-NOT: int64_t {{v[0-9]+}} =
// CHECK: tm_vload<tm_f16x8>(&arg0{{\[}}(int64_t)(uint32_t)[[ROW]] * 65536 + (int64_t)(uint32_t)[[COL]]]);
// CHECK-NOT: int64_t {{v[0-9]+}} =
// CHECK: tm_vstore(&arg1{{\[}}[[YROW]] * 64 + v{{[0-9]+}}],

func.func @rows(%X: memref<65536x65536xf16>, %Y: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c64 = arith.constant 64 : index
    %row = arith.muli %bx, %c64 : index
    %t = "tile.alloc_fragment"() : () -> memref<64x64xf16, #gpu.address_space<private>>
    "tile.copy"(%X, %t, %row, %row) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<65536x65536xf16>, memref<64x64xf16, #gpu.address_space<private>>, index, index) -> ()
    "tile.copy"(%t, %Y) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<64x64xf16, #gpu.address_space<private>>, memref<64x64xf16>) -> ()
    gpu.yield
  }) {grid = array<i64: 1024>, threads = 256 : i64} : () -> ()
  return
}
