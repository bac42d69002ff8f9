// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 --tile-pipeline='over-budget=error'

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// 4 stages x (128x64 + 64x128) f16 = 131072 bytes: over gfx942's LDS, with the
// bytes per buffer, at the largest buffer, and the number of stages that fits.
func.func @over_budget(%A: memref<1024x1024xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    // expected-error@below {{tile-pipeline: 4 stages need 131072 bytes of LDS, gfx942 allows 65536; 2 stages would fit (65536 bytes; over-budget=fewer-stages steps down to them). By buffer: the 128x64xf16 tile.alloc_shared at}}
    %a = "tile.alloc_shared"() : () -> memref<128x64xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<64x128xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #F>
    scf.for %ko = %c0 to %c16 step %c1 {
      "tile.copy"(%A, %a, %b, %ko) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x1024xf16>, memref<128x64xf16, #S>, index, index) -> ()
      "tile.copy"(%A, %bb, %ko, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x1024xf16>, memref<64x128xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x64xf16, #S>, memref<64x128xf16, #S>, memref<128x128xf32, #F>) -> ()
    } {tile.num_stages = 4 : i64}
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// A shared buffer also read after the loop cannot be multi-buffered.
func.func @used_after(%A: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %a = "tile.alloc_shared"() : () -> memref<16x16xf16, #S>
    // expected-error@below {{tile-pipeline: cannot pipeline this loop: the 16x16xf16 tile.alloc_shared at}}
    scf.for %ko = %c0 to %c4 step %c1 {
      "tile.copy"(%A, %a, %ko, %ko) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<16x16xf16, #S>, index, index) -> ()
    } {tile.num_stages = 2 : i64}
    %z = arith.constant 0.0 : f16
    "tile.fill"(%a, %z) : (memref<16x16xf16, #S>, f16) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// A copy index read from memory cannot be recomputed for another iteration.
func.func @index_from_memory(%A: memref<64x64xf16>, %rows: memref<4xindex>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %a = "tile.alloc_shared"() : () -> memref<16x16xf16, #S>
    // expected-error@below {{tile-pipeline: cannot pipeline this loop: a copy index comes from memref.load, which is not pure arithmetic}}
    scf.for %ko = %c0 to %c4 step %c1 {
      %row = memref.load %rows[%ko] : memref<4xindex>
      "tile.copy"(%A, %a, %row, %ko) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<16x16xf16, #S>, index, index) -> ()
    } {tile.num_stages = 2 : i64}
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// A buffer outside the loop (48 KiB) leaves too little for even one stage of
// the loop's 32 KiB tile: fewer stages cannot help. The error points at the
// buffer that needs the most (2 stages x 32 KiB).
func.func @fewer_stages_cannot_help(%A: memref<1024x1024xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %big = "tile.alloc_shared"() : () -> memref<192x128xf16, #S>
    // expected-error@below {{tile-pipeline: 2 stages need 114688 bytes of LDS, gfx942 allows 65536; fewer stages cannot help (1 stage needs 81920 bytes): use smaller tiles, starting with this one. By buffer: the 192x128xf16 tile.alloc_shared at}}
    %a = "tile.alloc_shared"() : () -> memref<128x128xf16, #S>
    scf.for %ko = %c0 to %c16 step %c1 {
      "tile.copy"(%A, %a, %b, %ko) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x1024xf16>, memref<128x128xf16, #S>, index, index) -> ()
    } {tile.num_stages = 2 : i64}
    %z = arith.constant 0.0 : f16
    "tile.fill"(%big, %z) : (memref<192x128xf16, #S>, f16) -> ()
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
// Two copies into one buffer in one iteration: the refusal names the buffer.
func.func @written_twice(%A: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %a = "tile.alloc_shared"() : () -> memref<16x16xf16, #S>
    // expected-error@below {{tile-pipeline: cannot pipeline this loop: the 16x16xf16 tile.alloc_shared at}}
    scf.for %ko = %c0 to %c4 step %c1 {
      "tile.copy"(%A, %a, %ko, %ko) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<16x16xf16, #S>, index, index) -> ()
      "tile.copy"(%A, %a, %ko, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf16>, memref<16x16xf16, #S>, index, index) -> ()
    } {tile.num_stages = 2 : i64}
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}
