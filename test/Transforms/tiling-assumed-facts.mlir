// RUN: tile-opt %s --split-input-file --verify-diagnostics -p 'builtin.module(tile-tiling,tile-legalize-precision)'
// RUN: tile-opt %s --split-input-file --target-desc=%S/Inputs/xcore1000_stated.toml --tile-tiling --remarks=all -o /dev/null 2>&1 | filecheck %s --check-prefix=STATED

// MetaX publishes few facts (xcore1000.toml, xcore1500.toml write them
// "unknown"). tile-tiling does not stop at them: each fact it and the cost
// model read is assumed, the least favourable value a shipped descriptor
// states, and a remark names the field and the value. A descriptor that
// states the facts (--target-desc) replaces the assumptions (STATED).

// The C500 (xcore1000): its CU count and clock are stated; the rest assumed.
// The same 256x256x256 f16 GEMM is split over 32 workgroups (the assumed 2
// logical devices leave 52 CUs).
module attributes {tile.target = "metax:xcore1000"} {
  func.func @c500_f16(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf16>, memref<256x256xf16>, memref<256x256xf16>) -> ()
    // expected-remark@-1 {{tile-tiling: 'compute.logical_devices' is not publicly known for metax:xcore1000: assumed 2, the most logical devices per package of the shipped descriptors (amdgpu:gfx90a)}}
    // expected-remark@-2 {{tile-tiling: 'registers.vgprs_per_lane' is not publicly known for metax:xcore1000: assumed 255, the fewest registers per lane of the shipped descriptors (nvidia:sm_90a) (a descriptor stating it, --target-desc=FILE, replaces the assumption)}}
    // expected-remark@-3 {{tile-tiling: 'memory.shared_bytes_per_cu' is not publicly known for metax:xcore1000: assumed 65536}}
    // expected-remark@-4 {{tile-tiling: 'memory.shared_banks' is not publicly known for metax:xcore1000: assumed 32}}
    // expected-remark@-5 {{tile-tiling: 'memory.shared_bank_bytes' is not publicly known for metax:xcore1000: assumed 4}}
    // expected-remark@-6 {{tile-tiling: 'compute.simds_per_cu' is not publicly known for metax:xcore1000: assumed 4}}
    // expected-remark@-7 {{tile-tiling: 'compute.max_waves_per_simd' is not publicly known for metax:xcore1000: assumed 8}}
    // expected-remark@-8 {{tile-tiling: 'compute.max_threads_per_workgroup' is not publicly known for metax:xcore1000: assumed 1024}}
    // expected-remark@-9 {{tile-tiling: 'memory.hbm_bandwidth_gbps' is not publicly known for metax:xcore1000: assumed 3200, the lowest device-memory bandwidth of the shipped descriptors (amdgpu:gfx90a)}}
    // expected-remark@-10 {{'memory.latency_clocks' is not publicly known for metax:xcore1000: assumed 296, the longest device-memory latency of the shipped descriptors (nvidia:sm_90a)}}
    // expected-remark@-11 {{tile-tiling: 'matrix.instructions[mma_16x16x16f16].cycles' is not publicly known for metax:xcore1000: assumed 32, the slowest rate (256 FLOP per SIMD per clock) of the shipped rows with f16 operands (amdgpu:gfx90a's v_mfma_f32_16x16x16f16)}}
    // expected-remark@-12 {{tile-tiling: block 32x64x64, 256 threads (4 waves as 1x4), 2 stages, mma_16x16x16f16, split-K 1 for this 256x256x256 f16 x f16 -> f16 (sum in f32) gemm: 32 workgroups}}
    // expected-remark@-13 {{tile-tiling: 32 workgroups leave CUs of xcore1000 idle, and split-K is not considered: C holds f16}}
    // expected-remark@-14 {{tile-tiling: 'memory.loaded_latency_clocks' is not publicly known for metax:xcore1000: assumed 891, the longest device-memory latency under load of the shipped descriptors (nvidia:sm_90a)}}
    return
  }
}

// -----

// fp8 on the C500: whether it has fp8 MMAs is not known; tile-legalize-precision
// assumes not and computes in f16 (its remark names matrix.fp8_formats), and
// tile-tiling costs the f16 computation it will get. Each assumed fact is said
// once per run, not per gemm.
module attributes {tile.target = "metax:xcore1000"} {
  func.func @c500_fp8(%A: memref<512x512xf8E4M3FN>, %B: memref<512x512xf8E4M3FN>, %C: memref<512x512xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<512x512xf16>, f16) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<512x512xf8E4M3FN>, memref<512x512xf8E4M3FN>, memref<512x512xf16>) -> ()
    // expected-remark@-1 {{'compute.logical_devices' is not publicly known}}
    // expected-remark@-2 {{'registers.vgprs_per_lane' is not publicly known}}
    // expected-remark@-3 {{'memory.shared_bytes_per_cu' is not publicly known}}
    // expected-remark@-4 {{'memory.shared_banks' is not publicly known}}
    // expected-remark@-5 {{'memory.shared_bank_bytes' is not publicly known}}
    // expected-remark@-6 {{'compute.simds_per_cu' is not publicly known}}
    // expected-remark@-7 {{'compute.max_waves_per_simd' is not publicly known}}
    // expected-remark@-8 {{'compute.max_threads_per_workgroup' is not publicly known}}
    // expected-remark@-9 {{'memory.hbm_bandwidth_gbps' is not publicly known}}
    // expected-remark@-10 {{'memory.latency_clocks' is not publicly known}}
    // expected-remark@-11 {{'matrix.instructions[mma_16x16x16f16].cycles' is not publicly known}}
    // expected-remark@-12 {{mma_16x16x16f16, split-K 1 for this 512x512x512 f8E4M3FN x f8E4M3FN -> f16 (sum in f32) gemm}}
    // expected-remark@-13 {{tile-legalize-precision: whether metax:xcore1000 has fp8 matrix instructions is not publicly known; gemms of fp8 operands are computed exactly in f16}}
    // expected-remark@-14 {{split-K is not considered: C holds f16}}
    // expected-remark@-15 {{'memory.loaded_latency_clocks' is not publicly known for metax:xcore1000: assumed 891}}
    // Once per run: the second gemm adds only its choice and what it costs (below it).
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<512x512xf8E4M3FN>, memref<512x512xf8E4M3FN>, memref<512x512xf16>) -> ()
    // expected-remark@-1 {{tile-tiling: block}}
    // expected-remark@-2 {{split-K is not considered: C holds f16}}
    return
  }
}

