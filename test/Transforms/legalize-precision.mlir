// fp8 encodings per chip: FNUZ on gfx942, OCP on gfx950 (FNUZ rounded only when allowed), f16 on gfx90a (no fp8).
// RUN: tile-opt %s --target=amdgpu:gfx942 -p 'tile-tiling,tile-legalize-precision' | filecheck %s --check-prefix=GFX942
// RUN: tile-opt %s --target=amdgpu:gfx950 -p 'tile-tiling,tile-legalize-precision{allow-fp8-rounding=true}' | filecheck %s --check-prefix=GFX950
// RUN: tile-opt %s --target=amdgpu:gfx90a -p 'tile-tiling,tile-legalize-precision' | filecheck %s --check-prefix=GFX90A
// RUN: tile-opt %s --target=amdgpu:gfx942 -p 'tile-tiling,tile-legalize-precision{fp8-fallback=f16}' | filecheck %s --check-prefix=F16

// GFX942: "tile.alloc_shared"() : () -> memref<{{[0-9]+}}x{{[0-9]+}}xf8E4M3FNUZ
// GFX942-NOT: tile.cast = {from = f8
// GFX942: "tile.copy"({{.*}}) {operandSegmentSizes = array<i32: 1, 1, 0, 2>, tile.cast = {from = f32, rounding = "nearest_even", to = f16}, tile.in_bounds}
// GFX950: "tile.alloc_shared"() : () -> memref<{{[0-9]+}}x{{[0-9]+}}xf8E4M3FN,
// GFX950: "tile.alloc_shared"() : () -> memref<{{[0-9]+}}x{{[0-9]+}}xf8E4M3FN,
// GFX950: "tile.copy"(%arg0, {{.*}}tile.cast = {from = f8E4M3FNUZ, rounding = "nearest_even", to = f8E4M3FN}
// GFX950: "tile.copy"(%arg1, {{.*}}tile.cast = {from = f8E4M3FNUZ, rounding = "nearest_even", to = f8E4M3FN}
// GFX90A: "tile.alloc_shared"() : () -> memref<{{[0-9]+}}x{{[0-9]+}}xf16,
// GFX90A: "tile.copy"(%arg0, {{.*}}tile.cast = {from = f8E4M3FNUZ, rounding = "nearest_even", to = f16}
// F16: "tile.alloc_shared"() : () -> memref<{{[0-9]+}}x{{[0-9]+}}xf16,
func.func @seed(%A: memref<1024x1024xf8E4M3FNUZ>, %B: memref<1024x1024xf8E4M3FNUZ>, %C: memref<1024x1024xf16>) {
  %zero = arith.constant 0.0 : f16
  "tile.fill"(%C, %zero) : (memref<1024x1024xf16>, f16) -> ()
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<1024x1024xf8E4M3FNUZ>, memref<1024x1024xf8E4M3FNUZ>, memref<1024x1024xf16>) -> ()
  return
}
