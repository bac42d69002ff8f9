"""arith and math ops for the SIMT emulator: elementwise NumPy over lanes.

Rounding: f64/f32/f16 arithmetic is NumPy's own, rounded to the result type
(f16 ops are computed in f32 and rounded once, which is exact for + - * /
sqrt). bf16 and fp8 arithmetic is computed in f32 and rounded to nearest even
through ml_dtypes. extf/truncf and int<->float conversions use
`tilemlir.runtime.dtypes.convert` (round to nearest even, one rounding).
fma is computed in f64 and rounded to the result type. Integer arithmetic
wraps; division by zero in an active lane is an error.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from tilemlir.irutil import approximate_function
from tilemlir.runtime.dtypes import convert
from tilemlir.runtime.emu_core import (
    Compiler,
    EmulatorError,
    UnsupportedOp,
    attr_int,
    handles,
    is_float,
    is_narrow_float,
    unsigned,
    value_type,
)

F32 = np.dtype(np.float32)


def _result_dtype(op: ir.Operation) -> np.dtype:
    return value_type(op.results[0].type, op)[0]


def _operand_dtype(op: ir.Operation, index: int = 0) -> np.dtype:
    return value_type(op.operands[index].type, op)[0]


def _nary(compiler: Compiler, op: ir.Operation, fn):
    args = compiler.slots_of(op.operands)
    out = compiler.slot(op.results[0])
    if len(args) == 1:
        (a,) = args

        def step(frame):
            frame.vals[out] = fn(frame.vals[a])
    elif len(args) == 2:
        a, b = args

        def step(frame):
            vals = frame.vals
            vals[out] = fn(vals[a], vals[b])
    else:
        def step(frame):
            vals = frame.vals
            vals[out] = fn(*[vals[i] for i in args])
    return step


def _float_fn(dtype: np.dtype, fn):
    """fn on float arrays of `dtype`, computed in f32 for bf16/fp8 and rounded back."""
    if is_narrow_float(dtype):
        def narrow(*xs):
            with np.errstate(all="ignore"):
                return convert(fn(*[x.astype(F32) for x in xs]), dtype)
        return narrow

    def native(*xs):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*xs)).astype(dtype, copy=False)
    return native


_FLOAT_BINARY = {
    "arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply,
    "arith.divf": np.divide, "arith.remf": np.fmod, "arith.maximumf": np.maximum,
    "arith.minimumf": np.minimum, "arith.maxnumf": np.fmax, "arith.minnumf": np.fmin,
    "math.powf": np.power, "math.atan2": np.arctan2, "math.copysign": np.copysign,
}
_FLOAT_UNARY = {
    "arith.negf": np.negative, "math.absf": np.abs, "math.exp": np.exp, "math.exp2": np.exp2,
    "math.expm1": np.expm1, "math.log": np.log, "math.log2": np.log2, "math.log10": np.log10,
    "math.log1p": np.log1p, "math.sqrt": np.sqrt, "math.rsqrt": lambda x: 1 / np.sqrt(x),
    "math.tanh": np.tanh, "math.sin": np.sin, "math.cos": np.cos, "math.tan": np.tan,
    "math.atan": np.arctan, "math.floor": np.floor, "math.ceil": np.ceil, "math.trunc": np.trunc,
    "math.roundeven": np.rint, "math.round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
    "math.erf": np.vectorize(math.erf, otypes=[np.float64]),
    "math.sinh": np.sinh, "math.cosh": np.cosh, "math.asin": np.arcsin, "math.acos": np.arccos,
}


def _unit_exp2(x):
    """exp2 on a GPU's function unit (`fastmath<afn>`, docs/kernels.md):
    results below the smallest normal f32 are flushed to zero (v_exp_f32;
    ex2.approx.ftz), which the emulator models as the least favourable case."""
    result = np.exp2(x)
    return np.where(np.abs(result) < np.finfo(np.float32).tiny, np.zeros_like(result), result)


@handles(*_FLOAT_BINARY, *_FLOAT_UNARY)
def _float_op(compiler, op):
    fn = _FLOAT_BINARY.get(op.name) or _FLOAT_UNARY[op.name]
    if op.name == "math.exp2" and approximate_function(op) and _result_dtype(op) == np.float32:
        fn = _unit_exp2
    return _nary(compiler, op, _float_fn(_result_dtype(op), fn))


@handles("math.fma", "vector.fma")
def _fma(compiler, op):
    dtype = _result_dtype(op)

    def fma(a, b, c):
        wide = a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)
        return convert(wide, dtype) if dtype != np.float64 else wide
    return _nary(compiler, op, fma)


# --------------------------------------------------------------------------
# Integers
# --------------------------------------------------------------------------

def _safe_divisor(b):
    return np.where(b == 0, 1, b)


def _check_divisor(frame, b, op):
    zero = b == 0
    if zero.any():
        lanes = zero if zero.ndim == 1 else zero.reshape(zero.shape[0], -1).any(axis=1)
        if frame.mask is not None and lanes.shape[0] == frame.mask.shape[0]:
            lanes = lanes & frame.mask
        if lanes.any():
            lane = int(np.argmax(lanes)) if lanes.shape[0] > 1 else 0
            raise EmulatorError(f"integer division by zero in {frame.wg.describe_lane(lane)}", op)


def _div_trunc(a, b):
    b = _safe_divisor(b)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q).astype(np.result_type(a, b))


_INT_BINARY = {
    "arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
    "arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor,
    "arith.maxsi": np.maximum, "arith.minsi": np.minimum,
    "arith.divsi": _div_trunc,
    "arith.remsi": lambda a, b: a - _div_trunc(a, b) * b,
    "arith.floordivsi": lambda a, b: a // _safe_divisor(b),
    "arith.ceildivsi": lambda a, b: -((-a) // _safe_divisor(b)),
    "arith.shli": np.left_shift, "arith.shrsi": np.right_shift,
}
_UNSIGNED_BINARY = {
    "arith.divui": lambda a, b: a // _safe_divisor(b),
    "arith.remui": lambda a, b: a % _safe_divisor(b),
    "arith.ceildivui": lambda a, b: (a + _safe_divisor(b) - 1) // _safe_divisor(b),
    "arith.shrui": np.right_shift, "arith.maxui": np.maximum, "arith.minui": np.minimum,
}
_DIVISIONS = {"arith.divsi", "arith.remsi", "arith.floordivsi", "arith.ceildivsi",
              "arith.divui", "arith.remui", "arith.ceildivui"}


@handles(*_INT_BINARY, *_UNSIGNED_BINARY)
def _int_op(compiler, op):
    dtype = _result_dtype(op)
    if dtype == np.bool_ and op.name in ("arith.addi", "arith.subi"):
        fn = np.logical_xor
    elif dtype == np.bool_ and op.name in ("arith.maxsi", "arith.minsi"):
        # Signed, an i1's True is -1: the maximum of two bools is their and.
        fn = np.minimum if op.name == "arith.maxsi" else np.maximum
    elif op.name in _UNSIGNED_BINARY:
        raw, udt = _UNSIGNED_BINARY[op.name], unsigned(dtype)

        def fn(a, b):
            return raw(a.view(udt) if a.dtype != np.bool_ else a,
                       b.view(udt) if b.dtype != np.bool_ else b).astype(udt).view(dtype)
    else:
        fn = _INT_BINARY[op.name]
    a, b = compiler.slots_of(op.operands)
    out = compiler.slot(op.results[0])
    checked = op.name in _DIVISIONS

    def step(frame):
        x, y = frame.vals[a], frame.vals[b]
        if checked:
            _check_divisor(frame, y, op)
        with np.errstate(all="ignore"):
            frame.vals[out] = np.asarray(fn(x, y)).astype(dtype, copy=False)
    return step


@handles("math.absi")
def _absi(compiler, op):
    return _nary(compiler, op, np.abs)


# --------------------------------------------------------------------------
# Comparisons, select
# --------------------------------------------------------------------------

_CMPI = {0: ("eq", False), 1: ("ne", False), 2: ("lt", False), 3: ("le", False),
         4: ("gt", False), 5: ("ge", False), 6: ("lt", True), 7: ("le", True),
         8: ("gt", True), 9: ("ge", True)}
_COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal}


@handles("arith.cmpi")
def _cmpi(compiler, op):
    name, is_unsigned = _CMPI[attr_int(op, "predicate")]
    compare = _COMPARE[name]
    dtype = _operand_dtype(op)
    if is_unsigned and dtype != np.bool_:
        udt = unsigned(dtype)
        return _nary(compiler, op, lambda a, b: compare(a.view(udt), b.view(udt)))
    if dtype == np.bool_ and not is_unsigned and name not in ("eq", "ne"):
        # Signed, an i1's True is -1, below False: the order reverses.
        return _nary(compiler, op, lambda a, b: compare(b, a))
    return _nary(compiler, op, compare)


# arith.cmpf predicates 0..15: false oeq ogt oge olt ole one ord ueq ugt uge ult ule une uno true
_CMPF = ["false", "eq", "gt", "ge", "lt", "le", "ne", "ord",
         "eq", "gt", "ge", "lt", "le", "ne", "uno", "true"]


@handles("arith.cmpf")
def _cmpf(compiler, op):
    predicate = attr_int(op, "predicate")
    name = _CMPF[predicate]
    unordered = 8 <= predicate <= 14

    def cmpf(a, b):
        if is_narrow_float(a.dtype):
            a, b = a.astype(F32), b.astype(F32)
        nan = np.isnan(a) | np.isnan(b)
        if name == "false":
            return np.zeros(np.broadcast_shapes(a.shape, b.shape), bool)
        if name == "true":
            return np.ones(np.broadcast_shapes(a.shape, b.shape), bool)
        if name == "ord":
            return ~nan
        if name == "uno":
            return nan
        with np.errstate(invalid="ignore"):
            result = _COMPARE[name](a, b)
        if name == "ne":  # `one` is ordered-and-unequal; np.not_equal is true on NaN
            result = result & ~nan
        return result | nan if unordered else result & ~nan
    return _nary(compiler, op, cmpf)


@handles("arith.select")
def _select(compiler, op):
    shape = value_type(op.results[0].type, op)[1]

    def select(cond, a, b):
        if cond.ndim < 1 + len(shape):
            cond = cond.reshape(cond.shape + (1,) * len(shape))
        return np.where(cond, a, b)
    if not isinstance(op.results[0].type, (ir.VectorType, ir.IntegerType, ir.FloatType,
                                           ir.IndexType)):
        return _select_memref(compiler, op)
    return _nary(compiler, op, select)


def _select_memref(compiler, op):
    cond, a, b = compiler.slots_of(op.operands)
    out = compiler.slot(op.results[0])

    def step(frame):
        c = frame.vals[cond]
        if c.all():
            frame.vals[out] = frame.vals[a]
        elif not c.any():
            frame.vals[out] = frame.vals[b]
        else:
            raise UnsupportedOp("arith.select of memrefs with a lane-dependent condition", op)
    return step


# --------------------------------------------------------------------------
# Constants and casts
# --------------------------------------------------------------------------

def dense_values(attr: ir.Attribute, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """The values of a dense elements attribute as an array of `shape`."""
    if isinstance(attr, (ir.DenseElementsAttr, ir.DenseFPElementsAttr, ir.DenseIntElementsAttr)):
        if attr.is_splat:
            element = attr.get_splat_value()
            scalar = element.value if hasattr(element, "value") else element
            return np.full(shape, convert(np.float64(scalar), dtype) if is_float(dtype)
                           else scalar, dtype=dtype)
        try:
            values = np.array(attr)
        except (TypeError, ValueError, RuntimeError):
            values = np.array([float(attr[i]) if is_float(dtype) else int(attr[i])
                               for i in range(len(attr))])
        if dtype == np.bool_:
            return values.astype(bool).reshape(shape)
        return convert(values.astype(np.float64) if is_float(dtype) else values,
                       dtype).reshape(shape)
    raise UnsupportedOp(f"constant attribute '{attr}'")


def constant_value(attr: ir.Attribute, t: ir.Type, op: ir.Operation) -> np.ndarray:
    dtype, shape = value_type(t, op)
    if shape:
        return dense_values(attr, dtype, shape)[None]
    if isinstance(attr, ir.FloatAttr):
        return np.array([convert(np.float64(attr.value), dtype)], dtype=dtype)
    if isinstance(attr, ir.BoolAttr):
        return np.array([attr.value], dtype=dtype)
    if isinstance(attr, ir.IntegerAttr):
        value = int(attr.value)
        if dtype == np.bool_:
            return np.array([value & 1], dtype=bool)
        bits = dtype.itemsize * 8
        value &= (1 << bits) - 1
        if value >= 1 << (bits - 1):
            value -= 1 << bits
        return np.array([value], dtype=dtype)
    raise UnsupportedOp(f"constant attribute '{attr}'", op)


@handles("arith.constant")
def _constant(compiler, op):
    value = constant_value(op.attributes["value"], op.results[0].type, op)
    value.setflags(write=False)
    out = compiler.slot(op.results[0])

    def step(frame):
        frame.vals[out] = value
    return step


@handles("arith.extf", "arith.truncf", "arith.sitofp", "arith.fptosi", "arith.fptoui",
         "arith.index_cast", "arith.extsi", "arith.trunci")
def _convert(compiler, op):
    dtype = _result_dtype(op)
    source = _operand_dtype(op)
    if op.name in ("arith.fptosi", "arith.fptoui"):
        return _nary(compiler, op, lambda x: convert(x, dtype, rounding="trunc"))
    if op.name in ("arith.extf", "arith.truncf", "arith.sitofp"):
        if source == np.bool_:  # i1 is signed: true is -1
            return _nary(compiler, op, lambda x: convert(-x.astype(np.int8), dtype))
        return _nary(compiler, op, lambda x: convert(x, dtype))
    if source == np.bool_:  # extsi / index_cast of i1 sign-extends
        return _nary(compiler, op, lambda x: (-x.astype(np.int64)).astype(dtype))
    if dtype == np.bool_:
        return _nary(compiler, op, lambda x: (x & 1).astype(bool))
    return _nary(compiler, op, lambda x: x.astype(dtype))  # wraps or sign-extends


@handles("arith.extui", "arith.index_castui", "arith.uitofp")
def _convert_unsigned(compiler, op):
    dtype = _result_dtype(op)
    source = _operand_dtype(op)
    udt = unsigned(source)

    def zero_extend(x):
        wide = x.astype(np.uint64) if source == np.bool_ else x.view(udt).astype(np.uint64)
        if op.name == "arith.uitofp":
            return convert(wide.astype(np.float64), dtype)
        if dtype == np.bool_:
            return (wide & 1).astype(bool)
        return wide.astype(unsigned(dtype)).view(dtype) if dtype.itemsize < 8 else \
            wide.view(np.int64).astype(dtype)
    return _nary(compiler, op, zero_extend)


@handles("arith.bitcast")
def _bitcast(compiler, op):
    dtype = _result_dtype(op)
    return _nary(compiler, op, lambda x: np.ascontiguousarray(x).view(dtype))


# --------------------------------------------------------------------------
# Intrinsics the lowering calls by name
# --------------------------------------------------------------------------

def _byte_permute(high: np.ndarray, low: np.ndarray, selector: np.ndarray) -> np.ndarray:
    """AMD's v_perm_b32 (llvm.amdgcn.perm(high, low, selector)): byte i of the
    result is chosen by byte i of the selector from the 8 bytes high:low
    (0-3 low's, 4-7 high's); 8-11 repeat a sign bit (bit 15 or 31 of low,
    then of high), 12 gives 0x00 and 13-255 0xFF (AMD's CDNA3 ISA, V_PERM_B32)."""
    high, low, selector = np.broadcast_arrays(*(np.asarray(v, np.int32) for v in (high, low, selector)))
    # Per lane, the 14 bytes a selector byte can name: low's, high's, the four
    # sign bytes, 0x00 and 0xFF.
    pair = np.stack([low, high], axis=-1).view(np.uint8).reshape(*low.shape, 8)
    signs = (pair[..., [1, 3, 5, 7]] >> 7) * np.uint8(0xFF)
    fixed = np.broadcast_to(np.array([0x00, 0xFF], np.uint8), (*low.shape, 2))
    table = np.concatenate([pair, signs, fixed], axis=-1)
    picks = np.minimum(np.ascontiguousarray(selector).view(np.uint8).reshape(*low.shape, 4), 13)
    return np.ascontiguousarray(np.take_along_axis(table, picks.astype(np.intp), axis=-1)).view(np.int32)[..., 0]


INTRINSICS = {"llvm.amdgcn.perm": _byte_permute}


@handles("llvm.call_intrinsic")
def _call_intrinsic(compiler, op):
    name = ir.StringAttr(op.attributes["intrin"]).value
    fn = INTRINSICS.get(name)
    if fn is None:
        raise UnsupportedOp(f"unsupported intrinsic '{name}' (llvm.call_intrinsic)", op)
    i32 = ir.IntegerType.get_signless(32)
    if any(value.type != i32 for value in (*op.operands, *op.results)):
        raise UnsupportedOp(f"intrinsic '{name}' (llvm.call_intrinsic) is emulated on i32 values only", op)
    return _nary(compiler, op, fn)
