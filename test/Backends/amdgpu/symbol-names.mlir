// Kernel names are identifiers whatever the source function is called: llc
// writes `.amdhsa_kernel NAME` unquoted, so a space made assembly llvm-mc
// rejects, and a newline could add assembler directives. tile-lower-to-gpu
// names the gpu.module and gpu.func through kernel_symbol (passes/symbols.py):
// plain names are kept, others become `tm_` + an escaped spelling.
//
// The injection attempt compiles to an HSACO (llvm-mc accepts the assembly),
// its ISA kept by --save-temps=DIR (DIR/symbol-names.s; stdin.s for '-'):
// RUN: rm -rf %t %t.space && tile-compile %s --target amdgpu:gfx942 --emit hsaco -o %t.hsaco --save-temps=%t
// RUN: filecheck %s --input-file %t/symbol-names.s
// CHECK-NOT: injected_global = 1
// CHECK: .amdhsa_kernel tm_k_28_29_7b_7d_0aint_20injected__global_20_3d_201_3b_0avoid_20z__kernel0
// CHECK-NOT: injected_global = 1
// CHECK: .name: tm_k_28_29_7b_7d_0aint_20injected__global_20_3d_201_3b_0avoid_20z__kernel0
//
// A name with a space:
// RUN: sed 's/k(){}\\0Aint injected_global = 1;\\0Avoid z/my kernel/' %s | tile-compile - --target amdgpu:gfx942 --emit hsaco -o %t.space.hsaco --save-temps=%t.space
// RUN: filecheck %s --check-prefix=SPACE --input-file %t.space/stdin.s
// SPACE: .amdhsa_kernel tm_my_20kernel__kernel0
//
// A plain name is kept:
// RUN: sed 's/"k(){}\\0Aint injected_global = 1;\\0Avoid z"/gemm/' %s | tile-compile - --target amdgpu:gfx942 --emit gpu | filecheck %s --check-prefix=PLAIN
// PLAIN: gpu.launch_func @gemm_kernels::@gemm_kernel0
// PLAIN: gpu.module @gemm_kernels
// PLAIN: gpu.func @gemm_kernel0

func.func @"k(){}\0Aint injected_global = 1;\0Avoid z"(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  "tile.fill"(%C, %zero) : (memref<64x64xf32>, f32) -> ()
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf32>) -> ()
  return
}
