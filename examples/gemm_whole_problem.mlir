// The seed article's GEMM in whole-problem form: no kernel, no tiles. The
// compiler chooses block tiles, threads and pipeline stages from the target's
// descriptor (tile-tiling); the zero fill becomes a cleared register accumulator.
//
// C (f16) = A (fp8 e4m3, FNUZ) x B (fp8 e4m3, FNUZ), products summed in f32.
module attributes {tile.target = "amdgpu:gfx942"} {
  func.func @gemm(%A: memref<1024x1024xf8E4M3FNUZ>, %B: memref<1024x1024xf8E4M3FNUZ>,
                  %C: memref<1024x1024xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<1024x1024xf16>, f16) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<1024x1024xf8E4M3FNUZ>, memref<1024x1024xf8E4M3FNUZ>, memref<1024x1024xf16>) -> ()
    return
  }
}
