"""tile-split-loops: a loop whose body selects by a condition that has one
value on every element over its leading iterations is split there: those
iterations run a copy of the body with the condition folded away, the rest
run the body as written.

Flash attention masks its scores with `arith.select`: keys after the query
(causal) and keys past the sequence's end become -inf. Both conditions are
false on every element of every key block before the diagonal (or the last
block), yet the loop evaluates them on every element of every block.
FlashAttention and Triton run those blocks in a loop of their own, without
the mask; this pass derives where to split from the conditions themselves:

* a candidate condition is an `arith.cmpi` (sgt, sge, slt, sle and their
  unsigned forms; not eq or ne) on `index` values inside an `scf.for` of a
  tile.kernel whose step is the constant 1 and whose variable is bounded and
  not negative; both sides are sums of constants, constant multiples of the
  loop variable, of induction variables of loops nested in it
  (`scf.parallel`, `scf.for`) with constant bounds, and of values defined
  before the loop (`arith` addi, subi, muli by a constant). Both sides must
  be bounded by tile-prove-bounds' interval arithmetic (`Ranges`), so no
  value wraps, and non-negative for an unsigned predicate;
* over the nested variables' ranges such a condition is `c * v + x >= k`
  with x in an interval: for c > 0 it is false on every element while
  `v < ceil((k - max x) / c)`, for c < 0 true while
  `v < floor((min x - k) / -c) + 1`; that bound is computed before the loop
  from the values defined there (0 where it is below 0). A condition
  independent of v is left alone;
* an `arith.select` whose condition (candidates combined by andi, ori and
  xori) then has one value is the reason to split; the split point P is the
  least bound of the candidates under such selects, clamped to
  [lower, upper]: every iteration of either loop is one the original ran, so
  tile-prove-bounds' marks stay true (a pipelined loop's prologue copies
  nothing when it runs no iteration: tile-pipeline, and NVIDIA's
  cp_async_overlap.py). Not to upper - 1, which would keep one iteration in
  the second loop: LLVM then proves a causal kernel's second loop runs once,
  unrolls it, and ptxas schedules that straight-line copy with 75 more
  registers (measured: 64x64 blocks of d = 128, 167 -> 242);
* `scf.for %v = lower to upper` becomes `scf.for %v = lower to P`, a copy in
  which each candidate is its constant, a select by a constant takes its
  operand, a store of a value just loaded from the same place (only arith
  between) is dropped and what is left unused goes (causal attention's mask
  disappears), then `scf.for %v = P to upper` as written. Loop-carried values
  flow from the first into the second; both keep every attribute.

It runs after tile-pipeline: a pipelined loop's body computes its stage and
its prefetch from the original bounds (values defined before the loop), so
the two loops run the same sequence of iterations, barriers and prefetches
as the one did, sharing its stages (split before, the two would each want
their own). On NVIDIA, whose pipelining happens in tile-lower-to-gpu, each
loop prefetches for itself.

Output: loops split as above, each split said in an info remark; the IR's
meaning is unchanged.

Options:
  enabled=true|false   (false: split nothing; tile-compile compiles without
                       the split when the split kernel spills registers and
                       the loops as written do not, with a remark)

    scf.for %kb = %c0 to %upper step %c1 {        // causal: upper = diagonal + 1
      ... %future = arith.cmpi ugt, %kj, %qi ... arith.select %future, %minus_inf, %s ...
    } {tile.num_stages = 2 : i64}
    // becomes (bx * 64 = %row0: blocks kb < bx see no future key)
    %p = max(0, min((%row0 + 1) / 64, %upper))
    scf.for %kb = %c0 to %p step %c1 { ... no mask ... } {tile.num_stages = 2 : i64}
    scf.for %kb = %p to %upper step %c1 { ... as written ... } {tile.num_stages = 2 : i64}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir
from mlir.dialects import arith

from tilemlir.dialects import attributes
from tilemlir.irutil import erase_unused, parent_ops, walk
from tilemlir.passes.base import PassState, TilePass
from tilemlir.passes.kernel_facts import enclosing_kernel
from tilemlir.passes.prove_bounds import INDEX_BITS, Ranges, _constant

# arith.cmpi predicates (MLIR's arith::CmpIPredicate values) as (sign, k, unsigned):
# lhs P rhs  <=>  sign * (lhs - rhs) >= k.
_PREDICATES = {2: (-1, 1, False), 3: (-1, 0, False), 4: (1, 1, False), 5: (1, 0, False),   # slt sle sgt sge
               6: (-1, 1, True), 7: (-1, 0, True), 8: (1, 1, True), 9: (1, 0, True)}      # ult ule ugt uge
_PURE_PREFIXES = ("arith.",)

Linear = tuple[dict, int]  # ({atom: coefficient}, constant)


def _same(a, b) -> bool:
    return a is not None and b is not None and a.operation == b.operation


def _inside(value: ir.Value, loop: ir.Operation) -> bool:
    """Whether `value` is defined in `loop` (its own variables included)."""
    if isinstance(value, ir.BlockArgument):
        op = ir.BlockArgument(value).owner.owner
    else:
        op = value.owner
    return _same(op, loop) or any(_same(parent, loop) for parent in parent_ops(op))


def _is_induction(value: ir.Value) -> bool:
    if not isinstance(value, ir.BlockArgument):
        return False
    argument = ir.BlockArgument(value)
    parent = argument.owner.owner
    if parent.name == "scf.for":
        return argument.arg_number == 0
    return parent.name == "scf.parallel"


def _linear(value: ir.Value, loop: ir.Operation, depth: int = 0) -> Linear | None:
    """`value` as a sum of constant multiples of atoms (the loop's variable,
    variables of loops nested in it, values defined before it) plus a
    constant; None when it is not one (module docstring)."""
    constant = _constant(value)
    if constant is not None:
        return {}, constant
    if not _inside(value, loop) or _is_induction(value):
        return {value: 1}, 0
    if depth > 32 or isinstance(value, ir.BlockArgument):
        return None
    owner = value.owner
    if owner.name not in ("arith.addi", "arith.subi", "arith.muli"):
        return None
    parts = [_linear(operand, loop, depth + 1) for operand in owner.operands]
    if None in parts:
        return None
    (a, a0), (b, b0) = parts
    if owner.name == "arith.muli":
        if a and b:
            return None
        (scaled, base), factor = ((a, a0), b0) if not b else ((b, b0), a0)
        return {atom: c * factor for atom, c in scaled.items() if c * factor}, base * factor
    sign = 1 if owner.name == "arith.addi" else -1
    terms = dict(a)
    for atom, c in b.items():
        terms[atom] = terms.get(atom, 0) + sign * c
    return {atom: c for atom, c in terms.items() if c}, a0 + sign * b0


@dataclass
class Candidate:
    """A condition that is `value` on every element of every iteration v
    before `boundary()`: for a coefficient c of v > 0, v < ceil(n / c); for
    c < 0, v < floor(n / -c) + 1; the numerator n is `constant` plus the sum
    of the `outer` (value, coefficient) terms, values defined before the loop."""

    value: bool
    coefficient: int
    constant: int
    outer: list

    def boundary(self) -> ir.Value:
        """The first iteration where the condition may differ, emitted at the
        current insertion point (before the loop), or 0 where that is below 0
        (the loop variable is not negative: `split_point`). In divui and
        maxsi, which every backend emits: ceil(n / c) = (n + c - 1) / c and
        floor(n / c) + 1 = (n + c) / c for c > 0, both numerators first
        clamped at 0."""
        numerator = _index(self.constant + (self.coefficient - 1 if self.coefficient > 0
                                            else -self.coefficient))
        for atom, coefficient in self.outer:
            term = atom if coefficient == 1 else arith.MulIOp(atom, _index(coefficient)).result
            numerator = arith.AddIOp(numerator, term).result
        numerator = arith.MaxSIOp(numerator, _index(0)).result
        return arith.DivUIOp(numerator, _index(abs(self.coefficient))).result


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _candidate(compare: ir.Operation, loop: ir.Operation, ranges: Ranges) -> Candidate | None:
    """What a cmpi says over the loop (module docstring), or None."""
    predicate = ir.IntegerAttr(compare.attributes["predicate"]).value
    if predicate not in _PREDICATES or not isinstance(compare.operands[0].type, ir.IndexType):
        return None
    sign, k, unsigned = _PREDICATES[predicate]
    sides = [ranges.of(v) for v in compare.operands]
    if None in sides or (unsigned and min(low for low, _ in sides) < 0):
        return None
    forms = [_linear(v, loop) for v in compare.operands]
    if None in forms:
        return None
    (lhs, lhs0), (rhs, rhs0) = forms
    terms = dict(lhs)
    for atom, c in rhs.items():
        terms[atom] = terms.get(atom, 0) - c
    # sign * (lhs - rhs) = c * v + inner + outer + constant >= k
    iv = loop.regions[0].blocks[0].arguments[0]
    c = sign * terms.pop(iv, 0)
    if c == 0:
        return None
    inner_low = inner_high = sign * (lhs0 - rhs0)
    outer = []
    for atom, coefficient in terms.items():
        coefficient *= sign
        if not _inside(atom, loop):
            outer.append((atom, coefficient))
            continue
        bounds = ranges.of(atom)
        if bounds is None:
            return None
        ends = (coefficient * bounds[0], coefficient * bounds[1])
        inner_low, inner_high = inner_low + min(ends), inner_high + max(ends)
    if c > 0:  # false on every element while c * v + inner_high + outer < k
        candidate = Candidate(False, c, k - inner_high, [(atom, -co) for atom, co in outer])
    else:  # true on every element while c * v + inner_low + outer >= k, i.e. -c * v <= inner_low + outer - k
        candidate = Candidate(True, c, inner_low - k, outer)
    # The bound's numerator, computed in index arithmetic before the loop,
    # must not wrap either (index taken as 32 bits, as tile-prove-bounds does).
    low = high = candidate.constant + abs(c)
    for atom, coefficient in candidate.outer:
        bounds = ranges.of(atom)
        if bounds is None:
            return None
        ends = (coefficient * bounds[0], coefficient * bounds[1])
        low, high = low + min(ends), high + max(ends)
    if not -(1 << (INDEX_BITS - 1)) <= low <= high < (1 << (INDEX_BITS - 1)):
        return None
    return candidate


def _evaluate(value: ir.Value, known: dict) -> bool | None:
    """The i1 `value` from the candidates' values (`known`: cmpi -> bool), or None."""
    owner = value.owner if not isinstance(value, ir.BlockArgument) else None
    if owner is None:
        return None
    if owner.name == "arith.constant":
        return bool(ir.IntegerAttr(owner.attributes["value"]).value)
    if owner.name == "arith.cmpi":
        return known.get(owner.operation)
    if owner.name in ("arith.andi", "arith.ori", "arith.xori"):
        a, b = (_evaluate(v, known) for v in owner.operands)
        if owner.name == "arith.andi":
            return False if False in (a, b) else (True if (a, b) == (True, True) else None)
        if owner.name == "arith.ori":
            return True if True in (a, b) else (False if (a, b) == (False, False) else None)
        return None if None in (a, b) else a != b
    return None


