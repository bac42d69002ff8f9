// RUN: tile-opt %s -p 'tile-pipeline{peel-tail=true}' | filecheck %s
// A pipelined loop around another is not peeled (the tail would hold a copy
// of the inner loop that tile-pipeline did not collect); the inner one is:
// its last iteration runs in a tail after it, inside the outer loop.
// CHECK: scf.for %[[O:.+]] = %c0 to %c4 step
// CHECK: scf.for %{{.+}} = %c0 to %c7 step
// CHECK: } {tile.num_stages = 2 : i64, tile.pipelined = 2 : i64}
// CHECK-NEXT: scf.for %{{.+}} = %c7 to %c8 step
// CHECK: } {tile.num_stages = 2 : i64, tile.pipeline_tail, tile.pipelined = 2 : i64}
// CHECK-NEXT: } {tile.num_stages = 2 : i64, tile.pipelined = 2 : i64}
// CHECK-NOT: scf.for
module attributes {tile.target = "amdgpu:gfx942"} {
  func.func @mixed_precision_gemm(%A: memref<1024x1024xf8E4M3FNUZ>,
                                  %B: memref<1024x1024xf8E4M3FNUZ>,
                                  %C: memref<1024x1024xf16>) {
    "tile.kernel"() ({
    ^bb0(%bx: index, %by: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %block_K = arith.constant 32 : index
      %block_MN = arith.constant 128 : index
      %num_k = arith.constant 32 : index
      %zero = arith.constant 0.0 : f32
      %A_shared = "tile.alloc_shared"() : () -> memref<128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>
      %B_shared = "tile.alloc_shared"() : () -> memref<32x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>
      %C_local = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
      scf.parallel (%i, %j) = (%c0, %c0) to (%block_MN, %block_MN) step (%c1, %c1) {
        memref.store %zero, %C_local[%i, %j] : memref<128x128xf32, #gpu.address_space<private>>
        scf.reduce
      }
      %row = arith.muli %by, %block_MN : index
      %col = arith.muli %bx, %block_MN : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      scf.for %o = %c0 to %c4 step %c1 {
        %ka = arith.muli %o, %block_K : index
        "tile.copy"(%A, %A_shared, %row, %ka) {operandSegmentSizes = array<i32: 1, 1, 2, 0>}
            : (memref<1024x1024xf8E4M3FNUZ>, memref<128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>, index, index) -> ()
        scf.for %ko = %c0 to %c8 step %c1 {
          %k = arith.muli %ko, %block_K : index
          "tile.copy"(%B, %B_shared, %k, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>}
              : (memref<1024x1024xf8E4M3FNUZ>, memref<32x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>, index, index) -> ()
          "tile.gemm"(%A_shared, %B_shared, %C_local) {accum_dtype = f32, transpose_a = false, transpose_b = false}
              : (memref<128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>, memref<32x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
        } {tile.num_stages = 2 : i64}
      } {tile.num_stages = 2 : i64}
      scf.parallel (%i, %j) = (%c0, %c0) to (%block_MN, %block_MN) step (%c1, %c1) {
        %acc = memref.load %C_local[%i, %j] : memref<128x128xf32, #gpu.address_space<private>>
        %out = arith.truncf %acc : f32 to f16
        %gi = arith.addi %row, %i : index
        %gj = arith.addi %col, %j : index
        memref.store %out, %C[%gi, %gj] : memref<1024x1024xf16>
        scf.reduce
      }
      gpu.yield
    }) {grid = array<i64: 8, 8>, threads = 256 : i64} : () -> ()
    return
  }
}
