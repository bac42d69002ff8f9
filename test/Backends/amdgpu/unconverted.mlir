// An op the amdgpu pipeline does not lower is reported at its location before
// translation to LLVM IR (which would otherwise fail without saying where).
//
// RUN: tile-compile %s --target amdgpu:gfx942 --verify-diagnostics

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @fills(%out: memref<64xf32>) kernel {
      %z = arith.constant 0.0 : f32
      // expected-error@below {{'linalg.fill' is not in the LLVM or ROCDL dialect after the amdgpu pipeline}}
      linalg.fill ins(%z : f32) outs(%out : memref<64xf32>)
      gpu.return
    }
  }
}
