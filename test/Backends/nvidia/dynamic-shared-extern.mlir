// nvidia-dynamic-shared-extern: the dynamic shared memory global that
// convert-gpu-to-nvvm makes gets external linkage and 1024-byte alignment, so
// NVPTX prints an `.extern .shared` array rather than a one-byte variable; other
// globals are left alone.
//
// RUN: tile-opt %s -p 'builtin.module(nvidia-dynamic-shared-extern)' | filecheck %s

// CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.mlir.global internal @barriers() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<2 x i64>
module {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global internal @barriers() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<2 x i64>
}
