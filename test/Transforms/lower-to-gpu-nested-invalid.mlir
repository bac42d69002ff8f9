// tile-lower-to-gpu adds a gpu.module and launches beside the functions: it
// runs on the module, and nested in a function it says so (it inserted past
// the function's terminator before).
// RUN: not tile-opt %s --target=amdgpu:gfx942 -p 'builtin.module(func.func(tile-lower-to-gpu))' 2>&1 | filecheck %s
// CHECK: lower-to-gpu-nested-invalid.mlir:6:1: error: tile-lower-to-gpu runs on a module (builtin.module(tile-lower-to-gpu)), not nested in func.func
func.func @gemm(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf32>) {
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf32>) -> ()
  return
}
