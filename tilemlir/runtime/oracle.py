"""What `tile-run` compares a run against, and how much error it allows.

GEMM outputs are found in the IR, not in the results: an entry argument is a
GEMM output of a `tile.gemm` when it is the gemm's C (the whole-problem form)
or when the gemm's accumulator reaches it unchanged except for type
conversion (a `tile.copy` from the accumulator, or an `scf.parallel` storing
a cast of a load from it). A and B are the entry arguments the gemm reads,
directly or through the `tile.copy` that fills its operand; the accumulator
starts from the constant it is filled with (`tile.fill`, `gpu.memset`), from
the argument copied into it, or (whole-problem form without a fill) from C's
initial value: C += op(A)·op(B) reads C. What the output holds at the end
follows every write to it in program order (`_final_start`): a plain copy of
the accumulator sets it; an atomic one (`tile.atomic_add`: split-K's
workgroups adding their partial sums) adds to what it held before, its
initial value unless a fill or memset cleared it; any other write, before an
atomic add or after the product, leaves the output without an oracle. Copies
from 3-D (or higher) tensors whose tiles span the last two dims (batched
GEMM: `A[b, rows, cols]`) make a batched product, leading dims broadcasting
as in NumPy; a copy through `tile.window` has no oracle, nor has an output
whose shape is not that of the product (`GemmOutput.fits`). Such an
output is compared with an independent reference: the float64 NumPy product
of the dequantized inputs, start + op(A) @ op(B), under TOLERANCE_TEXT (also in
`tile-run --help`). A program that computes the wrong thing (say, skips a K
tile, or drops C's initial value) fails, whatever it computes.

Any other output (e.g. after a bias or ReLU epilogue) is compared with the
float64 re-execution of the same program (`Program(precision="float64")`),
which measures rounding only; it has no tolerance and is not checked, except
that a non-finite value where the float64 re-execution is finite fails.

An engine that runs the compiled program (the emulator, the device) is also
compared, output by output, with the reference engine on the same inputs
(`compare_engines`, ENGINE_TOLERANCE_TEXT): that is a check for every output,
GEMM or not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from tilemlir.dialects import attributes
from tilemlir.irutil import walk
from tilemlir.passes.verify import may_overlap
from tilemlir.runtime import dtypes
from tilemlir.runtime.arguments import WRITTEN_OPERANDS, Parameter

TOLERANCE_TEXT = """\
tolerance (GEMM outputs, per element):
  |out - ref| <= u_out*|ref| + (1 + u_out)*g(n)*S + eta_out/2
  ref   = float64 product of the dequantized inputs, op(A)@op(B) (+ C0 if accumulated)
  S     = |op(A)|@|op(B)| (+ |C0|), the sum of the magnitudes of the n = K + 1 terms
  g(n)  = n*u_acc / (1 - n*u_acc): summing n terms in the accumulator type, with
          products rounded there too, in any order (Higham, Accuracy and Stability
          of Numerical Algorithms, section 3.1); 0 for integer accumulators
  u     = 2^-p, the unit roundoff of a type with p significand bits:
          f64 2^-53, f32 2^-24, f16 2^-11, bf16 2^-8, e4m3 2^-4, e5m2 2^-3, ints 0
  eta_out = the smallest subnormal of the output type (0 for integers): the
          absolute error of rounding near zero
  The last rounding to the output type contributes u_out*|computed sum|, which is
  at most u_out*(|ref| + g(n)*S). The inputs carry no error: ref uses their
  dequantized values. Non-GEMM outputs are compared with a float64 re-execution
  of the program and not checked against a tolerance, except that a non-finite
  value where the float64 re-execution is finite fails."""

ENGINE_TOLERANCE_TEXT = """\
tolerance (emulator or device vs the reference engine, every output, per element):
  GEMM outputs: twice the GEMM tolerance (each engine is within it of ref)
  others: |out - ref_engine| <= 2*E + 2*u_out*|ref_engine| + eta_out
  E     = max |ref_engine - float64 re-execution| over the output: what rounding
          the program's types cost on these inputs (the other engine rounds the
          same operations in the same types, perhaps in another order)
  2*u_out*|ref_engine| + eta_out: one unit in the last place of the output type
  Integer outputs must be equal; NaN matches NaN only."""


@dataclass(frozen=True)
class GemmOutput:
    """An entry argument written with the result of a tile.gemm."""

    output: int
    a: int
    b: int
    transpose_a: bool
    transpose_b: bool
    accum: str  # MLIR element type of the accumulator
    start_constant: float | None = None  # the accumulator's fill value
    start_argument: int | None = None  # or the entry argument it starts from

    def _operands(self, inputs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(op(A), op(B), start) in float64; leading dims of 3-D and higher
        operands are batch dims (only the last two transpose)."""
        lhs = inputs[self.a].astype(np.float64)
        rhs = inputs[self.b].astype(np.float64)
        lhs = np.swapaxes(lhs, -1, -2) if self.transpose_a else lhs
        rhs = np.swapaxes(rhs, -1, -2) if self.transpose_b else rhs
        if self.start_argument is not None:
            start = inputs[self.start_argument].astype(np.float64)
        else:
            start = np.float64(self.start_constant or 0.0)
        return lhs, rhs, start

    def fits(self, inputs: list[np.ndarray]) -> bool:
        """Whether start + op(A)@op(B) has the output's shape (batch dims
        broadcasting as in NumPy): otherwise the output is not this product
        and gets no GEMM oracle."""
        lhs, rhs, start = self._operands(inputs)
        if lhs.shape[-1] != rhs.shape[-2]:
            return False
        try:
            batch = np.broadcast_shapes(lhs.shape[:-2], rhs.shape[:-2])
            shape = np.broadcast_shapes((*batch, lhs.shape[-2], rhs.shape[-1]), np.shape(start))
        except ValueError:
            return False
        return shape == inputs[self.output].shape

    def reference(self, inputs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, int]:
        """(start + op(A)@op(B), |start| + |op(A)|@|op(B)|, K) in float64."""
        lhs, rhs, start = self._operands(inputs)
        product, magnitude = lhs @ rhs, np.abs(lhs) @ np.abs(rhs)
        return start + product, np.abs(start) + magnitude, lhs.shape[-1]

    def describe(self, names: list[str], k: int) -> str:
        a = f"{names[self.a]}^T" if self.transpose_a else names[self.a]
        b = f"{names[self.b]}^T" if self.transpose_b else names[self.b]
        start = ""
        if self.start_argument is not None:
            start = f"initial {names[self.start_argument]} + "
        elif self.start_constant:
            start = f"{self.start_constant} + "
        return f"float64 {start}{a} @ {b} (K={k}, {self.accum} accumulation)"


