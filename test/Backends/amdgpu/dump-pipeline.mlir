// --dump-pass-pipeline prints every stage's pipeline or command (to stderr), in
// forms that reproduce it: tile-opt -p (every pass registered), shell commands.
//
// RUN: tile-compile %examples/gpu/mfma_fp8_gfx942.mlir --dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s --check-prefixes=CHECK,GPU
// RUN: sed s/f8E4M3FNUZ/f8E4M3FN/g %examples/seed_fp8_gemm.mlir | tile-compile - --target amdgpu:gfx950 --dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s --check-prefix=TILE

// GPU: tile, gpu: skipped (the input is GPU-level IR)
// CHECK: gpu-to-llvm: builtin.module(amdgpu-check-resources{target=amdgpu:gfx942},rocdl-attach-target{chip=gfx942 O=3},gpu.module(
// CHECK-SAME: convert-arith-to-amdgpu{chipset=gfx942},convert-amdgpu-to-rocdl{chipset=gfx942},convert-gpu-to-rocdl{chipset=gfx942 index-bitwidth=64},reconcile-unrealized-casts,canonicalize,cse),amdgpu-order-lds-dma,amdgpu-scope-atomics,amdgpu-contract-float-ops,amdgpu-pack-float-ops,amdgpu-truncate-bf16{target=amdgpu:gfx942})
// CHECK: translate: in process
// CHECK: llvm-opt: opt -mtriple=amdgcn-amd-amdhsa -mcpu=gfx942 '-passes=amdgpu-promote-kernel-arguments,
// CHECK: llc: llc -mtriple=amdgcn-amd-amdhsa -mcpu=gfx942 -O3
// GPU-NOT: schedule:
// CHECK: llvm-mc: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx942 -filetype=obj
// CHECK: ld.lld: ld.lld -shared

// The flag's target reaches every tile pass that takes one.
// TILE: tile: builtin.module(tile-tiling{target=amdgpu:gfx950},canonicalize,tile-legalize-precision{target=amdgpu:gfx950},tile-prove-bounds,tile-select-mma{target=amdgpu:gfx950},
// TILE: gpu: builtin.module(tile-lower-to-gpu{target=amdgpu:gfx950},canonicalize,cse)
// TILE: gpu-to-llvm: builtin.module(amdgpu-check-resources{target=amdgpu:gfx950},
// TILE: llc: llc -mtriple=amdgcn-amd-amdhsa -mcpu=gfx950 -O3
// A kernel whose pipelined loop issues MFMAs is compiled with llc's latency schedule too.
// TILE-NEXT: schedule: llc -mtriple=amdgcn-amd-amdhsa -mcpu=gfx950 -O3 {{.*}}-amdgpu-sched-strategy=max-ilp -o - -, kept instead where mixed_precision_gemm_kernel0 gain
