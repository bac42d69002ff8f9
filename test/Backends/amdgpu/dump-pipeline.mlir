// --dump-pass-pipeline prints every stage's exact pipeline or command (stderr).
//
// RUN: tile-compile %examples/gpu/mfma_fp8_gfx942.mlir --dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s

// CHECK: tile, gpu: skipped (the input is GPU-level IR)
// CHECK: gpu-to-llvm: builtin.module(amdgpu-check-resources,rocdl-attach-target{
// CHECK-SAME: chip=gfx942
// CHECK-SAME: gpu.module(
// CHECK-SAME: convert-arith-to-amdgpu{
// CHECK-SAME: chipset=gfx942
// CHECK-SAME: convert-amdgpu-to-rocdl{chipset=gfx942}
// CHECK-SAME: convert-gpu-to-rocdl{
// CHECK-SAME: chipset=gfx942 index-bitwidth=64
// CHECK-SAME: reconcile-unrealized-casts
// CHECK: translate: in process
// CHECK: llvm-opt: opt -mtriple=amdgcn-amd-amdhsa -mcpu=gfx942 '-passes=amdgpu-promote-kernel-arguments,
// CHECK: llc: llc -mtriple=amdgcn-amd-amdhsa -mcpu=gfx942 -O3
// CHECK: llvm-mc: llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=gfx942 -filetype=obj
// CHECK: ld.lld: ld.lld -shared
