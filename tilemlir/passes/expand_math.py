"""tile-expand-math: every float `math` op the target cannot lower becomes
arithmetic plus math ops it can, or a located error naming the op and the target.

A family's code generator lowers some math ops to instructions and not others
(AMD: `llc` has no libcall for `ftanh`, and `convert-gpu-to-rocdl` turns
`math.erf` into a call of `__ocml_erf_f32`, which needs the ROCm device
libraries). The family's table (`Backend.native_math`: element type -> the op
names it lowers) says which; this pass rewrites every other float math op
with an expansion below, built only from ops the table lists (f32 `exp`,
`exp2`, `log`, `log2`, `sqrt`, `floor`, `absf`, `copysign`, `fma`), or refuses
it. A family without a table lowers every math op; the pass changes nothing.

Expansions (f32). Max error: measured against float64 in the SIMT emulator,
whose f32 exp and log are NumPy's (within 3 ulp; llc's AMD lowering of them
is within 1), over the inputs of test_expand_math.py; MAX_ERROR_ULPS holds it.

| op | formula | max error |
|---|---|---|
| expm1 | Kahan: u = exp(x); (u-1)·x/log(u), x where u = 1 | 4 ulp |
| log1p | Goldberg: u = 1+x; log(u)·x/(u-1), x where u = 1 | 4 ulp |
| tanh | e = expm1(2|x|); e/(e+2); 1 beyond |x| = 10 (tanh rounds to 1 from 9.1) | 5 ulp |
| sinh | |x| < 1: e = expm1(|x|), (e + e/(e+1))/2; else h = exp(|x|)/2, h - 1/(4h) | 5 ulp |
| cosh | h = exp(|x|)/2 (from 88 on (exp(|x|/2)/2)·exp(|x|/2), finite where cosh is); h + 1/(4h) | 4 ulp |
| erf | |x| < 1: x·P(x²), P of degree 6; [1, 2.25) and [2.25, 3.92): 1 - Q(|x| - a), Q of degree 9; 1 beyond | 3 ulp |
| atan | t = min(|x|, 1/|x|); t·R(t²), R of degree 9; π/2 - that for |x| > 1 | 2 ulp |
| atan2 | atan's polynomial on min(|x|,|y|)/max(|x|,|y|), then the quadrant (C99 signed zeros and infinities) | 2 ulp |
| asin | atan(x / sqrt((1-x)(1+x))) | 3 ulp |
| acos | 2·atan(sqrt((1-x)/(1+x))) | 3 ulp |
| cbrt | y = exp2(log2|x|/3), one Newton step y - (y - |x|/y²)/3 | 2 ulp |
| powf | exp2(y·log2|x|), C99's special cases; relative error grows with |y·log2|x|| | (2 + |y·log2 x|) ulp |

P, Q and R were fitted here (Lawson's weighted least squares on Chebyshev nodes)
and their f32 Horner evaluation with fma measured on 2·10^5 points per piece.

Input invariant: any IR; math ops on element types the table does not list
(f16, bf16) were widened first (upstream `math-extend-to-supported-types`,
which the backends run just before this pass). Integer math ops are not touched.
Output invariant: every float math op is one the table lists for its element
type; otherwise the pass failed with `'math.X' on T has no lowering for
FAMILY:CHIP ...` at each op it could not expand.

Options: target (family:chip or a descriptor path; else the module's tile.target).

Example (amdgpu:gfx942):

    %y = math.tanh %x : f32
    // becomes
    %a = math.absf %x : f32
    %2a = arith.addf %a, %a : f32
    %u = math.exp %2a : f32      ... expm1 as above ...
    %t = arith.divf %e, %e_plus_2 : f32
    %s = arith.select %large, %one, %t : f32
    %y = math.copysign %s, %x : f32
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from mlir import ir
from mlir.dialects import arith
from mlir.dialects import math as math_d

from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass
from tilemlir.targets.model import Target
from tilemlir.targets.registry import resolve_backend, resolve_target

# The ops the expansions are built from, on f32: a target must lower all of
# them for any expansion to apply.
BUILDING_BLOCKS = frozenset({"exp", "exp2", "log", "log2", "sqrt", "floor", "absf", "copysign", "fma"})

# Fitted here (module docstring). erf(x) = x·P(x²) on [0, 1).
ERF_SMALL = (1.1283791065216064, -0.3761262595653534, 0.11283600330352783, -0.02685444802045822,
             0.005189542192965746, -0.0008020895184017718, 7.889285188866779e-05)
# erf(x) = 1 - Q(x - start) on [start, end): (start, end, Q).
ERF_PIECES = (
    (1.0, 2.25, (0.15729920566082, -0.41510680317878723, 0.4150911271572113, -0.13822190463542938,
                 -0.06982254236936569, 0.0705902948975563, -0.005877420771867037,
                 -0.01598212867975235, 0.007969960570335388, -0.0012620274210348725)),
    (2.25, 3.92, (0.001462720800191164, -0.007142877671867609, 0.016082381829619408,
                  -0.0218279380351305, 0.019534431397914886, -0.011806627735495567,
                  0.004727223888039589, -0.0011716620065271854, 0.00015339873789343983,
                  -6.746871349605499e-06)),
)
# atan(t) = t·R(t²) on [0, 1].
ATAN = (1.0, -0.3333328664302826, 0.19998376071453094, -0.14263059198856354, 0.10947827994823456,
        -0.08394090086221695, 0.05783716216683388, -0.031086880713701248, 0.010877663269639015,
        -0.0017874566838145256)
# π/2 and π as an f32 head plus the rest, so π/2 - p keeps the bits f32(π/2) drops.
HALF_PI_HI, HALF_PI_LO = 1.5707963705062866, -4.371139000186243e-08
PI_HI, PI_LO = 3.1415927410125732, -8.742278000372485e-08


def native_math_table(target: Target) -> Mapping[str, frozenset[str]] | None:
    """The family's table of lowered math ops (None: it lowers them all)."""
    return resolve_backend(target.family).part("native_math")


