// Computing an fp8 gemm in f16 keeps the rounding to fp8 a copy from a wider
// type does (the seed's f16 -> OCP e4m3 shared tile on gfx942): the copy still
// fills the fp8 tile, and a copy after it widens that into the f16 tile the
// gemm reads. A copy of fp8 values of the gemm's own type is exact in f16 and
// goes straight to the f16 tile.
// RUN: tile-opt %s --target=amdgpu:gfx942 -p 'tile-legalize-precision{fp8-fallback=f16}' | filecheck %s

!A16 = memref<64x32xf16>
!A8 = memref<32x64xf8E4M3FN>
!sa = memref<64x32xf8E4M3FN, #gpu.address_space<workgroup>>
!sb = memref<32x64xf8E4M3FN, #gpu.address_space<workgroup>>
!acc = memref<64x64xf32, #gpu.address_space<private>>

// CHECK-LABEL: func.func @rounds_then_widens
func.func @rounds_then_widens(%A: !A16, %B: !A8) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    // CHECK-DAG: %[[B16:.+]] = "tile.alloc_shared"() : () -> memref<32x64xf16, #gpu.address_space<workgroup>>
    // CHECK-DAG: %[[A16:.+]] = "tile.alloc_shared"() : () -> memref<64x32xf16, #gpu.address_space<workgroup>>
    // CHECK-DAG: %[[A8:.+]] = "tile.alloc_shared"() : () -> memref<64x32xf8E4M3FN, #gpu.address_space<workgroup>>
    %a = "tile.alloc_shared"() : () -> !sa
    %b = "tile.alloc_shared"() : () -> !sb
    %acc = "tile.alloc_fragment"() : () -> !acc
    // CHECK: "tile.copy"(%{{.+}}, %[[A8]], %{{.+}}, %{{.+}}) {{.*}}tile.cast = {from = f16, rounding = "nearest_even", to = f8E4M3FN}
    // CHECK-NEXT: "tile.copy"(%[[A8]], %[[A16]]) {{.*}}tile.cast = {from = f8E4M3FN, rounding = "nearest_even", to = f16}
    "tile.copy"(%A, %a, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (!A16, !sa, index, index) -> ()
    // CHECK: "tile.copy"(%{{.+}}, %[[B16]], %{{.+}}, %{{.+}}) {{.*}}tile.cast = {from = f8E4M3FN, rounding = "nearest_even", to = f16}
    "tile.copy"(%B, %b, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (!A8, !sb, index, index) -> ()
    // CHECK: "tile.gemm"(%[[A16]], %[[B16]], %{{.+}})
    "tile.gemm"(%a, %b, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (!sa, !sb, !acc) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
