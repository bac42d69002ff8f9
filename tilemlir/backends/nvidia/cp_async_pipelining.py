"""Software pipelining of tile K loops with cp.async (`nvgpu.device_async_copy`).

A loop marked `tile.num_stages = S` (S >= 2) whose body is

    index arithmetic; tile.copy global -> shared (one or more); tile.gemm (one or more)

is lowered with S shared slots per copied buffer (placed by the matrix core):

    prologue:  for s in 0 .. S-2: copies of iteration s into slot s; commit group
                       cp.async.wait_group S-2; barrier; registers of K step 0 of slot 0
    loop i:    copies of iteration i+S-1 into slot (i+S-1) % S; commit group
               for each K step j of the gemm on slot i % S:
                   registers of K step j+1 (the last: cp.async.wait_group S-2;
                       barrier; registers of K step 0 of slot (i+1) % S)
                   mma.sync on the registers of K step j
    after:     cp.async.wait_group 0

Slot (i+S-1) % S = (i-1) % S is free at the top of iteration i: its last
ldmatrix came before the barrier of iteration i-1, which every thread passed.
With more than one gemm in the body, each iteration starts with the wait and
the barrier and the gemms load their own registers.

Every 16-byte chunk is one `cp.async.cg` whose source size is the number of
elements inside the global tensor (0 past its end), so out-of-bounds reads
fill shared memory with zeros as tile.copy requires, and iterations past the
end (the last S-1 issues) copy nothing. The copies bypass registers and L1.

Loops that do not match (element conversion in a copy, rows that are not
16-byte multiples, more 16-byte chunks than evenly spread over the threads,
other ops in the body, S < 2) are left to the generic lowering.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, gpu, memref, nvgpu, scf

from tilemlir.dialects import attributes, tile
from tilemlir.irutil import walk
from tilemlir.passes.lower_to_gpu.api import (
    KernelLowering,
    add,
    bit_width,
    const_index,
    constant_int,
    for_loop_parts,
    fragment_values,
    mul,
    rebind_fragments,
    udiv,
    urem,
)
from tilemlir.passes.software_pipeline import stages_for_trips

CHUNK_BYTES = 16  # cp.async.cg copies 16 bytes


@dataclass
class PipelinePlan:
    stages: int
    trip_count: int
    prefix: list = field(default_factory=list)  # index arithmetic, re-emitted per issue
    copies: list = field(default_factory=list)
    gemms: list = field(default_factory=list)

    @property
    def buffers(self) -> list:
        return [copy.operands[1] for copy in self.copies]


def _element_bytes(memref_type: ir.MemRefType) -> int:
    return max(1, bit_width(memref_type.element_type) // 8)


def plan_pipeline(op: ir.Operation, threads: int, copyable=None) -> PipelinePlan | None:
    """The plan for an scf.for inside a tile.kernel, or None when it does not match.
    `copyable(copy, threads)` says whether a tile.copy can be issued
    asynchronously (default: as 16-byte cp.async chunks)."""
    copyable = copyable or _async_copyable
    if op.name != "scf.for" or not attributes.NUM_STAGES.is_on(op):
        return None
    stages = attributes.NUM_STAGES.read(op)
    loop = for_loop_parts(op)
    bounds = [constant_int(v) for v in (loop.lower, loop.upper, loop.step)]
    if stages < 2 or loop.inits or bounds[0] != 0 or bounds[2] != 1 or not bounds[1]:
        return None
    plan = PipelinePlan(stages_for_trips(stages, bounds[1]), bounds[1])
    for inner in loop.body_ops:
        if inner.name == "tile.copy":
            if plan.gemms or not copyable(inner, threads):
                return None
            plan.copies.append(inner)
        elif inner.name == "tile.gemm":
            plan.gemms.append(inner)
        elif inner.name == "scf.yield":
            if list(inner.operands):
                return None
        elif inner.name.startswith("arith.") and not inner.regions and not plan.gemms:
            # Index arithmetic, wherever it sits among the copies (a frontend
            # computes each copy's offsets next to it): copies have no results,
            # so it never depends on them, and it is all emitted before them.
            plan.prefix.append(inner)
        else:
            return None
    if not plan.copies or not plan.gemms:
        return None
    for buffer in plan.buffers:  # a slot buffer is written by its copy and read by gemms only
        users = [use.owner for use in buffer.uses]
        if sum(1 for u in users if u.name == "tile.copy") != 1 or \
                any(u.name not in ("tile.copy", "tile.gemm") for u in users):
            return None
    return plan


def plain_tile_copy(copy: ir.Operation) -> tuple[ir.MemRefType, ir.MemRefType] | None:
    """(source, destination) types of a global -> shared tile.copy of a 2-D
    window of a static global memref, same element type, no conversion; else None."""
    src, dst = copy.operands[0], copy.operands[1]
    if tile.memory_level(src.type) != tile.GLOBAL or tile.memory_level(dst.type) != tile.SHARED:
        return None
    src_type, dst_type = ir.MemRefType(src.type), ir.MemRefType(dst.type)
    segments = list(ir.DenseI32ArrayAttr(copy.attributes["operandSegmentSizes"]))
    if src_type.element_type != dst_type.element_type or segments[3] or segments[2] != 2:
        return None
    if len(src_type.shape) != 2 or len(dst_type.shape) != 2:
        return None
    if any(d == ir.ShapedType.get_dynamic_size() for d in src_type.shape):
        return None
    return src_type, dst_type


def _async_copyable(copy: ir.Operation, threads: int) -> bool:
    types = plain_tile_copy(copy)
    if types is None:
        return False
    src_type, dst_type = types
    size = _element_bytes(src_type)
    rows, cols = dst_type.shape
    # Every chunk's global address must be 16-byte aligned: whole rows of 16-byte multiples.
    if (src_type.shape[1] * size) % CHUNK_BYTES or (cols * size) % CHUNK_BYTES:
        return False
    return (rows * cols * size // CHUNK_BYTES) % threads == 0


def pipelined_buffers(kernel: ir.Operation, threads: int) -> dict:
    """Shared buffer value -> number of slots, for every pipelined loop of a kernel."""
    slots = {}
    for op in walk(kernel):
        plan = plan_pipeline(op, threads) if op.name == "scf.for" else None
        if plan is not None:
            for buffer in plan.buffers:
                slots[buffer] = plan.stages
    return slots


def slot_view(view: ir.Value, slot: ir.Value) -> ir.Value:
    """The 2-D buffer `slot` of a memref<S x R x C> view (rank-reducing subview)."""
    view_type = ir.MemRefType(view.type)
    _, rows, cols = view_type.shape
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    layout = ir.StridedLayoutAttr.get(dynamic, [cols, 1])
    result = ir.MemRefType.get([rows, cols], view_type.element_type, layout,
                               view_type.memory_space)
    return memref.SubViewOp(result, view, [slot], [], [], [dynamic, 0, 0], [1, rows, cols],
                            [1, 1, 1]).result


def lower_pipelined_loop(core, lowering: KernelLowering, op: ir.Operation) -> bool:
    """The cp.async loop of the module docstring for `op` if it matches and
    the core (`matrix.MmaSyncCore`) placed its buffers in stage slots; False
    otherwise."""
    plan = plan_pipeline(op, lowering.threads)
    if plan is None or any(b not in core.stage_views for b in plan.buffers):
        return False
    for buffer in plan.buffers:
        lowering.note_shared(buffer, fill="cp.async.cg")
    stages = plan.stages
    iv = for_loop_parts(op).induction_variable
    # One gemm: its first K step's registers are read one iteration ahead, so
    # the wait and barrier for the next slot sit before the last K step's
    # instructions instead of in front of the first ldmatrix (CUTLASS's sm80
    # main loop does the same).
    ahead_registers = len(plan.gemms) == 1

    def issue(iteration: ir.Value, slot: ir.Value) -> ir.Value:
        lowering.bind(iv, iteration)
        for inner in plan.prefix:
            lowering.lower_op(inner)
        tokens = []
        for copy in plan.copies:
            tokens.extend(async_copy(lowering, copy, core.async_destination(copy.operands[1], slot)))
        return nvgpu.DeviceAsyncCreateGroupOp(tokens).result

    def bind(slot: ir.Value) -> None:
        for buffer in plan.buffers:
            lowering.bind_shared(buffer, core.slot_view(buffer, slot), core.slot_layout(buffer))

    def next_slot_ready() -> None:  # this thread's copies of the next slot landed, and everybody's
        nvgpu.DeviceAsyncWaitOp(group, numGroups=stages - 2)
        gpu.BarrierOp()

    group = None
    for s in range(stages - 1):  # clamped as in the loop: in-bounds copies stay in bounds
        group = issue(const_index(min(s, plan.trip_count - 1)), const_index(s))

    carried = lowering.fragments()
    flat = fragment_values(carried)
    template, first = None, []
    if ahead_registers:
        next_slot_ready()
        bind(const_index(0))
        template, first = flatten(core.load_k_step(lowering.gemm_operands(plan.gemms[0]), 0))
    loop = scf.ForOp(const_index(0), const_index(plan.trip_count), const_index(1), flat + first)
    inner_args = list(loop.inner_iter_args)
    rebind_fragments(carried, inner_args[:len(flat)])
    with ir.InsertionPoint(loop.body):
        i = loop.induction_variable
        if not ahead_registers:
            next_slot_ready()
        # Clamped to the last iteration: past the end the copy re-reads the last
        # tile into a slot no gemm reads, so in-bounds copies stay in bounds.
        # Slot (i-1) % S is free: every thread passed the barrier after its last read.
        ahead = arith.MinUIOp(add(i, stages - 1), const_index(plan.trip_count - 1)).result
        issue(ahead, urem(add(i, stages - 1), stages))
        bind(urem(i, stages))
        lowering.bind(iv, i)
        registers = []
        if ahead_registers:
            def next_slot() -> None:
                next_slot_ready()
                bind(urem(add(i, 1), stages))

            current = unflatten(template, iter(inner_args[len(flat):]))
            registers = mma_reading_ahead(core, lowering, plan.gemms[0], current, next_slot)
        else:
            for gemm in plan.gemms:
                lowering.lower_op(gemm)
        scf.YieldOp(fragment_values(carried) + registers)
    rebind_fragments(carried, list(loop.results)[:len(flat)])
    for buffer in plan.buffers:
        lowering.bind_shared(buffer, core.first_slot[buffer], core.slot_layout(buffer))
    nvgpu.DeviceAsyncWaitOp(group, numGroups=0)
    return True


def mma_reading_ahead(core, lowering: KernelLowering, gemm: ir.Operation, current, next_slot) -> list:
    """The gemm's K steps, each K step's registers loaded before the mma.sync
    of the one before; `current` holds the first K step's. Before the last K
    step's mma.sync, `next_slot()` waits for and binds the next iteration's
    slot, whose first K step's registers are returned (flat, to be carried)."""
    step = lowering.gemm_operands(gemm)
    k_steps = core.k_steps(step)
    for k_step in range(k_steps):
        if k_step + 1 < k_steps:
            following = core.load_k_step(step, k_step + 1)
        else:
            next_slot()
            following = core.load_k_step(lowering.gemm_operands(gemm), 0)
        core.mma_k_step(step, current)
        current = following
    lowering.record_lds_conflicts(gemm)
    return flatten(current)[1]


