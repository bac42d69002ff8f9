"""The reference engine: tile IR executed with NumPy, the ground truth of tilemlir.

It runs tile-level IR (any stage before `tile-lower-to-gpu`). A module is
compiled once into Python closures, one per op, reading and writing numbered
slots of a frame; then the entry function is called on NumPy arrays, which
memrefs alias (outputs are written in place).

Semantics (DESIGN.md section 3, made precise):

* views (`memref.subview`, `cast`, `collapse_shape`, `expand_shape`,
  `reinterpret_cast`, `assume_alignment`) are NumPy views of their source:
  writes through them land in the caller's array. A collapse or expand that
  would need a copy (merging dims that are not contiguous) is an error; a
  `reinterpret_cast` counts its offset from the base buffer of the function
  argument or allocation its source is a view of, and must stay inside it.
* `tile.kernel`: the body runs once per block of the grid, block indices
  bound to the body's arguments, x fastest, then y, then z. A correct kernel's
  result does not depend on the order. Allocations are fresh per block.
* `tile.alloc_shared` / `tile.alloc_fragment` / `memref.alloc(a)`: a new
  buffer filled with poison (NaN for floats, 0 for integers), so a read of
  data never written shows up as NaN.
* `tile.fill`: every element becomes the value.
* `tile.copy`: the window of the un-indexed side's shape, starting at the
  indices of the indexed side. When the indexed side has the higher rank r
  and the un-indexed side rank q < r, the window spans q of its dims (the last
  q, or those `tile.window` names) and has extent 1 in the others. Out-of-bounds reads give 0, out-of-bounds
  writes are dropped, except that a copy marked in bounds (`tile.in_bounds`)
  whose window leaves the memref is an error. The element type converts with `dtypes.convert` (round
  to nearest even, exact; overflow and NaN rules per format in `dtypes`).
* `tile.gemm`: C += op(A) . op(B) with op = transpose when asked. With `acc`
  the accumulator type, every element is computed as
      acc <- convert(C, acc)
      for k = 0, 1, ..., K-1:   acc <- round_acc(acc + round_acc(a_k * b_k))
      C <- convert(acc, C's type)
  i.e. products and sums rounded to `acc` in order of increasing k (products
  of f16/bf16/fp8 inputs are exact in f32, so there only the sums round).
  Whole elements are vectorized; only k is a Python loop. Integer gemms (i8
  inputs, i32 accumulation) are exact with two's-complement wraparound of the
  accumulator. Inside a kernel C has the accumulator's type; in the
  whole-problem form C is read and written in its own type, the sum formed
  in `acc`. Splitting K into tiles in increasing order (what tiling does)
  gives bit-identical results under this definition.
* `tile.reduce`: along `dim`, in index order, each step rounded to the
  element type; `clear = true` starts from the first element, `clear =
  false` from the destination's current value. On floats max/min are
  IEEE 754-2008 maxNum/minNum (np.fmax/fmin: a NaN loses to a number, NaN
  only when both are), maximum/minimum propagate NaN (np.maximum/minimum).
* `scf.for`: sequential; `tile.num_stages` is ignored (pipelining does not
  change results). `scf.parallel`: every index; when the body is elementwise
  (arith, math, memref.load/store, scf.if/for with outer bounds) it runs once
  with the induction variables as broadcast NumPy arrays; otherwise as a loop.
  Reductions combine pairwise (order unspecified, as in scf).
* arith/math: float arithmetic is carried out in float32 (float64 for f64)
  and rounded once to the type, which is exact for + - * / sqrt; math
  functions are evaluated in float64 and rounded once. Integers wrap.
  `arith.fptosi/fptoui` truncate and saturate (MLIR leaves overflow undefined).
  Index arithmetic is exact 64-bit.

`precision="float64"` runs the same program with every float type widened to
float64 and conversions between float types exact (no rounding): the ideal-
precision execution `tile-run` compares against.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from mlir import ir

from tilemlir.diagnostics import Diag, SourceBuffer, UserError, collect_diagnostics, format_diag
from tilemlir.dialects import attributes
from tilemlir.dialects.tile import MAGNITUDE_KINDS
from tilemlir.passes.verify import FRESH_BUFFER_OPS, VIEW_OPS
from tilemlir.runtime import dtypes
from tilemlir.runtime.dtypes import convert

PRECISIONS = ("exact", "float64")


class RunError(UserError):
    """An error in the program being run (or parsed), located at its ops."""

    def __init__(self, diags: Sequence[Diag], source: SourceBuffer | None = None):
        self.diags = list(diags)
        self.source = source
        super().__init__("".join(format_diag(d) for d in self.diags).rstrip("\n"))

    def formatted(self) -> str:
        """mlir-opt style: `file:line:col: error: message`, the line and a caret."""
        return "".join(format_diag(d, self.source) for d in self.diags)


class _Fail(Exception):
    """Raised by an op's closure; turned into a RunError at the op's location."""


@dataclass
class Frame:
    """The values of one function activation, by slot."""

    env: list
    # Vectorized scf.parallel inside masked scf.if branches: lanes that execute.
    mask: np.ndarray | None = None
    # In a tile.per_thread region: the thread indices (broadcast arrays), which
    # index each thread's own memref.alloca.
    lanes: tuple | None = None


@dataclass
class _PerLane:
    """A memref.alloca in per-thread code: one array per thread (the leading
    dims are the thread's indices); loads and stores index it by `lanes`."""

    data: np.ndarray
    lanes: tuple


def _lane_view(array, indices: list) -> tuple[np.ndarray, list]:
    """The array an access indexes and its full indices (a thread's own
    memory: the thread's indices first)."""
    if isinstance(array, _PerLane):
        return array.data, [*array.lanes, *indices]
    return array, indices


Instr = Callable[[Frame], None]


@dataclass
class BlockCode:
    """A block compiled to closures; terminator operands are read by the caller."""

    ops: list[Instr]
    where: list[ir.Operation]
    args: list[int]
    results: list[int]
    terminator: ir.Operation | None


@dataclass
class Function:
    """A func.func compiled for the engine."""

    name: str
    op: ir.Operation
    n_slots: int = 0
    body: BlockCode | None = None
    arg_types: list[ir.Type] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Small helpers on values.
# ---------------------------------------------------------------------------

def _bits_of(t: ir.Type) -> int:
    text = str(t)
    if text == "index":
        return 64
    return ir.IntegerType(t).width


def _wrap(x, bits: int):
    """Two's-complement wraparound to `bits` (Python ints or int64 arrays)."""
    if bits == 64:
        if isinstance(x, np.ndarray):
            return x.astype(np.int64, copy=False)
        return ((int(x) + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)
    half = 1 << (bits - 1)
    if isinstance(x, np.ndarray):
        x = x.astype(np.int64, copy=False)
        return ((x + half) & ((1 << bits) - 1)) - half
    return ((int(x) + half) & ((1 << bits) - 1)) - half


def _unsigned(x, bits: int):
    if isinstance(x, np.ndarray):
        return x.astype(np.int64).astype(np.uint64) & np.uint64((1 << bits) - 1)
    return int(x) & ((1 << bits) - 1)


def _is_array(x) -> bool:
    return isinstance(x, np.ndarray)


def _scalar_or_array(x):
    """NumPy 0-d results back to scalars (Python ints/bools stay what they are)."""
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return x[()]
    return x


def _int_value(x):
    """An integer read from memory in canonical form: Python int or int64 array."""
    if isinstance(x, np.ndarray):
        return x.astype(np.int64)
    return int(x)


def _bool_value(x):
    return x.astype(bool) if isinstance(x, np.ndarray) else bool(x)


def _shape_str(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape) if len(shape) else "scalar"


# ---------------------------------------------------------------------------
# Compilation.
# ---------------------------------------------------------------------------

_DYNAMIC = ir.ShapedType.get_dynamic_size()

# Ops a vectorized scf.parallel body may contain.
_VECTOR_SAFE_PREFIXES = ("arith.", "math.")
_VECTOR_SAFE = {"memref.load", "memref.store", "memref.dim", "scf.if", "scf.yield", "scf.for",
                "scf.reduce", "scf.reduce.return", "cf.assert"}

_PER_THREAD_SAFE = {"memref.alloca", "memref.atomic_rmw", "gpu.barrier", "gpu.shuffle", "scf.while",
                    "scf.condition"}


_CMPI = {
    0: operator.eq, 1: operator.ne, 2: operator.lt, 3: operator.le, 4: operator.gt, 5: operator.ge,
    6: operator.lt, 7: operator.le, 8: operator.gt, 9: operator.ge,
}
_CMPF = {
    0: lambda a, b: np.zeros(np.broadcast(a, b).shape, bool),
    1: lambda a, b: a == b,
    2: lambda a, b: a > b,
    3: lambda a, b: a >= b,
    4: lambda a, b: a < b,
    5: lambda a, b: a <= b,
    6: lambda a, b: (a != b) & ~(np.isnan(a) | np.isnan(b)),
    7: lambda a, b: ~(np.isnan(a) | np.isnan(b)),
    8: lambda a, b: (a == b) | np.isnan(a) | np.isnan(b),
    9: lambda a, b: ~(a <= b),
    10: lambda a, b: ~(a < b),
    11: lambda a, b: ~(a >= b),
    12: lambda a, b: ~(a > b),
    13: lambda a, b: a != b,
    14: lambda a, b: np.isnan(a) | np.isnan(b),
    15: lambda a, b: np.ones(np.broadcast(a, b).shape, bool),
}


def _round_half_away(x):
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


_erf = np.vectorize(math.erf, otypes=[np.float64])


_MATH_UNARY: dict[str, Callable] = {
    "math.exp": np.exp, "math.exp2": np.exp2, "math.expm1": np.expm1,
    "math.log": np.log, "math.log2": np.log2, "math.log10": np.log10, "math.log1p": np.log1p,
    "math.sqrt": np.sqrt, "math.rsqrt": _rsqrt, "math.cbrt": np.cbrt,
    "math.tanh": np.tanh, "math.sinh": np.sinh, "math.cosh": np.cosh,
    "math.sin": np.sin, "math.cos": np.cos, "math.tan": np.tan,
    "math.asin": np.arcsin, "math.acos": np.arccos, "math.atan": np.arctan, "math.erf": _erf,
    "math.absf": np.abs, "math.floor": np.floor, "math.ceil": np.ceil, "math.trunc": np.trunc,
    "math.round": _round_half_away, "math.roundeven": np.rint,
}
_MATH_BINARY: dict[str, Callable] = {
    "math.powf": np.power, "math.atan2": np.arctan2, "math.copysign": np.copysign,
}
_FLOAT_BINARY: dict[str, Callable] = {
    "arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply,
    "arith.divf": np.divide, "arith.remf": np.fmod,
    "arith.maximumf": np.maximum, "arith.minimumf": np.minimum,
    "arith.maxnumf": np.fmax, "arith.minnumf": np.fmin,
}


def _trunc_div(a, b):
    q = np.floor_divide(a, b)
    return q + ((q < 0) & (q * b != a))


# Integer ops on canonical (signed) values; the result wraps to the type's width.
_INT_BINARY: dict[str, Callable] = {
    "arith.addi": operator.add, "arith.subi": operator.sub, "arith.muli": operator.mul,
    "arith.andi": operator.and_, "arith.ori": operator.or_, "arith.xori": operator.xor,
    "arith.shli": operator.lshift, "arith.shrsi": operator.rshift,
    "arith.maxsi": np.maximum, "arith.minsi": np.minimum,
}
# On i1: True is 1 unsigned and -1 signed (so the signed max of two bools is
# their and).
_BOOL_BINARY: dict[str, Callable] = {
    "arith.andi": operator.and_, "arith.ori": operator.or_, "arith.xori": operator.xor,
    "arith.maxui": operator.or_, "arith.minui": operator.and_, "arith.maxsi": operator.and_,
    "arith.minsi": operator.or_,
}
_INT_DIVISION = {"arith.divsi", "arith.remsi", "arith.ceildivsi", "arith.floordivsi",
                 "arith.divui", "arith.remui", "arith.ceildivui"}
_UNSIGNED_BINARY: dict[str, Callable] = {
    "arith.maxui": np.maximum, "arith.minui": np.minimum, "arith.shrui": operator.rshift,
}


def _divide(name: str, a, b):
    if name == "arith.divsi":
        return _trunc_div(a, b)
    if name == "arith.remsi":
        return a - b * _trunc_div(a, b)
    if name == "arith.floordivsi":
        return np.floor_divide(a, b)
    if name == "arith.ceildivsi":
        return -np.floor_divide(-a, b)
    if name == "arith.divui":
        return np.floor_divide(a, b)
    if name == "arith.remui":
        return np.remainder(a, b)
    return -np.floor_divide(-a, b)  # ceildivui on unsigned values


class Program:
    """A module compiled for the reference engine. `run(entry, args)` executes."""

    def __init__(self, module: ir.Operation | ir.Module, *, source: SourceBuffer | None = None,
                 precision: str = "exact", vectorize: bool = True):
        """`vectorize=False` runs every scf.parallel as a loop (tests compare both)."""
        if precision not in PRECISIONS:
            raise UserError(f"unknown precision '{precision}' (one of {', '.join(PRECISIONS)})")
        self.module = module.operation
        self.context = self.module.context
        self.source = source
        self.precision = precision
        self.vectorize = vectorize
        self.functions: dict[str, Function] = {}
        self._func_ops = {}
        for op in self.module.regions[0].blocks[0].operations:
            if op.operation.name == "func.func":
                name = ir.StringAttr(op.operation.attributes["sym_name"]).value
                self._func_ops[name] = op.operation

    # -- errors ---------------------------------------------------------------

    def error_at(self, op: ir.Operation | ir.Location, message: str) -> RunError:
        location = op if isinstance(op, ir.Location) else op.location
        sink: list[Diag] = []
        with collect_diagnostics(self.context, sink, self.source):
            location.emit_error(message)
        return RunError(sink[:1] or [Diag("error", message)], self.source)

    # -- types ----------------------------------------------------------------

    def dtype_of(self, t: ir.Type) -> np.dtype:
        info = dtypes.element_type(str(t))
        if info is None:
            raise KeyError(str(t))
        if self.precision == "float64" and info.is_float:
            return np.dtype(np.float64)
        return info.dtype

    def entry_names(self) -> list[str]:
        return list(self._func_ops)

    def function(self, name: str) -> Function:
        if name in self.functions:
            return self.functions[name]
        if name not in self._func_ops:
            known = ", ".join(f"@{n}" for n in self._func_ops) or "none"
            raise UserError(f"no function @{name} in the module (functions: {known})")
        op = self._func_ops[name]
        function = Function(name, op)
        self.functions[name] = function  # before compiling: recursion
        _FunctionCompiler(self, function).compile()
        return function

    def call(self, name: str, args: Sequence) -> list:
        function = self.function(name)
        frame = Frame([None] * function.n_slots)
        with np.errstate(all="ignore"):
            return execute_block(self, function.body, frame, list(args))


def execute_block(program: Program, code: BlockCode, frame: Frame, args: Sequence) -> list:
    """Binds the block arguments, runs the ops, returns the terminator's operands."""
    env = frame.env
    for slot, value in zip(code.args, args):
        env[slot] = value
    index = 0
    try:
        for index, instr in enumerate(code.ops):
            instr(frame)
    except RunError:
        raise
    except _Fail as failure:
        raise program.error_at(code.where[index], str(failure)) from None
    except UserError as error:
        raise program.error_at(code.where[index], str(error)) from None
    except Exception as error:  # noqa: BLE001 - a NumPy failure at this op; never a traceback
        op = code.where[index]
        raise program.error_at(op, f"{op.name}: {type(error).__name__}: {error}") from None
    return [env[slot] for slot in code.results]


class _FunctionCompiler:
    def __init__(self, program: Program, function: Function):
        self.program = program
        self.function = function
        self.slots: dict[ir.Value, int] = {}

    # -- slots ------------------------------------------------------------------

    def define(self, value: ir.Value) -> int:
        slot = len(self.slots)
        self.slots[value] = slot
        return slot

    def use(self, value: ir.Value) -> int:
        return self.slots[value]

    def uses(self, values) -> list[int]:
        return [self.slots[v] for v in values]

    def fail(self, op: ir.Operation, message: str) -> RunError:
        return self.program.error_at(op, message)

    def dtype(self, op: ir.Operation, t: ir.Type) -> np.dtype:
        try:
            return self.program.dtype_of(t)
        except KeyError:
            raise self.fail(op, f"{op.name}: the reference engine has no element type {t}") from None

    def memref(self, op: ir.Operation, value: ir.Value) -> ir.MemRefType:
        try:
            return ir.MemRefType(value.type)
        except ValueError:
            raise self.fail(op, f"{op.name}: expected a memref, got {value.type}") from None

    # -- structure --------------------------------------------------------------

    def compile(self) -> None:
        op = self.function.op
        region = op.regions[0]
        if len(region.blocks) == 0:
            raise self.fail(op, f"@{self.function.name} is a declaration; it has no body to run")
        self.function.arg_types = [a.type for a in region.blocks[0].arguments]
        self.function.body = self.block(op, region, terminator="func.return")
        self.function.n_slots = len(self.slots)

    def block(self, parent: ir.Operation, region: ir.Region, terminator: str | tuple[str, ...]) -> BlockCode:
        blocks = list(region.blocks)
        if len(blocks) != 1:
            raise self.fail(parent, f"{parent.name}: regions of {len(blocks)} blocks (unstructured "
                                    "control flow) are not supported by the reference engine")
        block = blocks[0]
        args = [self.define(a) for a in block.arguments]
        ops, where = [], []
        operations = [o.operation for o in block.operations]
        last = operations[-1] if operations else None
        expected = (terminator,) if isinstance(terminator, str) else terminator
        body = operations
        if last is not None and last.name in expected:
            body = operations[:-1]
        else:
            last = None
        for op in body:
            instr = self.op(op)
            if instr is not None:
                ops.append(instr)
                where.append(op)
        results = self.uses(last.operands) if last is not None and last.name != "scf.reduce" else []
        return BlockCode(ops, where, args, results, last)

    def op(self, op: ir.Operation) -> Instr | None:
        name = op.name
        compile_op = _OP_COMPILERS.get(name)
        if compile_op is not None:
            return compile_op(self, op)
        if name in _FLOAT_BINARY:
            return self.float_binary(op, _FLOAT_BINARY[name])
        if name in _MATH_UNARY:
            return self.math(op, _MATH_UNARY[name])
        if name in _MATH_BINARY:
            return self.math(op, _MATH_BINARY[name])
        if name in _INT_BINARY or name in _UNSIGNED_BINARY or name in _INT_DIVISION:
            return self.int_binary(op)
        raise self.fail(op, _unsupported_message(name))

    # -- constants and arith ------------------------------------------------------

    def constant(self, op: ir.Operation) -> Instr:
        result = self.define(op.results[0])
        value = self.constant_value(op)

        def run(frame: Frame) -> None:
            frame.env[result] = value

        return run

    def constant_value(self, op: ir.Operation):
        attr = op.attributes["value"]
        t = op.results[0].type
        if isinstance(attr, ir.BoolAttr):
            return bool(attr.value)
        if isinstance(attr, ir.IntegerAttr):
            if str(t) == "i1":
                return bool(attr.value & 1)
            return int(attr.value)
        if isinstance(attr, ir.FloatAttr):
            return convert(np.float64(attr.value), self.dtype(op, t))
        if isinstance(attr, (ir.DenseIntElementsAttr, ir.DenseFPElementsAttr)):
            shaped = ir.ShapedType(t)
            element = self.dtype(op, shaped.element_type)
            if attr.is_splat:
                splat = attr.get_splat_value()
                scalar = splat.value if not isinstance(splat, ir.BoolAttr) else bool(splat.value)
                values = np.full(shaped.shape, scalar, dtype=np.float64 if dtypes.is_float_dtype(element) else np.int64)
            else:
                try:
                    values = np.array(attr)
                except (TypeError, ValueError, RuntimeError):
                    raise self.fail(op, f"arith.constant: dense constants of {t} are not supported "
                                        "by the reference engine (only splats)") from None
            values = values.reshape(shaped.shape)
            return convert(values, element) if dtypes.is_float_dtype(element) else values.astype(np.int64)
        raise self.fail(op, f"arith.constant: unsupported value {attr}")

    def float_binary(self, op: ir.Operation, fn: Callable) -> Instr:
        a, b = self.uses(op.operands)
        result = self.define(op.results[0])
        dtype = self.dtype(op, op.results[0].type)
        compute = dtypes.compute_dtype(dtype)
        if compute == dtype:
            def run(frame: Frame) -> None:
                env = frame.env
                env[result] = fn(env[a], env[b])
        else:
            def run(frame: Frame) -> None:
                env = frame.env
                env[result] = convert(fn(np.asarray(env[a], compute), np.asarray(env[b], compute)),
                                      dtype)
        return run

    def math(self, op: ir.Operation, fn: Callable) -> Instr:
        operands = self.uses(op.operands)
        result = self.define(op.results[0])
        dtype = self.dtype(op, op.results[0].type)

        def run(frame: Frame) -> None:
            env = frame.env
            wide = [np.asarray(env[s], np.float64) for s in operands]
            env[result] = _scalar_or_array(convert(fn(*wide), dtype))

        return run

    def negf(self, op: ir.Operation) -> Instr:
        return self.math(op, np.negative)

    def fma(self, op: ir.Operation) -> Instr:
        a, b, c = self.uses(op.operands)
        result = self.define(op.results[0])
        dtype = self.dtype(op, op.results[0].type)

        def run(frame: Frame) -> None:
            env = frame.env
            x, y, z = (np.asarray(env[s], np.float64) for s in (a, b, c))
            env[result] = _scalar_or_array(_fused_multiply_add(x, y, z, dtype))

        return run

    def int_binary(self, op: ir.Operation) -> Instr:
        name = op.name
        a, b = self.uses(op.operands)
        result = self.define(op.results[0])
        bits = _bits_of(op.results[0].type)
        if bits == 1:
            if name not in _BOOL_BINARY:
                raise self.fail(op, f"{name} on i1 is not supported by the reference engine")
            fn = _BOOL_BINARY[name]

            def run_bool(frame: Frame) -> None:
                env = frame.env
                env[result] = _bool_value(fn(env[a], env[b]))

            return run_bool
        if name in _INT_BINARY:
            fn = _INT_BINARY[name]

            def run(frame: Frame) -> None:
                env = frame.env
                env[result] = _wrap(fn(env[a], env[b]), bits)

            return run
        if name in _UNSIGNED_BINARY:
            fn = _UNSIGNED_BINARY[name]

            def run_unsigned(frame: Frame) -> None:
                env = frame.env
                env[result] = _wrap(_scalar_or_array(fn(_unsigned(env[a], bits), _unsigned(env[b], bits))), bits)

            return run_unsigned
        unsigned = name.endswith("ui")

        def run_division(frame: Frame) -> None:
            env = frame.env
            x, y = env[a], env[b]
            if unsigned:
                x, y = _unsigned(x, bits), _unsigned(y, bits)
            zero = np.asarray(y) == 0
            if frame.mask is not None:
                zero = zero & frame.mask
            if np.any(zero):
                raise _Fail(f"{name}: division by zero")
            if _is_array(y) or _is_array(x):
                y = np.where(np.asarray(y) == 0, 1, y)
                x, y = np.asarray(x), np.asarray(y)
            env[result] = _wrap(_scalar_or_array(_divide(name, x, y)), bits)

        return run_division

    def cmpi(self, op: ir.Operation) -> Instr:
        a, b = self.uses(op.operands)
        result = self.define(op.results[0])
        predicate = ir.IntegerAttr(op.attributes["predicate"]).value
        compare = _CMPI[predicate]
        unsigned = predicate >= 6
        bits = _bits_of(op.operands[0].type)

        def run(frame: Frame) -> None:
            env = frame.env
            x, y = env[a], env[b]
            if unsigned:
                x, y = _unsigned(x, bits), _unsigned(y, bits)
            elif bits == 1:
                x, y = -np.asarray(x, np.int64), -np.asarray(y, np.int64)
            env[result] = _bool_value(_scalar_or_array(np.asarray(compare(x, y))))

        return run

    def cmpf(self, op: ir.Operation) -> Instr:
        a, b = self.uses(op.operands)
        result = self.define(op.results[0])
        compare = _CMPF[ir.IntegerAttr(op.attributes["predicate"]).value]

        def run(frame: Frame) -> None:
            env = frame.env
            x, y = np.asarray(env[a], np.float64), np.asarray(env[b], np.float64)
            env[result] = _bool_value(_scalar_or_array(np.asarray(compare(x, y))))

        return run

    def select(self, op: ir.Operation) -> Instr:
        c, a, b = self.uses(op.operands)
        result = self.define(op.results[0])

        def run(frame: Frame) -> None:
            env = frame.env
            cond, x, y = env[c], env[a], env[b]
            if _is_array(cond) or _is_array(x) or _is_array(y):
                env[result] = np.where(cond, x, y)
            else:
                env[result] = x if cond else y

        return run

    def cast(self, op: ir.Operation) -> Instr:
        (source,) = self.uses(op.operands)
        result = self.define(op.results[0])
        name = op.name
        src_t, dst_t = op.operands[0].type, op.results[0].type
        if name in ("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp"):
            dtype = self.dtype(op, dst_t)
            src_bits = _bits_of(src_t) if name == "arith.uitofp" else 0

            def to_float(frame: Frame) -> None:
                env = frame.env
                value = env[source]
                if src_bits:
                    value = _unsigned(value, src_bits)
                env[result] = convert(value, dtype)

            return to_float
        if name in ("arith.fptosi", "arith.fptoui"):
            bits = _bits_of(dst_t)
            low, high = (0, (1 << bits) - 1) if name == "arith.fptoui" else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)

            def to_int(frame: Frame) -> None:
                value = np.trunc(np.asarray(frame.env[source], np.float64))
                value = np.clip(np.where(np.isnan(value), 0.0, value), low, high)
                frame.env[result] = _wrap(_int_value(_scalar_or_array(value.astype(np.int64))), bits)

            return to_int
        src_bits, dst_bits = _bits_of(src_t), _bits_of(dst_t)
        zero_extend = name in ("arith.extui", "arith.index_castui")
        if dst_bits == 1:
            def to_bool(frame: Frame) -> None:
                frame.env[result] = _bool_value(_scalar_or_array(np.asarray(frame.env[source]) & 1))
            return to_bool

        def int_cast(frame: Frame) -> None:
            value = frame.env[source]
            if src_bits == 1:
                value = np.asarray(value, np.int64) if _is_array(value) else int(value)
                value = value if zero_extend else -value
            elif zero_extend:
                value = _unsigned(value, src_bits)
                if _is_array(value):
                    value = value.astype(np.int64)
            frame.env[result] = _wrap(value, dst_bits)

        return int_cast

    def bitcast(self, op: ir.Operation) -> Instr:
        (source,) = self.uses(op.operands)
        result = self.define(op.results[0])
        src = self.dtype(op, op.operands[0].type)
        dst = self.dtype(op, op.results[0].type)
        if src.itemsize != dst.itemsize or self.program.precision == "float64":
            raise self.fail(op, f"arith.bitcast from {op.operands[0].type} to {op.results[0].type} "
                                "is not supported by the reference engine")

        def run(frame: Frame) -> None:
            value = np.asarray(frame.env[source]).astype(src).view(dst)
            if dst.kind == "i":
                value = value.astype(np.int64)
            frame.env[result] = _scalar_or_array(value)

        return run

    # -- memref ----------------------------------------------------------------

    def alloc(self, op: ir.Operation) -> Instr:
        memref = self.memref(op, op.results[0])
        dtype = self.dtype(op, memref.element_type)
        dynamic = self.uses(op.operands)
        result = self.define(op.results[0])
        static = list(memref.shape)
        poison = np.nan if dtypes.is_float_dtype(dtype) else 0
        template = None if dynamic else np.full(static, poison, dtype)

        per_thread = op.name == "memref.alloca"

        def run(frame: Frame) -> None:
            if per_thread and frame.lanes is not None:  # each thread's own
                shape = np.broadcast_shapes(*(np.shape(lane) for lane in frame.lanes))
                frame.env[result] = _PerLane(np.full(shape + tuple(static), poison, dtype), frame.lanes)
                return
            if template is not None:
                frame.env[result] = template.copy()
                return
            sizes = iter(int(frame.env[s]) for s in dynamic)
            shape = [next(sizes) if d == _DYNAMIC else d for d in static]
            frame.env[result] = np.full(shape, poison, dtype)

        return run

    def load(self, op: ir.Operation) -> Instr:
        buffer, *indices = self.uses(op.operands)
        result = self.define(op.results[0])
        element = self.dtype(op, op.results[0].type)
        is_int = element.kind in "iu"
        is_bool = element == np.bool_

        def run(frame: Frame) -> None:
            env = frame.env
            array, full = _lane_view(env[buffer], [env[i] for i in indices])
            where = _checked_indices(array, full, frame.mask, "memref.load")
            value = array[where]
            if is_bool:
                value = _bool_value(value)
            elif is_int:
                value = _int_value(value)
            env[result] = value

        return run

    def store(self, op: ir.Operation) -> Instr:
        value, buffer, *indices = self.uses(op.operands)

        def run(frame: Frame) -> None:
            env = frame.env
            array, index_values = _lane_view(env[buffer], [env[i] for i in indices])
            where = _checked_indices(array, index_values, frame.mask, "memref.store")
            data = env[value]
            if frame.mask is None:
                array[where] = data
                return
            full = np.broadcast_arrays(*where, np.asarray(data), frame.mask) if where else None
            if full is None:
                if np.any(frame.mask):
                    array[()] = data
                return
            *idx, data_full, mask = full
            array[tuple(i[mask] for i in idx)] = data_full[mask]

        return run

    def atomic_rmw(self, op: ir.Operation) -> Instr:
        """memref.atomic_rmw (T.atomic_add/max/min of one element): the
        update applied once per active iteration, iterations that name one
        element all counting (NumPy's unbuffered `ufunc.at`), in iteration order.
        The result is the element's value before this op's updates."""
        value, buffer, *indices = self.uses(op.operands)
        result = self.define(op.results[0])
        kind = attributes.ATOMIC_RMW_KINDS.get(ir.IntegerAttr(op.attributes["kind"]).value)
        is_float = isinstance(op.operands[0].type, ir.FloatType)
        update = None if kind is None else dtypes.atomic_update(kind, is_float)
        if update is None:
            raise self.fail(op, f"memref.atomic_rmw of kind {op.attributes['kind']} is not supported by the "
                                f"reference engine")

        def run(frame: Frame) -> None:
            env = frame.env
            array, full = _lane_view(env[buffer], [env[i] for i in indices])
            where = _checked_indices(array, full, frame.mask, "memref.atomic_rmw")
            old = array[where]  # a copy (index arrays) or a scalar, before the updates below
            env[result] = old
            data = np.asarray(env[value], array.dtype)
            mask = np.ones((), bool) if frame.mask is None else frame.mask
            *idx, data_full, mask = np.broadcast_arrays(*where, data, mask)
            with np.errstate(over="ignore", invalid="ignore"):
                update.at(array, tuple(i[mask] for i in idx), data_full[mask])

        return run

    def assert_(self, op: ir.Operation) -> Instr:
        """cf.assert (a kernel's `assert` on runtime values): stops the run
        with the user's line where an active iteration finds it false."""
        (condition,) = self.uses(op.operands)
        message = ir.StringAttr(op.attributes["msg"]).value

        def run(frame: Frame) -> None:
            value = np.asarray(frame.env[condition], bool)
            if frame.mask is not None:
                value = value | ~np.broadcast_to(frame.mask, np.broadcast_shapes(value.shape, frame.mask.shape))
            if not value.all():
                raise _Fail(f"device {message}")

        return run

    def gpu_shuffle(self, op: ir.Operation) -> Instr:
        """gpu.shuffle in per-thread code (T.shfl_*): threads numbered x
        fastest, cut into segments of `width`; a thread reads the value of
        the source its mode names in its segment, or keeps its own with
        `valid` false (the emulator's definition, emu_control._shuffle)."""
        value, offset, width = self.uses(op.operands)
        out, valid_out = (self.define(r) for r in op.results)
        from tilemlir.runtime.emu_control import SHUFFLE_SOURCE  # the emulator's definition, shared

        text = str(op.attributes["mode"])
        source_of = SHUFFLE_SOURCE[text[text.rindex(" ") + 1:-1]]

        def run(frame: Frame) -> None:
            if frame.lanes is None:
                raise _Fail(f"gpu.shuffle outside per-thread code (a {attributes.PER_THREAD.name} region)")
            env, lanes = frame.env, frame.lanes
            shape = np.broadcast_shapes(*(np.shape(lane) for lane in lanes))
            linear, stride = np.zeros(shape, np.int64), 1
            for lane in lanes:
                linear += np.broadcast_to(lane, shape) * stride
                stride *= int(np.size(lane))
            w = int(env[width])
            segment = linear // w * w
            source = source_of(linear - segment, np.broadcast_to(np.asarray(env[offset], np.int64), shape)) + segment
            valid = (source >= segment) & (source < segment + w) & (source < stride)
            source = np.where(valid, source, linear)
            if frame.mask is not None:  # a thread reading one a branch or loop left out: undefined
                active = np.broadcast_to(frame.mask, shape)
                by_thread_active = np.zeros(stride, bool)
                by_thread_active[linear.reshape(-1)] = active.reshape(-1)
                reads_inactive = active & valid & ~by_thread_active[source]
                if reads_inactive.any():
                    raise _Fail("gpu.shuffle in divergent control flow: a thread reads the value of one that a "
                                "branch or a loop left out")
            by_thread = np.empty(stride, np.asarray(env[value]).dtype)
            by_thread[linear.reshape(-1)] = np.broadcast_to(env[value], shape).reshape(-1)
            env[out] = by_thread[source]
            env[valid_out] = valid

        return run

    def dim(self, op: ir.Operation) -> Instr:
        buffer, index = self.uses(op.operands)
        result = self.define(op.results[0])

        def run(frame: Frame) -> None:
            env = frame.env
            frame.env[result] = env[buffer].shape[int(env[index])]

        return run

    def memref_copy(self, op: ir.Operation) -> Instr:
        source, target = self.uses(op.operands)

        def run(frame: Frame) -> None:
            env = frame.env
            if env[source].shape != env[target].shape:
                raise _Fail(f"memref.copy: shapes {env[source].shape} and {env[target].shape} differ")
            env[target][...] = env[source]

        return run

    def identity(self, op: ir.Operation) -> Instr:
        (source,) = self.uses(op.operands)
        result = self.define(op.results[0])

        def run(frame: Frame) -> None:
            frame.env[result] = frame.env[source]

        return run

    def no_op(self, op: ir.Operation) -> None:
        return None

    def barrier(self, op: ir.Operation) -> Instr:
        """gpu.barrier: nothing to order with every thread in step; in
        per-thread code, an error where a branch or a loop leaves some
        thread out (on a GPU that thread would never arrive)."""

        def run(frame: Frame) -> None:
            if frame.lanes is not None and frame.mask is not None and not np.all(frame.mask):
                raise _Fail("gpu.barrier (T.sync_threads) in divergent control flow: not every thread reaches "
                            "it (a branch or a loop whose trip count varies by thread leaves some out)")

        return run

    def offsets_sizes_strides(self, op: ir.Operation) -> Callable[[list], tuple[list, list, list]]:
        """For subview and reinterpret_cast: reads their offsets, sizes and
        strides (static, or the dynamic operands' values) from a frame's env."""
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        operands = self.uses(op.operands)
        dynamic_offsets = operands[1:1 + segments[1]]
        dynamic_sizes = operands[1 + segments[1]:1 + segments[1] + segments[2]]
        dynamic_strides = operands[1 + segments[1] + segments[2]:]
        static_offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
        static_sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
        static_strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))

        def read(env: list) -> tuple[list, list, list]:
            return (_resolve(static_offsets, dynamic_offsets, env), _resolve(static_sizes, dynamic_sizes, env),
                    _resolve(static_strides, dynamic_strides, env))

        return read

    def subview(self, op: ir.Operation) -> Instr:
        source = self.use(op.operands[0])
        window = self.offsets_sizes_strides(op)
        result_shape = list(self.memref(op, op.results[0]).shape)
        result = self.define(op.results[0])

        def run(frame: Frame) -> None:
            env = frame.env
            array = env[source]
            offsets, sizes, strides = window(env)
            for dim, (o, s, st) in enumerate(zip(offsets, sizes, strides)):
                if o < 0 or s < 0 or st < 1 or (s > 0 and o + (s - 1) * st >= array.shape[dim]):
                    raise _Fail(f"memref.subview: window offset {o}, size {s}, stride {st} is out of "
                                f"bounds for dimension {dim} of size {array.shape[dim]}")
            kept = _kept_dims(sizes, result_shape)
            frame.env[result] = array[tuple(
                slice(o, o + s * st, st) if keep else o
                for o, s, st, keep in zip(offsets, sizes, strides, kept))]

        return run

    def collapse_shape(self, op: ir.Operation) -> Instr:
        (source,) = self.uses(op.operands)
        groups = _reassociation(op)
        result = self.define(op.results[0])

        def run(frame: Frame) -> None:
            array = frame.env[source]
            shape = [int(np.prod([array.shape[d] for d in group], dtype=np.int64)) for group in groups]
            frame.env[result] = _reshaped_view(array, shape, "memref.collapse_shape")

        return run

    def expand_shape(self, op: ir.Operation) -> Instr:
        source, *dynamic = self.uses(op.operands)
        static = list(ir.DenseI64ArrayAttr(op.attributes["static_output_shape"]))
        result = self.define(op.results[0])

        def run(frame: Frame) -> None:
            sizes = iter(int(frame.env[s]) for s in dynamic)
            shape = [next(sizes) if d == _DYNAMIC else d for d in static]
            frame.env[result] = _reshaped_view(frame.env[source], shape, "memref.expand_shape")

        return run

    def reinterpret_cast(self, op: ir.Operation) -> Instr:
        """A view of the source's base buffer (the function argument or
        allocation it is a view of) at an element offset, sizes and strides."""
        window = self.offsets_sizes_strides(op)
        base = self.use(self.view_base(op, op.operands[0]))
        result = self.define(op.results[0])

        def run(frame: Frame) -> None:
            env = frame.env
            (offset,), sizes, strides = window(env)
            env[result] = _strided_view(env[base], offset, sizes, strides)

        return run

    def view_base(self, op: ir.Operation, value: ir.Value) -> ir.Value:
        """The function argument or allocation `value` is a view of: what a
        reinterpret_cast's offset counts from. Refused when it is neither, or
        when its layout puts its first element elsewhere than its base."""
        while isinstance(value, ir.OpResult) and value.owner.name in VIEW_OPS:
            value = value.owner.operands[0]
        is_argument = isinstance(value, ir.BlockArgument) and value.owner.owner == self.function.op
        is_allocation = isinstance(value, ir.OpResult) and value.owner.name in FRESH_BUFFER_OPS
        if not (is_argument or is_allocation):
            made_by = value.owner.name if isinstance(value, ir.OpResult) else "a block argument"
            raise self.fail(op, f"{op.name}: the reference engine knows the base buffer of function "
                                f"arguments and allocations (and views of them); this source comes from "
                                f"{made_by}")
        memref = self.memref(op, value)
        if not _has_identity_layout(memref):
            raise self.fail(op, f"{op.name}: the source is a view of {memref}, whose base (where its "
                                "layout's offset counts from) the reference engine does not know; "
                                "cast a buffer of identity layout")
        return value

    # -- tile ------------------------------------------------------------------

    def tile_alloc(self, op: ir.Operation) -> Instr:
        return self.alloc(op)

    def tile_fill(self, op: ir.Operation) -> Instr:
        buffer, value = self.uses(op.operands)

        def run(frame: Frame) -> None:
            env = frame.env
            env[buffer][...] = env[value]

        return run

    def gpu_memset(self, op: ir.Operation) -> Instr:
        """The host's `gpu.memset %dst, %value` (tile-tiling clears a split-K
        kernel's C with one): synchronous only."""
        if len(op.operands) != 2 or len(op.results):
            raise self.fail(op, "gpu.memset with async tokens is not supported")
        return self.tile_fill(op)

    def tile_copy(self, op: ir.Operation) -> Instr:
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        operands = self.uses(op.operands)
        source, target = operands[0], operands[1]
        source_indices = operands[2:2 + segments[2]]
        target_indices = operands[2 + segments[2]:]
        dtype = self.dtype(op, self.memref(op, op.operands[1]).element_type)
        indexed_rank = self.memref(op, op.operands[0 if source_indices else 1]).rank
        window_rank = self.memref(op, op.operands[1 if source_indices else 0]).rank
        # A rank-reducing copy: the window has extent 1 in the indexed side's dims it does not span.
        spanned = attributes.WINDOW.dims(op, indexed_rank, window_rank)
        fixed = tuple(d for d in range(indexed_rank) if d not in spanned)
        adds = attributes.ATOMIC_ADD.is_on(op)  # dst += src (tile-verify: no conversion)
        claimed_inside = attributes.IN_BOUNDS.is_on(op)

        def check_claim(start: list[int], window, shape) -> None:
            """A copy marked in bounds (tile-tiling, tile-prove-bounds) whose
            window leaves the memref is a wrong claim, which the lowering would
            turn into unguarded out-of-bounds accesses."""
            if claimed_inside and any(w.stop - w.start != d for w, d in zip(window, shape)):
                raise _Fail(f"tile.copy: marked {attributes.IN_BOUNDS.name}, but its window at "
                            f"{_shape_str(start)} of extent {_shape_str(shape)} leaves the memref")

        def written(old: np.ndarray, new: np.ndarray) -> np.ndarray:
            return convert(old + new, dtype) if adds else convert(new, dtype)

        def as_window(tile: np.ndarray) -> np.ndarray:
            """The un-indexed side as an array of the indexed side's rank (a view)."""
            return np.expand_dims(tile, fixed) if fixed else tile

        def run(frame: Frame) -> None:
            env = frame.env
            src, dst = env[source], env[target]
            if source_indices:
                start = [int(env[i]) for i in source_indices]
                tile = as_window(dst)
                inside, window = _window(start, tile.shape, src.shape)
                check_claim(start, window, tile.shape)
                if any(w.stop - w.start != d for w, d in zip(window, tile.shape)):
                    tile[...] = 0  # out-of-bounds reads give 0
                if inside is not None:
                    tile[window] = convert(src[inside], dtype)
            elif target_indices:
                start = [int(env[i]) for i in target_indices]
                tile = as_window(src)
                inside, window = _window(start, tile.shape, dst.shape)
                check_claim(start, window, tile.shape)
                if inside is not None:  # out-of-bounds writes are dropped
                    dst[inside] = written(dst[inside], tile[window])
            else:
                dst[...] = written(dst, src)

        return run

    def tile_gemm(self, op: ir.Operation) -> Instr:
        a, b, c = self.uses(op.operands)
        transpose_a = bool(ir.BoolAttr(op.attributes["transpose_a"]).value)
        transpose_b = bool(ir.BoolAttr(op.attributes["transpose_b"]).value)
        accum = self.dtype(op, ir.TypeAttr(op.attributes["accum_dtype"]).value)
        precision = self.program.precision

        def run(frame: Frame) -> None:
            env = frame.env
            lhs = env[a].T if transpose_a else env[a]
            rhs = env[b].T if transpose_b else env[b]
            out = env[c]
            if lhs.shape[1] != rhs.shape[0] or out.shape != (lhs.shape[0], rhs.shape[1]):
                raise _Fail(f"tile.gemm: op(A) is {_shape_str(lhs.shape)}, op(B) is "
                            f"{_shape_str(rhs.shape)} and C is {_shape_str(out.shape)}")
            out[...] = gemm_update(lhs, rhs, out, accum, ideal=precision == "float64")

        return run

    def tile_reduce(self, op: ir.Operation) -> Instr:
        source, target = self.uses(op.operands)
        kind = ir.StringAttr(op.attributes["kind"]).value
        dim = ir.IntegerAttr(op.attributes["dim"]).value
        clear = bool(ir.BoolAttr(op.attributes["clear"]).value)
        ideal = self.program.precision == "float64"

        def run(frame: Frame) -> None:
            env = frame.env
            src, dst = env[source], env[target]
            dst[...] = reduce_along(src, dim, kind, None if clear else dst, ideal=ideal)

        return run

    def tile_kernel(self, op: ir.Operation) -> Instr:
        grid = [int(g) for g in ir.DenseI64ArrayAttr(op.attributes["grid"])]
        body = self.block(op, op.regions[0], terminator="gpu.yield")
        program = self.program
        if len(body.args) != len(grid):
            raise self.fail(op, f"tile.kernel: {len(body.args)} block arguments for a grid of rank {len(grid)}")
        # x fastest: iterate the reversed grid, then reverse each point back.
        ranges = [range(g) for g in reversed(grid)]

        def run(frame: Frame) -> None:
            for point in itertools.product(*ranges):
                execute_block(program, body, frame, point[::-1])

        return run

    # -- func ------------------------------------------------------------------

    def call(self, op: ir.Operation) -> Instr:
        callee_name = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        try:
            callee = self.program.function(callee_name)
        except UserError as error:
            raise self.fail(op, f"func.call: {error}") from None
        operands = self.uses(op.operands)
        results = [self.define(r) for r in op.results]
        program = self.program

        def run(frame: Frame) -> None:
            env = frame.env
            inner = Frame([None] * callee.n_slots)
            values = execute_block(program, callee.body, inner, [env[s] for s in operands])
            for slot, value in zip(results, values):
                env[slot] = value

        return run

    # -- scf -------------------------------------------------------------------

    def scf_for(self, op: ir.Operation) -> Instr:
        lower, upper, step, *inits = self.uses(op.operands)
        body = self.block(op, op.regions[0], terminator="scf.yield")
        results = [self.define(r) for r in op.results]
        program = self.program

        def run(frame: Frame) -> None:
            env = frame.env
            if any(_is_array(env[s]) for s in (lower, upper, step)):
                carried = _lanes_for(program, body, frame, env[lower], env[upper], env[step],
                                     [env[s] for s in inits])
            else:
                lo, hi, st = int(env[lower]), int(env[upper]), int(env[step])
                if st <= 0:
                    raise _Fail(f"scf.for: step must be positive, got {st}")
                carried = [env[s] for s in inits]
                for iv in range(lo, hi, st):
                    carried = execute_block(program, body, frame, [iv, *carried])
            for slot, value in zip(results, carried):
                env[slot] = value

        return run

    def scf_if(self, op: ir.Operation) -> Instr:
        (condition,) = self.uses(op.operands)
        then_code = self.block(op, op.regions[0], terminator="scf.yield")
        has_else = len(op.regions[1].blocks) > 0
        else_code = self.block(op, op.regions[1], terminator="scf.yield") if has_else else None
        results = [self.define(r) for r in op.results]
        program = self.program

        def run(frame: Frame) -> None:
            env = frame.env
            cond = env[condition]
            if not _is_array(cond):
                code = then_code if cond else else_code
                values = execute_block(program, code, frame, []) if code is not None else []
            else:  # a vectorized scf.parallel: both sides, each under its mask
                outer = frame.mask
                take = cond if outer is None else cond & outer
                frame.mask = take
                then_values = execute_block(program, then_code, frame, [])
                else_values = []
                if else_code is not None:
                    frame.mask = ~cond if outer is None else ~cond & outer
                    else_values = execute_block(program, else_code, frame, [])
                frame.mask = outer
                values = [np.where(cond, t, e) for t, e in zip(then_values, else_values)]
            for slot, value in zip(results, values):
                env[slot] = value

        return run

    def scf_while(self, op: ir.Operation) -> Instr:
        inits = self.uses(op.operands)
        before = self.block(op, op.regions[0], terminator="scf.condition")
        after = self.block(op, op.regions[1], terminator="scf.yield")
        results = [self.define(r) for r in op.results]
        program = self.program

        def run(frame: Frame) -> None:
            env = frame.env
            values = [env[s] for s in inits]
            if frame.lanes is not None:  # per-thread code: each lane loops until its own condition fails
                forwarded = _lanes_while(program, before, after, frame, values)
            else:
                while True:
                    cond, *forwarded = execute_block(program, before, frame, values)
                    if _is_array(cond):
                        raise _Fail("scf.while: the condition differs between lanes of a vectorized loop")
                    if not cond:
                        break
                    values = execute_block(program, after, frame, forwarded)
            for slot, value in zip(results, forwarded):
                env[slot] = value

        return run

    def scf_execute_region(self, op: ir.Operation) -> Instr:
        body = self.block(op, op.regions[0], terminator="scf.yield")
        results = [self.define(r) for r in op.results]
        program = self.program

        def run(frame: Frame) -> None:
            values = execute_block(program, body, frame, [])
            for slot, value in zip(results, values):
                frame.env[slot] = value

        return run

    def scf_parallel(self, op: ir.Operation) -> Instr:
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        operands = self.uses(op.operands)
        rank = segments[0]
        lowers, uppers, steps = operands[:rank], operands[rank:2 * rank], operands[2 * rank:3 * rank]
        inits = operands[3 * rank:]
        body = self.block(op, op.regions[0], terminator="scf.reduce")
        reduce_op = body.terminator
        reduced = self.uses(reduce_op.operands) if reduce_op is not None else []
        combiners = [self.block(reduce_op, region, terminator="scf.reduce.return")
                     for region in (reduce_op.regions if reduce_op is not None else [])]
        results = [self.define(r) for r in op.results]
        per_thread = attributes.PER_THREAD.is_on(op)
        vectorized = (self.program.vectorize or per_thread) and _vectorizable(op, per_thread)
        if per_thread and not vectorized:
            raise self.fail(op, "the reference engine runs per-thread code with every thread in step: arith, "
                                "math, memref, scf and gpu.barrier/gpu.shuffle; this region holds another op")
        program = self.program

        def combine(code: BlockCode, frame: Frame, lhs, rhs):
            return execute_block(program, code, frame, [lhs, rhs])[0]

        def run(frame: Frame) -> None:
            env = frame.env
            bounds = [(int(env[lo]), int(env[hi]), int(env[st]))
                      for lo, hi, st in zip(lowers, uppers, steps)]
            if any(st <= 0 for _, _, st in bounds):
                raise _Fail("scf.parallel: steps must be positive")
            accumulators = [env[s] for s in inits]
            ranges = [range(lo, hi, st) for lo, hi, st in bounds]
            if any(len(r) == 0 for r in ranges):
                pass
            elif vectorized:
                ivs = [np.arange(lo, hi, st, dtype=np.int64).reshape(
                    [-1 if d == i else 1 for d in range(rank)]) for i, (lo, hi, st) in enumerate(bounds)]
                outer_lanes = frame.lanes
                frame.lanes = tuple(ivs) if per_thread else outer_lanes
                try:
                    execute_block(program, body, frame, ivs)
                finally:
                    frame.lanes = outer_lanes
                shape = tuple(len(r) for r in ranges)
                for i, code in enumerate(combiners):
                    lanes = np.broadcast_to(np.asarray(env[reduced[i]]), shape).reshape(-1)
                    total = _tree_reduce(lambda x, y, code=code: combine(code, frame, x, y), lanes)
                    accumulators[i] = combine(code, frame, accumulators[i], total)
            else:
                for point in itertools.product(*ranges):
                    execute_block(program, body, frame, point)
                    for i, code in enumerate(combiners):
                        accumulators[i] = combine(code, frame, accumulators[i], env[reduced[i]])
            for slot, value in zip(results, accumulators):
                env[slot] = value

        return run


