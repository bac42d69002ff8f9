// Warp-specialized sm_90a kernels (backends/nvidia/warp_specialize.py) with two
// consumer warpgroups: the producer gives registers to the consumers.
//
// RUN: tile-compile %s --tiling 'block=128,256,64 threads=256 stages=4' --select prefer=wgmma --emit gpu | filecheck %s --check-prefix=GPU
// RUN: tile-compile %s --tiling 'block=128,256,64 threads=256 stages=4' --select prefer=wgmma --emit ptx | filecheck %s --check-prefix=PTX
// RUN: tile-compile %s --tiling 'block=128,256,64 threads=256 stages=4' --select prefer=wgmma --emit gpu --pass-options 'tile-lower-to-gpu{warp-specialize=false}' | filecheck %s --check-prefix=OFF

// Two consumer warpgroups on a 128x256 block (CUTLASS's cooperative shape):
// 384 threads get 168 registers each at launch (one block per SM); the
// producer gives back down to 40 and the consumers take 232.
module attributes {tile.target = "nvidia:sm_90a"} {
  func.func @wide(%A: memref<1024x1024xf16>, %B: memref<1024x1024xf16>, %C: memref<1024x1024xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<1024x1024xf16>, f16) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<1024x1024xf16>, memref<1024x1024xf16>, memref<1024x1024xf16>) -> ()
    return
  }
}

// GPU-LABEL: func.func @wide
// GPU: threads in (%c384, %c1, %c1)
// GPU: gpu.func @wide_kernel0
// GPU-SAME: known_block_size = array<i32: 384, 1, 1>
// GPU-SAME: nvvm.minctasm = 1 : i32
// GPU: nvvm.setmaxregister increase 232
// GPU: nvvm.setmaxregister decrease 40

// PTX-LABEL: .entry wide_kernel0
// PTX: .maxntid 384, 1, 1
// PTX: .minnctapersm 1
// PTX: setmaxnreg.inc.sync.aligned.u32 232;
// PTX: setmaxnreg.dec.sync.aligned.u32 40;

// OFF-LABEL: func.func @wide
// OFF: threads in (%c256, %c1, %c1)