_CASTS = {"arith.truncf", "arith.extf", "arith.sitofp", "arith.uitofp", "arith.fptosi",
          "arith.fptoui", "arith.extsi", "arith.trunci"}


def _defining_op(value: ir.Value) -> ir.Operation | None:
    return value.owner.operation if isinstance(value, ir.OpResult) else None


def _loaded_from(value: ir.Value) -> ir.Value | None:
    """The memref `value` was loaded from, looking through type conversions."""
    op = _defining_op(value)
    while op is not None and op.name in _CASTS:
        op = _defining_op(op.operands[0])
    return op.operands[0] if op is not None and op.name == "memref.load" else None


def _constant(value: ir.Value) -> float | None:
    op = _defining_op(value)
    if op is None or op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    if isinstance(attr, (ir.FloatAttr, ir.IntegerAttr)):
        return float(attr.value)
    return None


def _writes(op: ir.Operation, buffer: ir.Value) -> bool:
    """Whether `op` writes memory `buffer` may share (through views too)."""
    return any(position < len(op.operands) and may_overlap(op.operands[position], buffer)
               for position in WRITTEN_OPERANDS.get(op.name, ()))


def _copied_from(value: ir.Value, ops: list[ir.Operation], args: dict) -> int | None:
    """The entry argument whose tiles fill `value`: every write to `value` is a
    tile.copy from that argument (a tile of it: rank 2, or a batch of it, the
    tile spanning its last two dims). None when anything else writes it (a
    T.Parallel scaling the tile in place: it no longer holds the argument's data)."""
    found = None
    for op in ops:
        if not _writes(op, value):
            continue
        if op.name != "tile.copy" or op.operands[1] != value or op.operands[0] not in args \
                or not _whole_tiles(op) or found not in (None, args[op.operands[0]]):
            return None
        found = args[op.operands[0]]
    return found


