"""Arithmetic and constructors in TileLang kernel bodies, as TileLang types them:
`T.float32(1.0)`-style constructors (constants of a number, casts of a runtime
value, typed constants made in Python), index values mixed with floats
(`1.0 * bx` converts the index to the float type), and `T.const` sizes used
in arithmetic above the annotation that binds them. Each kernel runs in the
reference engine and in the gfx942 emulator and is compared with float64
NumPy; each refusal names its line of this file."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from tilemlir.diagnostics import UserError
from tilemlir.runtime.dtypes import convert

TARGET = "amdgpu:gfx942"
ENGINES = ["reference", "emulator"]
U32 = 2.0 ** -24
THIS_FILE = Path(__file__).resolve()
LINES = THIS_FILE.read_text().splitlines()


def line_of(marker: str) -> int:
    """The line of this file that ends in `# error: <marker>`."""
    (number,) = [n for n, text in enumerate(LINES, 1) if text.endswith(f"# error: {marker}")]
    return number


# -- constructors --------------------------------------------------------------------

def constructors(N):
    tenth = T.float16(0.1)  # in Python, at build time: a typed constant (f16's 0.1)

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N, 5), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(N):
                Y[i, 0] = X[i] * T.float32(2.0) + T.int32(7.9)
                Y[i, 1] = T.float16(X[i])
                Y[i, 2] = T.int32(X[i] * 10)
                Y[i, 3] = X[i] + tenth
                Y[i, 4] = T.bfloat16(X[i]) * T.bfloat16(3)

    return main


def test_dtype_constructors_in_python_make_typed_constants():
    assert T.float32(1.0).dtype == np.float32 and T.float32(1.0) == 1.0
    assert T.float16(0.1) == np.float16(0.1) and T.bfloat16(3).dtype == ml_dtypes.bfloat16
    assert T.int32(-2.7) == -2 and T.int8(T.int32(5)).dtype == np.int8 and T.bool(3) == np.True_
    assert T.float(T.float16(0.1)) == np.float32(np.float16(0.1))  # already typed: its value, retyped
    # Rounded once, as the engines round: not through float32 first (which gives 1.0 here).
    assert float(T.bfloat16(1 + 2.0 ** -8 + 2.0 ** -30)) == 1 + 2.0 ** -7


@pytest.mark.parametrize("call, message", [
    (lambda: T.float32(), "T.float32(value) takes one number, got 0 arguments"),
    (lambda: T.float32(1.0, 2.0), "T.float32(value) takes one number, got 2 arguments"),
    (lambda: T.float32("1.5"), "T.float32('1.5'): a constant is made from a number"),
    (lambda: T.int8(300), "T.int8(300): out of int8's range [-128, 127]"),
    (lambda: T.float16(1e6), "beyond float16's largest value (65504.0)"),
    (lambda: T.int32(float("nan")), "nan is not an integer value"),
    (lambda: T.float32(10 ** 400), "beyond float32's largest value"),
])
def test_dtype_constructor_refusals_in_python(call, message):
    with pytest.raises(UserError) as raised:
        call()
    assert message in str(raised.value)


@pytest.mark.parametrize("engine", ENGINES)
def test_dtype_constructors_in_a_kernel(engine):
    kernel = tilemlir.language.compile(constructors(64), out_idx=[1], target=TARGET, engine=engine)
    x = np.linspace(-3, 3, 64).astype(np.float32)
    y = kernel(x)
    x64 = x.astype(np.float64)
    bf16 = convert(x64, ml_dtypes.bfloat16).astype(np.float64)
    expected = np.stack([x64 * 2 + 7, convert(x64, np.float16).astype(np.float64),
                         np.trunc((x * np.float32(10)).astype(np.float64)),
                         x64 + float(np.float16(0.1)),
                         convert(bf16 * 3, ml_dtypes.bfloat16).astype(np.float64)], axis=1)
    bound = U32 * np.abs(expected)  # one f32 rounding, or none
    bound[:, 0] *= 2
    assert np.all(np.abs(y - expected) <= bound), np.abs(y - expected).max()
    source = kernel.get_kernel_source()
    assert "arith.truncf" in source and "arith.fptosi" in source


def bad_constructor_two_values():
    @T.prim_func
    def main(X: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                X[i] = T.float32(X[i], 2.0)  # error: T.float32(value) takes one value, got 2 arguments
    return main


def bad_constructor_of_a_string():
    @T.prim_func
    def main(X: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                X[i] = T.float16("half")  # error: T.float16('half'): a constant is made from a number
    return main


def bad_constructor_of_a_buffer():
    @T.prim_func
    def main(X: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                X[i] = T.int32(X)  # error: 'X' is a buffer; index it to read an element
    return main


def bad_constructor_out_of_range():
    @T.prim_func
    def main(X: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                X[i] = X[i] * T.float16(70000.0)  # error: beyond float16's largest value
    return main


@pytest.mark.parametrize("bad", [bad_constructor_two_values, bad_constructor_of_a_string,
                                 bad_constructor_of_a_buffer, bad_constructor_out_of_range])
def test_dtype_constructor_refusals_name_the_line(bad):
    marker = next(text.split("# error: ", 1)[1] for text in LINES[bad.__code__.co_firstlineno:]
                  if "# error: " in text)
    with pytest.raises(UserError) as raised:
        bad().built  # noqa: B018 - a prim_func is built when first needed
    message = str(raised.value)
    assert f"{THIS_FILE}:{line_of(marker)}:" in message and "error:" in message, message
    assert marker in message, message


# -- indices mixed with floats -------------------------------------------------------

def index_times_float(G, N):
    @T.prim_func
    def main(X: T.Tensor((G, N), "float32"), Y: T.Tensor((G, N), "float32")):
        with T.Kernel(G, threads=64) as bx:
            for i in T.Parallel(N):
                acc = T.alloc_var(T.float32, init=0.0)
                for k in T.serial(3):
                    acc += 1.0 * k
                Y[bx, i] = X[bx, i] * (1.0 * bx) + i * 0.5 + T.float16(0.25) * i + acc + X[bx, T.int32(0)]

    return main


@pytest.mark.parametrize("engine", ENGINES)
def test_index_times_float_converts_the_index(engine):
    kernel = tilemlir.language.compile(index_times_float(2, 64), out_idx=[1], target=TARGET, engine=engine)
    x = np.random.default_rng(0).uniform(-1, 1, (2, 64)).astype(np.float32)
    y = kernel(x)
    block, lane = np.arange(2.0)[:, None], np.arange(64.0)[None, :]
    x64 = x.astype(np.float64)
    expected = x64 * block + lane * 0.75 + 3 + x64[:, :1]
    assert np.all(np.abs(y - expected) <= 8 * U32 * (np.abs(expected) + 1)), np.abs(y - expected).max()
    assert "arith.sitofp" in kernel.get_kernel_source()


def numpy_default_scalars(N):
    scale, offset = np.sqrt(np.float64(0.25)), np.int64(3)  # what NumPy gives by default

    @T.prim_func
    def main(X: T.Tensor((N,), "float16"), Y: T.Tensor((N,), "float16")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(N):
                Y[bx * N + i] = X[bx * N + i] * scale + offset

    return main


def test_numpy_default_scalars_do_not_widen_the_arithmetic():
    """np.float64 / np.int64 constants (np.sqrt, np.log2(np.e)) act as Python
    numbers: f16 arithmetic stays f16, as TVM keeps it."""
    kernel = tilemlir.language.compile(numpy_default_scalars(64), out_idx=[1], target=TARGET, engine="reference")
    arithmetic = [line for line in kernel.get_kernel_source().splitlines() if "arith." in line]
    assert not any("f64" in line or "i64" in line for line in arithmetic), arithmetic
    x = np.linspace(-2, 2, 64).astype(np.float16)
    expected = convert(x.astype(np.float64) * 0.5 + 3, np.float16)
    assert np.array_equal(kernel(x), expected)


# -- T.const sizes in arithmetic before their annotation ----------------------------

def split_sums(A, split_k: int = 2):
    M, K = T.const("M, K")
    part = K // split_k  # K is bound by A's annotation, two lines below
    A: T.Tensor[[M, K], T.float32]
    S = T.empty([M, split_k], T.float32)
    with T.Kernel(split_k, threads=64) as bx:
        for i in T.Parallel(M):
            acc = T.alloc_var(T.float32, init=0.0)
            for k in T.serial(part):
                acc += A[i, bx * part + k]
            S[i, bx] = acc
    return S


def two_tensors_one_k(A, B):
    M, K = T.const("M, K")
    half = K // 2
    A: T.Tensor[[M, K], T.float32]
    B: T.Tensor[[K], T.float32]  # error: 'B' dim 0 is 8, but K = 16
    S = T.empty([M], T.float32)
    with T.Kernel(1, threads=64):
        for i in T.Parallel(M):
            S[i] = A[i, half] + B[half]
    return S


@pytest.mark.parametrize("engine", ENGINES)
def test_const_size_in_arithmetic_before_its_annotation(engine):
    a = np.random.default_rng(1).uniform(-1, 1, (16, 12)).astype(np.float32)
    sums = tilemlir.jit(split_sums, target=TARGET, engine=engine)(a, 3)
    expected = a.astype(np.float64).reshape(16, 3, 4).sum(axis=2)
    assert np.all(np.abs(sums - expected) <= 4 * U32 * (np.abs(a).reshape(16, 3, 4).sum(axis=2) + 1))


def test_const_bound_early_is_still_checked_by_each_annotation():
    kernel = tilemlir.jit(two_tensors_one_k, target=TARGET, engine="reference")
    with pytest.raises(UserError) as raised:
        kernel(np.zeros((4, 16), np.float32), np.zeros(8, np.float32))
    message = str(raised.value)
    line = line_of("'B' dim 0 is 8, but K = 16")
    assert f"{THIS_FILE}:{line}:" in message and "'B' dim 0 is 8, but K = 16" in message, message


def test_const_without_a_tensor_to_bind_it_is_refused():
    """compile() without arrays: no tensor gives K before `part = K // split_k`."""
    with pytest.raises(UserError, match="'K' \\(declared by T.const\\) is not known yet"):
        tilemlir.jit(split_sums, target=TARGET, engine="reference").compile(M=16)