def _lanes_for(program: Program, body: BlockCode, frame: Frame, lower, upper, step, carried: list) -> list:
    """scf.for in per-thread code whose bounds differ between threads: each
    iteration runs for the lanes still inside their own range (the others
    masked off, keeping their carried values)."""
    if frame.lanes is None:
        raise _Fail("scf.for: bounds that differ between lanes of a vectorized loop")
    lo, hi, st = (np.asarray(v, np.int64) for v in (lower, upper, step))
    if (st <= 0).any():
        raise _Fail(f"scf.for: step must be positive, got {int(st[st <= 0].flat[0])}")
    trips = np.maximum((hi - lo + st - 1) // st, 0)
    outer = frame.mask
    try:
        for k in range(int(trips.max(initial=0))):
            active = k < trips if outer is None else (k < trips) & outer
            if not active.any():
                continue
            frame.mask = active
            stepped = execute_block(program, body, frame, [lo + k * st, *carried])
            carried = [np.where(active, new, old) for new, old in zip(stepped, carried)]
    finally:
        frame.mask = outer
    return carried


def _lanes_while(program: Program, before: BlockCode, after: BlockCode, frame: Frame, values: list) -> list:
    """scf.while in per-thread code: every lane runs the condition region
    while it is still looping, leaves with the values it forwarded when its
    condition fails, and runs the body while it holds (the others masked)."""
    outer = frame.mask
    shape = np.broadcast_shapes(*(np.shape(lane) for lane in frame.lanes))
    running = np.ones(shape, bool) if outer is None else np.broadcast_to(outer, shape).copy()
    exits = None
    try:
        while True:
            frame.mask = running
            cond, *forwarded = execute_block(program, before, frame, values)
            exits = forwarded if exits is None else [np.where(running, f, e) for f, e in zip(forwarded, exits)]
            running = running & np.asarray(cond, bool)
            if not running.any():
                return exits
            frame.mask = running
            stepped = execute_block(program, after, frame, forwarded)
            values = [np.where(running, new, old) for new, old in zip(stepped, forwarded)]
    finally:
        frame.mask = outer


def _tree_reduce(combine: Callable, lanes: np.ndarray):
    """Pairwise combination of a 1-d array of lanes, each level vectorized."""
    while lanes.shape[0] > 1:
        half = lanes.shape[0] // 2
        paired = np.asarray(combine(lanes[:half], lanes[half:2 * half]))
        paired = np.broadcast_to(paired, (half,))
        lanes = np.concatenate([paired, lanes[2 * half:]]) if lanes.shape[0] % 2 else paired
    return _scalar_or_array(lanes[0]) if lanes.dtype.kind != "i" else int(lanes[0])


def _vectorizable(op: ir.Operation, per_thread: bool = False) -> bool:
    """True when an scf.parallel body can run once over all indices at once
    (a tile.per_thread one may also hold barriers, atomics and each thread's
    own allocas)."""
    from tilemlir.irutil import walk

    inside: set = set()
    for inner in walk(op):
        if inner is not op:
            inside.update(inner.results)
        for region in inner.regions:
            for block in region.blocks:
                inside.update(block.arguments)
    for inner in walk(op):
        if inner is op or inner == op:
            continue
        name = inner.name
        if not (name.startswith(_VECTOR_SAFE_PREFIXES) or name in _VECTOR_SAFE
                or per_thread and name in _PER_THREAD_SAFE):
            return False
        if name == "scf.for" and not per_thread and any(v in inside for v in list(inner.operands)[:3]):
            return False
    return True




def _reassociation(op: ir.Operation) -> list[list[int]]:
    return [[ir.IntegerAttr(d).value for d in ir.ArrayAttr(group)]
            for group in ir.ArrayAttr(op.attributes["reassociation"])]


def _resolve(static: list[int], dynamic: list[int], env) -> list[int]:
    """Static sizes/offsets/strides with the dynamic ones read from `env`."""
    values = iter(int(env[s]) for s in dynamic)
    return [next(values) if v == _DYNAMIC else v for v in static]


def _has_identity_layout(memref: ir.MemRefType) -> bool:
    layout = memref.layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(
        memref.rank, context=memref.context)


def _reshaped_view(array: np.ndarray, shape: list[int], what: str) -> np.ndarray:
    """`array` reshaped without a copy (a view: writes land in `array`)."""
    if int(np.prod(shape, dtype=np.int64)) != array.size:
        raise _Fail(f"{what}: {_shape_str(array.shape)} has {array.size} elements, "
                    f"{_shape_str(shape)} has {int(np.prod(shape, dtype=np.int64))}")
    try:
        return np.reshape(array, shape, copy=False)
    except ValueError:
        raise _Fail(f"{what}: the dims it merges or splits are not contiguous in this "
                    f"{_shape_str(array.shape)} view (strides {[s // array.itemsize for s in array.strides]}), "
                    "so the result would not be a view of it") from None


def _strided_view(base: np.ndarray, offset: int, sizes: list[int], strides: list[int]) -> np.ndarray:
    """The view at element `offset` of `base`'s memory with `sizes` and element `strides`."""
    if not base.flags.c_contiguous:
        raise _Fail("memref.reinterpret_cast: the base buffer is not a contiguous row-major array")
    if offset < 0 or any(s < 0 for s in sizes) or any(st < 0 for st in strides):
        raise _Fail(f"memref.reinterpret_cast: offset {offset}, sizes {sizes} and strides {strides} "
                    "must not be negative")
    last = offset + sum((s - 1) * st for s, st in zip(sizes, strides)) if all(sizes) else offset - 1
    if last >= base.size:
        raise _Fail(f"memref.reinterpret_cast: offset {offset}, sizes {sizes}, strides {strides} reach "
                    f"element {last} of a base buffer of {base.size} elements")
    flat = base.reshape(-1)[offset:]
    return np.lib.stride_tricks.as_strided(flat, shape=sizes, strides=[st * base.itemsize for st in strides])


def _kept_dims(sizes: list[int], result_shape: list[int]) -> list[bool]:
    """Which dimensions a (possibly rank-reducing) subview keeps: unit
    dimensions are dropped, first to last, until the ranks agree."""
    to_drop = len(sizes) - len(result_shape)
    kept = []
    for size in sizes:
        if to_drop and size == 1:
            kept.append(False)
            to_drop -= 1
        else:
            kept.append(True)
    if to_drop:
        raise _Fail(f"memref.subview: cannot reduce sizes {sizes} to rank {len(result_shape)}")
    return kept


def _window(start: list[int], extent: Sequence[int], bounds: Sequence[int]):
    """For a window at `start` of `extent` inside an array of shape `bounds`:
    (slices into that array, slices into the window) of the in-bounds part,
    or (None, window slices) when nothing is in bounds."""
    inside, window = [], []
    for s, e, b in zip(start, extent, bounds):
        lo, hi = max(s, 0), min(s + e, b)
        if hi <= lo:
            return None, tuple(slice(0, 0) for _ in extent)
        inside.append(slice(lo, hi))
        window.append(slice(lo - s, hi - s))
    return tuple(inside), tuple(window)


def _checked_indices(array: np.ndarray, indices: list, mask, what: str) -> tuple:
    """Indices for NumPy after a bounds check (negative indices would wrap).
    Lanes switched off by `mask` are not checked and read element 0."""
    if len(indices) != array.ndim:
        raise _Fail(f"{what}: {len(indices)} indices for a rank-{array.ndim} memref")
    checked = []
    for dim, index in enumerate(indices):
        size = array.shape[dim]
        if _is_array(index):
            if mask is not None:
                index = np.where(mask, index, 0)
            bad = (index < 0) | (index >= size)
            if bad.any():
                first = int(index[bad].flat[0])
                raise _Fail(f"{what}: index {first} is out of bounds for dimension {dim} of size {size}")
        else:
            index = int(index)
            if not 0 <= index < size:
                raise _Fail(f"{what}: index {index} is out of bounds for dimension {dim} of size {size}")
        checked.append(index)
    return tuple(checked)


# ---------------------------------------------------------------------------
# Tile-op semantics on arrays (also used by tests and tile-run).
# ---------------------------------------------------------------------------

def gemm_update(a: np.ndarray, b: np.ndarray, c: np.ndarray, accum: np.dtype, *,
                ideal: bool = False) -> np.ndarray:
    """C + a @ b with the reference semantics (see the module docstring);
    returns the new C in C's dtype. `ideal`: float64, any summation order."""
    accum = np.dtype(accum)
    if ideal:
        return convert(c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64), c.dtype) \
            if dtypes.is_float_dtype(accum) else _integer_gemm(a, b, c, accum)
    if not dtypes.is_float_dtype(accum):
        return _integer_gemm(a, b, c, accum)
    compute = dtypes.compute_dtype(accum)
    narrow = compute != accum
    lhs = np.ascontiguousarray(convert(a, compute).T)  # row k is column k of a
    rhs = convert(b, compute)
    acc = convert(convert(c, accum), compute)
    product = np.empty_like(acc)
    for k in range(lhs.shape[0]):
        np.multiply(lhs[k][:, None], rhs[k][None, :], out=product)
        if narrow:
            product = convert(convert(product, accum), compute)
        np.add(acc, product, out=acc)
        if narrow:
            acc = convert(convert(acc, accum), compute)
    return convert(acc, c.dtype)