def _whole_tiles(copy: ir.Operation) -> bool:
    """A copy between a global tensor and a 2-D tile that spans the tensor's
    last two dims (its leading dims, if any, are batch dims): what the
    batched GEMM oracle assumes. A tile.window elsewhere (Q[b, rows, h, :])
    moves data in a way the oracle does not model."""
    ranks = [ir.MemRefType(v.type).rank for v in list(copy.operands)[:2]]
    return attributes.WINDOW.get(copy) is None and min(ranks) == 2


_UNKNOWN = object()  # an accumulator start the oracle cannot state


_NOT_A_FILL = object()  # a write that does not set a whole buffer to one value


def _filled_with(op: ir.Operation, buffer: ir.Value):
    """The value a tile.fill or a (host) gpu.memset sets every element of
    `buffer` to: a float, None when known only at run time, _NOT_A_FILL for
    any other op."""
    if op.name == "tile.fill" and op.operands[0] == buffer:
        return _constant(op.operands[1])
    if op.name == "gpu.memset" and op.operands[-2] == buffer:  # (async tokens,) dst, value
        return _constant(op.operands[-1])
    return _NOT_A_FILL


def _start(acc: ir.Value, ops: list[ir.Operation], gemm_at: int, args: dict):
    """(constant, argument): how the accumulator is initialized before the
    gemm (the last write wins); _UNKNOWN when some write is none of a fill
    (or memset), a store of a constant, a copy of an argument's tile."""
    constant, argument = None, None
    for op in ops[:gemm_at]:
        if not _writes(op, acc):
            continue
        if (filled := _filled_with(op, acc)) is not _NOT_A_FILL:
            constant, argument = filled, None
        elif op.name == "memref.store" and op.operands[1] == acc and _constant(op.operands[0]) is not None:
            constant, argument = _constant(op.operands[0]), None
        elif op.name == "tile.copy" and op.operands[1] == acc and op.operands[0] in args \
                and _whole_tiles(op):
            constant, argument = None, args[op.operands[0]]
        else:
            return _UNKNOWN
        if constant is None and argument is None:
            return _UNKNOWN  # a fill of a value known only at run time
    return constant, argument


def _loops_around(op: ir.Operation) -> list[ir.Operation]:
    """The loops that contain `op`, innermost first."""
    loops = []
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        if parent.name in ("scf.for", "scf.while", "scf.parallel"):
            loops.append(parent)
        parent = parent.parent
    return loops


def _accumulates_alone(gemm: ir.Operation, ops: list[ir.Operation]) -> bool:
    """Whether the gemm is the only op updating its accumulator while it
    accumulates: no other gemm into it, no other write to it inside the
    loops around the gemm (a rescale per K step, a clear per iteration)."""
    acc = gemm.operands[2]
    for op in ops:
        if op != gemm and op.name == "tile.gemm" and may_overlap(op.operands[2], acc):
            return False
    for loop in _loops_around(gemm):
        if any(op != gemm and _writes(op, acc) for op in walk(loop)):
            return False
    return True


