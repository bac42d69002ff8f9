"""The generic lowering of register fragments of any layout
(`tilemlir.passes.fragment_layout`): T.Parallel loops, element accesses,
reductions, copies, layout conversions and branches. A mixin of the
`KernelEmitter`, family-neutral: cross-lane traffic is `gpu.shuffle` and
workgroup memory, which every family lowers, unless the family's hooks
exchange lanes their own way (`LoweringHooks.reduce_across_lanes`).

* `T.Parallel` (`scf.parallel`) runs its body once per register slot of its
  driver fragment (or, over memory only, of a `blocked` layout of its index
  space), with the induction variables bound to that slot's element indices;
  fragment loads and stores in it are register reads and writes. Threads that
  hold replicas of the same elements run the body too (their fragments stay
  identical); only the first replica stores to memory.
* `tile.reduce` combines a thread's slots, then across lanes (the family's
  `reduce_across_lanes`; by default xor shuffles), then across waves through the kernel's shared scratch
  (`tile.scratch`, sized by tile-infer-layout); a layout whose reduced and
  kept threads are not separable goes through the scratch entirely. Every
  thread combines in the same order, so replicas agree bit for bit.
* a fragment read in a layout other than its own is converted through the
  scratch: its owners store it by logical index, then each thread loads the
  elements its new layout gives it (between barriers).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, scf, vector
from mlir.dialects import math as mathd

from tilemlir.dialects import attributes, tile
from tilemlir.passes.fragment_inference import (
    access_layout,
    conversions,
    loop_layout,
    memory_operand_layout,
    parallel_loop,
)
from tilemlir.passes.fragment_layout import (
    UNIT_DIM,
    FragmentLayout,
    blocked_layout,
    blocked_params,
    read_layout,
    reduce_plan,
)
from tilemlir.passes.gpu_builders import (
    add,
    and_,
    bit_width,
    const_index,
    convert,
    known_multiple,
    load_or_zero,
    load_vector_guarded,
    memref_dims,
    mul,
    store_vector_guarded,
    swizzled_column,
    udiv,
    ult,
    urem,
    zero_of,
)
from tilemlir.passes.lower_to_gpu.api import (
    Fragment,
    FragmentRun,
    LoweringError,
    RegisterFragment,
    constant_int,
    guarded,
)
from tilemlir.passes.verify import SHIFTING_VIEW_OPS, VIEW_OPS, root_of


@dataclass
class ParallelContext:
    """The T.Parallel whose body is being emitted, at one register slot."""

    op: ir.Operation
    ivs: list[ir.Value]
    layout: FragmentLayout
    owner: ir.Value | None  # i1: this thread stores to memory (None: every thread)
    offsets: tuple[int, ...] = ()
    overrides: dict = field(default_factory=dict)  # fragment -> its converted copy
    # (id of a fragment's placement, the loop dims indexing it) -> that
    # placement, checked against the loop's layout once per loop, not per
    # element (the check is linear in the thread's registers).
    checked: dict = field(default_factory=dict)


def _window_index(window: tuple[int, ...], offsets: list[ir.Value], rank: int):
    """The map from a window's element indices (its dims `window` of a buffer
    of `rank` dims) to the buffer's, at `offsets` (zeros when none)."""
    offsets = list(offsets) or [const_index(0)] * rank

    def index(indices: list[ir.Value]) -> list[ir.Value]:
        full = list(offsets)
        for d, position in zip(window, indices):
            full[d] = add(offsets[d], position)
        return full
    return index


def _memory_uses(buffer: ir.Value):
    """The uses of the memory `buffer` views: of its root buffer and of every
    view of it (the views themselves left out)."""
    pending = [root_of(buffer)[0]]
    while pending:
        for use in pending.pop().uses:
            if use.owner.name in VIEW_OPS or use.owner.name in SHIFTING_VIEW_OPS:
                pending.append(use.owner.results[0])
            else:
                yield use


def _accessed_elsewhere(store: ir.Operation) -> bool:
    """Whether any op but `store` uses the memory it stores to."""
    return any(use.owner.operation != store.operation for use in _memory_uses(store.operands[1]))


def _under_divergent_branch(op: ir.Operation) -> bool:
    """Whether `op` lies under a branch (scf.if, scf.while) of its tile.kernel
    whose condition reads memory the kernel writes (`_reads_written_memory`):
    threads reading it at different times may take different ways."""
    from tilemlir.irutil import parent_ops

    for parent in parent_ops(op):
        if parent.name == "tile.kernel":
            return False
        if parent.name == "scf.if" and _reads_written_memory(parent.operands[0], set()):
            return True
        if parent.name == "scf.while":
            condition = [o.operation for o in parent.regions[0].blocks[0].operations][-1]
            if _reads_written_memory(condition.operands[0], set()):
                return True
        if parent.name == "scf.index_switch":
            return True
    return False


_WRITERS = ("memref.store", "memref.atomic_rmw", "vector.store", "tile.copy", "tile.fill", "tile.reduce")


def _reads_written_memory(value: ir.Value, seen: set) -> bool:
    """Whether `value` depends on a load of memory some op of the program
    writes (a loop's carried value through its initial and yielded values)."""
    key = value
    if key in seen:
        return False
    seen.add(key)
    owner = value.owner
    if isinstance(owner, ir.Block):  # a block argument: a loop's carried value, or an index
        parent = owner.owner
        if parent.name in ("scf.for", "scf.while"):
            number = value.arg_number - (1 if parent.name == "scf.for" else 0)
            if number < 0:
                return False
            inits = list(parent.operands)[3:] if parent.name == "scf.for" else list(parent.operands)
            terminators = [[o.operation for o in block.operations][-1]
                           for region in parent.regions for block in region.blocks]
            candidates = [inits[number]] if number < len(inits) else []
            candidates += [t.operands[number + (1 if t.name == "scf.condition" else 0)] for t in terminators
                           if len(t.operands) > number + (1 if t.name == "scf.condition" else 0)]
            return any(_reads_written_memory(c, seen) for c in candidates)
        return False
    op = owner.operation
    if op.name in ("memref.load", "vector.load"):
        return _written(op.operands[0])
    return any(_reads_written_memory(operand, seen) for operand in op.operands)


def _written(buffer: ir.Value) -> bool:
    """Whether any op writes the memory `buffer` views."""
    return any(use.owner.name in _WRITERS and not (use.owner.name == "tile.copy" and use.operand_number == 0)
               for use in _memory_uses(buffer))


def _eq_zero(value: ir.Value) -> ir.Value:
    return arith.CmpIOp(arith.CmpIPredicate.eq, value, const_index(0)).result


# One step of each tile.reduce kind: (float op, integer op). max/min ignore a
# NaN operand (arith.maxnumf: v_max_f32 on AMD); maximum/minimum propagate it
# (arith.maximumf: compares and selects around the max on AMD).
_COMBINERS = {
    "sum": (arith.AddFOp, arith.AddIOp),
    "max": (arith.MaxNumFOp, arith.MaxSIOp),
    "min": (arith.MinNumFOp, arith.MinSIOp),
    "maximum": (arith.MaximumFOp, arith.MaxSIOp),
    "minimum": (arith.MinimumFOp, arith.MinSIOp),
}


