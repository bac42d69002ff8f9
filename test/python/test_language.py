"""tilemlir.language and tilemlir.jit: TileLang kernels as written, built into
tile IR, compiled, run and compared with float64 NumPy; and every construct
the frontend refuses, with its message and the user's Python line."""

from __future__ import annotations

import math
import re
import traceback
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from tilelang_style import bad_kernels
from tilelang_style import kernels as K
from tilelang_style.examples import load_example

import tilemlir
import tilemlir.language as T
from tilemlir.diagnostics import UserError
from tilemlir.runtime.dtypes import convert

pytestmark = pytest.mark.filterwarnings("ignore::tilemlir.language.TileLangWarning")

REPO = Path(__file__).resolve().parents[2]
U16, U32 = 2.0 ** -11, 2.0 ** -24
RNG = np.random.default_rng(0)
# The seed article's kernel, as printed (imports changed): the example file is the kernel.
SEED = load_example("seed_mixed_precision_gemm").mixed_precision_gemm


def gemm_bound(product, magnitude, k, out_unit):
    gamma = (k + 1) * U32 / (1 - (k + 1) * U32)
    return out_unit * np.abs(product) + (1 + out_unit) * gamma * magnitude + 2.0 ** -24


def assert_within(actual, expected, bound):
    error = np.abs(convert(actual, np.float64) - expected)
    worst = np.unravel_index(np.argmax(error - bound), error.shape)
    assert np.all(error <= bound), f"at {worst}: {error[worst]} > bound {bound[worst]}"


# -- the seed article's kernel -----------------------------------------------

@pytest.mark.parametrize("target", ["amdgpu:gfx942", "amdgpu:gfx950"])
def test_seed_kernel_as_printed_matches_float64(target, monkeypatch):
    """The seed's mixed_precision_gemm (fp8 e4m3fn shared tiles filled from f16,
    f32 accumulation, f16 out), no T.Kernel: the grid comes from bx/by."""
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    SEED._cache.clear()
    M = N = Kd = 256
    a = RNG.standard_normal((M, Kd)).astype(np.float16)
    b = RNG.standard_normal((Kd, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    launch = SEED(a, b, c, M, N, Kd)
    a8, b8 = (x.astype(ml_dtypes.float8_e4m3fn).astype(np.float64) for x in (a, b))
    product = a8 @ b8
    assert_within(c, product, gemm_bound(product, np.abs(a8) @ np.abs(b8), Kd, U16))
    c[:] = 0
    launch.run()  # runs again on the same arrays, as the seed's `kernel.run()`
    assert_within(c, product, gemm_bound(product, np.abs(a8) @ np.abs(b8), Kd, U16))
    kernel = launch.kernel
    assert str(kernel.target) == target
    assert 'grid = array<i64: 2, 2>' in kernel.get_kernel_source()
    if target == "amdgpu:gfx950":  # OCP fp8 is gfx950's own: fp8 MFMAs
        assert re.search(r"v_mfma_\w+_f8f6f4|v_mfma_\w+fp8", kernel.get_isa())
    else:  # gfx942 reads FNUZ: the gemm runs in f16 on the fp8-rounded values, and says so
        assert "v_mfma_f32_32x32x8_f16" in kernel.get_isa() or "_f16" in kernel.get_isa()
        assert "compute exactly in f16" in (kernel.fp8_note or "")


def test_seed_kernel_grid_is_inferred_and_said():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = SEED.compile(M=128, N=384, K=64, A=_spec((128, 64)), B=_spec((64, 384)),
                                                C=_spec((128, 384)))
    assert 'grid = array<i64: 3, 1>' in kernel.get_kernel_source()
    assert any("no T.Kernel: launched as grid (3, 1) of 128 threads" in str(w.message) for w in caught)


def _spec(shape):
    return np.zeros(shape, np.float16)


# -- whole kernels -------------------------------------------------------------

@pytest.mark.parametrize("trans_B", [False, True])
def test_factory_matmul_relu(trans_B):
    kernel = K.matmul(128, 128, 96, trans_B=trans_B)
    assert K.matmul(128, 128, 96, trans_B=trans_B) is kernel  # cached per arguments
    a = RNG.uniform(-1, 1, (128, 96)).astype(np.float16)
    b = RNG.uniform(-1, 1, (128, 96) if trans_B else (96, 128)).astype(np.float16)
    c = kernel(a, b)
    b64 = b.astype(np.float64).T if trans_B else b.astype(np.float64)
    product = a.astype(np.float64) @ b64
    bound = gemm_bound(product, np.abs(a.astype(np.float64)) @ np.abs(b64), 96, U16)
    assert_within(c, np.maximum(product, 0), bound)
    source = kernel.get_kernel_source()
    assert f"transpose_b = {'true' if trans_B else 'false'}" in source
    assert "tile.num_stages = 2" in source


def test_direct_style_returns_its_output_and_compiles_alone():
    a = RNG.uniform(-1, 1, (64, 64)).astype(np.float16)
    b = RNG.uniform(-1, 1, (64, 128)).astype(np.float16)
    c = K.matmul_direct(a, b)
    product = a.astype(np.float64) @ b.astype(np.float64)
    assert_within(c, product, gemm_bound(product, np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)),
                                         64, U16))
    kernel = K.matmul_direct.compile(M=64, N=128, K=64)
    assert "memref<64x64xf16>, %arg1: memref<64x128xf16>, %arg2: memref<64x128xf16>" in \
        kernel.get_kernel_source()
    assert "tile.num_stages" not in kernel.get_kernel_source()  # num_stages=0: not pipelined
    with pytest.raises(UserError, match="'B' dim 0 is 32, but K = 64"):
        K.matmul_direct(a, np.zeros((32, 64), np.float16))


@pytest.mark.parametrize("target", ["amdgpu:gfx942", "metax:xcore1000"])
def test_softmax_and_rmsnorm_examples(target, monkeypatch):
    from general_kernel_cases import rmsnorm_model, softmax_model

    monkeypatch.setenv("TILEMLIR_TARGET", target)
    softmax = load_example("softmax").softmax
    x = RNG.uniform(-4, 4, (16, 256)).astype(np.float16)
    y = softmax(16, 256)(x)
    expected, bound = softmax_model([x, y])[1]
    assert_within(y, expected, bound)
    rmsnorm = load_example("rmsnorm").rmsnorm
    x = RNG.standard_normal((8, 512)).astype(np.float16)
    w = RNG.standard_normal(512).astype(np.float16)
    y = rmsnorm(8, 512)(x, w)
    expected, bound = rmsnorm_model([x, w, y])[2]
    assert_within(y, expected, bound)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_example(causal):
    from attention_cases import Attention, model

    flashattn = load_example("flash_attention").flashattn
    case = Attention(batch=1, heads=2, kv_heads=2, seq=128, dim=64, causal=causal)
    q, k, v = (RNG.uniform(-2, 2, (1, 128, 2, 64)).astype(np.float16) for _ in range(3))
    kernel = flashattn(1, 2, 128, 64, causal)
    out = kernel(q, k, v)
    expected, bound = model(case, [q, k, v, out])[3]
    assert_within(out, expected, bound)
    source = kernel.get_kernel_source()
    assert "tile.window = array<i64: 1, 3>" in source  # Q[bz, rows, by, :]
    assert source.count('"tile.gemm"') == 2


