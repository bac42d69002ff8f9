"""A TileLang program's opening, with `import tilelang` spelled `import tilemlir as tilelang`."""

import tilemlir as tilelang
import tilemlir.language as T
from tilemlir.autotuner import autotune
from tilemlir.language import warp_reduce_sum
from tilemlir.profiler import do_bench  # noqa: F401 - the import is what is tested
from tilemlir.utils.tensor import map_torch_type, torch_assert_close  # noqa: F401

# Block shapes of 16 x 16 (8 and 16 rows): one and two waves of gfx942's 16x16x16 MFMA.
CONFIGS = [{"block_M": 16, "block_N": 16, "threads": 64}, {"block_M": 32, "block_N": 16, "threads": 64},
           {"block_M": 16, "block_N": 32, "threads": 128}]


@autotune(configs=CONFIGS, warmup=3, rep=20)
@tilelang.jit(out_idx=[-1], pass_configs={tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True})
def matmul(M, N, K, block_M=64, block_N=64, block_K=16, threads=128, dtype=T.float16, accum_dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(tilelang.cdiv(N, block_N), tilelang.cdiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


@tilelang.jit(out_idx=[-1])
def thread_indexed(N):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            ready = T.alloc_barrier(arrive_count=64)  # expect: T.alloc_barrier is not supported by tilemlir: NVIDIA-only
            B[tx] = A[tx]

    return main


@tilelang.jit(out_idx=[-1])
def warp_reduced(N):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(N):
                B[i] = warp_reduce_sum(A[i])  # expect: T.warp_reduce_sum is not supported by tilemlir: use T.reduce_sum on a fragment

    return main


@tilelang.jit(out_idx=[-1])
def misspelt(N):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(N):
                B[i] = T.sigmoidd(A[i])  # expect: tilemlir.language has no attribute 'sigmoidd'

    return main