def _integer_gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray, accum: np.dtype) -> np.ndarray:
    bits = np.iinfo(accum).bits
    bound = float(np.abs(a).max(initial=0)) * float(np.abs(b).max(initial=0)) * a.shape[1]
    if bound < 2.0**53:  # float64 BLAS is exact here and much faster than NumPy's int matmul
        total = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.int64)
    else:  # int64 products wrap mod 2**64, which keeps the result mod 2**bits
        total = a.astype(np.int64) @ b.astype(np.int64)
    acc = _wrap(convert(c, accum).astype(np.int64) + total, bits)
    return convert(acc, c.dtype)


# tile.reduce's max/min kinds: maxNum/minNum and the NaN-propagating pair
# (the same on integers, which have no NaN).
_EXTREMA = {"max": np.fmax, "min": np.fmin, "maximum": np.maximum, "minimum": np.minimum}


def reduce_along(src: np.ndarray, dim: int, kind: str, initial: np.ndarray | None, *,
                 ideal: bool = False) -> np.ndarray:
    """tile.reduce: `initial` is the destination's value when clear = false."""
    if kind in MAGNITUDE_KINDS:  # max / sum of |x|; the destination as it is
        src, kind = np.abs(src), MAGNITUDE_KINDS[kind]
    moved = np.moveaxis(src, dim, 0)
    dtype = src.dtype
    if kind in _EXTREMA:
        pick = _EXTREMA[kind]
        if dtypes.is_narrow_float(dtype):
            moved = moved.astype(np.float32)
        result = pick.reduce(moved, axis=0) if moved.shape[0] else None
        if initial is not None:
            result = initial if result is None else pick(initial.astype(result.dtype), result)
        if result is None:
            raise _Fail("tile.reduce: a max/min over an empty dimension with clear = true")
        return convert(result, dtype)
    if not dtypes.is_float_dtype(dtype):
        total = moved.astype(np.int64).sum(axis=0)
        if initial is not None:
            total = total + initial.astype(np.int64)
        return convert(_wrap(total, np.iinfo(dtype).bits), dtype)
    if ideal:
        total = moved.astype(np.float64).sum(axis=0)
        return total + initial if initial is not None else total
    compute = dtypes.compute_dtype(dtype)
    steps = iter(moved)
    if initial is not None:
        acc = initial.astype(compute)
    else:
        first = next(steps, None)
        if first is None:
            return np.zeros(moved.shape[1:], dtype)
        acc = first.astype(compute)
    for row in steps:
        acc = acc + row.astype(compute)
        if compute != dtype:
            acc = convert(convert(acc, dtype), compute)
    return convert(acc, dtype)


