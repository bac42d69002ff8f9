// Configurations a MetaX chip cannot run fail at compile time, with the
// numbers, at the op's location (DESIGN §4: never a run-time surprise).
//
// RUN: tile-compile %s --emit maca --split-input-file --verify-diagnostics --pass-options 'tile-legalize-precision{fp8-fallback=error},tile-pipeline{over-budget=error}'

// fp8 MMAs on the C500 (xcore1000) are not publicly known: with
// fp8-fallback=error, no f16 fallback either: a diagnostic.
module attributes {tile.target = "metax:xcore1000"} {
  func.func @fp8_gemm(%A: memref<64x64xf8E4M3FN>, %B: memref<64x64xf8E4M3FN>, %C: memref<64x64xf16>) {
    "tile.kernel"() ({
    ^bb0(%bx: index, %by: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %bM = arith.constant 64 : index
      %bN = arith.constant 64 : index
      %bK = arith.constant 32 : index
      %num_k = arith.constant 2 : index
      %zero = arith.constant 0.0 : f32
      %A_s = "tile.alloc_shared"() : () -> memref<64x32xf8E4M3FN, #gpu.address_space<workgroup>>
      %B_s = "tile.alloc_shared"() : () -> memref<32x64xf8E4M3FN, #gpu.address_space<workgroup>>
      %C_l = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
      "tile.fill"(%C_l, %zero) : (memref<64x64xf32, #gpu.address_space<private>>, f32) -> ()
      %row = arith.muli %by, %bM : index
      %col = arith.muli %bx, %bN : index
      scf.for %ko = %c0 to %num_k step %c1 {
        %k = arith.muli %ko, %bK : index
        "tile.copy"(%A, %A_s, %row, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf8E4M3FN>, memref<64x32xf8E4M3FN, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.copy"(%B, %B_s, %k, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<64x64xf8E4M3FN>, memref<32x64xf8E4M3FN, #gpu.address_space<workgroup>>, index, index) -> ()
        // expected-error@below {{whether metax:xcore1000 has fp8 matrix instructions is not publicly known}}
        "tile.gemm"(%A_s, %B_s, %C_l) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x32xf8E4M3FN, #gpu.address_space<workgroup>>, memref<32x64xf8E4M3FN, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 3 : i64}
      "tile.copy"(%C_l, %C, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #gpu.address_space<private>>, memref<64x64xf16>, index, index) -> ()
      gpu.yield
    }) {grid = array<i64: 1, 1>, threads = 256 : i64} : () -> ()
    return
  }
}

// -----

// Three stages of 128x64 + 64x128 f16 tiles: 96 KiB, over the C500's 64 KiB (the C600's 128 KiB would do).
module attributes {tile.target = "metax:xcore1000"} {
  func.func @lds_hog(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf32>) {
    "tile.kernel"() ({
    ^bb0(%bx: index, %by: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %bM = arith.constant 128 : index
      %bN = arith.constant 128 : index
      %bK = arith.constant 64 : index
      %num_k = arith.constant 4 : index
      %zero = arith.constant 0.0 : f32
      // The operands are stored for vector reads with rows padded (its shared banks are
      // unknown: no padding is conflict-free for both 32 and 64), the padding given up first.
      // expected-error@+3 {{3 stages need 98304 bytes of LDS, xcore1000 allows 65536}}
      // expected-remark@+2 {{no row padding up to 64 elements makes the reads of the 128x64xf16}}
      // expected-remark@+1 {{row padding of 4 elements dropped from the 128x64xf16}}
      %A_s = "tile.alloc_shared"() : () -> memref<128x64xf16, #gpu.address_space<workgroup>>
      // expected-remark@+2 {{no row padding up to 64 elements makes the reads of the 64x128xf16}}
      // expected-remark@+1 {{row padding of 4 elements dropped from the 64x128xf16}}
      %B_s = "tile.alloc_shared"() : () -> memref<64x128xf16, #gpu.address_space<workgroup>>
      %C_l = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
      "tile.fill"(%C_l, %zero) : (memref<128x128xf32, #gpu.address_space<private>>, f32) -> ()
      %row = arith.muli %by, %bM : index
      %col = arith.muli %bx, %bN : index
      scf.for %ko = %c0 to %num_k step %c1 {
        %k = arith.muli %ko, %bK : index
        "tile.copy"(%A, %A_s, %row, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<128x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.copy"(%B, %B_s, %k, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<64x128xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.gemm"(%A_s, %B_s, %C_l) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x64xf16, #gpu.address_space<workgroup>>, memref<64x128xf16, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 3 : i64}
      "tile.copy"(%C_l, %C, %row, %col) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x128xf32, #gpu.address_space<private>>, memref<256x256xf32>, index, index) -> ()
      gpu.yield
    }) {grid = array<i64: 2, 2>, threads = 256 : i64} : () -> ()
    return
  }
}

// -----

// GPU-level input skips the tile passes; the MACA emitter checks the budget itself.
module attributes {gpu.container_module, tile.target = "metax:xcore1000"} {
  gpu.module @kernels {
    // expected-error@below {{kernel 'lds_hog' needs 98304 bytes of shared memory, xcore1000 allows 65536}}
    gpu.func @lds_hog(%out: memref<64xi8>)
        workgroup(%lds: memref<98304xi8, #gpu.address_space<workgroup>>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %lds[%c0] : memref<98304xi8, #gpu.address_space<workgroup>>
      memref.store %v, %out[%c0] : memref<64xi8>
      gpu.return
    }
  }
}

// -----

// 160 KiB is over the C600's (xcore1500) 128 KiB too.
module attributes {gpu.container_module, tile.target = "metax:xcore1500"} {
  gpu.module @kernels {
    // expected-error@below {{kernel 'two_tiles' needs 163840 bytes of shared memory, xcore1500 allows 131072}}
    gpu.func @two_tiles(%out: memref<64xf32>)
        workgroup(%a: memref<128x160xf32, #gpu.address_space<workgroup>>,
                  %b: memref<160x128xf32, #gpu.address_space<workgroup>>) kernel {
      %c0 = arith.constant 0 : index
      %x = memref.load %a[%c0, %c0] : memref<128x160xf32, #gpu.address_space<workgroup>>
      %y = memref.load %b[%c0, %c0] : memref<160x128xf32, #gpu.address_space<workgroup>>
      %s = arith.addf %x, %y : f32
      memref.store %s, %out[%c0] : memref<64xf32>
      gpu.return
    }
  }
}
