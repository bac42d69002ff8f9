// Target-dependent passes need a target: from --target or the module attribute.
// RUN: not tile-opt %s --tile-tiling 2>&1 | filecheck %s
// CHECK: error: tile-tiling: no target: pass --target=FAMILY:NAME (or the pass's target option), or set tile.target = "amdgpu:gfx942" on the module
// RUN: tile-opt %s --tile-tiling --target=amdgpu:gfx950 | filecheck %s --check-prefix=FLAG
// FLAG: "tile.kernel"
func.func @g(%A: memref<64x64xf16>, %C: memref<64x64xf32>) {
  "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf32>) -> ()
  return
}
