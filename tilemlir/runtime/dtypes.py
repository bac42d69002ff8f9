"""Element types of tile buffers as NumPy dtypes, and exact conversion between them.

Every element type of DESIGN.md section 3 maps to one NumPy dtype. `convert(values,
dtype)` is the one conversion the reference engine and the emulator use: for
`tile.copy` between element types, `arith.truncf`, `arith.extf`, `arith.sitofp`,
gemm accumulator read/write and so on.

The narrow floats (bf16 and the fp8 formats) are defined here, by the rows of
`NARROW_FORMATS`, not by any library: `ml_dtypes` only supplies their NumPy
dtypes, which serve as containers of the bit patterns this module computes.
A format with E exponent bits, M mantissa bits and bias B encodes the bits
`s eeee mmm` as

    NaN                                 if the pattern is one of the format's NaNs,
    (-1)**s * inf                       if the format has inf and e is all ones, m = 0,
    (-1)**s * m * 2**(1 - B - M)        if e = 0 (zero and subnormals),
    (-1)**s * (1 + m / 2**M) * 2**(e - B)  otherwise.

| format     | E | M | B  | max      | inf | -0.0 | NaN patterns                     |
|------------|---|---|----|----------|-----|------|----------------------------------|
| bf16       | 8 | 7 | 127| 3.39e38  | yes | yes  | e all ones, m != 0 (IEEE 754)    |
| f8E5M2     | 5 | 2 | 15 | 57344    | yes | yes  | e all ones, m != 0 (IEEE 754)    |
| f8E4M3FN   | 4 | 3 | 7  | 448      | no  | yes  | e and m all ones (0x7F, 0xFF)    |
| f8E4M3FNUZ | 4 | 3 | 8  | 240      | no  | no   | the would-be -0 pattern (0x80)   |
| f8E5M2FNUZ | 5 | 2 | 16 | 57344    | no  | no   | the would-be -0 pattern (0x80)   |

(OCP 8-bit floating point specification v1.0 for E4M3FN/E5M2; the FNUZ
variants are AMD's gfx942 formats, as named by LLVM's APFloat.) f16, f32 and
f64 are NumPy's own IEEE 754 binary16/32/64.

Float to float: round to nearest, ties to even, computed exactly once from the
exact value of the source, whatever the source type. "Overflow" means the value
rounds (ties to even, unbounded exponent) above the largest finite value; e.g.
in e4m3fn 464 rounds to 448 but anything above 464 overflows:

| format            | overflow, +-inf become | NaN becomes | -0.0 becomes  |
|-------------------|------------------------|-------------|---------------|
| f16, bf16, f8E5M2 | +-inf                  | NaN         | -0.0          |
| f8E4M3FN          | NaN (no inf)           | NaN         | -0.0          |
| f8E4M3FNUZ        | NaN (no inf)           | NaN         | +0.0 (no -0)  |
| f8E5M2FNUZ        | NaN (no inf)           | NaN         | +0.0 (no -0)  |

Negative values that round to zero become -0.0, or +0.0 where there is no -0.
A NaN result is the format's `nan_bits`, with the source's sign where the
format's NaNs are signed. There is no saturation: a conversion never clamps to
the largest finite value. Kernels that want saturation must clamp before
converting.

Float to integer (`tile.copy`, whose conversion is round to nearest even):
round half to even, then saturate to the integer range; NaN becomes 0.
`arith.fptosi`/`fptoui` use `convert(..., rounding="trunc")` (toward zero,
then saturate; MLIR leaves out-of-range results undefined).
Integer to float: rounded once as above (from the exact integer value).
Integer to integer: saturating.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from tilemlir.dialects.element_types import ELEMENT_TYPES as TABLE
from tilemlir.dialects.element_types import ElementTypeRow, bit_width_of, dtype_of


class NanPatterns(enum.Enum):
    """Which bit patterns of a narrow float format are NaN."""

    IEEE = "exponent all ones, mantissa nonzero"
    ALL_ONES = "exponent and mantissa all ones"
    NEGATIVE_ZERO = "sign bit alone (the pattern -0.0 would have)"


@dataclass(frozen=True)
class NarrowFormat:
    """A narrow binary float format: the parameters that define its values (see
    the module docstring's formula) and the NumPy dtype that stores its bits."""

    mlir: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    has_inf: bool
    has_negative_zero: bool
    max_finite: float
    nan_patterns: NanPatterns
    # The NaN pattern conversions produce (the sign bit is added for signed NaNs).
    nan_bits: int
    # The NumPy container of the bits (from the element type table).
    dtype: np.dtype = field(init=False)
    # Every pattern's value, by pattern: the formula evaluated once per format.
    values: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "dtype", dtype_of(self.mlir))
        if self.width != bit_width_of(self.mlir):
            raise ValueError(f"{self.mlir}: 1 + {self.exponent_bits} + {self.mantissa_bits} bits, "
                             f"not the element type's {bit_width_of(self.mlir)}")
        object.__setattr__(self, "values", _decoded_patterns(self))
        positive = self.values[: 1 << (self.width - 1)]
        if positive[np.isfinite(positive)].max() != self.max_finite:
            raise ValueError(f"{self.mlir}: max_finite {self.max_finite} is not the largest finite value")
        if not np.isnan(self.values[self.nan_bits]):
            raise ValueError(f"{self.mlir}: nan_bits {self.nan_bits:#x} is not a NaN pattern")

    @property
    def width(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def bits_dtype(self) -> np.dtype:
        """The unsigned integer type of the same width, for `.view`."""
        return np.dtype(np.uint16 if self.width == 16 else np.uint8)

    @property
    def unit_roundoff(self) -> float:
        return 2.0 ** -(self.mantissa_bits + 1)

    @property
    def smallest_subnormal(self) -> float:
        return 2.0 ** (1 - self.bias - self.mantissa_bits)

    @cached_property
    def max_finite_bits(self) -> int:
        """The positive pattern of `max_finite`: patterns above it (in the unbounded
        encoding of `_encode`) overflow."""
        return int(np.flatnonzero(self.values == self.max_finite)[0])

    @property
    def overflow_bits(self) -> int:
        """Where an overflowing magnitude goes: +inf, or the NaN pattern."""
        if self.has_inf:
            return ((1 << self.exponent_bits) - 1) << self.mantissa_bits
        return self.nan_bits


def _decoded_patterns(fmt: NarrowFormat) -> np.ndarray:
    """The float64 value of every bit pattern of `fmt`, by the module docstring's formula."""
    bits = np.arange(1 << fmt.width, dtype=np.int64)
    sign = np.where(bits >> (fmt.width - 1), -1.0, 1.0)
    exponent = (bits >> fmt.mantissa_bits) & ((1 << fmt.exponent_bits) - 1)
    mantissa = bits & ((1 << fmt.mantissa_bits) - 1)
    top_exponent = exponent == (1 << fmt.exponent_bits) - 1
    magnitude = np.where(
        exponent == 0,
        np.ldexp(mantissa.astype(np.float64), 1 - fmt.bias - fmt.mantissa_bits),
        np.ldexp((mantissa + (1 << fmt.mantissa_bits)).astype(np.float64),
                 exponent - fmt.bias - fmt.mantissa_bits))
    if fmt.has_inf:
        magnitude = np.where(top_exponent & (mantissa == 0), np.inf, magnitude)
    values = sign * magnitude
    if fmt.nan_patterns is NanPatterns.IEEE:
        nan = top_exponent & (mantissa != 0)
    elif fmt.nan_patterns is NanPatterns.ALL_ONES:
        nan = top_exponent & (mantissa == (1 << fmt.mantissa_bits) - 1)
    else:
        nan = bits == 1 << (fmt.width - 1)
    values[nan] = np.nan
    values.flags.writeable = False
    return values


NARROW_FORMATS: dict[str, NarrowFormat] = {
    f.mlir: f
    for f in (
        NarrowFormat("bf16", 8, 7, 127, has_inf=True, has_negative_zero=True,
                     max_finite=(2 - 2.0**-7) * 2.0**127, nan_patterns=NanPatterns.IEEE, nan_bits=0x7FC0),
        NarrowFormat("f8E4M3FN", 4, 3, 7, has_inf=False, has_negative_zero=True,
                     max_finite=448.0, nan_patterns=NanPatterns.ALL_ONES, nan_bits=0x7F),
        NarrowFormat("f8E5M2", 5, 2, 15, has_inf=True, has_negative_zero=True,
                     max_finite=57344.0, nan_patterns=NanPatterns.IEEE, nan_bits=0x7E),
        NarrowFormat("f8E4M3FNUZ", 4, 3, 8, has_inf=False, has_negative_zero=False,
                     max_finite=240.0, nan_patterns=NanPatterns.NEGATIVE_ZERO, nan_bits=0x80),
        NarrowFormat("f8E5M2FNUZ", 5, 2, 16, has_inf=False, has_negative_zero=False,
                     max_finite=57344.0, nan_patterns=NanPatterns.NEGATIVE_ZERO, nan_bits=0x80),
    )
}

_FORMAT_OF_DTYPE = {f.dtype: f for f in NARROW_FORMATS.values()}

# bf16 and the fp8 formats: NumPy has no arithmetic of its own for them.
_NARROW_FLOATS = frozenset(_FORMAT_OF_DTYPE)


def narrow_format(dtype: np.dtype) -> NarrowFormat:
    """The defining row of a narrow float dtype (KeyError for any other dtype)."""
    return _FORMAT_OF_DTYPE[np.dtype(dtype)]


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


def _element_type(row: ElementTypeRow) -> ElementType:
    """The conversion constants of a row of the element type table."""
    if row.name in NARROW_FORMATS:
        fmt = NARROW_FORMATS[row.name]
        return ElementType(row.name, row.dtype, fmt.unit_roundoff, fmt.smallest_subnormal)
    if row.kind == "float":  # NumPy's own IEEE 754 binary64/32/16
        finfo = np.finfo(row.dtype)
        return ElementType(row.name, row.dtype, 2.0 ** -(finfo.nmant + 1), float(finfo.smallest_subnormal))
    return ElementType(row.name, row.dtype, 0.0, 0.0)


# Every element type of tilemlir.dialects.element_types: the buffer element types
# of DESIGN.md section 3, plus the scalar types the arith/index code around them
# uses (i1, i16, i64, index).
ELEMENT_TYPES: dict[str, ElementType] = {name: _element_type(row) for name, row in TABLE.items()}

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


def _decode(x: np.ndarray, fmt: NarrowFormat) -> np.ndarray:
    """The exact float64 values of an array of `fmt`, from the format's table."""
    return np.asarray(fmt.values[x.view(fmt.bits_dtype)])


# Elements encoded per pass of `_encode`: its temporaries then stay in cache.
_ENCODE_CHUNK = 1 << 14


def _encode(x: np.ndarray, fmt: NarrowFormat) -> np.ndarray:
    """float32 or float64 `x` rounded to nearest even in `fmt`, as an array of fmt.dtype."""
    flat = x.reshape(-1)
    bits = np.empty(flat.size, fmt.bits_dtype)
    for start in range(0, flat.size, _ENCODE_CHUNK):
        stop = start + _ENCODE_CHUNK
        bits[start:stop] = _encode_chunk(flat[start:stop], fmt)
    return bits.reshape(x.shape).view(fmt.dtype)


def _encode_chunk(x: np.ndarray, fmt: NarrowFormat) -> np.ndarray:
    """The patterns of `fmt` nearest (ties to even) to float32/float64 `x`.

    Works on the source's bits (P mantissa bits): the source significand, with
    its implicit bit, is shifted right to the target's quantum at x's exponent
    (never finer than the target's subnormal quantum), rounding half to even on
    the dropped bits. The target pattern is then (target exponent field - 1) << M
    plus that significand, so a significand that rounded up to 2**(M+1) carries
    into the exponent, and a subnormal one that reached 2**M becomes the smallest
    normal. Patterns above `max_finite_bits` overflow (inf and NaN sources too).
    """
    source = np.finfo(x.dtype)
    uint = np.dtype(np.uint64 if x.dtype == np.float64 else np.uint32)
    width = 8 * uint.itemsize
    mantissa_bits = source.nmant

    def u(value: int):
        return uint.type(value)

    bits = x.view(uint)
    magnitude = bits & u((1 << (width - 1)) - 1)
    field = magnitude >> u(mantissa_bits)
    # Source subnormals (field 0) have the exponent of field 1, without the implicit bit.
    nonzero_field = np.maximum(field, u(1))
    significand = nonzero_field - u(1)
    significand <<= u(mantissa_bits)
    np.subtract(magnitude, significand, out=significand)
    # The source field of the target's smallest normal exponent (>= 1: every
    # target's range lies inside float32's).
    floor_field = -source.minexp + 1 - fmt.bias + 1
    clamped = np.maximum(field, u(floor_field), out=field)
    shift = np.subtract(clamped, nonzero_field, out=nonzero_field)
    shift += u(mantissa_bits - fmt.mantissa_bits)
    np.minimum(shift, u(width - 1), out=shift)
    # significand + half - 1 + (last kept bit), shifted: round half to even.
    rounded = np.subtract(shift, u(1))
    np.left_shift(u(1), rounded, out=rounded)
    rounded -= u(1)
    rounded += significand
    significand >>= shift
    significand &= u(1)
    rounded += significand
    rounded >>= shift
    code = np.subtract(clamped, u(floor_field), out=clamped)
    code <<= u(fmt.mantissa_bits)
    code += rounded
    np.copyto(code, u(fmt.overflow_bits), where=code > u(fmt.max_finite_bits))
    if fmt.has_inf:  # NaN sources would otherwise overflow to inf
        infinity = ((1 << (width - 1 - mantissa_bits)) - 1) << mantissa_bits
        np.copyto(code, u(fmt.nan_bits), where=magnitude > u(infinity))
    sign = np.right_shift(bits, u(width - 1), out=magnitude)
    sign <<= u(fmt.width - 1)
    if not fmt.has_negative_zero:
        np.copyto(sign, u(0), where=code == u(0))
    code |= sign
    return code


# Integers whose magnitude needs more than float64's 53 bits: keep the top 53
# bits of the magnitude, and set the last if any lower bit was set.
_ROUND_TO_ODD_DROP = 11


def _integers_to_float64(x: np.ndarray, *, exact_for: np.dtype) -> np.ndarray:
    """Integer `x` as float64, rounded (if |x| >= 2**53) so that one later rounding
    to `exact_for` gives the correctly rounded value of the integer itself."""
    if x.dtype.itemsize < 8 or exact_for == np.float64:
        return x.astype(np.float64)  # exact, or numpy's one correct rounding
    if x.dtype.kind == "u":
        magnitude, negative = x.astype(np.uint64), None
    else:
        negative = x < 0
        magnitude = np.abs(x.astype(np.int64)).view(np.uint64)  # -2**63 wraps to 2**63: right
    # Round to odd at bit 11: a later rounding to <= 51 significant bits is exact.
    top = magnitude >> np.uint64(_ROUND_TO_ODD_DROP)
    sticky = (magnitude & np.uint64((1 << _ROUND_TO_ODD_DROP) - 1)) != 0
    odd = np.ldexp((top | sticky.astype(np.uint64)).astype(np.float64), _ROUND_TO_ODD_DROP)
    result = np.where(magnitude >= np.uint64(2**53), odd, magnitude.astype(np.float64))
    return result if negative is None else np.where(negative, -result, result)


def _to_float(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    source = x.dtype
    if source == dtype:
        return x.copy()
    target = _FORMAT_OF_DTYPE.get(dtype)
    if source in _FORMAT_OF_DTYPE:
        x = _decode(x, _FORMAT_OF_DTYPE[source])  # exact
    elif source.kind in "iub":
        x = _integers_to_float64(x, exact_for=dtype)
    elif target is not None and source not in (np.float32, np.float64):
        x = x.astype(np.float64)  # f16: exact
    if target is None:
        return x.astype(dtype)  # NumPy's IEEE conversions round once, directly
    return _encode(x, target)


def _to_int(x: np.ndarray, dtype: np.dtype, rounding: str) -> np.ndarray:
    if dtype == np.bool_:
        return x != 0
    limits = np.iinfo(dtype)
    if not is_float_dtype(x.dtype):
        return np.clip(x.astype(np.int64), limits.min, limits.max).astype(dtype)
    wide = _decode(x, _FORMAT_OF_DTYPE[x.dtype]) if x.dtype in _FORMAT_OF_DTYPE else x.astype(np.float64)
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
    shape = array.shape
    scalar = array.ndim == 0 and not isinstance(values, np.ndarray)
    with np.errstate(all="ignore"):
        if dtype == np.bool_ or dtype.kind in "iu":
            result = _to_int(array.reshape(shape or (1,)), dtype, rounding)
        else:
            result = _to_float(array.reshape(shape or (1,)), dtype)
    result = result.reshape(shape)
    return result[()] if scalar else result


def atomic_update(kind: str, is_float: bool) -> np.ufunc:
    """The NumPy ufunc an atomic update of `kind` ("add", "max", "min":
    `attributes.ATOMIC_RMW_KINDS`) applies with `ufunc.at`; float max and
    min ignore a NaN operand (fmax, fmin), as maxnumf / minnumf do."""
    if kind == "add":
        return np.add
    if kind == "max":
        return np.fmax if is_float else np.maximum
    return np.fmin if is_float else np.minimum
