// RUN: tile-opt %s --verify-diagnostics --target=amdgpu:gfx942 --tile-pipeline | FileCheck %s

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// num_stages is a request (TileLang's T.Pipelined): 4 stages x (128x64 + 64x128)
// f16 = 131072 bytes are over gfx942's 65536, so the loop is pipelined with the
// most stages that fit, 2, and a remark says so (over-budget=error refuses:
// pipeline-invalid.mlir).
// CHECK-LABEL: func.func @over_budget
// CHECK: memref<2x128x64xf16, #gpu.address_space<workgroup>>
// CHECK: memref<2x64x128xf16, #gpu.address_space<workgroup>>
// CHECK: tile.pipelined = 2
func.func @over_budget(%A: memref<1024x1024xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %a = "tile.alloc_shared"() : () -> memref<128x64xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<64x128xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #F>
    // expected-remark@below {{tile-pipeline: 4 stages need 131072 bytes of LDS, gfx942 allows 65536: pipelined with 2 stages (65536 bytes) instead; tile-pipeline{over-budget=error} refuses}}
    scf.for %ko = %c0 to %c16 step %c1 {
      "tile.copy"(%A, %a, %b, %ko) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x1024xf16>, memref<128x64xf16, #S>, index, index) -> ()
      "tile.copy"(%A, %bb, %ko, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x1024xf16>, memref<64x128xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x64xf16, #S>, memref<64x128xf16, #S>, memref<128x128xf32, #F>) -> ()
    } {tile.num_stages = 4 : i64}
    gpu.yield
  }) {grid = array<i64: 8>, threads = 256 : i64} : () -> ()
  return
}
