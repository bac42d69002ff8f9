// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx950 -p "tile-tiling,tile-legalize-precision"

// FNUZ E4M3 on gfx950 (OCP): 16 small encodings would round; refused, with the fixes.
func.func @fnuz_e4m3_on_gfx950(%A: memref<256x256xf8E4M3FNUZ>, %C: memref<256x256xf32>) {
  // expected-error@below {{tile-legalize-precision: f8E4M3FNUZ is the FNUZ fp8 encoding, but amdgpu:gfx950's matrix unit reads f8E4M3FN (OCP), and converting is not exact: 16 of the 256 f8E4M3FNUZ encodings (small values OCP can only hold as coarser subnormals) would round; convert the input to f8E4M3FN yourself, compute exactly in f16 with tile-legalize-precision{fp8-fallback=f16}, or accept the rounding with tile-legalize-precision{allow-fp8-rounding=true}}}
  "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf8E4M3FNUZ>, memref<256x256xf8E4M3FNUZ>, memref<256x256xf32>) -> ()
  return
}

// -----

// FNUZ E5M2 on gfx950: 8 encodings would round; refused.
func.func @fnuz_e5m2_on_gfx950(%A: memref<256x256xf8E5M2FNUZ>, %C: memref<256x256xf32>) {
  // expected-error@below {{f8E5M2FNUZ is the FNUZ fp8 encoding, but amdgpu:gfx950's matrix unit reads f8E5M2 (OCP), and converting is not exact: 8 of the 256 f8E5M2FNUZ encodings}}
  "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf8E5M2FNUZ>, memref<256x256xf8E5M2FNUZ>, memref<256x256xf32>) -> ()
  return
}
