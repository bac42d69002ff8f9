"""`import tilemlir as tilelang`: TileLang's top-level names (cdiv, PassConfigKey,
autotune, profiler, utils) and a located error for every TileLang construct
tilemlir does not build, in a kernel body and in ordinary Python."""

from __future__ import annotations

import importlib.util
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from tilelang_style import dropin
from tilelang_style import kernels as K

import tilemlir
import tilemlir.language as T
from tilemlir import autotuner, profiler
from tilemlir.diagnostics import UserError
from tilemlir.language import api
from tilemlir.utils.tensor import torch_assert_close

DROPIN = Path(dropin.__file__)
PACKAGE = str(Path(tilemlir.__file__).resolve().parent)
RNG = np.random.default_rng(0)


def expected_line(function) -> tuple[int, str]:
    """The line of `function`'s source marked `# expect: ` and what it expects."""
    lines = DROPIN.read_text().splitlines()
    start = function.function.__code__.co_firstlineno
    number = next(n for n in range(start, len(lines) + 1) if "# expect: " in lines[n - 1])
    return number, lines[number - 1].split("# expect: ", 1)[1].strip()


# -- the top-level names -----------------------------------------------------------

def test_top_level_names_without_a_tilelang_module():
    assert tilemlir.cdiv(10, 3) == 4 and tilemlir.cdiv(9, 3) == 3
    assert tilemlir.jit is T.jit and tilemlir.autotune is autotuner.autotune
    assert tilemlir.language is T and tilemlir.profiler is profiler
    assert str(tilemlir.PassConfigKey.TL_DISABLE_TMA_LOWER) == "tl.disable_tma_lower"
    assert "tilelang" not in sys.modules


def test_compile_takes_a_prim_func_as_tilelang_compile_does():
    """`tilelang.compile(func, out_idx=...)`: a JITKernel that runs (reference
    engine, against float64); tile IR text still gets the compiler's result."""
    with pytest.warns(T.TileLangWarning, match="compile ignores execution_backend"):
        kernel = tilemlir.compile(K.elementwise.function(128), [1], target="amdgpu:gfx942", engine="reference",
                                  execution_backend="cython")
    assert isinstance(kernel, tilemlir.JITKernel) and kernel.outputs == [1]
    x = np.linspace(-1.5, 1.5, 128, dtype=np.float32)
    np.testing.assert_allclose(kernel(x)[:, 3], np.minimum(x, 0.25) + np.maximum(x, -0.25))
    result = tilemlir.compile(kernel.get_kernel_source(), target="amdgpu:gfx942", emit="tile")
    assert result.emit == "tile"
    with pytest.raises(TypeError, match="out_idx"):
        tilemlir.compile(kernel.get_kernel_source(), target="amdgpu:gfx942", out_idx=[1])


def test_pass_config_keys_are_ignored_with_one_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        T.compile(K.matmul.function(64, 64, 64), out_idx=[-1],
                  pass_configs={tilemlir.PassConfigKey.TL_DISABLE_TMA_LOWER: True,
                                tilemlir.PassConfigKey.TL_ENABLE_FAST_MATH: False})
    said = [w for w in caught if issubclass(w.category, T.TileLangWarning)]
    assert len(said) == 1, [str(w.message) for w in said]
    # tl.enable_fast_math is honoured (T.exp2 on the hardware unit), not ignored.
    assert "tl.disable_tma_lower" in str(said[0].message) and "fast_math" not in str(said[0].message)


# -- autotune, the profiler ----------------------------------------------------------

def test_autotune_picks_the_fastest_prediction_and_runs(monkeypatch):
    monkeypatch.delenv("TILEMLIR_TARGET", raising=False)
    monkeypatch.delenv("TILEMLIR_ENGINE", raising=False)
    with pytest.warns(T.TileLangWarning, match="tl.disable_tma_lower"):
        kernel = dropin.matmul(32, 32, 32)
    result = kernel.autotune_result
    assert not result.measured and result.config in dropin.CONFIGS
    predicted = [autotuner.predicted_seconds(dropin.matmul.jit(32, 32, 32, **c)) for c in dropin.CONFIGS]
    assert None not in predicted
    assert result.config == dropin.CONFIGS[predicted.index(min(predicted))]
    assert result.latency == pytest.approx(min(predicted) * 1e3)
    assert dropin.matmul(32, 32, 32) is kernel  # chosen once per arguments
    a = RNG.uniform(-1, 1, (32, 32)).astype(np.float16)
    b = RNG.uniform(-1, 1, (32, 32)).astype(np.float16)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    # f16 products are exact in f32; 32 f32 additions round at most 32 * 2^-24 of |a| @ |b|.
    bound = 32 * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64)) + 1e-30
    assert np.all(np.abs(kernel(a, b) - a64 @ b64) <= bound)


