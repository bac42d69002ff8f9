// RUN: tile-opt %s --split-input-file --verify-diagnostics

// IRDL: every gemm attribute is required.
func.func @missing_attribute(%A: memref<4x4xf16>, %C: memref<4x4xf32>) {
  // expected-error@below {{attribute "transpose_b" is expected but not provided}}
  "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false} : (memref<4x4xf16>, memref<4x4xf16>, memref<4x4xf32>) -> ()
  return
}

// -----

// IRDL: transpose flags are bools, not integers.
func.func @wrong_attribute_kind(%A: memref<4x4xf16>, %C: memref<4x4xf32>) {
  // expected-error@below {{'1 : i32' does not satisfy the constraint}}
  "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = 1 : i32, transpose_b = false} : (memref<4x4xf16>, memref<4x4xf16>, memref<4x4xf32>) -> ()
  return
}

// -----

// IRDL: reduce kinds are sum, max, min, maximum and minimum.
func.func @bad_reduce_kind(%s: memref<4x4xf32, #gpu.address_space<private>>, %d: memref<4xf32, #gpu.address_space<private>>) {
  // expected-error@below {{'"avg"' does not satisfy the constraint}}
  "tile.reduce"(%s, %d) {kind = "avg", dim = 1 : i64, clear = true} : (memref<4x4xf32, #gpu.address_space<private>>, memref<4xf32, #gpu.address_space<private>>) -> ()
  return
}

// -----

// IRDL: fill takes a buffer and a value.
func.func @wrong_operand_count(%A: memref<4x4xf16>) {
  // expected-error@below {{op expects exactly 2 operands, but got 1}}
  "tile.fill"(%A) : (memref<4x4xf16>) -> ()
  return
}

// -----

// IRDL: gemm operands are memrefs.
func.func @operand_not_memref(%x: index, %A: memref<4x4xf16>, %C: memref<4x4xf32>) {
  // expected-error@below {{expected base type 'builtin.memref' but got 'builtin.index'}}
  "tile.gemm"(%x, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (index, memref<4x4xf16>, memref<4x4xf32>) -> ()
  return
}

// -----

// IRDL: copy indices are index values.
func.func @copy_index_type(%A: memref<4x4xf16>, %i: i32) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %s = "tile.alloc_shared"() : () -> memref<2x2xf16, #gpu.address_space<workgroup>>
    // expected-error@below {{expected 'index' but got 'i32'}}
    "tile.copy"(%A, %s, %i, %i) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<4x4xf16>, memref<2x2xf16, #gpu.address_space<workgroup>>, i32, i32) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

// The dialect has no such op.
func.func @unknown_op() {
  // expected-error@below {{unregistered operation 'tile.nosuch' found in dialect ('tile')}}
  "tile.nosuch"() : () -> ()
  return
}

// -----

// IRDL: a kernel needs its grid and threads.
func.func @kernel_missing_threads() {
  // expected-error@below {{attribute "threads" is expected but not provided}}
  "tile.kernel"() ({
  ^bb0(%b: index):
    gpu.yield
  }) {grid = array<i64: 1>} : () -> ()
  return
}
