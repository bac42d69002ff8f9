// FP8 GEMM with per-tensor scales as scalar arguments and a dynamic M (up to
// the grid's 4 x 64 rows): C = f16(acc * scale_a * scale_b), the scaling a
// T.Parallel over the accumulator, the tile.copy to C dropping rows past M.
#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
func.func @gemm_scaled(%A: memref<?x96xf8E4M3FNUZ>, %B: memref<96x128xf8E4M3FNUZ>, %C: memref<?x128xf16>, %scale_a: f32, %scale_b: f32) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bM = arith.constant 64 : index
    %bN = arith.constant 64 : index
    %bK = arith.constant 32 : index
    %num_k = arith.constant 3 : index
    %zero = arith.constant 0.0 : f32
    %A_s = "tile.alloc_shared"() : () -> memref<64x32xf8E4M3FNUZ, #S>
    %B_s = "tile.alloc_shared"() : () -> memref<32x64xf8E4M3FNUZ, #S>
    %C_l = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    "tile.fill"(%C_l, %zero) : (memref<64x64xf32, #F>, f32) -> ()
    %row = arith.muli %by, %bM : index
    %col = arith.muli %bx, %bN : index
    scf.for %ko = %c0 to %num_k step %c1 {
      %k = arith.muli %ko, %bK : index
      "tile.copy"(%A, %A_s, %row, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<?x96xf8E4M3FNUZ>, memref<64x32xf8E4M3FNUZ, #S>, index, index) -> ()
      "tile.copy"(%B, %B_s, %k, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<96x128xf8E4M3FNUZ>, memref<32x64xf8E4M3FNUZ, #S>, index, index) -> ()
      "tile.gemm"(%A_s, %B_s, %C_l) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x32xf8E4M3FNUZ, #S>, memref<32x64xf8E4M3FNUZ, #S>, memref<64x64xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    %scale = arith.mulf %scale_a, %scale_b : f32
    scf.parallel (%i, %j) = (%c0, %c0) to (%bM, %bN) step (%c1, %c1) {
      %acc = memref.load %C_l[%i, %j] : memref<64x64xf32, #F>
      %scaled = arith.mulf %acc, %scale : f32
      memref.store %scaled, %C_l[%i, %j] : memref<64x64xf32, #F>
      scf.reduce
    }
    "tile.copy"(%C_l, %C, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #F>, memref<?x128xf16>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 2, 4>, threads = 256 : i64} : () -> ()
  return
}
