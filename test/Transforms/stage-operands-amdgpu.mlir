// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 -p 'tile-select-mma,tile-stage-operands' | filecheck %s
// RUN: sed s/f8E4M3FNUZ/f8E4M3FN/g %s | tile-opt - --split-input-file --verify-diagnostics --target=amdgpu:gfx950 -p 'tile-select-mma,tile-stage-operands' | filecheck %s

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// f16 P on 4 waves of 32 rows: the MFMAs on S issued transposed leave a lane
// one row of S and runs of four columns, which the next MFMA reads as its A
// (on gfx950 its 8 K per lane are two such runs, B read alike).
// CHECK-LABEL: func.func @p_in_registers
// CHECK-NOT: (memref<128x64xf16, #gpu.address_space<private>>, memref<128x64xf16, #gpu.address_space<workgroup>>)
// CHECK: "tile.gemm"({{.*}}tile.warp_grid = array<i64: 4, 1>{{.*}} : (memref<128x64xf16, #gpu.address_space<private>>
func.func @p_in_registers(%Q: memref<128x64xf16>, %V: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %q = "tile.alloc_shared"() : () -> memref<128x64xf16, #S>
    %k = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %s = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    %p = "tile.alloc_fragment"() : () -> memref<128x64xf16, #F>
    %o = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    "tile.copy"(%Q, %q, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x64xf16>, memref<128x64xf16, #S>, index, index) -> ()
    "tile.copy"(%V, %k, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<64x64xf16, #S>, index, index) -> ()
    "tile.gemm"(%q, %k, %s) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<128x64xf16, #S>, memref<64x64xf16, #S>, memref<128x64xf32, #F>) -> ()
    "tile.copy"(%s, %p) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<128x64xf32, #F>, memref<128x64xf16, #F>) -> ()
    // expected-remark@below {{tile-stage-operands: gemm operand A stays in registers}}
    "tile.gemm"(%p, %k, %o) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x64xf16, #F>, memref<64x64xf16, #S>, memref<128x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// 8-bit P: a lane's runs of four columns would be 32-bit LDS reads of B (and
// no LDS transpose read of 8-bit elements takes them), so P is staged through
// shared memory, copied right before the gemm.
// CHECK-LABEL: func.func @fp8_p_staged
// CHECK: %[[STAGED:.+]] = "tile.alloc_shared"() : () -> memref<128x64x[[FP8:.+]], #gpu.address_space<workgroup>>
// CHECK: "tile.copy"(%{{.+}}, %[[STAGED]])
// CHECK-NEXT: "tile.gemm"(%[[STAGED]],
func.func @fp8_p_staged(%Q: memref<128x64xf8E4M3FNUZ>, %V: memref<64x64xf8E4M3FNUZ>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %q = "tile.alloc_shared"() : () -> memref<128x64xf8E4M3FNUZ, #S>
    %k = "tile.alloc_shared"() : () -> memref<64x64xf8E4M3FNUZ, #S>
    %s = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    %p = "tile.alloc_fragment"() : () -> memref<128x64xf8E4M3FNUZ, #F>
    %o = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    "tile.copy"(%Q, %q, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x64xf8E4M3FNUZ>, memref<128x64xf8E4M3FNUZ, #S>, index, index) -> ()
    "tile.copy"(%V, %k, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf8E4M3FNUZ>, memref<64x64xf8E4M3FNUZ, #S>, index, index) -> ()
    "tile.gemm"(%q, %k, %s) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<128x64xf8E4M3FNUZ, #S>, memref<64x64xf8E4M3FNUZ, #S>, memref<128x64xf32, #F>) -> ()
    "tile.copy"(%s, %p) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<128x64xf32, #F>, memref<128x64xf8E4M3FNUZ, #F>) -> ()
    // expected-remark@below {{tile-stage-operands: gemm operand A is held in registers; amdgpu's matrix instructions}}
    "tile.gemm"(%p, %k, %o) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x64xf8E4M3FNUZ, #F>, memref<64x64xf8E4M3FNUZ, #S>, memref<128x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