class _Build:
    """Builds f32 arithmetic of one shape (scalar or vector) at an insertion point."""

    def __init__(self, like: ir.Type):
        self.type = like
        self.f32 = ir.F32Type.get()
        shaped = ir.VectorType(like) if isinstance(like, ir.VectorType) else None
        self.bool_type = (ir.VectorType.get(shaped.shape, ir.IntegerType.get_signless(1))
                          if shaped else ir.IntegerType.get_signless(1))
        self.shaped = shaped

    def c(self, value: float) -> ir.Value:
        if self.shaped is None:
            return arith.constant(self.type, ir.FloatAttr.get(self.f32, value))
        return arith.constant(self.type, ir.DenseElementsAttr.get_splat(
            self.type, ir.FloatAttr.get(self.f32, value)))

    def _v(self, x) -> ir.Value:
        return self.c(float(x)) if isinstance(x, (int, float)) else x

    def add(self, a, b): return arith.addf(self._v(a), self._v(b))
    def sub(self, a, b): return arith.subf(self._v(a), self._v(b))
    def mul(self, a, b): return arith.mulf(self._v(a), self._v(b))
    def div(self, a, b): return arith.divf(self._v(a), self._v(b))
    def fma(self, a, b, c): return math_d.fma(self._v(a), self._v(b), self._v(c))
    def abs(self, a): return math_d.absf(a)
    def copysign(self, a, b): return math_d.copysign(self._v(a), self._v(b))
    def exp(self, a): return math_d.exp(a)
    def exp2(self, a): return math_d.exp2(a)
    def log(self, a): return math_d.log(a)
    def log2(self, a): return math_d.log2(a)
    def sqrt(self, a): return math_d.sqrt(a)
    def floor(self, a): return math_d.floor(a)
    def max(self, a, b): return arith.maximumf(a, b)
    def min(self, a, b): return arith.minimumf(a, b)

    def cmp(self, predicate: str, a, b) -> ir.Value:
        return arith.cmpf(getattr(arith.CmpFPredicate, predicate), self._v(a), self._v(b))

    def select(self, condition, a, b): return arith.select(condition, self._v(a), self._v(b))
    def both(self, a, b): return arith.andi(a, b)
    def either(self, a, b): return arith.ori(a, b)
    def negation(self, a): return arith.xori(a, arith.constant(self.bool_type, _true(self.bool_type)))

    def horner(self, coefficients, t) -> ir.Value:
        """Σ coefficients[i]·t^i, by fma from the highest power down."""
        result = self.c(coefficients[-1])
        for coefficient in reversed(coefficients[:-1]):
            result = self.fma(result, t, coefficient)
        return result


def _true(bool_type: ir.Type) -> ir.Attribute:
    one = ir.IntegerAttr.get(ir.IntegerType.get_signless(1), 1)
    return ir.DenseElementsAttr.get_splat(bool_type, one) if isinstance(bool_type, ir.VectorType) else one


# -- the expansions: (builder, operands) -> result --------------------------

def _expm1(b: _Build, x):
    # Kahan: the rounding error of u cancels between u - 1 and log(u).
    u = b.exp(x)
    um1 = b.sub(u, 1.0)
    result = b.mul(um1, b.div(x, b.log(u)))
    result = b.select(b.cmp("OEQ", u, 1.0), x, result)  # |x| below half an ulp of 1; keeps -0
    result = b.select(b.cmp("OEQ", um1, -1.0), -1.0, result)  # x -> -inf
    return b.select(b.cmp("OEQ", u, math.inf), u, result)  # overflow, +inf


