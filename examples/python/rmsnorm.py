"""RMSNorm in TileLang's style: y = x / sqrt(mean(x^2) + eps) * weight, a
block of rows per workgroup, the sum of squares with T.reduce_sum.

    .venv/bin/python examples/python/rmsnorm.py
"""

import numpy as np

import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[2])
def rmsnorm(M, N, block_M=2, eps=1e-6, dtype="float16"):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=256) as bx:
            x = T.alloc_fragment((block_M, N), "float")
            squares = T.alloc_fragment((block_M, N), "float")
            sum_sq = T.alloc_fragment((block_M,), "float")
            T.copy(X[bx * block_M, 0], x)
            for i, j in T.Parallel(block_M, N):
                squares[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(squares, sum_sq, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * T.rsqrt(sum_sq[i] / N + eps) * T.cast(W[j], "float")
            T.copy(x, Y[bx * block_M, 0])

    return main


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 512)).astype(np.float16)
    w = rng.standard_normal(512).astype(np.float16)
    y = rmsnorm(16, 512)(x, w)
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + 1e-6) * w
    print("max abs error vs float64 NumPy:", np.abs(y - ref).max())
