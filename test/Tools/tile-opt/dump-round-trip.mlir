// --dump-pass-pipeline prints what -p reads back: tile passes keep their
// options, tile passes inside an anchor keep the anchor, upstream passes come
// with every option spelled out. Dump -> -p -> dump is a fixed point, and the
// two runs print the same IR.
// RUN: tile-opt %s -p 'builtin.module(func.func(canonicalize,tile-verify{allow-narrow-accumulator}),tile-tiling{block=64,64,32 stages=2 target=amdgpu:gfx942},cse)' --dump-pass-pipeline -o %t.first.mlir 2> %t.first.dump
// RUN: filecheck %s --check-prefix=DUMP < %t.first.dump
// (xargs hands the dumped pipeline, the line after the header, to -p as one
// argument; tile-tiling's remarks follow it.)
// RUN: grep -A1 '^Pass Manager with pipeline:' %t.first.dump | tail -n 1 | xargs -d '\n' tile-opt %s --dump-pass-pipeline -o %t.second.mlir -p 2> %t.second.dump
// RUN: diff %t.first.dump %t.second.dump
// RUN: diff %t.first.mlir %t.second.mlir
// DUMP: Pass Manager with pipeline:
// DUMP-NEXT: builtin.module(func.func(canonicalize{  max-iterations=10 max-num-rewrites=-1 region-simplify=normal test-convergence=false top-down=true},tile-verify{allow-narrow-accumulator=true}),tile-tiling{block=64,64,32 stages=2 target=amdgpu:gfx942},cse)

// Per-pass flags and --target: the target lands in every pass that takes one,
// so the dump reproduces the run without --target.
// RUN: tile-opt %s --target=amdgpu:gfx942 --tile-verify --tile-tiling='stages=2' --canonicalize --dump-pass-pipeline -o %t.flags.mlir 2> %t.flags.dump
// RUN: filecheck %s --check-prefix=FLAGS < %t.flags.dump
// RUN: grep -A1 '^Pass Manager with pipeline:' %t.flags.dump | tail -n 1 | xargs -d '\n' tile-opt %s -dump-pass-pipeline -o %t.flags2.mlir -pass-pipeline 2> %t.flags2.dump
// RUN: diff %t.flags.dump %t.flags2.dump
// RUN: diff %t.flags.mlir %t.flags2.mlir
// FLAGS: builtin.module(tile-verify,tile-tiling{stages=2 target=amdgpu:gfx942},canonicalize{{{.*}}})
func.func @round_trip(%A: memref<128x128xf16>, %C: memref<128x128xf32>) {
  %zero = arith.constant 0.0 : f32
  "tile.fill"(%C, %zero) : (memref<128x128xf32>, f32) -> ()
  "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x128xf16>, memref<128x128xf16>, memref<128x128xf32>) -> ()
  return
}
