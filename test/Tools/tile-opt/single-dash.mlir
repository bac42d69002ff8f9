// mlir-opt's spellings: every long flag with one dash as well as two, and
// per-pass flags (-canonicalize, -tile-verify) as mlir-opt accepts them.
// RUN: tile-opt %s -pass-pipeline='builtin.module(tile-verify,canonicalize)' | filecheck %s
// RUN: tile-opt %s -pass-pipeline 'builtin.module(tile-verify,canonicalize)' | filecheck %s
// RUN: tile-opt %s -canonicalize -tile-verify -o %t && filecheck %s < %t
// RUN: tile-opt %s -canonicalize -o=%t.eq && filecheck %s < %t.eq
// RUN: tile-opt %s -split-input-file -verify-diagnostics -tile-verify
// RUN: tile-opt %s -canonicalize -mlir-print-ir-after-all -o /dev/null 2>&1 | filecheck %s --check-prefix=AFTER
// RUN: tile-opt %s -canonicalize='max-iterations=3' -dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s --check-prefix=DUMP
// --mlir-timing: MLIR's pass timing report, tile passes by name.
// RUN: tile-opt %s -tile-verify -canonicalize -mlir-timing -o /dev/null 2>&1 | filecheck %s --check-prefix=TIMING
// RUN: tile-opt %s --tile-verify --mlir-timing -o /dev/null 2>&1 | filecheck %s --check-prefix=TIMING

// CHECK-LABEL: func.func @single_dash
// CHECK-COUNT-1: arith.constant 0.000000e+00 : f32
// CHECK-NOT: arith.constant
// CHECK: "tile.gemm"
// AFTER: IR Dump After Canonicalizer
// DUMP: builtin.module(canonicalize{{{.*}} max-iterations=3 {{.*}}})
// TIMING: Execution time report
// TIMING: tile-verify
// TIMING: Total
func.func @single_dash(%A: memref<64x64xf16>, %C: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %unused = arith.constant 0.0 : f32
  "tile.fill"(%C, %zero) : (memref<64x64xf32>, f32) -> ()
  "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf32>) -> ()
  return
}