def flatten(tree) -> tuple[object, list]:
    """(template, values) of nested lists of values, for loop-carrying them."""
    if isinstance(tree, list | tuple):
        parts = [flatten(t) for t in tree]
        return [p[0] for p in parts], [v for p in parts for v in p[1]]
    return None, [tree]


def unflatten(template, values):
    if template is None:
        return next(values)
    return [unflatten(t, values) for t in template]


def window_dims(copy: ir.Operation) -> tuple[int, int]:
    """The (row, column) dims of the global tensor a copy's 2-D window spans."""
    rank = len(ir.MemRefType(copy.operands[0].type).shape)
    return tuple(attributes.WINDOW.dims(copy, rank, 2))


def slot_destination(stage_view: ir.Value, slot: ir.Value):
    """Where (row, col) of a tile lies in slot `slot` of its stages' view:
    (memref, indices), as `async_copy` takes it."""
    return lambda row, col: (stage_view, [slot, row, col])


def async_copy(lowering: KernelLowering, copy: ir.Operation, destination) -> list:
    """This thread's 16-byte cp.async chunks of one tile.copy: a 2-D window
    of a global tensor of any rank (the dims `tile.window` names, the others
    fixed at their index), chunk (row, col) of the tile into
    `destination(row, col)` ((memref, indices): `slot_destination`, or a
    boxed buffer's `box_index`)."""
    src = lowering.value_of(copy.operands[0])
    src_type = ir.MemRefType(src.type)
    rank = len(src_type.shape)
    offsets = [lowering.value_of(v) for v in list(copy.operands)[2:2 + rank]]
    row_dim, col_dim = window_dims(copy)
    rows, cols = ir.MemRefType(copy.operands[1].type).shape
    width = CHUNK_BYTES // _element_bytes(src_type)
    global_rows, global_cols = const_index(src_type.shape[row_dim]), const_index(src_type.shape[col_dim])
    per_row = cols // width
    chunks = rows * per_row
    zero = const_index(0)
    in_bounds = attributes.IN_BOUNDS.is_on(copy)  # tile-tiling proved every window inside
    tokens = []

    def source_indices(global_row, global_col) -> list:
        indices = list(offsets)
        indices[row_dim], indices[col_dim] = global_row, global_col
        return indices

    for r in range(chunks // lowering.threads):
        linear = add(lowering.ids.thread, r * lowering.threads)
        row, col = udiv(linear, per_row), mul(urem(linear, per_row), width)
        global_row, global_col = add(offsets[row_dim], row), add(offsets[col_dim], col)
        dst, dst_indices = destination(row, col)
        if in_bounds:
            tokens.append(nvgpu.DeviceAsyncCopyOp(dst, dst_indices, src,
                                                  source_indices(global_row, global_col),
                                                  ir.IntegerAttr.get(ir.IndexType.get(), width),
                                                  bypassL1=True).result)
            continue
        left = arith.SubIOp(global_cols, global_col).result
        count = arith.MinSIOp(arith.MaxSIOp(left, zero).result, const_index(width)).result
        row_inside = arith.CmpIOp(arith.CmpIPredicate.ult, global_row, global_rows).result
        count = arith.SelectOp(row_inside, count, zero).result
        # No bytes are read when count is 0, but the address must still be valid.
        some = arith.CmpIOp(arith.CmpIPredicate.sgt, count, zero).result
        source = source_indices(arith.SelectOp(some, global_row, zero).result,
                                arith.SelectOp(some, global_col, zero).result)
        tokens.append(nvgpu.DeviceAsyncCopyOp(dst, dst_indices, src, source,
                                              ir.IntegerAttr.get(ir.IndexType.get(), width),
                                              srcElements=count, bypassL1=True).result)
    return tokens
