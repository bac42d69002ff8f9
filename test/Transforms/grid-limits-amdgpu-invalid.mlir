// AMD counts a launch in work-items, 32 bits per dimension: 2^24 blocks of 256
// threads along x are 2^32 work-items, one too many (NVIDIA takes this grid).
// RUN: tile-opt %s --verify-diagnostics --target=amdgpu:gfx942 --tile-lower-to-gpu

func.func @grid_x_work_items() {
  // expected-error@below {{tile-lower-to-gpu: this kernel's grid is too large: 16777216 blocks of 256 threads along x are 4294967296 work-items, gfx942 launches at most 4294967295 per dimension (compute.max_work_items_per_dimension of amdgpu:gfx942)}}
  "tile.kernel"() ({
  ^bb0(%x: index):
    gpu.yield
  }) {grid = array<i64: 16777216>, threads = 256 : i64} : () -> ()
  return
}
