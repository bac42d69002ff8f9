// RUN: tile-opt %s --split-input-file --verify-diagnostics -p 'tile-select-mma,tile-infer-layout'

// tile-infer-layout refuses a fragment one thread cannot hold in its
// registers (registers.vgprs_per_lane of the target's descriptor), counting
// the thread's elements packed into 32-bit registers: the lowering unrolls
// per element, so such a fragment would spill and take llc minutes.

#F = #gpu.address_space<private>
// Add + GELU over a 64x64 f32 fragment held by one thread: 4096 registers,
// gfx942 has 512 per lane.
module attributes {tile.target = "amdgpu:gfx942"} {
func.func @add_gelu_one_thread(%A: memref<64x64xf32>, %B: memref<64x64xf32>, %Y: memref<64x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 64 : index
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %k0 = arith.constant 0.7978845608 : f32
    %k1 = arith.constant 0.044715 : f32
    // expected-error@below {{tile-infer-layout: this fragment (64x64xf32) needs 4096 registers per thread (4096 of its 4096 elements in each of 1 thread, blocked layout); amdgpu:gfx942 has 512 registers per lane (registers.vgprs_per_lane)}}
    %a = "tile.alloc_fragment"() : () -> memref<64x64xf32, #F>
    "tile.copy"(%A, %a, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf32>, memref<64x64xf32, #F>, index, index) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%n, %n) step (%c1, %c1) {
      %x0 = memref.load %a[%i, %j] : memref<64x64xf32, #F>
      %y0 = memref.load %B[%i, %j] : memref<64x64xf32>
      %x = arith.addf %x0, %y0 : f32
      %x3 = arith.mulf %x, %x : f32
      %t0 = arith.mulf %x3, %k1 : f32
      %t1 = arith.addf %x, %t0 : f32
      %t2 = arith.mulf %t1, %k0 : f32
      %th = math.tanh %t2 : f32
      %t3 = arith.addf %th, %one : f32
      %t4 = arith.mulf %x, %t3 : f32
      %y = arith.mulf %t4, %half : f32
      memref.store %y, %a[%i, %j] : memref<64x64xf32, #F>
      scf.reduce
    }
    "tile.copy"(%a, %Y, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #F>, memref<64x64xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 1 : i64} : () -> ()
  return
}
}

// -----

#F = #gpu.address_space<private>
// At the bound: 512 f32 in one thread, and 1024 f16 packed two to a register.
module attributes {tile.target = "amdgpu:gfx942"} {
func.func @at_the_bound() {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() : () -> memref<16x32xf32, #F>
    %h = "tile.alloc_fragment"() : () -> memref<32x32xf16, #F>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 1 : i64} : () -> ()
  return
}
}

// -----

#F = #gpu.address_space<private>
// One register past it: 513 f32 in one thread; f64 takes two registers each.
module attributes {tile.target = "amdgpu:gfx942"} {
func.func @past_the_bound() {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    // expected-error@below {{this fragment (513xf32) needs 513 registers per thread (513 of its 513 elements in each of 1 thread, blocked layout)}}
    %x = "tile.alloc_fragment"() : () -> memref<513xf32, #F>
    // expected-error@below {{this fragment (16x32xf64) needs 1024 registers per thread (512 of its 512 elements in each of 1 thread, blocked layout)}}
    %d = "tile.alloc_fragment"() : () -> memref<16x32xf64, #F>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 1 : i64} : () -> ()
  return
}
}

// -----

#F = #gpu.address_space<private>
// The bound is per thread: 128x128 f32 over 32 threads is 512 registers each
// (accepted), over 16 threads 1024 (refused).
module attributes {tile.target = "amdgpu:gfx942"} {
func.func @spread_over_threads() {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() : () -> memref<128x128xf32, #F>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 32 : i64} : () -> ()
  "tile.kernel"() ({
  ^bb0(%bx: index):
    // expected-error@below {{this fragment (128x128xf32) needs 1024 registers per thread (1024 of its 16384 elements in each of 16 threads, blocked layout)}}
    %x = "tile.alloc_fragment"() : () -> memref<128x128xf32, #F>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 16 : i64} : () -> ()
  return
}
}

// -----

#F = #gpu.address_space<private>
// NVIDIA's descriptor allows 255 registers per thread.
module attributes {tile.target = "nvidia:sm_90a"} {
func.func @nvidia_bound() {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    // expected-error@below {{this fragment (16x16xf32) needs 256 registers per thread (256 of its 256 elements in each of 1 thread, blocked layout); nvidia:sm_90a has 255 registers per lane (registers.vgprs_per_lane)}}
    %x = "tile.alloc_fragment"() : () -> memref<16x16xf32, #F>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 1 : i64} : () -> ()
  return
}
}

// -----

#F = #gpu.address_space<private>
// MetaX's register file is not public: only what no shipped GPU holds is
// refused (512 accepted, 1024 not).
module attributes {tile.target = "metax:xcore1000"} {
func.func @metax_unknown_registers() {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() : () -> memref<16x32xf32, #F>
    // expected-error@below {{this fragment (32x32xf32) needs 1024 registers per thread (1024 of its 1024 elements in each of 1 thread, blocked layout); metax:xcore1000's registers per lane are unknown (registers.vgprs_per_lane), and no shipped target has more than 512 (amdgpu:gfx90a, amdgpu:gfx942, amdgpu:gfx950)}}
    %y = "tile.alloc_fragment"() : () -> memref<32x32xf32, #F>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 1 : i64} : () -> ()
  return
}
}
