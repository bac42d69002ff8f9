"""Which layout each register fragment of a kernel gets (tile-infer-layout's
fragment half; layouts: `fragment_layout`).

Anchors first: a gemm accumulator takes its instruction's C layout (set by
tile-infer-layout before this runs). Then layouts propagate, to a fixed
point, through

* `tile.reduce`: the result follows the source's other dims (a row vector
  of row maxima lives where the rows do);
* `T.Parallel` (`scf.parallel`): the loop runs over its *driver*, a fragment
  indexed by exactly the loop's induction variables over its whole shape;
  every other fragment the body indexes by induction variables takes the
  driver's layout projected onto the dims it is indexed by;
* `tile.copy` between two fragments of one shape: both take one layout.

A fragment none of these reaches gets the default `blocked` layout (the
highest-rank fragments first, so that row vectors follow tiles), and
propagation resumes.

Where two uses still disagree (a reduction into a fragment laid out
otherwise, a T.Parallel reading a fragment laid out otherwise, a copy
between fragments laid out differently) the lowering converts through shared
memory; a fragment *written* by a T.Parallel it does not match cannot be
converted and is refused, naming both uses. The shared memory these need
(conversions, and reductions across waves) is one `tile.alloc_shared` per
element type marked `tile.scratch`, sized here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir

from tilemlir.dialects import attributes, tile
from tilemlir.irutil import walk
from tilemlir.passes.base import PassState
from tilemlir.passes.fragment_layout import (
    UNIT_DIM,
    FragmentLayout,
    blocked_entries,
    blocked_layout,
    blocked_params,
    is_power_of_two,
    read_layout,
    reduce_plan,
)
from tilemlir.passes.gpu_builders import bit_width
from tilemlir.passes.kernel_facts import kernel_threads
from tilemlir.passes.lower_to_gpu.api import constant_int


@dataclass(frozen=True)
class FragmentAccess:
    """A memref.load/store of a fragment inside a T.Parallel: for each of the
    fragment's dims, the loop dim indexing it, UNIT_DIM for an extent-1 dim
    indexed by the constant 0 (what canonicalization leaves of a unit loop
    dim), or None (anything else)."""

    op: ir.Operation
    fragment: ir.Value
    dims: tuple[int | None, ...]
    writes: bool

    @property
    def loop_dims(self) -> tuple[int, ...]:
        return tuple(d for d in self.dims if d is not None and d != UNIT_DIM)

    @property
    def indexed(self) -> bool:
        return None not in self.dims


@dataclass(frozen=True)
class ParallelLoop:
    """A T.Parallel's index space and fragment accesses."""

    extents: tuple[int | None, ...]  # static trip counts (None: not constant from 0 by 1)
    accesses: tuple[FragmentAccess, ...]
    driver: FragmentAccess | None  # the access of the fragment the loop runs over

    def fragments(self) -> list[ir.Value]:
        return list(dict.fromkeys(access.fragment for access in self.accesses))


def loop_layout(driver: FragmentAccess, layout: FragmentLayout) -> FragmentLayout:
    """The driver's layout over the loop's dims (its unit dims dropped)."""
    return layout.project(tuple(p for p, d in enumerate(driver.dims) if d != UNIT_DIM))


def access_layout(loop: FragmentLayout, dims: tuple[int, ...]) -> FragmentLayout:
    """The layout a fragment must have for an access indexing its dims by
    the loop dims `dims` (UNIT_DIM: an extent-1 dim indexed by 0) to find
    its elements in the registers of the loop's threads."""
    units = tuple(position for position, d in enumerate(dims) if d == UNIT_DIM)
    return loop.project(tuple(d for d in dims if d != UNIT_DIM)).with_unit_dims(units)


