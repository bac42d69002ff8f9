// A hand-written GPU-level kernel for gfx942: one wave computes a 16x16 f32
// tile C = A * B^T with A and B^T in fp8 (E4M3, FNUZ encoding), stepping K by
// 64. Per step each lane loads 16 bytes of A and of B^T from global memory
// (128-bit loads), stores them into LDS, and after a barrier reads two 8-byte
// fragments of each back for two `v_mfma_f32_16x16x32_fp8_fp8`.
//
// Lane layout of the 16x16x32 MFMA (AMD matrix instruction calculator, CDNA3):
// lane l holds A[l % 16][8 * (l / 16) + 0..7], B[8 * (l / 16) + 0..7][l % 16],
// and D[4 * (l / 16) + 0..3][l % 16].
//
// This is the form `tile-lower-to-gpu` produces; tile-compile takes it as is:
//   tile-compile examples/gpu/mfma_fp8_gfx942.mlir --emit isa
module attributes {gpu.container_module, tile.target = "amdgpu:gfx942"} {
  func.func @gemm_16x16(%a: memref<16x1024xf8E4M3FNUZ>, %bt: memref<16x1024xf8E4M3FNUZ>,
                        %c: memref<16x16xf32>) {
    %one = arith.constant 1 : index
    %wave = arith.constant 64 : index
    gpu.launch_func @kernels::@mfma_16x16_fp8 blocks in (%one, %one, %one) threads in (%wave, %one, %one)
        args(%a : memref<16x1024xf8E4M3FNUZ>, %bt : memref<16x1024xf8E4M3FNUZ>, %c : memref<16x16xf32>)
    return
  }

  gpu.module @kernels {
    gpu.func @mfma_16x16_fp8(%a: memref<16x1024xf8E4M3FNUZ>, %bt: memref<16x1024xf8E4M3FNUZ>,
                             %c: memref<16x16xf32>)
        workgroup(%a_lds: memref<16x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>,
                  %b_lds: memref<16x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>)
        kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %k_total = arith.constant 1024 : index
      %zero = arith.constant dense<0.0> : vector<4xf32>
      %lane = gpu.thread_id x
      %row = arith.remui %lane, %c16 : index
      %quad = arith.divui %lane, %c16 : index
      %copy_col = arith.muli %quad, %c16 : index
      %frag_col = arith.muli %quad, %c8 : index
      %frag_col_hi = arith.addi %frag_col, %c32 : index
      %acc = scf.for %k0 = %c0 to %k_total step %c64 iter_args(%d = %zero) -> (vector<4xf32>) {
        // Global -> LDS: lane l copies 16 bytes of row l % 16 at column 16 * (l / 16).
        %gk = arith.addi %k0, %copy_col : index
        %a_g = vector.load %a[%row, %gk] : memref<16x1024xf8E4M3FNUZ>, vector<16xf8E4M3FNUZ>
        %b_g = vector.load %bt[%row, %gk] : memref<16x1024xf8E4M3FNUZ>, vector<16xf8E4M3FNUZ>
        vector.store %a_g, %a_lds[%row, %copy_col] : memref<16x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>, vector<16xf8E4M3FNUZ>
        vector.store %b_g, %b_lds[%row, %copy_col] : memref<16x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>, vector<16xf8E4M3FNUZ>
        gpu.barrier
        // LDS -> registers in the MFMA operand layout, two K halves of 32.
        %a0 = vector.load %a_lds[%row, %frag_col] : memref<16x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>, vector<8xf8E4M3FNUZ>
        %b0 = vector.load %b_lds[%row, %frag_col] : memref<16x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>, vector<8xf8E4M3FNUZ>
        %a1 = vector.load %a_lds[%row, %frag_col_hi] : memref<16x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>, vector<8xf8E4M3FNUZ>
        %b1 = vector.load %b_lds[%row, %frag_col_hi] : memref<16x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>, vector<8xf8E4M3FNUZ>
        %d0 = amdgpu.mfma 16x16x32 %a0 * %b0 + %d blgp = none : vector<8xf8E4M3FNUZ>, vector<8xf8E4M3FNUZ>, vector<4xf32>
        %d1 = amdgpu.mfma 16x16x32 %a1 * %b1 + %d0 blgp = none : vector<8xf8E4M3FNUZ>, vector<8xf8E4M3FNUZ>, vector<4xf32>
        // The next step overwrites the LDS tiles.
        gpu.barrier
        scf.yield %d1 : vector<4xf32>
      }
      // D[4 * (l / 16) + i][l % 16] = acc[i]
      %out_row = arith.muli %quad, %c4 : index
      %r1 = arith.addi %out_row, %c1 : index
      %r2 = arith.addi %out_row, %c2 : index
      %r3 = arith.addi %out_row, %c3 : index
      %v0 = vector.extract %acc[0] : f32 from vector<4xf32>
      %v1 = vector.extract %acc[1] : f32 from vector<4xf32>
      %v2 = vector.extract %acc[2] : f32 from vector<4xf32>
      %v3 = vector.extract %acc[3] : f32 from vector<4xf32>
      memref.store %v0, %c[%out_row, %row] : memref<16x16xf32>
      memref.store %v1, %c[%r1, %row] : memref<16x16xf32>
      memref.store %v2, %c[%r2, %row] : memref<16x16xf32>
      memref.store %v3, %c[%r3, %row] : memref<16x16xf32>
      gpu.return
    }
  }
}
