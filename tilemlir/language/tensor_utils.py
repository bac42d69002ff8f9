"""`tilelang.utils.tensor`'s helpers for TileLang programs: tensor dtypes,
input supply and closeness checks, on NumPy arrays and torch tensors alike."""

from __future__ import annotations

import enum

import numpy as np

from tilemlir.language.api import TileLangError


class TensorSupplyType(enum.Enum):
    """How a profiler makes a kernel's inputs (TileLang's names)."""

    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


def map_torch_type(name) -> object:
    """The torch dtype for a TileLang dtype name (`"float16"`, `T.bfloat16`, `"float8_e4m3"`, ...)."""
    try:
        import torch
    except ImportError:
        raise TileLangError("map_torch_type needs torch (pip install torch)") from None
    text = str(name)
    spelled = {"float8_e4m3": "float8_e4m3fn", "e4m3_float8": "float8_e4m3fn", "e5m2_float8": "float8_e5m2",
               "float": "float32", "half": "float16", "bool": "bool"}.get(text, text)
    if not hasattr(torch, spelled) or not isinstance(getattr(torch, spelled), torch.dtype):
        raise TileLangError(f"torch has no dtype for {text!r}")
    return getattr(torch, spelled)


def to_float64(value) -> np.ndarray:
    """A float64 NumPy copy of an array, a (CPU copy of a) torch tensor or a number."""
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        return value.detach().cpu().double().numpy()
    return np.asarray(value).astype(np.float64)


def torch_assert_close(actual, expected, rtol: float = 1e-2, atol: float = 1e-2,
                       max_mismatched_ratio: float = 0.001, verbose: bool = False,
                       equal_nan: bool = True, check_dtype: bool = False, **_ignored) -> None:
    """Raises AssertionError when more than `max_mismatched_ratio` of the
    elements differ by more than `atol + rtol * |expected|` (TileLang's rule),
    or when the shapes differ. Takes NumPy arrays or torch tensors."""
    got, want = to_float64(actual), to_float64(expected)
    if got.shape != want.shape:
        raise AssertionError(f"shapes differ: {got.shape} vs {want.shape}")
    if check_dtype and getattr(actual, "dtype", None) != getattr(expected, "dtype", None):
        raise AssertionError(f"dtypes differ: {actual.dtype} vs {expected.dtype}")
    close = np.abs(got - want) <= atol + rtol * np.abs(want)
    if equal_nan:
        close |= np.isnan(got) & np.isnan(want)
    mismatched = int(close.size - np.count_nonzero(close))
    allowed = max_mismatched_ratio * close.size
    if verbose or mismatched > allowed:
        worst = float(np.nanmax(np.abs(got - want))) if got.size else 0.0
        summary = (f"{mismatched} of {close.size} elements differ by more than atol={atol} + rtol={rtol} * "
                   f"|expected| (at most {allowed:.0f} allowed); the largest difference is {worst:.6g}")
        if mismatched > allowed:
            raise AssertionError(summary)
        print(summary)