def test_flash_attention_example_at_head_dim_128_steps_down_to_the_stages_that_fit(monkeypatch):
    """The example's defaults (64x64 blocks, num_stages=2) at d = 128 need
    85,504 bytes of LDS (Q, and two stages of K and V, rows padded against
    bank conflicts; P stays in registers), over gfx942's 65,536, and 81,920
    unpadded: the loop is pipelined with the one stage that fits, padding
    kept, a remark says so, and the result stays right."""
    from attention_cases import Attention, model

    monkeypatch.setenv("TILEMLIR_TARGET", "amdgpu:gfx942")
    monkeypatch.setenv("TILEMLIR_ENGINE", "emulator")
    flashattn = load_example("flash_attention").flashattn
    case = Attention(batch=1, heads=1, kv_heads=1, seq=128, dim=128, causal=False)
    q, k, v = (RNG.uniform(-2, 2, (1, 128, 1, 128)).astype(np.float16) for _ in range(3))
    kernel = flashattn(1, 1, 128, 128, False)
    out = kernel(q, k, v)
    expected, bound = model(case, [q, k, v, out])[3]
    assert_within(out, expected, bound)
    remarks = [d.message for d in tilemlir.compile(kernel.get_kernel_source(), target="amdgpu:gfx942",
                                                   emit="gpu").remarks]
    assert any(m.startswith("tile-pipeline: 2 stages need 85504 bytes of LDS, gfx942 allows 65536: "
                            "pipelined with 1 stage (51200 bytes) instead") for m in remarks), remarks
    assert not any("row padding" in m and "dropped" in m for m in remarks), remarks


@pytest.mark.parametrize("target, blocks, threads, causal", [
    ("amdgpu:gfx942", (128, 128), 256, False),  # TileLang's own MHA configuration
    ("amdgpu:gfx942", (64, 128), 128, True),
    ("metax:xcore1000", (128, 64), 128, False),
])
def test_flash_attention_whose_stages_fit_only_without_q_reads_q_into_registers(monkeypatch, target, blocks,
                                                                                  threads, causal):
    """At d = 128 these blocks need more LDS for Q and one stage of K and V
    than the chip has (gfx942 128x128: 98,304 bytes of 65,536): Q, copied
    once before the loop and read only as the first gemm's A, is read from
    global memory into registers before the loop instead, and the loop
    keeps the stages that then fit, with a remark; the result stays right."""
    from attention_cases import Attention, model

    monkeypatch.setenv("TILEMLIR_TARGET", target)
    monkeypatch.setenv("TILEMLIR_ENGINE", "emulator")
    flashattn = load_example("flash_attention").flashattn
    seq = 256
    case = Attention(batch=1, heads=1, kv_heads=1, seq=seq, dim=128, causal=causal)
    q, k, v = (RNG.uniform(-2, 2, (1, seq, 1, 128)).astype(np.float16) for _ in range(3))
    kernel = flashattn(1, 1, seq, 128, causal, block_M=blocks[0], block_N=blocks[1], threads=threads)
    out = kernel(q, k, v)
    expected, bound = model(case, [q, k, v, out])[3]
    assert_within(out, expected, bound)
    result = tilemlir.compile(kernel.get_kernel_source(), target=target, emit="gpu")
    remarks = [d.message for d in result.remarks]
    assert any(re.match(r"tile-pipeline: not even 1 stage fits \S+'s 65536 bytes of LDS with the "
                        r"\d+x128xf16 tile.alloc_shared at .*: the gemms of this loop read it from global "
                        r"memory into registers, once, before the loop, and the loop is pipelined with \d "
                        r"stages?", m) for m in remarks), remarks
    assert result.artifact.count("tile.read_from_global") == 0  # lowered: no LDS, no attribute left


def test_flash_attention_of_one_key_block_reads_q_into_registers(monkeypatch):
    """A sequence of one 128-key block: canonicalize folds the loop of one
    iteration away before tile-pipeline, and Q, K and V (96 KiB) exceed
    gfx942's LDS in the kernel itself; tile-lower-to-gpu reads Q from global
    memory instead, with a remark."""
    from attention_cases import Attention, model

    monkeypatch.setenv("TILEMLIR_TARGET", "amdgpu:gfx942")
    monkeypatch.setenv("TILEMLIR_ENGINE", "emulator")
    flashattn = load_example("flash_attention").flashattn
    case = Attention(batch=1, heads=1, kv_heads=1, seq=128, dim=128, causal=False)
    q, k, v = (RNG.uniform(-2, 2, (1, 128, 1, 128)).astype(np.float16) for _ in range(3))
    kernel = flashattn(1, 1, 128, 128, False, block_M=128, block_N=128, threads=256)
    out = kernel(q, k, v)
    expected, bound = model(case, [q, k, v, out])[3]
    assert_within(out, expected, bound)
    remarks = [d.message for d in tilemlir.compile(kernel.get_kernel_source(), target="amdgpu:gfx942",
                                                   emit="gpu").remarks]
    assert any(re.match(r"tile-lower-to-gpu: the 128x128xf16 tile.alloc_shared at .* would take the kernel over "
                        r"gfx942's 65536 bytes of LDS: its gemms read it from global memory into registers "
                        r"instead \(65536 bytes of LDS\)", m) for m in remarks), remarks


def test_a_gemm_operand_reused_across_a_loop_is_read_into_registers_once():
    """Beyond attention: a 128x256 A tile multiplies every 128-column block of
    B in turn (C = A B, one row of blocks per workgroup). A and one stage of
    B's 256x128 blocks need 131,072 bytes, over gfx942's 65,536: A is read
    into registers before the loop, and B keeps the one stage that fits."""

    @tilemlir.jit(out_idx=[2], target="amdgpu:gfx942", engine="emulator")
    def rows(M, N, K, block_M=128, block_N=128):
        @T.prim_func
        def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
            with T.Kernel(T.ceildiv(M, block_M), threads=256) as bx:
                A_shared = T.alloc_shared((block_M, K), "float16")
                B_shared = T.alloc_shared((K, block_N), "float16")
                C_local = T.alloc_fragment((block_M, block_N), "float32")
                T.copy(A[bx * block_M, 0], A_shared)
                for j in T.Pipelined(T.ceildiv(N, block_N), num_stages=2):
                    T.copy(B[0, j * block_N], B_shared)
                    T.clear(C_local)
                    T.gemm(A_shared, B_shared, C_local)
                    T.copy(C_local, C[bx * block_M, j * block_N])
        return main

    a = RNG.uniform(-1, 1, (256, 256)).astype(np.float16)
    b = RNG.uniform(-1, 1, (256, 384)).astype(np.float16)
    kernel = rows(256, 384, 256)
    c = kernel(a, b)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert_within(c, exact, gemm_bound(exact, np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64),
                                       256, U32))
    report = kernel.compile("isa", report=True).report
    (compiled,) = report["kernels"]
    assert compiled["shared_bytes"] <= 65536 and not compiled["spills"]
    (decisions,) = report["decisions"]
    a_buffer = next(b for b in decisions["shared_buffers"] if b["shape"] == [128, 256])
    assert a_buffer["bytes"] == 0 and "read from global memory into registers" in a_buffer["use"]


