// RUN: tile-opt %s --verify-diagnostics --target=amdgpu:gfx942 --tile-tiling
// RUN: tile-opt %s --target=amdgpu:gfx942 --tile-tiling 2>/dev/null | filecheck %s
// RUN: tile-compile %s --target amdgpu:gfx942 --report -o /dev/null 2>/dev/null | filecheck %s --check-prefix=REPORT
// RUN: tile-compile %s --target amdgpu:gfx942 --tiling 'block=128,128,32' --report -o /dev/null 2>/dev/null | filecheck %s --check-prefix=USER

// The default tiling sees the size of the machine (issue 20): on gfx942's 304
// CUs a 256x256x256 f16 GEMM in 128x128 blocks was 4 workgroups, 300 CUs idle.
// The cost model (tilemlir.cost.model) spreads it over 16 workgroups of 64x64
// in 4 waves of 32x32 MFMAs, K steps of 128 (AMD's waves pay issue clocks per
// iteration: two iterations, not four; more around 16x16 MFMAs; 64 workgroups
// of 32x32 in 4 waves are predicted 7% faster, but their waves hold a quarter
// as much: tiling.rank_configs); its remark gives
// the choice, its prediction and the runner-up, and why the 288 CUs left idle
// are not filled by split-K (C is f16); the kernel records who chose
// (tile.tiling) and --report says it.
// CHECK-LABEL: func.func @gemm
// CHECK: "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
// CHECK: {grid = array<i64: 4, 4>, threads = 256 : i64, tile.tiling = {predicted_seconds = {{.+}} : f64, source = "model", split_k = 1 : i64}}
// REPORT: "workgroups": 16,
// REPORT-NEXT: "split_k": 1,
// REPORT-NEXT: "predicted_seconds": 1.{{[0-9]+}}e-06,
// REPORT-NEXT: "config_source": "model"
// With --tiling the user decided (the model still predicts): 4 workgroups.
// USER: "workgroups": 4,
// USER-NEXT: "split_k": 1,
// USER-NEXT: "predicted_seconds": {{[0-9.]+}}e-06,
// USER-NEXT: "config_source": "user"
func.func @gemm(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
  %zero = arith.constant 0.0 : f16
  "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
  // expected-remark@+4 {{tile-tiling: block 64x64x128, 256 threads (4 waves as 2x2), 2 stages, v_mfma_f32_32x32x8_f16, split-K 1 for this 256x256x256 f16 x f16 -> f16 (sum in f32) gemm: 16 workgroups on 304 CUs, up to 1 at once per CU, 1 round; predicted 1.25 us (matrix-bound); runner-up: block 32x32x128, 256 threads (4 waves as 2x2), 2 stages, v_mfma_f32_16x16x16_f16, split-K 1: 64 workgroups on 304 CUs, up to 2 at once per CU, 1 round; predicted 1.17 us (matrix-bound) (predicted faster by 7%, but its waves hold 256 elements of C each, this one's 1024 (with more, a wave's loads and address work weigh less)); ranked first of 341 configurations}}
  // expected-remark@+3 {{tile-tiling: 'memory.latency_clocks' is not publicly known for amdgpu:gfx942: assumed 296, the longest device-memory latency of the shipped descriptors (nvidia:sm_90a)}}
  // expected-remark@+2 {{tile-tiling: 'memory.loaded_latency_clocks' is not publicly known for amdgpu:gfx942: assumed 891, the longest device-memory latency under load of the shipped descriptors (nvidia:sm_90a)}}
  // expected-remark@+1 {{tile-tiling: 16 workgroups leave CUs of gfx942 idle, and split-K is not considered: C holds f16, not the accumulator type f32}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf16>, memref<256x256xf16>, memref<256x256xf16>) -> ()
  return
}
