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

from tilemlir.diagnostics import SourceBuffer, UserError, file_position
from tilemlir.irutil import walk
from tilemlir.passes.verify import VIEW_OPS
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
# Scalars are scales, sizes or offsets more often than data: floats away from
# 0 (a scale of 0 would hide every error behind it), integers small and positive.
SCALAR_FLOAT_RANGE = (0.5, 2.0)
SCALAR_INT_RANGE = (1, 8)

INPUTS_TEXT = f"""\
inputs (random, from --seed):
  memrefs: floats uniform in [-{FLOAT_RANGE:g}, {FLOAT_RANGE:g}] rounded to the element type (to
    nearest even), i8 over its whole range, other integers uniform in
    [-{INT_BOUND}, {INT_BOUND}]
  scalars: floats (f16, bf16, f32, f64) uniform in [{SCALAR_FLOAT_RANGE[0]:g}, {SCALAR_FLOAT_RANGE[1]:g}) rounded to
    the type; integers (i8, i32, i64, index) uniform in [{SCALAR_INT_RANGE[0]}, {SCALAR_INT_RANGE[1]}]
  dynamic extents (the ? of memref<?x128xf16>): --dim NAME.DIM=VALUE, see --dim"""


def random_arguments(params: list[Parameter], seed: int,
                     shapes: dict[int, tuple[int, ...]] | None = None) -> list:
    """One value per parameter (INPUTS_TEXT): an array per memref, a NumPy
    scalar per float scalar, a Python int per integer scalar. `shapes` gives
    the extents of memrefs of dynamic shape (`resolve_shapes`)."""
    rng = np.random.default_rng(seed)
    shapes = shapes or {}
    values: list = []
    for p in params:
        if not p.is_memref:
            if dtypes.is_float_dtype(p.dtype):
                values.append(dtypes.convert(np.array(rng.uniform(*SCALAR_FLOAT_RANGE)), p.dtype)[()])
            else:
                values.append(int(rng.integers(*SCALAR_INT_RANGE, endpoint=True)))
            continue
        shape = shapes.get(p.index, p.shape)
        if any(d is None for d in shape):
            raise _unset_extents(p, [d for d, extent in enumerate(shape) if extent is None])
        if dtypes.is_float_dtype(p.dtype):
            values.append(dtypes.convert(rng.uniform(-FLOAT_RANGE, FLOAT_RANGE, shape), p.dtype))
        else:
            low, high = (-128, 127) if p.dtype == np.int8 else (-INT_BOUND, INT_BOUND)
            values.append(rng.integers(low, high, shape, endpoint=True).astype(p.dtype))
    return values


# ---------------------------------------------------------------------------
# Dynamic extents: --dim NAME.DIM=VALUE.
# ---------------------------------------------------------------------------

DIM_TEXT = """\
dynamic extents: --dim NAME.DIM=VALUE (repeatable) sets dimension DIM (from 0)
  of argument %NAME: --dim A.0=1000 makes %A: memref<?x128xf16> a 1000x128
  array. --dim '*.DIM=VALUE' sets dimension DIM of every argument where it is
  dynamic and not set by name. Extents the program ties together take one
  value: a whole-problem tile.gemm ties M, N, K of A, B and C, memref.copy
  ties the shapes of its two arguments; giving one of them sets the others,
  and two that disagree (with each other or with a static extent) are an
  error. MLIR types give no name to a dynamic extent, so extents are named by
  the argument and dimension that hold them: a symbolic name such as M would
  have to be guessed from the program."""

_DIM_FLAG = re.compile(r"^%?(?P<name>\*|[^=]+)\.(?P<dim>\d+)=(?P<value>[+-]?\d+)$")

Dim = tuple[int, int]  # (argument index, dimension)


@dataclass(frozen=True)
class DimFlag:
    """One --dim: dimension `dim` of argument `name` (None: of every argument) is `value`."""

    text: str
    name: str | None
    dim: int
    value: int


def parse_dim_flag(text: str) -> DimFlag:
    match = _DIM_FLAG.match(text)
    if match is None:
        raise UserError(f"--dim {text}: expected NAME.DIM=VALUE, e.g. --dim A.0=1000 for dimension 0 "
                        "of argument %A (or '*.0=1000' for every argument whose dimension 0 is dynamic)")
    value = int(match.group("value"))
    if value <= 0:
        raise UserError(f"--dim {text}: an extent must be a positive integer, got {value}")
    name = match.group("name")
    return DimFlag(text, None if name == "*" else name, int(match.group("dim")), value)


@dataclass(frozen=True)
class DimTie:
    """Two extents an op of the program needs equal."""

    a: Dim
    b: Dim
    op: ir.Operation


def dim_ties(function_op: ir.Operation) -> list[DimTie]:
    """The extents of the entry's arguments that its ops tie together: a
    whole-problem tile.gemm on arguments (M, N and K under the transposes)
    and memref.copy between arguments (every dimension)."""
    arguments = {a: i for i, a in enumerate(function_op.regions[0].blocks[0].arguments)}
    ties = []
    for op in walk(function_op):
        operands = list(op.operands)
        if not operands or not all(v in arguments for v in operands):
            continue
        if op.name == "tile.gemm":
            a, b, c = (arguments[v] for v in operands)
            transpose_a = ir.BoolAttr(op.attributes["transpose_a"]).value
            transpose_b = ir.BoolAttr(op.attributes["transpose_b"]).value
            m_a, k_a = (1, 0) if transpose_a else (0, 1)
            k_b, n_b = (1, 0) if transpose_b else (0, 1)
            ties += [DimTie((a, m_a), (c, 0), op), DimTie((a, k_a), (b, k_b), op),
                     DimTie((b, n_b), (c, 1), op)]
        elif op.name == "memref.copy":
            source, target = (arguments[v] for v in operands)
            rank = ir.MemRefType(operands[0].type).rank
            ties += [DimTie((source, d), (target, d), op) for d in range(rank)]
    return ties


