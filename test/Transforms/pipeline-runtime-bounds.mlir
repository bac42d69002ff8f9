// RUN: tile-opt %s --target=amdgpu:gfx942 -p 'tile-pipeline' | filecheck %s
// RUN: tile-opt %s --target=amdgpu:gfx942 -p 'tile-stage-operands,tile-select-mma,tile-infer-layout,tile-pipeline,tile-insert-barriers,tile-lower-to-gpu' | filecheck %s --check-prefix=GPU
// RUN: sed 's/tile.num_stages = 2/tile.num_stages = 3/' %s | tile-opt --target=amdgpu:gfx942 -p 'tile-pipeline' | filecheck %s --check-prefix=THREE

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// A loop bound known only at run time (flash attention's causal loop stops at
// the diagonal) may run zero times: the prologue's copies run only if the loop
// does. A constant positive trip count (test/Transforms/pipeline.mlir) needs
// no guard.
// CHECK-LABEL: func.func @runtime_bound
// CHECK: %[[RUNS:.+]] = arith.cmpi slt, %{{.+}}, %[[UPPER:.+]] : index
// CHECK-NEXT: scf.if %[[RUNS]] {
// CHECK: "tile.copy"{{.*}}tile.prefetch
// CHECK: }
// CHECK: scf.for
// Three stages (no mask) and a trip count not known to fit 32 bits: the
// stages' remainders stay in index arithmetic (test/Transforms/pipeline.mlir
// takes them in 32 bits).
// THREE: scf.for
// THREE: arith.remui %{{.+}}, %{{.+}} : index
// THREE: arith.remui %{{.+}}, %{{.+}} : index
// THREE-NOT: index_castui
// THREE: "tile.gemm"
// GPU-LABEL: gpu.func @runtime_bound_kernel0
// GPU: scf.if
// GPU: vector.load
// GPU: scf.for
func.func @runtime_bound(%A: memref<256x32xf16>, %C: memref<64x64xf32>, %n: index) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %a = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    %acc = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    "tile.fill"(%acc, %zero) : (memref<64x64xf32, #F>, f32) -> ()
    %upper = arith.minui %n, %c4 : index
    scf.for %k = %c0 to %upper step %c1 {
      %row = arith.muli %k, %c64 : index
      "tile.copy"(%A, %a, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x32xf16>, memref<64x32xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %a, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<64x32xf16, #S>, memref<64x32xf16, #S>, memref<64x64xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    "tile.copy"(%acc, %C, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #F>, memref<64x64xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
