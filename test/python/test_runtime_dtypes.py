"""Element-type conversion of the reference engine and emulator
(tilemlir.runtime.dtypes), checked against the narrow float formats' definitions
written out again here: every bit pattern decodes to the value the format's
formula gives, encodes back to itself, and every rounding boundary (midpoints
between neighbours, overflow thresholds, zero) rounds to nearest, ties to even,
exactly once from any source type. Nothing here asks ml_dtypes for a value:
its dtypes are only the containers of the bit patterns."""

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest

from tilemlir.runtime.dtypes import ELEMENT_TYPES, convert


@dataclass(frozen=True)
class Format:
    """A narrow format as its specification states it (OCP FP8 v1.0 for E4M3FN
    and E5M2, AMD's FNUZ variants, bfloat16 as the top half of binary32)."""

    dtype: type
    exponent_bits: int
    mantissa_bits: int
    bias: int
    has_inf: bool
    has_negative_zero: bool
    largest: float
    nan: str  # "ieee": exponent all ones, mantissa != 0; "all ones"; "0x80"

    @property
    def width(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def bits_dtype(self):
        return np.uint16 if self.width == 16 else np.uint8


FORMATS = {
    "bf16": Format(ml_dtypes.bfloat16, 8, 7, 127, True, True, (2 - 2.0**-7) * 2.0**127, "ieee"),
    "f8E4M3FN": Format(ml_dtypes.float8_e4m3fn, 4, 3, 7, False, True, 448.0, "all ones"),
    "f8E5M2": Format(ml_dtypes.float8_e5m2, 5, 2, 15, True, True, 57344.0, "ieee"),
    "f8E4M3FNUZ": Format(ml_dtypes.float8_e4m3fnuz, 4, 3, 8, False, False, 240.0, "0x80"),
    "f8E5M2FNUZ": Format(ml_dtypes.float8_e5m2fnuz, 5, 2, 16, False, False, 57344.0, "0x80"),
}
EIGHT_BIT = sorted(name for name, f in FORMATS.items() if f.width == 8)


def decode_by_definition(pattern: int, f: Format) -> float:
    """The value of one bit pattern, one Python float at a time."""
    sign = -1.0 if pattern >> (f.width - 1) else 1.0
    exponent = (pattern >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1)
    mantissa = pattern & ((1 << f.mantissa_bits) - 1)
    top = exponent == (1 << f.exponent_bits) - 1
    if ((f.nan == "ieee" and top and mantissa) or (f.nan == "all ones" and top and mantissa == (1 << f.mantissa_bits) - 1)
            or (f.nan == "0x80" and pattern == 0x80)):
        return math.nan
    if f.has_inf and top and mantissa == 0:
        return sign * math.inf
    if exponent == 0:
        return sign * math.ldexp(mantissa, 1 - f.bias - f.mantissa_bits)
    return sign * math.ldexp((1 << f.mantissa_bits) + mantissa, exponent - f.bias - f.mantissa_bits)


_TABLES: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def all_patterns(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Every bit pattern of a format and its value by definition."""
    if name not in _TABLES:
        f = FORMATS[name]
        patterns = np.arange(1 << f.width).astype(f.bits_dtype)
        _TABLES[name] = patterns, np.array([decode_by_definition(int(p), f) for p in patterns])
    return _TABLES[name]


def representable(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Every finite non-negative value of a format, sorted, with the last bit of
    its pattern (the parity of its significand)."""
    patterns, values = all_patterns(name)
    keep = np.isfinite(values) & ~np.signbit(values)
    order = np.argsort(values[keep], kind="stable")
    return values[keep][order], (patterns[keep][order] & 1).astype(np.int64)


def round_by_definition(x: np.ndarray, name: str) -> np.ndarray:
    """Round to nearest, ties to the even significand, with an unbounded
    exponent; results above the largest finite value overflow to inf where the
    format has one, else NaN. Written from IEEE 754's definition."""
    f = FORMATS[name]
    values, parity = representable(name)
    top, step = values[-1], values[-1] - values[-2]
    grid = np.append(values, top + step)  # the first value past the largest finite one
    grid_parity = np.append(parity, 1 - parity[-1])
    magnitude = np.abs(x)
    i = np.clip(np.searchsorted(grid, magnitude), 1, len(grid) - 1)
    low, high = grid[i - 1], grid[i]
    up = (high - magnitude < magnitude - low) | ((high - magnitude == magnitude - low) & (grid_parity[i] == 0))
    rounded = np.where(up, high, low)
    rounded = np.where(magnitude > grid[-1], np.inf, rounded)
    rounded = np.where(rounded > top, np.inf if f.has_inf else np.nan, rounded)
    signed = np.copysign(rounded, x)
    if not f.has_negative_zero:
        signed = np.where(signed == 0, 0.0, signed)
    return np.where(np.isnan(x), np.nan, signed)


def same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise: equal values with equal signs (so -0 != +0), or both NaN."""
    got = convert(got, np.float64) if got.dtype != np.float64 else got
    return ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got) & np.isnan(want))


def hard_cases(name: str) -> np.ndarray:
    values, _ = representable(name)
    values = np.unique(np.concatenate([values, -values]))
    mids = (values[1:] + values[:-1]) / 2
    rng = np.random.default_rng(0)
    return np.concatenate([
        values, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
        mids * (1 + 2.0**-40), mids * (1 - 2.0**-40),
        rng.standard_normal(20000) * values.max() / 3,
        [np.inf, -np.inf, np.nan, values.max() * 4, 1e300, -1e300, 1e-300, -1e-300, 0.0, -0.0],
    ])


# --- decoding -----------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_pattern_decodes_to_its_defined_value(name):
    patterns, values = all_patterns(name)
    stored = patterns.view(FORMATS[name].dtype)
    for target in (np.float64, np.float32):
        ok = same(convert(stored, target).astype(np.float64), values)
        assert ok.all(), f"{name} -> {target.__name__}: patterns {patterns[~ok][:5]}"
    element = ELEMENT_TYPES[name]
    assert element.dtype == np.dtype(FORMATS[name].dtype)
    assert element.unit_roundoff == 2.0 ** -(FORMATS[name].mantissa_bits + 1)
    assert element.smallest_subnormal == np.min(values[values > 0])
    assert np.max(values[np.isfinite(values)]) == FORMATS[name].largest


# --- encoding -----------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize("source", [np.float64, np.float32], ids=["from_f64", "from_f32"])
def test_every_value_encodes_to_its_own_pattern(name, source):
    patterns, values = all_patterns(name)
    keep = ~np.isnan(values)
    encoded = convert(values[keep].astype(source), FORMATS[name].dtype)
    back = encoded.view(FORMATS[name].bits_dtype)
    assert (back == patterns[keep]).all(), f"{name}: patterns {patterns[keep][back != patterns[keep]][:5]}"


@pytest.mark.parametrize("name", EIGHT_BIT)
@pytest.mark.parametrize("source", [np.float64, np.float32], ids=["from_f64", "from_f32"])
def test_midpoints_round_to_even_and_neighbours_to_nearest(name, source):
    magnitudes, parity = representable(name)
    # All finite values in order, negative ones first; -0 and +0 are one value here.
    values = np.concatenate([-magnitudes[:0:-1], magnitudes])
    last_bit = np.concatenate([parity[:0:-1], parity])
    low, high = values[:-1], values[1:]
    mids = ((low + high) / 2).astype(source)  # exact: the format's bits plus one
    assert (mids.astype(np.float64) == (low + high) / 2).all()
    dtype = FORMATS[name].dtype

    def rounded(x):
        return convert(convert(x, dtype), np.float64)

    # Ties go to the even significand (zero's is even).
    assert (rounded(mids) == np.where(last_bit[1:] == 0, high, low)).all()
    assert (rounded(np.nextafter(mids, source(np.inf))) == high).all()
    assert (rounded(np.nextafter(mids, source(-np.inf))) == low).all()


@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize("source", [np.float64, np.float32], ids=["from_f64", "from_f32"])
def test_rounding_matches_the_definition(name, source):
    with np.errstate(over="ignore"):
        x = hard_cases(name).astype(source)
    ok = same(convert(x, FORMATS[name].dtype), round_by_definition(x.astype(np.float64), name))
    assert ok.all(), f"{name}: {x[~ok][:5]}"


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_narrow_to_narrow_rounds_once(name):
    """Every value of every other narrow format, converted into this one."""
    for other in sorted(set(FORMATS) - {name}):
        patterns, values = all_patterns(other)
        got = convert(patterns.view(FORMATS[other].dtype), FORMATS[name].dtype)
        ok = same(got, round_by_definition(values, name))
        assert ok.all(), f"{other} -> {name}: {values[~ok][:5]}"


def test_float64_source_rounds_once():
    # Just above the midpoint of 1 and 1.125 in e4m3fnuz, by less than float32 can hold:
    # rounding to float32 first would make it a tie, and the tie would go to 1.0.
    x = np.array([1.0625 + 2.0**-40])
    assert float(convert(x, np.float32)[0]) == 1.0625
    assert float(convert(convert(x, ml_dtypes.float8_e4m3fnuz), np.float64)[0]) == 1.125


def test_int64_source_rounds_once():
    # Above the bf16 midpoint of 2**62 and 2**62 + 2**55 by 1: float64 alone would
    # hold only the midpoint, whose tie goes to 2**62.
    x = np.array([2**62 + 2**54 + 1, -(2**62 + 2**54 + 1), 2**62 + 2**54, -(2**63), 2**63 - 1])
    got = convert(convert(x, ml_dtypes.bfloat16), np.float64).tolist()
    assert got == [2.0**62 + 2.0**55, -(2.0**62 + 2.0**55), 2.0**62, -(2.0**63), 2.0**63]
    assert convert(np.array([2**60 + 2**36 + 1]), np.float32).tolist() == [2.0**60 + 2.0**37]
    assert float(convert(np.array([17], np.int32), ml_dtypes.float8_e4m3fnuz)[0]) == 16.0
    assert math.isnan(float(convert(np.array([300], np.uint16), ml_dtypes.float8_e4m3fnuz)[0]))


def test_f16_from_f64_is_exact():
    x = np.array([1 + 2.0**-11 + 2.0**-40, 65520.0, 65519.9, 2.0**-25, 2.0**-25 + 2.0**-60])
    assert convert(x, np.float16).astype(np.float64).tolist() == [1 + 2.0**-10, math.inf, 65504.0, 0.0, 2.0**-24]


# What each format does with values it cannot hold (the table in dtypes' docstring).
@pytest.mark.parametrize("name, overflow, negative_zero", [
    ("f8E4M3FN", math.nan, True),
    ("f8E5M2", math.inf, True),
    ("f8E4M3FNUZ", math.nan, False),
    ("f8E5M2FNUZ", math.nan, False),
    ("bf16", math.inf, True),
])
def test_out_of_range_behaviour(name, overflow, negative_zero):
    f = FORMATS[name]

    def to(x):
        return float(convert(convert(np.array([x]), f.dtype), np.float64)[0])

    def is_overflow(got, sign):
        return math.isnan(got) if math.isnan(overflow) else got == sign * overflow

    largest = f.largest
    step = 2.0 ** (math.frexp(largest)[1] - 1 - f.mantissa_bits)  # the ulp of the largest value
    tie = largest + step / 2
    largest_is_even = (largest / step) % 2 == 0
    assert to(largest) == largest
    # e4m3fn: 464 is the tie of 448 (even significand) and 480: it stays 448. Where the
    # largest significand is odd, its tie with the next power of two overflows.
    for sign in (1, -1):
        assert to(sign * np.nextafter(tie, 0)) == sign * largest
        assert to(sign * tie) == sign * largest if largest_is_even else is_overflow(to(sign * tie), sign)
        assert is_overflow(to(sign * np.nextafter(tie, math.inf)), sign)
        for big in (largest * 2, 1e300, math.inf):
            assert is_overflow(to(sign * big), sign)
    assert math.isnan(to(math.nan))
    assert math.copysign(1.0, to(-0.0)) == (-1.0 if negative_zero else 1.0)
    assert math.copysign(1.0, to(-(2.0 ** -200))) == (-1.0 if negative_zero else 1.0)


def test_e4m3fn_tie_at_464_stays_448():
    assert FORMATS["f8E4M3FN"].largest == 448.0
    assert float(convert(np.array([464.0]), ml_dtypes.float8_e4m3fn).astype(np.float32)[0]) == 448.0


def test_no_saturation_in_fp8():
    # A copy never clamps: 300 in e4m3fnuz (largest 240) is NaN, not 240.
    assert math.isnan(float(convert(convert(np.array([300.0]), ml_dtypes.float8_e4m3fnuz), np.float64)[0]))


# --- integers, shapes ------------------------------------------------------------

def test_float_to_int_rounds_half_even_and_saturates():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 127.4, 127.6, 1e9, -1e9, np.nan, np.inf, -np.inf])
    assert convert(x, np.int8).tolist() == [0, 2, 2, 0, -2, 127, 127, 127, -128, 0, 127, -128]
    assert convert(x, np.int32, rounding="trunc").tolist()[:5] == [0, 1, 2, 0, -1]
    assert convert(np.array([3e19, -3e19]), np.int64).tolist() == [2**63 - 1, -(2**63)]
    narrow = convert(np.array([2.5, -1.5, 448.0, np.nan]), ml_dtypes.float8_e4m3fn)
    assert convert(narrow, np.int8).tolist() == [2, -2, 127, 0]


def test_int_to_int_saturates_and_int_to_float_rounds_once():
    assert convert(np.array([300, -300, 5], np.int32), np.int8).tolist() == [127, -128, 5]
    # 2**24 + 1 is not a float32; ties to even give 2**24.
    assert convert(np.array([2**24 + 1, 2**24 + 3], np.int32), np.float32).tolist() == [2.0**24, 2.0**24 + 4]


def test_scalars_stay_scalars_and_shapes_are_kept():
    value = convert(np.float32(1.1), np.float16)
    assert isinstance(value, np.float16)
    assert isinstance(convert(np.array([1.0]), np.float16), np.ndarray)
    zero_d = convert(np.array(1.0625), ml_dtypes.float8_e4m3fn)
    assert isinstance(zero_d, np.ndarray) and zero_d.shape == ()
    strided = np.arange(24.0).reshape(4, 6)[:, ::2].T
    got = convert(strided, ml_dtypes.bfloat16)
    assert got.shape == (3, 4) and (convert(got, np.float64) == strided).all()
    assert convert(np.zeros((0, 3)), ml_dtypes.float8_e5m2).shape == (0, 3)


def test_unit_roundoffs():
    assert ELEMENT_TYPES["f32"].unit_roundoff == 2.0**-24
    assert ELEMENT_TYPES["f16"].unit_roundoff == 2.0**-11
    assert ELEMENT_TYPES["bf16"].unit_roundoff == 2.0**-8
    assert ELEMENT_TYPES["f8E4M3FNUZ"].unit_roundoff == 2.0**-4
    assert ELEMENT_TYPES["f8E5M2"].unit_roundoff == 2.0**-3
    assert ELEMENT_TYPES["f8E4M3FNUZ"].smallest_subnormal == 2.0**-10
    assert ELEMENT_TYPES["i8"].unit_roundoff == 0.0
