// RUN: tile-opt %s --split-input-file -p tile-split-loops | filecheck %s
// RUN: tile-opt %s --split-input-file -p 'tile-split-loops{enabled=false}' | filecheck %s --check-prefix=OFF

// enabled=false splits nothing.
// OFF-LABEL: func.func @causal
// OFF-COUNT-1: scf.for
// OFF-NOT: scf.for
// OFF-LABEL: func.func @tilelang_and_ragged
// OFF-COUNT-1: scf.for
// OFF-NOT: scf.for

// Causal attention's mask (keys after the query become -inf): false on every
// element of the key blocks before the diagonal, kb < ceil((bx * 64 - 62) / 64)
// = bx, computed before the loop as (bx * 64 + 1) / 64 with the numerator
// clamped at 0, then clamped to [0, upper]. The first loop has no mask
// left; the second is as written, and both keep their attributes.
// CHECK-LABEL: func.func @causal
// CHECK: %[[UPPER:.*]] = arith.addi %arg1, %c1 : index
// CHECK: %[[NUM:.*]] = arith.addi %c1_{{[0-9]+}}, %{{.*}} : index
// CHECK: %[[CLAMPED:.*]] = arith.maxsi %[[NUM]], %{{.*}} : index
// CHECK: %[[BOUND:.*]] = arith.divui %[[CLAMPED]], %{{.*}} : index
// CHECK: %[[LEAST:.*]] = arith.minsi %[[BOUND]], %[[UPPER]] : index
// CHECK: %[[POINT:.*]] = arith.maxsi %c0, %[[LEAST]] : index
// CHECK: scf.for %{{.*}} = %c0 to %[[POINT]] step
// CHECK: "tile.gemm"
// CHECK-NOT: scf.parallel
// CHECK: "tile.reduce"
// CHECK: } {tile.num_stages = 2 : i64}
// CHECK: scf.for %{{.*}} = %[[POINT]] to %[[UPPER]] step
// CHECK: "tile.gemm"
// CHECK: scf.parallel
// CHECK: arith.cmpi ugt
// CHECK: arith.select
// CHECK: "tile.reduce"
// CHECK: } {tile.num_stages = 2 : i64}
func.func @causal(%K: memref<256x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %minus_inf = arith.constant 0xFF800000 : f32
    %k_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %q_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %acc = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    %m = "tile.alloc_fragment"() : () -> memref<64xf32, #gpu.address_space<private>>
    %row0 = arith.muli %bx, %c64 : index
    %upper = arith.addi %bx, %c1 : index
    scf.for %kb = %c0 to %upper step %c1 {
      %k0 = arith.muli %kb, %c64 : index
      "tile.copy"(%K, %k_s, %k0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.gemm"(%q_s, %k_s, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
      scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
        %s = memref.load %acc[%i, %j] : memref<64x64xf32, #gpu.address_space<private>>
        %qi = arith.addi %row0, %i : index
        %kj = arith.addi %k0, %j : index
        %future = arith.cmpi ugt, %kj, %qi : index
        %masked = arith.select %future, %minus_inf, %s : f32
        memref.store %masked, %acc[%i, %j] : memref<64x64xf32, #gpu.address_space<private>>
        scf.reduce
      }
      "tile.reduce"(%acc, %m) {clear = false, dim = 1 : i64, kind = "max"} : (memref<64x64xf32, #gpu.address_space<private>>, memref<64xf32, #gpu.address_space<private>>) -> ()
    } {tile.num_stages = 2 : i64}
    gpu.yield
  }) {grid = array<i64: 4>, threads = 128 : i64} : () -> ()
  return
}

// -----

// TileLang's example_mha_fwd initialises the scores with the mask before the
// gemm: 0 where the key is not after the query, else -inf. The condition
// (qi >= kj) is true on every element before the diagonal, where the first
// loop stores 0. Keys past the end of 200 rows (kj >= 200, combined by ori
// in the second T.Parallel) are false before block 3: the split point is the
// lesser bound. A condition that is an equality, or reads a value no bound
// is known for (%n), is kept in both loops.
// CHECK-LABEL: func.func @tilelang_and_ragged
// CHECK: %[[POINT:.*]] = arith.maxsi %c0, %{{.*}} : index
// CHECK: scf.for %{{.*}} = %c0 to %[[POINT]] step
// CHECK: scf.parallel
// CHECK-NOT: arith.select
// CHECK: memref.store %cst, %{{.*}} : memref<64x64xf32
// CHECK: "tile.gemm"
// CHECK-NOT: arith.ori
// CHECK: arith.cmpi eq
// CHECK: arith.select
// CHECK: arith.cmpi ult, %{{.*}}, %arg1
// CHECK: arith.select
// CHECK: scf.for %{{.*}} = %[[POINT]] to %c4 step
// CHECK: arith.cmpi uge
// CHECK: arith.select
// CHECK: "tile.gemm"
// CHECK: arith.ori
// CHECK: arith.select
// CHECK: arith.cmpi eq
// CHECK: arith.cmpi ult
func.func @tilelang_and_ragged(%K: memref<200x64xf16>, %n: index) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c200 = arith.constant 200 : index
    %zero = arith.constant 0.0 : f32
    %minus_inf = arith.constant 0xFF800000 : f32
    %k_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %q_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %acc = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    %row0 = arith.muli %bx, %c64 : index
    scf.for %kb = %c0 to %c4 step %c1 {
      %k0 = arith.muli %kb, %c64 : index
      "tile.copy"(%K, %k_s, %k0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<200x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
      scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
        %qi = arith.addi %row0, %i : index
        %kj = arith.addi %k0, %j : index
        %seen = arith.cmpi uge, %qi, %kj : index
        %init = arith.select %seen, %zero, %minus_inf : f32
        memref.store %init, %acc[%i, %j] : memref<64x64xf32, #gpu.address_space<private>>
        scf.reduce
      }
      "tile.gemm"(%q_s, %k_s, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = true} : (memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
      scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
        %s = memref.load %acc[%i, %j] : memref<64x64xf32, #gpu.address_space<private>>
        %qi = arith.addi %row0, %i : index
        %kj = arith.addi %k0, %j : index
        %past = arith.cmpi uge, %kj, %c200 : index
        %future = arith.cmpi ugt, %kj, %qi : index
        %out = arith.ori %past, %future : i1
        %masked = arith.select %out, %minus_inf, %s : f32
        memref.store %masked, %acc[%i, %j] : memref<64x64xf32, #gpu.address_space<private>>
        scf.reduce
      }
      scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
        %s = memref.load %acc[%i, %j] : memref<64x64xf32, #gpu.address_space<private>>
        %qi = arith.addi %row0, %i : index
        %kj = arith.addi %k0, %j : index
        %diagonal = arith.cmpi eq, %kj, %qi : index
        %masked = arith.select %diagonal, %zero, %s : f32
        memref.store %masked, %acc[%i, %j] : memref<64x64xf32, #gpu.address_space<private>>
        scf.reduce
      }
      scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {
        %s = memref.load %acc[%i, %j] : memref<64x64xf32, #gpu.address_space<private>>
        %kj = arith.addi %k0, %j : index
        %short = arith.cmpi ult, %kj, %n : index
        %masked = arith.select %short, %s, %minus_inf : f32
        memref.store %masked, %acc[%i, %j] : memref<64x64xf32, #gpu.address_space<private>>
        scf.reduce
      }
    }
    gpu.yield
  }) {grid = array<i64: 4>, threads = 128 : i64} : () -> ()
  return
}
