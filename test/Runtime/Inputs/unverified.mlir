// Parses, but tile-verify rejects it: the fill value's type is not the buffer's.
func.func @fill(%C: memref<8x8xf16>) {
  %zero = arith.constant 0.0 : f32
  "tile.fill"(%C, %zero) : (memref<8x8xf16>, f32) -> ()
  return
}