def _condition_compares(value: ir.Value, depth: int = 0) -> list:
    """The cmpi ops an i1 condition combines (andi, ori, xori), or None
    where it depends on something else."""
    if isinstance(value, ir.BlockArgument) or depth > 16:
        return None
    owner = value.owner
    if owner.name == "arith.constant":
        return []
    if owner.name == "arith.cmpi":
        return [owner.operation]
    if owner.name in ("arith.andi", "arith.ori", "arith.xori"):
        parts = [_condition_compares(v, depth + 1) for v in owner.operands]
        return None if None in parts else parts[0] + parts[1]
    return None


def _is_i1(value: ir.Value) -> bool:
    return isinstance(value.type, ir.IntegerType) and ir.IntegerType(value.type).width == 1


def split_point(loop: ir.Operation, ranges: Ranges) -> tuple[ir.Value, dict] | None:
    """Emits (before the loop) the split point and returns it with the
    candidates' values before it (cmpi -> bool); None when no select folds."""
    bounds = ranges.of(loop.regions[0].blocks[0].arguments[0])
    if bounds is None or bounds[0] < 0:
        return None
    compares, candidates = [], {}
    for op in walk(loop):
        if op.name == "arith.select" and _is_i1(op.operands[0]):
            for compare in _condition_compares(op.operands[0]) or []:
                if compare not in compares:
                    compares.append(compare)
                    candidates[compare] = _candidate(compare, loop, ranges)
    known = {compare: c.value for compare, c in candidates.items() if c is not None}
    used = []
    for op in walk(loop):
        if op.name == "arith.select" and _is_i1(op.operands[0]) \
                and _evaluate(op.operands[0], known) is not None:
            used += [c for c in _condition_compares(op.operands[0]) if c in known and c not in used]
    if not used:
        return None
    point = None
    for compare in used:
        bound = candidates[compare].boundary()
        point = bound if point is None else arith.MinSIOp(point, bound).result
    lower, upper = loop.operands[0], loop.operands[1]
    point = arith.MaxSIOp(lower, arith.MinSIOp(point, upper).result).result
    return point, {compare: known[compare] for compare in used}


