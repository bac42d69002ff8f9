// An f32 math.exp2 marked fastmath<afn> is one v_exp_f32 (rocdl.exp2,
// llvm.amdgcn.exp2.f32); without the flag llc wraps each v_exp_f32 in its
// range fix-up for subnormal results (a compare with -126, two selects, a
// v_ldexp_f32). Flash attention's softmax takes 34 exp2 per lane and iteration.
//
// RUN: tile-compile %examples/kernels/flash_attention.mlir --target amdgpu:gfx942 --emit gpu | tile-opt - -p amdgpu-math-to-intrinsics | filecheck %s --check-prefix=IR
// RUN: tile-compile %examples/kernels/flash_attention.mlir --target amdgpu:gfx942 | filecheck %s --check-prefix=UNIT
// RUN: sed 's/ fastmath<afn>//' %examples/kernels/flash_attention.mlir | tile-compile - --target amdgpu:gfx942 | filecheck %s --check-prefix=FIXUP
// RUN: tile-compile %examples/kernels/flash_attention.mlir --target amdgpu:gfx950 | filecheck %s --check-prefix=UNIT

// IR-NOT: llvm.exp2
// IR: rocdl.exp2 %{{.+}} f32 -> f32
// IR-NOT: llvm.exp2

// UNIT-NOT: v_ldexp_f32
// UNIT: v_exp_f32
// UNIT-NOT: v_ldexp_f32
// UNIT: .end_amdgpu_metadata

// FIXUP: v_exp_f32
// FIXUP: v_ldexp_f32
