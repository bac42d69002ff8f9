// Locations print with --mlir-print-debuginfo (as #loc aliases after the module)
// and survive being parsed again: they still point into this file.
// RUN: tile-opt %s --mlir-print-debuginfo | tile-opt - --mlir-print-debuginfo | filecheck %s
// CHECK: "tile.gemm"(%arg0, %arg0, %arg1) {{.*}} loc(#[[LOC:loc[0-9]*]])
// CHECK: #[[LOC]] = loc("{{.*}}debuginfo.mlir":[[# @LINE + 3]]:3)
func.func @f(%A: memref<8x8xf16>, %C: memref<8x8xf32>) {
  %0 = arith.constant 0 : index
  "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<8x8xf16>, memref<8x8xf16>, memref<8x8xf32>) -> ()
  return
}
