// The default GEMM's epilogue stores C with vectors: tile-infer-layout lays
// the accumulator out transposed (the MFMAs compute C^T += B^T A^T), so a
// lane holds runs of four consecutive columns of a row: 4 f16 in one
// global_store_dwordx2, 4 f32 in one global_store_dwordx4, never an element
// at a time.
//
// RUN: tile-compile %examples/gemm_whole_problem.mlir --target amdgpu:gfx942 --no-tuning-db | filecheck %s --check-prefix=HALF
// RUN: sed s/f8E4M3FNUZ/f8E4M3FN/g %examples/gemm_whole_problem.mlir | tile-compile - --target amdgpu:gfx950 --no-tuning-db | filecheck %s --check-prefix=HALF
// RUN: sed 's/4096xf32/4096xf16/g; s/: f32$/: f16/; s/, f32)/, f16)/' %s | tile-compile - --target amdgpu:gfx90a --no-tuning-db | filecheck %s --check-prefix=HALF
// RUN: sed 's/xf16>/xbf16>/g; s/4096xf32/4096xbf16/g; s/: f32$/: bf16/; s/, f32)/, bf16)/' %s | tile-compile - --target amdgpu:gfx942 --no-tuning-db | filecheck %s --check-prefix=HALF
// RUN: tile-compile %s --target amdgpu:gfx942 --no-tuning-db | filecheck %s --check-prefix=SINGLE
// RUN: tile-compile %s --target amdgpu:gfx950 --no-tuning-db | filecheck %s --check-prefix=SINGLE
// RUN: tile-compile %s --target amdgpu:gfx942 --no-tuning-db --emit tile | filecheck %s --check-prefix=LAYOUT
//
// A kernel that reduces rows (attention's softmax) is laid out transposed too:
// a lane holds one row of S, reduced mostly in its own registers, and P
// reaches the second gemm from registers, never through LDS element by
// element (ds_write_b16), with no spill on any chip.
// RUN: tile-compile %examples/kernels/flash_attention.mlir --target amdgpu:gfx942 --emit tile | filecheck %s --check-prefix=ATTN
// RUN: tile-compile %examples/kernels/flash_attention.mlir --target amdgpu:gfx942 --remarks=all 2>&1 | filecheck %s --check-prefix=ATTN-ISA
// RUN: tile-compile %examples/kernels/flash_attention.mlir --target amdgpu:gfx950 --remarks=all 2>&1 | filecheck %s --check-prefix=ATTN-ISA
// RUN: tile-compile %examples/kernels/flash_attention.mlir --target amdgpu:gfx90a --remarks=all 2>&1 | filecheck %s --check-prefix=ATTN-ISA

// HALF-NOT: global_store_short
// HALF: global_store_dwordx2
// HALF-NOT: global_store_short
// HALF: .end_amdgpu_metadata

// SINGLE-NOT: global_store_dword{{\s}}
// SINGLE: global_store_dwordx4
// SINGLE-NOT: global_store_dword{{\s}}
// SINGLE: .end_amdgpu_metadata

// LAYOUT: tile.layout = {instruction = array<i64: {{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}>, kind = "mma_accumulator", transposed = true, warps

// ATTN-NOT: kind = "mma_accumulator", warps
// ATTN: kind = "mma_accumulator", transposed = true, warps
// ATTN-NOT: kind = "mma_accumulator", warps

// ATTN-ISA: tile-stage-operands: gemm operand A stays in registers
// ATTN-ISA-NOT: ds_write_b16
// ATTN-ISA: .sgpr_spill_count: 0
// ATTN-ISA: .vgpr_spill_count: 0

module {
  func.func @gemm(%A: memref<4096x4096xf16>, %B: memref<4096x4096xf16>,
                  %C: memref<4096x4096xf32>) {
    %zero = arith.constant 0.0 : f32
    "tile.fill"(%C, %zero) : (memref<4096x4096xf32>, f32) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<4096x4096xf16>, memref<4096x4096xf16>, memref<4096x4096xf32>) -> ()
    return
  }
}
