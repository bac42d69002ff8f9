// Does not parse: %y is never defined.
func.func @bad() {
  %x = arith.addf %y, %y : f32
  return
}
