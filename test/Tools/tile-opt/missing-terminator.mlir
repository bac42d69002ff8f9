// A tile.kernel body without its gpu.yield: MLIR's "block with no terminator"
// gets a note saying what to add.
//
// RUN: not tile-opt %s 2>&1 | filecheck %s

// CHECK: missing-terminator.mlir:11:11: error: block with no terminator
// CHECK: note: end the block with its terminator: `gpu.yield` for a tile.kernel body
func.func @f() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}
