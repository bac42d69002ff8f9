// MLIR's expected-* syntax: same line, @below, @above, @+N, @-N, {{substring}}.
// RUN: tile-opt %s --split-input-file --verify-diagnostics

func.func @below(%A: memref<8x8xf16>, %C: memref<8x8xf16>) {
  // expected-error@below {{too narrow}}
  "tile.gemm"(%A, %A, %C) {accum_dtype = f16, transpose_a = false, transpose_b = false} : (memref<8x8xf16>, memref<8x8xf16>, memref<8x8xf16>) -> ()
  return
}

// -----

func.func @above(%A: memref<8x8xf16>, %C: memref<8x8xf16>) {
  "tile.gemm"(%A, %A, %C) {accum_dtype = f16, transpose_a = false, transpose_b = false} : (memref<8x8xf16>, memref<8x8xf16>, memref<8x8xf16>) -> ()
  // expected-error@above {{accum_dtype f16 is too narrow}}
  return
}

// -----

func.func @relative(%A: memref<8x8xf16>, %C: memref<8x8xf16>) {
  // expected-error@+3 {{too narrow}}

  // (a blank line and this comment in between)
  "tile.gemm"(%A, %A, %C) {accum_dtype = f16, transpose_a = false, transpose_b = false} : (memref<8x8xf16>, memref<8x8xf16>, memref<8x8xf16>) -> ()
  "tile.gemm"(%A, %A, %C) {accum_dtype = f16, transpose_a = false, transpose_b = false} : (memref<8x8xf16>, memref<8x8xf16>, memref<8x8xf16>) -> ()

  // expected-error@-2 {{use f32}}
  return
}

// -----

func.func @same_line(%A: memref<8x8xf16>, %C: memref<8x8xf16>) {
  "tile.gemm"(%A, %A, %C) {accum_dtype = f16, transpose_a = false, transpose_b = false} : (memref<8x8xf16>, memref<8x8xf16>, memref<8x8xf16>) -> () // expected-error {{too narrow}}
  return
}

// -----

// Parse errors are matched too.
func.func @parse_error() {
  // expected-error@below {{expected SSA operand}}
  %0 = arith.addi : i32
  return
}
