// Each chunk is processed on its own; diagnostics point at lines of this file,
// and the good chunks are still printed.
// RUN: not tile-opt %s --split-input-file 2>&1 | filecheck %s

// CHECK: split-input-file.mlir:[[# @LINE + 3]]:3: error: tile.gemm: K of A (8) and K of B (16) differ
// CHECK-NEXT: "tile.gemm"(%A, %B, %C)
func.func @first_chunk_bad(%A: memref<8x8xf16>, %B: memref<16x8xf16>, %C: memref<8x8xf32>) {
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<8x8xf16>, memref<16x8xf16>, memref<8x8xf32>) -> ()
  return
}

// -----

func.func @second_chunk_good() {
  return
}

// -----

// CHECK: split-input-file.mlir:[[# @LINE + 2]]:18: error: expected SSA operand
func.func @third_chunk_parse_error() {
  %0 = arith.addi : i32
  return
}
