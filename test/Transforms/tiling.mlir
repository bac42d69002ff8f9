// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx942 --tile-tiling | filecheck %s
// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx942 -p 'tile-tiling{block=64,64,32 threads=128 stages=3}' | filecheck %s --check-prefix=OPTS
// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx942 -p 'tile-tiling{split-k=1}' | filecheck %s --check-prefix=ONE

// The seed's whole-problem GEMM: the cost model takes 64x128 blocks (128
// workgroups on 304 CUs; each wave's loop also pays the family's measured
// issue clocks, Backend.loop_issue_clocks, so K steps of 128 fp8, twice the
// 64-byte rule's, halve how often), 4 waves, 2 stages, zero fill absorbed;
// the kernel says the model chose it.
// CHECK-LABEL: func.func @whole
// CHECK-NOT: "tile.fill"(%arg2
// CHECK: "tile.kernel"() ({
// CHECK-NEXT: ^bb0(%[[BX:.+]]: index, %[[BY:.+]]: index):
// CHECK: %[[AS:.+]] = "tile.alloc_shared"() : () -> memref<64x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>
// CHECK: %[[BS:.+]] = "tile.alloc_shared"() : () -> memref<128x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>
// CHECK: %[[ACC:.+]] = "tile.alloc_fragment"() : () -> memref<64x128xf32, #gpu.address_space<private>>
// CHECK: "tile.fill"(%[[ACC]], %{{.+}}) : (memref<64x128xf32, #gpu.address_space<private>>, f32)
// CHECK: scf.for %[[KO:.+]] = %{{.+}} to %[[NK:.+]] step
// CHECK: "tile.copy"(%arg0, %[[AS]], {{.*}}tile.in_bounds
// CHECK: "tile.copy"(%arg1, %[[BS]], {{.*}}tile.in_bounds
// CHECK: "tile.gemm"(%[[AS]], %[[BS]], %[[ACC]]) {accum_dtype = f32, transpose_a = false, transpose_b = false}
// CHECK: } {tile.num_stages = 2 : i64}
// The block divides 1024: every window is inside, and the copies say so.
// CHECK: "tile.copy"(%[[ACC]], %arg2, %{{.+}}, %{{.+}}) {operandSegmentSizes = array<i32: 1, 1, 0, 2>, tile.in_bounds}
// CHECK: }) {grid = array<i64: 8, 16>, threads = 256 : i64, tile.tiling = {predicted_seconds = {{.+}} : f64, source = "model", split_k = 1 : i64}}
// OPTS-LABEL: func.func @whole
// OPTS: memref<64x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>
// OPTS: } {tile.num_stages = 3 : i64}
// OPTS: {grid = array<i64: 16, 16>, threads = 128 : i64, tile.tiling = {predicted_seconds = {{.+}} : f64, source = "user", split_k = 1 : i64}}
func.func @whole(%A: memref<1024x1024xf8E4M3FNUZ>, %B: memref<1024x1024xf8E4M3FNUZ>, %C: memref<1024x1024xf16>) {
  %zero = arith.constant 0.0 : f16
  "tile.fill"(%C, %zero) : (memref<1024x1024xf16>, f16) -> ()
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<1024x1024xf8E4M3FNUZ>, memref<1024x1024xf8E4M3FNUZ>, memref<1024x1024xf16>) -> ()
  return
}

// -----

// No fill: C += A*B. A non-multiple shape gets ceil-div grids. The model
// splits K = 96 in two (C holds the accumulator type, f32): 7 x 1 blocks of
// 64x32 (200 -> 7 along x, 64 -> 1 along y) times 2 slices, each one K step
// and adding its sum into C atomically (its loop's issue clocks weigh more
// than an atomic epilogue on 14 workgroups).
// CHECK-LABEL: func.func @accumulate_transposed
// CHECK: "tile.alloc_fragment"() : () -> memref<64x32xf32, #gpu.address_space<private>>
// CHECK: "tile.fill"
// CHECK: transpose_b = true
// CHECK: "tile.copy"(%{{.+}}, %arg2, %{{.+}}, %{{.+}}) {operandSegmentSizes = array<i32: 1, 1, 0, 2>, tile.atomic_add}
// CHECK: {grid = array<i64: 7, 1, 2>, threads = {{.+}} : i64, tile.tiling = {{{.+}} source = "model", split_k = 2
// Without split-K the accumulator starts from C's tile, and transposed B is
// staged N x K: 64x64 blocks.
// ONE-LABEL: func.func @accumulate_transposed
// ONE: "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
// 200 is no multiple of 64: no in-bounds promise on C's windows.
// ONE: "tile.copy"(%arg2, %{{.+}}, %{{.+}}, %{{.+}}) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x200xf32>, memref<64x64xf32, #gpu.address_space<private>>
// ONE: transpose_b = true
// ONE: {grid = array<i64: 4, 1>, threads = {{.+}} : i64, tile.tiling = {{{.+}} source = "user", split_k = 1
func.func @accumulate_transposed(%A: memref<64x96xf16>, %B: memref<200x96xf16>, %C: memref<64x200xf32>) {
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<64x96xf16>, memref<200x96xf16>, memref<64x200xf32>) -> ()
  return
}
