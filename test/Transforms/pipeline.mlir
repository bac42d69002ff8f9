// RUN: tile-opt %examples/seed_fp8_gemm.mlir -p 'tile-pipeline' | filecheck %s
// RUN: tile-opt %examples/seed_fp8_gemm.mlir -p 'tile-pipeline,tile-legalize-precision,tile-select-mma,tile-infer-layout,tile-lower-to-gpu,canonicalize,cse' | filecheck %s --check-prefix=GPU

// The seed's 3-stage loop: each shared tile gets 3 stages, the prologue fills
// stages 0 and 1 (iterations 0 and 1), and each iteration copies iteration
// i+2 into stage (i+2) mod 3 before the gemm reads stage i mod 3. Three is
// no power of two and the loop's trip count is known, so the remainders are
// taken in 32 bits.
// CHECK: %[[A:.+]] = "tile.alloc_shared"() : () -> memref<3x128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>
// CHECK: %[[B:.+]] = "tile.alloc_shared"() : () -> memref<3x32x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>
// CHECK-COUNT-2: "tile.copy"(%arg0, %{{.+}}) {{.*}}tile.prefetch
// CHECK: scf.for %[[KO:.+]] = %[[LB:.+]] to %{{.+}} step %[[STEP:.+]] {
// CHECK-NOT: arith.minui
// CHECK: %[[N:.+]] = arith.divui
// CHECK: %[[N32:.+]] = arith.index_castui %[[N]] : index to i32
// CHECK: %[[CUR32:.+]] = arith.remui %[[N32]], %[[C3:.+]] : i32
// CHECK: %[[AHEAD:.+]] = arith.addi %[[N32]], %{{.+}} : i32
// CHECK: %[[NEXT32:.+]] = arith.remui %[[AHEAD]], %[[C3]] : i32
// CHECK: %[[CUR:.+]] = arith.index_castui %[[CUR32]] : i32 to index
// CHECK: %[[NEXT:.+]] = arith.index_castui %[[NEXT32]] : i32 to index
// CHECK: %[[AC:.+]] = memref.subview %[[A]][%[[CUR]], 0, 0] [1, 128, 32] [1, 1, 1]
// CHECK: %[[BC:.+]] = memref.subview %[[B]][%[[CUR]], 0, 0] [1, 32, 128] [1, 1, 1]
// CHECK: memref.subview %[[A]][%[[NEXT]], 0, 0]
// CHECK: "tile.copy"(%arg0, {{.*}}tile.prefetch
// CHECK: memref.subview %[[B]][%[[NEXT]], 0, 0]
// CHECK: "tile.copy"(%arg1, {{.*}}tile.prefetch
// CHECK: "tile.gemm"(%[[AC]], %[[BC]], %{{.+}})
// CHECK: } {tile.num_stages = 3 : i64, tile.pipelined = 3 : i64}

// The main loop runs iterations 0 .. 29 and prefetches i+2 unclamped (no
// arith.minui above); the last 2 run in a loop of their own that prefetches
// nothing (peel-tail, amdgpu's default) and reads the stages by the same count.
// CHECK-NEXT: scf.for %[[KT:.+]] = %{{.+}} to %{{.+}} step %[[STEP]] {
// CHECK-NOT: tile.copy
// CHECK: arith.remui
// CHECK-NOT: tile.copy
// CHECK: "tile.gemm"
// CHECK-NEXT: } {tile.num_stages = 3 : i64, tile.pipeline_tail, tile.pipelined = 3 : i64}

// peel-tail=false: one loop, whose prefetch is clamped to the last iteration.
// RUN: tile-opt %examples/seed_fp8_gemm.mlir -p 'tile-pipeline{peel-tail=false}' | filecheck %s --check-prefix=CLAMP
// CLAMP: scf.for
// CLAMP: arith.minui
// CLAMP: "tile.copy"({{.*}}tile.prefetch
// CLAMP: } {tile.num_stages = 3 : i64, tile.pipelined = 3 : i64}
// CLAMP-NOT: scf.for

// Lowered: the LDS holds 3 stages, and the K loop has exactly one barrier,
// which waits for LDS alone (amdgpu.lds_barrier: the stages are all it orders).
// GPU: workgroup(%{{.+}} : memref<3x128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>, %{{.+}} : memref<3x32x128xf8E4M3FNUZ, #gpu.address_space<workgroup>>)
// GPU-NOT: {{gpu.barrier|amdgpu.lds_barrier}}
// GPU: scf.for
// GPU-NEXT: amdgpu.lds_barrier
// GPU-NOT: {{gpu.barrier|amdgpu.lds_barrier}}
// GPU: amdgpu.mfma
// GPU-NOT: {{gpu.barrier|amdgpu.lds_barrier}}
// GPU: scf.yield
// The tail waits for the stores of the main loop's last iteration.
// GPU: scf.for
// GPU-NEXT: amdgpu.lds_barrier
// GPU-NOT: {{gpu.barrier|amdgpu.lds_barrier}}
// GPU: scf.yield

// One stage: the tiles keep one buffer ([1, ...]), the prologue fills it with
// iteration 0, and each iteration copies iteration i+1 into it after its gemm,
// so the tile IR still means what it says. Lowered, the copy's global loads
// come first in the iteration, its LDS stores last, behind a second barrier.
// RUN: sed 's/tile.num_stages = 3/tile.num_stages = 1/' %examples/seed_fp8_gemm.mlir | tile-opt -p 'tile-pipeline' | filecheck %s --check-prefix=ONE
// RUN: sed 's/tile.num_stages = 3/tile.num_stages = 1/' %examples/seed_fp8_gemm.mlir | tile-opt -p 'tile-pipeline,tile-legalize-precision,tile-select-mma,tile-infer-layout,tile-lower-to-gpu,canonicalize,cse' | filecheck %s --check-prefix=ONE-GPU
// ONE: "tile.alloc_shared"() : () -> memref<1x128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>
// ONE-COUNT-2: "tile.copy"({{.*}}tile.prefetch
// ONE: scf.for
// ONE: "tile.gemm"
// ONE: "tile.copy"(%arg0, {{.*}}tile.prefetch
// ONE: "tile.copy"(%arg1, {{.*}}tile.prefetch
// ONE-NEXT: }  {tile.num_stages = 1 : i64, tile.pipelined = 1 : i64}
// ONE-GPU: scf.for
// ONE-GPU-NEXT: amdgpu.lds_barrier
// ONE-GPU-NOT: amdgpu.mfma
// ONE-GPU: vector.load %arg0
// ONE-GPU-NOT: {{gpu.barrier|amdgpu.lds_barrier}}
// ONE-GPU: amdgpu.mfma
// ONE-GPU-NOT: vector.store
// ONE-GPU: amdgpu.lds_barrier
// ONE-GPU-NOT: amdgpu.mfma
// ONE-GPU: vector.store {{.*}}#gpu.address_space<workgroup>
// ONE-GPU-NEXT: vector.store {{.*}}#gpu.address_space<workgroup>
// ONE-GPU-NEXT: rocdl.sched.group.barrier
// ONE-GPU-NEXT: scf.yield
