// Launch bounds of hand-written GPU-level IR are checked against sm_90a
// before they are printed into the PTX (.maxntid, .reqntid, .maxnreg).
//
// RUN: tile-compile %s --target nvidia:sm_90a --emit ptx --split-input-file --verify-diagnostics

// More threads per block than the chip has.
module attributes {gpu.container_module} {
  func.func @host(%out: memref<4xf32>) {
    %one = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%one, %one, %one) threads in (%one, %one, %one) args(%out : memref<4xf32>)
    return
  }
  gpu.module @kernels {
    // expected-error@below {{gpu.func @k: known_block_size asks for 4000000000000000000 threads per block, the target allows 1024}}
    gpu.func @k(%out: memref<4xf32>) kernel attributes {known_block_size = array<i32: 2000000000, 2000000000, 1>} {
      gpu.return
    }
  }
}

// -----

// A zero register bound.
module attributes {gpu.container_module} {
  func.func @host(%out: memref<4xf32>) {
    %one = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%one, %one, %one) threads in (%one, %one, %one) args(%out : memref<4xf32>)
    return
  }
  gpu.module @kernels {
    // expected-error@below {{gpu.func @k: nvvm.maxnreg must be positive in every dimension, got [0]}}
    gpu.func @k(%out: memref<4xf32>) kernel attributes {nvvm.maxnreg = 0 : i32} {
      gpu.return
    }
  }
}
