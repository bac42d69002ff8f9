// A refused grid names where its limit comes from: the descriptor's
// compute.max_grid, or CUDA's limits where a descriptor says "unknown".
// RUN: not tile-opt %s --target=nvidia:sm_90a -p 'tile-lower-to-gpu' 2>&1 | filecheck %s --check-prefix=KNOWN
// RUN: not tile-opt %s --target=metax:xcore1000 -p 'tile-lower-to-gpu' 2>&1 | filecheck %s --check-prefix=UNKNOWN

// KNOWN: error: tile-lower-to-gpu: this kernel's grid is too large: 16777216 blocks along y, sm_90a launches at most 65535 (compute.max_grid of nvidia:sm_90a)
// UNKNOWN: error: tile-lower-to-gpu: this kernel's grid is too large: 16777216 blocks along y, xcore1000 launches at most 65535 (compute.max_grid is unknown for metax:xcore1000: CUDA's limits assumed)
func.func @grid_y_too_large() {
  "tile.kernel"() ({
  ^bb0(%x: index, %y: index):
    gpu.yield
  }) {grid = array<i64: 1, 16777216>, threads = 256 : i64} : () -> ()
  return
}
