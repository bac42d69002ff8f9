"""Exact fp8 -> f32 decoding with integer and f32 arithmetic, for chips whose
hardware does not convert that fp8 encoding (gfx90a has no fp8 converts;
gfx942 converts only FNUZ, gfx950 only OCP).

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

FORMATS = {
    "f8E4M3FN": (4, 3, 7),
    "f8E5M2": (5, 2, 15),
    "f8E4M3FNUZ": (4, 3, 8),
    "f8E5M2FNUZ": (5, 2, 16),
}


def _like(value: ir.Value, element: ir.Type) -> ir.Type:
    t = value.type
    return ir.VectorType.get(t.shape, element) if isinstance(t, ir.VectorType) else element


def _constant(like: ir.Value, element: ir.Type, number) -> ir.Value:
    t = _like(like, element)
    attr = ir.FloatAttr.get(element, float(number)) if isinstance(element, ir.FloatType) \
        else ir.IntegerAttr.get(element, int(number))
    if isinstance(t, ir.VectorType):
        return arith.ConstantOp(t, ir.DenseElementsAttr.get_splat(t, attr)).result
    return arith.ConstantOp(t, attr).result


def decode_to_f32(value: ir.Value, format_name: str) -> ir.Value:
    """f32 values of the fp8 `value` (scalar or vector), bit-exact."""
    exponent_bits, mantissa_bits, bias = FORMATS[format_name]
    i8, i32, f32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32), ir.F32Type.get()
    raw = arith.BitcastOp(_like(value, i8), value).result
    bits = arith.ExtUIOp(_like(value, i32), raw).result

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
    normal = arith.BitcastOp(_like(value, f32), normal_bits).result
    # Subnormals: mantissa * 2^(1 - bias - mantissa_bits), exact in f32.
    magnitude = arith.MulFOp(arith.UIToFPOp(_like(value, f32), mantissa).result,
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
