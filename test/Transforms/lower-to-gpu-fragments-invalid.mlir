// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 --tile-lower-to-gpu

#F = #gpu.address_space<private>
// One T.Parallel per loop nest: its iterations are spread over the threads once.
func.func @nested_parallel(%X: memref<4x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
      // expected-error@below {{a T.Parallel (scf.parallel) inside another is not supported}}
      scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
        %v = memref.load %X[%i, %j] : memref<4x64xf32>
        memref.store %v, %X[%j, %i] : memref<4x64xf32>
        scf.reduce
      }
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

// -----

// Spreading a loop over the threads needs its trip counts.
func.func @dynamic_bounds(%X: memref<?xf32>, %n: index) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error@below {{a T.Parallel over memory must run from 0 to constant bounds with step 1}}
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      %v = memref.load %X[%i] : memref<?xf32>
      memref.store %v, %X[%i] : memref<?xf32>
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

// -----

func.func @three_dims(%X: memref<4x4x4xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    // expected-error@below {{a T.Parallel over memory with 3 dims is not supported (1 or 2 are)}}
    scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c4, %c4, %c4) step (%c1, %c1, %c1) {
      %v = memref.load %X[%i, %j, %k] : memref<4x4x4xf32>
      memref.store %v, %X[%k, %j, %i] : memref<4x4x4xf32>
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// The loop is 4x32, the fragment 4x64: it is not the loop's driver.
func.func @no_driver(%X: memref<4x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %x = "tile.alloc_fragment"() {tile.layout = {kind = "blocked", base_shape = array<i64: 4, 64>, threads_per_row = 16, vector = 4, rows_per_pass = 4}} : () -> memref<4x64xf32, #F>
    scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c32) step (%c1, %c1) {
      // expected-error@below {{this T.Parallel indexes a fragment but runs over none}}
      %v = memref.load %x[%i, %j] : memref<4x64xf32, #F>
      memref.store %v, %X[%i, %j] : memref<4x64xf32>
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// A fragment's elements are spread over the threads: no thread can read one
// of them by itself outside a T.Parallel.
func.func @outside_parallel(%X: memref<4x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %x = "tile.alloc_fragment"() {tile.layout = {kind = "blocked", base_shape = array<i64: 4, 64>, threads_per_row = 16, vector = 4, rows_per_pass = 4}} : () -> memref<4x64xf32, #F>
    // expected-error@below {{memref.load of a register fragment outside a T.Parallel}}
    %v = memref.load %x[%c0, %c0] : memref<4x64xf32, #F>
    memref.store %v, %X[%c0, %c0] : memref<4x64xf32>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// Inside the loop, a fragment element is the one the loop's indices name.
func.func @shifted_index(%X: memref<4x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %x = "tile.alloc_fragment"() {tile.layout = {kind = "blocked", base_shape = array<i64: 4, 64>, threads_per_row = 16, vector = 4, rows_per_pass = 4}} : () -> memref<4x64xf32, #F>
    scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c64) step (%c1, %c1) {
      %v = memref.load %x[%i, %j] : memref<4x64xf32, #F>
      %i1 = arith.addi %i, %c1 : index
      // expected-error@below {{inside scf.parallel a fragment must be indexed by the loop's own induction variables}}
      %w = memref.load %x[%i1, %j] : memref<4x64xf32, #F>
      %s = arith.addf %v, %w : f32
      memref.store %s, %X[%i, %j] : memref<4x64xf32>
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

// -----

// scf.parallel's own reductions are not T.Parallel; tile.reduce is.
func.func @parallel_reduction(%X: memref<64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %sum = scf.parallel (%i) = (%c0) to (%c64) step (%c1) init (%zero) -> f32 {
      %v = memref.load %X[%i] : memref<64xf32>
      // expected-error@below {{scf.parallel reductions are not supported (use tile.reduce on a fragment)}}
      scf.reduce(%v : f32) {
      ^bb0(%a: f32, %b: f32):
        %s = arith.addf %a, %b : f32
        scf.reduce.return %s : f32
      }
    }
    memref.store %sum, %X[%c0] : memref<64xf32>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// Across waves a reduction goes through the scratch tile-infer-layout sizes.
func.func @no_scratch(%X: memref<1x1024xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %x = "tile.alloc_fragment"() {tile.layout = {kind = "blocked", base_shape = array<i64: 1, 1024>, threads_per_row = 128, vector = 4, rows_per_pass = 1}} : () -> memref<1x1024xf32, #F>
    %m = "tile.alloc_fragment"() {tile.layout = {kind = "blocked", base_shape = array<i64: 1, 1024>, threads_per_row = 128, vector = 4, rows_per_pass = 1, dims = array<i64: 0>}} : () -> memref<1xf32, #F>
    "tile.copy"(%X, %x, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1x1024xf32>, memref<1x1024xf32, #F>, index, index) -> ()
    // expected-error@below {{this needs 2 elements of f32 shared scratch (tile.scratch), which tile-infer-layout did not provide}}
    "tile.reduce"(%x, %m) {clear = true, dim = 1 : i64, kind = "sum"} : (memref<1x1024xf32, #F>, memref<1xf32, #F>) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// A hand-written layout must describe the fragment it is on.
func.func @layout_of_another_shape() {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    // expected-error@below {{it describes a 4x64 fragment}}
    %x = "tile.alloc_fragment"() {tile.layout = {kind = "blocked", base_shape = array<i64: 4, 64>, threads_per_row = 16, vector = 4, rows_per_pass = 4}} : () -> memref<8x64xf32, #F>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}

// -----

#F = #gpu.address_space<private>
// A blocked layout must tile its base shape over the block's threads.
func.func @layout_too_wide() {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    // expected-error@below {{does not tile it over 128 threads}}
    %x = "tile.alloc_fragment"() {tile.layout = {kind = "blocked", base_shape = array<i64: 4, 64>, threads_per_row = 64, vector = 4, rows_per_pass = 4}} : () -> memref<4x64xf32, #F>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 128 : i64} : () -> ()
  return
}
