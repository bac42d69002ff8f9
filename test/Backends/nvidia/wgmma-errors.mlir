// The warpgroup path's refusals, each at the gemm: operands that TMA cannot
// copy (a global row of 200 bytes is not a 16-byte multiple), and 8-bit
// operands that are not K-major (PTX has no transposed 8-bit wgmma).
//
// RUN: tile-compile %s --emit ptx --tiling "block=128,128,64 threads=256 stages=3" --select prefer=wgmma --split-input-file --verify-diagnostics

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @gemm(%A: memref<256x100xf16>, %B: memref<100x256xf16>, %C: memref<256x256xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
    // expected-remark@+2 {{'memory.l2_mib' is not publicly known for nvidia:sm_90a}}
    // expected-error@below {{a wgmma operand must be filled by TMA in a pipelined K loop}}
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x100xf16>, memref<100x256xf16>, memref<256x256xf16>) -> ()
    return
  }
}

// -----

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @gemm(%A: memref<256x256xf8E4M3FN>, %B: memref<256x256xf8E4M3FN>, %C: memref<256x256xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
    // expected-remark@+2 {{'memory.l2_mib' is not publicly known for nvidia:sm_90a}}
    // expected-error@below {{8-bit wgmma reads both operands K-major: A must be M x K (transpose_a = false) and B N x K (transpose_b = true)}}
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf8E4M3FN>, memref<256x256xf8E4M3FN>, memref<256x256xf16>) -> ()
    return
  }
}

// -----

// A strided source is not what a tensor map of the argument describes.
module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @gemm(%A: memref<256x256xf16, strided<[512, 1]>>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
    // expected-remark@+2 {{'memory.l2_mib' is not publicly known for nvidia:sm_90a}}
    // expected-error@below {{a wgmma operand must be filled by TMA in a pipelined K loop}}
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf16, strided<[512, 1]>>, memref<256x256xf16>, memref<256x256xf16>) -> ()
    return
  }
}
