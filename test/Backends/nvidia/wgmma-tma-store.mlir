// The output tile of a TMA-fed kernel goes out by TMA (backends/nvidia/tma_store.py):
// each thread writes its registers into 128-byte-swizzled chunk buffers in
// shared memory (rows x 128 bytes each), fences them for the async proxy, the
// consumers meet, and thread 0 stores the chunk with cp.async.bulk.tensor;
// thread 0 waits for the copies' reads before a buffer is reused and once more
// after the last tile.
//
// RUN: tile-compile %s --emit gpu | filecheck %s --check-prefix=GPU

module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @chunks(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
    "tile.kernel"() ({
    ^bb0(%bx: index, %by: index):
      %a = "tile.alloc_shared"() : () -> memref<128x32xf16, #gpu.address_space<workgroup>>
      %b = "tile.alloc_shared"() : () -> memref<32x128xf16, #gpu.address_space<workgroup>>
      %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
      %zero = arith.constant 0.000000e+00 : f32
      "tile.fill"(%c, %zero) : (memref<128x128xf32, #gpu.address_space<private>>, f32) -> ()
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %c128 = arith.constant 128 : index
      scf.for %k = %c0 to %c8 step %c1 {
        %row = arith.muli %by, %c128 : index
        %kk = arith.muli %k, %c32 : index
        "tile.copy"(%A, %a, %row, %kk) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<128x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        %col = arith.muli %bx, %c128 : index
        "tile.copy"(%B, %b, %kk, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<32x128xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.gemm"(%a, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x32xf16, #gpu.address_space<workgroup>>, memref<32x128xf16, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 3 : i64}
      %r = arith.muli %by, %c128 : index
      %q = arith.muli %bx, %c128 : index
      "tile.copy"(%c, %C, %r, %q) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x128xf32, #gpu.address_space<private>>, memref<256x256xf16>, index, index) -> ()
      gpu.yield
    }) {grid = array<i64: 2, 2>, threads = 128 : i64} : () -> ()
    return
  }
  func.func @one_chunk(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
    "tile.kernel"() ({
    ^bb0(%bx: index, %by: index):
      %a = "tile.alloc_shared"() : () -> memref<128x32xf16, #gpu.address_space<workgroup>>
      %b = "tile.alloc_shared"() : () -> memref<32x64xf16, #gpu.address_space<workgroup>>
      %c = "tile.alloc_fragment"() : () -> memref<128x64xf32, #gpu.address_space<private>>
      %zero = arith.constant 0.000000e+00 : f32
      "tile.fill"(%c, %zero) : (memref<128x64xf32, #gpu.address_space<private>>, f32) -> ()
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %c128 = arith.constant 128 : index
      %c64 = arith.constant 64 : index
      scf.for %k = %c0 to %c8 step %c1 {
        %row = arith.muli %by, %c128 : index
        %kk = arith.muli %k, %c32 : index
        "tile.copy"(%A, %a, %row, %kk) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<128x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        %col = arith.muli %bx, %c64 : index
        "tile.copy"(%B, %b, %kk, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<32x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.gemm"(%a, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x32xf16, #gpu.address_space<workgroup>>, memref<32x64xf16, #gpu.address_space<workgroup>>, memref<128x64xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 3 : i64}
      %r = arith.muli %by, %c128 : index
      %q = arith.muli %bx, %c64 : index
      "tile.copy"(%c, %C, %r, %q) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x64xf32, #gpu.address_space<private>>, memref<256x256xf16>, index, index) -> ()
      gpu.yield
    }) {grid = array<i64: 4, 2>, threads = 128 : i64} : () -> ()
    return
  }
  func.func @read_after(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
    "tile.kernel"() ({
    ^bb0(%bx: index, %by: index):
      %a = "tile.alloc_shared"() : () -> memref<128x32xf16, #gpu.address_space<workgroup>>
      %b = "tile.alloc_shared"() : () -> memref<32x128xf16, #gpu.address_space<workgroup>>
      %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
      %zero = arith.constant 0.000000e+00 : f32
      "tile.fill"(%c, %zero) : (memref<128x128xf32, #gpu.address_space<private>>, f32) -> ()
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %c128 = arith.constant 128 : index
      scf.for %k = %c0 to %c8 step %c1 {
        %row = arith.muli %by, %c128 : index
        %kk = arith.muli %k, %c32 : index
        "tile.copy"(%A, %a, %row, %kk) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<128x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        %col = arith.muli %bx, %c128 : index
        "tile.copy"(%B, %b, %kk, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<32x128xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.gemm"(%a, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x32xf16, #gpu.address_space<workgroup>>, memref<32x128xf16, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 3 : i64}
      %r = arith.muli %by, %c128 : index
      %q = arith.muli %bx, %c128 : index
      "tile.copy"(%c, %C, %r, %q) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x128xf32, #gpu.address_space<private>>, memref<256x256xf16>, index, index) -> ()
      "tile.copy"(%C, %c, %r, %q) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<128x128xf32, #gpu.address_space<private>>, index, index) -> ()
      gpu.yield
    }) {grid = array<i64: 2, 2>, threads = 128 : i64} : () -> ()
    return
  }
  func.func @host_view(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
    %v = memref.subview %C[0, 0] [128, 128] [1, 1] : memref<256x256xf16> to memref<128x128xf16, strided<[256, 1]>>
    "tile.kernel"() ({
    ^bb0(%bx: index, %by: index):
      %a = "tile.alloc_shared"() : () -> memref<128x32xf16, #gpu.address_space<workgroup>>
      %b = "tile.alloc_shared"() : () -> memref<32x128xf16, #gpu.address_space<workgroup>>
      %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
      %zero = arith.constant 0.000000e+00 : f32
      "tile.fill"(%c, %zero) : (memref<128x128xf32, #gpu.address_space<private>>, f32) -> ()
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %c128 = arith.constant 128 : index
      scf.for %k = %c0 to %c8 step %c1 {
        %row = arith.muli %by, %c128 : index
        %kk = arith.muli %k, %c32 : index
        "tile.copy"(%A, %a, %row, %kk) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<128x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        %col = arith.muli %bx, %c128 : index
        "tile.copy"(%B, %b, %kk, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<32x128xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.gemm"(%a, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x32xf16, #gpu.address_space<workgroup>>, memref<32x128xf16, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 3 : i64}
      %r = arith.muli %by, %c128 : index
      %q = arith.muli %bx, %c128 : index
      "tile.copy"(%c, %C, %r, %q) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x128xf32, #gpu.address_space<private>>, memref<256x256xf16>, index, index) -> ()
      "tile.copy"(%c, %v) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (memref<128x128xf32, #gpu.address_space<private>>, memref<128x128xf16, strided<[256, 1]>>) -> ()
      gpu.yield
    }) {grid = array<i64: 2, 2>, threads = 128 : i64} : () -> ()
    return
  }
  func.func @accumulate(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
    "tile.kernel"() ({
    ^bb0(%bx: index, %by: index):
      %a = "tile.alloc_shared"() : () -> memref<128x32xf16, #gpu.address_space<workgroup>>
      %b = "tile.alloc_shared"() : () -> memref<32x128xf16, #gpu.address_space<workgroup>>
      %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
      %c128_0 = arith.constant 128 : index
      %r0 = arith.muli %by, %c128_0 : index
      %q0 = arith.muli %bx, %c128_0 : index
      "tile.copy"(%C, %c, %r0, %q0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<128x128xf32, #gpu.address_space<private>>, index, index) -> ()
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %c128 = arith.constant 128 : index
      scf.for %k = %c0 to %c8 step %c1 {
        %row = arith.muli %by, %c128 : index
        %kk = arith.muli %k, %c32 : index
        "tile.copy"(%A, %a, %row, %kk) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<128x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        %col = arith.muli %bx, %c128 : index
        "tile.copy"(%B, %b, %kk, %col) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<256x256xf16>, memref<32x128xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.gemm"(%a, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x32xf16, #gpu.address_space<workgroup>>, memref<32x128xf16, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 3 : i64}
      %r = arith.muli %by, %c128 : index
      %q = arith.muli %bx, %c128 : index
      "tile.copy"(%c, %C, %r, %q) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<128x128xf32, #gpu.address_space<private>>, memref<256x256xf16>, index, index) -> ()
      gpu.yield
    }) {grid = array<i64: 2, 2>, threads = 128 : i64} : () -> ()
    return
  }
}

// Two chunks of 64 columns, in two buffers used in turn; C gets a tensor map
// of 128 x 64 boxes. The buffers (32 KiB after the 64 KiB of slots: the
// three asked and one for the wgmma group in flight) leave two blocks per SM.
// GPU-LABEL: gpu.func @chunks_kernel0
// GPU-SAME: nvvm.minctasm = 2
// GPU-SAME: tile.dynamic_shared_bytes = 98304
// GPU-SAME: \22source\22: {\22kernel_argument\22: 2}, \22dtype\22: \22f16\22, \22shape\22: [256, 256], \22box\22: [128, 64], \22swizzle\22: 128
// GPU: nvvm.wgmma.wait.group.sync.aligned 0
// GPU-NOT: gpu.barrier
// GPU: vector.store %{{.*}}, %[[BUF0:.*]][%{{.*}}] {alignment = 4 : i64} : memref<8192xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// GPU: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// GPU: nvvm.cp.async.bulk.wait_group 0 {read}
// GPU: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// GPU: nvgpu.tma.async.store %{{.*}} to %{{.*}}[%{{.*}}, %{{.*}}], predicate = {{.*}} : memref<128x64xf16, #gpu.address_space<workgroup>>
// GPU: nvvm.cp.async.bulk.commit.group
// GPU-NOT: [[BUF0]][
// GPU: vector.store %{{.*}}, %[[BUF1:.*]][%{{.*}}] {alignment = 4 : i64} : memref<8192xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// GPU: nvvm.fence.proxy
// GPU: nvvm.cp.async.bulk.wait_group 0 {read}
// GPU: nvvm.barrier
// GPU: nvgpu.tma.async.store
// GPU: nvvm.cp.async.bulk.commit.group
// After the last tile (the end of the loop over tiles): the reads once more.
// GPU: scf.yield %{{.*}} : index
// GPU-NEXT: }
// GPU-NEXT: scf.if %{{.*}} {
// GPU-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// GPU: gpu.return

// One chunk (64 columns): one buffer, so before writing it thread 0 waits for
// the previous copy's reads and the consumers meet.
// GPU-LABEL: gpu.func @one_chunk_kernel0
// GPU: nvvm.wgmma.wait.group.sync.aligned 0
// GPU: nvvm.cp.async.bulk.wait_group 0 {read}
// GPU-NEXT: }
// GPU-NEXT: nvvm.barrier
// GPU: vector.store
// GPU: nvvm.fence.proxy
// GPU: nvvm.cp.async.bulk.wait_group 0 {read}
// GPU: nvvm.barrier
// GPU: nvgpu.tma.async.store
// GPU-NOT: nvgpu.tma.async.store
// GPU: gpu.return

// C read again after the copy: the TMA unit's writes could land after that
// read, so each thread stores its registers as before.
// GPU-LABEL: gpu.func @read_after_kernel0
// GPU-NOT: nvgpu.tma.async.store
// GPU: vector.store %{{.*}}, %arg2[%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<256x256xf16>, vector<2xf16>
// GPU-NOT: nvgpu.tma.async.store
// GPU: gpu.return

// A view of C made in the host function and written by the kernel too: the
// TMA unit's writes would race with its stores, so none goes out by TMA.
// GPU-LABEL: gpu.func @host_view_kernel0
// GPU-NOT: nvgpu.tma.async.store
// GPU: gpu.return

// C += A B: the kernel reads C first, and each thread orders those reads
// before the TMA unit's writes.
// GPU-LABEL: gpu.func @accumulate_kernel0
// GPU: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// GPU-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// GPU: nvgpu.tma.async.store
// GPU: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// GPU-NOT: async.global
// GPU: nvgpu.tma.async.store

// The PTX of such a kernel: test_nvidia.py's test_wgmma_kernel_takes_tensor_maps.
