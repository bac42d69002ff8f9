// Elementwise Y = GELU(A + B) (the tanh form:
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))) over global tiles of
// 32x256 f16, f32 math. The T.Parallel runs over global memory directly: no
// buffers, the compiler spreads the tile over the threads.
!T = memref<512x1024xf16>

func.func @add_gelu(%A: !T, %B: !T, %Y: !T) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bm = arith.constant 32 : index
    %bn = arith.constant 256 : index
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %k0 = arith.constant 0.7978845608 : f32
    %k1 = arith.constant 0.044715 : f32
    %row0 = arith.muli %by, %bm : index
    %col0 = arith.muli %bx, %bn : index
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %bn) step (%c1, %c1) {
      %r = arith.addi %row0, %i : index
      %c = arith.addi %col0, %j : index
      %a = memref.load %A[%r, %c] : !T
      %b = memref.load %B[%r, %c] : !T
      %a32 = arith.extf %a : f16 to f32
      %b32 = arith.extf %b : f16 to f32
      %x = arith.addf %a32, %b32 : f32
      %x2 = arith.mulf %x, %x : f32
      %x3 = arith.mulf %x2, %x : f32
      %t0 = arith.mulf %x3, %k1 : f32
      %t1 = arith.addf %x, %t0 : f32
      %t2 = arith.mulf %t1, %k0 : f32
      %th = math.tanh %t2 : f32
      %t3 = arith.addf %th, %one : f32
      %t4 = arith.mulf %x, %t3 : f32
      %y32 = arith.mulf %t4, %half : f32
      %y = arith.truncf %y32 : f32 to f16
      memref.store %y, %Y[%r, %c] : !T
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 4, 16>, threads = 256 : i64} : () -> ()
  return
}
