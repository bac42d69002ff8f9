"""Row softmax in TileLang's style: a block of rows in registers, the row
max and sum with T.reduce_*, exp2 in a T.Parallel.

    .venv/bin/python examples/python/softmax.py
"""

import numpy as np

import tilemlir
import tilemlir.language as T

LOG2E = 1.4426950408889634


@tilemlir.jit(out_idx=[1])
def softmax(M, N, block_M=4, dtype="float16", threads=128):
    accum_dtype = "float"

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), accum_dtype)
            row_max = T.alloc_fragment((block_M,), accum_dtype)
            row_sum = T.alloc_fragment((block_M,), accum_dtype)
            T.copy(X[bx * block_M, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.exp2((x[i, j] - row_max[i]) * LOG2E)
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] /= row_sum[i]
            T.copy(x, Y[bx * block_M, 0])

    return main


if __name__ == "__main__":
    x = np.random.default_rng(0).uniform(-4, 4, (64, 256)).astype(np.float16)
    y = softmax(64, 256)(x)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    print("max abs error vs float64 NumPy:", np.abs(y - e / e.sum(axis=1, keepdims=True)).max())
