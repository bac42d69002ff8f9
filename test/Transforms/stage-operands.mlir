// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=nvidia:sm_90a -p 'tile-select-mma,tile-stage-operands' | filecheck %s --check-prefix=NVIDIA
// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx942 -p 'tile-select-mma,tile-stage-operands' 2>/dev/null | filecheck %s --check-prefix=AMDGPU

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// P = cast(S), then O += P V. The waves split along M only and the matrix
// instructions read P from registers: no shared buffer. On NVIDIA, 4 warps of
// 32 rows (mma.sync); on AMD, 2 waves of 64 rows (32x32x8 MFMAs on S issued
// transposed: stage-operands-amdgpu.mlir has the case AMD stages).
// NVIDIA-LABEL: func.func @p_times_v
// NVIDIA: arith.constant 0 : index
// NVIDIA-NEXT: "tile.alloc_shared"
// NVIDIA-NEXT: "tile.alloc_shared"
// NVIDIA-NEXT: "tile.alloc_fragment"
// NVIDIA: "tile.gemm"({{.*}}tile.warp_grid = array<i64: 4, 1>
// NVIDIA: "tile.gemm"({{.*}}tile.warp_grid = array<i64: 4, 1>{{.*}} : (memref<128x128xf16, #gpu.address_space<private>>
// AMDGPU-LABEL: func.func @p_times_v
// AMDGPU-NOT: memref<128x128xf16, #gpu.address_space<workgroup>>
// AMDGPU: "tile.gemm"({{.*}}tile.warp_grid = array<i64: 2, 1>
// AMDGPU: "tile.gemm"({{.*}}tile.warp_grid = array<i64: 2, 1>{{.*}} : (memref<128x128xf16, #gpu.address_space<private>>
func.func @p_times_v(%Q: memref<128x64xf16>, %V: memref<128x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %q = "tile.alloc_shared"() : () -> memref<128x64xf16, #S>
    %v = "tile.alloc_shared"() : () -> memref<128x64xf16, #S>
    %s = "tile.alloc_fragment"() : () -> memref<128x128xf32, #F>
    %p = "tile.alloc_fragment"() : () -> memref<128x128xf16, #F>
    %o = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    "tile.copy"(%Q, %q, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x64xf16>, memref<128x64xf16, #S>, index, index) -> ()
    "tile.copy"(%V, %v, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x64xf16>, memref<128x64xf16, #S>, index, index) -> ()
    "tile.gemm"(%q, %q, %s) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<128x64xf16, #S>, memref<128x64xf16, #S>, memref<128x128xf32, #F>) -> ()
    "tile.copy"(%s, %p) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<128x128xf32, #F>, memref<128x128xf16, #F>) -> ()
    // expected-remark@below {{tile-stage-operands: gemm operand A stays in registers: it is the accumulator of the gemm at}}
    "tile.gemm"(%p, %v, %o) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x128xf16, #F>, memref<128x64xf16, #S>, memref<128x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}
