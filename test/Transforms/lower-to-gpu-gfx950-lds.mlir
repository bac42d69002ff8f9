// gfx950's 160 KiB LDS: 256 KiB is over it, with gfx950's number in the message.
// RUN: tile-opt %s --verify-diagnostics --target=amdgpu:gfx950 --tile-lower-to-gpu

#S = #gpu.address_space<workgroup>
func.func @lds_over_budget() {
  // expected-error@below {{tile-lower-to-gpu: this kernel needs 262144 bytes of LDS, gfx950 allows 163840}}
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<512x128xf32, #S>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
