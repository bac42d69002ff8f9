// tile.read_from_global written by hand where the matrix core reads A from
// shared memory only (NVIDIA's): refused with the attribute's form.
// RUN: tile-compile %s --target nvidia:sm_90a --emit gpu --verify-diagnostics

#S = #gpu.address_space<workgroup>
#F = #gpu.address_space<private>
func.func @f(%A: memref<256x256xf16>, %B: memref<256x512xf16>, %C: memref<256x64xf32>) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %row = arith.muli %b, %c128 : index
    // expected-error@below {{tile-lower-to-gpu: tile.read_from_global needs a unit attribute, on a 2-D buffer filled by one tile.copy from global memory that nothing writes in the kernel, before the loop, and read only as the A operand of gemms in it, and a matrix core that reads such an A from global memory (nvidia's does not)}}
    %a = "tile.alloc_shared"() {tile.read_from_global} : () -> memref<128x256xf16, #S>
    %bb = "tile.alloc_shared"() : () -> memref<256x64xf16, #S>
    %c = "tile.alloc_fragment"() : () -> memref<128x64xf32, #F>
    %zero = arith.constant 0.0 : f32
    "tile.copy"(%A, %a, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<128x256xf16, #S>, index, index) -> ()
    "tile.fill"(%c, %zero) : (memref<128x64xf32, #F>, f32) -> ()
    scf.for %j = %c0 to %c8 step %c1 {
      %col = arith.muli %j, %c64 : index
      "tile.copy"(%B, %bb, %c0, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x512xf16>, memref<256x64xf16, #S>, index, index) -> ()
      "tile.gemm"(%a, %bb, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x256xf16, #S>, memref<256x64xf16, #S>, memref<128x64xf32, #F>) -> ()
    } {tile.num_stages = 2 : i64}
    "tile.copy"(%c, %C, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x64xf32, #F>, memref<256x64xf32>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 2>, threads = 256 : i64} : () -> ()
  return
}
