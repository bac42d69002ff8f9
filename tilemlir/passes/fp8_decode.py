"""fp8 conversions in software, with integer and f32 arithmetic, for chips
whose hardware does not convert that fp8 encoding (gfx90a has no fp8
converts; gfx942 converts only FNUZ, gfx950 only OCP): exact decoding to f32,
and encoding from f32 rounded to nearest even (as tile.copy defines it).

Encodings (sign, exponent bits, mantissa bits, bias, specials):

| type        | E | M | bias | specials                                  |
|-------------|---|---|------|-------------------------------------------|
| f8E4M3FN    | 4 | 3 | 7    | S.1111.111 is NaN; no infinities          |
| f8E5M2      | 5 | 2 | 15   | S.11111.00 is +-inf; S.11111.xx NaN        |
| f8E4M3FNUZ  | 4 | 3 | 8    | 0x80 is the only NaN; no -0, no inf       |
| f8E5M2FNUZ  | 5 | 2 | 16   | 0x80 is the only NaN; no -0, no inf       |

(OCP 8-bit floating point specification v1.0; the FNUZ variants as defined by
LLVM's APFloat semantics Float8E4M3FNUZ / Float8E5M2FNUZ.) Every value of every
format is exact in f32. Works on scalars and vectors alike.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from tilemlir.irutil import shaped_like

FORMATS = {
    "f8E4M3FN": (4, 3, 7),
    "f8E5M2": (5, 2, 15),
    "f8E4M3FNUZ": (4, 3, 8),
    "f8E5M2FNUZ": (5, 2, 16),
}

# Encoding facts per format, from the table above: the largest finite
# magnitude's pattern, where a larger magnitude goes (+inf where the format has
# one, else its NaN), the pattern a NaN becomes, and whether -0 exists.
ENCODING = {
    "f8E4M3FN": {"max_finite": 0x7E, "overflow": 0x7F, "nan": 0x7F, "negative_zero": True},
    "f8E5M2": {"max_finite": 0x7B, "overflow": 0x7C, "nan": 0x7E, "negative_zero": True},
    "f8E4M3FNUZ": {"max_finite": 0x7F, "overflow": 0x80, "nan": 0x80, "negative_zero": False},
    "f8E5M2FNUZ": {"max_finite": 0x7F, "overflow": 0x80, "nan": 0x80, "negative_zero": False},
}


def _constant(like: ir.Value, element: ir.Type, number) -> ir.Value:
    t = shaped_like(like.type, element)
    attr = ir.FloatAttr.get(element, float(number)) if isinstance(element, ir.FloatType) \
        else ir.IntegerAttr.get(element, int(number))
    if isinstance(t, ir.VectorType):
        return arith.ConstantOp(t, ir.DenseElementsAttr.get_splat(t, attr)).result
    return arith.ConstantOp(t, attr).result


def decode_to_f32(value: ir.Value, format_name: str) -> ir.Value:
    """f32 values of the fp8 `value` (scalar or vector), bit-exact."""
    exponent_bits, mantissa_bits, bias = FORMATS[format_name]
    i8, i32, f32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32), ir.F32Type.get()
    raw = arith.BitcastOp(shaped_like(value.type, i8), value).result
    bits = arith.ExtUIOp(shaped_like(value.type, i32), raw).result

    def c(number) -> ir.Value:
        return _constant(bits, i32, number)

    def eq(a, b) -> ir.Value:
        return arith.CmpIOp(arith.CmpIPredicate.eq, a, b).result

    sign = arith.ShLIOp(arith.ShRUIOp(bits, c(7)).result, c(31)).result
    exponent = arith.AndIOp(arith.ShRUIOp(bits, c(mantissa_bits)).result,
                            c((1 << exponent_bits) - 1)).result
    mantissa = arith.AndIOp(bits, c((1 << mantissa_bits) - 1)).result
    # Normal numbers: rebias the exponent and widen the mantissa.
    normal_bits = arith.OrIOp(
        sign,
        arith.OrIOp(
            arith.ShLIOp(arith.AddIOp(exponent, c(127 - bias)).result, c(23)).result,
            arith.ShLIOp(mantissa, c(23 - mantissa_bits)).result,
        ).result,
    ).result
    normal = arith.BitcastOp(shaped_like(value.type, f32), normal_bits).result
    # Subnormals: mantissa * 2^(1 - bias - mantissa_bits), exact in f32.
    magnitude = arith.MulFOp(arith.UIToFPOp(shaped_like(value.type, f32), mantissa).result,
                             _constant(bits, f32, 2.0 ** (1 - bias - mantissa_bits))).result
    negative = eq(sign, c(1 << 31))
    subnormal = arith.SelectOp(negative, arith.NegFOp(magnitude).result, magnitude).result
    result = arith.SelectOp(eq(exponent, c(0)), subnormal, normal).result
    nan = _constant(bits, f32, float("nan"))
    if format_name.endswith("FNUZ"):
        return arith.SelectOp(eq(bits, c(0x80)), nan, result).result
    if format_name == "f8E4M3FN":
        return arith.SelectOp(eq(arith.AndIOp(bits, c(0x7F)).result, c(0x7F)), nan, result).result
    # f8E5M2: IEEE-like top exponent.
    top = eq(exponent, c(31))
    infinity = arith.SelectOp(negative, _constant(bits, f32, float("-inf")),
                              _constant(bits, f32, float("inf"))).result
    special = arith.SelectOp(eq(mantissa, c(0)), infinity, nan).result
    return arith.SelectOp(top, special, result).result


def encode_from_f32(value: ir.Value, format_name: str) -> ir.Value:
    """The fp8 `format_name` value nearest (ties to even) to the f32 `value`
    (scalar or vector): the f32 significand is shifted right to the fp8 quantum
    at the value's exponent (never finer than the fp8 subnormal quantum),
    rounding half to even on the dropped bits; a significand that rounds up
    carries into the exponent. Magnitudes above the largest finite value become
    +-inf (E5M2) or NaN (the formats without infinities); NaN stays NaN."""
    _, mantissa_bits, bias = FORMATS[format_name]
    facts = ENCODING[format_name]
    i8, i32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32)
    bits = arith.BitcastOp(shaped_like(value.type, i32), value).result

    def c(number) -> ir.Value:
        return _constant(bits, i32, number)

    def select(condition, a, b) -> ir.Value:
        return arith.SelectOp(condition, a, b).result

    magnitude = arith.AndIOp(bits, c(0x7FFFFFFF)).result
    field = arith.ShRUIOp(magnitude, c(23)).result
    nonzero_field = arith.MaxUIOp(field, c(1)).result
    # With its implicit bit for normal values, without it for subnormal ones.
    significand = arith.SubIOp(magnitude, arith.ShLIOp(arith.SubIOp(nonzero_field, c(1)).result,
                                                        c(23)).result).result
    floor_field = 127 + 1 - bias  # f32's exponent field of the fp8 smallest normal
    clamped = arith.MaxUIOp(field, c(floor_field)).result
    shift = arith.AddIOp(arith.SubIOp(clamped, nonzero_field).result, c(23 - mantissa_bits)).result
    shift = arith.MinUIOp(shift, c(31)).result
    half_minus_one = arith.SubIOp(arith.ShLIOp(c(1), arith.SubIOp(shift, c(1)).result).result, c(1)).result
    last_kept = arith.AndIOp(arith.ShRUIOp(significand, shift).result, c(1)).result
    rounded = arith.ShRUIOp(arith.AddIOp(arith.AddIOp(significand, half_minus_one).result, last_kept).result,
                            shift).result
    code = arith.AddIOp(arith.ShLIOp(arith.SubIOp(clamped, c(floor_field)).result, c(mantissa_bits)).result,
                        rounded).result
    overflow = arith.CmpIOp(arith.CmpIPredicate.ugt, code, c(facts["max_finite"])).result
    code = select(overflow, c(facts["overflow"]), code)
    is_nan = arith.CmpIOp(arith.CmpIPredicate.ugt, magnitude, c(0x7F800000)).result
    code = select(is_nan, c(facts["nan"]), code)
    sign = arith.ShLIOp(arith.ShRUIOp(bits, c(31)).result, c(7)).result
    if not facts["negative_zero"]:
        zero = arith.CmpIOp(arith.CmpIPredicate.eq, code, c(0)).result
        sign = select(zero, c(0), sign)
    code = arith.OrIOp(code, sign).result
    narrow = arith.TruncIOp(shaped_like(value.type, i8), code).result
    return arith.BitcastOp(shaped_like(value.type, ir.Type.parse(format_name)), narrow).result
