// RUN: tile-opt %s --split-input-file | filecheck %s
// Round trip: print generic, parse again, same result.
// RUN: tile-opt %s --split-input-file --mlir-print-op-generic | tile-opt --split-input-file | filecheck %s

// The whole-problem GEMM prints exactly in this generic form.
// CHECK-LABEL: func.func @whole_problem_gemm
// CHECK-SAME: (%[[A:.+]]: memref<1024x1024xf8E4M3FNUZ>, %[[B:.+]]: memref<1024x1024xf8E4M3FNUZ>, %[[C:.+]]: memref<1024x1024xf16>)
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f16
// CHECK: "tile.fill"(%[[C]], %[[ZERO]]) : (memref<1024x1024xf16>, f16) -> ()
// CHECK: "tile.gemm"(%[[A]], %[[B]], %[[C]]) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<1024x1024xf8E4M3FNUZ>, memref<1024x1024xf8E4M3FNUZ>, memref<1024x1024xf16>) -> ()
func.func @whole_problem_gemm(%A: memref<1024x1024xf8E4M3FNUZ>, %B: memref<1024x1024xf8E4M3FNUZ>, %C: memref<1024x1024xf16>) {
  %zero = arith.constant 0.0 : f16
  "tile.fill"(%C, %zero) : (memref<1024x1024xf16>, f16) -> ()
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<1024x1024xf8E4M3FNUZ>, memref<1024x1024xf8E4M3FNUZ>, memref<1024x1024xf16>) -> ()
  return
}

// -----

