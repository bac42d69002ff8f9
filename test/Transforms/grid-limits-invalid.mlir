// Grids the hardware cannot launch are refused with the limit and its source.
// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=nvidia:sm_90a -p 'tile-tiling,tile-lower-to-gpu'
// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 -p 'tile-tiling,tile-lower-to-gpu'
// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=metax:xcore1000 -p 'tile-tiling,tile-lower-to-gpu'

// 2^24 blocks along y: over the 65535 every target allows there.
func.func @grid_y_too_large() {
  // expected-error@below {{tile-lower-to-gpu: this kernel's grid is too large: 16777216 blocks along y}}
  "tile.kernel"() ({
  ^bb0(%x: index, %y: index):
    gpu.yield
  }) {grid = array<i64: 1, 16777216>, threads = 256 : i64} : () -> ()
  return
}

// -----

// A 2^31-row GEMM in 128-row blocks needs 2^24 blocks along y.
func.func @gemm_too_many_rows(%A: memref<2147483648x64xf16>, %B: memref<64x128xf16>, %C: memref<2147483648x128xf32>) {
  // expected-error@below {{tile-tiling: a 2147483648x128 C in 128x128 blocks needs a grid of 1x16777216 blocks (x: N, y: M): 16777216 blocks along y}}
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<2147483648x64xf16>, memref<64x128xf16>, memref<2147483648x128xf32>) -> ()
  return
}
