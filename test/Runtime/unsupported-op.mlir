// An op the reference engine does not run is reported at its location before
// anything runs; no traceback.
// RUN: not tile-run %s --entry threads 2>&1 | filecheck %s

// CHECK: unsupported-op.mlir:9:10: error: 'gpu.thread_id' is not supported by the reference engine, which runs tile-level IR (before tile-lower-to-gpu); GPU-level IR runs in the emulator
// CHECK-NEXT: {{^}}  %tid = gpu.thread_id x
// CHECK-NEXT: {{^}}         ^
func.func @threads(%out: memref<4xindex>) {
  %tid = gpu.thread_id x
  %c0 = arith.constant 0 : index
  memref.store %tid, %out[%c0] : memref<4xindex>
  return
}