// Every in-kernel op once: alloc_shared, alloc_fragment, fill, copy in both
// directions, gemm with transposed B, reduce, pipelined loop, gpu.yield.
// CHECK-LABEL: func.func @kernel_ops
// CHECK: "tile.kernel"() ({
// CHECK-NEXT: ^bb0(%[[BX:.+]]: index, %[[BY:.+]]: index):
// CHECK: %[[AS:.+]] = "tile.alloc_shared"() : () -> memref<64x32xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[BS:.+]] = "tile.alloc_shared"() : () -> memref<64x32xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[CL:.+]] = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
// CHECK: %[[RL:.+]] = "tile.alloc_fragment"() : () -> memref<64xf32, #gpu.address_space<private>>
// CHECK: "tile.fill"(%[[CL]], %{{.+}}) : (memref<64x64xf32, #gpu.address_space<private>>, f32) -> ()
// CHECK: scf.for
// CHECK: "tile.copy"(%{{.+}}, %[[AS]], %{{.+}}, %{{.+}}) {operandSegmentSizes = array<i32: 1, 1, 2, 0>}
// CHECK: "tile.gemm"(%[[AS]], %[[BS]], %[[CL]]) {accum_dtype = f32, transpose_a = false, transpose_b = true}
// CHECK: } {tile.num_stages = 2 : i64}
// CHECK: "tile.reduce"(%[[CL]], %[[RL]]) {clear = true, dim = 1 : i64, kind = "max"}
// CHECK: "tile.copy"(%[[CL]], %{{.+}}, %{{.+}}, %{{.+}}) {operandSegmentSizes = array<i32: 1, 1, 0, 2>}
// CHECK: gpu.yield
// CHECK: }) {grid = array<i64: 4, 4>, threads = 256 : i64} : () -> ()
func.func @kernel_ops(%A: memref<256x128xbf16>, %B: memref<256x128xbf16>, %C: memref<256x256xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %a_s = "tile.alloc_shared"() : () -> memref<64x32xbf16, #gpu.address_space<workgroup>>
    %b_s = "tile.alloc_shared"() : () -> memref<64x32xbf16, #gpu.address_space<workgroup>>
    %c_l = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    %r_l = "tile.alloc_fragment"() : () -> memref<64xf32, #gpu.address_space<private>>
    "tile.fill"(%c_l, %zero) : (memref<64x64xf32, #gpu.address_space<private>>, f32) -> ()
    %row = arith.muli %by, %c64 : index
    %col = arith.muli %bx, %c64 : index
    scf.for %ko = %c0 to %c4 step %c1 {
      %k = arith.muli %ko, %c32 : index
      "tile.copy"(%A, %a_s, %row, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x128xbf16>, memref<64x32xbf16, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.copy"(%B, %b_s, %col, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x128xbf16>, memref<64x32xbf16, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.gemm"(%a_s, %b_s, %c_l) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<64x32xbf16, #gpu.address_space<workgroup>>, memref<64x32xbf16, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
    } {tile.num_stages = 2 : i64}
    "tile.reduce"(%c_l, %r_l) {kind = "max", dim = 1 : i64, clear = true} : (memref<64x64xf32, #gpu.address_space<private>>, memref<64xf32, #gpu.address_space<private>>) -> ()
    "tile.copy"(%c_l, %C, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #gpu.address_space<private>>, memref<256x256xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4, 4>, threads = 256 : i64} : () -> ()
  return
}

// -----

// Integer GEMM: i8 inputs, i32 accumulator; 1-D and 3-D grids.
// CHECK-LABEL: func.func @int8_gemm
// CHECK: "tile.gemm"(%{{.+}}, %{{.+}}, %{{.+}}) {accum_dtype = i32, transpose_a = true, transpose_b = false}
// CHECK: {grid = array<i64: 16>, threads = 64 : i64}
// CHECK: {grid = array<i64: 2, 3, 4>, threads = 128 : i64}
func.func @int8_gemm(%A: memref<64x64xi8>, %B: memref<64x64xi8>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a_s = "tile.alloc_shared"() : () -> memref<32x16xi8, #gpu.address_space<workgroup>>
    %b_f = "tile.alloc_fragment"() : () -> memref<32x16xi8, #gpu.address_space<private>>
    %c_f = "tile.alloc_fragment"() : () -> memref<16x16xi32, #gpu.address_space<private>>
    "tile.gemm"(%a_s, %b_f, %c_f) {accum_dtype = i32, transpose_a = true, transpose_b = false} : (memref<32x16xi8, #gpu.address_space<workgroup>>, memref<32x16xi8, #gpu.address_space<private>>, memref<16x16xi32, #gpu.address_space<private>>) -> ()
    gpu.yield
  }) {grid = array<i64: 16>, threads = 64 : i64} : () -> ()
  "tile.kernel"() ({
  ^bb0(%x: index, %y: index, %z: index):
    gpu.yield
  }) {grid = array<i64: 2, 3, 4>, threads = 128 : i64} : () -> ()
  return
}

// -----

// Every element type of DESIGN section 3 in a tile buffer.
// CHECK-LABEL: func.func @element_types
// CHECK-COUNT-10: "tile.alloc_fragment"
func.func @element_types() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %0 = "tile.alloc_fragment"() : () -> memref<4xf64, #gpu.address_space<private>>
    %1 = "tile.alloc_fragment"() : () -> memref<4xf32, #gpu.address_space<private>>
    %2 = "tile.alloc_fragment"() : () -> memref<4xf16, #gpu.address_space<private>>
    %3 = "tile.alloc_fragment"() : () -> memref<4xbf16, #gpu.address_space<private>>
    %4 = "tile.alloc_fragment"() : () -> memref<4xf8E4M3FN, #gpu.address_space<private>>
    %5 = "tile.alloc_fragment"() : () -> memref<4xf8E5M2, #gpu.address_space<private>>
    %6 = "tile.alloc_fragment"() : () -> memref<4xf8E4M3FNUZ, #gpu.address_space<private>>
    %7 = "tile.alloc_fragment"() : () -> memref<4xf8E5M2FNUZ, #gpu.address_space<private>>
    %8 = "tile.alloc_fragment"() : () -> memref<4xi8, #gpu.address_space<private>>
    %9 = "tile.alloc_fragment"() : () -> memref<4xi32, #gpu.address_space<private>>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// Rank-reducing copies: a 2-D tile of a 3-D tensor (its last two dims by
// default), Q[b, rows, h, :] of a 4-D tensor through tile.window, and a
// fragment stored back into a 3-D tensor.
// CHECK-LABEL: func.func @rank_reducing_copies
// CHECK: "tile.copy"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {operandSegmentSizes = array<i32: 1, 1, 3, 0>} : (memref<4x128x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index, index) -> ()
// CHECK: "tile.copy"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {operandSegmentSizes = array<i32: 1, 1, 4, 0>, tile.window = array<i64: 1, 3>} : (memref<2x128x8x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index, index, index) -> ()
// CHECK: "tile.copy"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {operandSegmentSizes = array<i32: 1, 1, 0, 3>} : (memref<64x64xf32, #gpu.address_space<private>>, memref<4x128x64xf32>, index, index, index) -> ()
func.func @rank_reducing_copies(%A: memref<4x128x64xf16>, %Q: memref<2x128x8x64xf16>, %O: memref<4x128x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %a = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %q = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %o = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    "tile.copy"(%A, %a, %b, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 3, 0>} : (memref<4x128x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index, index) -> ()
    "tile.copy"(%Q, %q, %c0, %c0, %b, %c0) {operandSegmentSizes = array<i32: 1, 1, 4, 0>, tile.window = array<i64: 1, 3>} : (memref<2x128x8x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index, index, index) -> ()
    "tile.copy"(%o, %O, %b, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 3>} : (memref<64x64xf32, #gpu.address_space<private>>, memref<4x128x64xf32>, index, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 4>, threads = 64 : i64} : () -> ()
  return
}