def _fold(copy: ir.Operation, values: dict, original_ops: list) -> None:
    """In the copy: candidates become constants, selects by constants
    their operand; identity stores and unused pure ops go."""
    copied = list(walk(copy))
    i1 = ir.IntegerType.get_signless(1)
    for original, op in zip(original_ops, copied):
        if original in values:
            with ir.InsertionPoint(op), op.location:
                constant = arith.ConstantOp(i1, int(values[original])).result
            op.results[0].replace_all_uses_with(constant)
            op.erase()
    for op in list(walk(copy)):
        if op.name in ("arith.andi", "arith.ori", "arith.xori") and _is_i1(op.results[0]):
            value = _evaluate(op.results[0], {})
            if value is not None:
                with ir.InsertionPoint(op), op.location:
                    constant = arith.ConstantOp(i1, int(value)).result
                op.results[0].replace_all_uses_with(constant)
                op.erase()
    for op in list(walk(copy)):
        if op.name == "arith.select" and _is_i1(op.operands[0]):
            value = _evaluate(op.operands[0], {})
            if value is not None:
                op.results[0].replace_all_uses_with(op.operands[1] if value else op.operands[2])
                op.erase()
    for op in list(walk(copy)):
        if op.name == "memref.store" and _stores_what_it_loaded(op):
            op.erase()
    _erase_unused(copy)