def gemm_outputs(function_op: ir.Operation) -> dict[int, GemmOutput]:
    """Entry argument index -> how it holds a gemm's result (module docstring)."""
    args = {a: i for i, a in enumerate(function_op.regions[0].blocks[0].arguments)}
    ops = list(walk(function_op))
    found: dict[int, GemmOutput] = {}
    for at, op in enumerate(ops):
        if op.name != "tile.gemm" or not _accumulates_alone(op, ops):
            continue
        a = args.get(op.operands[0], _copied_from(op.operands[0], ops, args))
        b = args.get(op.operands[1], _copied_from(op.operands[1], ops, args))
        if a is None or b is None:
            continue
        acc = op.operands[2]
        start = _start(acc, ops, at, args)
        if start is _UNKNOWN:
            continue
        constant, argument = start
        starts: dict[int, tuple] = {}
        if acc in args:
            if constant is None and argument is None:
                argument = args[acc]  # whole-problem form: C += op(A) op(B)
            starts[args[acc]] = (constant, argument)
        # The copies and stores of the accumulator into arguments: whether each adds atomically.
        producers: dict[int, dict[ir.Operation, bool]] = {}
        for later in ops[at + 1:]:
            if later.name == "tile.copy" and later.operands[0] == acc and later.operands[1] in args \
                    and _whole_tiles(later):
                producers.setdefault(args[later.operands[1]], {})[later] = attributes.ATOMIC_ADD.is_on(later)
            if later.name == "memref.store" and later.operands[1] in args:
                source = _loaded_from(later.operands[0])
                if source is not None and source == acc:
                    producers.setdefault(args[later.operands[1]], {})[later] = False
            if _writes(later, acc):
                if acc in args:
                    del starts[args[acc]]
                break  # the accumulator changes (an epilogue in place): later copies are not the product
        arguments = function_op.regions[0].blocks[0].arguments
        for output, writes in producers.items():
            starts.setdefault(output, _final_start(arguments[output], output, writes, ops, (constant, argument)))
        for output, output_start in starts.items():
            if output_start is _UNKNOWN:
                continue
            found.setdefault(output, GemmOutput(
                output, a, b,
                bool(ir.BoolAttr(op.attributes["transpose_a"]).value),
                bool(ir.BoolAttr(op.attributes["transpose_b"]).value),
                str(ir.TypeAttr(op.attributes["accum_dtype"]).value),
                *output_start))
    return found


def _final_start(output: ir.Value, index: int, producers: dict[ir.Operation, bool],
                 ops: list[ir.Operation], start: tuple):
    """(constant, argument) such that entry argument `output` (number `index`)
    ends as that plus op(A)@op(B), following every write to it in program
    order: `producers` are the copies and stores of the accumulator into it
    (True: an atomic add, C += accumulator), `start` the accumulator's own
    start. _UNKNOWN when anything else writes it after the product, or an
    atomic add adds to a value the oracle cannot state, or may add more than
    once per element (inside a loop), or adds an accumulator that does not
    start at zero (every workgroup adding a K slice would add its start)."""
    held = (None, index)  # what the output holds before the product: its initial value
    result = None
    for op in ops:
        if not _writes(op, output):
            continue
        if op not in producers:
            if result is not None:
                return _UNKNOWN  # changed after the product (an epilogue in place)
            filled = _filled_with(op, output)
            held = _UNKNOWN if filled is _NOT_A_FILL or filled is None else (filled, None)
        elif not producers[op]:
            result = start  # a plain copy: the accumulator's value, whatever the output held
        elif result is None and held is not _UNKNOWN and start[1] is None and not start[0] \
                and not _loops_around(op):
            result = held  # the partial sums added onto what the output held
        else:
            return _UNKNOWN
    return _UNKNOWN if result is None else result


@dataclass
class OutputReport:
    """How one output compares with its reference."""

    param: Parameter
    reference: str  # what the output was compared with
    max_abs: float
    max_rel: float  # max |err| / max |ref|
    worst_ratio: float | None  # max err/tol (GEMM outputs); None when unchecked
    passed: bool
    note: str = ""
    engine: str = ""  # set when comparing two engines' outputs: the one checked


