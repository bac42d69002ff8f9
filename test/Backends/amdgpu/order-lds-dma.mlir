// amdgpu-order-lds-dma: loads into LDS get an alias scope of their own, LDS
// reads a no-alias scope for it, so LLVM's waitcnt insertion does not make the
// reads wait for loads still writing another pipeline stage; other memory
// accesses are left alone.
//
// RUN: tile-opt %s -p 'builtin.module(amdgpu-order-lds-dma)' --split-input-file | filecheck %s

// CHECK: #[[DOMAIN:.+]] = #llvm.alias_scope_domain<id = distinct[{{.*}}]<>, description = "tilemlir: LDS written by loads into LDS">
// CHECK: #[[SCOPE:.+]] = #llvm.alias_scope<id = distinct[{{.*}}]<>, domain = #[[DOMAIN]]>
// CHECK-LABEL: llvm.func @stage
// CHECK: rocdl.load.to.lds {{.*}} {alias_scopes = [#[[SCOPE]]]}
// CHECK: llvm.load %{{.*}} {noalias_scopes = [#[[SCOPE]]]} : !llvm.ptr<3>
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<8xf16>
module {
  llvm.func @stage(%global: !llvm.ptr<7>, %lds: !llvm.ptr<3>, %flat: !llvm.ptr) -> vector<8xf16> {
    rocdl.load.to.lds %global, %lds, 16, 0, 0 : !llvm.ptr<7>
    %read = llvm.load %lds : !llvm.ptr<3> -> vector<8xf16>
    %other = llvm.load %flat : !llvm.ptr -> vector<8xf16>
    llvm.return %read : vector<8xf16>
  }
}

// -----

// Without loads into LDS nothing changes.
// CHECK-LABEL: llvm.func @plain
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> vector<8xf16>
// CHECK-NOT: noalias_scopes
module {
  llvm.func @plain(%lds: !llvm.ptr<3>) -> vector<8xf16> {
    %read = llvm.load %lds : !llvm.ptr<3> -> vector<8xf16>
    llvm.return %read : vector<8xf16>
  }
}