def _unset_extents(p: Parameter, dims: list[int]) -> UserError:
    hint = " ".join(f"--dim {p.name.lstrip('%')}.{d}=N" for d in dims)
    return UserError(f"{p.label()} has a dynamic shape ({p.type}): give its extent"
                     f"{'s' if len(dims) > 1 else ''} with {hint}")


def _op_position(op: ir.Operation, source: SourceBuffer | None) -> str:
    file, line, col = file_position(op.location)
    if source is not None:
        file, line, col = source.map_position(file, line, col)
    return f"{file}:{line}:{col}" if line else op.name


def resolve_shapes(params: list[Parameter], flags: list[DimFlag], ties: list[DimTie],
                   source: SourceBuffer | None = None) -> dict[int, tuple[int, ...]]:
    """The shape of every memref parameter of dynamic shape, from `flags` and
    the program's `ties` (DIM_TEXT); a UserError for a flag that names no
    dynamic extent, for extents that disagree and for one left unset."""
    parent: dict[Dim, Dim] = {}

    def find(x: Dim) -> Dim:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    tied_by: dict[Dim, ir.Operation] = {}  # a class's root -> an op that tied it
    for tie in ties:
        ra, rb = find(tie.a), find(tie.b)
        if ra != rb:
            parent[rb] = ra
            tied_by[ra] = tied_by.get(ra, tie.op)
    # A class's value, where it comes from ("--dim A.0=1000", "dimension 1 of %A (96 in memref<?x96xf16>)")
    # and the extent it was given for.
    known: dict[Dim, tuple[int, str, Dim]] = {}
    memrefs = {p.index: p for p in params if p.is_memref}

    def assign(dim: Dim, value: int, origin: str) -> None:
        root = find(dim)
        if root not in known:
            known[root] = (value, origin, dim)
            return
        old, old_origin, old_dim = known[root]
        if old == value:
            return
        if old_dim != dim:
            op = tied_by[root]
            raise UserError(f"{origin} contradicts {old_origin}: the {op.name} at "
                            f"{_op_position(op, source)} needs these extents equal")
        raise UserError(f"{origin} contradicts {old_origin}")

    for p in memrefs.values():
        for d, extent in enumerate(p.shape):
            if extent is not None and find((p.index, d)) not in known:
                known[find((p.index, d))] = (extent, f"dimension {d} of {p.name} ({extent} in {p.type})",
                                             (p.index, d))
    by_name = {p.name.lstrip("%"): p for p in params}
    for flag in (f for f in flags if f.name is not None):
        p = by_name.get(flag.name)
        if p is None:
            names = ", ".join(by_name) or "none"
            raise UserError(f"--dim {flag.text}: the function has no argument %{flag.name} "
                            f"(arguments: {names})")
        if not p.is_memref:
            raise UserError(f"--dim {flag.text}: {p.label()} is a scalar of type {p.type}, not a memref")
        if flag.dim >= len(p.shape):
            raise UserError(f"--dim {flag.text}: {p.label()} is {p.type}, which has no dimension "
                            f"{flag.dim} (rank {len(p.shape)})")
        if p.shape[flag.dim] is not None:
            raise UserError(f"--dim {flag.text}: dimension {flag.dim} of {p.name} is static "
                            f"({p.type}); --dim sets dynamic extents")
        assign((p.index, flag.dim), flag.value, f"--dim {flag.text}")
    for flag in (f for f in flags if f.name is None):
        dims = [(p.index, flag.dim) for p in memrefs.values()
                if flag.dim < len(p.shape) and p.shape[flag.dim] is None]
        if not dims:
            raise UserError(f"--dim {flag.text}: no argument has a dynamic dimension {flag.dim}")
        for dim in dims:
            if find(dim) not in known:
                known[find(dim)] = (flag.value, f"--dim {flag.text}", dim)
    shapes = {}
    for p in memrefs.values():
        if all(extent is not None for extent in p.shape):
            continue
        missing = [d for d, extent in enumerate(p.shape) if find((p.index, d)) not in known]
        if missing:
            raise _unset_extents(p, missing)
        shapes[p.index] = tuple(known[find((p.index, d))][0] for d in range(len(p.shape)))
    return shapes


# Ops and the operand positions they write through.
WRITTEN_OPERANDS = {"tile.copy": (1,), "tile.fill": (0,), "tile.gemm": (2,), "tile.reduce": (1,),
           "memref.store": (1,), "memref.copy": (1,),
           "gpu.memset": (-2,)}  # (async tokens,) dst, value: the split-K clear of C


def written_parameters(function_op: ir.Operation) -> set[int]:
    """Indices of the memref parameters some op of the function writes to
    (directly, or through views of them: memref.subview, collapse_shape, ...)."""
    block = function_op.regions[0].blocks[0]
    origin: dict[ir.Value, int] = {a: i for i, a in enumerate(block.arguments)}
    written: set[int] = set()
    for op in walk(function_op):
        if op.name in VIEW_OPS and op.operands[0] in origin:
            origin[op.results[0]] = origin[op.operands[0]]
        for position in WRITTEN_OPERANDS.get(op.name, ()):
            value = op.operands[position]
            if value in origin:
                written.add(origin[value])
    return written
