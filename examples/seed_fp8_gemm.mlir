// The mixed-precision GEMM of the seed article (shared/seeds/000_a52a09f0cfe3e3ac.txt),
// written in the tile dialect. TileLang original, line by line:
//
//   block_M, block_N, block_K = 128, 128, 32
//   A_shared = T.alloc_shared((block_M, block_K), float8_e4m3)
//   B_shared = T.alloc_shared((block_K, block_N), float8_e4m3)
//   C_local  = T.alloc_fragment((block_M, block_N), float32)
//   for i, j in T.Parallel(block_M, block_N): C_local[i, j] = 0
//   for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
//       T.copy(A[by * block_M, ko * block_K], A_shared)
//       T.copy(B[ko * block_K, bx * block_N], B_shared)
//       T.gemm(A_shared, B_shared, C_local, accum_dtype=float32)
//   for i, j in T.Parallel(block_M, block_N):
//       C[by * block_M + i, bx * block_N + j] = T.cast(C_local[i, j], float16)
//
// M = N = K = 1024. FP8 is E4M3 in its FNUZ encoding, the one gfx942's MFMAs take.
module attributes {tile.target = "amdgpu:gfx942"} {
  func.func @mixed_precision_gemm(%A: memref<1024x1024xf8E4M3FNUZ>,
                                  %B: memref<1024x1024xf8E4M3FNUZ>,
                                  %C: memref<1024x1024xf16>) {
    "tile.kernel"() ({
    ^bb0(%bx: index, %by: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %block_K = arith.constant 32 : index
      %block_MN = arith.constant 128 : index
      %num_k = arith.constant 32 : index
      %zero = arith.constant 0.0 : f32
      %A_shared = "tile.alloc_shared"() : () -> memref<128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>
      %B_shared = "tile.alloc_shared"() : () -> memref<32x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>
      %C_local = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
      scf.parallel (%i, %j) = (%c0, %c0) to (%block_MN, %block_MN) step (%c1, %c1) {
        memref.store %zero, %C_local[%i, %j] : memref<128x128xf32, #gpu.address_space<private>>
        scf.reduce
      }
      %row = arith.muli %by, %block_MN : index
      %col = arith.muli %bx, %block_MN : index
      scf.for %ko = %c0 to %num_k step %c1 {
        %k = arith.muli %ko, %block_K : index
        "tile.copy"(%A, %A_shared, %row, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>}
            : (memref<1024x1024xf8E4M3FNUZ>, memref<128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.copy"(%B, %B_shared, %k, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>}
            : (memref<1024x1024xf8E4M3FNUZ>, memref<32x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.gemm"(%A_shared, %B_shared, %C_local) {accum_dtype = f32, transpose_a = false, transpose_b = false}
            : (memref<128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>, memref<32x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 3 : i64}
      scf.parallel (%i, %j) = (%c0, %c0) to (%block_MN, %block_MN) step (%c1, %c1) {
        %acc = memref.load %C_local[%i, %j] : memref<128x128xf32, #gpu.address_space<private>>
        %out = arith.truncf %acc : f32 to f16
        %gi = arith.addi %row, %i : index
        %gj = arith.addi %col, %j : index
        memref.store %out, %C[%gi, %gj] : memref<1024x1024xf16>
        scf.reduce
      }
      gpu.yield
    }) {grid = array<i64: 8, 8>, threads = 256 : i64} : () -> ()
    return
  }
}
