// An out-of-tree lit test of tile IR (docs/testing.md): the kernel verifies and
// prints as written, and the narrow accumulator is refused where expected.
// RUN: tile-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @gemm_f16
// CHECK: "tile.gemm"(%{{.+}}, %{{.+}}, %{{.+}}) {accum_dtype = f32, transpose_a = false, transpose_b = false}
func.func @gemm_f16(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf32>) {
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf32>) -> ()
  return
}

// -----

// f16 products summed in f16 lose precision: tile-verify asks for f32.
func.func @narrow_accumulator(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf16>) {
  // expected-error@below {{accum_dtype f16 is too narrow}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f16, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf16>) -> ()
  return
}
