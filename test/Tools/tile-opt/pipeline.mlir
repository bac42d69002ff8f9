// Tile passes and upstream passes in one pipeline, with nested anchors.
// RUN: tile-opt %s -p 'builtin.module(func.func(canonicalize),tile-verify,cse)' | filecheck %s
// Without the builtin.module anchor.
// RUN: tile-opt %s -p 'tile-verify,canonicalize' | filecheck %s
// A tile pass inside an anchored sub-pipeline.
// RUN: tile-opt %s -p 'builtin.module(func.func(canonicalize,tile-verify,cse))' | filecheck %s
// Per-pass flags, in order, with options.
// RUN: tile-opt %s --tile-verify --canonicalize='max-iterations=3' --cse | filecheck %s
// No pipeline at all: parse, verify, print.
// RUN: tile-opt %s | filecheck %s --check-prefix=NOOPT
// Standard input, as '-' and implicitly.
// RUN: tile-opt - < %s --canonicalize | filecheck %s
// RUN: cat %s | tile-opt --canonicalize | filecheck %s

// CHECK-LABEL: func.func @pipeline
// The duplicated constant is folded away by canonicalize/cse.
// CHECK-COUNT-1: arith.constant 0.000000e+00 : f32
// CHECK-NOT: arith.constant
// CHECK: "tile.fill"
// CHECK: "tile.gemm"
// NOOPT-COUNT-2: arith.constant 0.000000e+00 : f32
func.func @pipeline(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %unused = arith.constant 0.0 : f32
  "tile.fill"(%C, %zero) : (memref<64x64xf32>, f32) -> ()
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf32>) -> ()
  return
}