def _fused_multiply_add(x: np.ndarray, y: np.ndarray, z: np.ndarray, dtype: np.dtype):
    """x * y + z rounded once to `dtype` (exact for types up to f32: the product
    is exact in float64 and the float64 sum is kept round-to-odd)."""
    product = x * y
    total = np.asarray(product + z)
    # TwoSum: the exact error of the float64 addition.
    virtual = total - product
    error = (product - (total - virtual)) + (z - virtual)
    if np.dtype(dtype) == np.float64:
        return total
    even = (total.view(np.uint64) & np.uint64(1)) == 0
    stepped = np.nextafter(total, np.where(error > 0, np.inf, -np.inf))
    odd = np.where((error != 0) & even & np.isfinite(total), stepped, total)
    return convert(odd, dtype)


def _unsupported_message(name: str) -> str:
    if name.startswith(("gpu.", "amdgpu.", "rocdl.", "nvvm.", "llvm.")):
        return (f"'{name}' is not supported by the reference engine, which runs tile-level IR "
                "(before tile-lower-to-gpu); GPU-level IR runs in the emulator")
    return f"'{name}' is not supported by the reference engine"


_OP_COMPILERS: dict[str, Callable[[_FunctionCompiler, ir.Operation], Instr | None]] = {
    "arith.constant": _FunctionCompiler.constant,
    "arith.negf": _FunctionCompiler.negf,
    "arith.cmpi": _FunctionCompiler.cmpi,
    "arith.cmpf": _FunctionCompiler.cmpf,
    "arith.select": _FunctionCompiler.select,
    "arith.bitcast": _FunctionCompiler.bitcast,
    **{name: _FunctionCompiler.cast for name in (
        "arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi",
        "arith.fptoui", "arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast",
        "arith.index_castui")},
    "math.fma": _FunctionCompiler.fma,
    "memref.alloc": _FunctionCompiler.alloc,
    "memref.alloca": _FunctionCompiler.alloc,
    "memref.load": _FunctionCompiler.load,
    "memref.store": _FunctionCompiler.store,
    "memref.atomic_rmw": _FunctionCompiler.atomic_rmw,
    "memref.dim": _FunctionCompiler.dim,
    "cf.assert": _FunctionCompiler.assert_,
    "gpu.shuffle": _FunctionCompiler.gpu_shuffle,
    "memref.copy": _FunctionCompiler.memref_copy,
    "memref.cast": _FunctionCompiler.identity,
    "memref.subview": _FunctionCompiler.subview,
    "memref.collapse_shape": _FunctionCompiler.collapse_shape,
    "memref.expand_shape": _FunctionCompiler.expand_shape,
    "memref.reinterpret_cast": _FunctionCompiler.reinterpret_cast,
    "memref.dealloc": _FunctionCompiler.no_op,
    "memref.assume_alignment": _FunctionCompiler.identity,
    "gpu.barrier": _FunctionCompiler.barrier,
    "gpu.memset": _FunctionCompiler.gpu_memset,
    "tile.alloc_shared": _FunctionCompiler.tile_alloc,
    "tile.alloc_fragment": _FunctionCompiler.tile_alloc,
    "tile.fill": _FunctionCompiler.tile_fill,
    "tile.copy": _FunctionCompiler.tile_copy,
    "tile.gemm": _FunctionCompiler.tile_gemm,
    "tile.reduce": _FunctionCompiler.tile_reduce,
    "tile.kernel": _FunctionCompiler.tile_kernel,
    "func.call": _FunctionCompiler.call,
    "scf.for": _FunctionCompiler.scf_for,
    "scf.if": _FunctionCompiler.scf_if,
    "scf.while": _FunctionCompiler.scf_while,
    "scf.parallel": _FunctionCompiler.scf_parallel,
    "scf.execute_region": _FunctionCompiler.scf_execute_region,
}
