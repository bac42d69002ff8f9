"""Whole kernels in the reference engine against float64 NumPy, with
tolerances derived from the dtypes (tilemlir.runtime.oracle.tolerance, the
formula `tile-run --help` states), at shapes that are and are not multiples of
the block sizes."""

import numpy as np
import pytest
from kernel_text import Gemm, gemm_kernel, softmax_kernel

from tilemlir import runtime
from tilemlir.runtime.dtypes import ELEMENT_TYPES, convert
from tilemlir.runtime.oracle import tolerance
from tilemlir.runtime.reference import Program

DTYPES = {name: e.dtype for name, e in ELEMENT_TYPES.items()}


def random_inputs(g: Gemm, seed: int):
    rng = np.random.default_rng(seed)
    if g.in_type == "i8":
        a = rng.integers(-128, 128, g.a_shape).astype(np.int8)
        b = rng.integers(-128, 128, g.b_shape).astype(np.int8)
    else:
        a = convert(rng.uniform(-1, 1, g.a_shape), DTYPES[g.in_type])
        b = convert(rng.uniform(-1, 1, g.b_shape), DTYPES[g.in_type])
    c = np.full((g.m, g.n), 3, DTYPES[g.out_type])  # overwritten everywhere by a correct kernel
    return a, b, c


def float64_product(g: Gemm, a, b):
    lhs = a.astype(np.float64).T if g.transpose_a else a.astype(np.float64)
    rhs = b.astype(np.float64).T if g.transpose_b else b.astype(np.float64)
    return lhs @ rhs, np.abs(lhs) @ np.abs(rhs)


CASES = [
    Gemm(64, 200, 96),  # M below one block, N not a multiple of 128
    Gemm(70, 50, 40, block=(32, 32, 16), transpose_a=True),
    Gemm(70, 50, 40, block=(32, 32, 16), transpose_b=True),
    Gemm(70, 50, 40, block=(32, 32, 16), transpose_a=True, transpose_b=True),
    Gemm(64, 96, 64, block=(32, 32, 16), epilogue="store"),  # the seed's epilogue, block multiples
    Gemm(48, 40, 72, block=(32, 16, 32), in_type="bf16", out_type="f32"),
    Gemm(48, 40, 72, block=(32, 16, 32), in_type="bf16", out_type="bf16"),
    Gemm(40, 56, 100, block=(32, 32, 32), in_type="i8", acc_type="i32", out_type="i32"),
    Gemm(33, 47, 65, block=(16, 16, 16), in_type="f8E4M3FN"),
    Gemm(33, 47, 65, block=(16, 16, 16), in_type="f8E5M2", transpose_b=True),
    Gemm(33, 47, 65, block=(16, 16, 16), in_type="f8E5M2FNUZ"),
    Gemm(33, 47, 65, block=(16, 16, 16), in_type="f16", out_type="f16"),
]


@pytest.mark.parametrize("g", CASES, ids=lambda g: f"{g.in_type}-{g.m}x{g.n}x{g.k}-ta{int(g.transpose_a)}"
                         f"tb{int(g.transpose_b)}-{g.epilogue}-{g.out_type}")
def test_gemm_kernel_against_float64(g):
    a, b, c = random_inputs(g, seed=len(str(g)))
    runtime.run(gemm_kernel(g), "gemm", [a, b, c])
    ref, magnitude = float64_product(g, a, b)
    err = np.abs(c.astype(np.float64) - ref)
    bound = tolerance(ref, magnitude, g.k + 1, g.acc_type, g.out_type)
    assert (err <= bound).all(), f"worst err/tol {np.max(err / np.maximum(bound, 1e-300))}"
    if g.in_type == "i8":
        assert (err == 0).all()


def test_tolerance_is_not_vacuous():
    # The same check fails when the kernel drops the last K tile (a bug of the kind it must catch).
    g = Gemm(64, 200, 96)
    a, b, c = random_inputs(g, seed=1)
    broken = gemm_kernel(g).replace("%num_k = arith.constant 3 : index", "%num_k = arith.constant 2 : index")
    runtime.run(broken, "gemm", [a, b, c])
    ref, magnitude = float64_product(g, a, b)
    assert (np.abs(c - ref) > tolerance(ref, magnitude, g.k + 1, g.acc_type, g.out_type)).any()


