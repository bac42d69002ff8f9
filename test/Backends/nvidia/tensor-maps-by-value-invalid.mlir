// nvidia-tensor-maps-by-value refuses a tensor-map position that is not a bare
// pointer argument (tile.kernel_arguments out of step with the kernel): the
// compiler's own error, at the kernel, and nothing printed.
//
// RUN: not tile-opt %s -p 'builtin.module(nvidia-tensor-maps-by-value)' --split-input-file 2>&1 | filecheck %s

// CHECK: tensor-maps-by-value-invalid.mlir:[[# @LINE + 2]]:3: error: internal error in pass nvidia-tensor-maps-by-value: argument 1 of this kernel is named a tensor map in tile.kernel_arguments but is not a bare !llvm.ptr argument without attributes
module {
  llvm.func @scalar(%a: !llvm.ptr, %n: i32) attributes {nvvm.kernel,
      tile.kernel_arguments = ["{\22position\22: 1, \22tensor_map\22: {}}"]} {
    llvm.return
  }
}

// -----

// CHECK: tensor-maps-by-value-invalid.mlir:[[# @LINE + 2]]:3: error: internal error in pass nvidia-tensor-maps-by-value: argument 2 of this kernel
module {
  llvm.func @missing(%a: !llvm.ptr, %b: !llvm.ptr) attributes {nvvm.kernel,
      tile.kernel_arguments = ["{\22position\22: 2, \22tensor_map\22: {}}"]} {
    llvm.return
  }
}
// CHECK-NOT: {{^}}module
