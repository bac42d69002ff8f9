"""The seed article's mixed-precision GEMM (FP8 inputs, FP32 accumulation,
FP16 output), as the article prints it; only the imports differ
(`tilelang` -> `tilemlir`). Run it:

    .venv/bin/python examples/python/seed_mixed_precision_gemm.py [--size 256]

It compiles for an AMD chip (TILEMLIR_TARGET's, else this machine's, else gfx942), runs
on the SIMT emulator, compares with float64 NumPy on the fp8-rounded inputs,
and prints the head of the tile IR and the ISA's matrix instructions.
"""

import argparse

import numpy as np

import tilemlir as tl
import tilemlir.language as T


@tl.jit(target="rocm")  # the ROCm backend (TILEMLIR_TARGET or the AMD GPU here picks the chip; else gfx942)
def mixed_precision_gemm(A, B, C, M, N, K):
    # thread-block tile
    block_M, block_N, block_K = 128, 128, 32

    # explicit precision: FP8 inputs, FP32 accumulation, FP16 output;
    # the copies from global to shared memory convert A and B to FP8
    A_shared = T.alloc_shared((block_M, block_K), "float8_e4m3fn")
    B_shared = T.alloc_shared((block_K, block_N), "float8_e4m3fn")
    C_local = T.alloc_fragment((block_M, block_N), "float32")

    # clear the accumulator
    for i, j in T.Parallel(block_M, block_N):
        C_local[i, j] = 0.0

    # pipelined loop over K
    for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
        T.copy(A[by * block_M, ko * block_K], A_shared)
        T.copy(B[ko * block_K, bx * block_N], B_shared)
        # FP8 x FP8 -> FP32 on the matrix cores (MFMA)
        T.gemm(A_shared, B_shared, C_local, accum_dtype="float32")

    # write back, rounding the FP32 accumulator to FP16
    for i, j in T.Parallel(block_M, block_N):
        C[by * block_M + i, bx * block_N + j] = T.cast(C_local[i, j], "float16")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=256, help="M = N = K (default 256)")
    args = parser.parse_args()
    M = N = K = args.size
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)

    kernel = mixed_precision_gemm(a, b, c, M, N, K)  # compiles and runs
    kernel.run()

    compiled = kernel.kernel
    print(f"== {compiled.target}, engine {compiled.engine}; the tile IR built from the Python source (head):")
    print("\n".join(compiled.get_kernel_source().splitlines()[:12]))
    if "isa" in compiled.stage_names():
        print("== its ISA's matrix instructions (MFMA on CDNA, WMMA on RDNA):")
        matrix = [line.strip() for line in compiled.get_isa().splitlines()
                  if line.strip().startswith(("v_mfma", "v_wmma"))]
        print(f"{len(matrix)} matrix instructions, e.g. {matrix[0]}")

    import ml_dtypes

    a8 = a.astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    b8 = b.astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    reference = a8 @ b8
    error = np.abs(c.astype(np.float64) - reference).max()
    print(f"max abs error vs float64 NumPy: {error:.3g}")


if __name__ == "__main__":
    main()
