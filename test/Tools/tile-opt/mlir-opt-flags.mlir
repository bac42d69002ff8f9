// mlir-opt's debugging flags, as tile-opt spells them.
// --mlir-print-ir-before-all: the IR before every pass (to stderr), and not after.
// RUN: tile-opt %s --tile-verify --cse --mlir-print-ir-before-all -o /dev/null 2>&1 | filecheck %s --check-prefix=BEFORE
// BEFORE: IR Dump Before tile-verify
// BEFORE: IR Dump Before CSE
// BEFORE-NOT: IR Dump After
// Both at once: before and after each pass, in order.
// RUN: tile-opt %s --cse -mlir-print-ir-before-all -mlir-print-ir-after-all -o /dev/null 2>&1 | filecheck %s --check-prefix=BOTH
// BOTH: IR Dump Before CSE
// BOTH: IR Dump After CSE

// --mlir-disable-threading is accepted (tile-opt always runs MLIR on one thread)
// and changes nothing in the output.
// RUN: tile-opt %s --cse --mlir-disable-threading | filecheck %s

// --show-dialects lists what the context has registered, tile among them.
// RUN: tile-opt --show-dialects | filecheck %s --check-prefix=DIALECTS
// DIALECTS: Available Dialects: {{.*}}amdgpu,{{.*}},arith,{{.*}},gpu,{{.*}},nvvm,{{.*}},rocdl,{{.*}},tile,{{.*}}

// CHECK-LABEL: func.func @f
// CHECK-COUNT-1: arith.constant
// CHECK-NOT: arith.constant
func.func @f(%C: memref<8x8xf32>) {
  %a = arith.constant 0.0 : f32
  %b = arith.constant 0.0 : f32
  "tile.fill"(%C, %a) : (memref<8x8xf32>, f32) -> ()
  "tile.fill"(%C, %b) : (memref<8x8xf32>, f32) -> ()
  return
}
