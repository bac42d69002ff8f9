"""Core ATen's element-wise and reduction ops, written as kernel expressions.

A fusion group's values are computed in f32 (every floating value, whatever
its tensor dtype: as Inductor does), bool or the integer type of the tensor,
and rounded to a narrower float only where the graph converts to one
(`_to_copy`, `convert_element_type`) and where a group output is stored. Each
entry of `POINTWISE` renders one op from the expressions of its operands
(strings of `tilemlir.language` code) and its other arguments; `REDUCTIONS`
names the reductions a group may hold (over the trailing dims of its domain).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

aten = torch.ops.aten
prims = torch.ops.prims

# torch dtype -> tilemlir.language dtype name.
DTYPES = {
    torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
    torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int32: "int32", torch.int64: "int64",
}
FLOATS = (torch.float16, torch.bfloat16, torch.float32)


class Unsupported(Exception):
    """An op (or an argument of one) no kernel expression is written for."""


def literal(value) -> str:
    """A Python scalar as kernel source (a compile-time value)."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "-float('inf')"
        return repr(value)
    raise Unsupported(f"a {type(value).__name__} argument")


def kind_of(dtype: torch.dtype) -> str:
    """'f' (computed in f32), 'b' (bool) or 'i' (integers)."""
    if dtype in FLOATS:
        return "f"
    if dtype == torch.bool:
        return "b"
    if dtype in (torch.uint8, torch.int8, torch.int32, torch.int64):
        return "i"
    raise Unsupported(f"tensors of {dtype}")


def convert(expression: str, source: torch.dtype, target: torch.dtype) -> str:
    """`expression` (of `source`'s kind) as a value of `target`'s kind, rounded
    through `target` where that is a narrower float."""
    src, dst = kind_of(source), kind_of(target)
    if dst == "f":
        if src == "b":
            expression = f"T.if_then_else({expression}, 1.0, 0.0)"
        elif src == "i":
            expression = f"T.cast({expression}, 'float32')"
        if target != torch.float32 and source != target:
            expression = f"T.cast(T.cast({expression}, '{DTYPES[target]}'), 'float32')"
        return expression
    if dst == "b":
        zero = "0.0" if src == "f" else "0"
        return expression if src == "b" else f"({expression} != {zero})"
    if src == "b":
        return f"T.cast(T.if_then_else({expression}, 1, 0), '{DTYPES[target]}')"
    return f"T.cast({expression}, '{DTYPES[target]}')"


def _float_const(value) -> str:
    return literal(float(value)) if isinstance(value, (bool, int, float)) else value


def _binary(symbol: str):
    def render(a, b, alpha=1):
        if alpha != 1:
            b = f"({b} * {literal(alpha)})"
        return f"({a} {symbol} {b})"
    return render


def _div(a, b, rounding_mode=None):
    if rounding_mode is None:
        return f"({a} / {b})"
    if rounding_mode == "trunc":
        return f"T.trunc({a} / {b})"
    if rounding_mode == "floor":
        return f"T.floor({a} / {b})"
    raise Unsupported(f"rounding_mode={rounding_mode!r}")


def _pow(a, exponent):
    if isinstance(exponent, str):
        return f"T.pow({a}, {exponent})"
    if exponent == 2:
        return f"({a} * {a})"
    if exponent == 1:
        return a
    if exponent == 0.5:
        return f"T.sqrt({a})"
    if exponent == -0.5:
        return f"T.rsqrt({a})"
    if exponent == -1:
        return f"(1.0 / {a})"
    if exponent == 3:
        return f"({a} * {a} * {a})"
    return f"T.pow({a}, {literal(float(exponent))})"


def _gelu(a, approximate="none"):
    if approximate == "tanh":
        return (f"(0.5 * {a} * (1.0 + T.tanh(0.7978845608028654 * ({a} + 0.044715 * {a} * {a} * {a}))))")
    if approximate == "none":
        return f"(0.5 * {a} * (1.0 + T.erf({a} * 0.7071067811865476)))"
    raise Unsupported(f"gelu approximate={approximate!r}")


def _maximum(a, b):
    """torch's max: NaN in either operand gives NaN (T.max is IEEE maxNum: NaN loses)."""
    return f"T.if_then_else(({a} > {b}) or ({a} != {a}), {a}, {b})"


def _minimum(a, b):
    return f"T.if_then_else(({a} < {b}) or ({a} != {a}), {a}, {b})"


