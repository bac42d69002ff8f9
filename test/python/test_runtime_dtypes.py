"""Element-type conversion of the reference engine (tilemlir.runtime.dtypes):
exact round-to-nearest-even against a brute-force rounding written here from
the definition, and each fp8 format's overflow/NaN/-0 behaviour pinned down."""

import math

import ml_dtypes
import numpy as np
import pytest

from tilemlir.runtime.dtypes import ELEMENT_TYPES, convert

NARROW = {
    "bf16": ml_dtypes.bfloat16,
    "f8E4M3FN": ml_dtypes.float8_e4m3fn,
    "f8E5M2": ml_dtypes.float8_e5m2,
    "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
}


def representable(dtype):
    """Every finite non-negative value of a <= 16-bit format, sorted, with the
    parity of its significand's last bit (its encoding's last bit)."""
    bits = np.arange(2 ** (8 * np.dtype(dtype).itemsize), dtype=np.uint64)
    bits = bits.astype(np.uint16 if np.dtype(dtype).itemsize == 2 else np.uint8)
    with np.errstate(invalid="ignore"):
        values = bits.view(dtype).astype(np.float64)
    keep = np.isfinite(values) & ~np.signbit(values)
    order = np.argsort(values[keep], kind="stable")
    return values[keep][order], (bits[keep][order] & 1).astype(np.int64)


def round_by_definition(x: np.ndarray, dtype) -> np.ndarray:
    """Round to nearest, ties to the even significand, with an unbounded
    exponent; results above the largest finite value overflow to inf where the
    format has one, else NaN. Written from IEEE 754's definition, not ml_dtypes."""
    values, parity = representable(dtype)
    top, step = values[-1], values[-1] - values[-2]
    grid = np.append(values, top + step)  # the first value past the largest finite one
    grid_parity = np.append(parity, 1 - parity[-1])
    magnitude = np.abs(x)
    i = np.clip(np.searchsorted(grid, magnitude), 1, len(grid) - 1)
    low, high = grid[i - 1], grid[i]
    up = (high - magnitude < magnitude - low) | ((high - magnitude == magnitude - low) & (grid_parity[i] == 0))
    rounded = np.where(up, high, low)
    rounded = np.where(magnitude > grid[-1], np.inf, rounded)
    with np.errstate(over="ignore"):
        has_inf = np.isinf(np.float32(np.inf).astype(dtype).astype(np.float64))
    rounded = np.where(rounded > top, np.inf if has_inf else np.nan, rounded)
    has_negative_zero = np.signbit(np.float32(-0.0).astype(dtype).astype(np.float32))
    signed = np.copysign(rounded, x)
    if not has_negative_zero:
        signed = np.where(signed == 0, 0.0, signed)
    return np.where(np.isnan(x), np.nan, signed)


def hard_cases(dtype) -> np.ndarray:
    values, _ = representable(dtype)
    values = np.concatenate([values, -values])
    values = np.unique(values)
    mids = (values[1:] + values[:-1]) / 2
    rng = np.random.default_rng(0)
    return np.concatenate([
        values, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
        mids * (1 + 2.0**-40), mids * (1 - 2.0**-40),
        rng.standard_normal(20000) * values.max() / 3,
        [np.inf, -np.inf, np.nan, values.max() * 4, 1e300, -1e300, 1e-300, -1e-300, 0.0, -0.0],
    ])


def same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    got = got.astype(np.float64)
    return ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got) & np.isnan(want))


@pytest.mark.parametrize("name", sorted(NARROW))
@pytest.mark.parametrize("source", [np.float64, np.float32], ids=["from_f64", "from_f32"])
def test_rounding_is_exact(name, source):
    dtype = NARROW[name]
    with np.errstate(over="ignore"):
        x = hard_cases(dtype).astype(source)
    ok = same(convert(x, dtype), round_by_definition(x.astype(np.float64), dtype))
    assert ok.all(), f"{name}: {x[~ok][:5]}"


def test_float64_source_rounds_once():
    # ml_dtypes converts float64 through float32, rounding twice; convert does not.
    x = np.array([1.0625 + 2.0**-40])  # just above the midpoint of 1 and 1.125 in e4m3
    assert float(x.astype(ml_dtypes.float8_e4m3fnuz)[0]) == 1.0  # the double rounding
    assert float(convert(x, ml_dtypes.float8_e4m3fnuz)[0]) == 1.125


