"""Element types of tile buffers as NumPy dtypes, and exact conversion between them.

Every element type of DESIGN.md section 3 maps to one NumPy dtype (fp8 and
bf16 through `ml_dtypes`). `convert(values, dtype)` is the one conversion the
reference engine uses: for `tile.copy` between element types, `arith.truncf`,
`arith.extf`, `arith.sitofp`, gemm accumulator read/write and so on.

Float to float: round to nearest, ties to even, computed exactly once.
  `ml_dtypes` rounds float32 to fp8/bf16 exactly, but it converts float64 by
  way of float32, which rounds twice (1.0625 + 2**-40 becomes 1.0 in e4m3
  instead of 1.125). float64 sources are therefore first rounded to float32
  with round-to-odd, which makes the second rounding exact (24 >= 8 + 2 bits).

Out-of-range values and specials, per format (the behaviour of ml_dtypes'
conversions, which this module keeps and the tests pin down). "Overflow" means
the value rounds (ties to even, unbounded exponent) above the largest finite
value; e.g. in e4m3fn 464 rounds to 448 but anything above 464 overflows:

| format     | max    | overflow, +-inf in | NaN in | -0.0 in |
|------------|--------|--------------------|--------|---------|
| f16        | 65504  | +-inf              | NaN    | -0.0    |
| bf16       | 3.39e38| +-inf              | NaN    | -0.0    |
| f8E5M2     | 57344  | +-inf              | NaN    | -0.0    |
| f8E4M3FN   | 448    | NaN (no inf)       | NaN    | -0.0    |
| f8E4M3FNUZ | 240    | NaN (no inf)       | NaN    | +0.0 (no -0)  |
| f8E5M2FNUZ | 57344  | NaN (no inf)       | NaN    | +0.0 (no -0)  |

There is no saturation: an fp8 conversion never clamps to the largest finite
value. Kernels that want saturation must clamp before converting.

Float to integer (`tile.copy`, whose conversion is round to nearest even):
round half to even, then saturate to the integer range; NaN becomes 0.
`arith.fptosi`/`fptoui` use `convert(..., rounding="trunc")` (toward zero,
then saturate; MLIR leaves out-of-range results undefined).
Integer to float: exact in float64, then rounded once as above.
Integer to integer: saturating.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

# bf16 and the fp8 formats: NumPy knows them only through ml_dtypes.
_NARROW_FLOATS = frozenset(
    np.dtype(t)
    for t in (
        ml_dtypes.bfloat16,
        ml_dtypes.float8_e4m3fn,
        ml_dtypes.float8_e5m2,
        ml_dtypes.float8_e4m3fnuz,
        ml_dtypes.float8_e5m2fnuz,
    )
)


@dataclass(frozen=True)
class ElementType:
    """One MLIR element type: its dtype and the constants of its rounding."""

    mlir: str
    dtype: np.dtype
    # Unit roundoff 2**-p (p significand bits including the implicit one); 0 for integers.
    unit_roundoff: float
    # Smallest positive subnormal (0 for integers): the absolute part of rounding error.
    smallest_subnormal: float

    @property
    def is_float(self) -> bool:
        return self.dtype.kind == "f" or self.dtype in _NARROW_FLOATS

    @property
    def is_int(self) -> bool:
        return self.dtype.kind in "iub"


def _float(mlir: str, dtype) -> ElementType:
    dtype = np.dtype(dtype)
    info = ml_dtypes.finfo(dtype) if dtype in _NARROW_FLOATS else np.finfo(dtype)
    return ElementType(mlir, dtype, 2.0 ** -(info.nmant + 1), float(info.smallest_subnormal))


def _int(mlir: str, dtype) -> ElementType:
    return ElementType(mlir, np.dtype(dtype), 0.0, 0.0)


# Buffer element types of DESIGN.md section 3, plus the scalar types the
# arith/index code around them uses (i1, i16, i64, index).
ELEMENT_TYPES: dict[str, ElementType] = {
    e.mlir: e
    for e in (
        _float("f64", np.float64),
        _float("f32", np.float32),
        _float("f16", np.float16),
        _float("bf16", ml_dtypes.bfloat16),
        _float("f8E4M3FN", ml_dtypes.float8_e4m3fn),
        _float("f8E5M2", ml_dtypes.float8_e5m2),
        _float("f8E4M3FNUZ", ml_dtypes.float8_e4m3fnuz),
        _float("f8E5M2FNUZ", ml_dtypes.float8_e5m2fnuz),
        _int("i1", np.bool_),
        _int("i8", np.int8),
        _int("i16", np.int16),
        _int("i32", np.int32),
        _int("i64", np.int64),
        _int("index", np.int64),
    )
}

_BY_DTYPE = {e.dtype: e for e in ELEMENT_TYPES.values() if e.mlir != "index"}


def element_type(mlir: str) -> ElementType | None:
    """The element type printed as `mlir` (e.g. "f8E4M3FNUZ"), or None."""
    return ELEMENT_TYPES.get(mlir)


def info(dtype: np.dtype) -> ElementType:
    return _BY_DTYPE[np.dtype(dtype)]


def is_float_dtype(dtype: np.dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype in _NARROW_FLOATS


def is_narrow_float(dtype: np.dtype) -> bool:
    """bf16 and fp8: NumPy has no arithmetic of its own for them."""
    return np.dtype(dtype) in _NARROW_FLOATS


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """Where arithmetic on `dtype` is carried out before rounding back: float64
    for f64, float32 for everything narrower (exact for + - * / and sqrt,
    since 24 >= 2 * 11 + 2 bits)."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def describe(dtype: np.dtype) -> str:
    """A NumPy-side name of a dtype, as error messages print it."""
    return np.dtype(dtype).name


