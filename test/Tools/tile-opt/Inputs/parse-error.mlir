func.func @f(%A: memref<4x4xf16>) {
  %0 = arith.addi %A : i32
  return
}