def whole_problem(g: Gemm) -> str:
    a = f"memref<{g.a_shape[0]}x{g.a_shape[1]}x{g.in_type}>"
    b = f"memref<{g.b_shape[0]}x{g.b_shape[1]}x{g.in_type}>"
    c = f"memref<{g.m}x{g.n}x{g.out_type}>"
    return (f"func.func @gemm(%A: {a}, %B: {b}, %C: {c}) {{\n"
            f"  %zero = arith.constant 0.0 : {g.out_type}\n"
            f'  "tile.fill"(%C, %zero) : ({c}, {g.out_type}) -> ()\n'
            f'  "tile.gemm"(%A, %B, %C) {{accum_dtype = {g.acc_type}, transpose_a = {str(g.transpose_a).lower()}, '
            f"transpose_b = {str(g.transpose_b).lower()}}} : ({a}, {b}, {c}) -> ()\n"
            "  return\n}\n")


@pytest.mark.parametrize("g", [Gemm(64, 200, 96), Gemm(70, 50, 40, block=(32, 32, 16), transpose_b=True)])
def test_kernel_and_whole_problem_forms_agree_bit_for_bit(g):
    # Sums run over k in increasing order in both, so tiling K changes nothing.
    a, b, c_kernel = random_inputs(g, seed=7)
    c_whole = c_kernel.copy()
    runtime.run(gemm_kernel(g), "gemm", [a, b, c_kernel])
    runtime.run(whole_problem(g), "gemm", [a, b, c_whole])
    assert np.array_equal(c_kernel, c_whole)


@pytest.mark.parametrize("vectorize", [True, False], ids=["vectorized", "loop"])
def test_bias_relu_epilogue(vectorize):
    g = Gemm(70, 50, 40, block=(32, 32, 16), epilogue="bias_relu")
    a, b, c = random_inputs(g, seed=3)
    bias = np.random.default_rng(4).uniform(-0.5, 0.5, g.n).astype(np.float32)
    module, _ = runtime.load_module(gemm_kernel(g))
    Program(module, vectorize=vectorize).call("gemm", [a, b, c, bias])
    ref, magnitude = float64_product(g, a, b)
    out = np.maximum(ref + bias, 0.0)
    # acc has the GEMM error e <= g*S; fl32(acc + bias) adds u32*|acc + bias|; ReLU is
    # 1-Lipschitz; the f16 rounding adds u16*|out| + eta/2.
    u32, u16 = 2.0**-24, 2.0**-11
    gamma = (g.k + 1) * u32 / (1 - (g.k + 1) * u32)
    before_relu = gamma * magnitude + u32 * (np.abs(ref + bias) + gamma * magnitude)
    bound = u16 * out + (1 + u16) * before_relu + 2.0**-25
    assert (np.abs(c.astype(np.float64) - out) <= bound).all()
    assert (c == 0).any() and (c > 0).any()  # ReLU did something


@pytest.mark.parametrize("vectorize", [True, False], ids=["vectorized", "loop"])
def test_row_softmax_from_reduce_and_parallel(vectorize):
    m, n, block_m = 100, 48, 32  # 100 rows: the last block reads zero rows and drops their writes
    rng = np.random.default_rng(5)
    x = rng.standard_normal((m, n)).astype(np.float32) * 3
    y = np.full((m, n), np.nan, np.float16)
    module, _ = runtime.load_module(softmax_kernel(m, n, block_m))
    Program(module, vectorize=vectorize).call("softmax", [x, y])
    wide = x.astype(np.float64)
    shifted = wide - wide.max(axis=1, keepdims=True)
    ref = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    # f32 steps: x - max (u32*|d|), exp of a perturbed argument (|d|*u32 + u32),
    # a sequential sum of n positive terms (gamma_n), the division (u32); then f16.
    u32, u16 = 2.0**-24, 2.0**-11
    relative = (2 * np.abs(shifted).max() + n + 3) * u32
    bound = u16 * ref + (1 + u16) * relative * ref + 2.0**-25
    assert (np.abs(y.astype(np.float64) - ref) <= bound).all()
    assert np.allclose(y.astype(np.float64).sum(axis=1), 1.0, atol=n * u16)