def _stores_what_it_loaded(store: ir.Operation) -> bool:
    """A memref.store of a value loaded from the same memref and indices,
    with only pure arith ops between the load and the store."""
    value = store.operands[0]
    if isinstance(value, ir.BlockArgument) or value.owner.name != "memref.load":
        return False
    load = value.owner
    if list(load.operands) != list(store.operands)[1:] or not _same(load.parent, store.parent):
        return False
    between, inside = False, []
    for op in store.operation.block.operations:
        if _same(op, load):
            between = True
            continue
        if _same(op, store):
            break
        if between:
            inside.append(op)
    return between and all(op.name.startswith(_PURE_PREFIXES) and not op.regions for op in inside)


def _erase_unused(root: ir.Operation) -> None:
    """Erases unused pure ops (arith, memref.load) and scf.parallel loops left
    with nothing but their terminator, until none is left."""
    def removable(op: ir.Operation) -> bool:
        if op.name == "scf.parallel":
            return not op.results and [o.name for o in op.regions[0].blocks[0].operations] == ["scf.reduce"]
        return (op.name.startswith(_PURE_PREFIXES) or op.name == "memref.load") and not op.regions \
            and bool(op.results)
    erase_unused(root, removable)


@dataclass(frozen=True)
class TileSplitLoops(TilePass):
    name: ClassVar[str] = "tile-split-loops"
    summary: ClassVar[str] = "Split loops before the first iteration where a select's condition may vary"

    # false: split nothing (tile-compile's choice when a split kernel spills
    # registers and the loops as written do not: compiler.py).
    enabled: bool = True

    def run(self, module: ir.Operation, state: PassState) -> None:
        if not self.enabled:
            return
        # A pipelined loop's peeled tail runs its last few iterations: left whole.
        loops = [op for op in walk(module) if op.name == "scf.for" and enclosing_kernel(op) is not None
                 and _constant(op.operands[2]) == 1 and not attributes.PIPELINE_TAIL.is_on(op)]
        for loop in loops:
            original_ops = list(walk(loop))
            ranges = Ranges()  # per loop: an earlier split erased values
            with ir.InsertionPoint(loop), loop.location:
                found = split_point(loop, ranges)
                if found is None:
                    continue
                point, values = found
                first = loop.clone()
            first.operands[1] = point
            loop.operands[0] = point
            for number, result in enumerate(first.results):
                loop.operands[3 + number] = result
            _fold(first, values, original_ops)
            state.remark(loop, f"{self.name}: the iterations before the first where a select's condition "
                               f"may differ between elements run in a copy of this loop with "
                               f"{len(values)} condition{'s' if len(values) != 1 else ''} folded away",
                         kind="info")
