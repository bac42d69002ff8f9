// fp8 (e4m3) x fp8 -> f32 accumulate -> f16 out for sm_90a: m16n8k32 mma.sync
// as inline PTX (LLVM 22's nvvm.mma.sync rejects e4m3), operands by ldmatrix on
// an i8 view of the shared tiles; B stored N x K (transpose_b) needs no transpose.
// With B stored K x N the bytes of a B register are not contiguous: plain loads.
//
// RUN: tile-compile %s --emit ptx --select prefer=mma.sync | filecheck %s
// RUN: sed 's/transpose_b = true/transpose_b = false/' %s | tile-compile --emit ptx --select prefer=mma.sync | filecheck %s --check-prefix=KN

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @gemm(%A: memref<256x256xf8E4M3FN>, %B: memref<256x256xf8E4M3FN>, %C: memref<256x256xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<256x256xf8E4M3FN>, memref<256x256xf8E4M3FN>, memref<256x256xf16>) -> ()
    return
  }
}

// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-NOT: ldmatrix.sync.aligned.m8n8.x4.trans
// CHECK: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32
// CHECK: cvt.rn.f16{{(x2)?}}.f32

// KN: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// KN: ld.shared.{{[bu]}}8
// KN: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32
