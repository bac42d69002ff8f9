"""tile-insert-barriers: orders the program's own shared-memory accesses
between threads, as TileLang's thread-sync pass does.

A kernel body is a block-level program run by all its threads. When one op
writes a shared buffer and a later op reads it (or a read is followed by an
overwrite, or two writes follow each other), the threads of the later op may
touch elements another thread handled in the earlier one: a `gpu.barrier`
(a workgroup barrier) must separate them. tile-lower-to-gpu places barriers
around the accesses it generates itself; this pass adds one wherever the
program's accesses conflict and no barrier separates them yet, so a kernel
the lowering already orders gets none.

Accesses, per shared buffer (a `tile.alloc_shared`, seen through the
`memref.subview`s that select its stages):
* reads: `tile.gemm`'s A and B; `memref.load`/`vector.load` of it (a
  `T.Parallel` body); `tile.copy` or `tile.reduce` out of it;
* writes: `memref.store`/`vector.store` into it; `tile.copy` or `tile.reduce`
  into it;
* separators: `gpu.barrier`; and the accesses tile-lower-to-gpu fences itself,
  between a barrier before and one after (emitter.py `op_tile_copy`,
  `distributed_fill`): a `tile.copy` from global memory into shared memory and
  a `tile.fill` of a shared buffer;
* not counted: `tile.prefetch` copies in a pipelined loop's body
  (tile-pipeline), which the loop's own barrier scheme orders
  (software_pipeline.py); the buffers they fill are used by that loop only.
  The prologue's prefetch copies before the loop must follow every read of
  the stages still pending (where the loop runs again, inside an outer loop
  or a `while`, they overwrite stages its previous run read); nothing waits
  on them but their loop, whose first iteration starts with a barrier.

An op with regions other than `scf.for` (an `scf.parallel`, whose iterations
are independent by definition; an `scf.if`) counts as one access of everything
its body touches, and the barrier goes before it: a barrier inside a branch
would be divergent. A body of such an op that writes and then reads (or reads
and then writes) one shared buffer with no barrier between, outside an
`scf.parallel`, would need one inside it and is refused. An `scf.for` (or the
body of an `scf.while`, whose condition may not touch shared memory) is ordered in its own body; what one
iteration leaves pending is checked against the start of the next (the
loop's back edge): a conflict there puts a barrier at the end of the body.
Where what precedes the loop conflicts with the start of its body, the
barrier goes before the loop, not into every iteration.

Whether two accesses are made by one thread is not analysed (two `T.Parallel`
loops over the same fragment touching the same element are ordered anyway):
every conflicting pair gets a barrier, as two accesses of different threads.

Input invariant: tile-verify holds; tile-pipeline has run (it marks the
copies it orders with `tile.prefetch`).
Output invariant: inside each tile.kernel, between any shared-memory write
and a later read or write of the same buffer, and between any read and a
later write, along every path (including loop back edges), there is a
`gpu.barrier` or an access tile-lower-to-gpu fences with barriers.
Sequential semantics are unchanged (a barrier is a no-op for one thread).

Options: none.

Example (P written by a T.Parallel, then read by a gemm):

    scf.parallel (%i, %j) = ... { ...; memref.store %p, %P_s[%i, %j] ...; scf.reduce }
    "tile.gemm"(%P_s, %V_s, %O) ...
    // becomes
    scf.parallel (%i, %j) = ... { ...; memref.store %p, %P_s[%i, %j] ...; scf.reduce }
    gpu.barrier
    "tile.gemm"(%P_s, %V_s, %O) ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir
from mlir.dialects import gpu

from tilemlir.dialects import attributes, tile
from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass

READ, WRITE = "read", "write"
PROLOGUE_WRITE = "prologue write"  # a pipeline prologue's prefetch copy (own_accesses)

# Ops that take a shared buffer without touching its elements.
_VIEWS = ("memref.subview", "memref.dim", "memref.cast", "memref.reinterpret_cast",
          "memref.collapse_shape", "memref.expand_shape", "memref.extract_strided_metadata")

# Pending accesses: shared buffer -> the kinds made since the last barrier.
Pending = dict


class Unordered(Exception):
    """A conflict that needs a barrier where none may go."""

    def __init__(self, op: ir.Operation, message: str):
        super().__init__(message)
        self.op = op


# In a kernel with per-thread code, global memory is ordered too: its threads
# exchange values through it as through shared memory (set by KernelOrder).
_ORDERED_LEVELS = {"levels": (tile.SHARED,)}


def shared_root(value: ir.Value) -> ir.Value | None:
    """The buffer a shared value views (through memref.subview); None when not
    shared (or, in a kernel with per-thread code, global)."""
    if not isinstance(value.type, ir.MemRefType) or tile.memory_level(value.type) not in _ORDERED_LEVELS["levels"]:
        return None
    owner = value.owner
    while isinstance(owner, ir.OpView | ir.Operation) and owner.name in _VIEWED_THROUGH:
        value = owner.operands[0]
        owner = value.owner
    return value


# Ops whose result is a view of their first operand's memory.
_VIEWED_THROUGH = ("memref.subview", "memref.reinterpret_cast", "memref.cast", "memref.collapse_shape",
                   "memref.expand_shape", "memref.view", "memref.transpose", "memref.assume_alignment")


def fenced_by_lowering(op: ir.Operation) -> bool:
    """tile-lower-to-gpu emits this access between two barriers (emitter.py:
    `op_tile_copy` global -> shared, `distributed_fill`)."""
    if op.name == "tile.copy" and not attributes.PREFETCH.is_on(op):
        return (tile.memory_level(op.operands[1].type) == tile.SHARED
                and tile.memory_level(op.operands[0].type) == tile.GLOBAL)
    return op.name == "tile.fill" and tile.memory_level(op.operands[0].type) == tile.SHARED


def own_accesses(op: ir.Operation) -> list[tuple[ir.Value, str]]:
    """(buffer, kind) of the shared accesses `op` itself makes (not its regions')."""
    name = op.name
    if name in _VIEWS or (name == "tile.copy" and attributes.PREFETCH.is_on(op) and _in_pipelined_loop(op)):
        return []
    if name == "tile.copy" and attributes.PREFETCH.is_on(op):  # the prologue's: it overwrites a stage
        root = shared_root(op.operands[1])
        return [] if root is None else [(root, PROLOGUE_WRITE)]
    operands = list(op.operands)
    if name in ("memref.load", "vector.load", "tile.gemm"):
        read, written = operands[:2] if name == "tile.gemm" else operands[:1], []
    elif name in ("memref.store", "vector.store"):
        read, written = [], operands[1:2]
    elif name in ("tile.copy", "tile.reduce"):
        read, written = operands[:1], operands[1:2]
    elif name == "tile.fill":
        read, written = [], operands[:1]
    else:  # anything else handed a shared buffer may read and write it
        read = written = operands
    found = []
    for values, kind in ((read, READ), (written, WRITE)):
        for value in values:
            root = shared_root(value)
            if root is not None:
                found.append((root, kind))
    return found


def _in_pipelined_loop(op: ir.Operation) -> bool:
    """A prefetch copy in its pipelined loop's body (ordered by the loop's own
    barriers), not one of the prologue's before it."""
    from tilemlir.irutil import parent_ops

    return any(parent.name == "scf.for" and attributes.PIPELINED.is_on(parent) for parent in parent_ops(op))


def conflicts(pending: Pending, accesses) -> bool:
    return any(READ in pending.get(root, ()) if kind == PROLOGUE_WRITE else
               WRITE in pending.get(root, ()) or (kind == WRITE and pending.get(root))
               for root, kind in accesses)


def add(pending: Pending, accesses) -> None:
    for root, kind in accesses:
        if kind != PROLOGUE_WRITE:  # only its pipelined loop reads it, after a barrier of its own
            pending.setdefault(root, set()).add(kind)


def union(a: Pending, b: Pending) -> Pending:
    merged = {root: set(kinds) for root, kinds in a.items()}
    for root, kinds in b.items():
        merged.setdefault(root, set()).update(kinds)
    return merged


def compound_accesses(op: ir.Operation, refuse: bool = True) -> list[tuple[ir.Value, str]]:
    """Every shared access inside `op` (an op with regions other than scf.for),
    refused (with `refuse`) where its body would need a barrier inside: a
    write and a later read or write of one buffer (or a read and a later
    write) on one thread's path with no barrier between, outside an
    scf.parallel (whose iterations are independent). In per-thread code a
    branch is not refused: a thread that reads and writes what it owns under
    `if tx < n` is that code's everyday case, and no barrier can go inside."""
    found: list = []
    pending: Pending = {}
    for inner in walk(op):
        accesses = own_accesses(inner)
        found.extend(accesses)
        if inner.name == "gpu.barrier" or fenced_by_lowering(inner):
            pending = {}
            continue
        if refuse and op.name != "scf.parallel" and conflicts(pending, accesses):
            shared = any(tile.memory_level(root.type) == tile.SHARED for root, _ in accesses)
            raise Unordered(inner, f"tile-insert-barriers: this access of {'a shared buffer' if shared else 'global memory'} "
                                   f"conflicts with an earlier one in the same {op.name} (other "
                                   "threads may touch what one touched) and a barrier there "
                                   f"would be divergent; move one of them out of the {op.name}")
        add(pending, accesses)
    return found


@dataclass(frozen=True)
class TileInsertBarriers(TilePass):
    name: ClassVar[str] = "tile-insert-barriers"
    summary: ClassVar[str] = ("Insert gpu.barrier between conflicting shared-memory accesses "
                              "of a kernel body (TileLang's thread sync)")

    def run(self, module: ir.Operation, state: PassState) -> None:
        for kernel in [op for op in walk(module) if op.name == "tile.kernel"]:
            per_thread = any(attributes.PER_THREAD.is_on(op) for op in walk(kernel))
            _ORDERED_LEVELS["levels"] = (tile.SHARED, tile.GLOBAL) if per_thread else (tile.SHARED,)
            try:
                KernelOrder().order_block(kernel.regions[0].blocks[0], {})
            except Unordered as error:
                state.error(error.op, str(error))
            finally:
                _ORDERED_LEVELS["levels"] = (tile.SHARED,)


class KernelOrder:
    """The barriers of one kernel body; `_heads` keeps each loop body's
    accesses before its first barrier (computed once: the walk stays linear
    in the nesting depth)."""

    def __init__(self):
        self._heads: dict = {}
        self._varying: set | None = None  # in a tile.per_thread region: the values that vary by thread
        self._thread = None  # and its thread index, when it has one dim

    def order_block(self, block: ir.Block, pending: Pending) -> Pending:
        """Inserts the barriers `block` needs, entered with `pending`; returns
        what is pending at its end."""
        for op in [o.operation for o in block.operations]:
            if attributes.PER_THREAD.is_on(op):
                pending = self.order_per_thread(op, pending)
            elif op.name == "scf.if" and self._varying is not None and op.operands[0] not in self._varying:
                pending = self.order_uniform_branch(op, pending)
            elif op.name in LOOPS and not self.divergent(op):
                pending = self.order_loop(op, pending)
            elif op.name == "gpu.barrier" or fenced_by_lowering(op):
                pending = {}
            else:
                accesses = self.compound(op) if op.regions else own_accesses(op)
                if conflicts(pending, accesses):
                    insert_barrier_before(op)
                    pending = {}
                add(pending, accesses)
        return pending

    def order_uniform_branch(self, branch: ir.Operation, pending: Pending) -> Pending:
        """In per-thread code, an `if` every thread decides alike: its
        branches are ordered as blocks (a barrier inside is reached by all)."""
        ends = [self.order_block(region.blocks[0], union(pending, {}))
                for region in branch.regions if len(region.blocks)]
        if len(ends) == 1:  # no else: the condition may be false
            ends.append(pending)
        return union(*ends)

    def compound(self, op: ir.Operation) -> list[tuple[ir.Value, str]]:
        """Every shared access of `op`, an op with regions the barriers do not
        enter; refused where it needs one inside. In per-thread code such an
        op is a branch on the thread or a loop whose trip count varies by
        thread: a barrier inside it, or two conflicting accesses in it other
        than a thread's own element (an index one-to-one in the thread),
        are refused."""
        if self._varying is None:
            return compound_accesses(op)
        accesses = compound_accesses(op, refuse=False)
        if op.name == "scf.if" and op.operands[0] not in self._varying:
            return accesses  # every thread decides alike (a loop's head: order_uniform_branch orders it)
        self.refuse_divergent_conflicts(op)
        if op.name in LOOPS:  # (a barrier in it was refused above)
            head, pending = [], {}
            for inner in walk(op):
                head.extend(own_accesses(inner))
            add(pending, accesses)
            if conflicts(pending, head):
                raise Unordered(op, "tile-insert-barriers: this loop's trip count varies by thread and one "
                                    "iteration's shared-memory accesses conflict with the next's; the barrier "
                                    "between them would not be reached by every thread: make the trip count "
                                    "the same for every thread and skip the work under an `if`")
        return accesses

    def refuse_divergent_conflicts(self, op: ir.Operation) -> None:
        """Under a branch on the thread (or in a divergent loop), no barrier
        can separate two accesses: refused unless each pair that conflicts
        touches the thread's own element (both indexed alike, one-to-one in
        the thread: `s[tx] = ...; ... s[tx]`)."""
        seen: list = []
        # Values made inside `op` (a loop's variable, what an iteration
        # computes) differ between its iterations: not an index's offset.
        inside = {v for inner in walk(op) if inner != op for v in inner.results} | {
            a for inner in walk(op) for r in inner.regions for b in r.blocks for a in b.arguments}
        for inner in walk(op):
            if inner.name == "gpu.barrier":
                raise Unordered(inner, "tile-insert-barriers: T.sync_threads under a condition on the thread (or in "
                                       "a loop whose trip count varies by thread): not every thread would reach it")
            for root, kind in own_accesses(inner):
                index = _element_index(inner)
                for other_root, other_kind, other_index, other_op in seen:
                    if other_root != root or (kind == READ and other_kind == READ) or other_op == inner:
                        continue
                    if inner.name == other_op.name == "memref.atomic_rmw":  # atomics are ordered among themselves
                        continue
                    if index is not None and index == other_index and self.own_element(index, inside):
                        continue
                    raise Unordered(inner, "tile-insert-barriers: under a condition on the thread, this access "
                                           "of memory conflicts with an earlier one in the same branch that may be "
                                           "another thread's (no barrier can go between them there); move the "
                                           "write out of the `if`, or index both by the thread alike (s[tx])")
                seen.append((root, kind, index, inner))

    def own_element(self, index: tuple, inside: set) -> bool:
        """Whether an element index is one-to-one in the thread: one of its
        dims is the thread's index (the region's only one), times a nonzero
        constant, plus or minus a value the same for every thread and every
        iteration of the branch or loop checked (nothing made inside it)."""
        return any(_one_to_one(value, self._thread, self._varying | inside) for value in index)

    def divergent(self, loop: ir.Operation) -> bool:
        """In per-thread code: whether `loop`'s trip count (or a `while`'s
        condition) may vary by thread."""
        if self._varying is None:
            return False
        if loop.name == "scf.while":
            return any(v in self._varying for v in loop.regions[0].blocks[0].operations[
                len(loop.regions[0].blocks[0].operations) - 1].operands) or \
                any(v in self._varying for v in loop.operands)
        return any(v in self._varying for v in list(loop.operands)[:3])

    def order_per_thread(self, region: ir.Operation, pending: Pending) -> Pending:
        """A tile.per_thread region: its body is ordered as a block, barriers
        at the points every thread reaches (not in branches or loops whose
        trip count varies by thread); the region counts as its accesses."""
        self._varying = varying_values(region)
        arguments = list(region.regions[0].blocks[0].arguments)
        self._thread = arguments[0] if len(arguments) == 1 else None
        try:
            return self.order_block(region.regions[0].blocks[0], pending)
        finally:
            self._varying = None

    def order_loop(self, loop: ir.Operation, pending: Pending) -> Pending:
        body = loop_body(loop)
        head = self.head(loop)
        if conflicts(pending, head):
            insert_barrier_before(loop)  # once, not in every iteration
            pending = {}
        at_end = self.order_block(body, union(pending, {}))
        if conflicts(at_end, head):  # the back edge
            insert_barrier_before(body.operations[len(body.operations) - 1].operation)
            at_end = {}
        # Zero iterations leave what came before pending.
        return union(pending, at_end)

    def head(self, loop: ir.Operation) -> list[tuple[ir.Value, str]]:
        """The accesses of `loop`'s body before its first barrier: one it has,
        or the one `order_block` puts before the body's first conflict of its
        own (a nested loop's barriers do not count: it may run no iteration).
        What is pending when the body starts must not conflict with these.
        The same before and after `order_block` ran on the body: the first
        barrier it inserts is at that first conflict."""
        if loop in self._heads:
            return self._heads[loop]
        own: Pending = {}
        found: list = []
        for op in [o.operation for o in loop_body(loop).operations]:
            if op.name == "gpu.barrier" or fenced_by_lowering(op):
                break
            if op.name in LOOPS and not self.divergent(op):
                inner_head = self.head(op)
                if conflicts(own, inner_head):
                    break  # a barrier goes before this loop
                found.extend(inner_head)
                accesses = [access for inner in walk(op) if not fenced_by_lowering(inner)
                            for access in own_accesses(inner)]
            else:
                accesses = self.compound(op) if op.regions else own_accesses(op)
                if conflicts(own, accesses):
                    break
                found.extend(accesses)
            add(own, accesses)
        self._heads[loop] = found
        return found


# Loops ordered in their own bodies: scf.for, and scf.while (a `while` of
# block-level code), whose condition region must not touch shared memory.
LOOPS = ("scf.for", "scf.while")


def loop_body(loop: ir.Operation) -> ir.Block:
    """The block a loop repeats (an scf.while's after region); refuses an
    scf.while whose condition touches shared memory."""
    if loop.name != "scf.while":
        return loop.regions[0].blocks[0]
    for op in loop.regions[0].blocks[0].operations:
        for inner in walk(op.operation):
            if own_accesses(inner):
                raise Unordered(inner, "tile-insert-barriers: a `while` condition that reads or writes shared "
                                       "memory is not supported: compute the condition from a T.alloc_var")
    return loop.regions[1].blocks[0]


def _element_index(op: ir.Operation) -> tuple | None:
    """The indices of a memref.load / store / atomic_rmw (structural keys, so
    that two computations of `tx + 1` compare equal); None for other ops."""
    operands = list(op.operands)
    if op.name == "memref.load":
        return tuple(_key(v) for v in operands[1:])
    if op.name in ("memref.store", "memref.atomic_rmw"):
        return tuple(_key(v) for v in operands[2:])
    return None


def _key(value: ir.Value):
    """A value's computation as a nested tuple (constants by value, other
    producers by name and operands; block arguments and the rest by identity)."""
    owner = value.owner
    if isinstance(owner, ir.OpView | ir.Operation):
        if owner.name == "arith.constant":
            return ("const", str(owner.attributes["value"]))
        if owner.name in ("arith.index_cast", "arith.index_castui"):  # narrowing casts wrap: not one-to-one
            narrow = any(isinstance(t, ir.IntegerType) and t.width < 32
                         for t in (owner.operands[0].type, owner.results[0].type))
            return (owner.name, _key(owner.operands[0]), "narrow" if narrow else "wide")
        if owner.name.startswith("arith.") and len(owner.results) == 1:
            return (owner.name, *(_key(v) for v in owner.operands))
    return ("value", value)


def _one_to_one(key, thread, varying: set) -> bool:
    """Whether `key` (`_key`) is thread * c + u: c a nonzero constant, u the
    same for every thread."""
    if thread is None:
        return False
    if key == ("value", thread):
        return True
    if key[0] in ("arith.addi", "arith.subi"):
        a, b = key[1], key[2]
        return (_one_to_one(a, thread, varying) and _uniform(b, varying)) or \
            (key[0] == "arith.addi" and _one_to_one(b, thread, varying) and _uniform(a, varying))
    if key[0] == "arith.muli":
        a, b = key[1], key[2]
        nonzero = [k for k in (a, b) if k[0] == "const" and not k[1].startswith("0 ")]
        return any(_one_to_one(x, thread, varying) for x in (a, b)) and bool(nonzero)
    if key[0] in ("arith.index_cast", "arith.index_castui"):  # to index or from i32/i64: no truncation
        return key[-1] == "wide" and _one_to_one(key[1], thread, varying)
    return False


def _uniform(key, varying: set) -> bool:
    if key[0] == "const":
        return True
    if key[0] == "value":
        return key[1] not in varying
    return all(_uniform(k, varying) for k in key[1:])


def varying_values(region: ir.Operation) -> set:
    """The values of a tile.per_thread region that may differ between threads:
    its induction variables (the thread's indices), what is loaded from each
    thread's own memory (memref.alloca), and what is computed from them: a
    loop's induction variable where its bounds vary, a loop's or branch's
    results where its bounds, condition or yielded values vary (an
    `scf.while`'s wherever anything in it varies)."""
    varying = set(region.regions[0].blocks[0].arguments)

    def yielded(block: ir.Block, i: int) -> ir.Value:
        return block.operations[len(block.operations) - 1].operands[i]

    changed = True
    while changed:
        changed = False
        for op in walk(region):
            if op == region:
                continue
            operands = list(op.operands)
            new: list = []
            if op.name == "scf.for":
                body = op.regions[0].blocks[0]
                bounds = any(v in varying for v in operands[:3])
                if bounds:
                    new.append(body.arguments[0])
                for i, (init, arg, result) in enumerate(zip(operands[3:], list(body.arguments)[1:], op.results)):
                    if bounds or init in varying or yielded(body, i) in varying:
                        new += [arg, result]
            elif op.name == "scf.if":
                condition = operands[0] in varying
                for i, result in enumerate(op.results):
                    if condition or any(yielded(b, i) in varying for r in op.regions for b in r.blocks):
                        new.append(result)
            elif op.regions:
                if any(v in varying for inner in walk(op) for v in inner.operands):
                    new = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.arguments)]
            elif any(v in varying for v in operands) or (
                    op.name == "memref.load" and tile.memory_level(operands[0].type) == tile.FRAGMENT):
                new = list(op.results)
            new = [v for v in new if v not in varying]
            if new:
                varying.update(new)
                changed = True
    return varying


def insert_barrier_before(op: ir.Operation) -> None:
    with ir.InsertionPoint(op), op.location:
        gpu.BarrierOp()
