// A narrow accumulator is an error by default and accepted when asked for.
// RUN: not tile-opt %s 2>&1 | filecheck %s --check-prefix=DEFAULT
// RUN: tile-opt %s -p 'builtin.module(tile-verify{allow-narrow-accumulator=true})' --mlir-print-op-generic 2>&1 | filecheck %s --check-prefix=ALLOWED

// DEFAULT: verify-options.mlir:[[# @LINE + 4]]:3: error: tile.gemm: accum_dtype f16 is too narrow to accumulate f16 x f16 products; use f32
// ALLOWED-NOT: error
// ALLOWED: "tile.gemm"{{.*}}accum_dtype = f16
func.func @narrow(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf16>) {
  "tile.gemm"(%A, %B, %C) {accum_dtype = f16, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf16>) -> ()
  return
}
