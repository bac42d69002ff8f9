// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 -p 'tile-pipeline' | filecheck %s

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// A block-sparse loop (TileLang's `if BlockMask[by, bx, k]: T.copy(...);
// T.gemm(...)`): the copies and their index arithmetic move out of the
// condition and are prefetched; the gemm stays under it.
// CHECK-LABEL: func.func @block_sparse
// CHECK: "tile.copy"{{.*}}tile.prefetch
// CHECK: scf.for %[[K:.+]] = 
// CHECK: %[[MASK:.+]] = memref.load %{{.+}}[%[[K]]] : memref<4xi8>
// CHECK: %[[TAKEN:.+]] = arith.cmpi ne, %[[MASK]]
// CHECK: "tile.copy"{{.*}}tile.prefetch
// CHECK-NEXT: scf.if %[[TAKEN]] {
// CHECK-NEXT: "tile.gemm"
// CHECK-NEXT: }
func.func @block_sparse(%A: memref<256x32xf16>, %mask: memref<4xi8>, %C: memref<64x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %z8 = arith.constant 0 : i8
    %zero = arith.constant 0.0 : f32
    %a = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    %acc = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    "tile.fill"(%acc, %zero) : (memref<64x64xf32, #F>, f32) -> ()
    scf.for %k = %c0 to %c4 step %c1 {
      %m = memref.load %mask[%k] : memref<4xi8>
      %taken = arith.cmpi ne, %m, %z8 : i8
      // expected-remark@below {{tile-pipeline: the copies under this condition run on every iteration, so that they can be prefetched (a tile the condition skips is loaded and not used)}}
      scf.if %taken {
        %row = arith.muli %k, %c64 : index
        "tile.copy"(%A, %a, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x32xf16>, memref<64x32xf16, #S>, index, index) -> ()
        "tile.gemm"(%a, %a, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<64x32xf16, #S>, memref<64x32xf16, #S>, memref<64x64xf32, #F>) -> ()
      }
    } {tile.num_stages = 2 : i64}
    "tile.copy"(%acc, %C, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #F>, memref<64x64xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// The tile is also read when the condition is false (the last tile the
// condition let in): loading it every iteration would change what that read
// sees, so the copy stays, and the loop cannot be pipelined.
func.func @read_outside_the_condition(%A: memref<256x32xf16>, %mask: memref<4xi8>, %C: memref<64x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %z8 = arith.constant 0 : i8
    %zero = arith.constant 0.0 : f32
    %a = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    %acc = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    "tile.fill"(%acc, %zero) : (memref<64x64xf32, #F>, f32) -> ()
    // expected-error@below {{tile-pipeline: cannot pipeline this loop: it copies nothing into shared memory from global memory}}
    scf.for %k = %c0 to %c4 step %c1 {
      %m = memref.load %mask[%k] : memref<4xi8>
      %taken = arith.cmpi ne, %m, %z8 : i8
      scf.if %taken {
        %row = arith.muli %k, %c64 : index
        "tile.copy"(%A, %a, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x32xf16>, memref<64x32xf16, #S>, index, index) -> ()
      }
      "tile.gemm"(%a, %a, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<64x32xf16, #S>, memref<64x32xf16, #S>, memref<64x64xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    "tile.copy"(%acc, %C, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #F>, memref<64x64xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// The conditional copy's row comes from memory the loop reads (a gather):
// no other iteration's index can be recomputed, so it stays under its
// condition, and the loop is pipelined on its other copy.
// CHECK-LABEL: func.func @gathered_row
// CHECK: scf.for
// CHECK: "tile.copy"{{.*}}tile.prefetch
// CHECK: scf.if
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: arith.muli
// CHECK-NEXT: "tile.copy"
// CHECK-NOT: tile.prefetch
// CHECK: "tile.gemm"
func.func @gathered_row(%A: memref<256x32xf16>, %B: memref<256x32xf16>, %rows: memref<4xi32>, %C: memref<64x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %z32 = arith.constant 0 : i32
    %zero = arith.constant 0.0 : f32
    %a = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    %b = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    %acc = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    "tile.fill"(%acc, %zero) : (memref<64x64xf32, #F>, f32) -> ()
    scf.for %k = %c0 to %c4 step %c1 {
      %row_a = arith.muli %k, %c64 : index
      "tile.copy"(%A, %a, %row_a, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x32xf16>, memref<64x32xf16, #S>, index, index) -> ()
      %r = memref.load %rows[%k] : memref<4xi32>
      %taken = arith.cmpi sge, %r, %z32 : i32
      scf.if %taken {
        %ri = arith.index_cast %r : i32 to index
        %row_b = arith.muli %ri, %c64 : index
        "tile.copy"(%B, %b, %row_b, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x32xf16>, memref<64x32xf16, #S>, index, index) -> ()
        "tile.gemm"(%a, %b, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<64x32xf16, #S>, memref<64x32xf16, #S>, memref<64x64xf32, #F>) -> ()
      }
    } {tile.num_stages = 2 : i64}
    "tile.copy"(%acc, %C, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #F>, memref<64x64xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
