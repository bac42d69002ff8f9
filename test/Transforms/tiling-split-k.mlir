// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 --tile-tiling
// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx942 --tile-tiling 2>/dev/null | filecheck %s

// Split-K (issue 20): a 64x128 C is 2 tiles of 64x64 (4 waves each) on gfx942's 304 CUs; with
// C in the accumulator type (f32), K = 4096 is cut into 16 slices, one
// workgroup each (grid z), whose partial sums tile.atomic_add adds into C.
// The zero fill of C becomes a host gpu.memset before the kernel; each slice
// runs 2 of K's 32 blocks of 128, from block 2z.
// CHECK-LABEL: func.func @clears_then_adds
// CHECK: gpu.memset %arg2, %{{.+}} : memref<64x128xf32>, f32
// CHECK-NEXT: "tile.kernel"
// CHECK-NEXT: ^bb0(%{{.+}}: index, %{{.+}}: index, %[[Z:.+]]: index):
// CHECK: "tile.fill"
// CHECK: scf.for %{{.+}} = %c0 to %c2 step %c1
// CHECK: %[[START:.+]] = arith.muli %[[Z]], %c256
// CHECK: arith.addi %[[START]],
// CHECK: "tile.copy"({{.+}}) {operandSegmentSizes = array<i32: 1, 1, 0, 2>, tile.atomic_add, tile.in_bounds}
// CHECK: {grid = array<i64: 2, 1, 16>, threads = 256 : i64, tile.tiling = {predicted_seconds = {{.+}}, source = "model", split_k = 16 : i64}}
func.func @clears_then_adds(%A: memref<64x4096xf16>, %B: memref<4096x128xf16>, %C: memref<64x128xf32>) {
  %zero = arith.constant 0.0 : f32
  "tile.fill"(%C, %zero) : (memref<64x128xf32>, f32) -> ()
  // expected-remark@+3 {{'memory.loaded_latency_clocks' is not publicly known}}
  // expected-remark@+2 {{split-K 16 for this 64x128x4096 f16 x f16 -> f32 (sum in f32) gemm: 32 workgroups on 304 CUs}}
  // expected-remark@+1 {{'memory.latency_clocks' is not publicly known}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x4096xf16>, memref<4096x128xf16>, memref<64x128xf32>) -> ()
  return
}

// -----

// C += A * B: the slices add onto C as it is (no memset), each from a cleared accumulator
// (16 slices of two K steps of 128 i8 in 64x64 blocks: AMD's waves pay issue clocks per
// iteration, more around 16-row MFMAs than around 32-row ones).
// CHECK-LABEL: func.func @adds_onto_c
// CHECK-NOT: gpu.memset
// CHECK: "tile.fill"
// CHECK: tile.atomic_add
// CHECK: split_k = 16 : i64
func.func @adds_onto_c(%A: memref<64x4096xi8>, %B: memref<4096x128xi8>, %C: memref<64x128xi32>) {
  // expected-remark@+3 {{'memory.loaded_latency_clocks' is not publicly known}}
  // expected-remark@+2 {{split-K 16 for this 64x128x4096 i8 x i8 -> i32 (sum in i32) gemm}}
  // expected-remark@+1 {{'memory.latency_clocks' is not publicly known}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = i32, transpose_a = false, transpose_b = false} : (memref<64x4096xi8>, memref<4096x128xi8>, memref<64x128xi32>) -> ()
  return
}

// -----

// An f16 C: each atomic addition would round the partial sums to f16, so
// split-K is not considered, and the remark says why the CUs stay idle.
// CHECK-LABEL: func.func @rounded_c
// CHECK-NOT: tile.atomic_add
// CHECK: split_k = 1 : i64
func.func @rounded_c(%A: memref<64x4096xf16>, %B: memref<4096x128xf16>, %C: memref<64x128xf16>) {
  %zero = arith.constant 0.0 : f16
  "tile.fill"(%C, %zero) : (memref<64x128xf16>, f16) -> ()
  // expected-remark@+4 {{'memory.loaded_latency_clocks' is not publicly known}}
  // expected-remark@+3 {{split-K 1 for this 64x128x4096 f16 x f16 -> f16 (sum in f32) gemm}}
  // expected-remark@+2 {{workgroups leave CUs of gfx942 idle, and split-K is not considered: C holds f16, not the accumulator type f32: the slices' partial sums would be rounded to f16 as they are added into C}}
  // expected-remark@+1 {{'memory.latency_clocks' is not publicly known}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x4096xf16>, memref<4096x128xf16>, memref<64x128xf16>) -> ()
  return
}
