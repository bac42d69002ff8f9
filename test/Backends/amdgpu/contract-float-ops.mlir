// amdgpu-contract-float-ops: the kernel's float multiplies, adds and
// subtracts carry `contract` (llc may fuse a product into the add that uses
// it), their other fast-math flags kept; other float ops are left as they are.
//
// RUN: tile-opt %s -p 'builtin.module(amdgpu-contract-float-ops)' | filecheck %s

// CHECK-LABEL: llvm.func @scores
// CHECK: llvm.fmul %{{.+}}, %{{.+}} {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK: llvm.fsub %{{.+}}, %{{.+}} {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK: llvm.fmul %{{.+}}, %{{.+}} {fastmathFlags = #llvm.fastmath<contract, afn>} : f32
// CHECK: llvm.fadd %{{.+}}, %{{.+}} {fastmathFlags = #llvm.fastmath<fast>} : f32
// CHECK: llvm.fdiv %{{.+}}, %{{.+}} : f32
module {
  llvm.func @scores(%s: f32, %scale: f32, %m: f32) -> f32 {
    %0 = llvm.fmul %s, %scale : f32
    %1 = llvm.fsub %0, %m : f32
    %2 = llvm.fmul %1, %scale {fastmathFlags = #llvm.fastmath<afn>} : f32
    %3 = llvm.fadd %2, %m {fastmathFlags = #llvm.fastmath<fast>} : f32
    %4 = llvm.fdiv %3, %m : f32
    llvm.return %4 : f32
  }
}
