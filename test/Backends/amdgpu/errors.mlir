// tile-compile's own errors: exit status 1, a one-line reason, no output file.
//
// An unknown target is named with the closest known one.
// RUN: not tile-compile %s --target amdgpu:gfx943 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN: tile-compile: error: unknown target 'amdgpu:gfx943'; did you mean 'amdgpu:gfx942'?
//
// A stage of another family's backend is refused, naming the stages there are.
// RUN: not tile-compile %s --target metax:xcore1000 --emit isa 2>&1 | filecheck %s --check-prefix=FAMILY
// FAMILY: error: --emit isa is not a stage of the metax backend (for metax:xcore1000: tile, gpu, maca); isa is a stage of amdgpu
//
// HSACO is binary: it needs -o, and a failed run leaves no file behind.
// RUN: not tile-compile %s --emit hsaco 2>&1 | filecheck %s --check-prefix=HSACO
// HSACO: tile-compile: error: --emit hsaco writes a binary file: give -o FILE
// RUN: rm -f %t.s
// RUN: not tile-compile %s --target amdgpu:gfx950 -o %t.s 2>&1 | filecheck %s --check-prefix=NOFILE
// NOFILE: error: gfx950 matrix instructions take f8E4M3FN, f8E5M2, not f8E4M3FNUZ
// RUN: not test -e %t.s
//
// GPU-level input has no tile stage to print.
// RUN: not tile-compile %s --emit tile 2>&1 | filecheck %s --check-prefix=TILE
// TILE: errors.mlir: error: the input is GPU-level IR (no tile ops); --emit tile needs tile IR
//
// Input with neither tile ops nor a gpu.module.
// RUN: echo 'func.func @f() { return }' | not tile-compile - --target amdgpu:gfx942 2>&1 | filecheck %s --check-prefix=EMPTY
// EMPTY: <stdin>: error: nothing to compile: the input has no tile ops and no gpu.module
//
// --target and --target-desc exclude each other; --target-desc alone reads any file.
// RUN: not tile-compile %s --target amdgpu:gfx942 --target-desc %repo/tilemlir/backends/amdgpu/targets/gfx942.toml 2>&1 | filecheck %s --check-prefix=BOTH
// BOTH: error: give either --target or --target-desc, not both
// RUN: tile-compile %s --target-desc %repo/tilemlir/backends/amdgpu/targets/gfx942.toml | filecheck %s --check-prefix=DESC
// DESC: v_mfma_f32_16x16x32_fp8_fp8
//
// A parse error is located in the file.
// RUN: echo 'gpu.module @m {' | not tile-compile - --target amdgpu:gfx942 2>&1 | filecheck %s --check-prefix=PARSE
// PARSE: <stdin>:{{[0-9]+}}:{{[0-9]+}}: error:

module attributes {gpu.container_module, tile.target = "amdgpu:gfx942"} {
  gpu.module @kernels {
    gpu.func @one_mfma(%a: vector<8xf8E4M3FNUZ>, %out: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %zero = arith.constant dense<0.0> : vector<4xf32>
      %d = amdgpu.mfma 16x16x32 %a * %a + %zero blgp = none : vector<8xf8E4M3FNUZ>, vector<8xf8E4M3FNUZ>, vector<4xf32>
      vector.store %d, %out[%c0] : memref<4xf32>, vector<4xf32>
      gpu.return
    }
  }
}
