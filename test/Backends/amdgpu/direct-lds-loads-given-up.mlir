// Loads into LDS asked for where they cannot be used: gfx942 loads at most 4
// bytes per lane into LDS (buffer_load_dword), the copies move 16, and B is
// stored transposed (gfx942 has no transpose reads). Both tiles are filled
// through registers, and a remark says why, once per tile.
//
// The block is fixed (the cost model's default is another): 128x128x32 tiles.
// RUN: tile-compile %s --emit gpu --tiling 'block=128,128,32 threads=256' --pass-options 'tile-lower-to-gpu{direct-lds-loads=true}' --verify-diagnostics
// RUN: tile-compile %s --report --tiling 'block=128,128,32 threads=256' --pass-options 'tile-lower-to-gpu{direct-lds-loads=true}' -o /dev/null 2>/dev/null | filecheck %s
// Without the option, nothing is given up and nothing is said (but tile-tiling's choice):
// RUN: tile-compile %s --emit gpu --tiling 'block=128,128,32 threads=256' -o /dev/null 2>&1 | not grep tile-lower-to-gpu

module attributes {tile.target = "amdgpu:gfx942"} {
  func.func @gemm(%A: memref<512x512xf16>, %B: memref<512x512xf16>, %C: memref<512x512xf32>) {
    %zero = arith.constant 0.0 : f32
    "tile.fill"(%C, %zero) : (memref<512x512xf32>, f32) -> ()
    // expected-remark@+5 {{'memory.loaded_latency_clocks' is not publicly known for amdgpu:gfx942: assumed 891, the longest device-memory latency under load of the shipped descriptors (nvidia:sm_90a)}}
    // expected-remark@+4 {{tile-tiling: block 128x128x32, 256 threads}}
    // expected-remark@+3 {{'memory.latency_clocks' is not publicly known for amdgpu:gfx942}}
    // expected-remark@+2 {{not with loads into LDS (direct-lds-loads=true): gfx942 has no load into LDS of 16 bytes per lane (amdgpu.buffer_load_lds: buffer_load_dword)}}
    // expected-remark@+1 {{through registers, not with loads into LDS (direct-lds-loads=true): the tile is stored transposed}}
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<512x512xf16>, memref<512x512xf16>, memref<512x512xf32>) -> ()
    return
  }
}

// CHECK: "shared_buffers": [
// CHECK:     "use": "A of the tile.gemm at
// CHECK:     "direct_loads": false,
// CHECK:     "use": "B of the tile.gemm at
// CHECK:     "transposed": true,
// CHECK:     "direct_loads": false,
