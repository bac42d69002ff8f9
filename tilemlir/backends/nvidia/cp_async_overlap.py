"""Prefetching the tiles of a loop that does more than copy and multiply
(flash attention's K/V loop), with cp.async and no extra shared memory.

A loop marked `tile.num_stages >= 2` whose body copies n >= 2 shared tiles
from global memory (c_1 .. c_n, in body order; K and V), each read only by
gemms after its copy, c_1's before c_n, is lowered as FlashAttention-2's
loop is written:

    prologue:  issue c_1 of the first iteration (if the loop runs)
    loop i:    at c_j's place: cp.async.wait_group 0; barrier;
                               issue c_(j+1) of iteration i (c_1 of i+1 after c_n)
               every other op as the generic lowering emits it

At c_j's place the only copy in flight is c_j's own, issued one place
earlier; after the barrier nobody reads the buffer c_(j+1) fills any more (its
readers come after c_(j+1)'s place, or for c_1 before c_n's place, in the
previous round). So each tile loads while the work between two places runs
(the first gemm and the softmax hide V's load, the second gemm K's), in the
buffers the kernel already has. The issue after the last iteration is clamped
to the last iteration's tile (read, never used); everything is waited for
after the loop. The buffers may also be read by twin loops (`_twin_loops`:
tile-split-loops' copy of this loop), each of which does the same. Copies
are 16-byte cp.async chunks of a 2-D window of a global tensor of any rank
(`tile.window`), zero-filled past its end. Where the gemms run on wgmma
(wgmma_threads.py), the chunks land at their swizzled places in the tile's
boxes (`NvidiaMatrixCore.async_destination`), and each thread fences its landed
chunks for wgmma's async-proxy reads before the barrier
(`MatrixCore.fence_shared_writes`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, nvgpu, scf

from tilemlir.backends.nvidia.cp_async_pipelining import (
    CHUNK_BYTES,
    _element_bytes,
    async_copy,
    window_dims,
)
from tilemlir.dialects import attributes, tile
from tilemlir.irutil import parent_ops
from tilemlir.passes.lower_to_gpu.api import (
    KernelLowering,
    const_index,
    constant_int,
    for_loop_parts,
    fragment_values,
    rebind_fragments,
)
from tilemlir.passes.prove_bounds import Ranges


@dataclass
class OverlapPlan:
    copies: list  # the prefetched tile.copy ops, in body order
    slices: dict  # copy -> the body ops computing its indices, in body order


def _window_copyable(copy: ir.Operation, threads: int) -> bool:
    """A global -> shared copy of a 2-D window whose rows are whole 16-byte
    chunks at 16-byte aligned addresses, same element type, static shapes."""
    src, dst = copy.operands[0], copy.operands[1]
    if tile.memory_level(src.type) != tile.GLOBAL or tile.memory_level(dst.type) != tile.SHARED:
        return False
    src_type, dst_type = ir.MemRefType(src.type), ir.MemRefType(dst.type)
    segments = list(ir.DenseI32ArrayAttr(copy.attributes["operandSegmentSizes"]))
    if src_type.element_type != dst_type.element_type or segments[3] or segments[2] != len(src_type.shape):
        return False
    if len(dst_type.shape) != 2 or any(d == ir.ShapedType.get_dynamic_size() for d in src_type.shape):
        return False
    col_dim = window_dims(copy)[1]
    if col_dim != len(src_type.shape) - 1:
        return False  # rows of contiguous elements only
    size = _element_bytes(src_type)
    width = CHUNK_BYTES // size
    strides = [1] * len(src_type.shape)
    for d in range(len(src_type.shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * src_type.shape[d + 1]
    if any(strides[d] % width for d in range(len(strides) - 1)):
        return False  # every row starts 16-byte aligned
    column_start = constant_int(list(copy.operands)[2 + col_dim])
    if column_start is None or column_start % width:
        return False
    rows, cols = dst_type.shape
    return (cols * size) % CHUNK_BYTES == 0 and (rows * cols * size // CHUNK_BYTES) % threads == 0


def plan_overlap(op: ir.Operation, threads: int, twin_of: ir.Operation | None = None) -> OverlapPlan | None:
    """The plan for an scf.for (module docstring), or None when it does not
    match. `twin_of`: the loop this one is checked as a twin of (its uses of
    the buffers are allowed, no other twin is looked for)."""
    if op.name != "scf.for" or (attributes.NUM_STAGES.read(op) or 0) < 2:
        return None
    loop = for_loop_parts(op)
    if loop.inits:
        return None
    body = loop.body_ops
    position = {id_of(inner): index for index, inner in enumerate(body)}
    copies = [inner for inner in body if inner.name == "tile.copy" and _window_copyable(inner, threads)]
    if len(copies) < 2:
        return None
    twins = None  # the loops sharing the buffers (tile-split-loops' copies of this loop)
    for number, copy in enumerate(copies):
        buffer = copy.operands[1]
        for use in buffer.uses:
            user = use.owner
            if id_of(user) == id_of(copy):
                continue
            if id_of(user) not in position:
                if twins is None:
                    twins = [twin_of] if twin_of is not None else _twin_loops(op, threads)
                if not any(_within(user, twin) for twin in twins):
                    return None  # read by something else, or from another block
                continue
            if user.name != "tile.gemm":
                return None
            at = position[id_of(user)]
            if at < position[id_of(copy)] or (number == 0 and at > position[id_of(copies[-1])]):
                return None
    slices = {}
    for copy in copies:
        needed = _index_slice(copy, loop, position)
        if needed is None:
            return None
        slices[id_of(copy)] = [body[i] for i in sorted(needed)]
    return OverlapPlan(copies, slices)


def _skeleton(loop: ir.Operation) -> list:
    """A loop body's copies and gemms in order: (op name, the memrefs it
    copies between or multiplies)."""
    return [(inner.name, list(inner.operands)[:2 if inner.name == "tile.copy" else 3])
            for inner in loop.regions[0].blocks[0].operations if inner.name in ("tile.copy", "tile.gemm")]


def _twin_loops(op: ir.Operation, threads: int) -> list:
    """The other scf.for loops of op's block that copy into the same buffers
    and multiply the same tiles in the same order (tile-split-loops splits a
    loop into two such) and are prefetched as this one is (`plan_overlap`,
    with this loop's uses allowed). Each prefetches for itself and waits for
    all its copies after it. A copied buffer is read by nothing but the
    gemms between its copy's place and the next's (a barrier), so the
    second's prologue, which fills the first copy's buffer, never overwrites
    what the first still reads; and that prologue's cp.async writes the same
    chunks from the same threads as the first loop's last (clamped) one,
    which each thread waited for."""
    mine = _skeleton(op)
    return [sibling.operation for sibling in op.operation.block.operations
            if sibling.name == "scf.for" and id_of(sibling) != id_of(op) and _skeleton(sibling) == mine
            and plan_overlap(sibling.operation, threads, twin_of=op) is not None]


def _within(op: ir.Operation, loop: ir.Operation) -> bool:
    return any(id_of(parent) == id_of(loop) for parent in parent_ops(op))


def id_of(op) -> int:
    return hash(op.operation if isinstance(op, ir.OpView) else op)


def _index_slice(copy: ir.Operation, loop, position: dict) -> set | None:
    """Positions of the body ops the copy's indices are computed by (pure
    arith only), or None when one has side effects or regions."""
    needed: set = set()
    pending = list(copy.operands)[2:]
    while pending:
        value = pending.pop()
        owner = value.owner
        if not isinstance(owner, ir.OpView | ir.Operation) or id_of(owner) not in position:
            continue  # the induction variable or a value from outside the loop
        if not owner.name.startswith("arith.") or owner.regions:
            return None
        if position[id_of(owner)] not in needed:
            needed.add(position[id_of(owner)])
            pending.extend(owner.operands)
    return needed


def lower_overlapped_loop(core, lowering: KernelLowering, op: ir.Operation) -> bool:
    """The loop of the module docstring for `op` if it matches; False otherwise."""
    plan = plan_overlap(op, lowering.threads)
    if plan is None or not all(core.prefetches_into(c.operands[1]) for c in plan.copies):
        return False
    loop = for_loop_parts(op)
    iv = loop.induction_variable
    lower, upper, step = (lowering.value_of(v) for v in (loop.lower, loop.upper, loop.step))
    zero = const_index(0)

    def issue(copy: ir.Operation, iteration: ir.Value) -> ir.Value:
        """cp.async of `copy` for `iteration`; the loop's own bindings stay as they were."""
        ops = plan.slices[id_of(copy)]
        saved = [(r, lowering.value_of(r)) for o in ops for r in o.results if _bound(lowering, r)]
        saved_iv = lowering.value_of(iv) if _bound(lowering, iv) else None
        lowering.bind(iv, iteration)
        for inner in ops:
            lowering.lower_op(inner)
        tokens = async_copy(lowering, copy, core.async_destination(copy.operands[1], zero))
        for result, value in saved:
            lowering.bind(result, value)
        if saved_iv is not None:
            lowering.bind(iv, saved_iv)
        return nvgpu.DeviceAsyncCreateGroupOp(tokens).result

    ranges = Ranges()
    bounds = [ranges.of(v) for v in (loop.lower, loop.upper)]
    if None in bounds or bounds[1][0] <= bounds[0][1]:
        # A loop that may run no iteration (tile-split-loops' split point)
        # copies nothing: the first iteration's window may lie outside what
        # the copy may read. (Where the bounds prove it runs, no branch: at
        # 255 registers, its phis cost a flash attention kernel 24 bytes of
        # spills.)
        runs = arith.CmpIOp(arith.CmpIPredicate.slt, lower, upper).result
        prologue = scf.IfOp(runs, [ir.Type.parse("!nvgpu.device.async.token")], has_else=True)
        with ir.InsertionPoint(prologue.then_block):
            scf.YieldOp([issue(plan.copies[0], lower)])
        with ir.InsertionPoint(prologue.else_block):
            scf.YieldOp([nvgpu.DeviceAsyncCreateGroupOp([]).result])  # an empty group
        group = prologue.results[0]
    else:
        group = issue(plan.copies[0], lower)
    carried = lowering.fragments()
    flat = fragment_values(carried)
    # The last iteration: where the clamped issue after it reads (never used).
    last = arith.MaxSIOp(arith.SubIOp(upper, step).result, lower).result
    # The fragments and the copy group in flight are carried.
    loop_op = scf.ForOp(lower, upper, step, [*flat, group])
    rebind_fragments(carried, list(loop_op.inner_iter_args))
    copies = [id_of(c) for c in plan.copies]
    with ir.InsertionPoint(loop_op.body):
        i = loop_op.induction_variable
        group = loop_op.inner_iter_args[len(flat)]
        lowering.bind(iv, i)
        for inner in loop.body_ops:
            if inner.name == "scf.yield":
                continue
            if id_of(inner) not in copies:
                lowering.lower_op(inner)
                continue
            number = copies.index(id_of(inner))
            nvgpu.DeviceAsyncWaitOp(group, numGroups=0)  # this copy's tile landed here
            core.fence_shared_writes(inner.operands[1])
            gpu.BarrierOp()  # ... and everywhere; the next buffer is no longer read
            if number + 1 < len(copies):
                group = issue(plan.copies[number + 1], i)
            else:
                following = arith.MinSIOp(arith.AddIOp(i, step).result, last).result
                group = issue(plan.copies[0], following)
        scf.YieldOp([*fragment_values(carried), group])
    rebind_fragments(carried, list(loop_op.results))
    nvgpu.DeviceAsyncWaitOp(loop_op.results[len(flat)], numGroups=0)
    return True


def _bound(lowering: KernelLowering, value: ir.Value) -> bool:
    try:
        lowering.value_of(value)
    except (KeyError, ValueError):
        return False
    return True
