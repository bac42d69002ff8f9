// RUN: tile-opt %s --split-input-file --verify-diagnostics --target=amdgpu:gfx942 --tile-pipeline

// Buffers that stay in LDS (pipeline-read-from-global.mlir takes one out).
#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// The same, but the kernel also writes the tile's source: reading it later
// could see the write, so it stays in LDS, and nothing fits.
func.func @source_written(%A: memref<1024x256xf16>, %B: memref<256x1024xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    // expected-error@below {{tile-pipeline: 2 stages need 131072 bytes of LDS, gfx942 allows 65536; fewer stages cannot help (1 stage needs 98304 bytes)}}
    %a = "tile.alloc_shared"() : () -> memref<128x256xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<256x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    "tile.copy"(%A, %a, %b, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x256xf16>, memref<128x256xf16, #S>, index, index) -> ()
    scf.for %j = %c0 to %c16 step %c1 {
      "tile.copy"(%B, %bb, %c0, %j) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x1024xf16>, memref<256x64xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x256xf16, #S>, memref<256x64xf16, #S>, memref<128x64xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    %o = "tile.alloc_fragment"() : () -> memref<128x64xf16, #F>
    "tile.copy"(%c, %o) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<128x64xf32, #F>, memref<128x64xf16, #F>) -> ()
    "tile.copy"(%o, %A, %b, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x64xf16, #F>, memref<1024x256xf16>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 8>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// Read transposed (A^T B), or by anything but a gemm's A: it stays in LDS.
func.func @read_transposed(%A: memref<256x1024xf16>, %B: memref<256x1024xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    // expected-error@below {{tile-pipeline: 2 stages need 131072 bytes of LDS, gfx942 allows 65536; fewer stages cannot help (1 stage needs 98304 bytes)}}
    %a = "tile.alloc_shared"() : () -> memref<256x128xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<256x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    "tile.copy"(%A, %a, %c0, %b) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x1024xf16>, memref<256x128xf16, #S>, index, index) -> ()
    scf.for %j = %c0 to %c16 step %c1 {
      "tile.copy"(%B, %bb, %c0, %j) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x1024xf16>, memref<256x64xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = true, transpose_b = false} : (memref<256x128xf16, #S>, memref<256x64xf16, #S>, memref<128x64xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    gpu.yield
  }) {grid = array<i64: 8>, threads = 256 : i64} : () -> ()
  return
}

// -----

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
// The source is written through another view of it before the loop: a read
// at the loop would see that write, the copy does not.
func.func @source_written_through_a_view(%A: memref<1024x256xf16>, %B: memref<256x1024xf16>) {
  %view = memref.reinterpret_cast %A to offset: [0], sizes: [2048, 128], strides: [128, 1] : memref<1024x256xf16> to memref<2048x128xf16>
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    // expected-error@below {{tile-pipeline: 2 stages need 131072 bytes of LDS, gfx942 allows 65536; fewer stages cannot help (1 stage needs 98304 bytes)}}
    %a = "tile.alloc_shared"() : () -> memref<128x256xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<256x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    %z = "tile.alloc_fragment"() : () -> memref<128x64xf16, #F>
    "tile.copy"(%A, %a, %b, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<1024x256xf16>, memref<128x256xf16, #S>, index, index) -> ()
    "tile.copy"(%z, %view, %b, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x64xf16, #F>, memref<2048x128xf16>, index, index) -> ()
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
// The copy fills part of the buffer (destination indices): not the buffer
// the gemm reads.
func.func @filled_in_part(%A: memref<64x256xf16>, %B: memref<256x1024xf16>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    // expected-error@below {{tile-pipeline: 2 stages need 131072 bytes of LDS, gfx942 allows 65536; fewer stages cannot help (1 stage needs 98304 bytes)}}
    %a = "tile.alloc_shared"() : () -> memref<128x256xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<256x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    "tile.copy"(%A, %a, %c64, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x256xf16>, memref<128x256xf16, #S>, index, index) -> ()
    scf.for %j = %c0 to %c16 step %c1 {
      "tile.copy"(%B, %bb, %c0, %j) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x1024xf16>, memref<256x64xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x256xf16, #S>, memref<256x64xf16, #S>, memref<128x64xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    gpu.yield
  }) {grid = array<i64: 8>, threads = 256 : i64} : () -> ()
  return
}