def parallel_loop(op: ir.Operation) -> ParallelLoop:
    segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    operands = list(op.operands)
    lbs = operands[:segments[0]]
    ubs = operands[segments[0]:segments[0] + segments[1]]
    steps = operands[segments[0] + segments[1]:]
    extents = tuple(constant_int(ub) if constant_int(lb) == 0 and constant_int(st) == 1 else None
                    for lb, ub, st in zip(lbs, ubs, steps))
    ivs = list(op.regions[0].blocks[0].arguments)
    accesses = []
    for inner in walk(op):
        if inner.name == "memref.load":
            buffer, indices, writes = inner.operands[0], list(inner.operands)[1:], False
        elif inner.name == "memref.store":
            buffer, indices, writes = inner.operands[1], list(inner.operands)[2:], True
        else:
            continue
        if tile.memory_level(buffer.type) != tile.FRAGMENT:
            continue
        shape = ir.MemRefType(buffer.type).shape
        dims = tuple(ivs.index(index) if index in ivs
                     else UNIT_DIM if shape[position] == 1 and constant_int(index) == 0 else None
                     for position, index in enumerate(indices))
        accesses.append(FragmentAccess(inner, buffer, dims, writes))
    driver = next((access for access in accesses if drives(access, extents)), None)
    return ParallelLoop(extents, tuple(accesses), driver)


def drives(access: FragmentAccess, extents: tuple[int | None, ...]) -> bool:
    """Whether the loop may run over this access's fragment: every loop dim
    indexes it, in order, over its whole extent (unit dims aside)."""
    shape = ir.MemRefType(access.fragment.type).shape
    return (access.indexed and access.loop_dims == tuple(range(len(extents)))
            and tuple(shape[p] for p, d in enumerate(access.dims) if d != UNIT_DIM) == extents)


@dataclass
class Assigned:
    layout: FragmentLayout
    entries: dict  # tile.layout entries of the base layout, without dims
    dims: tuple[int, ...]  # this fragment's dims in the base layout (UNIT_DIM: an extra unit dim)

    def projected(self, dims: tuple[int, ...]) -> Assigned:
        return Assigned(self.layout.project(dims), self.entries, tuple(self.dims[d] for d in dims))

    def for_access(self, driver: FragmentAccess, access: FragmentAccess) -> Assigned:
        """This (the driver's) layout as the fragment of `access` must have it."""
        loop = loop_layout(driver, self.layout)
        on_loop = tuple(self.dims[p] for p, d in enumerate(driver.dims) if d != UNIT_DIM)
        dims = iter(access.loop_dims)
        base = tuple(UNIT_DIM if d == UNIT_DIM else on_loop[next(dims)] for d in access.dims)
        return Assigned(access_layout(loop, access.dims), self.entries, base)

    def attribute_entries(self) -> dict:
        entries = dict(self.entries)
        entries["dims"] = ir.DenseI64ArrayAttr.get(list(self.dims))
        return entries


def _shape(value: ir.Value) -> tuple[int, ...]:
    return tuple(ir.MemRefType(value.type).shape)


