// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 -p "tile-verify{allow-narrow-accumulator=true},tile-tiling,tile-legalize-precision"

// OCP E4M3 on gfx942 would saturate above 240: rejected, saying how to fix it.
func.func @ocp_on_gfx942(%A: memref<256x256xf8E4M3FN>, %C: memref<256x256xf32>) {
  // expected-error@below {{tile-legalize-precision: f8E4M3FN is the OCP fp8 encoding, but amdgpu:gfx942's matrix unit reads f8E4M3FNUZ (FNUZ; E4M3FNUZ ends at 240 where OCP E4M3 reaches 448, so converting could saturate); convert the input to f8E4M3FNUZ yourself, or compute exactly in f16 with tile-legalize-precision{fp8-fallback=f16}}}
  "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf8E4M3FN>, memref<256x256xf8E4M3FN>, memref<256x256xf32>) -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// Low-precision accumulation (accepted by tile-verify's option) is refused here too.
func.func @narrow_accumulator() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %a = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf16, #F>
    // expected-error@below {{tile-legalize-precision: accumulating in f16 loses precision; use accum_dtype = f32 (or allow-narrow-accumulator=true)}}
    "tile.gemm"(%a, %a, %c) {accum_dtype = f16, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf16, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
