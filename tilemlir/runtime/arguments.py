"""The entry function's parameters: binding NumPy arrays to them (with clear
errors), generating random inputs for them, and finding which ones are written.

Parameters are named as in the source (`%C`), read at the block argument's
location, so an error says "argument 2 (%C): ..." rather than "%arg2".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from mlir import ir

from tilemlir.diagnostics import SourceBuffer, UserError
from tilemlir.irutil import walk
from tilemlir.runtime import dtypes

_LOCATION = re.compile(r'^loc\("(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)')
_SSA_NAME = re.compile(r"%[A-Za-z0-9_$.\-]+")


class ArgumentError(UserError):
    """A NumPy argument that does not fit the entry function's parameter."""


@dataclass(frozen=True)
class Parameter:
    """One argument of the entry function, as the engine sees it."""

    index: int
    name: str  # "%C"
    type: ir.Type
    dtype: np.dtype  # the element dtype (memrefs) or the scalar's dtype
    shape: tuple[int | None, ...] | None  # None for scalars; None entries are dynamic

    @property
    def is_memref(self) -> bool:
        return self.shape is not None

    @property
    def element(self) -> str:
        """The MLIR element type ("f8E4M3FNUZ")."""
        return str(ir.MemRefType(self.type).element_type) if self.is_memref else str(self.type)

    def label(self) -> str:
        return f"argument {self.index} ({self.name})"

    def expectation(self) -> str:
        if not self.is_memref:
            return f"{self.type} (a scalar)"
        shape = tuple("?" if d is None else d for d in self.shape)
        return f"{self.type} ({dtypes.describe(self.dtype)} array of shape {_shape_text(shape)})"


def _shape_text(shape: tuple) -> str:
    if len(shape) == 1:
        return f"({shape[0]},)"
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _source_name(argument: ir.BlockArgument, source: SourceBuffer | None) -> str | None:
    match = _LOCATION.match(str(argument.location))
    if match is None:
        return None
    file, line, col = match.group("file"), int(match.group("line")), int(match.group("col"))
    if source is not None and file == source.name:
        file, line, col = source.map_position(file, line, col)
        lines = source.lines
    else:
        try:
            lines = Path(file).read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError):
            return None
    if not 1 <= line <= len(lines):
        return None
    found = _SSA_NAME.match(lines[line - 1], col - 1)
    return found.group(0) if found else None


def parameters(function_op: ir.Operation, dtype_of, source: SourceBuffer | None = None) -> list[Parameter]:
    """The parameters of a func.func; `dtype_of` maps an MLIR type to a dtype."""
    block = function_op.regions[0].blocks[0]
    found = []
    for index, argument in enumerate(block.arguments):
        name = _source_name(argument, source) or argument.get_name()
        t = argument.type
        try:
            memref = ir.MemRefType(t)
        except ValueError:
            memref = None
        try:
            if memref is not None:
                shape = tuple(None if d == ir.ShapedType.get_dynamic_size() else d for d in memref.shape)
                found.append(Parameter(index, name, t, dtype_of(memref.element_type), shape))
            else:
                found.append(Parameter(index, name, t, dtype_of(t), None))
        except KeyError:
            raise UserError(f"argument {index} ({name}) has type {t}, which the reference engine "
                            "cannot bind") from None
    return found


def bind(params: list[Parameter], args, function_name: str) -> list:
    """Checks `args` against `params`; returns the values the engine runs on
    (the arrays themselves for memrefs, so outputs are written in place)."""
    args = list(args)
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise ArgumentError(f"@{function_name} takes {len(params)} argument(s) ({names}), "
                            f"got {len(args)}")
    return [_bind_one(p, a) for p, a in zip(params, args)]


def _describe_value(value) -> str:
    if isinstance(value, np.ndarray):
        return f"{dtypes.describe(value.dtype)} array of shape {_shape_text(value.shape)}"
    return f"{type(value).__name__} {value!r}"


def _bind_one(param: Parameter, value):
    if param.is_memref:
        ok = (isinstance(value, np.ndarray) and value.dtype == param.dtype
              and value.ndim == len(param.shape)
              and all(d is None or d == s for d, s in zip(param.shape, value.shape)))
        if not ok:
            raise ArgumentError(f"{param.label()}: expected {param.expectation()}, "
                                f"got {_describe_value(value)}")
        return value
    is_number = isinstance(value, (int, float, np.integer, np.floating, np.bool_)) or (
        isinstance(value, np.generic) and dtypes.is_float_dtype(value.dtype))
    if not is_number or isinstance(value, np.ndarray):
        raise ArgumentError(f"{param.label()}: expected {param.expectation()}, got {_describe_value(value)}")
    if param.dtype == np.bool_:
        return bool(value)
    if param.dtype.kind in "iu":
        if isinstance(value, (float, np.floating)) or (isinstance(value, np.generic)
                                                      and dtypes.is_float_dtype(value.dtype)):
            raise ArgumentError(f"{param.label()}: expected {param.expectation()}, got {_describe_value(value)}")
        info = np.iinfo(param.dtype)
        if not info.min <= int(value) <= info.max:
            raise ArgumentError(f"{param.label()}: {int(value)} is out of range for {param.type}")
        return int(value)
    return dtypes.convert(np.float64(value) if isinstance(value, (int, float)) else value, param.dtype)


# ---------------------------------------------------------------------------
# Random inputs.
# ---------------------------------------------------------------------------

# Value ranges of random inputs: floats small enough that fp8 products and sums
# stay far from overflow (and reach fp8's subnormals); i8 over its whole range
# (i32 sums of K < 131072 such products cannot overflow); wider integers small.
FLOAT_RANGE = 1.0
INT_BOUND = 64


def random_arguments(params: list[Parameter], seed: int) -> list[np.ndarray]:
    """One array per memref parameter: floats uniform in [-1, 1] rounded to the
    element type (round to nearest even), i8 over its range, other integers
    uniform in [-64, 64]."""
    rng = np.random.default_rng(seed)
    values = []
    for p in params:
        if not p.is_memref:
            raise UserError(f"{p.label()} is a scalar of type {p.type}; random inputs are generated "
                            "only for memref arguments")
        if any(d is None for d in p.shape):
            raise UserError(f"{p.label()} has a dynamic shape ({p.type}); random inputs need static shapes")
        if dtypes.is_float_dtype(p.dtype):
            values.append(dtypes.convert(rng.uniform(-FLOAT_RANGE, FLOAT_RANGE, p.shape), p.dtype))
        else:
            low, high = (-128, 127) if p.dtype == np.int8 else (-INT_BOUND, INT_BOUND)
            values.append(rng.integers(low, high, p.shape, endpoint=True).astype(p.dtype))
    return values


# Ops and the operand positions they write through.
_WRITES = {"tile.copy": (1,), "tile.fill": (0,), "tile.gemm": (2,), "tile.reduce": (1,),
           "memref.store": (1,), "memref.copy": (1,)}


def written_parameters(function_op: ir.Operation) -> set[int]:
    """Indices of the memref parameters some op of the function writes to
    (directly, or through a memref.subview/cast of them)."""
    block = function_op.regions[0].blocks[0]
    origin: dict[ir.Value, int] = {a: i for i, a in enumerate(block.arguments)}
    written: set[int] = set()
    for op in walk(function_op):
        if op.name in ("memref.subview", "memref.cast") and op.operands[0] in origin:
            origin[op.results[0]] = origin[op.operands[0]]
        for position in _WRITES.get(op.name, ()):
            value = op.operands[position]
            if value in origin:
                written.add(origin[value])
    return written