def _combine(kind: str, element: ir.Type, a: ir.Value, b: ir.Value) -> ir.Value:
    float_op, int_op = _COMBINERS[kind]
    return (float_op if isinstance(element, ir.FloatType) else int_op)(a, b).result


def _combine_all(kind: str, element: ir.Type, values: list[ir.Value]) -> ir.Value:
    """`values` (at least one) combined by `kind`. A float sum adds halves as
    vectors, [v0..v(h-1)] + [vh..v(2h-1)], until one value is left (an odd
    one out joins the next round): log2(n) dependent steps instead of n - 1,
    and vector adds that chips with packed f32 (gfx90a, gfx942, gfx950: two
    adds a `v_pk_add_f32`) issue two at a time. The order of a reduction's
    additions is not part of tile.reduce's meaning (its lanes combine as a
    tree too). The others combine in order: max and min have no packed f32
    form, and llc fuses their chains into three-operand `v_max3_f32`."""
    if kind != "sum" or not isinstance(element, ir.FloatType):
        value = values[0]
        for other in values[1:]:
            value = _combine(kind, element, value, other)
        return value
    while len(values) > 1:
        half, odd = divmod(len(values), 2)
        if half == 1:
            combined = [arith.AddFOp(values[0], values[1]).result]
        else:
            type_ = ir.VectorType.get([half], element)
            low = vector.FromElementsOp(type_, values[:half]).result
            high = vector.FromElementsOp(type_, values[half:2 * half]).result
            total = arith.AddFOp(low, high).result
            combined = [vector.ExtractOp(total, [], [i]).result for i in range(half)]
        values = combined + values[2 * half:] if odd else combined
    return values[0]


# Memref arguments are assumed to start at least this aligned (cudaMalloc and
# hipMalloc give 256 bytes; torch and NumPy buffers handed to our launchers
# come from them or are copied into them).
ASSUMED_BASE_ALIGNMENT = 16


def vector_alignment(buffer: ir.Value, indices: list[ir.Value], count: int) -> int | None:
    """Bytes a vector access of `count` elements at `indices` is provably
    aligned to (their whole size, at most ASSUMED_BASE_ALIGNMENT), or None:
    the layout's strides are static, its start (through any subviews of a
    kernel argument) and every index's contribution are multiples of `count`
    elements. NVIDIA splits vector accesses it cannot prove aligned into
    scalar ones."""
    memref_type = ir.MemRefType(buffer.type)
    if memref_type.memory_space is not None:
        return None  # shared memory: where the backend placed it is not known here
    element_bytes = bit_width(memref_type.element_type) // 8
    size = count * element_bytes
    if element_bytes == 0 or size > ASSUMED_BASE_ALIGNMENT or ASSUMED_BASE_ALIGNMENT % size:
        return None
    start = _start_multiple(buffer)
    if start is None or start % count:
        return None
    strides, _ = memref_type.get_strides_and_offset()
    for index, stride in zip(indices, strides):
        if stride == ir.ShapedType.get_dynamic_stride_or_offset():
            return None
        if (known_multiple(index) * stride) % count:
            return None
    return size


def _start_multiple(buffer: ir.Value, depth: int = 0) -> int | None:
    """What a memref's first element's offset from its allocation (in
    elements) is known to be a multiple of: the static offset of its layout,
    or, for a subview (a rank-reducing copy's window), its source's start
    plus its offsets times the source's static strides; None: unknown."""
    memref_type = ir.MemRefType(buffer.type)
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    _, offset = memref_type.get_strides_and_offset()
    if offset != dynamic:
        return offset or (1 << 40)
    owner = buffer.owner
    if depth > 8 or not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "memref.subview":
        return None
    source = owner.operands[0]
    base = _start_multiple(source, depth + 1)
    source_strides, _ = ir.MemRefType(source.type).get_strides_and_offset()
    if base is None or dynamic in source_strides:
        return None
    static_offsets = list(ir.DenseI64ArrayAttr(owner.attributes["static_offsets"]))
    dynamic_offsets = iter(list(owner.operands)[1:1 + sum(1 for o in static_offsets if o == dynamic)])
    multiple = base
    for static, stride in zip(static_offsets, source_strides):
        known = known_multiple(next(dynamic_offsets)) if static == dynamic else (static or (1 << 40))
        multiple = math.gcd(multiple, known * stride)
    return multiple


def _pack_bits(value: ir.Value, mask: int, removed: int) -> ir.Value:
    """The bits of `value` under `mask`, without those of `removed`, packed
    down (a thread id with some bits dropped, as a dense index)."""
    kept = [b for b in range(mask.bit_length()) if mask >> b & 1 and not removed >> b & 1]
    runs: list[list[int]] = []
    for bit in kept:
        if runs and runs[-1][-1] + 1 == bit:
            runs[-1].append(bit)
        else:
            runs.append([bit])
    total, position = None, 0
    for run in runs:
        piece = urem(udiv(value, 1 << run[0]), 1 << len(run))
        piece = mul(piece, 1 << position) if position else piece
        total = piece if total is None else add(total, piece)
        position += len(run)
    return const_index(0) if total is None else total


def window_dims(copy: ir.Operation, big_rank: int, small_rank: int) -> tuple[int, ...]:
    """The dims of the higher-rank side a rank-reducing tile.copy's window
    spans (`tile.window`, default the trailing ones)."""
    dims = attributes.WINDOW.read(copy)
    return dims if dims is not None else tuple(range(big_rank - small_rank, big_rank))


