// Kernel names are PTX identifiers whatever the source function is called:
// LLVM's NVPTX printer aborted the compiler ("Symbol name with unsupported
// characters") on any other. tile-lower-to-gpu names the gpu.module and
// gpu.func through kernel_symbol (passes/symbols.py).
//
// RUN: tile-compile %s --emit ptx | filecheck %s
// CHECK-NOT: injected_global = 1
// CHECK: .visible .entry tm_k_28_29_7b_7d_0aint_20injected__global_20_3d_201_3b_0avoid_20z__kernel0(
// CHECK-NOT: injected_global = 1
//
// The launch metadata names the kernel as the PTX does; the entry keeps its source name.
// RUN: tile-compile %s --emit ptx --report -o /dev/null | filecheck %s --check-prefix=REPORT
// REPORT: "entry": "k(){}\nint injected_global = 1;\nvoid z"
// REPORT: "kernel": "tm_k_28_29_7b_7d_0aint_20injected__global_20_3d_201_3b_0avoid_20z__kernel0"
//
// RUN: sed 's/k(){}\\0Aint injected_global = 1;\\0Avoid z/my kernel/' %s | tile-compile - --emit ptx | filecheck %s --check-prefix=SPACE
// SPACE: .visible .entry tm_my_20kernel__kernel0(

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @"k(){}\0Aint injected_global = 1;\0Avoid z"(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf32>) {
    %zero = arith.constant 0.0 : f32
    "tile.fill"(%C, %zero) : (memref<64x64xf32>, f32) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf32>) -> ()
    return
  }
}
