// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 --tile-lower-to-gpu

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// Gemms are lowered to the instruction tile-select-mma chose.
func.func @no_instruction() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    %c = "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 32, 32, 8>, kind = "mma_accumulator", warps = array<i64: 2, 2>}} : () -> memref<64x64xf32, #F>
    // expected-error@below {{tile-lower-to-gpu: tile.gemm has no tile.mma (run tile-select-mma)}}
    "tile.gemm"(%a, %a, %c) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<64x32xf16, #S>, memref<64x32xf16, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// A fragment nobody gave a lane layout.
func.func @no_layout() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    // expected-error@below {{tile-lower-to-gpu: this fragment has no tile.layout}}
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// T.Parallel over a fragment covers exactly its shape.
func.func @parallel_partial(%C: memref<64x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %a = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    %c = "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 32, 32, 8>, kind = "mma_accumulator", warps = array<i64: 2, 2>}} : () -> memref<64x64xf32, #F>
    scf.parallel (%i, %j) = (%c0, %c0) to (%c32, %c64) step (%c1, %c1) {
      // expected-error@below {{tile-lower-to-gpu: this T.Parallel indexes a fragment but runs over none: index a fragment by all of the loop's induction variables, in order, over its whole shape}}
      %v = memref.load %c[%i, %j] : memref<64x64xf32, #F>
      memref.store %v, %C[%i, %j] : memref<64x64xf32>
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// Copies between memory buffers go through registers in 1-D or 2-D windows.
func.func @three_dimensional_window() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<2x4x64xf32, #S>
    %c = "tile.alloc_shared"() : () -> memref<2x4x64xf32, #S>
    // expected-error@below {{tile-lower-to-gpu: a copy between memory buffers whose window has 3 dims is not supported (1 or 2)}}
    "tile.copy"(%a, %c) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<2x4x64xf32, #S>, memref<2x4x64xf32, #S>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// 2 x 256x128 f32 tiles = 262144 bytes of LDS: an error with the numbers, not a crash at run time.
func.func @lds_over_budget() {
  // expected-error@below {{tile-lower-to-gpu: this kernel needs 262144 bytes of LDS, gfx942 allows 65536}}
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<256x128xf32, #S>
    %c = "tile.alloc_shared"() : () -> memref<256x128xf32, #S>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

// More threads than a workgroup may have.
func.func @too_many_threads() {
  // expected-error@below {{tile-lower-to-gpu: this kernel has 2048 threads, gfx942 allows 1024 per workgroup}}
  "tile.kernel"() ({
  ^bb0(%b: index):
    gpu.yield
  }) {grid = array<i64: 1>, threads = 2048 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// A tile.cast records the conversion tile-legalize-precision saw; one the
// copy's element types contradict (stale, or written by hand) is refused.
func.func @stale_cast(%A: memref<64x32xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %a = "tile.alloc_shared"() : () -> memref<64x32xf16, #S>
    // expected-error@below {{tile-lower-to-gpu: tile.cast converts f32 to f16, but this copy's element types are f16 and f16}}
    "tile.copy"(%A, %a, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>, tile.cast = {from = f32, rounding = "nearest_even", to = f16}} : (memref<64x32xf16>, memref<64x32xf16, #S>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
