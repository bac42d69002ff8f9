// tile-select-mma{prefer=...} must name the start of some instruction of the
// target's table: a misspelling is an error, not a silent fallback.
//
// RUN: tile-compile %s --emit tile --select prefer=wgma --verify-diagnostics

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @gemm(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
    // expected-error@below {{tile-select-mma: prefer=wgma starts no instruction name of nvidia:sm_90a (its table has e.g. mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32}}
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf16>, memref<256x256xf16>, memref<256x256xf16>) -> ()
    // (tile-tiling's choice, before tile-select-mma refuses the option.)
    // expected-remark@-2 {{tile-tiling: block}}
    // expected-remark@-3 {{split-K is not considered: C holds f16}}
    // expected-remark@-4 {{'memory.l2_mib' is not publicly known for nvidia:sm_90a: assumed 8, the smallest L2 of the shipped descriptors (metax:xcore1000)}}
    return
  }
}
