// A kernel written with its own sizes over a sequence that is a multiple of
// its blocks (flash attention: 256 rows in blocks of 64) has its copies proven
// in bounds (tile-prove-bounds): no global load is guarded by a branch. In its
// pipelined K/V loop, which also reduces (the softmax), each prefetch copy's
// loads are followed by a scheduling barrier that keeps them where they were
// issued; a GEMM's loop (no reduction) has none, and a sequence that is not a
// multiple of the block (200 rows) keeps its guards.
//
// RUN: tile-compile %examples/kernels/flash_attention.mlir --target amdgpu:gfx942 --emit gpu | filecheck %s --check-prefix=LOOP
// RUN: tile-compile %examples/kernels/flash_attention.mlir --target amdgpu:gfx942 | filecheck %s --check-prefix=ISA
// RUN: sed 's/256x64xf16/200x64xf16/g' %examples/kernels/flash_attention.mlir | tile-compile - --target amdgpu:gfx942 | filecheck %s --check-prefix=RAGGED
// RUN: tile-compile %examples/gemm_whole_problem.mlir --target amdgpu:gfx942 --emit gpu | filecheck %s --check-prefix=GEMM

// LOOP: scf.for
// LOOP: rocdl.sched.barrier 0
// LOOP: rocdl.sched.barrier 0
// LOOP: scf.yield

// ISA-NOT: s_cbranch_execz
// ISA: .end_amdgpu_metadata

// RAGGED: s_cbranch_execz

// GEMM-NOT: rocdl.sched.barrier 0