def test_elementwise_functions_and_compile_time_python():
    x = np.linspace(-3, 3, 256).astype(np.float32)
    got = K.elementwise(256)(x)
    x64 = x.astype(np.float64)
    f16 = (x * np.float32(1000)).astype(np.float16).astype(np.float64)
    expected = np.stack([
        np.exp(x64) + np.exp2(x64) * np.log2(np.abs(x64) + 1),
        np.sqrt(np.abs(x64)) + 1 / np.sqrt(x64 * x64 + 1),
        np.tanh(x64) - np.log(x64 * x64 + 2),
        np.minimum(x64, 0.25) + np.maximum(x64, -0.25),
        np.where(x64 > 0, x64, -x64 * 3),
        f16,
        np.trunc((x * np.float32(100)).astype(np.float64)),
        (x64 * 2.5) ** 2,
        np.where((x64 < 0) & (x64 > -1), x64 / 4, x64 * 4),
    ], axis=1)
    bound = 64 * U32 * (np.abs(expected) + 1)
    bound[:, 5] = U32 * np.abs(f16)
    assert_within(got, expected, bound)
    assert not np.isnan(got).any()
    source = K.elementwise(256).get_kernel_source()
    for op in ("math.exp ", "math.exp2", "math.log2", "math.sqrt", "math.rsqrt", "math.tanh", "math.log ",
               "arith.minnumf", "arith.maxnumf", "arith.select", "arith.fptosi"):
        assert op in source, op


@pytest.mark.parametrize("engine", ["reference", "emulator"])
def test_tir_math_functions(engine):
    """sin, cos, tan, erf, sigmoid, floor, ceil, trunc, round (halves away
    from zero, as CUDA's roundf), log10, log1p, exp10, pow, fmod, clamp and
    isnan / isinf / isfinite, against float64."""
    n = 256
    x = np.linspace(-3, 3, n).astype(np.float32)
    x[:4] = (-2.5, -0.5, 0.5, 2.5)  # halves: round goes away from zero
    z = np.linspace(-1, 1, n).astype(np.float32)
    z[:3] = (np.nan, np.inf, -np.inf)
    kernel = tilemlir.language.compile(K.math_functions.function(n), out_idx=[2], engine=engine)
    got = kernel(x, z)
    x64 = x.astype(np.float64)
    rounded = np.sign(x64) * np.floor(np.abs(x64) + 0.5)
    erf = np.vectorize(math.erf)(x64)
    expected = np.stack([
        np.sin(x64) + np.cos(x64) * 2, np.tan(x64 * 0.4), erf, 1 / (1 + np.exp(-x64)),
        np.floor(x64) + np.ceil(x64) * 10, np.trunc(x64) + rounded * 10,
        np.log10(np.abs(x64) + 1) + np.log1p(np.abs(x64)), 10.0 ** (x64 * 0.5), (np.abs(x64) + 0.5) ** 1.5,
        np.fmod(x64, 0.75), np.clip(x64, -0.5, 1.0),
        np.isnan(z) * 1.0 + np.isinf(z) * 2.0 + np.isfinite(z) * 4.0,
    ], axis=1)
    bound = 64 * U32 * (np.abs(expected) + 1)
    bound[:, 9] = 4 * U32 * 0.75  # fmod is exact; its divisor 0.75 is exact too
    assert_within(got, expected, bound)
    assert list(got[:3, 11]) == [1.0, 2.0, 2.0] and (got[3:, 11] == 4.0).all()
    source = kernel.get_kernel_source()
    for op in ("math.sin", "math.cos", "math.tan", "math.erf", "math.floor", "math.ceil", "math.trunc",
               "math.round", "math.log10", "math.log1p", "math.exp2", "math.powf", "arith.remf", "arith.cmpf uno"):
        assert op in source, op


@pytest.mark.parametrize("engine,target", [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"),
                                           ("emulator", "amdgpu:gfx950"), ("emulator", "metax:xcore1000")])
def test_reduce_absmax_and_abssum(engine, target, monkeypatch):
    """max |x| and 1 + sum |x| per row (the destination's 1 kept as it is, not
    made absolute), with the rows spread over lanes and waves."""
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    kernel = tilemlir.language.compile(K.magnitudes.function(16, 64), out_idx=[1], engine=engine)
    x = RNG.uniform(-2, 1, (16, 64)).astype(np.float32)
    x[3, 5] = -7.5  # the row's magnitude comes from a negative element
    got = kernel(x)
    x64 = np.abs(x.astype(np.float64))
    expected = np.stack([x64.max(axis=1), 1 + x64.sum(axis=1)], axis=1)
    bound = np.zeros_like(expected)
    bound[:, 1] = 64 * U32 * (x64.sum(axis=1) + 1)
    assert_within(got, expected, bound)
    assert got[3, 0] == 7.5
    source = kernel.get_kernel_source()
    assert 'kind = "absmax"' in source and 'kind = "abssum"' in source


@pytest.mark.parametrize("engine,target", [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"),
                                           ("emulator", "metax:xcore1000")])
@pytest.mark.parametrize("dim,reverse", [(1, False), (0, True)])
def test_cumsum(engine, target, dim, reverse, monkeypatch):
    """Inclusive prefix sums along either dim, forward or reversed, of a
    shared tile in place and of a 1-D tile into another."""
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    kernel = tilemlir.language.compile(K.prefix_sums.function(8, 32, dim, reverse), out_idx=[1, 2],
                                       engine=engine)
    x = RNG.uniform(-1, 1, (8, 32)).astype(np.float32)
    y, z = kernel(x)
    x64 = x.astype(np.float64)

    def cumulative(a, axis):
        return np.flip(np.cumsum(np.flip(a, axis), axis), axis) if reverse else np.cumsum(a, axis)

    expected_y, expected_z = cumulative(x64, dim), cumulative(x64[0], 0)
    assert_within(y, expected_y, 40 * U32 * (np.abs(x64).sum(axis=dim, keepdims=True) + 1))
    assert_within(z, expected_z, 40 * U32 * (np.abs(x64[0]).sum() + 1))


