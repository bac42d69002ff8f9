// amdgpu-scope-atomics: the atomics memref.atomic_rmw's lowering makes (acq_rel,
// system scope) become relaxed at agent scope, HIP atomicAdd's meaning, which
// llc adds in one global_atomic_add_f32; atomics given a scope or another
// ordering by their writer are left as they are.
//
// RUN: tile-opt %s -p 'builtin.module(amdgpu-scope-atomics)' | filecheck %s

// CHECK-LABEL: llvm.func @adds
// CHECK: llvm.atomicrmw fadd %{{.+}}, %{{.+}} syncscope("agent") monotonic : !llvm.ptr<1>, f32
// CHECK: llvm.atomicrmw add %{{.+}}, %{{.+}} syncscope("agent") monotonic : !llvm.ptr<1>, i32
// CHECK: llvm.atomicrmw fadd %{{.+}}, %{{.+}} syncscope("workgroup") acq_rel : !llvm.ptr<3>, f32
// CHECK: llvm.atomicrmw fadd %{{.+}}, %{{.+}} seq_cst : !llvm.ptr<1>, f32
module {
  llvm.func @adds(%p: !llvm.ptr<1>, %q: !llvm.ptr<1>, %l: !llvm.ptr<3>, %v: f32, %i: i32) {
    %0 = llvm.atomicrmw fadd %p, %v acq_rel : !llvm.ptr<1>, f32
    %1 = llvm.atomicrmw add %q, %i acq_rel : !llvm.ptr<1>, i32
    %2 = llvm.atomicrmw fadd %l, %v syncscope("workgroup") acq_rel : !llvm.ptr<3>, f32
    %3 = llvm.atomicrmw fadd %p, %v seq_cst : !llvm.ptr<1>, f32
    llvm.return
  }
}
