// int8 GEMMs use each chip's instruction: K = 16 on xcore1000 (four MMAs per
// 64-deep block K and 2x2 tile of a wave), K = 32 on xcore1500 (two); the
// operands are packed 8-bit values (an i32, or two).
//
// RUN: tile-compile %s --target metax:xcore1000 --emit maca | filecheck %s --check-prefix=K16
// RUN: tile-compile %s --target metax:xcore1500 --emit maca | filecheck %s --check-prefix=K32

// K16: MMA built-ins per main-loop iteration: 16 x __builtin_mxc_mma_16x16x16i8
// K16: void gemm_kernel0(int8_t* __restrict__ arg0, int8_t* __restrict__ arg1, int32_t* __restrict__ arg2)
// K16: int32_t [[A:v[0-9]+]] = {{v[0-9]+}}[0];
// K16: tm_i32x4 {{v[0-9]+}} = __builtin_mxc_mma_16x16x16i8({{v[0-9]+}}, {{v[0-9]+}}, {{(acc|v)[0-9]+}});
// K16-NOT: 16x16x32i8

// K32: MMA built-ins per main-loop iteration: 8 x __builtin_mxc_mma_16x16x32i8
// K32: tm_i32x2 {{v[0-9]+}} = tm_bitcast<tm_i32x2>({{v[0-9]+}});
// K32: tm_i32x4 {{v[0-9]+}} = __builtin_mxc_mma_16x16x32i8({{v[0-9]+}}, {{v[0-9]+}}, {{(acc|v)[0-9]+}});
// K32-NOT: 16x16x16i8

func.func @gemm(%A: memref<80x128xi8>, %B: memref<128x72xi8>, %C: memref<80x72xi32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bM = arith.constant 64 : index
    %bN = arith.constant 64 : index
    %bK = arith.constant 64 : index
    %num_k = arith.constant 2 : index
    %zero = arith.constant 0 : i32
    %A_s = "tile.alloc_shared"() : () -> memref<64x64xi8, #gpu.address_space<workgroup>>
    %B_s = "tile.alloc_shared"() : () -> memref<64x64xi8, #gpu.address_space<workgroup>>
    %C_l = "tile.alloc_fragment"() : () -> memref<64x64xi32, #gpu.address_space<private>>
    "tile.fill"(%C_l, %zero) : (memref<64x64xi32, #gpu.address_space<private>>, i32) -> ()
    %row = arith.muli %by, %bM : index
    %col = arith.muli %bx, %bN : index
    scf.for %ko = %c0 to %num_k step %c1 {
      %k = arith.muli %ko, %bK : index
      "tile.copy"(%A, %A_s, %row, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<80x128xi8>, memref<64x64xi8, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.copy"(%B, %B_s, %k, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x72xi8>, memref<64x64xi8, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.gemm"(%A_s, %B_s, %C_l) {accum_dtype = i32, transpose_a = false, transpose_b = false} : (memref<64x64xi8, #gpu.address_space<workgroup>>, memref<64x64xi8, #gpu.address_space<workgroup>>, memref<64x64xi32, #gpu.address_space<private>>) -> ()
    } {tile.num_stages = 2 : i64}
    "tile.copy"(%C_l, %C, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xi32, #gpu.address_space<private>>, memref<80x72xi32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 2, 2>, threads = 256 : i64} : () -> ()
  return
}
