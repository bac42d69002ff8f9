// tile-select-mma{prefer=wgmma} where no wgmma fits the gemm (a 32x128
// block over 4 warps: wgmma wants at least 64 rows per warpgroup): the best
// other row is used, and a remark says the preference was given up and why.
// The report's decisions show what was used instead: mma.sync, rows padded
// by 16 bytes, the tiles filled by cp.async.
//
// RUN: tile-compile %s --emit tile --select prefer=wgmma --tiling 'block=32,128,32 threads=128' --verify-diagnostics
// RUN: tile-compile %s --select prefer=wgmma --tiling 'block=32,128,32 threads=128' --report -o /dev/null 2>/dev/null | filecheck %s

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @gemm(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
    // expected-remark@+4 {{'memory.l2_mib' is not publicly known for nvidia:sm_90a: assumed 8, the smallest L2 of the shipped descriptors (metax:xcore1000)}}
    // expected-remark@+3 {{tile-tiling: block 32x128x32, 128 threads}}
    // expected-remark@+2 {{tile-tiling: 16 workgroups leave CUs of sm_90a idle, and split-K is not considered: C holds f16}}
    // expected-remark@+1 {{tile-select-mma: prefer=wgmma given up: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 is used, no wgmma instruction fits this 32x128x32 gemm with 128 threads (wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16: needs the block to be a multiple of 64 rows per group of 4 waves by 256 columns}}
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf16>, memref<256x256xf16>, memref<256x256xf16>) -> ()
    return
  }
}

// CHECK:      "decisions": [
// CHECK:          "instruction": "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
// CHECK:          "lds_bank_conflicts_per_iteration": null,
// CHECK:          "shared_buffers": [
// CHECK:              "stages": 4,
// CHECK:              "padding": 8,
// CHECK:              "swizzle": null,
// CHECK:              "bank_conflicts_per_iteration": null,
// CHECK:              "direct_loads": "cp.async.cg",
