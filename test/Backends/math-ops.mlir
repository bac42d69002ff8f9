// Math ops the code generators have no instruction for: tile-expand-math
// expands them before code generation, or refuses them at the op.
//
// math.tanh in a GEMM epilogue (llc used to stop at "no libcall available for
// ftanh"): ISA without calls on every AMD chip, PTX for sm_90a.
// RUN: tile-compile %S/Inputs/gemm_tanh.mlir --target amdgpu:gfx90a | filecheck %s --check-prefix=ISA
// RUN: tile-compile %S/Inputs/gemm_tanh.mlir --target amdgpu:gfx942 | filecheck %s --check-prefix=ISA
// RUN: tile-compile %S/Inputs/gemm_tanh.mlir --target amdgpu:gfx950 | filecheck %s --check-prefix=ISA
// ISA: v_exp_f32
// ISA-NOT: s_swappc
// ISA-NOT: __ocml
// RUN: tile-compile %S/Inputs/gemm_tanh.mlir --target nvidia:sm_90a --emit ptx | filecheck %s --check-prefix=PTX
// PTX: ex2.approx
// PTX-NOT: .extern
//
// An op no expansion exists for: a located error naming the op and the target,
// exit status 1, and never llc's message.
// RUN: tile-compile %s --target amdgpu:gfx942 --emit isa --split-input-file --verify-diagnostics
// RUN: not tile-opt %s --split-input-file -p 'builtin.module(gpu.module(tile-expand-math{target=amdgpu:gfx942}))' 2>&1 | filecheck %s --check-prefix=REFUSED
// REFUSED: math-ops.mlir:31:12: error: 'math.exp' on f64 has no lowering for amdgpu:gfx942: the amdgpu code generator lowers absf, ceil, copysign, floor, fma, round, roundeven, rsqrt, sqrt, trunc on f64, and tilemlir expands math ops on f32 only
// REFUSED: error: 'math.erfc' on f32 has no lowering for amdgpu:gfx942
// REFUSED-NOT: llc

// f64 exp: AMD has no f64 exp instruction, and tilemlir expands f32 only.
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%x: memref<4xf64>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %a = memref.load %x[%c0] : memref<4xf64>
      // expected-error@below {{'math.exp' on f64 has no lowering for amdgpu:gfx942}}
      %e = math.exp %a : f64
      memref.store %e, %x[%c0] : memref<4xf64>
      gpu.return
    }
  }
}

// -----

// erfc: no instruction, and no expansion (1 - erf would lose every digit for large x).
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%x: memref<4xf32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %a = memref.load %x[%c0] : memref<4xf32>
      // expected-error@below {{'math.erfc' on f32 has no lowering for amdgpu:gfx942: the amdgpu code generator lowers}}
      %e = math.erfc %a : f32
      memref.store %e, %x[%c0] : memref<4xf32>
      gpu.return
    }
  }
}
