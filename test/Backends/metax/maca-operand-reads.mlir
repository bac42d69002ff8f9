// Operand reads of the MetaX main loop (issue 28): each lane of a
// __builtin_mxc_mma_16x16x{16,32}* reads K-consecutive elements of one row of
// A and of one column of B (MetaxMmaCore.operand_lanes, the lane layouts of
// tilelang-metax's mma_layout.py that test/metax/maca_host.h executes), so
// tile-infer-layout stores every operand whose K runs down its columns
// transposed, rows padded, and each lane reads its 4 f16 (8 fp8) as one
// 64-bit vector load, never element by element. The index arithmetic is in 32
// bits (the metax stage's NARROW_INDICES: thread and block ids bounded by the
// kernel's block and grid sizes), and so are the element offsets into
// allocations of fewer than 2^31 elements and the counter of a loop with
// constant bounds: the main loop holds no 64-bit value.
//
// Here A is transposed (stored K x M as written, so both A and B are stored
// transposed): 2 stages x 64 x (32 + 4) f16 each, rows 36 elements apart.
// RUN: tile-compile %s --target metax:xcore1000 --emit maca 2>/dev/null | filecheck %s
// The seed's fp8 GEMM on xcore1500: B stored transposed, rows of 32 + 8 fp8.
// RUN: tile-compile %examples/seed_fp8_gemm.mlir --target metax:xcore1500 --pass-options 'tile-legalize-precision{allow-fp8-rounding=true}' --emit maca 2>/dev/null | filecheck %s --check-prefix=FP8

// CHECK-LABEL: // kernel gemm_ta_kernel0: 256 threads; shared memory 18432 bytes
// CHECK-NEXT: extern "C" __global__
// CHECK-NEXT:   __shared__ tm_f16 smem0[4608]
// CHECK-NEXT:   __shared__ tm_f16 smem1[4608]
// CHECK: int32_t {{v[0-9]+}} = (int32_t)((uint32_t)(int32_t)threadIdx.x % (uint32_t)(int32_t)64);
// The main loop: one 64-bit load per lane and operand tile, B's feeding the MMA first.
// CHECK: for (int32_t [[I:i[0-9]+]] = 0; [[I]] < 3; [[I]] += 1) {
// CHECK-NEXT: __syncthreads();
// The stage: int32_t, from the loop's counter.
// CHECK-NEXT: int32_t [[STAGE:v[0-9]+]] = (int32_t)((uint32_t)[[I]] % (uint32_t)(int32_t)2);
// CHECK-NOT: {{= smem[0-9]+\[|int64_t}}
// CHECK: tm_f16x4 [[A0:v[0-9]+]] = tm_vload<tm_f16x4>(&smem0[(int32_t)([[STAGE]] * 2304) + {{v[0-9]+}} * 36 + [[K:v[0-9]+]]]);
// CHECK-NOT: {{= smem[0-9]+\[|int64_t}}
// CHECK: tm_f16x4 [[B0:v[0-9]+]] = tm_vload<tm_f16x4>(&smem1[(int32_t)([[STAGE]] * 2304) + {{v[0-9]+}} * 36 + [[K]]]);
// CHECK-NOT: {{= smem[0-9]+\[|int64_t}}
// CHECK: = __builtin_mxc_mma_16x16x16f16([[B0]], [[A0]], {{acc[0-9]+}});
// CHECK-NOT: {{= smem[0-9]+\[|int64_t}}
// CHECK: {{^  }}}

// FP8-LABEL: // kernel mixed_precision_gemm_kernel0: 256 threads; shared memory 30720 bytes
// FP8: __shared__ tm_f8e4m3 smem1[15360]
// FP8: for (int32_t [[I:i[0-9]+]] = 0; [[I]] < 32; [[I]] += 1) {
// FP8-NEXT: __syncthreads();
// FP8-NOT: {{= smem[0-9]+\[|int64_t}}
// FP8: tm_f8e4m3x8 [[B0:v[0-9]+]] = tm_vload<tm_f8e4m3x8>(&smem1[(int32_t)({{v[0-9]+}} * 5120) + {{v[0-9]+}} * 40 + {{v[0-9]+}}]);
// FP8-NEXT: tm_i32x2 [[B0W:v[0-9]+]] = tm_bitcast<tm_i32x2>([[B0]]);
// FP8-NOT: {{= smem[0-9]+\[|int64_t}}
// FP8: = __builtin_mxc_mma_16x16x32f8([[B0W]], {{v[0-9]+}}, {{acc[0-9]+}});
// FP8-NOT: {{= smem[0-9]+\[|int64_t}}
// FP8: {{^  }}}

func.func @gemm_ta(%A: memref<96x64xf16>, %B: memref<96x128xf16>, %C: memref<64x128xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bM = arith.constant 64 : index
    %bN = arith.constant 64 : index
    %bK = arith.constant 32 : index
    %num_k = arith.constant 3 : index
    %zero = arith.constant 0.0 : f32
    %A_s = "tile.alloc_shared"() : () -> memref<32x64xf16, #gpu.address_space<workgroup>>
    %B_s = "tile.alloc_shared"() : () -> memref<32x64xf16, #gpu.address_space<workgroup>>
    %C_l = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    "tile.fill"(%C_l, %zero) : (memref<64x64xf32, #gpu.address_space<private>>, f32) -> ()
    %row = arith.muli %by, %bM : index
    %col = arith.muli %bx, %bN : index
    scf.for %ko = %c0 to %num_k step %c1 {
      %k = arith.muli %ko, %bK : index
      "tile.copy"(%A, %A_s, %k, %row) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<96x64xf16>, memref<32x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.copy"(%B, %B_s, %k, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<96x128xf16>, memref<32x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.gemm"(%A_s, %B_s, %C_l) {accum_dtype = f32, transpose_a = true, transpose_b = false} : (memref<32x64xf16, #gpu.address_space<workgroup>>, memref<32x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
    } {tile.num_stages = 2 : i64}
    "tile.copy"(%C_l, %C, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #gpu.address_space<private>>, memref<64x128xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 2, 1>, threads = 256 : i64} : () -> ()
  return
}
