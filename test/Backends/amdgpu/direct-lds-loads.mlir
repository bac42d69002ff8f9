// gfx950: prefetch copies of the pipelined K loop straight into LDS
// (buffer_load_dwordx4 ... lds), B kept K x N and read with ds_read_b64_tr_b8.
// The loop waits for its own loads (vmcnt) before its barrier; LDS reads are
// outside the loads' alias scope, so LLVM adds no vmcnt wait in front of them.
//
// One compile, its GPU-level IR and LLVM IR kept by --save-temps=DIR:
// RUN: rm -rf %t && tile-compile %s --emit isa --tiling "block=128,128,128 threads=256 stages=2" --pass-options 'tile-infer-layout{transpose-reads=true},tile-lower-to-gpu{direct-lds-loads=true}' --save-temps=%t -o %t.s
// RUN: filecheck %s --check-prefix=GPU --input-file %t/direct-lds-loads.gpu.mlir
// RUN: filecheck %s --check-prefix=LLVM --input-file %t/direct-lds-loads.ll
// RUN: filecheck %s --check-prefix=ISA --input-file %t.s
// Unknown passes in --pass-options are refused:
// RUN: not tile-compile %s --pass-options 'tile-bogus{x=1}' 2>&1 | filecheck %s --check-prefix=BAD

module attributes {tile.target = "amdgpu:gfx950"} {
  func.func @gemm(%A: memref<512x512xf8E4M3FN>, %B: memref<512x512xf8E4M3FN>, %C: memref<512x512xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<512x512xf16>, f16) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<512x512xf8E4M3FN>, memref<512x512xf8E4M3FN>, memref<512x512xf16>) -> ()
    return
  }
}

// GPU: rocdl.readfirstlane
// GPU: scf.for
// GPU: amdgpu.memory_counter_wait load(0)
// GPU-NEXT: amdgpu.lds_barrier
// GPU: amdgpu.gather_to_lds {{.*}} : vector<16xf8E4M3FN>
// GPU: amdgpu.transpose_load
// GPU: amdgpu.mfma
// GPU: scf.yield
// The last iteration, peeled (tile-pipeline{peel-tail}; one iteration, so no
// loop once canonicalized), prefetches nothing but still waits for the loads
// the loop's last iteration issued into its stage, then for every wave's.
// GPU-NEXT: }
// GPU-NEXT: amdgpu.memory_counter_wait load(0)
// GPU-NEXT: amdgpu.lds_barrier
// GPU-NOT: amdgpu.gather_to_lds
// GPU: amdgpu.mfma

// LLVM: call void @llvm.amdgcn.load.to.lds.p7(ptr addrspace(7) {{.*}}, i32 16, i32 0, i32 0), !alias.scope ![[DMA:[0-9]+]]
// LLVM: load {{.*}} ptr addrspace(3) {{.*}} !noalias ![[DMA]]

// In the loop: the barrier, then this iteration's loads into the other stage.
// (test_direct_lds_loads.py checks that the only vmcnt wait is before the barrier.)
// ISA-DAG: ds_read_b64_tr_b8
// ISA-DAG: v_mfma_f32_32x32x64_f8f6f4
// ISA: s_barrier
// ISA: buffer_load_dwordx4 {{.*}} offen lds

// BAD: error: --pass-options: tile-bogus is not a step of this pipeline
