// RUN: tile-opt %s -p 'tile-select-mma,tile-infer-layout{transpose-reads=true}' --split-input-file --verify-diagnostics
// RUN: tile-opt %s -p 'tile-select-mma,tile-infer-layout{transpose-reads=true}' --split-input-file 2>/dev/null | filecheck %s

// What tile-infer-layout gives up is recorded and said in a remark, with its cost.

// 128x128x32 f16 blocks at 4 stages fill gfx942's 64 KiB of LDS exactly: the
// 4 elements of row padding that make the 32x32x8 operand reads conflict-free
// would take 73728 bytes, so they go. Unpadded, each operand read would cost
// 28 clocks (rows 64 bytes apart: 8 rows share 4 banks per 16-lane group, see
// test_lds_layout.py); AMD's MFMAs read XOR-swizzled rows. In swizzled rows
// the MFMA reads two K steps at once (tile.operand_read_steps: a 16-byte
// chunk a lane, where the steps' 8-byte reads would not merge); a clock's 8
// lanes then read rows 4 apart as well, which every plain swizzle of 4-chunk
// rows puts on one phase (8 clocks a read with swizzle 1). The skewed
// swizzle 5 (chunk c of row r at c ^ ((r + r div 4) mod 4), lds_banks)
// leaves none: the reads cost what padded rows would.
// CHECK-LABEL: func.func @padding_dropped
// CHECK: tile.smem_layout = {banks = "32", conflicts = 0 : i64, dropped_pad = 4 : i64, pad = 0 : i64, swizzle = 5 : i64, transpose_read = false, transposed = false, unpadded_conflicts = 28 : i64}
// CHECK: tile.smem_layout = {banks = "32", conflicts = 0 : i64, dropped_pad = 4 : i64, pad = 0 : i64, swizzle = 5 : i64, transpose_read = false, transposed = false, unpadded_conflicts = 28 : i64}
// CHECK: tile.lds_conflicts = 0 : i64
// CHECK-SAME: tile.operand_read_steps = 2 : i64
module attributes {tile.target = "amdgpu:gfx942"} {
func.func @padding_dropped(%A: memref<1024x1024xf16>, %B: memref<1024x1024xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    // expected-remark@below {{to fit the kernel into gfx942's 65536 bytes of LDS (73728 bytes with padding); its rows are XOR-swizzled instead (swizzle 5): its gemm operand reads cost 0 bank-conflict clocks per iteration, as padded}}
    %a = "tile.alloc_shared"() : () -> memref<128x32xf16, #gpu.address_space<workgroup>>
    // expected-remark@below {{row padding of 4 elements dropped from the 128x32xf16 tile.alloc_shared at}}
    %b = "tile.alloc_shared"() : () -> memref<128x32xf16, #gpu.address_space<workgroup>>
    %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
    scf.for %k = %c0 to %c32 step %c1 {
      "tile.copy"(%A, %a, %bx, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x1024xf16>, memref<128x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.copy"(%B, %b, %by, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x1024xf16>, memref<128x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.gemm"(%a, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<128x32xf16, #gpu.address_space<workgroup>>, memref<128x32xf16, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
    } {tile.num_stages = 4 : i64}
    gpu.yield
  }) {grid = array<i64: 8, 8>, threads = 256 : i64} : () -> ()
  return
}
}

// -----

// gfx942 has no LDS transpose reads: B (K x N, not K-contiguous) is stored
// transposed although transpose reads were asked for.
// CHECK-LABEL: func.func @no_transpose_reads
// CHECK: "tile.alloc_shared"() {tile.smem_layout = {{{.*}}transpose_read = false, transposed = true{{.*}}}}
module attributes {tile.target = "amdgpu:gfx942"} {
func.func @no_transpose_reads(%A: memref<128x128xf16>, %B: memref<128x128xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<64x32xf16, #gpu.address_space<workgroup>>
    // expected-remark@below {{is not read with LDS transpose reads (its storage follows from all of the buffer's uses): gfx942 has no LDS transpose read of 16-bit elements (memory.shared_transpose_reads)}}
    %bb = "tile.alloc_shared"() : () -> memref<32x64xf16, #gpu.address_space<workgroup>>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    "tile.copy"(%A, %a, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x128xf16>, memref<64x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
    "tile.copy"(%B, %bb, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x128xf16>, memref<32x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
    "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x32xf16, #gpu.address_space<workgroup>>, memref<32x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
}

// -----

// fp8 B of 64 K rows read with ds_read_b64_tr_b8 on gfx950, whose bank count
// is unknown: no row padding and no XOR swizzle of its 4 chunks per row is
// conflict-free for 32 and 64 banks at once; the best padding leaves some.
// CHECK-LABEL: func.func @conflicts_remain
// CHECK: "tile.alloc_shared"() {tile.smem_layout = {banks = "unknown (32 and 64 checked)", conflicts = [[LEFT:[1-9][0-9]*]] : i64, pad = 16 : i64, transpose_read = true
module attributes {tile.target = "amdgpu:gfx950"} {
func.func @conflicts_remain(%A: memref<128x128xf8E4M3FN>, %B: memref<128x128xf8E4M3FN>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<64x64xf8E4M3FN, #gpu.address_space<workgroup>>
    // expected-remark@below {{padded by 16 elements, 8 conflict clocks per operand read remain (banks: unknown (32 and 64 checked))}}
    %bb = "tile.alloc_shared"() : () -> memref<64x64xf8E4M3FN, #gpu.address_space<workgroup>>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    "tile.copy"(%A, %a, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x128xf8E4M3FN>, memref<64x64xf8E4M3FN, #gpu.address_space<workgroup>>, index, index) -> ()
    "tile.copy"(%B, %bb, %b, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x128xf8E4M3FN>, memref<64x64xf8E4M3FN, #gpu.address_space<workgroup>>, index, index) -> ()
    "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf8E4M3FN, #gpu.address_space<workgroup>>, memref<64x64xf8E4M3FN, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
}