def test_autotune_skips_configs_that_do_not_compile_and_falls_back_to_the_first(monkeypatch):
    monkeypatch.setattr(autotuner, "predicted_seconds", lambda kernel: None)
    tuned = autotuner.autotune(configs=[{"block_M": 24}, {"block_M": 32}, {"block_M": 64}])(K.matmul)
    kernel = tuned(64, 64, 64)
    result = kernel.autotune_result
    assert result.config == {"block_M": 32} and result.latency is None
    assert "does not compile" in {repr(c): w for c, w in result.candidates}[repr({"block_M": 24})]
    made = autotuner.autotune(configs=lambda M, N, K: [{"block_M": M // 2}, {"block_M": M}])(K.matmul)
    assert made(64, 64, 64).autotune_result.config == {"block_M": 32}  # a callable makes the list
    with pytest.raises(UserError, match="no configuration of 'matmul' compiles"):
        autotuner.autotune(configs=[{"block_M": 24}])(K.matmul)(64, 64, 64)
    with pytest.raises(UserError, match="needs configs="):
        autotuner.autotune()(K.matmul)


def test_do_bench_returns_milliseconds():
    assert profiler.do_bench(lambda: sum(range(100)), warmup=1, rep=2) > 0
    assert len(profiler.do_bench(lambda: None, _n_warmup=1, _n_repeat=4, quantiles=[0.5, 0.9])) == 2
    with pytest.raises(UserError, match="return_mode"):
        profiler.do_bench(lambda: None, return_mode="sum")


def test_profiler_checks_the_kernel_against_a_reference():
    kernel = T.compile(K.matmul.function(64, 64, 64), out_idx=[-1], engine="reference")
    checker = kernel.get_profiler()
    checker.assert_allclose(lambda a, b: np.maximum(a.astype(np.float64) @ b, 0), rtol=1e-2, atol=1e-2)
    with pytest.raises(AssertionError, match="elements differ"):
        checker.assert_allclose(lambda a, b: a.astype(np.float64) @ b + 1, rtol=1e-2, atol=1e-2)
    assert checker.do_bench(n_warmup=1, n_repeat=1) > 0
    with pytest.raises(AssertionError, match="shapes differ"):
        torch_assert_close(np.zeros(3), np.zeros(4))


# -- TileLang constructs tilemlir does not build -------------------------------------

@pytest.mark.parametrize("factory", [dropin.thread_indexed, dropin.warp_reduced, dropin.misspelt])
def test_unsupported_in_a_kernel_body_names_the_line(factory):
    line, expected = expected_line(factory)
    with pytest.raises(UserError) as raised:
        factory(64)
    message = str(raised.value)
    assert message.startswith(f"{DROPIN}:{line}:"), message
    assert f"error: {expected}" in message


def load(tmp_path, text: str):
    path = tmp_path / "user_kernel.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("user_kernel", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    return path


def test_math_names_in_plain_python_are_their_values():
    """A factory's own arithmetic on Python numbers (TIR's math names)."""
    assert T.clamp(5, 0, 3) == 3 and T.clamp(-1.5, 0.0, 1.0) == 0.0
    assert T.erf(0.5) == math.erf(0.5) and T.floor(-2.5) == -3.0 and T.round(-2.5) == -3.0
    assert T.pow(2, 10) == 1024.0 and T.fmod(-7.5, 2.0) == -1.5 and T.isnan(math.nan)
    assert T.floordiv(-7, 2) == -4 and T.floormod(-7, 2) == 1 and T.truncdiv(-7, 2) == -3
    assert T.truncmod(-7, 2) == -1 and T.shift_right(-8, 1) == -4 and T.bitwise_not(0) == -1
    assert T.max_value("float16") == 65504.0 and T.min_value("int8") == -128


@pytest.mark.parametrize("text, position, expected", [
    ("import tilemlir.language as T\n\n@T.ws\ndef helper(x):\n    return x\n", "3:2",
     "T.ws is not supported by tilemlir: warp specialisation is NVIDIA-only"),
    ("import tilemlir.language as T\nlimit = T.reduce_bitand(5)\n", "2:9", "T.reduce_bitand is not supported by tilemlir"),
    ("import tilemlir.language as T\nvalue = T.popcount(5)\n", "2:9", "T.popcount is not supported by tilemlir"),
])
def test_unsupported_in_plain_python_names_the_users_line(tmp_path, text, position, expected):
    with pytest.raises(UserError) as raised:
        load(tmp_path, text)
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'user_kernel.py'}:{position}: error: {expected}"), message
    assert PACKAGE not in message


def test_names_tilelang_lacks_too_stay_attribute_errors(tmp_path):
    with pytest.raises(AttributeError) as raised:
        load(tmp_path, "import tilemlir.language as T\nT.no_such_name\n")
    assert str(raised.value).startswith(f"{tmp_path / 'user_kernel.py'}:2:1: error: tilemlir.language has no "
                                        f"attribute 'no_such_name'")
    assert not hasattr(T, "__no_such_dunder__")


def test_the_table_names_nothing_tilemlir_builds():
    built = set(dir(T))
    assert not built & set(api.UNSUPPORTED), built & set(api.UNSUPPORTED)
    assert not built & set(api.UNSUPPORTED_PLAIN), built & set(api.UNSUPPORTED_PLAIN)
    assert not set(api.UNSUPPORTED) & set(api.UNSUPPORTED_PLAIN)


def test_fp8_type_follows_the_target():
    from tilemlir.language.fp8 import determine_fp8_type

    assert determine_fp8_type("e4m3", target="amdgpu:gfx942") == "float8_e4m3fnuz"
    assert determine_fp8_type("e5m2", target="nvidia:sm_90a") == "float8_e5m2"
    assert getattr(T, determine_fp8_type(target="amdgpu:gfx950")) == T.float8_e4m3fn
    with pytest.raises(UserError, match="'e3m4'"):
        determine_fp8_type("e3m4")


def test_torch_dtype_names():
    torch = pytest.importorskip("torch")
    from tilemlir.utils.tensor import map_torch_type

    assert map_torch_type("float16") is torch.float16 and map_torch_type(T.bfloat16) is torch.bfloat16
    with pytest.raises(UserError, match="torch has no dtype"):
        map_torch_type("float7")
    torch_assert_close(torch.ones(4), np.ones(4))
