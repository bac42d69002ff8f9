// A missing or an unexpected diagnostic fails --verify-diagnostics and says which.
// RUN: not tile-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 2]]:6: error: expected error "this is never reported" was not produced
func.func @missing() {
  // expected-error@below {{this is never reported}}
  return
}

// -----

// CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 2]]:3: error: unexpected error: tile.gemm: accum_dtype f16 is too narrow
func.func @unexpected(%A: memref<8x8xf16>, %C: memref<8x8xf16>) {
  "tile.gemm"(%A, %A, %C) {accum_dtype = f16, transpose_a = false, transpose_b = false} : (memref<8x8xf16>, memref<8x8xf16>, memref<8x8xf16>) -> ()
  return
}

// -----

// The right message on the wrong line is both unexpected and missing.
// CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 4]]:3: error: unexpected error: {{.*}}too narrow
// CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 2]]:6: error: expected error "too narrow" was not produced
func.func @wrong_line(%A: memref<8x8xf16>, %C: memref<8x8xf16>) {
  // expected-error@+2 {{too narrow}}
  "tile.gemm"(%A, %A, %C) {accum_dtype = f16, transpose_a = false, transpose_b = false} : (memref<8x8xf16>, memref<8x8xf16>, memref<8x8xf16>) -> ()
  return
}
