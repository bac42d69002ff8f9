// GPU-level IR with a race between workgroups: both workgroups of the launch
// store their 64 lanes' values to the same 64 elements of %out (the block id
// is not in the index). Each alone is race-free; together nothing orders them.
module attributes {gpu.container_module, tile.target = "amdgpu:gfx942"} {
  func.func @race(%in: memref<128xf32>, %out: memref<64xf32>) {
    %one = arith.constant 1 : index
    %two = arith.constant 2 : index
    %lanes = arith.constant 64 : index
    gpu.launch_func @kernels::@copy blocks in (%two, %one, %one) threads in (%lanes, %one, %one)
        args(%in : memref<128xf32>, %out : memref<64xf32>)
    return
  }
  gpu.module @kernels {
    gpu.func @copy(%in: memref<128xf32>, %out: memref<64xf32>) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %lanes = arith.constant 64 : index
      %base = arith.muli %b, %lanes : index
      %i = arith.addi %base, %t : index
      %x = memref.load %in[%i] : memref<128xf32>
      memref.store %x, %out[%t] : memref<64xf32>
      gpu.return
    }
  }
}
