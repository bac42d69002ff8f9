// A hand-written kernel named like a C library function (printf, index):
// assembly and PTX take the name as it is; the MetaX emitter, whose C++ would
// redeclare the library's function, refuses it where the kernel is.
//
// RUN: tile-compile %s --target amdgpu:gfx942 --emit isa | FileCheck %s --check-prefix=AMD
// RUN: tile-compile %s --target nvidia:sm_90a --emit ptx | FileCheck %s --check-prefix=PTX
// RUN: not tile-compile %s --target metax:xcore1000 --emit maca -o %t.cpp 2>&1 | FileCheck %s --check-prefix=MACA

// AMD: .amdhsa_kernel printf
// PTX: .entry printf(
// MACA: library-names.mlir:[[@LINE+8]]:5: error: MACA emitter: C++ cannot name a function 'printf'
module attributes {gpu.container_module} {
  func.func @host(%out: memref<4xf32>) {
    %one = arith.constant 1 : index
    gpu.launch_func @kernels::@printf blocks in (%one, %one, %one) threads in (%one, %one, %one) args(%out : memref<4xf32>)
    return
  }
  gpu.module @kernels {
    gpu.func @printf(%out: memref<4xf32>) kernel {
      gpu.return
    }
  }
}
