// Names tile-lower-to-gpu creates (FUNC_kernels, FUNC_kernelN) step aside for
// symbols the module already has, and for the C++ names of the MetaX host
// launchers: before, a function called @a_kernels made @a's launch refer to
// the wrong module, and @a next to @a_kernel0 was refused in C++.
//
// RUN: tile-compile %s --target amdgpu:gfx942 --emit gpu | filecheck %s
// RUN: tile-compile %s --target metax:xcore1000 --emit maca | filecheck %s --check-prefix=MACA

// CHECK-LABEL: func.func @a(
// CHECK: gpu.launch_func @a_kernels_1::@a_kernel0_1
// CHECK-LABEL: func.func @a_kernels(
// CHECK-LABEL: func.func @a_kernel0(
// CHECK: gpu.launch_func @a_kernel0_kernels::@a_kernel0_kernel0
// CHECK: gpu.module @a_kernels_1
// CHECK: gpu.func @a_kernel0_1(
// CHECK: gpu.module @a_kernel0_kernels
// CHECK: gpu.func @a_kernel0_kernel0(

// MACA: void a_kernel0_1(
// MACA: void a_kernel0_kernel0(
// MACA: extern "C" int a(
// MACA: mcLaunchKernel(TM_KERNEL(::a_kernel0_1)
// MACA: extern "C" int a_kernel0(
// MACA: mcLaunchKernel(TM_KERNEL(::a_kernel0_kernel0)

func.func @a(%A: memref<64x96xf16>, %B: memref<96x200xf16>, %C: memref<64x200xf32>) {
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
func.func @a_kernels(%x: memref<4xf32>) {
  return
}

func.func @a_kernel0(%A: memref<64x96xf16>, %B: memref<96x200xf16>, %C: memref<64x200xf32>) {
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
