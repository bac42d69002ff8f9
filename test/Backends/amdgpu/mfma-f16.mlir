// f16 MFMAs per chip: 16x16x16 exists on gfx90a, gfx942 and gfx950; the
// doubled-K 16x16x32 (full rate on gfx950) only on gfx950.
//
// RUN: tile-compile %s --target amdgpu:gfx90a | filecheck %s --check-prefix=K16
// RUN: tile-compile %s --target amdgpu:gfx942 | filecheck %s --check-prefix=K16
// RUN: sed 's/16x16x16 /16x16x32 /; s/vector<4xf16>/vector<8xf16>/g' %s | tile-compile - --target amdgpu:gfx950 | filecheck %s --check-prefix=K32
// gfx942 has no 16x16x32 f16: upstream's conversion says so at the op.
// RUN: sed 's/16x16x16 /16x16x32 /; s/vector<4xf16>/vector<8xf16>/g' %s | not tile-compile - --target amdgpu:gfx942 2>&1 | filecheck %s --check-prefix=NO-K32

// K16: v_mfma_f32_16x16x16{{_?}}f16
// K32: v_mfma_f32_16x16x32_f16
// NO-K32: <stdin>:{{[0-9]+}}:{{[0-9]+}}: error: 'amdgpu.mfma' op no intrinsic matching MFMA size on given chipset

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @f16_mfma(%a: memref<64x4xf16>, %b: memref<64x4xf16>, %out: memref<64x4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %lane = gpu.thread_id x
      %av = vector.load %a[%lane, %c0] : memref<64x4xf16>, vector<4xf16>
      %bv = vector.load %b[%lane, %c0] : memref<64x4xf16>, vector<4xf16>
      %zero = arith.constant dense<0.0> : vector<4xf32>
      %d = amdgpu.mfma 16x16x16 %av * %bv + %zero blgp = none : vector<4xf16>, vector<4xf16>, vector<4xf32>
      vector.store %d, %out[%lane, %c0] : memref<64x4xf32>, vector<4xf32>
      gpu.return
    }
  }
}