def _float64_to_float32_round_to_odd(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounding to odd: of the two float32 neighbours of an
    inexact x, the one whose last significand bit is 1. A later round to
    nearest even with <= 22 significand bits is then exact (no double rounding)."""
    nearest = x.astype(np.float32)
    back = nearest.astype(np.float64)
    inexact = (back != x) & np.isfinite(x)
    if not inexact.any():
        return nearest
    even = (nearest.view(np.uint32) & 1) == 0
    direction = np.where(x > back, np.inf, -np.inf).astype(np.float32)
    # Overflow to inf steps back to the largest finite value, which is odd.
    stepped = np.nextafter(nearest, direction)
    return np.where(inexact & even, stepped, nearest)


def _to_float(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    source = x.dtype
    if source == dtype:
        return x.copy()
    if source.kind in "iub":
        x = x.astype(np.float64)  # exact for every integer type here
        source = x.dtype
    if dtype in (np.float64, np.float32, np.float16) and source.kind == "f":
        return x.astype(dtype)  # NumPy rounds directly: exact
    if is_narrow_float(dtype) and source == np.float64:
        return _float64_to_float32_round_to_odd(x).astype(dtype)
    # Sources narrower than float32 widen to float32 exactly; one rounding follows.
    return x.astype(np.float32).astype(dtype)


def _to_int(x: np.ndarray, dtype: np.dtype, rounding: str) -> np.ndarray:
    if dtype == np.bool_:
        return x != 0
    limits = np.iinfo(dtype)
    if not is_float_dtype(x.dtype):
        return np.clip(x.astype(np.int64), limits.min, limits.max).astype(dtype)
    wide = x.astype(np.float64)
    wide = np.trunc(wide) if rounding == "trunc" else np.rint(wide)  # rint: ties to even
    wide = np.where(np.isnan(wide), 0.0, wide)
    # float(limits.max) rounds up to 2**63 for int64, so the top is handled apart.
    above = wide >= 2.0 ** (limits.bits - 1)
    below = wide < float(limits.min)
    inside = np.where(above | below, 0.0, wide)
    result = inside.astype(np.int64).astype(dtype)
    result[below] = limits.min
    result[above] = limits.max
    return result


def convert(values, dtype, *, rounding: str = "nearest"):
    """`values` (array or scalar) converted to `dtype` with the rules in the
    module docstring. Returns a new array (a NumPy scalar for 0-d input)."""
    dtype = np.dtype(dtype)
    array = np.asarray(values)
    scalar = array.ndim == 0 and not isinstance(values, np.ndarray)
    with np.errstate(all="ignore"):
        if dtype == np.bool_ or dtype.kind in "iu":
            result = _to_int(array, dtype, rounding)
        else:
            result = _to_float(array, dtype)
    return result[()] if scalar else result
