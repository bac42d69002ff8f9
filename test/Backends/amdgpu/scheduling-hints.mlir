// The workgroup-size hint llc gets from the tile choice: convert-gpu-to-rocdl
// turns the kernel's known_block_size (tile-tiling's `threads`) into
// "amdgpu-flat-work-group-size"="T,T", and llc writes T into the ISA metadata.
//
// No "amdgpu-waves-per-eu" is set. Measured (mfma_busy_ratio, spills) on the
// seed GEMM and bench/amd_vs_triton.py's cases: as a minimum equal to the
// occupancy the LDS allows it caps the registers (512 / W per lane) and made
// the seed on gfx950 spill (W = 5: 0 -> 132 spills, 0.356 -> 0.079); as a
// maximum ("1,W") it changed nothing; neither is kept.
//
// RUN: tile-compile %examples/gemm_whole_problem.mlir --tiling "block=128,128,64 stages=1" --emit llvm | filecheck %s --check-prefix=LLVM
// RUN: tile-compile %examples/gemm_whole_problem.mlir --tiling "block=128,128,64 threads=512 stages=1" --emit llvm | filecheck %s --check-prefix=LLVM512
// RUN: tile-compile %examples/gemm_whole_problem.mlir --tiling "block=128,128,64 stages=1" --emit isa | filecheck %s --check-prefix=ISA
// RUN: tile-compile %examples/gemm_whole_problem.mlir --tiling "block=128,128,64 threads=512 stages=1" --emit isa | filecheck %s --check-prefix=ISA512

// LLVM: define amdgpu_kernel void @gemm_kernel0({{.*}}) #[[ATTRS:[0-9]+]]
// LLVM: attributes #[[ATTRS]] = { "amdgpu-flat-work-group-size"="256,256"
// LLVM-NOT: amdgpu-waves-per-eu
// LLVM512: attributes #{{[0-9]+}} = { "amdgpu-flat-work-group-size"="512,512"

// ISA: .amdhsa_kernel gemm_kernel0
// ISA: .max_flat_workgroup_size: 256
// ISA: .reqd_workgroup_size:
// ISA-NEXT: - 256
// ISA-NEXT: - 1
// ISA-NEXT: - 1
// ISA512: .max_flat_workgroup_size: 512
