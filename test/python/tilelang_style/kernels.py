"""Kernels for test_language.py, written as TileLang users write them (one
construct or two each). Kept in a file of their own: the frontend reads a
kernel's source, so these must be real functions in a real file, and the
negative cases' line numbers are this file's."""

import tilemlir
import tilemlir.language as T

# -- a factory (TileLang's matmul example) --------------------------------------

@tilemlir.jit(out_idx=[-1])
def matmul(M, N, K, block_M=64, block_N=64, block_K=32, dtype=T.float16, accum_dtype=T.float32,
           trans_B=False, stages=2):
    B_shape = (N, K) if trans_B else (K, N)
    B_tile = (block_N, block_K) if trans_B else (block_K, block_N)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor(B_shape, dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared(B_tile, dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.use_swizzle(panel_size=10, enable=True)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block_M, k * block_K], A_shared, coalesced_width=8)
                if trans_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=trans_B, policy=T.GemmWarpPolicy.Square,
                       k_pack=1)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = T.max(C_local[i, j], 0)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


# -- split-K with T.atomic_add (TileLang's gemm_splitk example) ------------------

@tilemlir.jit
def matmul_splitk(M, N, K, block_M=32, block_N=64, block_K=32, split_k=4, dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=128) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(C_local)
            slice_k = T.ceildiv(K, split_k)
            for ko in T.Pipelined(T.ceildiv(slice_k, block_K), num_stages=2):
                T.copy(A[by * block_M, bz * slice_k + ko * block_K], A_shared)
                T.copy(B[bz * slice_k + ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.atomic_add(C[by * block_M, bx * block_N], C_local)

    return main


# -- the direct style -----------------------------------------------------------

@tilemlir.jit
def matmul_direct(A, B, block_M: int = 64, block_N: int = 64, block_K: int = 32, dtype: T.dtype = T.float16):
    M, N, K = T.const("M, N, K")
    A: T.Tensor[[M, K], dtype]
    B: T.Tensor[[K, N], dtype]
    C = T.empty([M, N], dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=0):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


# -- scalar code: every elementwise function, variables, compile-time control --

@tilemlir.jit(out_idx=[1])
def elementwise(N, block=128, square=True, dtype="float32"):
    scales = (0.5, 2.0)

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N, 9), "float32")):
        with T.Kernel(T.ceildiv(N, block)) as bx:
            for i in T.Parallel(block):
                x = X[bx * block + i]
                Y[bx * block + i, 0] = T.exp(x) + T.exp2(x) * T.log2(T.abs(x) + 1.0)
                Y[bx * block + i, 1] = T.sqrt(T.abs(x)) + T.rsqrt(x * x + 1)
                Y[bx * block + i, 2] = T.tanh(x) - T.log(x * x + 2)
                Y[bx * block + i, 3] = T.min(x, 0.25) + T.max(x, -0.25)
                Y[bx * block + i, 4] = T.if_then_else(x > 0, x, -x * 3)
                Y[bx * block + i, 5] = T.Cast("float16", x * 1000)
                Y[bx * block + i, 6] = T.cast(T.cast(x * 100, "int32"), "float32")
                total = 0.0
                for s in scales:
                    total = total + x * s
                Y[bx * block + i, 7] = total ** 2 if square else total
                Y[bx * block + i, 8] = x / 4 if x < 0 and x > -1 else x * 4

    return main


@tilemlir.jit(out_idx=[2])
def math_functions(N, block=128):
    """TileLang's TIR math names on runtime values (and one on Python numbers)."""
    half = T.floor(2.5) / 4  # a Python number: 0.5

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Z: T.Tensor((N,), "float32"), Y: T.Tensor((N, 12), "float32")):
        with T.Kernel(T.ceildiv(N, block)) as bx:
            for i in T.Parallel(block):
                x = X[bx * block + i]
                z = Z[bx * block + i]
                Y[bx * block + i, 0] = T.sin(x) + T.cos(x) * 2
                Y[bx * block + i, 1] = T.tan(x * 0.4)
                Y[bx * block + i, 2] = T.erf(x)
                Y[bx * block + i, 3] = T.sigmoid(x)
                Y[bx * block + i, 4] = T.floor(x) + T.ceil(x) * 10
                Y[bx * block + i, 5] = T.trunc(x) + T.round(x) * 10
                Y[bx * block + i, 6] = T.log10(T.abs(x) + 1) + T.log1p(T.abs(x))
                Y[bx * block + i, 7] = T.exp10(x * half)
                Y[bx * block + i, 8] = T.pow(T.abs(x) + 0.5, 1.5)
                Y[bx * block + i, 9] = T.fmod(x, 0.75)
                Y[bx * block + i, 10] = T.clamp(x, -0.5, 1.0)
                Y[bx * block + i, 11] = (T.if_then_else(T.isnan(z), 1.0, 0.0) + T.if_then_else(T.isinf(z), 2.0, 0.0)
                                         + T.if_then_else(T.isfinite(z), 4.0, 0.0))

    return main


