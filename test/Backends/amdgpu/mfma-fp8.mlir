// One wave, one fp8 MFMA per K step, from GPU-level IR through every stage.
// The same kernel with OCP fp8 compiles for gfx950 (sed swaps the encoding).
//
// One compile for gfx942, every stage kept (--save-temps=DIR: DIR/mfma-fp8.gpu.mlir, .ll, .s).
// RUN: rm -rf %t && tile-compile %s --target amdgpu:gfx942 --emit hsaco -o %t.hsaco --save-temps=%t
// RUN: filecheck %s --check-prefix=LLVM --input-file %t/mfma-fp8.ll
// RUN: filecheck %s --check-prefix=GFX942 --input-file %t/mfma-fp8.s
// RUN: sed 's/f8E4M3FNUZ/f8E4M3FN/g' %s | tile-compile - --target amdgpu:gfx950 --emit isa | filecheck %s --check-prefix=GFX950
// RUN: llvm-readelf --notes %t.hsaco | filecheck %s --check-prefix=NOTES
// RUN: filecheck %s --check-prefix=GPU --input-file %t/mfma-fp8.gpu.mlir

// LLVM: target triple = "amdgcn-amd-amdhsa"
// LLVM-LABEL: define amdgpu_kernel void @mfma_loop(
// Kernel pointers are promoted to the global address space before llc.
// LLVM: load {{.+}}, ptr addrspace(1)
// LLVM: call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8(i64 %{{.+}}, i64 %{{.+}}, <4 x float> %{{.+}}, i32 0, i32 0, i32 0)

// GFX942-LABEL: mfma_loop:
// GFX942: global_load_dwordx2
// GFX942: v_mfma_f32_16x16x32_fp8_fp8
// GFX942: s_cbranch_{{[a-z]+}} .LBB0_
// GFX942: .amdhsa_kernel mfma_loop
// GFX942: amdhsa.target: amdgcn-amd-amdhsa--gfx942

// GFX950-LABEL: mfma_loop:
// GFX950: v_mfma_f32_16x16x32_fp8_fp8
// GFX950: amdhsa.target: amdgcn-amd-amdhsa--gfx950

// NOTES: NT_AMDGPU_METADATA
// NOTES: .agpr_count:
// NOTES: .group_segment_fixed_size: 0
// NOTES: .name: mfma_loop
// NOTES: .private_segment_fixed_size: 0
// NOTES: .sgpr_spill_count: 0
// NOTES: .vgpr_spill_count: 0
// NOTES: .wavefront_size: 64
// NOTES: amdhsa.target: amdgcn-amd-amdhsa--gfx942

// --emit gpu on GPU-level input prints it back, verified.
// GPU: gpu.module @kernels
// GPU: amdgpu.mfma 16x16x32

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @mfma_loop(%a: memref<64x256xf8E4M3FNUZ>, %b: memref<64x256xf8E4M3FNUZ>, %c: memref<64x4xf32>)
        kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c256 = arith.constant 256 : index
      %zero = arith.constant dense<0.0> : vector<4xf32>
      %lane = gpu.thread_id x
      %acc = scf.for %k = %c0 to %c256 step %c8 iter_args(%d = %zero) -> (vector<4xf32>) {
        %av = vector.load %a[%lane, %k] : memref<64x256xf8E4M3FNUZ>, vector<8xf8E4M3FNUZ>
        %bv = vector.load %b[%lane, %k] : memref<64x256xf8E4M3FNUZ>, vector<8xf8E4M3FNUZ>
        %d1 = amdgpu.mfma 16x16x32 %av * %bv + %d blgp = none : vector<8xf8E4M3FNUZ>, vector<8xf8E4M3FNUZ>, vector<4xf32>
        scf.yield %d1 : vector<4xf32>
      }
      vector.store %acc, %c[%lane, %c0] : memref<64x4xf32>, vector<4xf32>
      gpu.return
    }
  }
}