def _clamp(a, low=None, high=None):
    """torch's clamp: a NaN input stays NaN."""
    if low is not None:
        a = f"T.if_then_else({a} < {_float_const(low)}, {_float_const(low)}, {a})"
    if high is not None:
        a = f"T.if_then_else({a} > {_float_const(high)}, {_float_const(high)}, {a})"
    return a


def _compare(symbol: str):
    return lambda a, b: f"({a} {symbol} {b})"


def _unary(function: str):
    return lambda a: f"T.{function}({a})"


# aten overload -> (render(*operand expressions, **other arguments), operand kind)
# The operand kind: 'f' when float operands are computed in f32 (every float
# op), 'same' when the op keeps its operands' kind (comparisons, where).
Render = Callable[..., str]
POINTWISE: dict[object, Render] = {}


def _register(overloads, render: Render) -> None:
    for overload in overloads:
        POINTWISE[overload] = render


_register([aten.add.Tensor, aten.add.Scalar], _binary("+"))
_register([aten.sub.Tensor, aten.sub.Scalar], _binary("-"))
_register([aten.rsub.Scalar, aten.rsub.Tensor], lambda a, b, alpha=1: _binary("-")(b, a if alpha == 1 else
                                                                                    f"({a} * {literal(alpha)})"))
_register([aten.mul.Tensor, aten.mul.Scalar], _binary("*"))
_register([aten.div.Tensor, aten.div.Scalar, aten.div.Tensor_mode, aten.div.Scalar_mode], _div)
def _remainder(a, b):
    """Python's remainder (the divisor's sign), as torch computes it: C's
    fmod, moved by the divisor where the signs differ."""
    r = f"T.fmod({a}, {b})"
    return f"T.if_then_else(({r} != 0.0) and (({r} < 0.0) != ({b} < 0.0)), {r} + {b}, {r})"


_register([aten.remainder.Tensor, aten.remainder.Scalar], _remainder)
_register([aten.neg.default], lambda a: f"(-{a})")
_register([aten.relu.default], lambda a: f"T.if_then_else({a} < 0.0, 0.0, {a})")  # relu(NaN) is NaN
_register([aten.gelu.default], _gelu)
_register([aten.silu.default], lambda a: f"({a} * T.sigmoid({a}))")
_register([aten.sigmoid.default], _unary("sigmoid"))
_register([aten.tanh.default], _unary("tanh"))
_register([aten.exp.default], _unary("exp"))
_register([aten.exp2.default], _unary("exp2"))
_register([aten.expm1.default], lambda a: f"(T.exp({a}) - 1.0)")
_register([aten.log.default], _unary("log"))
_register([aten.log1p.default], _unary("log1p"))
_register([aten.log2.default], _unary("log2"))
_register([aten.sqrt.default], _unary("sqrt"))
_register([aten.rsqrt.default], _unary("rsqrt"))
_register([aten.erf.default], _unary("erf"))
_register([aten.sin.default], _unary("sin"))
_register([aten.cos.default], _unary("cos"))
_register([aten.abs.default], lambda a: f"T.if_then_else({a} < 0, -{a}, {a})")  # of floats and integers
_register([aten.floor.default], _unary("floor"))
_register([aten.ceil.default], _unary("ceil"))
_register([aten.reciprocal.default], lambda a: f"(1.0 / {a})")
_register([aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor], _pow)
_register([aten.maximum.default], _maximum)
_register([aten.minimum.default], _minimum)
_register([aten.clamp.default], _clamp)
_register([aten.clamp_min.default], lambda a, low: _clamp(a, low=low))
_register([aten.clamp_max.default], lambda a, high: _clamp(a, high=high))
_register([aten.hardtanh.default], lambda a, low=-1.0, high=1.0: _clamp(a, low, high))
_register([aten.leaky_relu.default], lambda a, slope="0.01": f"T.if_then_else({a} < 0.0, {a} * {slope}, {a})")
_register([aten.where.self], lambda c, a, b: f"T.if_then_else({c}, {a}, {b})")
# The comparisons: bool results of operands compared in their type promotion
# (codegen.compared_dtype).
COMPARISONS: set = set()
for _name, _symbol in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">=")):
    _op = getattr(aten, _name)
    _register([_op.Tensor, _op.Scalar], _compare(_symbol))
    COMPARISONS |= {_op.Tensor, _op.Scalar}