def test_cumsum_of_a_fragment_is_refused_at_its_line():
    @tilemlir.jit(out_idx=[1])
    def fragment_sums(N):
        @T.prim_func
        def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
            with T.Kernel(1, threads=64):
                x = T.alloc_fragment((N,), "float32")
                T.copy(X, x)
                T.cumsum(x)
                T.copy(x, Y)

        return main

    with pytest.raises(UserError, match=r"test_language\.py:\d+:\d+: error: T\.cumsum: x is a fragment buffer; "
                                        r"prefix sums are built on shared and global buffers"):
        fragment_sums(64)


@pytest.mark.parametrize("engine,target", [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"),
                                           ("emulator", "amdgpu:gfx950"), ("emulator", "metax:xcore1000")])
def test_block_sparse_matmul_with_a_bool_mask(engine, target, monkeypatch):
    """TileLang's block-sparse GEMM as written: a bool tensor's element as an
    `if` condition around copies and a gemm in a pipelined loop (the copies
    move out of the condition to be prefetched, and the gemm stays under it)."""
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    m, n, k, bm, bn, bk = 64, 64, 64, 32, 32, 16
    kernel = tilemlir.language.compile(K.block_sparse_matmul(m, n, k, bm, bn, bk), out_idx=[-1], engine=engine)
    a, b = (RNG.uniform(-1, 1, shape).astype(np.float16) for shape in ((m, k), (k, n)))
    mask = RNG.random((m // bm, n // bn, k // bk)) > 0.5
    mask[0, 0] = False  # one block of zeros, one of every product
    mask[1, 1] = True
    c = kernel(a, b, mask)
    expected, magnitude = np.zeros((m, n)), np.zeros((m, n))
    for i, j, step in zip(*np.nonzero(mask)):
        rows, cols, ks = (slice(x * size, (x + 1) * size) for x, size in ((i, bm), (j, bn), (step, bk)))
        a64, b64 = a[rows, ks].astype(np.float64), b[ks, cols].astype(np.float64)
        expected[rows, cols] += a64 @ b64
        magnitude[rows, cols] += np.abs(a64) @ np.abs(b64)
    assert_within(c, expected, gemm_bound(expected, magnitude, k, 2.0 ** -11))


@pytest.mark.parametrize("engine,target", [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"),
                                           ("emulator", "metax:xcore1000")])
def test_bool_and_uint8_tensors(engine, target, monkeypatch):
    """bool and uint8 are bytes in memory: a bool loads as `!= 0`, a uint8
    zero-extends to i32 (C's promotion) and a store keeps its low byte."""
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    n = 64
    kernel = tilemlir.language.compile(K.byte_types(n), out_idx=[3, 4, 5, 6], engine=engine)
    x = RNG.uniform(-1, 1, n).astype(np.float32)
    x[:3] = (0.0, 0.5, -0.0)
    packed = RNG.integers(0, 256, n).astype(np.uint8)
    packed[:2] = (200, 255)
    keep = RNG.random(n) > 0.3
    positive, nibbles, total, masked = kernel(x, packed, keep)
    assert positive.dtype == np.bool_ and total.dtype == np.uint8
    np.testing.assert_array_equal(positive, x > 0)
    np.testing.assert_array_equal(nibbles[:, 0], packed & 0xF)
    np.testing.assert_array_equal(nibbles[:, 1], (packed >> 4) + 16.0 * 200)
    np.testing.assert_array_equal(total, ((2 * packed.astype(np.int64) + 100) & 0xFF).astype(np.uint8))
    np.testing.assert_array_equal(masked, np.where((x != 0) & keep, packed.astype(np.float32), -1.0))


@pytest.mark.parametrize("engine,target", [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"),
                                           ("emulator", "metax:xcore1000")])
def test_bools_order_as_zero_and_one(engine, target, monkeypatch):
    """True > False, as in Python and C: an i1 compared signed would take True for -1."""
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    n = 64
    kernel = tilemlir.language.compile(K.bool_order(n), out_idx=[2], engine=engine)
    x = RNG.uniform(-1, 1, n).astype(np.float32)
    keep = RNG.random(n) > 0.5
    order = kernel(x, keep)
    positive = x > 0
    expected = np.stack([positive > keep, positive <= keep, positive | keep, positive & keep, positive == keep], 1)
    np.testing.assert_array_equal(order, expected)


@pytest.mark.parametrize("engine,target", [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"),
                                           ("emulator", "metax:xcore1000")])
def test_element_atomics(engine, target, monkeypatch):
    """Element-wise atomics in a T.Parallel run once per iteration, a
    block-level one once per block; float max/min ignore NaN."""
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    n, bins, blocks = 96, 8, 3
    kernel = tilemlir.language.compile(K.element_atomics(n, bins, blocks), engine=engine)
    x = RNG.uniform(-4, 4, (blocks, n)).astype(np.float32)
    x[1, 5] = np.nan
    index = RNG.integers(0, 1000, (blocks, n)).astype(np.int32)
    hist, extremes = np.zeros(bins, np.int32), np.array([-np.inf, np.inf], np.float32)
    least, count = np.array([1 << 30], np.int32), np.array([1.0], np.float32)
    kernel(x, index, hist, extremes, least, count)
    np.testing.assert_array_equal(hist, np.bincount((index % bins).reshape(-1), minlength=bins))
    np.testing.assert_array_equal(extremes, [np.nanmax(x), np.nanmin(x)])
    assert least[0] == (index - np.arange(blocks)[:, None]).min()
    assert count[0] == 1.0 + 0.5 * blocks


@pytest.mark.parametrize("engine,target", [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"),
                                           ("emulator", "metax:xcore1000")])
def test_two_kernels_and_a_global_workspace(engine, target, monkeypatch):
    """Kernels of one prim_func run in order and share a T.alloc_global
    workspace, which the call neither takes nor returns (out_idx does not
    count it); a block-level store is made once and read back by the block."""
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    b, s, d, splits = 2, 32, 16, 4
    kernel = K.split_sum_then_combine.function(b, s, d, splits)
    kernel = tilemlir.language.compile(kernel, out_idx=[-1], engine=engine)
    x = RNG.uniform(-1, 1, (b, s, d)).astype(np.float32)
    totals = np.zeros((b, splits), np.float32)
    out = kernel(x, totals)
    x64 = x.astype(np.float64)
    assert_within(out, x64.sum(axis=1), 40 * U32 * (np.abs(x64).sum(axis=1) + 1))
    chunked = x64.reshape(b, splits, s // splits, d)
    assert_within(totals, 2 * chunked.sum(axis=(2, 3)), 80 * U32 * (np.abs(chunked).sum(axis=(2, 3)) + 1))


@pytest.mark.parametrize("engine,target", [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"),
                                           ("emulator", "amdgpu:gfx950"), ("emulator", "metax:xcore1000")])
def test_split_kv_decode_with_macros(engine, target, monkeypatch):
    """T.macro bodies that open kernels, two kernels sharing T.alloc_global
    workspaces, T.alloc_local scalars and a layout annotation (a hint)."""
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    batch, heads, seq, dim = 1, 64, 128, 64
    with pytest.warns(tilemlir.language.TileLangWarning, match="T.annotate_layout is accepted and not followed"):
        kernel = tilemlir.language.compile(K.split_kv_decode.function(batch, heads, seq, dim), out_idx=[-1],
                                           engine=engine)
    q = RNG.standard_normal((batch, heads, dim)).astype(np.float16)
    k, v = (RNG.standard_normal((batch, seq, dim)).astype(np.float16) for _ in range(2))
    out = kernel(q, k, v)
    scores = np.einsum("bhd,bsd->bhs", q.astype(np.float64), k.astype(np.float64)) / np.sqrt(dim)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    expected = np.einsum("bhs,bsd->bhd", p, v.astype(np.float64))
    # P is rounded to f16 before the second gemm (2^-11 relative), as flash attention does.
    assert_within(out, expected, 2.0 ** -10 * np.einsum("bhs,bsd->bhd", p, np.abs(v.astype(np.float64))) + 1e-5)


def test_macros_return_values_and_take_keywords():
    kernel = K.macro_values(64)
    a = RNG.uniform(-1, 1, 64).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), a * 2.0 + 0.5)


def test_a_macro_called_from_python_names_the_line():
    with pytest.raises(UserError, match=r"test_language\.py:\d+:\d+: error: T\.macro 'helper' is built where"):
        @T.macro
        def helper(x):
            return x

        helper(1.0)


@pytest.mark.parametrize("engine,target", [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"),
                                           ("emulator", "metax:xcore1000")])
def test_unit_dims_and_shared_windows(engine, target, monkeypatch):
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    m, n = 8, 64
    kernel = tilemlir.language.compile(K.unit_dim_buffers.function(m, n), out_idx=[1, 3], engine=engine)
    a = RNG.uniform(-1, 1, (m, n)).astype(np.float32)
    maxes = np.zeros((m, 1), np.float32)
    sums, halves = kernel(a, maxes)
    a64 = a.astype(np.float64)
    assert_within(sums, a64.sum(axis=1), 40 * U32 * (np.abs(a64).sum(axis=1) + 1))
    np.testing.assert_array_equal(maxes[m // 2:, 0], a[m // 2:].max(axis=1))
    np.testing.assert_array_equal(halves, np.concatenate([2 * a[m // 2:], a[m // 2:]]))


@T.macro
def _add_into(total, value):
    total += value


def _variables_through_macros_and_fills():
    @T.prim_func
    def main(A: T.Tensor((4,), "int32"), B: T.Tensor((4, 2), "int32"), C: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=32) as bx:
            s = T.alloc_var("int32", 0)
            t = T.alloc_local([1], "int32")
            _add_into(s, A[bx])
            for k in T.serial(3):
                T.fill(t, k + A[bx])
            B[bx, 0] = s
            B[bx, 1] = t[0]
            v = C[bx]
            if A[bx] > 11:
                C[bx] = v + 1.0

    return main


@pytest.mark.parametrize("engine", ["reference", "emulator"])
def test_variables_through_macros_fills_and_a_block_level_update(engine):
    """A variable handed to a T.macro is assigned by it; T.fill of a
    T.alloc_local in a loop is carried; a block-level read-modify-write
    under a branch is made once (thread 0, between barriers)."""
    kernel = tilemlir.language.compile(_variables_through_macros_and_fills(), engine=engine)
    a = np.array([10, 11, 12, 13], np.int32)
    b, c = np.zeros((4, 2), np.int32), np.zeros(4, np.float32)
    kernel(a, b, c)
    np.testing.assert_array_equal(b, np.stack([a, a + 2], axis=1))
    np.testing.assert_array_equal(c, [0.0, 0.0, 1.0, 1.0])


def test_a_recursive_macro_and_an_early_return_are_refused_at_their_lines():
    @T.macro
    def forever(x):
        forever(x)

    @T.macro
    def early(x, flag):
        if flag:
            return x * 2.0
        return x

    @T.prim_func
    def recursive(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            A[0] = forever(A[1])

    @T.prim_func
    def returning_early(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            A[0] = early(A[1], True)

    with pytest.raises(UserError, match=r"test_language\.py:\d+:\d+: error: T\.macro calls nest more than 32"):
        recursive.built  # noqa: B018 - built when first needed
    with pytest.raises(UserError, match=r"test_language\.py:\d+:\d+: error: a T\.macro returns at its end only"):
        returning_early.built  # noqa: B018


def test_only_the_returned_prim_func_is_built():
    """A factory's prim_funcs are built when first needed: one it defines
    but does not return (a variant for other sizes) may hold constructs
    tilemlir refuses."""
    @tilemlir.jit(out_idx=[-1], engine="reference")
    def variants(n, split):
        @T.prim_func
        def unused(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(1):
                T.not_a_tilelang_name(A)

        @T.prim_func
        def used(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(1):
                for i in T.Parallel(n):
                    B[i] = A[i] + 1.0

        return unused if split else used

    a = RNG.uniform(-1, 1, 64).astype(np.float32)
    np.testing.assert_array_equal(variants(64, False)(a), a + 1.0)
    with pytest.raises(UserError, match=r"test_language\.py:\d+:\d+: error: .*not_a_tilelang_name"):
        variants(64, True)


@pytest.mark.parametrize("engine,target", [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"),
                                           ("emulator", "metax:xcore1000")])
def test_bools_block_stores_and_atomic_values(engine, target, monkeypatch):
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    n = 64
    kernel = tilemlir.language.compile(K.scalar_forms(n), engine=engine)
    flags = RNG.random(n) > 0.5
    a = np.array([10.0, 20.0], np.float32)
    ints, picked, out = np.zeros((n, 2), np.int32), np.zeros(n, np.float32), np.zeros(n, np.float32)
    acc = np.array([1.0, 2.0, 5000.0], np.float32)
    kernel(flags, a, ints, picked, out, acc)
    np.testing.assert_array_equal(ints, np.stack([flags + 1, 2 * flags.astype(np.int32)], axis=1))
    np.testing.assert_array_equal(picked, a[flags.astype(int)])
    np.testing.assert_array_equal(out, np.append(np.arange(n - 1, dtype=np.float32), -5.0))
    total = n * (n - 1) / 2
    np.testing.assert_array_equal(acc, [1.0 + 2 * total, 3.0, total])
    assert T.bool(0.5) and not T.bool(0.0)


@pytest.mark.parametrize("engine,target", [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"),
                                           ("emulator", "amdgpu:gfx950"), ("emulator", "metax:xcore1000")])
def test_stream_k_gemm(engine, target, monkeypatch):
    """A `while` loop carrying scalars and the accumulator, a runtime-length
    pipelined loop inside it, f16 element atomics, macro parameter
    annotations and "local" fragments of one element."""
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    m, n, k = 32, 128, 128
    kernel = tilemlir.language.compile(K.stream_k_gemm.function(m, n, k), out_idx=[], engine=engine)
    a, b = RNG.uniform(-1, 1, (m, k)).astype(np.float16), RNG.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    kernel(a, b, c)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64
    # A tile split over up to 3 blocks: each partial sum rounded to f16 when it is added.
    assert_within(c, exact, 3 * 2.0 ** -11 * (np.abs(a64) @ np.abs(b64)) + 2.0 ** -24)


@pytest.mark.parametrize("engine,target", [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"),
                                           ("emulator", "metax:xcore1000")])
def test_pipelined_loop_run_again_by_an_outer_loop(engine, target, monkeypatch):
    """The prologue of the next run waits for the last run's reads (the
    emulator reports the race otherwise)."""
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    kernel = tilemlir.language.compile(K.repeated_pipelined_loop.function(96), out_idx=[-1], engine=engine)
    a, b = RNG.uniform(-1, 1, (16, 96)).astype(np.float16), RNG.uniform(-1, 1, (96, 64)).astype(np.float16)
    c = kernel(a, b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for r, depth in enumerate((96, 64)):
        want = a64[:, :depth] @ b64[:depth]
        assert_within(c[r], want, gemm_bound(want, np.abs(a64[:, :depth]) @ np.abs(b64[:depth]), depth, U32))


def test_a_while_condition_on_shared_memory_is_refused_at_its_line():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            s = T.alloc_shared((64,), "float32")
            T.copy(A, s)
            while s[0] > 0.0:
                s[0] = s[0] - 1.0
            T.copy(s, A)

    with pytest.raises(UserError, match=r"test_language\.py:\d+:\d+: error: tile-insert-barriers: a `while` "
                                        r"condition that reads or writes shared memory is not supported"):
        tilemlir.language.compile(main, engine="emulator")(np.ones(64, np.float32))


def test_half_atomics_in_maca_cpp_on_the_cpu_and_the_engines(tmp_path):
    """f16/bf16 element atomic adds: the prelude's CAS loop on the 32-bit
    word (MetaX, run on the CPU), the reference engine and the emulator agree
    with adds rounded one at a time."""
    import maca_programs

    n = 64
    x = RNG.uniform(-1, 1, n).astype(np.float32)
    source = tilemlir.language.compile(K.half_atomics(n), engine="reference").get_kernel_source()
    name = re.search(r"func\.func @(\w+)", source).group(1)
    maca = tilemlir.compile(source, target="metax:xcore1000").artifacts["maca"]
    assert "tm_atomic_add_16<tm_f16" in maca and "tm_atomic_add_16<tm_bf16" in maca
    binary = maca_programs.build({name: maca}, tmp_path)
    results = {}
    for engine in ("maca", "reference", "emulator"):
        h, g = np.zeros(4, np.float16), np.zeros(4, ml_dtypes.bfloat16)
        if engine == "maca":
            maca_programs.run(binary, name, [x, h, g], tmp_path)
        else:
            tilemlir.language.compile(K.half_atomics(n), engine=engine)(x, h, g)
        results[engine] = (h.astype(np.float64), g.astype(np.float64))
    exact = np.array([x[i::4].astype(np.float64).sum() for i in range(4)])
    magnitude = np.array([np.abs(x[i::4]).astype(np.float64).sum() for i in range(4)])
    for h, g in results.values():  # 16 adds, each rounded (the order is the threads')
        assert_within(h, exact, 16 * 2.0 ** -11 * magnitude)
        assert_within(g, exact, 16 * 2.0 ** -8 * magnitude)


@pytest.mark.parametrize("engine,target", [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"),
                                           ("emulator", "amdgpu:gfx950"), ("emulator", "metax:xcore1000")])
@pytest.mark.parametrize("dtype", ["int64", "int16", "float64"])
def test_int64_int16_and_float64_tensors(engine, target, dtype, monkeypatch):
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    kernel = tilemlir.language.compile(K.row_sums_of.function(8, 64, dtype), out_idx=[-2, -1], engine=engine)
    if dtype == "int64":
        x = RNG.integers(-(1 << 40), 1 << 40, (8, 64)).astype(np.int64)
    elif dtype == "int16":
        x = RNG.integers(-100, 100, (8, 64)).astype(np.int16)
    else:
        x = RNG.uniform(-1, 1, (8, 64))
    sums, y = kernel(x)
    if dtype == "float64":
        assert_within(sums, x.sum(axis=1), 64 * 2.0 ** -53 * np.abs(x).sum(axis=1))
        np.testing.assert_array_equal(y, x * 3 + 1)
    else:
        np.testing.assert_array_equal(sums, x.sum(axis=1, dtype=x.dtype))
        np.testing.assert_array_equal(y, (x * 3 + 1).astype(x.dtype))


def test_element_atomics_in_maca_cpp_on_the_cpu(tmp_path):
    """The same as MetaX prints them (atomicAdd, atomicMin of int, the
    prelude's compare-and-swap loops for float max/min), built with g++ and
    run on the CPU, the block's threads as std::threads."""
    import maca_programs

    n, bins, blocks = 96, 8, 3
    source = tilemlir.language.compile(K.element_atomics(n, bins, blocks), engine="reference").get_kernel_source()
    name = re.search(r"func\.func @(\w+)", source).group(1)
    maca = tilemlir.compile(source, target="metax:xcore1000").artifacts["maca"]
    assert "tm_atomic_extremum_f32(" in maca and "atomicMin(" in maca
    binary = maca_programs.build({name: maca}, tmp_path)
    x = RNG.uniform(-4, 4, (blocks, n)).astype(np.float32)
    x[0, 3] = np.nan
    index = RNG.integers(0, 1000, (blocks, n)).astype(np.int32)
    hist, extremes = np.zeros(bins, np.int32), np.array([-np.inf, np.inf], np.float32)
    least, count = np.array([1 << 30], np.int32), np.array([1.0], np.float32)
    maca_programs.run(binary, name, [x, index, hist, extremes, least, count], tmp_path)
    np.testing.assert_array_equal(hist, np.bincount((index % bins).reshape(-1), minlength=bins))
    np.testing.assert_array_equal(extremes, [np.nanmax(x), np.nanmin(x)])
    assert least[0] == (index - np.arange(blocks)[:, None]).min()
    assert count[0] == 1.0 + 0.5 * blocks


def _integer_inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    a = RNG.integers(-1000, 1000, n).astype(np.int32)
    b = RNG.integers(1, 10, n).astype(np.int32) * RNG.choice([-1, 1], n).astype(np.int32)
    a[:4], b[:4] = (-7, 7, -7, 7), (2, -2, -2, 2)  # every sign pair
    return a, b


def _integer_model(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    trunc = np.array([abs(int(x)) // abs(int(y)) * (1 if (x < 0) == (y < 0) else -1) for x, y in zip(a, b)])
    return np.stack([a // b, np.mod(a, b), trunc, a - b * trunc, a & 0xF0F, a | b, a ^ b, ~a, a << 3, a >> 2,
                     np.minimum(a * 100, 12700 - 128), a // b], axis=1)


@pytest.mark.parametrize("engine,target", [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"),
                                           ("emulator", "metax:xcore1000")])
def test_tir_integer_functions(engine, target, monkeypatch):
    """floordiv / floormod round toward minus infinity (Python's // and %),
    truncdiv / truncmod toward zero (C's), bitwise operations, shifts
    (arithmetic right), T.max_value / T.min_value as typed constants."""
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    n = 128
    a, b = _integer_inputs(n)
    kernel = tilemlir.language.compile(K.integer_functions.function(n), out_idx=[2], engine=engine)
    np.testing.assert_array_equal(kernel(a, b), _integer_model(a, b))


def test_tir_integer_functions_in_maca_cpp_on_the_cpu(tmp_path):
    """The same as MetaX prints them: arith.floordivsi as its prelude's
    tm_floordiv (C's / truncates), built with g++ and run on the CPU."""
    import maca_programs

    n = 128
    a, b = _integer_inputs(n)
    source = tilemlir.language.compile(K.integer_functions.function(n), out_idx=[2],
                                       engine="reference").get_kernel_source()
    name = re.search(r"func\.func @(\w+)", source).group(1)
    maca = tilemlir.compile(source, target="metax:xcore1000").artifacts["maca"]
    assert "tm_floordiv(" in maca
    binary = maca_programs.build({name: maca}, tmp_path)
    got = np.zeros((n, 12), np.int32)
    maca_programs.run(binary, name, [a, b, got], tmp_path)
    np.testing.assert_array_equal(got, _integer_model(a, b))


def test_tir_math_functions_in_maca_cpp_on_the_cpu(tmp_path):
    """The same functions as MetaX prints them (C's tan, round, fmod, ...),
    built with g++ against test/metax/maca_host.h and run on the CPU."""
    import maca_programs

    n = 256
    x = np.linspace(-3, 3, n).astype(np.float32)
    z = np.linspace(-1, 1, n).astype(np.float32)
    z[:3] = (np.nan, np.inf, -np.inf)
    source = tilemlir.language.compile(K.math_functions.function(n), out_idx=[2],
                                       engine="reference").get_kernel_source()
    name = re.search(r"func\.func @(\w+)", source).group(1)
    binary = maca_programs.build({name: tilemlir.compile(source, target="metax:xcore1000").artifacts["maca"]},
                                 tmp_path)
    reference = tilemlir.language.compile(K.math_functions.function(n), out_idx=[2], engine="reference")
    expected = reference(x, z).astype(np.float64)
    got = np.zeros((n, 12), np.float32)
    maca_programs.run(binary, name, [x, z, got], tmp_path)
    assert_within(got, expected, 64 * U32 * (np.abs(expected) + 1))


@pytest.mark.parametrize("engine", ["reference", "emulator"])
def test_alloc_var_is_loop_carried(engine):
    kernel = tilemlir.language.compile(K.running_sum.function(64), out_idx=[1], engine=engine)
    x = RNG.uniform(-1, 1, (64, 4)).astype(np.float32)
    expected = np.zeros(64)
    for k in range(4):
        expected = expected + x[:, k]
        expected = np.where(x[:, k] < 0, expected * 2, expected)
    assert_within(kernel(x), expected, 16 * U32 * (np.abs(expected) + 1))
    assert "scf.for" in kernel.get_kernel_source() and "iter_args" in kernel.get_kernel_source()


@pytest.mark.parametrize("engine", ["reference", "emulator"])
def test_split_k_with_atomic_add(engine):
    """TileLang's split-K: 4 K slices (grid z), each adding its partial sums
    into C with T.atomic_add; C starts at zero as the caller passes it."""
    kernel = tilemlir.language.compile(K.matmul_splitk.function(64, 128, 256), engine=engine)
    assert "tile.atomic_add" in kernel.get_kernel_source()
    a = RNG.uniform(-1, 1, (64, 256)).astype(np.float16)
    b = RNG.uniform(-1, 1, (256, 128)).astype(np.float16)
    c = np.zeros((64, 128), np.float32)
    kernel(a, b, c)
    product = a.astype(np.float64) @ b.astype(np.float64)
    assert_within(c, product, gemm_bound(product, np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)),
                                         256 + 4, U32))


def test_three_grid_dims_and_rank_reducing_copies():
    x = RNG.uniform(-1, 1, (2, 2, 2, 64)).astype(np.float32)
    y = K.block_indices(2)(x)
    b = np.arange(2)
    expected = x + b[None, None, :, None] * 100 + b[None, :, None, None] * 10 + b[:, None, None, None]
    assert np.array_equal(y, expected.astype(np.float32))


def test_tensor_view_of_parameter_data():
    x = np.arange(64 * 32, dtype=np.float16)
    y = K.reshaped_view(64, 32)(x)
    assert np.array_equal(y, x.reshape(64, 32))
    assert "memref.reinterpret_cast" in K.reshaped_view(64, 32).get_kernel_source()


def test_im2col_convolution():
    from general_kernel_cases import conv_model

    x = RNG.uniform(-1, 1, (2, 8, 8, 16)).astype(np.float16)
    w = RNG.uniform(-1, 1, (144, 64)).astype(np.float16)
    y = K.conv_im2col(2, 8, 8, 16, 64)(x, w)
    expected, bound = conv_model([x, w, y])[2]
    assert_within(y, expected, bound)


# -- kernel objects --------------------------------------------------------------

def test_kernel_artefacts_and_report():
    kernel = K.matmul(64, 64, 64)  # no target named, no GPU: the emulator's gfx942
    assert kernel.artifact == kernel.get_isa()  # the default artefact: tile-compile's, the ISA
    assert "v_mfma" in kernel.get_isa()
    assert kernel.compile("hsaco").artifact[:4] == b"\x7fELF"
    (compiled,) = kernel.report["kernels"]
    assert compiled["spills"] == 0 and compiled["shared_bytes"] > 0
    assert '"tile.gemm"' in kernel.get_kernel_source()
    assert "loc(" in kernel.get_kernel_source(locations=True)  # the user's Python lines


def test_targets_engines_and_options(monkeypatch):
    a = RNG.uniform(-1, 1, (64, 64)).astype(np.float16)
    kernel = tilemlir.language.compile(K.matmul.function(64, 64, 64), out_idx=[-1], target="maca",
                                       engine="reference")
    assert str(kernel.target) == "metax:xcore1000" and kernel.engine == "reference"
    product = a.astype(np.float64) @ a.astype(np.float64)
    assert_within(kernel(a, a), np.maximum(product, 0),
                  gemm_bound(product, np.abs(a.astype(np.float64)) @ np.abs(a.astype(np.float64)), 64, U16))
    monkeypatch.setenv("TILEMLIR_ENGINE", "reference")
    assert tilemlir.language.compile(K.matmul.function(64, 64, 64)).engine == "reference"
    with pytest.warns(T.TileLangWarning, match="ignored.*tl.disable_tma_lower"):
        tilemlir.language.compile(K.matmul.function(64, 64, 64),
                                  pass_configs={"tl.disable_tma_lower": True,
                                                "tile-lower-to-gpu.sched-hints": False})
    with pytest.warns(T.TileLangWarning, match="ignores execution_backend"):
        tilemlir.jit(execution_backend="cython")
    with pytest.raises(UserError, match="unknown engine 'gpu'"):
        tilemlir.language.compile(K.matmul.function(64, 64, 64), engine="gpu")
    with pytest.raises(UserError, match="takes 2 arguments"):
        K.matmul(64, 64, 64)(a)
    with pytest.raises(UserError, match=r"expected shape \(64, 64\) of float16"):
        K.matmul(64, 64, 64)(a, a.astype(np.float32))


@pytest.mark.parametrize("target", ["amdgpu:gfx942", "metax:xcore1000"])
def test_fast_math_takes_the_hardware_exp2(target):
    """TileLang's `tl.enable_fast_math` puts T.exp2 on the hardware's exp2
    unit (`fastmath<afn>`): on AMD one v_exp_f32, which flushes results
    below 2^-126 to zero (the emulator models it: afn allows it on any
    chip), where the default keeps them; MetaX's code is the same either
    way. No warning for the key; the prim_func itself is left as written."""
    function = K.powers_of_two(64)
    x = np.linspace(-140.0, 3.0, 64).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fast = tilemlir.compile(function, out_idx=[1], target=target, engine="emulator",
                                pass_configs={tilemlir.PassConfigKey.TL_ENABLE_FAST_MATH: True})
    exact = tilemlir.compile(function, out_idx=[1], target=target, engine="emulator")
    assert "math.exp2 %" in function.script() and "afn" not in function.script()
    assert "fastmath<afn>" in fast.get_kernel_source() and "afn" not in exact.get_kernel_source()
    for value, on in ((True, True), ("true", True), ("1", True), (False, False), ("false", False), (0, False)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the key is never "ignored"
            source = tilemlir.compile(function, out_idx=[1], target=target, engine="emulator",
                                      pass_configs={"tl.enable_fast_math": value}).get_kernel_source()
        assert ("fastmath<afn>" in source) == on, value
    want = np.exp2(x.astype(np.float64))
    normal = want >= 2.0 ** -126
    within = {"rtol": 1e-6, "atol": 2.0 ** -146}  # a few ulps; a few of the subnormals' 2^-149
    assert np.all(exact(x) > 0) and np.allclose(exact(x), want, **within)
    assert np.allclose(fast(x)[normal], want[normal], **within)
    assert np.all(fast(x)[~normal] == 0.0)  # the emulator flushes, as afn allows
    if target.startswith("amdgpu"):
        isa = fast.compile("isa").artifact
        assert "v_exp_f32" in isa and "v_ldexp_f32" not in isa
        assert "v_ldexp_f32" in exact.compile("isa").artifact
    else:
        assert fast.compile().artifact == exact.compile().artifact


def test_fp8_refusal_when_asked(monkeypatch):
    monkeypatch.setenv("TILEMLIR_TARGET", "amdgpu:gfx942")
    SEED._cache.clear()
    jit = tilemlir.jit(SEED.function,
                       pass_configs={"tile-legalize-precision.fp8-fallback": "error"})
    a = np.zeros((128, 128), np.float16)
    with pytest.raises(UserError, match="OCP fp8 encoding"):
        jit(a, a, a.copy(), 128, 128, 128)


def test_torch_tensors_when_torch_is_installed():
    torch = pytest.importorskip("torch")
    a = torch.rand((64, 64), dtype=torch.float16) - 0.5
    c = K.matmul(64, 64, 64)(a, a)
    product = a.double().numpy() @ a.double().numpy()
    assert_within(np.asarray(c), np.maximum(product, 0), 2e-3 * (np.abs(product) + 1))


# -- errors ------------------------------------------------------------------

BAD_FILE = Path(bad_kernels.__file__)
EXPECTED = {}
for number, line in enumerate(BAD_FILE.read_text().splitlines(), 1):
    if "# expect: " in line:
        EXPECTED[number] = line.split("# expect: ", 1)[1].strip()
BAD = [name for name in dir(bad_kernels) if name.startswith("bad_")]


@pytest.mark.parametrize("name", BAD)
def test_refused_constructs_name_the_python_line(name):
    function = getattr(bad_kernels, name)
    start = function.__code__.co_firstlineno
    line = min(n for n in EXPECTED if n > start)
    with pytest.raises(UserError) as raised:
        function().built  # noqa: B018 - a prim_func is built when first needed
    message = str(raised.value)
    assert f"{BAD_FILE}:{line}:" in message, message
    assert EXPECTED[line] in message, message
    assert "error:" in message
    # Only the API boundary's frames (the decorator, the re-raise) are tilemlir's own.
    own = [f for f in traceback.extract_tb(raised.tb) if "/tilemlir/" in f.filename]
    assert {f.name for f in own} <= {"prim_func", "built", "wrapper"}, own


def test_every_refusal_is_tested():
    starts = sorted(getattr(bad_kernels, n).__code__.co_firstlineno for n in BAD)
    assert len(EXPECTED) == len(BAD)
    for start, line in zip(starts, sorted(EXPECTED)):
        assert line > start


def test_intrinsics_outside_kernels_say_where_they_belong():
    with pytest.raises(UserError, match="only meaningful inside a kernel body"):
        T.copy(None, None)
    assert T.ceildiv(10, 3) == 4 and T.min(2, 3) == 2
    assert T.float16 == "float16" and T.float == T.float32 and str(T.bfloat16) == "bfloat16"


def test_docs_list_every_intrinsic():
    text = (REPO / "docs" / "language.md").read_text()
    for name in T.INTRINSICS:
        assert f"T.{name}" in text, name


@pytest.mark.parametrize("engine", ["reference", "emulator"])
def test_reductions_loops_and_dtype_spellings(engine):
    kernel = tilemlir.language.compile(K.row_stats.function(16, 32), out_idx=[1], engine=engine)
    x = RNG.uniform(-1, 1, (16, 32)).astype(np.float32)
    y = kernel(x)
    x64 = x.astype(np.float64)
    expected = np.stack([x64.min(axis=1), 1 + x64.sum(axis=1), (x64 > 0).sum(axis=1),
                         convert(x64[:, 0], ml_dtypes.float8_e5m2).astype(np.float64)], axis=1)
    bound = np.zeros_like(expected)
    bound[:, 1] = 40 * U32 * (np.abs(x64).sum(axis=1) + 1)
    assert_within(y, expected, bound)
    source = kernel.get_kernel_source()
    assert 'kind = "min"' in source and "clear = false" in source and "threads = 128" in source
