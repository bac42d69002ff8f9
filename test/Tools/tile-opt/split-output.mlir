// With every chunk valid, outputs are joined by the split marker.
// RUN: tile-opt %s --split-input-file | filecheck %s
// CHECK: func.func @one
// CHECK: // -----
// CHECK: func.func @two
// CHECK: // -----
// CHECK: #[[MAP:.+]] = affine_map
// CHECK: func.func @three
func.func @one() {
  return
}
// -----
func.func @two() {
  return
}
// -----
// A chunk that starts with an alias definition (kept outside the implicit module).
#map = affine_map<(d0) -> (d0 * 2)>
func.func @three(%i: index) -> index {
  %0 = affine.apply #map(%i)
  return %0 : index
}
