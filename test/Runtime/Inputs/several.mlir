// Two functions: tile-run needs --entry; one takes a scalar, one a dynamic shape.
func.func @first(%a: memref<4xf32>, %n: index) {
  return
}
func.func @second(%m: memref<?x4xf32>) {
  return
}
