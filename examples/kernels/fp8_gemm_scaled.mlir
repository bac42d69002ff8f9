// FP8 GEMM with per-tensor scales passed as scalar f32 arguments, as FP8
// inference dequantises: C = f16(scale_a * scale_b * (A * B)), f32
// accumulation, an edge guard for the 200-row, 160-column output. The fp8
// format is gfx942's (FNUZ); for gfx950, MetaX or NVIDIA write f8E4M3FN (OCP)
// instead: converting between the two is refused (not exact either way).
!A = memref<200x128xf8E4M3FNUZ>
!B = memref<128x160xf8E4M3FNUZ>
!C = memref<200x160xf16>
!a = memref<64x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>
!b = memref<32x64xf8E4M3FNUZ, #gpu.address_space<workgroup>>
!acc = memref<64x64xf32, #gpu.address_space<private>>

func.func @fp8_gemm_scaled(%A: !A, %B: !B, %C: !C, %scale_a: f32, %scale_b: f32) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bm = arith.constant 64 : index
    %bn = arith.constant 64 : index
    %bk = arith.constant 32 : index
    %k_blocks = arith.constant 4 : index
    %m = arith.constant 200 : index
    %n = arith.constant 160 : index
    %zero = arith.constant 0.0 : f32
    %a_s = "tile.alloc_shared"() : () -> !a
    %b_s = "tile.alloc_shared"() : () -> !b
    %acc = "tile.alloc_fragment"() : () -> !acc
    "tile.fill"(%acc, %zero) : (!acc, f32) -> ()
    %row0 = arith.muli %by, %bm : index
    %col0 = arith.muli %bx, %bn : index
    scf.for %kb = %c0 to %k_blocks step %c1 {
      %k0 = arith.muli %kb, %bk : index
      "tile.copy"(%A, %a_s, %row0, %k0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (!A, !a, index, index) -> ()
      "tile.copy"(%B, %b_s, %k0, %col0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (!B, !b, index, index) -> ()
      "tile.gemm"(%a_s, %b_s, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (!a, !b, !acc) -> ()
    } {tile.num_stages = 2 : i64}
    %scale = arith.mulf %scale_a, %scale_b : f32
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %bn) step (%c1, %c1) {
      %r = arith.addi %row0, %i : index
      %c = arith.addi %col0, %j : index
      %in_m = arith.cmpi ult, %r, %m : index
      %in_n = arith.cmpi ult, %c, %n : index
      %inside = arith.andi %in_m, %in_n : i1
      scf.if %inside {
        %v = memref.load %acc[%i, %j] : !acc
        %s = arith.mulf %v, %scale : f32
        %h = arith.truncf %s : f32 to f16
        memref.store %h, %C[%r, %c] : !C
      }
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 3, 4>, threads = 256 : i64} : () -> ()
  return
}
