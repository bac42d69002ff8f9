// The seed's FP8 GEMM, both forms, from tile IR to HSACO: FNUZ fp8 MFMAs on
// gfx942, OCP on gfx950 (its inputs re-typed OCP: FNUZ does not convert exactly),
// no scratch, no spills.
//
// (--save-temps=DIR keeps the gfx942 compile's LLVM IR: DIR/seed_fp8_gemm.ll.)
// RUN: rm -rf %t && tile-compile %examples/seed_fp8_gemm.mlir --target amdgpu:gfx942 --emit hsaco -o %t.942.hsaco --report --save-temps=%t | filecheck %s
// RUN: llvm-readelf --notes %t.942.hsaco | filecheck %s --check-prefix=NOTES
// RUN: sed s/f8E4M3FNUZ/f8E4M3FN/g %examples/seed_fp8_gemm.mlir | tile-compile - --target amdgpu:gfx950 --report | filecheck %s
// RUN: tile-compile %examples/gemm_whole_problem.mlir --target amdgpu:gfx942 --report | filecheck %s
// RUN: filecheck %s --check-prefix=LLVM --input-file %t/seed_fp8_gemm.ll

// CHECK: "scratch_bytes": 0,
// CHECK-NEXT: "spills": 0,
// CHECK: "matrix_instructions": {
// CHECK-NEXT: "v_mfma_f32_{{[0-9]+x[0-9]+x[0-9]+}}_fp8_fp8": {
// CHECK-NEXT: "main_loop": {{[1-9][0-9]*}},
// CHECK: "global_load_bits": {{64|128}},

// NOTES: .private_segment_fixed_size: 0
// NOTES: .sgpr_spill_count: 0
// NOTES: .vgpr_spill_count: 0

// LLVM: define amdgpu_kernel void @
// LLVM: @llvm.amdgcn.mfma.f32.{{[0-9]+x[0-9]+x[0-9]+}}.fp8.fp8
