// The seed kernel lowered to one thread's program: gpu.func + amdgpu.mfma.
// RUN: tile-opt %examples/seed_fp8_gemm.mlir -p 'tile-legalize-precision,tile-select-mma,tile-infer-layout,tile-lower-to-gpu,canonicalize,cse' | filecheck %s

// CHECK: module attributes {gpu.container_module, tile.target = "amdgpu:gfx942"}
// CHECK-LABEL: func.func @mixed_precision_gemm
// CHECK: gpu.launch_func @mixed_precision_gemm_kernels::@mixed_precision_gemm_kernel0 blocks in (%[[C8:.+]], %[[C8]], %[[C1:.+]]) threads in (%[[C256:.+]], %[[C1]], %[[C1]]) args(%arg0 : memref<1024x1024xf8E4M3FNUZ>, %arg1 : memref<1024x1024xf8E4M3FNUZ>, %arg2 : memref<1024x1024xf16>)
// CHECK-NOT: "tile.
// CHECK: gpu.module @mixed_precision_gemm_kernels
// LDS layouts (tile-infer-layout): A 128x32 with rows padded by 8; B 32x128
// stored transposed (128 rows of K) and padded, so both are read K-contiguous.
// CHECK: gpu.func @mixed_precision_gemm_kernel0(%{{.+}}: memref<1024x1024xf8E4M3FNUZ>, %{{.+}}: memref<1024x1024xf8E4M3FNUZ>, %{{.+}}: memref<1024x1024xf16>) workgroup(%[[AS:.+]] : memref<128x40xf8E4M3FNUZ, #gpu.address_space<workgroup>>, %[[BS:.+]] : memref<128x40xf8E4M3FNUZ, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, tile.lds_bank_conflicts_per_iteration = 0 : i64}
// CHECK: gpu.thread_id x
// Four 32x32 accumulators per wave (a 64x64 warp tile) carried by the K loop.
// CHECK: scf.for {{.*}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: gpu.barrier
// CHECK: vector.load {{.*}} : memref<1024x1024xf8E4M3FNUZ>, vector<16xf8E4M3FNUZ>
// CHECK: vector.store {{.*}} : memref<128x40xf8E4M3FNUZ, #gpu.address_space<workgroup>>, vector<16xf8E4M3FNUZ>
// B (K x N) goes in transposed: a 32x128 tile has too few blocks of 4 rows
// x 16 bytes for 256 threads to pack columns, so 16 byte stores per thread.
// CHECK-COUNT-16: memref.store {{.*}} : memref<128x40xf8E4M3FNUZ, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// Operand reads: 8 fp8 values of one row per lane, one vector load each.
// CHECK: vector.load {{.*}} : memref<128x40xf8E4M3FNUZ, #gpu.address_space<workgroup>>, vector<8xf8E4M3FNUZ>
// 2 K steps x 2 x 2 tiles = 8 MFMAs per wave per iteration (32 per block = 128*128*32 / (32*32*16)).
// CHECK-COUNT-8: amdgpu.mfma 32x32x16 %{{.+}} * %{{.+}} + %{{.+}} blgp =  none : vector<8xf8E4M3FNUZ>, vector<8xf8E4M3FNUZ>, vector<16xf32>
// CHECK-NOT: amdgpu.mfma
// CHECK: scf.yield
// The epilogue: each lane rounds and stores the 64 elements it holds.
// CHECK-COUNT-64: arith.truncf %{{.+}} : f32 to f16
// CHECK: gpu.return