_register([aten.logical_not.default, aten.bitwise_not.default], lambda a: f"(not {a})")
_register([aten.logical_and.default, aten.bitwise_and.Tensor], lambda a, b: f"T.if_then_else({a}, {b}, False)")
_register([aten.logical_or.default, aten.bitwise_or.Tensor], lambda a, b: f"T.if_then_else({a}, True, {b})")
_register([aten.logical_xor.default, aten.bitwise_xor.Tensor], lambda a, b: f"({a} != {b})")
# The logical ops, and the bitwise ones where they are logical: of bool
# tensors (`~mask`, `a & b`); codegen refuses bitwise ops of integers.
LOGICAL = frozenset({aten.logical_not.default, aten.logical_and.default, aten.logical_or.default,
                     aten.logical_xor.default})
BITWISE = frozenset({aten.bitwise_not.default, aten.bitwise_and.Tensor, aten.bitwise_or.Tensor,
                     aten.bitwise_xor.Tensor})
# base ** x for a number base (a rotary embedding's 10000 ** (2i / d)).
_register([aten.pow.Scalar], lambda base, exponent: f"T.pow({base}, {exponent})")
_register([aten.elu.default], lambda a, alpha="1.0", scale="1.0", input_scale="1.0":
          f"T.if_then_else({a} > 0.0, {a} * {scale}, (T.exp({a} * {input_scale}) - 1.0) * {alpha} * {scale})")
# (alias is a view: in VIEWS, torch makes it; a copy of an expanded one has no strides to write.)
_register([aten.clone.default, aten.lift_fresh_copy.default], lambda a, **_: a)
# copy(a, b): b in a's shape and type (slice assignment, functionalized:
# `y[:, -1] = 0` is a copy into the slice, then a select_scatter).
_register([aten.copy.default], lambda a, b, non_blocking=False: b)

# Ops that make values from their arguments alone (full_like: its operand's shape).
CREATION = {
    aten.arange.default, aten.arange.start, aten.arange.start_step, aten.full.default, aten.full_like.default,
    aten.zeros_like.default, aten.ones_like.default, aten.zeros.default, aten.ones.default,
    aten.scalar_tensor.default,
}
CONSTANTS = {aten.zeros_like.default: 0, aten.ones_like.default: 1, aten.zeros.default: 0, aten.ones.default: 1}


def created(op, args, coordinate: str, dtype) -> str:
    """A creation op's element at `coordinate` (its last dim's), in `dtype`'s kind."""
    if op in (aten.arange.default, aten.arange.start, aten.arange.start_step):
        start, step = (0, 1) if op is aten.arange.default else (args[0], args[2] if len(args) > 2 else 1)
        if kind_of(dtype) == "f":
            return f"({literal(float(start))} + T.cast({coordinate}, 'float32') * {literal(float(step))})"
        return f"T.cast({literal(int(start))} + {coordinate} * {literal(int(step))}, '{DTYPES[dtype]}')"
    if op in CONSTANTS:
        value = CONSTANTS[op]
    elif op is aten.scalar_tensor.default:
        value = args[0]
    else:  # full(size, value), full_like(x, value)
        value = args[1]
    if kind_of(dtype) == "f":
        return literal(float(value))
    if kind_of(dtype) == "b":
        return literal(bool(value))
    return literal(int(value))


# Ops whose result is its operand converted (the renderer converts).
CONVERSIONS = {aten._to_copy.default, prims.convert_element_type.default}

# Reductions over dims: (kind, divides by the count).
REDUCTIONS = {
    aten.sum.dim_IntList: ("sum", False),
    aten.sum.default: ("sum", False),  # over every dim
    aten.mean.dim: ("sum", True),
    aten.mean.default: ("sum", True),
    aten.amax.default: ("max", False),
    aten.amin.default: ("min", False),
}
# var_mean / var: mean, then the sum of squared deviations over (count - correction).
VARIANCES = {aten.var_mean.correction, aten.var.correction}

# Ops that make no values: torch runs them (views of memory, metadata).
VIEWS = {
    aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.permute.default,
    aten.expand.default, aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default,
    aten.t.default, aten.transpose.int, aten.slice.Tensor, aten.select.int, aten.as_strided.default,
    aten.detach.default, aten.alias.default, aten.split.Tensor, aten.split_with_sizes.default,
    aten.unbind.int, aten.chunk.default, aten.diagonal.default, aten.unfold.default,
    aten.empty.memory_format, aten.empty_strided.default, aten.empty_permuted.default,
}
