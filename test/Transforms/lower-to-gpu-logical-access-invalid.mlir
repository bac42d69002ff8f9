// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 --tile-lower-to-gpu

// The program's own ops address a shared buffer with its logical indices; a
// buffer stored any other way (a tile.smem_layout written by hand or left
// stale: tile-infer-layout keeps such buffers as written) is refused rather
// than given wrong addresses.

#S = #gpu.address_space<workgroup>
// Stored transposed: memref.store's (row, column) would land at (column, row).
func.func @store_into_transposed() {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %x = arith.constant 1.0 : f16
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %b = "tile.alloc_shared"() {tile.smem_layout = {pad = 0 : i64, transposed = true}} : () -> memref<64x32xf16, #S>
    // expected-error@below {{tile-lower-to-gpu: memref.store indexes a shared buffer as written, but tile.smem_layout stores it transposed; its addresses would be wrong}}
    memref.store %x, %b[%c1, %c2] : memref<64x32xf16, #S>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// Rows padded: every row after the first would be read from the wrong place.
func.func @load_from_padded(%out: memref<1xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %b = "tile.alloc_shared"() {tile.smem_layout = {pad = 8 : i64, transposed = false}} : () -> memref<64x32xf16, #S>
    // expected-error@below {{memref.load indexes a shared buffer as written, but tile.smem_layout stores it with rows padded by 8}}
    %v = memref.load %b[%c1, %c0] : memref<64x32xf16, #S>
    memref.store %v, %out[%c0] : memref<1xf16>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// XOR-swizzled for transpose reads: a vector read of a row gets other rows' chunks.
func.func @vector_load_from_swizzled(%out: memref<8xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %b = "tile.alloc_shared"() {tile.smem_layout = {pad = 0 : i64, swizzle = 1 : i64, transpose_read = true, transposed = false}} : () -> memref<64x32xf16, #S>
    // expected-error@below {{vector.load indexes a shared buffer as written, but tile.smem_layout stores it for LDS transpose reads, XOR-swizzled (1)}}
    %v = vector.load %b[%c0, %c0] : memref<64x32xf16, #S>, vector<8xf16>
    vector.store %v, %out[%c0] : memref<8xf16>, vector<8xf16>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// A view of the program's own (not a stage of a multi-buffered tile) of a transposed buffer.
func.func @subview_of_transposed() {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %b = "tile.alloc_shared"() {tile.smem_layout = {pad = 0 : i64, transposed = true}} : () -> memref<64x32xf16, #S>
    // expected-error@below {{memref.subview indexes a shared buffer as written, but tile.smem_layout stores it transposed}}
    %row = memref.subview %b[0, 0] [1, 32] [1, 1] : memref<64x32xf16, #S> to memref<32xf16, strided<[1]>, #S>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// Inside a T.Parallel over a fragment too: the store into shared is the program's.
func.func @parallel_store_into_padded() {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %x = arith.constant 1.0 : f16
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %b = "tile.alloc_shared"() {tile.smem_layout = {pad = 8 : i64, transposed = true}} : () -> memref<64x64xf16, #S>
    %c = "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 32, 32, 8>, kind = "mma_accumulator", warps = array<i64: 2, 2>}} : () -> memref<64x64xf32, #F>
    scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
      memref.store %zero, %c[%i, %j] : memref<64x64xf32, #F>
      // expected-error@below {{memref.store indexes a shared buffer as written, but tile.smem_layout stores it transposed, with rows padded by 8}}
      memref.store %x, %b[%i, %j] : memref<64x64xf16, #S>
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