@tilemlir.jit(out_idx=[2])
def integer_functions(N, block=64):
    """TIR's integer names on runtime int32 values, negative ones included."""
    cap = int(T.max_value("int8")) * 100 + int(T.min_value("int8"))  # Python numbers: 12700 - 128

    @T.prim_func
    def main(A: T.Tensor((N,), "int32"), B: T.Tensor((N,), "int32"), Y: T.Tensor((N, 12), "int32")):
        with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
            for i in T.Parallel(block):
                a = A[bx * block + i]
                b = B[bx * block + i]
                Y[bx * block + i, 0] = T.floordiv(a, b)
                Y[bx * block + i, 1] = T.floormod(a, b)
                Y[bx * block + i, 2] = T.truncdiv(a, b)
                Y[bx * block + i, 3] = T.truncmod(a, b)
                Y[bx * block + i, 4] = T.bitwise_and(a, 0xF0F)
                Y[bx * block + i, 5] = T.bitwise_or(a, b)
                Y[bx * block + i, 6] = T.bitwise_xor(a, b)
                Y[bx * block + i, 7] = T.bitwise_not(a)
                Y[bx * block + i, 8] = T.shift_left(a, 3)
                Y[bx * block + i, 9] = T.shift_right(a, 2)
                Y[bx * block + i, 10] = T.min(a * 100, cap)
                Y[bx * block + i, 11] = a // b

    return main


@tilemlir.jit(out_idx=[1])
def running_sum(N, steps=4):
    @T.prim_func
    def main(X: T.Tensor((N, steps), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(N):
                acc = T.alloc_var("float32", init=0.0)
                for k in T.serial(steps):
                    acc += X[i, k]
                    if X[i, k] < 0:
                        acc *= 2
                Y[i] = acc

    return main


@tilemlir.jit(out_idx=[1])
def block_indices(G):
    @T.prim_func
    def main(X: T.Tensor((G, G, G, 64), "float32"), Y: T.Tensor((G, G, G, 64), "float32")):
        with T.Kernel(G, G, G, threads=64) as (bx, by, bz):
            tile = T.alloc_fragment((64,), "float32")
            T.copy(X[bz, by, bx, :], tile)
            for i in T.Parallel(64):
                tile[i] = tile[i] + bx * 100 + by * 10 + bz
            T.copy(tile, Y[bz, by, bx, :])

    return main


@tilemlir.jit(out_idx=[1])
def reshaped_view(M, N):
    @T.prim_func
    def main(X: T.Tensor((M * N,), "float16"), Y: T.Tensor((M, N), "float16")):
        X2 = T.Tensor((M, N), "float16", X.data)
        with T.Kernel(M // 16, threads=64) as bx:
            tile = T.alloc_shared((16, N), "float16")
            T.copy(X2[bx * 16:(bx + 1) * 16, :], tile)
            T.copy(tile, Y[bx * 16, 0])

    return main


@tilemlir.jit(out_idx=[2])
def conv_im2col(N, H, W, C, F, block_M=64, block_N=64, block_K=32):
    KH = 3
    M_total = N * H * W
    K_total = KH * KH * C

    @T.prim_func
    def main(X: T.Tensor((N, H, W, C), "float16"), Wt: T.Tensor((K_total, F), "float16"),
             Y: T.Tensor((M_total, F), "float16")):
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(M_total, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K_total, block_K), num_stages=1):
                T.im2col(X, A_shared, by, k, KH, 1, 1, 1)
                T.copy(Wt[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, acc)
            T.copy(acc, Y[by * block_M, bx * block_N])

    return main


@tilemlir.jit(out_idx=[1])
def row_stats(M, N, dtype=T.float32):
    @T.prim_func
    def main(X: T.Buffer((M, N), dtype), Y: T.Buffer((M, 4), T.float)):
        with T.Kernel(1, threads=[64, 2]) as bx:
            x = T.alloc_fragment((M, N), dtype)
            low = T.alloc_fragment((M,), dtype)
            total = T.alloc_fragment((M,), dtype)
            counts = T.alloc_fragment((M,), T.int32)
            T.copy(X[0:M, 0:N], x)
            T.reduce_min(x, low, dim=-1)
            T.fill(total, 1.0)
            T.reduce_sum(x, total, dim=1, clear=False)
            for i in T.Parallel(M):
                n = T.alloc_var(T.int32, init=0)
                for j in T.Serial(N):
                    if X[i, j] > 0:
                        n += 1
                for j in range(2):
                    n = n * 1
                for j in T.unroll(2):
                    n = n + 0
                counts[i] = n
            for i in T.Parallel(M):
                Y[i, 0] = low[i]
                Y[i, 1] = total[i]
                Y[i, 2] = counts[i]
                Y[i, 3] = T.cast(T.cast(X[i, 0], T.float8_e5m2), "float32")

    return main


@tilemlir.jit(out_idx=[1])
def magnitudes(M, N, dtype=T.float32):
    """T.reduce_absmax and T.reduce_abssum, one onto a destination's value."""
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, 2), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((M, N), dtype)
            peak = T.alloc_fragment((M,), dtype)
            total = T.alloc_fragment((M,), dtype)
            T.copy(X[0:M, 0:N], x)
            T.reduce_absmax(x, peak, dim=1)
            T.fill(total, 1.0)
            T.reduce_abssum(x, total, dim=1, clear=False)
            for i in T.Parallel(M):
                Y[i, 0] = peak[i]
                Y[i, 1] = total[i]

    return main


@tilemlir.jit(out_idx=[1, 2])
def prefix_sums(M, N, dim=1, reverse=False, dtype="float32"):
    """T.cumsum in place along `dim` of a 2-D shared tile, and of a 1-D one into another."""
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype), Z: T.Tensor((N,), dtype)):
        with T.Kernel(1, threads=128) as bx:
            tile = T.alloc_shared((M, N), dtype)
            row = T.alloc_shared((N,), dtype)
            sums = T.alloc_shared((N,), dtype)
            T.copy(X, tile)
            T.copy(X[0, 0:N], row)
            T.cumsum(tile, dim=dim, reverse=reverse)
            T.cumsum(row, sums, reverse=reverse)
            T.copy(tile, Y)
            T.copy(sums, Z)

    return main


