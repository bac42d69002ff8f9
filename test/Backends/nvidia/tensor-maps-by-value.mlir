// nvidia-tensor-maps-by-value: the kernel arguments that tile.kernel_arguments
// names as TMA tensor maps become 128-byte grid-constant parameters (byval,
// 64-byte aligned), which NVPTX prints as `.param .align 64 .b8 NAME[128]`.
// Other arguments, and functions that are not kernels, are left alone.
//
// RUN: tile-opt %s -p 'builtin.module(nvidia-tensor-maps-by-value)' | filecheck %s

// CHECK-LABEL: llvm.func @k(
// CHECK-SAME: %{{.*}}: !llvm.ptr,
// CHECK-SAME: %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %{{.*}}: !llvm.ptr {llvm.noalias},
// CHECK-SAME: %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant})
// CHECK-LABEL: llvm.func @helper(
// CHECK-SAME: %{{.*}}: !llvm.ptr)
module {
  llvm.func @k(%a: !llvm.ptr, %map_a: !llvm.ptr, %c: !llvm.ptr {llvm.noalias}, %map_c: !llvm.ptr) attributes {
      nvvm.kernel,
      tile.kernel_arguments = ["{\22position\22: 1, \22tensor_map\22: {\22source\22: {\22kernel_argument\22: 0}}}",
                               "{\22position\22: 3, \22tensor_map\22: {\22source\22: {\22kernel_argument\22: 2}}}"]} {
    llvm.return
  }
  llvm.func @helper(%p: !llvm.ptr) attributes {
      tile.kernel_arguments = ["{\22position\22: 0, \22tensor_map\22: {}}"]} {
    llvm.return
  }
}