def test_f16_from_f64_is_exact():
    x = np.array([1 + 2.0**-11 + 2.0**-40, 65520.0, 65519.9, 2.0**-25, 2.0**-25 + 2.0**-60])
    assert convert(x, np.float16).astype(np.float64).tolist() == [1 + 2.0**-10, math.inf, 65504.0, 0.0, 2.0**-24]


# What each format does with values it cannot hold (the table in dtypes' docstring).
@pytest.mark.parametrize("name, largest, tie_stays, overflow, inf_becomes, negative_zero", [
    ("f8E4M3FN", 448.0, 464.0, math.nan, math.nan, True),
    ("f8E5M2", 57344.0, None, math.inf, math.inf, True),
    ("f8E4M3FNUZ", 240.0, None, math.nan, math.nan, False),
    ("f8E5M2FNUZ", 57344.0, None, math.nan, math.nan, False),
    ("bf16", float(ml_dtypes.finfo(ml_dtypes.bfloat16).max), None, math.inf, math.inf, True),
])
def test_out_of_range_behaviour(name, largest, tie_stays, overflow, inf_becomes, negative_zero):
    dtype = NARROW[name]

    def to(x):
        return float(convert(np.array([x]), dtype)[0])

    assert to(largest) == largest
    assert to(largest * 1.001) == largest  # within half an ulp: rounds down, no overflow
    if tie_stays is not None:
        # e4m3fn: 464 is the midpoint of 448 and (unrepresentable) 480; ties go to 448's even significand.
        assert to(tie_stays) == largest
        assert math.isnan(to(np.nextafter(tie_stays, math.inf)))
    for big in (largest * 2, 1e300):
        got = to(big)
        assert (math.isnan(got) and math.isnan(overflow)) or got == overflow
        assert (math.isnan(to(-big)) and math.isnan(overflow)) or to(-big) == -overflow
    got = to(math.inf)
    assert (math.isnan(got) and math.isnan(inf_becomes)) or got == inf_becomes
    assert math.isnan(to(math.nan))
    assert math.copysign(1.0, to(-0.0)) == (-1.0 if negative_zero else 1.0)
    assert ELEMENT_TYPES[name].dtype == np.dtype(dtype)


def test_no_saturation_in_fp8():
    # A copy never clamps: 300 in e4m3fnuz (largest 240) is NaN, not 240.
    assert math.isnan(float(convert(np.array([300.0]), ml_dtypes.float8_e4m3fnuz)[0]))


def test_float_to_int_rounds_half_even_and_saturates():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 127.4, 127.6, 1e9, -1e9, np.nan, np.inf, -np.inf])
    assert convert(x, np.int8).tolist() == [0, 2, 2, 0, -2, 127, 127, 127, -128, 0, 127, -128]
    assert convert(x, np.int32, rounding="trunc").tolist()[:5] == [0, 1, 2, 0, -1]
    assert convert(np.array([3e19, -3e19]), np.int64).tolist() == [2**63 - 1, -(2**63)]


def test_int_to_int_saturates_and_int_to_float_rounds_once():
    assert convert(np.array([300, -300, 5], np.int32), np.int8).tolist() == [127, -128, 5]
    # 2**24 + 1 is not a float32; ties to even give 2**24.
    assert convert(np.array([2**24 + 1, 2**24 + 3], np.int32), np.float32).tolist() == [2.0**24, 2.0**24 + 4]
    assert float(convert(np.array([17], np.int32), ml_dtypes.float8_e4m3fnuz)[0]) == 16.0


def test_scalars_stay_scalars():
    value = convert(np.float32(1.1), np.float16)
    assert isinstance(value, np.float16)
    assert isinstance(convert(np.array([1.0]), np.float16), np.ndarray)


def test_unit_roundoffs():
    assert ELEMENT_TYPES["f32"].unit_roundoff == 2.0**-24
    assert ELEMENT_TYPES["f16"].unit_roundoff == 2.0**-11
    assert ELEMENT_TYPES["bf16"].unit_roundoff == 2.0**-8
    assert ELEMENT_TYPES["f8E4M3FNUZ"].unit_roundoff == 2.0**-4
    assert ELEMENT_TYPES["f8E5M2"].unit_roundoff == 2.0**-3
    assert ELEMENT_TYPES["i8"].unit_roundoff == 0.0
