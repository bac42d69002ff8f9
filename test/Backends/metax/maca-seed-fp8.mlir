// The seed's FP8 GEMM (examples/seed_fp8_gemm.mlir, FNUZ inputs) for the C600
// (xcore1500), with the rounding of FNUZ to OCP asked for
// (tile-legalize-precision{allow-fp8-rounding}: 16 FNUZ encodings have no OCP
// value): the inputs are re-encoded as OCP E4M3FN on the way to shared
// memory (the chip's fp8), and each wave issues 16 fp8 MMAs (4x4 16x16 tiles,
// one K=32 step) per main-loop iteration, B fragment first; 3 pipeline stages
// of shared tiles (rows padded by 8 elements, B stored transposed) take 30 KiB
// of the 128 KiB.
//
// RUN: tile-compile %examples/seed_fp8_gemm.mlir --target metax:xcore1500 --pass-options 'tile-legalize-precision{allow-fp8-rounding=true}' --emit maca --report -o %t.maca > %t.json
// RUN: filecheck %s --input-file %t.maca
// The report says the same as data.
// RUN: filecheck %s --check-prefix=REPORT --input-file %t.json

// CHECK: --offload-arch=xcore1500
// CHECK-LABEL: // kernel mixed_precision_gemm_kernel0: 256 threads; shared memory 30720 bytes (xcore1500 allows 131072); MMA built-ins per main-loop iteration: 16 x __builtin_mxc_mma_16x16x32f8
// CHECK-NEXT: extern "C" __global__ __launch_bounds__(256) void mixed_precision_gemm_kernel0(tm_f8e4m3fnuz* __restrict__ arg0, tm_f8e4m3fnuz* __restrict__ arg1, tm_f16* __restrict__ arg2) {
// CHECK-NEXT: __shared__ tm_f8e4m3 smem0[15360]
// CHECK-NEXT: __shared__ tm_f8e4m3 smem1[15360]
// CHECK: tm_cvt_f32_f8e4m3(
// CHECK: for (int32_t
// CHECK-COUNT-16: = __builtin_mxc_mma_16x16x32f8(
// CHECK-NOT: __builtin_mxc_mma
// CHECK: {{^  }}}
// CHECK: tm_cvt_f32_f16(
// CHECK-LABEL: extern "C" int mixed_precision_gemm(tm_f8e4m3fnuz* host0, tm_f8e4m3fnuz* host1, tm_f16* host2) {
// CHECK: mcLaunchKernel(TM_KERNEL(::mixed_precision_gemm_kernel0), dim3((unsigned)INT64_C(8), (unsigned)INT64_C(8), (unsigned)INT64_C(1))

// REPORT: "target": "metax:xcore1500"
// REPORT: "threads": 256
// REPORT: "shared_bytes": 30720
// REPORT: "matrix_instructions": {
// REPORT-NEXT: "__builtin_mxc_mma_16x16x32f8": {
// REPORT-NEXT: "main_loop": 16
// REPORT: "metax": {
// REPORT-NEXT: "shared_bytes_limit": 131072
