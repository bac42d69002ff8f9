// RUN: tile-opt %s --verify-diagnostics --target=amdgpu:gfx942 -p 'builtin.module(tile-tiling{block=64,64,64 threads=256 stages=2 source=tuning-db})'
// RUN: tile-opt %s --target=amdgpu:gfx942 -p 'builtin.module(tile-tiling{block=64,64,64 threads=256 stages=2 source=tuning-db})' 2>/dev/null | filecheck %s
// RUN: tile-opt %s --target=amdgpu:gfx942 -p 'builtin.module(tile-tiling{block=64,64,64 threads=256 stages=2 source=tuning-db})' --dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s --check-prefix=PIPELINE
// RUN: not tile-opt %s --target=amdgpu:gfx942 -p 'builtin.module(tile-tiling{block=64,64,64 source=model})' 2>&1 | filecheck %s --check-prefix=BADSOURCE

// A configuration from a tuning database (tile-compile passes tile-tune's
// choice as options with source=tuning-db): tiled as given, the kernel says
// who decided, and a remark says where the configuration came from.
// CHECK-LABEL: func.func @gemm
// CHECK: {grid = array<i64: 4, 4>, threads = 256 : i64, tile.tiling = {predicted_seconds = {{.+}} : f64, source = "tuning-db", split_k = 1 : i64}}
// PIPELINE: tile-tiling{block=64,64,64 threads=256 stages=2 target=amdgpu:gfx942 source=tuning-db}
// Only "user" and "tuning-db" fix options; the model's own choice needs none.
// BADSOURCE: tile-tiling: option 'source' expects user or tuning-db, got 'model'
func.func @gemm(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
  %zero = arith.constant 0.0 : f16
  "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
  // expected-remark@+3 {{'memory.loaded_latency_clocks' is not publicly known for amdgpu:gfx942: assumed 891, the longest device-memory latency under load of the shipped descriptors (nvidia:sm_90a)}}
  // expected-remark@+2 {{tile-tiling: block 64x64x64, 256 threads, 2 stages, split-K 1 for this 256x256x256 f16 x f16 -> f16 (sum in f32) gemm, from the tuning database}}
  // expected-remark@+1 {{tile-tiling: 'memory.latency_clocks' is not publicly known for amdgpu:gfx942: assumed 296, the longest device-memory latency of the shipped descriptors (nvidia:sm_90a)}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf16>, memref<256x256xf16>, memref<256x256xf16>) -> ()
  return
}
