// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx942 -p 'tile-select-mma,tile-infer-layout' | filecheck %s
// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx950 -p 'tile-select-mma,tile-infer-layout{transpose-reads=true}' | filecheck %s
// RUN: tile-opt %s --split-input-file --target=amdgpu:gfx90a -p 'tile-select-mma,tile-infer-layout' | filecheck %s

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// B (K x N, not K-contiguous) is written by the program's own memref.store:
// it stays as written - not transposed, not padded, not swizzled, no
// transpose reads - and says why. A, filled by tile.copy only, keeps the
// layout chosen for its reads.
// CHECK-LABEL: func.func @stored_by_the_program
// CHECK: %[[A:.+]] = "tile.alloc_shared"() {tile.smem_layout = {banks =
// CHECK: %[[B:.+]] = "tile.alloc_shared"() {tile.smem_layout = {as_written = "kept as written (no transpose, padding or swizzle): memref.store at {{.*}}infer-layout-as-written.mlir:{{[0-9]+}}:{{[0-9]+}} indexes it directly", banks = {{"[^"]*"}}, conflicts = {{[0-9]+}} : i64, pad = 0 : i64, transpose_read = false, transposed = false, unpadded_conflicts = {{[0-9]+}} : i64}}
// CHECK: memref.store %{{.*}}, %[[B]][
func.func @stored_by_the_program(%A: memref<64x64xf16>, %G: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %a = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %b = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    scf.parallel (%k, %n) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
      %v = memref.load %G[%k, %n] : memref<64x64xf16>
      memref.store %v, %b[%k, %n] : memref<64x64xf16, #S>
      scf.reduce
    }
    "tile.copy"(%A, %a, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<64x64xf16, #S>, index, index) -> ()
    "tile.gemm"(%a, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// Read back by a vector.load after the gemm (and filled by tile.copy): kept
// as written too; the reason names the first such use and counts the others.
// CHECK-LABEL: func.func @read_by_the_program
// CHECK: "tile.alloc_shared"() {tile.smem_layout = {as_written = "kept as written (no transpose, padding or swizzle): vector.load at {{.*}} and 1 more indexes it directly", banks = {{"[^"]*"}}, conflicts = {{[0-9]+}} : i64, pad = 0 : i64, transpose_read = false, transposed = false, unpadded_conflicts = {{[0-9]+}} : i64}}
func.func @read_by_the_program(%B: memref<64x64xf16>, %out: memref<64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %b = "tile.alloc_shared"() : () -> memref<64x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    "tile.copy"(%B, %b, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<64x64xf16, #S>, index, index) -> ()
    "tile.gemm"(%b, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #S>, memref<64x64xf16, #S>, memref<64x64xf32, #F>) -> ()
    %row = vector.load %b[%c0, %c0] : memref<64x64xf16, #S>, vector<8xf16>
    %view = memref.subview %b[0, 0] [1, 64] [1, 1] : memref<64x64xf16, #S> to memref<64xf16, strided<[1]>, #S>
    vector.store %row, %out[%c0] : memref<64xf16>, vector<8xf16>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