def _gamma(n: int, u: float) -> float:
    if u == 0.0:
        return 0.0
    return n * u / (1.0 - n * u) if n * u < 1.0 else float("inf")


def tolerance(ref: np.ndarray, magnitude: np.ndarray, n: int, accum: str, output: str) -> np.ndarray:
    """The per-element bound of TOLERANCE_TEXT."""
    u_acc = dtypes.ELEMENT_TYPES[accum].unit_roundoff
    out = dtypes.ELEMENT_TYPES[output]
    g = _gamma(n, u_acc)
    return out.unit_roundoff * np.abs(ref) + (1 + out.unit_roundoff) * g * magnitude + out.smallest_subnormal / 2


def _errors(out: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, float, float]:
    err = np.abs(out.astype(np.float64) - ref)
    err = np.where(np.isnan(out.astype(np.float64)) & np.isnan(ref), 0.0, err)
    max_abs = float(np.nanmax(err, initial=0.0)) if not np.isnan(err).any() else float("nan")
    scale = float(np.nanmax(np.abs(ref), initial=0.0))
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    return err, max_abs, max_rel


def _worst_ratio(err: np.ndarray, tol: np.ndarray) -> float:
    """max err/tol: a zero tolerance allows no error, a NaN error none either."""
    ratio = err / np.where(tol > 0, tol, 1.0)
    ratio = np.where((tol == 0) & (err > 0), np.inf, ratio)
    ratio = np.where(np.isnan(err), np.inf, ratio)
    return float(ratio.max(initial=0.0))


def compare_engines(param: Parameter, output: np.ndarray, reference: np.ndarray,
                    shadow: np.ndarray, gemm: GemmOutput | None, inputs: list[np.ndarray],
                    engine: str) -> OutputReport:
    """One output of `engine` against the reference engine's on the same inputs,
    under ENGINE_TOLERANCE_TEXT; `shadow` is the float64 re-execution."""
    ref = reference.astype(np.float64)
    err, max_abs, max_rel = _errors(output, ref)
    if gemm is not None:
        exact, magnitude, k = gemm.reference(inputs)
        tol = 2 * tolerance(exact, magnitude, k + 1, gemm.accum, param.element)
        rule = "twice the GEMM tolerance"
    else:
        out = dtypes.ELEMENT_TYPES[param.element]
        shadow = shadow.astype(np.float64)
        finite = np.isfinite(ref) & np.isfinite(shadow)
        rounding = float(np.abs(ref - shadow)[finite].max(initial=0.0))
        tol = 2 * rounding + 2 * out.unit_roundoff * np.abs(ref) + out.smallest_subnormal
        rule = f"E = {rounding:.3e}"
    worst = _worst_ratio(err, tol)
    return OutputReport(param, f"the reference engine ({rule})", max_abs, max_rel, worst,
                        worst <= 1.0, engine=engine)


def check_output(param: Parameter, output: np.ndarray, shadow: np.ndarray,
                 gemm: GemmOutput | None, inputs: list[np.ndarray], names: list[str]) -> OutputReport:
    """Compares one output with its reference (see the module docstring).
    `inputs` are the arguments' initial values, `names` their names."""
    if gemm is not None:
        ref, magnitude, k = gemm.reference(inputs)
        err, max_abs, max_rel = _errors(output, ref)
        tol = tolerance(ref, magnitude, k + 1, gemm.accum, param.element)
        worst = _worst_ratio(err, tol)
        return OutputReport(param, gemm.describe(names, k), max_abs, max_rel, worst, worst <= 1.0)
    shadow = shadow.astype(np.float64)
    err, max_abs, max_rel = _errors(output, shadow)
    bad = ~np.isfinite(output.astype(np.float64)) & np.isfinite(shadow)
    note = (f"{int(bad.sum())} non-finite value(s) where the float64 re-execution is finite"
            if bad.any() else "no tolerance is defined for an output that is not a plain GEMM result")
    return OutputReport(param, "float64 re-execution of the program", max_abs, max_rel, None,
                        not bad.any(), note)
