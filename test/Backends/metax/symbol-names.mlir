// Names in the MACA C++ are identifiers whatever the source function is
// called: the kernel (named by tile-lower-to-gpu through kernel_symbol) and
// the host launcher (the emitter applies kernel_symbol to the host function's
// name), everywhere they appear, comments included. Pasted verbatim, this name
// used to add a global variable to the C++.
//
// RUN: tile-compile %s --target metax:xcore1000 --emit maca | filecheck %s
// CHECK-NOT: injected_global = 1
// CHECK: // kernel tm_k_28_29_7b_7d_0aint_20injected__global_20_3d_201_3b_0avoid_20z__kernel0: 256 threads;
// CHECK-NEXT: extern "C" __global__ __launch_bounds__(256) void tm_k_28_29_7b_7d_0aint_20injected__global_20_3d_201_3b_0avoid_20z__kernel0(
// CHECK-NOT: injected_global = 1
// CHECK: extern "C" int tm_k_28_29_7b_7d_0aint_20injected__global_20_3d_201_3b_0avoid_20z(tm_f16* host0, tm_f16* host1, float* host2) {
// CHECK: TM_CHECK(mcLaunchKernel(TM_KERNEL(::tm_k_28_29_7b_7d_0aint_20injected__global_20_3d_201_3b_0avoid_20z__kernel0),
// CHECK-NOT: injected_global = 1
//
// A host function named like a C++ keyword gets a launcher C++ can declare.
// RUN: sed 's/"k(){}\\0Aint injected_global = 1;\\0Avoid z"/int/' %s | tile-compile - --target metax:xcore1000 --emit maca | filecheck %s --check-prefix=KEYWORD
// KEYWORD: void int_kernel0(
// KEYWORD: extern "C" int tm_int(
// KEYWORD: TM_KERNEL(::int_kernel0)
//
// A host function named like the program's entry or a C library function gets
// a launcher of its own name: `main` would replace the program's, `printf`
// would redeclare the C library's.
// RUN: sed 's/"k(){}\\0Aint injected_global = 1;\\0Avoid z"/main/' %s | tile-compile - --target metax:xcore1000 --emit maca | filecheck %s --check-prefix=MAIN
// MAIN: void main_kernel0(
// MAIN: extern "C" int tm_main(
// MAIN: TM_KERNEL(::main_kernel0)
// RUN: sed 's/"k(){}\\0Aint injected_global = 1;\\0Avoid z"/printf/' %s | tile-compile - --target metax:xcore1000 --emit maca | filecheck %s --check-prefix=PRINTF
// PRINTF: extern "C" int tm_printf(

func.func @"k(){}\0Aint injected_global = 1;\0Avoid z"(%A: memref<64x96xf16>, %B: memref<96x200xf16>, %C: memref<64x200xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bM = arith.constant 64 : index
    %bN = arith.constant 64 : index
    %bK = arith.constant 32 : index
    %num_k = arith.constant 3 : index
    %zero = arith.constant 0.0 : f32
    %A_s = "tile.alloc_shared"() : () -> memref<64x32xf16, #gpu.address_space<workgroup>>
    %B_s = "tile.alloc_shared"() : () -> memref<32x64xf16, #gpu.address_space<workgroup>>
    %C_l = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    "tile.fill"(%C_l, %zero) : (memref<64x64xf32, #gpu.address_space<private>>, f32) -> ()
    %row = arith.muli %by, %bM : index
    %col = arith.muli %bx, %bN : index
    scf.for %ko = %c0 to %num_k step %c1 {
      %k = arith.muli %ko, %bK : index
      "tile.copy"(%A, %A_s, %row, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x96xf16>, memref<64x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.copy"(%B, %B_s, %k, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<96x200xf16>, memref<32x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.gemm"(%A_s, %B_s, %C_l) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x32xf16, #gpu.address_space<workgroup>>, memref<32x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
    } {tile.num_stages = 3 : i64}
    "tile.copy"(%C_l, %C, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #gpu.address_space<private>>, memref<64x200xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4, 1>, threads = 256 : i64} : () -> ()
  return
}
