// RUN: tile-opt %s --target=amdgpu:gfx942 --tile-pipeline | filecheck %s

// One stage where the loop cannot be pipelined (its buffer is also filled
// after the loop): no error, the loop stays as written, one buffer, no prefetch.
#S = #gpu.address_space<workgroup>
// CHECK-LABEL: func.func @used_after
// CHECK: "tile.alloc_shared"() : () -> memref<16x16xf16, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK-NOT: tile.prefetch
// CHECK: } {tile.num_stages = 1 : i64}
func.func @used_after(%A: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %a = "tile.alloc_shared"() : () -> memref<16x16xf16, #S>
    scf.for %ko = %c0 to %c4 step %c1 {
      "tile.copy"(%A, %a, %ko, %ko) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<16x16xf16, #S>, index, index) -> ()
    } {tile.num_stages = 1 : i64}
    %z = arith.constant 0.0 : f16
    "tile.fill"(%a, %z) : (memref<16x16xf16, #S>, f16) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}
