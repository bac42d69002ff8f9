// Verifier errors in ops that MLIR verifies in parallel (isolated from above)
// reach the diagnostic handler cleanly: tilemlir's contexts are single-threaded,
// since a Python handler called from an MLIR worker thread aborts the process.
// The input is the fuzz test's mutant that found it (a gpu.func left outside
// its gpu.module by a misplaced brace).
// RUN: not tile-opt %S/Inputs/fuzz-verifier-thread.mlir -p 'builtin.module(func.func(canonicalize,tile-verify))' 2>&1 | filecheck %s
// CHECK: fuzz-verifier-thread.mlir:62:5: error: 'gpu.func' op expects parent op 'gpu.module'
// RUN: not tile-opt %s 2>&1 | filecheck %s --check-prefix=SMALL
// SMALL: parallel-verifier.mlir:[[# @LINE + 7]]:1: error: 'gpu.func' op expects parent op 'gpu.module'
func.func @a() {
  return
}
func.func @b() {
  return
}
gpu.func @orphan() kernel {
  gpu.return
}
