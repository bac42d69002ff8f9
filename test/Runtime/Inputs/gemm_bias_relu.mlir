// FP8 GEMM with an scf.parallel epilogue: C = f16(relu(acc + bias)), guarded at the edges.
// Written by test/python/kernel_text.py.
func.func @gemm(%A: memref<200x96xf8E4M3FNUZ>, %B: memref<96x160xf8E4M3FNUZ>, %C: memref<200x160xf16>, %bias: memref<160xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bM = arith.constant 64 : index
    %bN = arith.constant 64 : index
    %bK = arith.constant 32 : index
    %num_k = arith.constant 3 : index
    %zero = arith.constant 0.0 : f32
    %A_s = "tile.alloc_shared"() : () -> memref<64x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>
    %B_s = "tile.alloc_shared"() : () -> memref<32x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>
    %C_l = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    "tile.fill"(%C_l, %zero) : (memref<64x64xf32, #gpu.address_space<private>>, f32) -> ()
    %row = arith.muli %by, %bM : index
    %col = arith.muli %bx, %bN : index
    scf.for %ko = %c0 to %num_k step %c1 {
      %k = arith.muli %ko, %bK : index
      "tile.copy"(%A, %A_s, %row, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<200x96xf8E4M3FNUZ>, memref<64x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.copy"(%B, %B_s, %k, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<96x160xf8E4M3FNUZ>, memref<32x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.gemm"(%A_s, %B_s, %C_l) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>, memref<32x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
    } {tile.num_stages = 3 : i64}
    scf.parallel (%i, %j) = (%c0, %c0) to (%bM, %bN) step (%c1, %c1) {
      %acc = memref.load %C_l[%i, %j] : memref<64x64xf32, #gpu.address_space<private>>
      %gi = arith.addi %row, %i : index
      %gj = arith.addi %col, %j : index
      %m = arith.constant 200 : index
      %n = arith.constant 160 : index
      %in_m = arith.cmpi slt, %gi, %m : index
      %in_n = arith.cmpi slt, %gj, %n : index
      %inside = arith.andi %in_m, %in_n : i1
      scf.if %inside {
        %b = memref.load %bias[%gj] : memref<160xf32>
        %sum = arith.addf %acc, %b : f32
        %relu = arith.maximumf %sum, %zero : f32
        %out = arith.truncf %relu : f32 to f16
        memref.store %out, %C[%gi, %gj] : memref<200x160xf16>
      }
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 3, 4>, threads = 256 : i64} : () -> ()
  return
}