def contiguous_accesses(body_ops: list, ivs: list[ir.Value], fragments: dict) -> dict:
    """The loads and stores at the top of a T.Parallel body that touch
    consecutive elements of memory (not fragments) as the last induction
    variable steps by 1: the last index is that variable plus values that do
    not depend on it, the other indices do not depend on it. A load after a
    store to the same buffer, or a store before a load of it, keeps its
    element accesses (the body's own order must hold), as does a store before
    any other access of its buffer (an atomic) and a load after a write of it.

    Also the `scf.if`s at the top of the body whose condition does not
    depend on that variable and whose branch is such a store and values
    computed from registers alone (`guarded_store`), the body's only access
    to that buffer: an epilogue storing only the rows that are outputs (a
    convolution's border rows are not) stores a row's elements under one
    condition, one vector store.

    Returns {access: None, scf.if: its store}."""
    from tilemlir.irutil import walk

    last = ivs[-1]
    dependent = {last}
    # What depends on it, to a fixed point: an op with regions (an scf.if
    # yielding values, a loop carrying them) depends where an op inside does.
    nested_ops = [nested for inner in body_ops for nested in walk(inner)]
    reads = [(list(nested.results), [operand for op in (walk(nested) if len(nested.regions) else [nested])
                                     for operand in op.operands]) for nested in nested_ops]
    changed = True
    while changed:
        changed = False
        for results, operands in reads:
            if results and results[0] not in dependent and any(operand in dependent for operand in operands):
                dependent.update(results)
                changed = True

    def unit_stride(value: ir.Value) -> bool:
        if value == last:
            return True
        owner = value.owner
        if not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "arith.addi":
            return False
        a, b = owner.operands
        return (unit_stride(a) and b not in dependent) or (unit_stride(b) and a not in dependent)

    def buffer_of(op) -> ir.Value:
        return op.operands[0] if op.name == "memref.load" else op.operands[1]

    def uses(op, buffer: ir.Value) -> bool:
        return any(operand == buffer for operand in op.operands)

    body = set(nested_ops)
    found = {}
    for inner in body_ops:
        store = guarded_store(inner, fragments)
        if store is not None and inner.operands[0] not in dependent:
            indices = list(store.operands)[2:]
            # Its memory touched by nothing else in the body (a load, an atomic, another store, through any view).
            only = not any(use.owner.operation != store and use.owner.operation in body
                           for use in _memory_uses(store.operands[1]))
            if indices and unit_stride(indices[-1]) and not any(i in dependent for i in indices[:-1]) and only:
                found[inner] = store
            continue
        if inner.name not in ("memref.load", "memref.store") or buffer_of(inner) in fragments:
            continue
        indices = list(inner.operands)[1:] if inner.name == "memref.load" else list(inner.operands)[2:]
        if not indices or not unit_stride(indices[-1]) or any(i in dependent for i in indices[:-1]):
            continue
        # Made once for the run, a load before anything before it in the body
        # that may write its buffer (a store, an atomic) and a store after
        # anything after it that touches its buffer would reorder them.
        buffer = buffer_of(inner)
        position = nested_ops.index(inner)
        if inner.name == "memref.load":
            conflicts = [op for op in nested_ops[:position] if uses(op, buffer) and op.name != "memref.load"]
        else:
            conflicts = [op for op in nested_ops[position + 1:] if uses(op, buffer)]
        if conflicts:
            continue
        found[inner] = None
    return found


# Integer divisions: hoisted out of the branch that guards them, a divisor
# the condition kept from being 0 would be undefined behaviour (and LLVM then
# drops the condition). By a constant other than 0 and -1 (INT_MIN / -1
# overflows) one is defined for every dividend (`safe_division`).
DIVISIONS = ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.ceildivsi", "arith.ceildivui",
             "arith.floordivsi")


def safe_division(op) -> bool:
    """An integer division or remainder defined whatever its dividend: by a
    constant divisor other than 0 and -1."""
    divisor = op.operands[1].owner
    if isinstance(divisor, ir.Block) or divisor.operation.name != "arith.constant":
        return False
    value = divisor.attributes["value"]
    return isinstance(value, ir.IntegerAttr) and value.value not in (0, -1)


def guarded_store(op, fragments: dict):
    """The one memref.store to memory of an `scf.if` with no results and no
    else branch whose branch otherwise only computes values from registers
    and constants (arith and math ops but integer divisions by what may be
    0 or -1, loads of fragments), each safe to compute whatever the
    condition; else None."""
    if op.name != "scf.if" or list(op.results) or len(op.regions[1].blocks) \
            and any(inner.name != "scf.yield" for inner in op.regions[1].blocks[0].operations):
        return None
    stores = []
    for inner in op.regions[0].blocks[0].operations:
        inner = inner.operation
        if inner.name == "memref.store" and inner.operands[1] not in fragments:
            stores.append(inner)
        elif inner.name == "memref.load" and inner.operands[0] in fragments or inner.name == "scf.yield":
            continue
        elif not inner.name.startswith(("arith.", "math.")) or len(inner.regions) \
                or inner.name in DIVISIONS and not safe_division(inner):
            return None
    return stores[0] if len(stores) == 1 else None