// -----

// The C600 (xcore1500): not even its CU count or clock is public.
module attributes {tile.target = "metax:xcore1500"} {
  func.func @c600_bf16(%A: memref<1024x512xbf16>, %B: memref<512x768xbf16>, %C: memref<1024x768xf32>) {
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<1024x512xbf16>, memref<512x768xbf16>, memref<1024x768xf32>) -> ()
    // expected-remark@-1 {{tile-tiling: 'compute.compute_units' is not publicly known for metax:xcore1500: assumed 104, the fewest CUs of the shipped descriptors (metax:xcore1000)}}
    // expected-remark@-2 {{'compute.logical_devices' is not publicly known for metax:xcore1500: assumed 2}}
    // expected-remark@-3 {{'registers.vgprs_per_lane' is not publicly known for metax:xcore1500: assumed 255}}
    // expected-remark@-4 {{'memory.shared_bytes_per_cu' is not publicly known for metax:xcore1500: assumed 65536}}
    // expected-remark@-5 {{'memory.shared_banks' is not publicly known for metax:xcore1500: assumed 32}}
    // expected-remark@-6 {{'memory.shared_bank_bytes' is not publicly known for metax:xcore1500: assumed 4}}
    // expected-remark@-7 {{'compute.simds_per_cu' is not publicly known for metax:xcore1500: assumed 4}}
    // expected-remark@-8 {{'compute.clock_mhz' is not publicly known for metax:xcore1500: assumed 1600, the lowest clock of the shipped descriptors (metax:xcore1000)}}
    // expected-remark@-9 {{'compute.max_waves_per_simd' is not publicly known for metax:xcore1500: assumed 8}}
    // expected-remark@-10 {{'compute.max_threads_per_workgroup' is not publicly known for metax:xcore1500: assumed 1024}}
    // expected-remark@-11 {{'memory.hbm_bandwidth_gbps' is not publicly known for metax:xcore1500: assumed 3200}}
    // expected-remark@-12 {{'memory.latency_clocks' is not publicly known for metax:xcore1500: assumed 296}}
    // expected-remark@-13 {{'matrix.instructions[mma_16x16x16bf16].cycles' is not publicly known for metax:xcore1500: assumed 64, the slowest rate (128 FLOP per SIMD per clock) of the shipped rows with bf16 operands (amdgpu:gfx90a's v_mfma_f32_16x16x2bf16)}}
    // expected-remark@-14 {{mma_16x16x16bf16, split-K 1 for this 1024x768x512 bf16 x bf16 -> f32 (sum in f32) gemm}}
    // expected-remark@-15 {{'memory.loaded_latency_clocks' is not publicly known for metax:xcore1500: assumed 891}}
    // expected-remark@-16 {{'memory.l2_mib' is not publicly known for metax:xcore1500: assumed 8, the smallest L2 of the shipped descriptors (metax:xcore1000)}}
    return
  }
}

// Stated, the facts are not assumed; the instruction's cycles still are.
// STATED-NOT: 'compute.logical_devices'
// STATED-NOT: 'compute.simds_per_cu'
// STATED-NOT: 'compute.max_threads_per_workgroup'
// STATED-NOT: 'compute.max_waves_per_simd'
// STATED-NOT: 'registers.vgprs_per_lane'
// STATED-NOT: 'memory.shared_bytes_per_cu'
// STATED-NOT: 'memory.shared_banks'
// STATED-NOT: 'memory.shared_bank_bytes'
// STATED-NOT: 'memory.hbm_bandwidth_gbps'
// STATED-NOT: 'memory.latency_clocks'
// STATED-NOT: 'memory.loaded_latency_clocks'
// STATED: remark: tile-tiling: 'matrix.instructions[mma_16x16x16f16].cycles' is not publicly known for metax:xcore1000 (from xcore1000_stated.toml): assumed 32
// STATED-NOT: 'compute.logical_devices'
// STATED-NOT: 'compute.simds_per_cu'
// STATED-NOT: 'compute.max_threads_per_workgroup'
// STATED-NOT: 'compute.max_waves_per_simd'
// STATED-NOT: 'registers.vgprs_per_lane'
// STATED-NOT: 'memory.shared_bytes_per_cu'
// STATED-NOT: 'memory.shared_banks'
// STATED-NOT: 'memory.shared_bank_bytes'
// STATED-NOT: 'memory.hbm_bandwidth_gbps'
// STATED-NOT: 'memory.latency_clocks'
// STATED-NOT: 'memory.loaded_latency_clocks'
// STATED: remark: tile-tiling: block {{.+}} for this 256x256x256 f16