@tilemlir.jit(out_idx=[2], target="cuda")
def copies_then_gemm_then_epilogue(stages=2):
    """Both tiles are read by the gemm after the second copy, and the loop does
    more than copy and multiply: neither cp.async scheme takes it on NVIDIA."""
    @T.prim_func
    def main(A: T.Tensor((256, 64), "float16"), B: T.Tensor((256, 64), "float16"),
             C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(4, num_stages=stages):
                T.copy(A[k * 64, 0], a)
                T.copy(B[k * 64, 0], b)
                T.gemm(a, b, acc, transpose_B=True)
                for i, j in T.Parallel(64, 64):
                    acc[i, j] = acc[i, j] * 0.5
            T.copy(acc, C[0, 0])

    return main


def block_sparse_matmul(M, N, K, block_M=32, block_N=32, block_K=16, num_stages=2, dtype="float16"):
    """TileLang's block-sparse GEMM: a bool mask per (row block, column block,
    K step) says which products count; the copies and the gemm sit under the
    condition inside the pipelined loop."""
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             BlockMask: T.Tensor((M // block_M, N // block_N, K // block_K), "bool"),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if BlockMask[by, bx, k]:
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def byte_types(N):
    """bool and uint8 tensors, fragments and variables: a mask from a
    comparison, nibbles of packed bytes, uint8 to float (200 is 200.0), a
    store that keeps the low byte, T.cast to bool of a float (0.5 is True)."""
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Packed: T.Tensor((N,), "uint8"), Keep: T.Tensor((N,), "bool"),
             Positive: T.Tensor((N,), "bool"), Nibbles: T.Tensor((N, 2), "float32"),
             Sum: T.Tensor((N,), "uint8"), Masked: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            flags = T.alloc_fragment((N,), "bool")
            low = T.alloc_shared((N,), "uint8")
            T.copy(Packed, low)
            for i in T.Parallel(N):
                flags[i] = T.cast(X[i], "bool") and Keep[i]
                Positive[i] = X[i] > 0
                Nibbles[i, 0] = T.cast(low[i] & 0xF, "float32")
                Nibbles[i, 1] = T.cast(low[i] >> 4, "float32") + 16.0 * T.cast(T.uint8(200), "float32")
                Sum[i] = low[i] + Packed[i] + 100
            for i in T.Parallel(N):
                Masked[i] = T.if_then_else(flags[i], T.cast(Packed[i], "float32"), -1.0)

    return main


def bool_order(N):
    """Bools order as 0 < 1: ordered comparisons and T.max / T.min of two
    bools (True the larger), == of bools."""
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Keep: T.Tensor((N,), "bool"), Order: T.Tensor((N, 5), "bool")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(N):
                Order[i, 0] = (X[i] > 0) > Keep[i]
                Order[i, 1] = (X[i] > 0) <= Keep[i]
                Order[i, 2] = T.max(X[i] > 0, Keep[i])
                Order[i, 3] = T.min(X[i] > 0, Keep[i])
                Order[i, 4] = (X[i] > 0) == Keep[i]

    return main


def element_atomics(N, bins, blocks):
    """T.atomic_add/max/min of single elements: a histogram (many iterations
    on one bin, across blocks), a global max and min of floats (NaN inputs
    lose), an integer min, and a block-level add (once per block)."""
    @T.prim_func
    def main(X: T.Tensor((blocks, N), "float32"), Index: T.Tensor((blocks, N), "int32"),
             Hist: T.Tensor((bins,), "int32"), Extremes: T.Tensor((2,), "float32"),
             Least: T.Tensor((1,), "int32"), Count: T.Tensor((1,), "float32")):
        with T.Kernel(blocks, threads=64) as bx:
            for i in T.Parallel(N):
                T.atomic_add(Hist[Index[bx, i] % bins], 1)
                T.atomic_max(Extremes[0], X[bx, i])
                T.atomic_min(Extremes[1], X[bx, i], memory_order="relaxed")
                T.atomic_min(Least[0], Index[bx, i] - bx)
            T.atomic_add(Count[0], 0.5)

    return main


@tilemlir.jit(out_idx=[-1])
def split_sum_then_combine(B, S, D, splits):
    """Two kernels in one prim_func, run in order, sharing a T.alloc_global
    workspace (split-KV decode's shape): the first sums each split's rows
    into Partial, the second sums the splits. Block-level stores write each
    block's total, which the same block then reads back."""
    chunk = S // splits

    @T.prim_func
    def main(X: T.Tensor((B, S, D), "float32"), Totals: T.Tensor((B, splits), "float32"),
             Out: T.Tensor((B, D), "float32")):
        Partial = T.alloc_global((B, splits, D), "float32")
        with T.Kernel(B, splits, threads=64) as (b, s):
            rows = T.alloc_fragment((chunk, D), "float32")
            sums = T.alloc_fragment((D,), "float32")
            total = T.alloc_fragment((), "float32")
            T.copy(X[b, s * chunk:(s + 1) * chunk, :], rows)
            T.reduce_sum(rows, sums, dim=0)
            T.reduce_sum(sums, total, dim=0)
            T.copy(sums, Partial[b, s, :])
            Totals[b, s] = total[()]
            Totals[b, s] = Totals[b, s] * 2.0
        with T.Kernel(B, threads=64) as b:
            parts = T.alloc_fragment((splits, D), "float32")
            combined = T.alloc_fragment((D,), "float32")
            T.copy(Partial[b, :, :], parts)
            T.reduce_sum(parts, combined, dim=0)
            T.copy(combined, Out[b, :])

    return main


@tilemlir.jit(out_idx=[-1])
def split_kv_decode(batch, heads, seq, dim, block_N=32, splits=2):
    """Decoding attention split over the keys: a T.macro opens each kernel
    (the partial attention of every split, then their merge), the partial
    results live in T.alloc_global workspaces, the merge keeps its running
    values in T.alloc_local([1]) scalars, and a layout annotation is given
    (and not followed). One K/V head shared by `heads` query heads."""
    scale = dim ** -0.5 * 1.4426950408889634  # 1/sqrt(d), in log2 units
    chunk = seq // splits

    @T.macro
    def partial_attention(Q, K, V, lse, partial):
        with T.Kernel(batch, splits, threads=128) as (b, s):
            q = T.alloc_shared((heads, dim), "float16")
            k = T.alloc_shared((block_N, dim), "float16")
            v = T.alloc_shared((block_N, dim), "float16")
            scores = T.alloc_fragment((heads, block_N), "float32")
            probs = T.alloc_fragment((heads, block_N), "float16")
            acc = T.alloc_fragment((heads, dim), "float32")
            top = T.alloc_fragment((heads,), "float32")
            top_before = T.alloc_fragment((heads,), "float32")
            rescale = T.alloc_fragment((heads,), "float32")
            row = T.alloc_fragment((heads,), "float32")
            total = T.alloc_fragment((heads,), "float32")
            T.annotate_layout({q: tilemlir.layout.make_swizzled_layout(q)})
            T.copy(Q[b, :, :], q)
            T.fill(acc, 0.0)
            T.fill(total, 0.0)
            T.fill(top, -T.infinity("float32"))
            for t in T.Pipelined(chunk // block_N, num_stages=2):
                T.copy(K[b, s * chunk + t * block_N:s * chunk + (t + 1) * block_N, :], k)
                T.copy(V[b, s * chunk + t * block_N:s * chunk + (t + 1) * block_N, :], v)
                T.gemm(q, k, scores, transpose_B=True, clear_accum=True)
                T.copy(top, top_before)
                T.reduce_max(scores, top, dim=1, clear=False)
                for i in T.Parallel(heads):
                    rescale[i] = T.exp2((top_before[i] - top[i]) * scale)
                for i, j in T.Parallel(heads, block_N):
                    scores[i, j] = T.exp2((scores[i, j] - top[i]) * scale)
                T.reduce_sum(scores, row, dim=1)
                for i in T.Parallel(heads):
                    total[i] = total[i] * rescale[i] + row[i]
                for i, j in T.Parallel(heads, dim):
                    acc[i, j] *= rescale[i]
                T.copy(scores, probs)
                T.gemm(probs, v, acc)
            for i, j in T.Parallel(heads, dim):
                acc[i, j] /= total[i]
            for i in T.Parallel(heads):
                total[i] = T.log2(total[i]) + top[i] * scale
            T.copy(total, lse[b, :, s])
            T.copy(acc, partial[b, :, s, :])

    @T.macro
    def merge(lse, partial, Out):
        with T.Kernel(heads, batch, threads=64) as (h, b):
            out = T.alloc_fragment((dim,), "float32")
            largest = T.alloc_local([1], "float32")
            weights = T.alloc_local([1], "float32")
            weight = T.alloc_local([1], "float32")
            T.clear(out)
            T.clear(weights)
            largest[0] = -T.infinity("float32")
            for s in T.serial(splits):
                largest[0] = T.max(largest[0], lse[b, h, s])
            for s in T.serial(splits):
                weights[0] += T.exp2(lse[b, h, s] - largest[0])
            for s in T.serial(splits):
                weight[0] = T.exp2(lse[b, h, s] - largest[0]) / weights[0]
                for d in T.Parallel(dim):
                    out[d] += weight[0] * partial[b, h, s, d]
            T.copy(out, Out[b, h, :])

    @T.prim_func
    def main(Q: T.Tensor((batch, heads, dim), "float16"), K: T.Tensor((batch, seq, dim), "float16"),
             V: T.Tensor((batch, seq, dim), "float16"), Out: T.Tensor((batch, heads, dim), "float32")):
        lse = T.alloc_global((batch, heads, splits), "float32")
        partial = T.alloc_global((batch, heads, splits, dim), "float32")
        partial_attention(Q, K, V, lse, partial)
        merge(lse, partial, Out)

    return main


@tilemlir.jit(out_idx=[-1])
def macro_values(N):
    """A T.macro that returns a value, called in a T.Parallel body, and one
    that takes a keyword argument and its default."""
    @T.macro
    def scaled(x, factor=2.0):
        return x * factor

    @T.macro
    def store_sum(dst, i, a, b=0.0):
        dst[i] = a + b

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        assert N % 2 == 0, f"N = {N} is odd"
        with T.Kernel(1, threads=64):
            for i in T.Parallel(N):
                store_sum(B, i, scaled(A[i]), b=scaled(1.0, factor=0.5))

    return main


@tilemlir.jit(out_idx=[1, 3])
def unit_dim_buffers(M, N):
    """TileLang's unit-dim habits: a (1, N) shared row read as a 1-D
    fragment, a 1-D sum into a (1,) fragment (kept across two halves with
    clear=False), a row max into an (M, 1) fragment, and a fragment read from
    and written to windows of a shared tile."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), Sums: T.Tensor((M,), "float32"),
             Maxes: T.Tensor((M, 1), "float32"), Halves: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=64) as bx:
            row = T.alloc_shared((1, N), "float32")
            tile = T.alloc_shared((M, N), "float32")
            half = T.alloc_fragment((N // 2,), "float32")
            total = T.alloc_fragment((1,), "float32")
            block = T.alloc_fragment((M // 2, N), "float32")
            top = T.alloc_fragment((M // 2, 1), "float32")
            T.copy(A[bx, :], row)
            T.copy(row[0, 0:N // 2], half)
            T.reduce_sum(half, total, dim=0)
            T.copy(row[0, N // 2:N], half)
            T.reduce_sum(half, total, dim=0, clear=False)
            Sums[bx] = total[0]
            T.copy(A, tile)
            T.copy(tile[M // 2:M, :], block)
            T.reduce_max(block, top, dim=1)
            for i, j in T.Parallel(M // 2, N):
                block[i, j] = block[i, j] * 2.0
            T.copy(block, tile[0:M // 2, :])
            if bx == 0:
                T.copy(top, Maxes[M // 2:M, :])
                T.copy(tile, Halves)

    return main


def scalar_forms(N):
    """Bools in arithmetic and as an index (0 or 1, as in C), a block-level
    store after a T.Parallel wrote the same tensor, and the scalar values an
    atomic takes: a named value, a T.alloc_var, an element of a rank-0
    fragment."""
    @T.prim_func
    def main(F: T.Tensor((N,), "bool"), A: T.Tensor((2,), "float32"), Ints: T.Tensor((N, 2), "int32"),
             Picked: T.Tensor((N,), "float32"), Out: T.Tensor((N,), "float32"), Acc: T.Tensor((3,), "float32")):
        with T.Kernel(1, threads=64):
            x = T.alloc_fragment((N,), "float32")
            total = T.alloc_fragment((), "float32")
            best = T.alloc_var("float32", init=-1.0)
            for i in T.Parallel(N):
                Ints[i, 0] = F[i] + 1
                Ints[i, 1] = F[i] + F[i]
                Picked[i] = A[F[i]]
                Out[i] = T.cast(i, "float32")
                x[i] = T.cast(i, "float32")
            Out[N - 1] = -5.0
            T.reduce_sum(x, total, dim=0)
            best = T.max(best, 3.0)
            doubled = total[()] * 2.0
            T.atomic_add(Acc[0], doubled)
            T.atomic_max(Acc[1], best)
            T.atomic_min(Acc[2], total[()])

    return main


@tilemlir.jit(out_idx=[])
def stream_k_gemm(M, N, K, block_M=16, block_N=64, block_K=32, programs=6, dtype="float16"):
    """Stream-K: `programs` blocks split the K steps of all output tiles
    evenly; a `while` walks one block's share tile by tile (a runtime-length
    pipelined loop per tile), storing a tile it covers whole and adding the
    partial sums of one it covers in part with element-wise f16 atomics (C
    starts at zero). The walk is a T.macro with annotated parameters, its
    counters `T.alloc_fragment((1,), "int32", "local")` scalars."""
    tiles_n = N // block_N
    per_tile = K // block_K
    total = (M // block_M) * tiles_n * per_tile
    share = -(-total // programs)

    @T.macro
    def walk(pid: T.int32, A: T.Tensor, B: T.Tensor, C: T.Tensor, a: T.SharedTensor, b: T.SharedTensor,
             acc: T.LocalTensor):
        step = T.alloc_fragment((1,), "int32", "local")
        stop = T.alloc_fragment((1,), "int32", "local")
        step[0] = pid * share
        last = T.min((pid + 1) * share, total)
        while step[0] < last:
            stop[0] = T.min(step[0] - step[0] % per_tile + per_tile, last)
            tile = step[0] // per_tile
            tm = tile // tiles_n
            tn = tile % tiles_n
            first = step[0] % per_tile
            T.clear(acc)
            for k in T.Pipelined(stop[0] - step[0], num_stages=2):
                T.copy(A[tm * block_M, (first + k) * block_K], a)
                T.copy(B[(first + k) * block_K, tn * block_N], b)
                T.gemm(a, b, acc)
            if first == 0 and stop[0] % per_tile == 0:
                T.copy(acc, C[tm * block_M, tn * block_N])
            else:
                for i, j in T.Parallel(block_M, block_N):
                    T.atomic_add(C[tm * block_M + i, tn * block_N + j], acc[i, j])
            step[0] = stop[0]

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(programs, threads=64) as pid:
            a = T.alloc_shared((block_M, block_K), dtype)
            b = T.alloc_shared((block_K, block_N), dtype)
            acc = T.alloc_fragment((block_M, block_N), "float32")
            walk(pid, A, B, C, a, b, acc)

    return main


def half_atomics(N):
    """Element-wise atomic adds into f16 and bf16 tensors, many iterations
    on each element (each add rounds to the element's type)."""
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), H: T.Tensor((4,), "float16"), G: T.Tensor((4,), "bfloat16")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(N):
                T.atomic_add(H[i % 4], X[i])
                T.atomic_add(G[i % 4], X[i])

    return main


@tilemlir.jit(out_idx=[-1])
def repeated_pipelined_loop(K, rounds=2):
    """A pipelined loop run again by an outer loop, with an odd trip count:
    the next run's prologue overwrites the stage the last iteration read."""
    @T.prim_func
    def main(A: T.Tensor((16, K), "float16"), B: T.Tensor((K, 64), "float16"),
             C: T.Tensor((rounds, 16, 64), "float32")):
        with T.Kernel(1, threads=64):
            a = T.alloc_shared((16, 32), "float16")
            b = T.alloc_shared((32, 64), "float16")
            acc = T.alloc_fragment((16, 64), "float32")
            for r in T.serial(rounds):
                T.clear(acc)
                for k in T.Pipelined(K // 32 - r, num_stages=2):
                    T.copy(A[0, k * 32], a)
                    T.copy(B[k * 32, 0], b)
                    T.gemm(a, b, acc)
                T.copy(acc, C[r, :, :])

    return main


@tilemlir.jit(out_idx=[-2, -1])
def row_sums_of(M, N, dtype):
    """Row sums across lanes (64-bit values exchanged as two 32-bit halves)
    and an element-wise update, in `dtype` (int64, int16, float64)."""
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), S: T.Tensor((M,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=128):
            tile = T.alloc_shared((M, N), dtype)
            rows = T.alloc_fragment((M, N), dtype)
            sums = T.alloc_fragment((M,), dtype)
            T.copy(X, tile)
            T.copy(tile, rows)
            T.reduce_sum(rows, sums, dim=1)
            T.copy(sums, S)
            for i, j in T.Parallel(M, N):
                Y[i, j] = rows[i, j] * 3 + 1

    return main


# -- per-thread (SIMT) code: kernels that call T.get_thread_binding ------------

def gemv_per_thread(N, K, block_n, block_k, dtype="float16"):
    """y = B @ a, one thread per output row: every thread stages the block's
    slice of `a` into shared memory (all storing the same values) and its own
    row of B, then reads both; the barriers are the compiler's."""
    @T.prim_func
    def main(a: T.Tensor((K,), dtype), B: T.Tensor((N, K), dtype), y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_n), threads=block_n) as bn:
            row = T.get_thread_binding(0)
            a_s = T.alloc_shared((block_k,), dtype)
            b_s = T.alloc_shared((block_n, block_k), dtype)
            total = T.alloc_local((1,), "float32")
            T.clear(total)
            for kb in T.serial(T.ceildiv(K, block_k)):
                for k in T.serial(block_k):
                    a_s[k] = a[kb * block_k + k]
                    b_s[row, k] = B[bn * block_n + row, kb * block_k + k]
                for k in T.serial(block_k):
                    total[0] += a_s[k].astype("float32") * b_s[row, k].astype("float32")
            y[bn * block_n + row] = total[0]

    return main


def gemv_split_threads(N, K, block_n, lanes, width, dtype="float16"):
    """y = B @ a with threads (block_n, lanes): each thread loads `width`
    elements into its own arrays (T.alloc_local, T.vectorized), sums their
    products, and the `lanes` threads of a row add into shared memory
    atomically; the row's threads then all store the same total."""
    step = lanes * width

    @T.prim_func
    def main(a: T.Tensor((K,), dtype), B: T.Tensor((N, K), dtype), y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_n), threads=(block_n, lanes)) as bn:
            tn, tk, _ = T.get_thread_bindings()
            a_local = T.alloc_local((width,), dtype)
            b_local = T.alloc_local((width,), dtype)
            row_sums = T.alloc_shared((block_n,), "float32")
            partial = T.alloc_local((1,), "float32")
            if tk == 0:
                row_sums[tn] = 0
            T.clear(partial)
            for kb in T.serial(T.ceildiv(K, step)):
                for k in T.vectorized(width):
                    a_local[k] = a[kb * step + tk * width + k]
                    b_local[k] = B[bn * block_n + tn, kb * step + tk * width + k]
                for k in T.serial(width):
                    partial[0] += a_local[k].astype("float32") * b_local[k].astype("float32")
            T.atomic_add(row_sums[tn], partial[0])
            y[bn * block_n + tn] = row_sums[tn]

    return main


def prefix_sums_per_thread(M, N):
    """Exclusive prefix sums of each row (N a power of two) by the
    work-efficient scan over shared memory: tile ops (T.copy in and out)
    around per-thread sweeps. Each step reads its pair under the thread's
    condition, waits (T.sync_threads: every thread reaches it), then writes:
    a branch on the thread may not both read another thread's element and
    write one (no barrier could separate them); the compiler adds the
    barriers between steps."""
    levels = N.bit_length() - 1

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=N // 2) as bx:
            tid = T.get_thread_binding()
            s = T.alloc_shared((N,), "float32")
            T.copy(A[bx, 0:N], s)
            left = T.alloc_var("float32", 0.0)
            right = T.alloc_var("float32", 0.0)
            for level in T.serial(levels):
                offset = T.shift_left(1, level)
                i = tid * offset * 2 + offset - 1
                left = 0.0
                if i + offset < N:
                    left = s[i] + s[i + offset]
                T.sync_threads()
                if i + offset < N:
                    s[i + offset] = left
            if tid == 0:
                s[N - 1] = 0
            for step in T.serial(levels):
                offset = T.shift_left(1, levels - 1 - step)
                i = tid * offset * 2 + offset - 1
                left = 0.0
                right = 0.0
                if i + offset < N:
                    left = s[i]
                    right = s[i + offset]
                T.sync_threads()
                if i + offset < N:
                    s[i] = right
                if i + offset < N:
                    s[i + offset] = right + left
            T.copy(s, B[bx, 0:N])

    return main


# -- T.alloc_reducer ------------------------------------------------------------

def gemv_reducer(M, N, block_m, block_n):
    """o = A @ x with a reducer per block of rows, updated by a T.Parallel
    over a (rows, columns) tile in each step of a pipelined loop; the shared
    tile is allocated inside the loop (as TileLang's GEMV example does)."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), x: T.Tensor((N,), "float16"), o: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_m), threads=128) as bm:
            acc = T.alloc_reducer(block_m, "float32", replication="all")
            T.clear(acc)
            for kb in T.Pipelined(T.ceildiv(N, block_n), num_stages=2):
                a_s = T.alloc_shared((block_m, block_n), "float16")
                T.copy(A[bm * block_m, kb * block_n], a_s)
                x_f = T.alloc_fragment((block_n,), "float16")
                T.copy(x[kb * block_n], x_f)
                for i, j in T.Parallel(block_m, block_n):
                    acc[i] += a_s[i, j].astype("float32") * x_f[j].astype("float32")
            T.finalize_reducer(acc)
            T.copy(acc, o[bm * block_m])

    return main


def reducer_statistics(M, N):
    """Largest magnitude and sum of squares of a tile (two (1,) reducers in one
    loop), and each column's largest positive element (updates under an `if`:
    untouched columns keep the initial value)."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), stats: T.Tensor((2,), "float32"), cols: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((M, N), "float32")
            T.copy(A, a)
            largest = T.alloc_reducer((1,), "float32", op="max", replication="all")
            squares = T.alloc_reducer((1,), "float32")
            column = T.alloc_reducer((N,), "float32", op="max", replication="none")
            T.fill(largest, 0)
            T.fill(squares, 0)
            T.fill(column, -1.0)
            for i, j in T.Parallel(M, N):
                v = T.abs(a[i, j])
                largest[0] = T.max(v, largest[0])
                squares[0] = squares[0] + v * v
                if a[i, j] > 0:
                    column[j] = T.max(column[j], a[i, j])
            T.finalize_reducer(largest)
            T.finalize_reducer(squares)
            T.finalize_reducer(column)
            stats[0] = largest[0]
            stats[1] = squares[0]
            T.copy(column, cols)

    return main


# -- device asserts and block bindings ------------------------------------------

def checked_double(N, limit):
    """B = 2 A, asserting on the device that every element is below `limit`."""
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(N):
                assert A[i] < limit, "A is below the limit"
                B[i] = A[i] * 2.0

    return main


def block_bound_copy(rows, blocks, width):
    """B = A over a (blocks, rows) grid whose indices come from
    T.get_block_bindings (z, which the grid lacks, is 0)."""
    @T.prim_func
    def main(A: T.Tensor((rows, blocks * width), "float32"), B: T.Tensor((rows, blocks * width), "float32")):
        with T.Kernel(blocks, rows, threads=width):
            bx, by, bz = T.get_block_bindings()
            for i in T.Parallel(width):
                B[by, bx * width + i] = A[by, T.get_block_binding(0) * width + i] + bz

    return main


def uint32_bits(N):
    """Unsigned 32-bit words: nibbles by shift and mask, a comparison and a
    division above 2^31, a conversion to float, and wrapping stores."""
    @T.prim_func
    def main(W: T.Tensor((N,), "uint32"), nibble: T.Tensor((N,), "int32"), big: T.Tensor((N,), "bool"),
             half: T.Tensor((N,), "uint32"), as_float: T.Tensor((N,), "float32"), wrapped: T.Tensor((N,), "uint32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(N):
                w = W[i]
                nibble[i] = T.cast((w >> 28) & 0xF, "int32")
                big[i] = w > 2147483648
                half[i] = w // 2
                as_float[i] = T.cast(w, "float32")
                wrapped[i] = w + T.uint32(4294967295)

    return main


def warp_shuffles(N):
    """Warp shuffles in per-thread code: a butterfly sum over each warp of 32
    (T.shfl_xor, carried by a variable through T.unroll), and one step of
    T.shfl_down, T.shfl_up and T.shfl_sync each."""
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), sums: T.Tensor((N // 32,), "float32"), down: T.Tensor((N,), "float32"),
             up: T.Tensor((N,), "float32"), picked: T.Tensor((N,), "int32")):
        with T.Kernel(1, threads=N):
            tx = T.get_thread_binding()
            v = T.alloc_var("float32")
            v = A[tx]
            for k in T.unroll(5):
                v = v + T.shfl_xor(v, 16 >> k)
            if tx % 32 == 0:
                sums[tx // 32] = v
            down[tx] = T.shfl_down(A[tx], 3)
            up[tx] = T.shfl_up(A[tx], 2)
            picked[tx] = T.shfl_sync(tx * 10, 37)

    return main


def uint32_wrapping(N):
    """uint32 arithmetic wrapping at every step, as C's unsigned int does: a
    xorshift step, 0 - 1, a doubling past 2^32 compared, ~w, a comparison
    with -1 (the largest uint32), and (w << 4) >> 4."""
    @T.prim_func
    def main(W: T.Tensor((N,), "uint32"), shuffled: T.Tensor((N,), "uint32"), less: T.Tensor((N,), "float32"),
             flags: T.Tensor((N,), "int32"), low: T.Tensor((N,), "uint32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(N):
                x = W[i]
                x = x ^ (x << 13)
                x = x ^ (x >> 17)
                x = x ^ (x << 5)
                shuffled[i] = x
                less[i] = T.cast(W[i] - T.uint32(1), "float32")
                flags[i] = (T.cast(W[i] * T.uint32(2) > 10, "int32") + 2 * T.cast(~W[i] > T.uint32(5), "int32")
                            + 4 * T.cast(W[i] > -1, "int32"))
                low[i] = (W[i] << 4) >> 4

    return main


def reducer_edge_forms(M, N):
    """A (1, N) column-sum reducer, and an (M, N) min reducer indexed by all of
    the loop's variables (one update per element)."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), cols: T.Tensor((1, N), "float32"), least: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=64):
            a = T.alloc_fragment((M, N), "float32")
            T.copy(A, a)
            colsum = T.alloc_reducer((1, N), "float32")
            smallest = T.alloc_reducer((M, N), "float32", op="min")
            T.fill(colsum, 1.0)
            T.fill(smallest, 0.25)
            for i, j in T.Parallel(M, N):
                colsum[0, j] += a[i, j]
                smallest[i, j] = T.min(smallest[i, j], a[i, j])
            T.finalize_reducer(colsum)
            T.finalize_reducer(smallest)
            T.copy(colsum, cols)
            T.copy(smallest, least)

    return main


def warp_votes(N):
    """Warp votes in per-thread code: whether any / every lane of the
    thread's warp of 32 holds a positive value, and the ballot of them."""
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), some: T.Tensor((N,), "int32"), every: T.Tensor((N,), "int32"),
             ballot: T.Tensor((N,), "uint32")):
        with T.Kernel(1, threads=N):
            tx = T.get_thread_binding()
            positive = A[tx] > 0
            some[tx] = T.any_sync(positive)
            every[tx] = T.all_sync(positive)
            ballot[tx] = T.ballot_sync(positive)

    return main


def uint32_builtins(N):
    """uint32 values through TIR's builtins and selections: T.bitwise_not,
    T.shift_left, T.max, T.floordiv, T.if_then_else of loads, stay unsigned."""
    @T.prim_func
    def main(W: T.Tensor((N,), "uint32"), out: T.Tensor((N, 5), "uint32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(N):
                w = W[i]
                out[i, 0] = T.cast(T.bitwise_not(w) > T.uint32(5), "uint32")
                out[i, 1] = T.shift_left(w, 4) >> 4
                out[i, 2] = (T.max(w, w) + T.uint32(1)) >> 1
                out[i, 3] = (T.floordiv(w, 1) + T.uint32(1)) >> 1
                out[i, 4] = (T.if_then_else(i % 2 == 0, W[i], W[0]) + T.uint32(1)) >> 1

    return main


def view_exchange(N):
    """Per-thread code writing a global tensor through a 2-D view of it and
    reading another thread's element through the tensor itself."""
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        grid = T.Tensor((2, N // 2), "float32", B.data)
        with T.Kernel(1, threads=N):
            tx = T.get_thread_binding()
            grid[tx // (N // 2), tx % (N // 2)] = A[tx] * 2.0
            C[tx] = B[(tx + 1) % N]

    return main


def powers_of_two(N):
    """Y = 2^X by T.exp2, element by element (subnormal results for X below -126)."""
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(N):
                Y[i] = T.exp2(X[i])

    return main