def _log1p(b: _Build, x):
    # Goldberg: log(u)·x/(u-1) corrects the rounding of u = 1 + x.
    u = b.add(x, 1.0)
    d = b.sub(u, 1.0)
    result = b.mul(b.log(u), b.div(x, d))
    result = b.select(b.cmp("OEQ", d, 0.0), x, result)  # keeps x (and -0) where 1 + x rounds to 1
    return b.select(b.cmp("OEQ", u, math.inf), u, result)


def _tanh(b: _Build, x):
    a = b.abs(x)
    e = _expm1(b, b.add(a, a))
    t = b.div(e, b.add(e, 2.0))
    t = b.select(b.cmp("OGT", a, 10.0), 1.0, t)  # e overflows from |x| = 44; NaN stays in t
    return b.copysign(t, x)


def _half_exp(b: _Build, a):
    """exp(a)/2 for a >= 0, finite wherever it is: one exp below 88, where exp
    is finite, and (exp(a/2)/2)·exp(a/2) above."""
    t = b.exp(b.mul(a, 0.5))
    return b.select(b.cmp("OLT", a, 88.0), b.mul(b.exp(a), 0.5), b.mul(b.mul(t, 0.5), t))


def _sinh(b: _Build, x):
    a = b.abs(x)
    e = _expm1(b, a)
    small = b.mul(b.add(e, b.div(e, b.add(e, 1.0))), 0.5)
    h = _half_exp(b, a)
    large = b.sub(h, b.div(0.25, h))
    return b.copysign(b.select(b.cmp("OLT", a, 1.0), small, large), x)


def _cosh(b: _Build, x):
    h = _half_exp(b, b.abs(x))
    return b.add(h, b.div(0.25, h))


def _erf(b: _Build, x):
    a = b.abs(x)
    # From the last piece down; ordered compares send NaN into a polynomial.
    last_start, last_end, last = ERF_PIECES[-1]
    result = b.select(b.cmp("OGE", a, last_end), 1.0,
                      b.sub(1.0, b.horner(last, b.sub(a, last_start))))
    for start, end, coefficients in reversed(ERF_PIECES[:-1]):
        piece = b.sub(1.0, b.horner(coefficients, b.sub(a, start)))
        result = b.select(b.cmp("OLT", a, end), piece, result)
    small = b.mul(a, b.horner(ERF_SMALL, b.mul(a, a)))
    result = b.select(b.cmp("OLT", a, ERF_PIECES[0][0]), small, result)
    return b.copysign(result, x)


def _atan_unit(b: _Build, t):
    """atan(t) for t in [0, 1] (or NaN)."""
    return b.mul(t, b.horner(ATAN, b.mul(t, t)))


def _minus_from(b: _Build, head: float, tail: float, p):
    """(head + tail) - p, with the tail added after the big subtraction."""
    return b.add(b.sub(head, p), tail)


def _atan(b: _Build, x):
    a = b.abs(x)
    inverted = b.cmp("OGT", a, 1.0)
    p = _atan_unit(b, b.select(inverted, b.div(1.0, a), a))
    p = b.select(inverted, _minus_from(b, HALF_PI_HI, HALF_PI_LO, p), p)
    return b.copysign(p, x)


def _atan2(b: _Build, y, x):
    ax, ay = b.abs(x), b.abs(y)
    big, small = b.max(ax, ay), b.min(ax, ay)
    t = b.div(small, big)
    t = b.select(b.cmp("OEQ", big, 0.0), 0.0, t)  # atan2(±0, ±0): the quadrant decides
    both_infinite = b.both(b.cmp("OEQ", ax, math.inf), b.cmp("OEQ", ay, math.inf))
    t = b.select(both_infinite, 1.0, t)  # atan2(±inf, ±inf) = ±π/4, ±3π/4
    p = _atan_unit(b, t)
    p = b.select(b.cmp("OGT", ay, ax), _minus_from(b, HALF_PI_HI, HALF_PI_LO, p), p)
    x_negative = b.cmp("OLT", b.copysign(1.0, x), 0.0)  # -0 counts: atan2(+0, -0) = π
    p = b.select(x_negative, _minus_from(b, PI_HI, PI_LO, p), p)
    return b.copysign(p, y)


def _asin(b: _Build, x):
    # (1-x)(1+x) instead of 1-x²: exact factors near |x| = 1.
    return _atan(b, b.div(x, b.sqrt(b.mul(b.sub(1.0, x), b.add(x, 1.0)))))


def _acos(b: _Build, x):
    t = b.sqrt(b.div(b.sub(1.0, x), b.add(x, 1.0)))  # inf at x = -1: acos = π
    p = _atan(b, t)
    return b.add(p, p)