def _alloc_of(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    if isinstance(owner, ir.OpView | ir.Operation) and owner.name == "tile.alloc_fragment":
        return owner.operation
    return None


class FragmentLayouts:
    """Layout assignment for one kernel (see the module docstring)."""

    def __init__(self, kernel: ir.Operation, target, accumulator_lanes, state: PassState):
        self.kernel = kernel
        self.state = state
        self.threads = kernel_threads(kernel)
        self.wave_size = target.require("compute.wave_size", "fragment layouts")
        self.accumulator_lanes = accumulator_lanes
        self.assigned: dict[ir.Value, Assigned] = {}
        self.fragments = [op for op in walk(kernel) if op.name == "tile.alloc_fragment"]

    def run(self) -> None:
        if not self.fragments:
            return
        if not is_power_of_two(self.threads):
            needs = [op for op in self.fragments if not attributes.LAYOUT.is_on(op)]
            if needs:
                self.state.error(needs[0], f"tile-infer-layout: this kernel has {self.threads} threads; "
                                           "fragments other than gemm accumulators need a "
                                           "power-of-two thread count")
                return
        anchored = set()
        for op in self.fragments:
            attr = attributes.LAYOUT.read(op)
            if attr is not None:
                self.assigned[op.results[0]] = self.from_attribute(op, attr)
                anchored.add(op.results[0])
        if self.state.failed:
            return
        for op in self.fragments:
            if any(ir.ShapedType(op.results[0].type).is_dynamic_dim(d)
                   for d in range(ir.MemRefType(op.results[0].type).rank)):
                return  # tile-verify refuses dynamic fragments
            if ir.MemRefType(op.results[0].type).rank > 2:
                self.state.error(op, "tile-infer-layout: fragments of rank "
                                     f"{ir.MemRefType(op.results[0].type).rank} are not supported "
                                     "(rank 0, 1 and 2 are)")
                return
        ops = list(walk(self.kernel))
        # Each T.Parallel analysed once: propagation visits every op per round.
        self.loops = {op: parallel_loop(op) for op in ops if op.name == "scf.parallel"}
        while True:
            while self.propagate(ops):
                pass
            pending = [op for op in self.fragments if op.results[0] not in self.assigned]
            if not pending:
                break
            first = max(pending, key=lambda op: ir.MemRefType(op.results[0].type).rank)
            self.assigned[first.results[0]] = self.default(first.results[0])
        for op in self.fragments:
            if op.results[0] not in anchored:
                attributes.LAYOUT.write(op, self.assigned[op.results[0]].attribute_entries())

    def from_attribute(self, op: ir.Operation, attr) -> Assigned:
        shape = _shape(op.results[0])
        try:
            layout = read_layout(attr, shape, self.threads, self.wave_size, self.accumulator_lanes)
        except (ValueError, KeyError) as error:
            self.state.error(op, f"tile-infer-layout: {attributes.LAYOUT.name} {attr}: {error}")
            return Assigned(blocked_layout(shape, blocked_params(shape, 32, self.threads), self.threads),
                            {}, ())
        dims = tuple(ir.DenseI64ArrayAttr(attr["dims"])) if "dims" in attr else tuple(range(len(shape)))
        entries = {attr[i].name: attr[i].attr for i in range(len(attr)) if attr[i].name != "dims"}
        if "base_shape" not in entries and entries["kind"] == ir.StringAttr.get("mma_accumulator"):
            entries["base_shape"] = ir.DenseI64ArrayAttr.get(list(shape))
        return Assigned(layout, entries, dims)

    def default(self, value: ir.Value) -> Assigned:
        """The blocked layout, its vectors 128 bits of the narrowest element
        type the fragment is copied from or to (one global access each)."""
        shape = _shape(value)
        bits = [bit_width(ir.MemRefType(value.type).element_type)]
        for use in value.uses:
            if use.owner.name == "tile.copy":
                bits += [bit_width(ir.MemRefType(operand.type).element_type)
                         for operand in list(use.owner.operands)[:2]]
        params = blocked_params(shape, min(bits), self.threads)
        dims = () if not shape else (1,) if len(shape) == 1 else (0, 1)
        return Assigned(blocked_layout(shape, params, self.threads, dims), blocked_entries(params, ())
                        , dims)

    def give(self, value: ir.Value, assigned: Assigned) -> bool:
        if value in self.assigned or _alloc_of(value) is None:
            return False
        self.assigned[value] = assigned
        return True

    def propagate(self, ops: list[ir.Operation]) -> bool:
        changed = False
        for op in ops:
            if op.name == "tile.reduce":
                src, dst = op.operands[0], op.operands[1]
                if src in self.assigned and tile.memory_level(dst.type) == tile.FRAGMENT:
                    dim = ir.IntegerAttr(op.attributes["dim"]).value
                    kept = tuple(d for d in range(len(_shape(src))) if d != dim)
                    changed |= self.give(dst, self.assigned[src].projected(kept))
            elif op.name == "scf.parallel":
                loop = self.loops[op]
                driver = loop.driver
                if driver is None or driver.fragment not in self.assigned:
                    # A fragment of the loop's shape that has a layout leads it.
                    known = [a for a in loop.accesses if a.fragment in self.assigned
                             and drives(a, loop.extents)]
                    if not known:
                        continue
                    driver = known[0]
                leader = self.assigned[driver.fragment]
                for access in loop.accesses:
                    if access.indexed:
                        changed |= self.give(access.fragment, leader.for_access(driver, access))
            elif op.name == "tile.copy":
                src, dst = op.operands[0], op.operands[1]
                if (tile.memory_level(src.type) == tile.FRAGMENT == tile.memory_level(dst.type)
                        and _shape(src) == _shape(dst)):
                    every = tuple(range(len(_shape(src))))
                    if src in self.assigned:
                        changed |= self.give(dst, self.assigned[src].projected(every))
                    elif dst in self.assigned:
                        changed |= self.give(src, self.assigned[dst].projected(every))
        return changed


def memory_operand_layout(value: ir.Value, threads: int) -> FragmentLayout:
    """The registers a shared operand of tile.reduce is read into: the
    default blocked layout of its shape."""
    memref_type = ir.MemRefType(value.type)
    shape = tuple(memref_type.shape)
    return blocked_layout(shape, blocked_params(shape, bit_width(memref_type.element_type), threads), threads)


@dataclass(frozen=True)
class ScratchUse:
    """Shared scratch one op's lowering needs: `count` elements of `element`,
    and, for a layout conversion or a reduction through memory, why (a
    remark); None for a plain reduction across waves."""

    op: ir.Operation
    element: ir.Type
    count: int
    remark: str | None = None


def _where(value: ir.Value) -> str:
    from tilemlir.diagnostics import file_position

    file, line, col = file_position(value.owner.location)
    return f"{file}:{line}:{col}" if line else "?"


def scratch_uses(kernel: ir.Operation, layouts: dict[ir.Value, FragmentLayout],
                 wave_size: int) -> list[ScratchUse]:
    """Every op of the kernel whose lowering goes through the shared scratch:
    reductions across waves or through memory, and layout conversions (the
    lowering makes the same decisions from the same layouts)."""
    uses: list[ScratchUse] = []
    threads = kernel_threads(kernel)
    for op in walk(kernel):
        if op.name == "tile.reduce":
            src, dst = op.operands[0], op.operands[1]
            source = layouts.get(src) or memory_operand_layout(src, threads)
            element = ir.MemRefType(src.type).element_type
            dim = ir.IntegerAttr(op.attributes["dim"]).value
            plan = reduce_plan(source, dim, wave_size)
            count = plan.scratch_elements(source)
            if count:
                uses.append(ScratchUse(op, element, count, (
                    f"tile-infer-layout: this reduction goes through shared memory ({count} elements): the "
                    f"threads of dim {dim} of its source's {source.describe()} are not separate from the "
                    "others'") if plan.through_memory else None))
            if dst in layouts and layouts[dst] != plan.result:
                uses.append(ScratchUse(op, element, math.prod(_shape(dst)), (
                    f"tile-infer-layout: the result of this reduction ({plan.result.describe()}) is converted "
                    f"through shared memory to the layout of its destination at {_where(dst)} "
                    f"({layouts[dst].describe()})")))
        elif op.name == "scf.parallel":
            loop = parallel_loop(op)
            for fragment, access in conversions(loop, layouts):
                driver = loop.driver.fragment
                uses.append(ScratchUse(access.op, ir.MemRefType(fragment.type).element_type,
                                       math.prod(_shape(fragment)), (
                    f"tile-infer-layout: the fragment at {_where(fragment)} ({layouts[fragment].describe()}) is "
                    f"read in a T.Parallel over the fragment at {_where(driver)} "
                    f"({layouts[driver].describe()}); it is converted through shared memory before the loop")))
        elif op.name == "tile.copy":
            src, dst = op.operands[0], op.operands[1]
            if src in layouts and dst in layouts and layouts[src] != layouts[dst]:
                uses.append(ScratchUse(op, ir.MemRefType(src.type).element_type, math.prod(_shape(src)), (
                    f"tile-infer-layout: this copy converts the {layouts[src].describe()} to the "
                    f"{layouts[dst].describe()} through shared memory")))
    return uses


def conversions(loop: ParallelLoop, layouts: dict[ir.Value, FragmentLayout]) -> list[tuple[ir.Value, FragmentAccess]]:
    """The fragments a T.Parallel (`parallel_loop`) reads laid out otherwise
    than its driver's threads need them (converted through shared memory
    before the loop), each with its first access."""
    if loop.driver is None or loop.driver.fragment not in layouts:
        return []
    driver = loop_layout(loop.driver, layouts[loop.driver.fragment])
    found: dict = {}
    for access in loop.accesses:
        if access.fragment == loop.driver.fragment or not access.indexed or access.fragment not in layouts:
            continue
        if layouts[access.fragment] != access_layout(driver, access.dims):
            found.setdefault(access.fragment, access)
    return list(found.items())