class FragmentOps:
    """Mixin of KernelEmitter: see the module docstring. Uses the emitter's
    `_values`, `_fragments`, `_shared`, `_ids`, `_threads`, `_wave_size`,
    `_native_fp8`, `_scratch` and `_parallel`."""

    # -- fragments ----------------------------------------------------------

    def fragment_of(self, value: ir.Value) -> Fragment | None:
        if self._parallel is not None and value in self._parallel.overrides:
            return self._parallel.overrides[value]
        return self._fragments.get(value)

    def make_fragment(self, op: ir.Operation) -> None:
        """A tile.alloc_fragment that is not a gemm accumulator: registers of
        its tile.layout, zero-initialised."""
        result = op.results[0]
        memref_type = ir.MemRefType(result.type)
        placement = self.layout_of(op)
        zero = arith.ConstantOp(memref_type.element_type, zero_of(memref_type.element_type)).result
        self._fragments[result] = RegisterFragment(placement, memref_type.element_type,
                                                   [zero] * len(placement.slots))

    def layout_of(self, op: ir.Operation) -> FragmentLayout:
        attr = attributes.LAYOUT.read(op)
        shape = tuple(ir.MemRefType(op.results[0].type).shape)
        if attr is None:
            raise LoweringError(op, f"tile-lower-to-gpu: this fragment has no {attributes.LAYOUT.name} "
                                    "(run tile-infer-layout)")
        try:
            return read_layout(attr, shape, self._threads, self._wave_size,
                               lambda m, n, k: self.core.accumulator_layout(m, n, k, self._wave_size))
        except (ValueError, KeyError) as error:
            raise LoweringError(op, f"tile-lower-to-gpu: {attributes.LAYOUT.name} {attr}: {error}") from None

    def thread_indices(self, layout: FragmentLayout) -> list[ir.Value]:
        return [part.value(self._ids) for part in layout.parts]

    def owner_guard(self, layout: FragmentLayout) -> ir.Value | None:
        """i1: this thread is the first of the replicas holding its elements
        (None: no replicas). Where some part's bits are unknown, the first is
        the one whose dropped parts (a projection's) are all 0."""
        mask = layout.replica_mask()
        if mask is None:
            guard = None
            for part in layout.dropped:
                zero = _eq_zero(part.value(self._ids))
                guard = zero if guard is None else and_(guard, zero)
            return guard
        if not mask:
            return None
        masked = arith.AndIOp(self._ids.thread, const_index(mask)).result
        return _eq_zero(masked)

    def element_indices(self, layout: FragmentLayout, parts: list[ir.Value], slot: int) -> list[ir.Value]:
        return [add(part, offset) for part, offset in zip(parts, layout.slots[slot])]

    def scratch_for(self, op, element: ir.Type, count: int) -> ir.Value:
        scratch = self._scratch.get(element)
        if scratch is None or ir.MemRefType(scratch.type).shape[0] < count:
            raise LoweringError(op, f"tile-lower-to-gpu: this needs {count} elements of {element} "
                                    f"shared scratch ({attributes.SCRATCH.name}), which tile-infer-layout "
                                    "did not provide (run tile-infer-layout)")
        return scratch

    def stage(self, op, fragment: Fragment):
        """Stores `fragment` into the scratch by logical (row-major) index,
        between barriers; returns the scratch and the index builder."""
        shape = fragment.placement.shape
        scratch = self.scratch_for(op, fragment.element, math.prod(shape))
        strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]

        def linear(indices: list[ir.Value]) -> ir.Value:
            total = const_index(0)
            for index, stride in zip(indices, strides):
                total = add(total, mul(index, stride))
            return total

        gpu.BarrierOp()  # earlier users of the scratch are done
        source = fragment.placement
        owner = self.owner_guard(source)
        parts = self.thread_indices(source)
        for slot in range(len(source.slots)):
            index = linear(self.element_indices(source, parts, slot))
            value = fragment.read(slot)
            guarded(owner, lambda value=value, index=index: memref.StoreOp(value, scratch, [index]))
        gpu.BarrierOp()
        return scratch, linear

    def convert_layout(self, op, fragment: Fragment, target: FragmentLayout) -> RegisterFragment:
        """`fragment`'s elements in `target`'s registers, through the scratch.
        A target of another shape with the same elements in row-major order
        (unit dims added or dropped: a (1, N) tile and an (N,) one) reads
        them by its own row-major index."""
        scratch, linear = self.stage(op, fragment)
        if tuple(target.shape) != tuple(fragment.placement.shape):
            strides = [math.prod(target.shape[d + 1:]) for d in range(len(target.shape))]

            def linear(indices: list[ir.Value]) -> ir.Value:
                total = const_index(0)
                for index, stride in zip(indices, strides):
                    total = add(total, mul(index, stride))
                return total
        parts = self.thread_indices(target)
        values = [memref.LoadOp(scratch, [linear(self.element_indices(target, parts, slot))]).result
                  for slot in range(len(target.slots))]
        return RegisterFragment(target, fragment.element, values)

    # -- T.Parallel -----------------------------------------------------------

    def op_scf_parallel(self, op) -> None:
        if attributes.PER_THREAD.is_on(op):
            self.per_thread_region(op)
            return
        if self._per_thread:
            raise LoweringError(op, "tile-lower-to-gpu: a T.Parallel inside per-thread code is not supported")
        if self._parallel is not None:
            raise LoweringError(op, "tile-lower-to-gpu: a T.Parallel (scf.parallel) inside another is "
                                    "not supported; write one loop over all the dims")
        loop = parallel_loop(op)
        ivs = list(op.regions[0].blocks[0].arguments)
        if loop.driver is not None:
            layout = loop_layout(loop.driver, self.fragment_of(loop.driver.fragment).placement)
        else:
            layout = self.memory_loop_layout(op, loop)
        layouts = {value: fragment.placement for value, fragment in self._fragments.items()}
        context = ParallelContext(op, ivs, layout, self.owner_guard(layout))
        for fragment, access in conversions(loop, layouts):
            context.overrides[fragment] = self.convert_layout(op, self._fragments[fragment],
                                                              access_layout(layout, access.dims))
        parts = self.thread_indices(layout)
        body_ops = [inner.operation for inner in op.regions[0].blocks[0].operations]
        for inner in body_ops:
            if inner.name == "scf.reduce" and inner.operands:
                raise LoweringError(inner, "tile-lower-to-gpu: scf.parallel reductions are not supported "
                                           "(use tile.reduce on a fragment)")
        body_ops = [inner for inner in body_ops if inner.name != "scf.reduce"]
        contiguous = contiguous_accesses(body_ops, ivs, self._fragments)
        self._parallel = context
        try:
            for run in layout.runs(max(1, layout.vector_length())):
                if len(run) > 1 and contiguous:
                    self.emit_parallel_run(context, parts, run, body_ops, contiguous)
                    continue
                for slot in run:
                    self.bind_slot(context, parts, slot)
                    for inner in body_ops:
                        self.lower_op(inner)
        finally:
            self._parallel = None

    def per_thread_region(self, op) -> None:
        """A per-thread region (an scf.parallel marked `attributes.PER_THREAD`): its body once, by every thread,
        its induction variables the thread's x, y and z indices (x fastest in
        the thread's linear index). Memory ops run on every thread as written;
        its allocas are each thread's own."""
        if self._parallel is not None or self._per_thread:
            raise LoweringError(op, f"tile-lower-to-gpu: a {attributes.PER_THREAD.name} region inside a T.Parallel or "
                                    "another per-thread region")
        rank = len(op.regions[0].blocks[0].arguments)
        extents = [constant_int(v) for v in list(op.operands)[rank:2 * rank]]
        if any(e is None for e in extents) or math.prod(extents) != self._threads:
            raise LoweringError(op, f"tile-lower-to-gpu: a {attributes.PER_THREAD.name} region runs over the kernel's "
                                    f"{self._threads} threads (constant extents whose product that is)")
        linear, stride = self._ids.thread, 1
        for iv, extent in zip(op.regions[0].blocks[0].arguments, extents):
            index = udiv(linear, stride)
            self._values[iv] = urem(index, extent) if stride * extent < self._threads else index
            stride *= extent
        self._per_thread = True
        try:
            for inner in op.regions[0].blocks[0].operations:
                if inner.name != "scf.reduce":
                    self.lower_op(inner.operation)
        finally:
            self._per_thread = False

    def bind_slot(self, context: ParallelContext, parts: list[ir.Value], slot: int) -> None:
        context.offsets = context.layout.slots[slot]
        for iv, index in zip(context.ivs, self.element_indices(context.layout, parts, slot)):
            self._values[iv] = index

    def emit_parallel_run(self, context: ParallelContext, parts, run: list[int], body_ops, contiguous) -> None:
        """The body once per slot of a run (consecutive elements along the last
        dim), with the accesses `contiguous` found one vector access each: a
        load made by the first slot's body and handed out element by element,
        a store made after the last slot's body."""
        loads: dict = {}  # load op -> the vector loaded
        stores: dict = {}  # store op -> (indices of the first slot, values so far)
        conditions: dict = {}  # store op -> the condition it is under (the first slot's)
        width = len(run)
        for position, slot in enumerate(run):
            self.bind_slot(context, parts, slot)
            for inner in body_ops:
                if inner in contiguous and inner.name == "scf.if":  # its values, then its store, after the run
                    store = contiguous[inner]
                    for nested in inner.regions[0].blocks[0].operations:
                        nested = nested.operation
                        if nested.name != "scf.yield" and nested != store:
                            self.lower_op(nested)
                    if position == 0:
                        stores[store] = ([self._values[v] for v in list(store.operands)[2:]], [])
                        conditions[store] = self._values[inner.operands[0]]
                    stores[store][1].append(self._values[store.operands[0]])
                elif inner in contiguous and inner.name == "memref.load":
                    if position == 0:
                        buffer = self._values[inner.operands[0]]
                        indices = [self._values[v] for v in list(inner.operands)[1:]]
                        vector_type = ir.VectorType.get([width], inner.results[0].type)
                        with inner.location:
                            loads[inner] = vector.LoadOp(vector_type, buffer, indices,
                                                         alignment=vector_alignment(buffer, indices, width)).result
                    with inner.location:
                        self._values[inner.results[0]] = vector.ExtractOp(loads[inner], [], [position]).result
                elif inner in contiguous and inner.name == "memref.store":
                    if position == 0:
                        stores[inner] = ([self._values[v] for v in list(inner.operands)[2:]], [])
                    stores[inner][1].append(self._values[inner.operands[0]])
                else:
                    self.lower_op(inner)
        for inner, (indices, values) in stores.items():
            buffer = self._values[inner.operands[1]]
            with inner.location:
                packed = vector.FromElementsOp(ir.VectorType.get([width], values[0].type), values).result
                guard, condition = context.owner, conditions.get(inner)
                if condition is not None:
                    guard = condition if guard is None else arith.AndIOp(guard, condition).result
                guarded(guard, lambda buffer=buffer, packed=packed, indices=indices: vector.StoreOp(
                    packed, buffer, indices, alignment=vector_alignment(buffer, indices, width)))

    def memory_loop_layout(self, op, loop) -> FragmentLayout:
        """How a T.Parallel that runs over no fragment spreads its index space:
        a blocked layout of it, vectors as wide as the widest element it
        accesses allows."""
        if loop.accesses:
            access = loop.accesses[0]
            raise LoweringError(access.op, (
                "tile-lower-to-gpu: this T.Parallel indexes a fragment but runs over none: index a "
                "fragment by all of the loop's induction variables, in order, over its whole shape"))
        if any(extent is None for extent in loop.extents):
            raise LoweringError(op, "tile-lower-to-gpu: a T.Parallel over memory must run from 0 "
                                    "to constant bounds with step 1")
        if len(loop.extents) > 2:
            raise LoweringError(op, f"tile-lower-to-gpu: a T.Parallel over memory with "
                                    f"{len(loop.extents)} dims is not supported (1 or 2 are)")
        widest = 8
        from tilemlir.irutil import walk

        for inner in walk(op):
            for operand in inner.operands:
                if isinstance(operand.type, ir.MemRefType):
                    widest = max(widest, bit_width(ir.MemRefType(operand.type).element_type))
        shape = tuple(loop.extents)
        return blocked_layout(shape, blocked_params(shape, widest, self._threads), self._threads)

    def fragment_slot(self, op, fragment: Fragment, indices: list[ir.Value]) -> int:
        """The register of `fragment` holding the element a load or store names."""
        context = self._parallel
        placement = fragment.placement
        if context is None:
            # Only an element every thread holds (a fully replicated fragment:
            # a row statistic of a one-row block, a rank-0 total) is named by
            # constant indices outside a T.Parallel.
            constants = [constant_int(index) for index in indices]
            if placement.used_bits() == 0 and None not in constants:
                if tuple(constants) not in placement.slot_index:
                    raise LoweringError(op, f"tile-lower-to-gpu: {op.name} of element {tuple(constants)} of a "
                                            f"register fragment of shape {tuple(fragment.shape)}: out of bounds")
                return placement.slot_index[tuple(constants)]
            raise LoweringError(op, f"tile-lower-to-gpu: {op.name} of a register fragment outside a "
                                    "T.Parallel: a fragment is indexed element by element only in an "
                                    "scf.parallel (use tile.copy to move it)")
        dims = []
        for position, index in enumerate(indices):
            if index in context.ivs:
                dims.append(context.ivs.index(index))
            elif placement.shape[position] == 1 and constant_int(index) == 0:
                dims.append(UNIT_DIM)
            else:
                raise LoweringError(op, "tile-lower-to-gpu: inside scf.parallel a fragment must be "
                                        "indexed by the loop's own induction variables")
        key = (id(placement), tuple(dims))
        if context.checked.get(key) is not placement:
            expected = access_layout(context.layout, tuple(dims))
            if placement != expected:
                raise LoweringError(op, f"tile-lower-to-gpu: this fragment is held in a "
                                        f"{placement.describe()}, but the T.Parallel runs over a "
                                        f"{context.layout.describe()}; its elements are not where the loop "
                                        "needs them (run tile-infer-layout)")
            context.checked[key] = placement
        offsets = tuple(0 if d == UNIT_DIM else context.offsets[d] for d in dims)
        return placement.slot_index[offsets]

    def refuse_fragment_per_thread(self, op, fragment) -> None:
        if fragment is not None and self._per_thread:
            raise LoweringError(op, "tile-lower-to-gpu: per-thread code (after T.get_thread_binding) reads or "
                                    "writes a fragment, whose elements tile-infer-layout spreads over the "
                                    "threads: use T.alloc_local for each thread's own values")

    def op_memref_load(self, op) -> None:
        fragment = self.fragment_of(op.operands[0])
        self.refuse_fragment_per_thread(op, fragment)
        if fragment is None:
            self.clone_op(op)
            return
        slot = self.fragment_slot(op, fragment, list(op.operands)[1:])
        self._values[op.results[0]] = fragment.read(slot)

    def op_memref_store(self, op) -> None:
        fragment = self.fragment_of(op.operands[1])
        self.refuse_fragment_per_thread(op, fragment)
        if fragment is None and self._per_thread:
            self.clone_op(op)
            return
        if fragment is None and self._parallel is None \
                and tile.memory_level(op.operands[1].type) == tile.GLOBAL:
            self.block_level_global_store(op)
            return
        if fragment is None:
            owner = self._parallel.owner if self._parallel is not None else None
            guarded(owner, lambda: self.clone_op(op))
            return
        if self._parallel is not None and op.operands[1] in self._parallel.overrides:
            raise LoweringError(op, "tile-lower-to-gpu: this T.Parallel writes a fragment laid out "
                                    "otherwise than its loop (run tile-infer-layout)")
        slot = self.fragment_slot(op, fragment, list(op.operands)[2:])
        fragment.write(slot, self._values[op.operands[0]])

    def block_level_global_store(self, op) -> None:
        """A store to global memory outside any T.Parallel: the block-level
        program stores once, so thread 0 stores (every thread storing the same
        value is a race). Where the kernel also reads or writes that tensor
        elsewhere, a barrier before the store lets every thread's earlier
        accesses finish and one after it makes the store visible, unless the
        store sits under a branch whose condition may differ between threads
        (it reads memory the kernel writes: a counter other blocks update):
        there every thread stores, as the program reads, which its own later
        reads then see."""
        shared_with_others = _accessed_elsewhere(op)
        if shared_with_others and _under_divergent_branch(op):
            self.clone_op(op)
            return
        if shared_with_others:
            gpu.BarrierOp()
        guarded(_eq_zero(self._ids.thread), lambda: self.clone_op(op))
        if shared_with_others:
            gpu.BarrierOp()

    def op_memref_atomic_rmw(self, op) -> None:
        """An atomic read-modify-write of one element of memory (T.atomic_add/
        max/min of a scalar): in a T.Parallel, once per iteration (by the
        first replica of its element); outside one, once per block (by
        thread 0), as the block-level program reads."""
        if self.fragment_of(op.operands[1]) is not None:
            raise LoweringError(op, "tile-lower-to-gpu: memref.atomic_rmw of a register fragment: atomics "
                                    "update memory")
        if list(op.results[0].uses):
            raise LoweringError(op, "tile-lower-to-gpu: the old value of a memref.atomic_rmw is not supported "
                                    "(it is read by one thread only)")
        if self._per_thread:
            guard = None
        elif self._parallel is not None:
            guard = self._parallel.owner
        else:
            guard = _eq_zero(self._ids.thread)
        guarded(guard, lambda: self.clone_op(op))

    def op_cf_assert(self, op) -> None:
        """cf.assert (a kernel's `assert` on runtime values): a thread that
        finds it false traps (llvm.intr.trap, at the assert's location: the
        launch fails; the emulator names the line)."""
        condition = self._values[op.operands[0]]
        failed = arith.XOrIOp(condition, arith.ConstantOp(condition.type, 1).result).result
        branch = scf.IfOp(failed)
        with ir.InsertionPoint(branch.then_block):
            llvm.intr_trap()
            scf.YieldOp([])

    def op_vector_store(self, op) -> None:
        owner = self._parallel.owner if self._parallel is not None else None
        guarded(owner, lambda: self.clone_op(op))

    # -- tile.reduce ----------------------------------------------------------

    def temporary_fragment(self, op, value: ir.Value) -> RegisterFragment:
        """Registers for a shared buffer's elements in the default blocked
        layout, loaded from it (a shared operand of tile.reduce)."""
        memref_type = ir.MemRefType(value.type)
        shape = tuple(memref_type.shape)
        layout = memory_operand_layout(value, self._threads)
        fragment = RegisterFragment(layout, memref_type.element_type, [None] * len(layout.slots))
        self.load_fragment(op, fragment, self.memory_access(op, value, [], len(shape)))
        return fragment

    def op_tile_reduce(self, op) -> None:
        """tile.reduce; a shared source is read into registers first, a shared
        destination written by the result's owners (tile-insert-barriers
        orders both against the program's other accesses)."""
        src_value, dst_value = op.operands[0], op.operands[1]
        src = self.fragment_of(src_value)
        if src is None:
            src = self.temporary_fragment(op, src_value)
        dst = self.fragment_of(dst_value)
        if dst is None:
            self.reduce_into(op, src, None)
            return
        self.reduce_into(op, src, dst)

    def reduce_into(self, op, src: Fragment, dst: Fragment | None) -> None:
        kind = ir.StringAttr(op.attributes["kind"]).value
        dim = ir.IntegerAttr(op.attributes["dim"]).value
        clear = ir.BoolAttr(op.attributes["clear"]).value
        element = src.element
        if kind in tile.MAGNITUDE_KINDS:  # max / sum of |x|: the magnitudes first
            absolute = mathd.AbsFOp if isinstance(element, ir.FloatType) else mathd.AbsIOp
            src = RegisterFragment(src.placement, element, [absolute(src.read(slot)).result
                                                            for slot in range(len(src.placement.slots))])
            kind = tile.MAGNITUDE_KINDS[kind]
        plan = reduce_plan(src.placement, dim, self._wave_size)
        try:
            if plan.through_memory:
                values = self.reduce_through_memory(op, src, dim, kind, plan.result)
            else:
                values = self.reduce_in_registers(op, src, dim, kind, plan)
        except ValueError as error:
            raise LoweringError(op, f"tile-lower-to-gpu: {error}") from None
        result = RegisterFragment(plan.result, element, values)
        if dst is None:  # into shared memory
            access = self.memory_access(op, op.operands[1], [], plan.result.rank)
            if not clear:
                old = RegisterFragment(plan.result, element, [None] * len(values))
                self.load_fragment(op, old, access)
                result.values = [_combine(kind, element, o, v) for o, v in zip(old.values, values)]
                gpu.BarrierOp()  # every replica has read the old values before the owners write
            self.store_fragment(op, result, access)
            return
        if dst.placement != plan.result:
            result = self.convert_layout(op, result, dst.placement)
        for slot in range(len(dst.placement.slots)):
            value = result.read(slot)
            if not clear:
                value = _combine(kind, element, dst.read(slot), value)
            dst.write(slot, value)

    def reduce_in_registers(self, op, src: Fragment, dim: int, kind: str, plan) -> list[ir.Value]:
        layout, element = src.placement, src.element
        kept = [d for d in range(layout.rank) if d != dim]
        groups: dict = {}
        for slot, offsets in enumerate(layout.slots):
            groups.setdefault(tuple(offsets[d] for d in kept), []).append(slot)
        values = []
        for offsets in plan.result.slots:
            members = sorted(groups[offsets], key=lambda s: layout.slots[s][dim])
            value = _combine_all(kind, element, [src.read(slot) for slot in members])
            if plan.shuffle_bits:
                value = self._hooks.reduce_across_lanes(
                    value, plan.shuffle_bits, lambda a, b: _combine(kind, element, a, b))
            values.append(value)
        if not plan.wave_bits:
            return values
        count = len(values)
        writers = self._threads >> len(plan.shuffle_bits)
        scratch = self.scratch_for(op, element, writers * count)
        in_wave = sum(plan.shuffle_bits)
        thread = self._ids.thread
        gpu.BarrierOp()  # earlier users of the scratch are done
        first_lane = _eq_zero(arith.AndIOp(thread, const_index(in_wave)).result) if in_wave else None
        writer = _pack_bits(thread, self._threads - 1, in_wave)  # the thread id without the shuffled bits
        for p, value in enumerate(values):
            index = add(mul(writer, count), p)
            guarded(first_lane, lambda value=value, index=index: memref.StoreOp(value, scratch, [index]))
        gpu.BarrierOp()
        # Every thread reads the partials of the threads that differ from it in the
        # reduced wave bits only, in increasing order of those bits.
        across = sum(plan.wave_bits)
        base = arith.AndIOp(thread, const_index(~(in_wave | across) & (self._threads - 1))).result
        combos = sorted(sum(chosen) for n in range(len(plan.wave_bits) + 1)
                        for chosen in itertools.combinations(plan.wave_bits, n))
        results = []
        for p in range(count):
            total = None
            for combo in combos:
                index = add(mul(_pack_bits(add(base, combo), self._threads - 1, in_wave), count), p)
                loaded = memref.LoadOp(scratch, [index]).result
                total = loaded if total is None else _combine(kind, element, total, loaded)
            results.append(total)
        return results

    def reduce_through_memory(self, op, src: Fragment, dim: int, kind: str,
                              result: FragmentLayout) -> list[ir.Value]:
        """Any layout: the source through the scratch, then a loop over the
        reduced dim per result element."""
        shape = src.placement.shape
        scratch, _ = self.stage(op, src)
        strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
        kept = [d for d in range(len(shape)) if d != dim]
        parts = self.thread_indices(result)
        values = []
        for slot in range(len(result.slots)):
            indices = self.element_indices(result, parts, slot)
            base = const_index(0)
            for d, index in zip(kept, indices):
                base = add(base, mul(index, strides[d]))
            first = memref.LoadOp(scratch, [base]).result
            loop = scf.ForOp(const_index(1), const_index(shape[dim]), const_index(1), [first])
            with ir.InsertionPoint(loop.body):
                at = add(base, arith.MulIOp(loop.induction_variable, const_index(strides[dim])).result)
                loaded = memref.LoadOp(scratch, [at]).result
                scf.YieldOp([_combine(kind, src.element, loop.inner_iter_args[0], loaded)])
            values.append(loop.results[0])
        return values

    # -- tile.copy with register fragments -----------------------------------

    def copy_with_fragments(self, op, src_indices: list[ir.Value], dst_indices: list[ir.Value]) -> bool:
        """tile.copy where a side is a fragment of any layout (accumulators
        included: their runs of consecutive columns become vector accesses);
        False: not such a copy."""
        src_value, dst_value = op.operands[0], op.operands[1]
        src, dst = self.fragment_of(src_value), self.fragment_of(dst_value)
        if src is None and dst is None:
            return False
        if src is not None and dst is not None:
            self.copy_fragment_to_fragment(op, src, dst)
            return True
        fragment = dst if dst is not None else src
        memory_value = src_value if dst is not None else dst_value
        indices = src_indices if dst is not None else dst_indices
        if dst is None and self.core.store_fragment(self, op, src, dst_indices):
            return True
        access = self.memory_access(op, memory_value, indices, fragment.placement.rank)
        if dst is not None:
            self.load_fragment(op, dst, access)
        else:
            self.store_fragment(op, src, access, atomic_add=attributes.ATOMIC_ADD.is_on(op))
        return True

    def copy_through_registers(self, op, src_indices: list[ir.Value], dst_indices: list[ir.Value]) -> None:
        """A copy between two buffers in memory (shared or global): every
        thread loads its share of the window into registers (the default
        blocked layout of the window) and stores it."""
        src_value, dst_value = op.operands[0], op.operands[1]
        small = min((src_value, dst_value), key=lambda v: ir.MemRefType(v.type).rank)
        if ir.MemRefType(small.type).rank > 2:
            raise LoweringError(op, "tile-lower-to-gpu: a copy between memory buffers whose window has "
                                    f"{ir.MemRefType(small.type).rank} dims is not supported (1 or 2)")
        window = memory_operand_layout(small, self._threads)
        element = ir.MemRefType(src_value.type).element_type
        staged = RegisterFragment(window, element, [None] * len(window.slots))
        self.load_fragment(op, staged, self.memory_access(op, src_value, src_indices, window.rank))
        self.store_fragment(op, staged, self.memory_access(op, dst_value, dst_indices, window.rank),
                            atomic_add=attributes.ATOMIC_ADD.is_on(op))

    def copy_fragment_to_fragment(self, op, src: Fragment, dst: Fragment) -> None:
        """A copy between register fragments: their elements in row-major
        order, so the shapes must be equal up to unit dims and the copy
        unoffset (`r[0, :]` of a (1, N) fragment into an (N,) one)."""
        squeezed = [tuple(e for e in f.placement.shape if e != 1) for f in (src, dst)]
        if squeezed[0] != squeezed[1] or any(constant_int(v) != 0 for v in list(op.operands)[2:]):
            raise LoweringError(op, "tile-lower-to-gpu: a copy between fragments of "
                                    f"{list(src.placement.shape)} and {list(dst.placement.shape)} elements "
                                    "copies all of them, at offset 0 (shapes equal up to unit dims); copy a part "
                                    "in a T.Parallel loop")
        if src.placement != dst.placement:
            src = self.convert_layout(op, src, dst.placement)
        for slot in range(len(dst.placement.slots)):
            dst.write(slot, convert(src.read(slot), src.element, dst.element, self._native_fp8))

    def memory_access(self, op, value: ir.Value, offsets: list[ir.Value], rank: int):
        """(buffer, element type, index builder, bounds) of the memory side of
        a copy with a fragment: the builder maps the fragment's element
        indices to the buffer's (window dims, storage layout); bounds are the
        extents of the window dims (None: shared memory, always inside)."""
        if value in self._shared:
            buffer, layout = self._shared[value]
            if layout.boxed:  # a guard: such buffers are chosen where only copies and gemms touch them
                raise LoweringError(op, "tile-lower-to-gpu: a copy between a fragment and a shared buffer "
                                        "stored as 128-byte-swizzled boxes (a wgmma operand) is not supported")
            logical = ir.MemRefType(value.type)
            if logical.rank != rank or any(constant_int(offset) != 0 for offset in offsets):
                return self.shared_window_access(op, value, offsets, rank)
            if rank != 2 and layout.transposed:
                raise LoweringError(op, "tile-lower-to-gpu: a copy between a fragment and a transposed "
                                        f"shared buffer of {rank} dims is not supported")
            row_elements = ir.MemRefType(buffer.type).shape[-1]
            element = ir.MemRefType(buffer.type).element_type

            def shared_index(indices: list[ir.Value]) -> list[ir.Value]:
                if rank == 2 and layout.transposed:
                    indices = [indices[1], indices[0]]
                if rank == 2 and layout.swizzle:
                    indices = [indices[0], swizzled_column(indices[0], indices[1], layout.swizzle,
                                                           row_elements, element)]
                return indices
            return buffer, element, shared_index, None, not (layout.transposed or layout.swizzle)
        buffer = self._values[value]
        memref_type = ir.MemRefType(buffer.type)
        window = window_dims(op, memref_type.rank, rank)
        extents = memref_dims(buffer)
        global_index = _window_index(window, offsets, memref_type.rank)
        bounds = None if attributes.IN_BOUNDS.is_on(op) else (window, extents)
        contiguous = bool(window) and window[-1] == memref_type.rank - 1
        return buffer, memref_type.element_type, global_index, bounds, contiguous

    def shared_window_access(self, op, value: ir.Value, offsets: list[ir.Value], rank: int):
        """The memory side of a copy between a fragment and a window of a
        shared buffer (`row[0, :]` of a (1, N) tile, `S[16:32, :]`): the
        window's dims (tile.window, else the trailing ones) offset by the
        copy's indices, bounds-checked like a global window (reads outside
        give 0, writes outside are dropped). The buffer must be stored as
        written (no transpose or swizzle; padding only widens its rows)."""
        buffer, layout = self._shared[value]
        logical = ir.MemRefType(value.type)
        if layout.transposed or layout.swizzle:
            raise LoweringError(op, "tile-lower-to-gpu: a copy between a fragment and a window of a shared "
                                    "buffer stored transposed or swizzled is not supported")
        window = window_dims(op, logical.rank, rank)
        shared_index = _window_index(window, offsets, logical.rank)
        extents = [const_index(extent) for extent in logical.shape]
        contiguous = bool(window) and window[-1] == logical.rank - 1
        return buffer, ir.MemRefType(buffer.type).element_type, shared_index, (window, extents), contiguous

    @staticmethod
    def inside(full: list[ir.Value], bounds, last_extra: int = 0) -> ir.Value | None:
        """i1: the elements full .. full + last_extra (along the window's last
        dim) are inside the buffer; None: no bounds to check."""
        if bounds is None:
            return None
        window, extents = bounds
        condition = None
        for d, index in enumerate(full):
            reach = add(index, last_extra) if window and d == window[-1] else index
            check = ult(reach, extents[d])
            condition = check if condition is None else and_(condition, check)
        return condition

    def load_fragment(self, op, fragment: Fragment, access) -> None:
        """The fragment's registers from memory: each run of consecutive
        elements one vector load where it is inside (else element by element,
        zeros outside), converted to the fragment's type."""
        buffer, element, index_of, bounds, contiguous = access
        layout = fragment.placement
        parts = self.thread_indices(layout)
        limit = max(1, 128 // max(8, bit_width(element))) if contiguous else 1
        for run in layout.runs(limit):
            at = [index_of(self.element_indices(layout, parts, slot)) for slot in run]
            if len(run) == 1:
                scalars = [self.load_element(buffer, element, at[0], bounds)]
            else:
                loaded = load_vector_guarded(
                    buffer, at[0], ir.VectorType.get([len(run)], element),
                    self.inside(at[0], bounds, len(run) - 1),
                    lambda i, at=at: self.load_element(buffer, element, at[i], bounds),
                    vector_alignment(buffer, at[0], len(run)))
                scalars = [vector.ExtractOp(loaded, [], [i]).result for i in range(len(run))]
            for slot, scalar in zip(run, scalars):
                fragment.write(slot, convert(scalar, element, fragment.element, self._native_fp8))

    def load_element(self, buffer, element, full, bounds) -> ir.Value:
        inside = self.inside(full, bounds)
        if inside is None:
            return memref.LoadOp(buffer, full).result
        return load_or_zero(inside, element, lambda: memref.LoadOp(buffer, full).result)

    def store_fragment(self, op, fragment: Fragment, access, atomic_add: bool = False) -> None:
        """The fragment's registers to memory, by the first of their replicas:
        each run one vector store where it is inside (else element by
        element, dropping those outside). With `atomic_add` (tile.atomic_add)
        each element is added into memory by one memref.atomic_rmw instead."""
        buffer, element, index_of, bounds, contiguous = access
        layout = fragment.placement
        parts = self.thread_indices(layout)
        limit = 1 if atomic_add else max(1, 128 // max(8, bit_width(element))) if contiguous else 1

        def write(value: ir.Value, full: list[ir.Value]) -> None:
            if atomic_add:
                kind = arith.AtomicRMWKind.addf if isinstance(element, ir.FloatType) else arith.AtomicRMWKind.addi
                memref.AtomicRMWOp(kind, value, buffer, full)
            else:
                memref.StoreOp(value, buffer, full)

        def store_elements(values: list[ir.Value], at: list[list[ir.Value]]) -> None:
            for value, full in zip(values, at):
                guarded(self.inside(full, bounds), lambda value=value, full=full: write(value, full))

        def stores() -> None:
            for run in layout.runs(limit):
                values = [convert(fragment.read(s), fragment.element, element, self._native_fp8) for s in run]
                at = [index_of(self.element_indices(layout, parts, slot)) for slot in run]
                if len(run) == 1:
                    store_elements(values, at)
                    continue
                packed = vector.FromElementsOp(ir.VectorType.get([len(run)], element), values).result
                store_vector_guarded(buffer, at[0], packed, self.inside(at[0], bounds, len(run) - 1),
                                     lambda values=values, at=at: store_elements(values, at),
                                     vector_alignment(buffer, at[0], len(run)))

        guarded(self.owner_guard(layout), stores)

    def fragment_runs(self, fragment: Fragment, element: ir.Type,
                      limit: int) -> tuple[ir.Value | None, list[FragmentRun]]:
        layout = fragment.placement
        parts = self.thread_indices(layout)
        runs = []
        for run in layout.runs(limit):
            values = tuple(convert(fragment.read(s), fragment.element, element, self._native_fp8) for s in run)
            runs.append(FragmentRun(values, tuple(self.element_indices(layout, parts, run[0])),
                                    tuple(layout.slots[run[0]])))
        return self.owner_guard(layout), runs

    # -- scf.if -----------------------------------------------------------------

    def op_scf_if(self, op) -> None:
        """An scf.if in a kernel: the fragments its branches write are results
        too (registers are values)."""
        written = [fragment for fragment in self.fragments() if self.writes_fragment(op, fragment)]
        results = [result.type for result in op.results]
        registers = [value.type for fragment in written for value in fragment.values]
        has_else = len(op.regions[1].blocks) > 0
        condition = self._values[op.operands[0]]
        branch = scf.IfOp(condition, results + registers, has_else=has_else or bool(registers))
        before = [list(fragment.values) for fragment in written]
        for region, block in ((op.regions[0], branch.then_block), (op.regions[1], None)):
            if block is None:
                if not (has_else or registers):
                    break
                block = branch.else_block
            for fragment, values in zip(written, before):
                fragment.values = list(values)
            with ir.InsertionPoint(block):
                yielded = []
                if len(region.blocks):
                    for inner in region.blocks[0].operations:
                        if inner.name == "scf.yield":
                            yielded = [self._values[v] for v in inner.operands]
                        else:
                            self.lower_op(inner.operation)
                scf.YieldOp(yielded + [v for fragment in written for v in fragment.values])
        outputs = list(branch.results)
        for old, new in zip(op.results, outputs[:len(results)]):
            self._values[old] = new
        position = len(results)
        for fragment in written:
            count = len(fragment.values)
            fragment.values = outputs[position:position + count]
            position += count

    def writes_fragment(self, op, fragment: Fragment) -> bool:
        from tilemlir.irutil import walk

        keys = [value for value, known in self._fragments.items() if known is fragment]
        if self._parallel is not None:
            keys += [value for value, known in self._parallel.overrides.items() if known is fragment]
        for inner in walk(op):
            targets = []
            if inner.name == "memref.store":
                targets = [inner.operands[1]]
            elif inner.name in ("tile.copy", "tile.reduce", "tile.fill"):
                targets = [inner.operands[1] if inner.name != "tile.fill" else inner.operands[0]]
            elif inner.name == "tile.gemm":
                targets = [inner.operands[2]]
            if any(target in keys for target in targets):
                return True
        return False

