// An f16 GEMM (64x200x96, not a multiple of the 64x64x32 blocks) for the C500
// (xcore1000) as MACA C++: the kernel signature, its shared buffers within the
// 64 KiB budget (rows padded by 4 elements, B stored transposed: see
// maca-operand-reads.mlir), 8 MMA built-ins (B fragment first) per main-loop
// iteration (2x2 16x16 tiles per wave, two K=16 steps per 32-deep block), and
// the host launcher through the MACA runtime.
//
// RUN: tile-compile %s --target metax:xcore1000 --emit maca | filecheck %s

// CHECK: // {{.*}}mxcc -x maca -O3 -std=c++17 --offload-arch=xcore1000 --maca-path=$MACA_PATH
// CHECK: typedef TM_VECTOR(tm_f16, 4) tm_f16x4;
// CHECK: typedef TM_VECTOR(float, 4) tm_f32x4;
// CHECK-LABEL: // kernel gemm_kernel0: 256 threads; shared memory 27648 bytes (xcore1000 allows 65536); MMA built-ins per main-loop iteration: 8 x __builtin_mxc_mma_16x16x16f16
// CHECK-NEXT: extern "C" __global__ __launch_bounds__(256) void gemm_kernel0(tm_f16* __restrict__ arg0, tm_f16* __restrict__ arg1, float* __restrict__ arg2) {
// CHECK-NEXT:   __shared__ tm_f16 smem0[6912] __attribute__((aligned(16)));
// CHECK-NEXT:   __shared__ tm_f16 smem1[6912] __attribute__((aligned(16)));
// CHECK: (int32_t)threadIdx.x
// CHECK: for (int32_t [[I:i[0-9]+]] = 0; [[I]] < 3; [[I]] += 1) {
// CHECK: __syncthreads();
// CHECK-COUNT-8: tm_f32x4 {{v[0-9]+}} = __builtin_mxc_mma_16x16x16f16({{v[0-9]+}}, {{v[0-9]+}}, {{(acc|v)[0-9]+}});
// CHECK-NOT: __builtin_mxc_mma
// CHECK: {{^  }}}
// CHECK-LABEL: extern "C" int gemm(tm_f16* host0, tm_f16* host1, float* host2) {
// CHECK: TM_CHECK(mcMalloc((void**)&dev0, 64 * 96 * sizeof(tm_f16)));
// CHECK: TM_CHECK(mcMemcpy(dev0, host0, 64 * 96 * sizeof(tm_f16), mcMemcpyHostToDevice));
// CHECK: void* args[] = {&dev0, &dev1, &dev2};
// CHECK-NEXT: TM_CHECK(mcLaunchKernel(TM_KERNEL(::gemm_kernel0), dim3((unsigned)INT64_C(4), (unsigned)INT64_C(1), (unsigned)INT64_C(1)), dim3((unsigned)INT64_C(256), (unsigned)INT64_C(1), (unsigned)INT64_C(1)), args, (size_t)(0), nullptr));
// CHECK: TM_CHECK(mcMemcpy(host2, dev2, 64 * 200 * sizeof(float), mcMemcpyDeviceToHost));
// CHECK: TM_CHECK(mcFree(dev2));

func.func @gemm(%A: memref<64x96xf16>, %B: memref<96x200xf16>, %C: memref<64x200xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bM = arith.constant 64 : index
    %bN = arith.constant 64 : index
    %bK = arith.constant 32 : index
    %num_k = arith.constant 3 : index
    %zero = arith.constant 0.0 : f32
    %A_s = "tile.alloc_shared"() : () -> memref<64x32xf16, #gpu.address_space<workgroup>>
    %B_s = "tile.alloc_shared"() : () -> memref<32x64xf16, #gpu.address_space<workgroup>>
    %C_l = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    "tile.fill"(%C_l, %zero) : (memref<64x64xf32, #gpu.address_space<private>>, f32) -> ()
    %row = arith.muli %by, %bM : index
    %col = arith.muli %bx, %bN : index
    scf.for %ko = %c0 to %num_k step %c1 {
      %k = arith.muli %ko, %bK : index
      "tile.copy"(%A, %A_s, %row, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x96xf16>, memref<64x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.copy"(%B, %B_s, %k, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<96x200xf16>, memref<32x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.gemm"(%A_s, %B_s, %C_l) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x32xf16, #gpu.address_space<workgroup>>, memref<32x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
    } {tile.num_stages = 3 : i64}
    "tile.copy"(%C_l, %C, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #gpu.address_space<private>>, memref<64x200xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4, 1>, threads = 256 : i64} : () -> ()
  return
}
