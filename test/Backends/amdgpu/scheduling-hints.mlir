// The workgroup-size hint llc gets from the tile choice: convert-gpu-to-rocdl
// turns the kernel's known_block_size (tile-tiling's `threads`) into
// "amdgpu-flat-work-group-size"="T,T", and llc writes T into the ISA metadata.
//
// No "amdgpu-waves-per-eu" is set. Measured (mfma_busy_ratio, spills) on the
// seed GEMM and bench/amd_vs_triton.py's cases: as a minimum equal to the
// occupancy the LDS allows it caps the registers (512 / W per lane) and made
// the seed on gfx950 spill (W = 5: 0 -> 132 spills, 0.356 -> 0.079); as a
// maximum ("1,W") it changed nothing; neither is kept.
//
// The scheduling hint of pipelined loops in workgroups of one wave per SIMD
// (tile-lower-to-gpu{sched-hints}, backends/amdgpu/lowering.scheduling_region_hint): the
// body ends in a sched.group.barrier grouping its 16 MFMAs, which llc keeps as
// a comment at the end of the loop; a single-stage loop (prefetch through
// registers) gets it too. Not with 8 waves (two per SIMD), not when turned off.
// Eight waves share the SIMDs two by two: each holds 256 registers, all
// architected ("amdgpu-agpr-alloc"="0"; four waves keep their AGPRs).
//
// Each configuration compiles once; --save-temps=DIR keeps its GPU-level IR
// (DIR/gemm_whole_problem.gpu.mlir) and LLVM IR (.ll) next to the ISA.
// RUN: rm -rf %t && mkdir -p %t
// RUN: tile-compile %examples/gemm_whole_problem.mlir --tiling "block=128,128,64 threads=256 stages=2" --emit isa --save-temps=%t/256s2 -o %t/256s2.s
// RUN: filecheck %s --check-prefix=HINT --input-file %t/256s2/gemm_whole_problem.gpu.mlir
// RUN: filecheck %s --check-prefix=HINT-ISA --input-file %t/256s2.s
// RUN: tile-compile %examples/gemm_whole_problem.mlir --tiling "block=128,128,64 threads=256 stages=2" --emit gpu --pass-options 'tile-lower-to-gpu{sched-hints=false}' | filecheck %s --check-prefix=NO-HINT
// RUN: tile-compile %examples/gemm_whole_problem.mlir --tiling "block=128,128,64 threads=512 stages=2" --emit gpu | filecheck %s --check-prefix=NO-HINT
// RUN: tile-compile %examples/gemm_whole_problem.mlir --tiling "block=128,128,64 threads=256 stages=1" --emit isa --save-temps=%t/256s1 -o %t/256s1.s
// RUN: filecheck %s --check-prefix=HINT --input-file %t/256s1/gemm_whole_problem.gpu.mlir
// HINT: scf.for
// HINT: amdgpu.mfma
// HINT: rocdl.sched.group.barrier 8, 16, 0
// HINT-NEXT: scf.yield
// HINT-ISA: v_mfma_f32_32x32x16_fp8_fp8
// HINT-ISA: ; sched_group_barrier mask(0x00000008) size(16) SyncID(0)
// HINT-ISA-NEXT: s_cbranch_vccnz
// NO-HINT: scf.for
// NO-HINT-NOT: rocdl.sched.group.barrier
//
// A kernel whose pipelined loop issues MFMAs is marked for the isa stage's
// schedule trial (llc's latency schedule too, the faster loop kept:
// backends/amdgpu/schedule.py), with one wave per SIMD or two; not with the
// hints off.
// RUN: tile-compile %examples/gemm_whole_problem.mlir --tiling "block=128,128,64 threads=512 stages=2" --emit gpu 2>/dev/null | filecheck %s --check-prefix=TRIAL
// RUN: tile-compile %examples/gemm_whole_problem.mlir --tiling "block=128,128,64 threads=512 stages=2" --emit gpu --pass-options 'tile-lower-to-gpu{sched-hints=false}' 2>/dev/null | filecheck %s --check-prefix=NO-TRIAL
// TRIAL: gpu.func @gemm_kernel0({{.*}} kernel attributes {{{.*}}tile.schedule_trial
// NO-TRIAL: gpu.func @gemm_kernel0(
// NO-TRIAL-NOT: tile.schedule_trial
//
// RUN: filecheck %s --check-prefix=LLVM --input-file %t/256s1/gemm_whole_problem.ll
// RUN: filecheck %s --check-prefix=ISA --input-file %t/256s1.s
// RUN: tile-compile %examples/gemm_whole_problem.mlir --tiling "block=128,128,64 threads=512 stages=1" --emit isa --save-temps=%t/512s1 -o %t/512s1.s
// RUN: filecheck %s --check-prefix=LLVM512 --input-file %t/512s1/gemm_whole_problem.ll
// RUN: filecheck %s --check-prefix=ISA512 --input-file %t/512s1.s

// LLVM: define amdgpu_kernel void @gemm_kernel0({{.*}}) #[[ATTRS:[0-9]+]]
// LLVM: attributes #[[ATTRS]] = { "amdgpu-flat-work-group-size"="256,256"
// LLVM-NOT: amdgpu-waves-per-eu
// LLVM-NOT: amdgpu-agpr-alloc
// LLVM512: attributes #{{[0-9]+}} = { "amdgpu-agpr-alloc"="0" "amdgpu-flat-work-group-size"="512,512"

// ISA: .amdhsa_kernel gemm_kernel0
// ISA: .max_flat_workgroup_size: 256
// ISA: .reqd_workgroup_size:
// ISA-NEXT: - 256
// ISA-NEXT: - 1
// ISA-NEXT: - 1
// ISA512: .max_flat_workgroup_size: 512
