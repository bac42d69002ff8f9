// --dump-pass-pipeline prints the exact pipeline, which reproduces the run.
// RUN: tile-opt %s -p 'builtin.module(tile-verify,func.func(cse))' --dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s --check-prefix=DUMP
// DUMP: builtin.module(tile-verify,func.func(cse))

// Per-pass flags dump with every option spelled out; pasted back as -p it
// reproduces the run.
// RUN: tile-opt %s --canonicalize --tile-verify --dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s --check-prefix=FLAGS
// FLAGS: builtin.module(canonicalize{  max-iterations=10 max-num-rewrites=-1 region-simplify=normal test-convergence=false top-down=true},tile-verify)
// RUN: tile-opt %s -p 'builtin.module(canonicalize{  max-iterations=10 max-num-rewrites=-1 region-simplify=normal test-convergence=false top-down=true},tile-verify)' | filecheck %s --check-prefix=REPRO
// REPRO: "tile.gemm"

// --mlir-print-ir-after-all names tile passes and upstream passes.
// RUN: tile-opt %s --tile-verify --cse --mlir-print-ir-after-all -o /dev/null 2>&1 | filecheck %s --check-prefix=AFTER
// AFTER: IR Dump After tile-verify
// AFTER: IR Dump After CSE

// --mlir-print-op-generic prints every op generically.
// RUN: tile-opt %s --mlir-print-op-generic | filecheck %s --check-prefix=GENERIC
// GENERIC: "builtin.module"() ({
// GENERIC: "func.func"() <{function_type = (memref<8x8xf16>, memref<8x8xf32>) -> (), sym_name = "f"}>
// GENERIC: "tile.gemm"(%{{.*}}, %{{.*}}, %{{.*}}) {accum_dtype = f32, transpose_a = false, transpose_b = false}
func.func @f(%A: memref<8x8xf16>, %C: memref<8x8xf32>) {
  "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<8x8xf16>, memref<8x8xf16>, memref<8x8xf32>) -> ()
  return
}
