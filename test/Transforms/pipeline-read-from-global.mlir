// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 --tile-pipeline | FileCheck %s

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// A 128x256 tile copied once before the loop and read only as its gemm's A
// (flash attention's Q) takes 65536 bytes; with it not even one stage of the
// loop's 256x64 tile fits gfx942's 65536. Without it two stages do: the
// buffer is marked tile.read_from_global (its gemm reads it from global
// memory into registers, once, before the loop) and a remark says so.
// CHECK-LABEL: func.func @a_read_from_global
// CHECK: "tile.alloc_shared"() {tile.read_from_global} : () -> memref<128x256xf16, #gpu.address_space<workgroup>>
// CHECK: memref<2x256x64xf16, #gpu.address_space<workgroup>>
// CHECK: tile.pipelined = 2
func.func @a_read_from_global(%A: memref<1024x256xf16>, %B: memref<256x1024xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %a = "tile.alloc_shared"() : () -> memref<128x256xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<256x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    "tile.copy"(%A, %a, %b, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x256xf16>, memref<128x256xf16, #S>, index, index) -> ()
    // expected-remark@below {{tile-pipeline: not even 1 stage fits gfx942's 65536 bytes of LDS with the 128x256xf16 tile.alloc_shared at}}
    scf.for %j = %c0 to %c16 step %c1 {
      "tile.copy"(%B, %bb, %c0, %j) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x1024xf16>, memref<256x64xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x256xf16, #S>, memref<256x64xf16, #S>, memref<128x64xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    gpu.yield
  }) {grid = array<i64: 8>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// Two loops read the tile: the first takes it out of LDS, and the second
// counts its stages without it: with it, two stages of its 256x32 tile and
// the first loop's would not fit.
// CHECK-LABEL: func.func @two_loops
// CHECK: tile.read_from_global
// CHECK-COUNT-2: tile.pipelined = 2
func.func @two_loops(%A: memref<1024x256xf16>, %B: memref<256x1024xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %a = "tile.alloc_shared"() : () -> memref<128x256xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<256x32xf16, #S>
    %b2 = "tile.alloc_shared"() : () -> memref<256x32xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x32xf32, #F>
    "tile.copy"(%A, %a, %b, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x256xf16>, memref<128x256xf16, #S>, index, index) -> ()
    // expected-remark@below {{tile-pipeline: not even 1 stage fits gfx942's 65536 bytes of LDS with the 128x256xf16 tile.alloc_shared at}}
    scf.for %j = %c0 to %c16 step %c1 {
      "tile.copy"(%B, %bb, %c0, %j) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x1024xf16>, memref<256x32xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x256xf16, #S>, memref<256x32xf16, #S>, memref<128x32xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    scf.for %j = %c0 to %c16 step %c1 {
      "tile.copy"(%B, %b2, %c0, %j) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x1024xf16>, memref<256x32xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %b2, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x256xf16, #S>, memref<256x32xf16, #S>, memref<128x32xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    gpu.yield
  }) {grid = array<i64: 8>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// The 128x128 tile (32768 bytes) and two stages of the loop's 128x64 tile
// fit gfx942's 65536 bytes, but a CU then runs one workgroup of 4 waves:
// one wave per SIMD. Without it two workgroups fit, two waves per SIMD: the
// tile is read from global memory into registers (flash attention's Q, as
// Triton and CK hold it) and the loop keeps its two stages.
// CHECK-LABEL: func.func @two_waves_a_simd
// CHECK: "tile.alloc_shared"() {tile.read_from_global} : () -> memref<128x128xf16, #gpu.address_space<workgroup>>
// CHECK: memref<2x128x64xf16, #gpu.address_space<workgroup>>
// CHECK: tile.pipelined = 2
func.func @two_waves_a_simd(%A: memref<1024x128xf16>, %B: memref<128x1024xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %a = "tile.alloc_shared"() : () -> memref<128x128xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<128x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    "tile.copy"(%A, %a, %b, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x128xf16>, memref<128x128xf16, #S>, index, index) -> ()
    // expected-remark@below {{tile-pipeline: with the 128x128xf16 tile.alloc_shared at}}
    scf.for %j = %c0 to %c16 step %c1 {
      "tile.copy"(%B, %bb, %c0, %j) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x1024xf16>, memref<128x64xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x128xf16, #S>, memref<128x64xf16, #S>, memref<128x64xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    gpu.yield
  }) {grid = array<i64: 8>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// The same tiles in 8 waves: one workgroup already runs two waves per SIMD,
// and the tile stays in LDS.
// CHECK-LABEL: func.func @two_waves_already
// CHECK-NOT: tile.read_from_global
// CHECK: tile.pipelined = 2
func.func @two_waves_already(%A: memref<1024x128xf16>, %B: memref<128x1024xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %a = "tile.alloc_shared"() : () -> memref<128x128xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<128x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    "tile.copy"(%A, %a, %b, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x128xf16>, memref<128x128xf16, #S>, index, index) -> ()
    scf.for %j = %c0 to %c16 step %c1 {
      "tile.copy"(%B, %bb, %c0, %j) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x1024xf16>, memref<128x64xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x128xf16, #S>, memref<128x64xf16, #S>, memref<128x64xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    gpu.yield
  }) {grid = array<i64: 8>, threads = 512 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// As @two_waves_a_simd, with a second accumulator of 128x192 f32: the
// fragments (128 registers a lane) and the tile (32) leave a second wave no
// room (over 0.6 of 256: TWO_WAVE_REGISTER_SHARE), and the tile stays in LDS.
// CHECK-LABEL: func.func @registers_keep_one_wave
// CHECK-NOT: tile.read_from_global
// CHECK: tile.pipelined = 2
func.func @registers_keep_one_wave(%A: memref<1024x128xf16>, %B: memref<128x1024xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0.0 : f32
    %a = "tile.alloc_shared"() : () -> memref<128x128xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<128x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    %d = "tile.alloc_fragment"() : () -> memref<128x192xf32, #F>
    "tile.fill"(%d, %zero) : (memref<128x192xf32, #F>, f32) -> ()
    "tile.copy"(%A, %a, %b, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x128xf16>, memref<128x128xf16, #S>, index, index) -> ()
    scf.for %j = %c0 to %c16 step %c1 {
      "tile.copy"(%B, %bb, %c0, %j) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x1024xf16>, memref<128x64xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x128xf16, #S>, memref<128x64xf16, #S>, memref<128x64xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    gpu.yield
  }) {grid = array<i64: 8>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// As @two_waves_a_simd, with a second pipelined loop reading the tile: it
// would count its stages without the tile and could take the LDS back, so
// the tile stays.
// CHECK-LABEL: func.func @two_pipelined_loops
// CHECK-NOT: tile.read_from_global
// CHECK-COUNT-2: tile.pipelined = 2
func.func @two_pipelined_loops(%A: memref<1024x128xf16>, %B: memref<128x1024xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %a = "tile.alloc_shared"() : () -> memref<128x128xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<128x32xf16, #S>
    %b2 = "tile.alloc_shared"() : () -> memref<128x32xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x32xf32, #F>
    "tile.copy"(%A, %a, %b, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x128xf16>, memref<128x128xf16, #S>, index, index) -> ()
    scf.for %j = %c0 to %c16 step %c1 {
      "tile.copy"(%B, %bb, %c0, %j) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x1024xf16>, memref<128x32xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x128xf16, #S>, memref<128x32xf16, #S>, memref<128x32xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    scf.for %j = %c0 to %c16 step %c1 {
      "tile.copy"(%B, %b2, %c0, %j) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x1024xf16>, memref<128x32xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %b2, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x128xf16, #S>, memref<128x32xf16, #S>, memref<128x32xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    gpu.yield
  }) {grid = array<i64: 8>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// Two stages fit with the 128x80 tile in LDS (61440 bytes) and without it
// (40960), each one workgroup of 4 waves a CU: one wave per SIMD. One stage
// without it (20480 bytes) runs three: the loop gets that one stage (fewer
// than asked; gfx942 attention at head size 80 measures 0.594 busy per wave
// so, against 0.472 at one wave in two stages).
// CHECK-LABEL: func.func @fewer_stages_for_two_waves
// CHECK: "tile.alloc_shared"() {tile.read_from_global} : () -> memref<128x80xf16, #gpu.address_space<workgroup>>
// CHECK: memref<1x80x128xf16, #gpu.address_space<workgroup>>
// CHECK: tile.pipelined = 1
func.func @fewer_stages_for_two_waves(%A: memref<1024x80xf16>, %B: memref<80x2048xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %a = "tile.alloc_shared"() : () -> memref<128x80xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<80x128xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #F>
    "tile.copy"(%A, %a, %b, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x80xf16>, memref<128x80xf16, #S>, index, index) -> ()
    // expected-remark@below {{so that 3 waves per SIMD may run, and the loop is pipelined with 1 stage (20480 bytes of LDS)}}
    scf.for %j = %c0 to %c16 step %c1 {
      "tile.copy"(%B, %bb, %c0, %j) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<80x2048xf16>, memref<80x128xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x80xf16, #S>, memref<80x128xf16, #S>, memref<128x128xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    gpu.yield
  }) {grid = array<i64: 8>, threads = 256 : i64} : () -> ()
  return
}
