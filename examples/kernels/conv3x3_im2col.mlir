// 3x3 convolution (stride 1, padding 1) as an implicit GEMM, NHWC f16 in,
// f32 accumulation, f16 out: Y[n*h*w, f] = sum over (kh, kw, c) of
// X[n, h+kh-1, w+kw-1, c] * Wt[(kh*3 + kw)*C + c, f]. The im2col gather runs in
// a T.Parallel straight into shared memory (zeros at the padding); the
// filter tile is a plain copy; tile.gemm multiplies them.
!X = memref<2x16x16x32xf16>
!Wt = memref<288x64xf16>
!Y = memref<512x64xf16>
!a = memref<64x32xf16, #gpu.address_space<workgroup>>
!b = memref<32x64xf16, #gpu.address_space<workgroup>>
!acc = memref<64x64xf32, #gpu.address_space<private>>

func.func @conv3x3(%X: !X, %Wt: !Wt, %Y: !Y) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c96 = arith.constant 96 : index
    %c256 = arith.constant 256 : index
    %bm = arith.constant 64 : index
    %bn = arith.constant 64 : index
    %bk = arith.constant 32 : index
    %k_blocks = arith.constant 9 : index
    %zero = arith.constant 0.0 : f32
    %zero_h = arith.constant 0.0 : f16
    %a_s = "tile.alloc_shared"() : () -> !a
    %b_s = "tile.alloc_shared"() : () -> !b
    %acc = "tile.alloc_fragment"() : () -> !acc
    "tile.fill"(%acc, %zero) : (!acc, f32) -> ()
    %row0 = arith.muli %by, %bm : index
    %col0 = arith.muli %bx, %bn : index
    scf.for %kb = %c0 to %k_blocks step %c1 {
      %k0 = arith.muli %kb, %bk : index
      scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %bk) step (%c1, %c1) {
        %m = arith.addi %row0, %i : index
        %k = arith.addi %k0, %j : index
        %n = arith.divui %m, %c256 : index
        %hw = arith.remui %m, %c256 : index
        %h = arith.divui %hw, %c16 : index
        %w = arith.remui %hw, %c16 : index
        %kh = arith.divui %k, %c96 : index
        %r = arith.remui %k, %c96 : index
        %kw = arith.divui %r, %c32 : index
        %c = arith.remui %r, %c32 : index
        %h1 = arith.addi %h, %kh : index
        %w1 = arith.addi %w, %kw : index
        %ih = arith.subi %h1, %c1 : index
        %iw = arith.subi %w1, %c1 : index
        %ih_lo = arith.cmpi sge, %ih, %c0 : index
        %ih_hi = arith.cmpi slt, %ih, %c16 : index
        %iw_lo = arith.cmpi sge, %iw, %c0 : index
        %iw_hi = arith.cmpi slt, %iw, %c16 : index
        %in_h = arith.andi %ih_lo, %ih_hi : i1
        %in_w = arith.andi %iw_lo, %iw_hi : i1
        %inside = arith.andi %in_h, %in_w : i1
        %v = scf.if %inside -> (f16) {
          %x = memref.load %X[%n, %ih, %iw, %c] : !X
          scf.yield %x : f16
        } else {
          scf.yield %zero_h : f16
        }
        memref.store %v, %a_s[%i, %j] : !a
        scf.reduce
      }
      "tile.copy"(%Wt, %b_s, %k0, %col0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (!Wt, !b, index, index) -> ()
      "tile.gemm"(%a_s, %b_s, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (!a, !b, !acc) -> ()
    }
    "tile.copy"(%acc, %Y, %row0, %col0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (!acc, !Y, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1, 8>, threads = 128 : i64} : () -> ()
  return
}