def _cbrt(b: _Build, x):
    a = b.abs(x)
    y = b.exp2(b.mul(b.log2(a), 1.0 / 3.0))
    y = b.sub(y, b.mul(b.sub(y, b.div(a, b.mul(y, y))), 1.0 / 3.0))  # Newton on y³ = a
    edge = b.either(b.cmp("OEQ", a, 0.0), b.cmp("OEQ", a, math.inf))
    return b.copysign(b.select(edge, a, y), x)


def _powf(b: _Build, x, y):
    result = b.exp2(b.mul(y, b.log2(b.abs(x))))
    # y an integer, and odd (every f32 from 2^24 up is even; inf is not odd).
    floor_y = b.floor(y)
    integer = b.cmp("OEQ", floor_y, y)
    odd = b.both(integer, b.cmp("OEQ", b.sub(y, b.mul(b.floor(b.mul(y, 0.5)), 2.0)), 1.0))
    x_sign = b.cmp("OLT", b.copysign(1.0, x), 0.0)
    result = b.select(b.both(x_sign, odd), b.sub(0.0, result), result)
    # A finite negative x to a non-integer power (-0 and -inf are not negative here).
    negative = b.both(b.cmp("OLT", x, 0.0), b.cmp("OGT", x, -math.inf))
    result = b.select(b.both(negative, b.negation(integer)), math.nan, result)
    one = b.either(b.cmp("OEQ", y, 0.0), b.cmp("OEQ", x, 1.0))  # even with a NaN in the other
    one = b.either(one, b.both(b.cmp("OEQ", b.abs(x), 1.0), b.cmp("OEQ", b.abs(y), math.inf)))
    return b.select(one, 1.0, result)


# The max errors of the docstring's table, in ulps of the f32 result (powf: plus
# |y·log2|x||); test_expand_math.py derives its tolerances from these.
MAX_ERROR_ULPS = {"expm1": 4, "log1p": 4, "tanh": 5, "sinh": 5, "cosh": 4, "erf": 3, "atan": 2,
                  "atan2": 2, "asin": 3, "acos": 3, "cbrt": 2, "powf": 2}

EXPANSIONS: dict[str, Callable] = {
    "expm1": _expm1, "log1p": _log1p, "tanh": _tanh, "sinh": _sinh, "cosh": _cosh,
    "erf": _erf, "atan": _atan, "atan2": _atan2, "asin": _asin, "acos": _acos,
    "cbrt": _cbrt, "powf": _powf,
}


def _element_type(value: ir.Value) -> ir.Type:
    t = value.type
    return ir.ShapedType(t).element_type if isinstance(t, ir.ShapedType) else t


@dataclass(frozen=True)
class TileExpandMath(TilePass):
    """Expands or refuses the float math ops the target does not lower (module docstring)."""

    name: ClassVar[str] = "tile-expand-math"
    summary: ClassVar[str] = "expand the math ops the target cannot lower into ones it can"

    target: str = ""

    def run(self, module: ir.Operation, state: PassState) -> None:
        ops = [op for op in walk(module) if op.name.startswith("math.") and op.operands
               and isinstance(_element_type(op.operands[0]), ir.FloatType)]
        if not ops:
            return
        target = resolve_target(module, self.target)
        table = native_math_table(target)
        if table is None:
            return
        f32_native = table.get("f32", frozenset())
        blocks_missing = sorted(BUILDING_BLOCKS - f32_native)
        for op in ops:
            kind = op.name.removeprefix("math.")
            element = str(_element_type(op.operands[0]))
            if kind in table.get(element, ()):
                continue
            expansion = EXPANSIONS.get(kind) if element == "f32" and not blocks_missing else None
            if expansion is None:
                state.error(op, _refusal(op.name, element, target, table, blocks_missing))
                continue
            with ir.InsertionPoint(op), op.location:
                result = expansion(_Build(op.results[0].type), *op.operands)
            op.results[0].replace_all_uses_with(result)
            op.erase()


def _refusal(name: str, element: str, target: Target, table: Mapping[str, frozenset[str]],
             blocks_missing: list[str]) -> str:
    lowered = ", ".join(sorted(table.get(element, ()))) or "none"
    if element == "f32" and blocks_missing:
        why = f"its expansion needs f32 {', '.join(blocks_missing)}, which {target} does not lower either"
    elif element == "f32":
        why = f"tilemlir has no expansion of it (it expands {', '.join(sorted(EXPANSIONS))})"
    else:
        why = "tilemlir expands math ops on f32 only"
    return (f"'{name}' on {element} has no lowering for {target}: the {target.family} code "
            f"generator lowers {lowered} on {element}, and {why}")
