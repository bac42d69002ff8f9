"""Warp-specialized sm_90a kernels: a producer warpgroup feeds the K loop.

A kernel whose one pipelined K loop is a TMA + wgmma loop (`wgmma.TmaLoop`),
directly in the kernel's body, is launched with one warpgroup (128 threads)
more than it asks for. Its own T threads (the consumers, lane ids unchanged)
run the body as written, but wait for each slot's data and release it with
no TMA work of their own; the added warpgroup (the producer) issues the
loop's TMA loads:

    thread 0: init full[s], empty[s]; all threads: bar.sync 0
    if tid < T:    [setmaxnreg.inc C]   the body; its K loop:
                       wait full[i % S]; wgmmas; wait_group 1; release empty[(i-1) % S]
                   (the body's CTA barriers become named barrier 1 of T threads)
    else:          [setmaxnreg.dec P]   thread T only, for each iteration i:
                       if i >= S: wait empty[i % S] (iteration i-S released)
                       expect_tx(full[i % S]); TMA boxes of iteration i

This is the producer/consumer structure of CUTLASS's sm90 warp-specialized
GEMMs and FlashAttention-3 (shared/reference/speed_techniques.md 1.2-1.3:
with `setmaxnreg`, 488 -> 635 TFLOP/s in a published bf16 8192^3 kernel).
The consumers' warps never diverge to issue copies or wait for a slot to
drain, and the producer runs ahead by S slots.

Registers (`RegisterSplit`): the launch gives every thread the kernel's
register count, which ptxas fixes from `.maxntid` (the launched threads) and
`.minnctapersm` (the blocks per SM that the shared memory allows). Where the
consumers could use more than that share, the producer gives registers back
(`setmaxnreg.dec` to 40, CUTLASS's producer count) and the consumers take
them (`setmaxnreg.inc`), within the 65536 of an SM (PTX ISA, "setmaxnreg":
multiples of 8 in [24, 256], every warp of a warpgroup executes it; sm_90a).

The producer computes the copies' coordinates itself: every value they use
must come from the block ids, the loop's induction variable, kernel
arguments, constants, or scalar arithmetic on those (the ops are lowered
again in the producer's branch). A kernel that does not fit (several
pipelined loops, a loop inside another, coordinates read from memory) keeps
the single-role loop of `TmaLoop.emit`, as does any kernel with
tile-lower-to-gpu{warp-specialize=false}.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, nvvm, scf

from tilemlir.backends.nvidia import BACKEND
from tilemlir.backends.nvidia.cp_async_pipelining import PipelinePlan
from tilemlir.dialects import attributes
from tilemlir.irutil import walk
from tilemlir.passes.kernel_facts import enclosing_kernel, kernel_grid
from tilemlir.passes.lower_to_gpu.api import (
    KernelLowering,
    add,
    bit_width,
    const_index,
    for_loop_parts,
    mul,
    udiv,
    urem,
)

# The producer: one warpgroup (setmaxnreg acts on whole warpgroups) at
# CUTLASS's producer count (speed_techniques.md 1.3), as the family's manifest
# states them for the cost model (Backend.producer_threads/registers).
PRODUCER_THREADS = BACKEND.producer_threads
PRODUCER_REGISTERS = BACKEND.producer_registers
CONSUMER_REGISTERS_MAX = 240  # the most any published kernel raises to (FA3: 240)
BLOCKS_PER_SM_MAX = 32  # CUDA C++ Programming Guide, compute capability 9.0
# Shared memory the system takes per block (CUDA C++ Programming Guide,
# "Shared Memory" of compute capability 8.x/9.0: 1 KB reserved per block).
SYSTEM_SHARED_PER_BLOCK = 1024
GROUP_ROWS = 8  # rows of tiles walked together by a persistent kernel (Triton's GROUP_M)
CONSUMER_BARRIER = 1  # the named barrier of the consumer threads (0 is bar.sync's CTA barrier)

# Scalar ops the producer may lower again to compute copy coordinates.
_SCALAR_DIALECTS = ("arith.", "index.", "affine.apply", "math.")
# Ops that read the launch's shape or the block's place in it, which a
# warp-specialized kernel changes (more threads per block) and a persistent
# one too (a 1-D grid of fewer blocks, each several tiles): a kernel whose body
# reads them keeps one role, one block per tile. Its block ids, the
# tile.kernel's arguments, are rebound per tile instead.
LAUNCH_QUERIES = frozenset({
    "gpu.block_id", "gpu.grid_dim", "gpu.block_dim", "gpu.global_id", "gpu.num_subgroups",
    "gpu.cluster_id", "gpu.cluster_dim", "gpu.cluster_block_id", "gpu.cluster_dim_blocks",
})


@dataclass(frozen=True)
class RegisterSplit:
    """The blocks one SM holds, the registers per thread at launch (`entry`),
    and after `setmaxnreg` in each role (0: none)."""

    blocks_per_sm: int
    entry: int
    producer: int = 0
    consumer: int = 0


def register_split(target, consumers: int, shared_bytes: int, need: int,
                   instruction: int) -> RegisterSplit | None:
    """How the registers of the SM divide between roles: the most blocks per
    SM that shared memory and threads allow and that still give each consumer
    thread `need` registers (after `setmaxnreg`, where raising the consumers
    gains anything), the count each thread gets at launch, and the
    setmaxnreg counts. None when not even one block does: the kernel keeps
    one role, whose threads all get the most registers.

    The count at launch must also hold the operands of the widest single
    instruction (`instruction` registers): ptxas checks every instruction
    against the kernel's cap, whatever setmaxnreg raised (seen on the H200's
    ptxas 13.0: "C7602 Insufficient registers (80) to compile instruction",
    for an m64n128 wgmma whose consumers had been raised to 120)."""
    compute, registers = target.compute, target.registers
    threads = consumers + PRODUCER_THREADS
    per_sm_threads = compute.max_waves_per_simd * compute.simds_per_cu * compute.wave_size
    most = min(BLOCKS_PER_SM_MAX, per_sm_threads // threads,
               target.memory.shared_bytes_per_cu // (shared_bytes + SYSTEM_SHARED_PER_BLOCK))
    file = registers.file_per_lane * compute.wave_size * compute.simds_per_cu  # 65536
    for blocks in range(max(1, most), 0, -1):
        entry = min(registers.vgprs_per_lane, file // (threads * blocks)) // 8 * 8
        consumer = min(CONSUMER_REGISTERS_MAX,
                       (entry * threads - PRODUCER_REGISTERS * PRODUCER_THREADS) // consumers // 8 * 8)
        if max(entry, consumer) >= need and entry >= instruction:
            if consumer <= entry:
                return RegisterSplit(blocks, entry)
            return RegisterSplit(blocks, entry, PRODUCER_REGISTERS, consumer)
    return None


def consumer_registers(kernel: ir.Operation, threads: int, overhead: int, copies: dict) -> int:
    """The registers a consumer thread needs: the most 32-bit words of
    register fragments live at once (a thread's share of each; those in
    `copies` that many times: accumulators of 8-bit wgmma, whose partial sums
    take one or two more), plus `overhead` (addresses, loop state).

    A fragment is live from the first to the last op of the kernel's body
    that reads or writes it (the K loop counts whole). Where an op is an
    element-wise map into a fragment (`elementwise_map`: an epilogue
    computing F[i, j] from C[i, j]) that is the last use of the fragments it
    reads and the first of the one it writes, each element read dies as the
    one it makes is born: the op holds the larger of the two sides, not both
    (ptxas allocates the unrolled elements that way: a 128x128 f32
    accumulator and a 128x128 f32 epilogue fragment are 128 words at once,
    not 256)."""
    words = {}
    for op in walk(kernel):
        if op.name == "tile.alloc_fragment":
            fragment = ir.MemRefType(op.results[0].type)
            elements = math.prod(fragment.shape)
            share = -(-elements * max(32, bit_width(fragment.element_type)) // 32 // threads)
            words[op.results[0]] = share * copies.get(op.results[0], 1)
    body = list(kernel.regions[0].blocks[0].operations)
    first, last = {}, {}
    for index, top in enumerate(body):
        for op in walk(top):
            if op.name == "tile.alloc_fragment":
                continue
            for value in op.operands:
                if value in words:
                    first.setdefault(value, index)
                    last[value] = index
    peak = 0
    for index, top in enumerate(body):
        live = {value for value in first if first[value] <= index <= last[value]}
        total = sum(words[value] for value in live)
        mapped = elementwise_map(top)
        if mapped is not None:
            target, sources = mapped
            dying = [value for value in sources if last[value] == index and value != target]
            if first[target] == index and dying:
                total -= min(words[target], sum(words[value] for value in dying))
        peak = max(peak, total)
    return peak + overhead


def elementwise_map(op: ir.Operation) -> tuple[ir.Value, set[ir.Value]] | None:
    """(F, {X, ...}) where `op` is an scf.parallel that stores only into the
    fragment F and loads fragments X, ... of F's shape and layout
    (tile.layout), each load and store at exactly the loop's induction
    variables (element [i, j] from elements [i, j], in the same thread);
    else None."""
    if op.name != "scf.parallel":
        return None
    ivs = list(op.regions[0].blocks[0].arguments)
    stored, loaded = set(), set()
    for inner in walk(op):
        if inner.name not in ("memref.load", "memref.store"):
            continue
        store = inner.name == "memref.store"
        memref, indices = (inner.operands[1], list(inner.operands)[2:]) if store \
            else (inner.operands[0], list(inner.operands)[1:])
        if not _is_fragment(memref):
            continue
        if indices != ivs:
            return None
        (stored if store else loaded).add(memref)
    if len(stored) != 1:
        return None
    (target,) = stored
    layout = _layout_of(target)
    if layout is None or any(ir.MemRefType(v.type).shape != ir.MemRefType(target.type).shape
                             or _layout_of(v) != layout for v in loaded):
        return None
    return target, loaded


def _is_fragment(value: ir.Value) -> bool:
    owner = value.owner
    return isinstance(owner, ir.OpView | ir.Operation) and owner.name == "tile.alloc_fragment"


def _layout_of(fragment: ir.Value) -> tuple | None:
    """The fragment's tile.layout entries, comparable across fragments of one
    shape: without `dims` where they are the identity, and an accumulator's
    `base_shape` the fragment's shape where not given (as tile-infer-layout
    reads them)."""
    owner = fragment.owner
    if not attributes.LAYOUT.is_on(owner):
        return None
    attr = attributes.LAYOUT.read(owner)
    shape = list(ir.MemRefType(fragment.type).shape)
    entries = {attr[i].name: str(attr[i].attr) for i in range(len(attr))}
    if entries.get("dims") == str(ir.DenseI64ArrayAttr.get(list(range(len(shape))))):
        del entries["dims"]
    if entries.get("kind") == str(ir.StringAttr.get("mma_accumulator")):
        entries.setdefault("base_shape", str(ir.DenseI64ArrayAttr.get(shape)))
    return tuple(sorted(entries.items()))


def producer_values(kernel: ir.Operation, loop: ir.Operation, plan: PipelinePlan) -> list | None:
    """The kernel-body ops (before the loop) the producer must lower again to
    compute the copies' coordinates, in order; None when some coordinate
    depends on anything but block ids, the induction variable, values from
    outside the kernel and scalar arithmetic on them."""
    body = kernel.regions[0].blocks[0]
    iv = for_loop_parts(loop).induction_variable
    prefix = set(plan.prefix)
    top = {}
    for op in body.operations:
        if op == loop:
            break
        for result in op.results:
            top[result] = op
    needed, pending, seen = set(), [], set()
    for op in list(plan.copies) + list(plan.prefix):
        pending.extend(list(op.operands)[2:4] if op in plan.copies else list(op.operands))
    while pending:
        value = pending.pop()
        if value in seen:
            continue
        seen.add(value)
        if value == iv:
            continue
        if isinstance(value, ir.BlockArgument):
            if value.owner == body:
                continue  # a block id
            return None
        owner = value.owner
        if owner in prefix:
            pending.extend(owner.operands)
            continue
        if value in top:
            op = top[value]
            if op.regions or not op.name.startswith(_SCALAR_DIALECTS):
                return None
            needed.add(op)
            pending.extend(op.operands)
            continue
        if enclosing_kernel(owner) is None:
            continue  # captured from the host function: a kernel argument
        return None
    if any(not op.name.startswith(_SCALAR_DIALECTS) or op.regions for op in plan.prefix):
        return None
    return [op for op in body.operations if op in needed]


class WarpSpecializedKernel:
    """Emits a kernel body split into consumer and producer roles (module
    docstring); `tma_loop` is the TmaLoop of the kernel's pipelined K loop,
    `coordinate_ops` the body's ops before it that the producer lowers again
    (`producer_values`). With `resident_workgroups` > 0 the kernel is
    persistent: that many workgroups at most (the descriptor's SMs x the
    blocks each holds: on a part with fewer SMs, a MIG slice say, the last
    round of tiles runs on fewer SMs, correct but slower) loop over the
    grid's tiles in grouped order (`tile_order`), and the slots' barriers
    count on across tiles, so the producer loads a tile's first slots while
    the consumers still run the previous tile's epilogue.
    `barrier_between_tiles`: the body has shared buffers besides the slots,
    so the consumers meet at the end of each tile before the next rewrites
    them."""

    def __init__(self, lowering: KernelLowering, tma_loop, coordinate_ops: list, split: RegisterSplit,
                 resident_workgroups: int = 0, barrier_between_tiles: bool = False):
        self.lowering, self.tma_loop = lowering, tma_loop
        self.coordinate_ops, self.split = coordinate_ops, split
        self.grid = kernel_grid(lowering.kernel)
        self.tiles = math.prod(self.grid)
        self.launched = min(self.tiles, resident_workgroups) if resident_workgroups else 0
        # The body has shared buffers besides the loop's slots: a tile's first
        # writes to them wait until every consumer is done with the last tile's.
        self.barrier_between_tiles = barrier_between_tiles

    def emit(self, emit_body, after=None) -> int:
        """Emits both roles; returns the threads per block to launch.
        `after()` is emitted where the consumers are done with every tile."""
        lowering = self.lowering
        consumers = lowering.threads
        self.tma_loop.create_barriers()
        thread = lowering.ids.thread
        is_consumer = arith.CmpIOp(arith.CmpIPredicate.ult, thread, const_index(consumers)).result
        roles = scf.IfOp(is_consumer, has_else=True)
        with ir.InsertionPoint(roles.then_block):
            if self.split.consumer:
                nvvm.SetMaxRegisterOp(self.split.consumer, nvvm.SetMaxRegisterAction.increase)

            def consume() -> None:
                emit_body()
                if self.launched and self.barrier_between_tiles:
                    gpu.BarrierOp()  # made a named barrier of the consumers below
            self.over_tiles(consume)
            if after is not None:
                after()
            scf.YieldOp([])
        with ir.InsertionPoint(roles.else_block):
            if self.split.producer:
                nvvm.SetMaxRegisterOp(self.split.producer, nvvm.SetMaxRegisterAction.decrease)
            leader = arith.CmpIOp(arith.CmpIPredicate.eq, thread, const_index(consumers)).result
            issuing = scf.IfOp(leader)
            with ir.InsertionPoint(issuing.then_block):

                def produce() -> None:
                    for op in self.coordinate_ops:
                        lowering.lower_op(op)
                    self.tma_loop.emit_producer()
                self.over_tiles(produce)
                scf.YieldOp([])
            scf.YieldOp([])
        named_consumer_barriers(roles.then_block, consumers)
        if self.split.consumer:
            lowering.set_function_attribute(
                "nvvm.minctasm", ir.IntegerAttr.get(ir.IntegerType.get_signless(32), self.split.blocks_per_sm))
        if self.launched:
            lowering.set_launch_grid([self.launched])
        return consumers + PRODUCER_THREADS

    def over_tiles(self, emit_tile) -> None:
        """`emit_tile()` once (not persistent), or in a loop over this
        workgroup's tiles: t = block id, + launched, ... below the tile count,
        the block ids rebound to tile t's and the K loop's count of earlier
        iterations carried along."""
        if not self.launched:
            emit_tile()
            return
        lowering = self.lowering
        start = gpu.BlockIdOp(gpu.Dimension.x).result
        loop = scf.ForOp(start, const_index(self.tiles), const_index(self.launched), [const_index(0)])
        with ir.InsertionPoint(loop.body):
            base = loop.inner_iter_args[0]
            ids = tile_order(loop.induction_variable, self.grid)
            for argument, value in zip(lowering.kernel.regions[0].blocks[0].arguments, ids):
                lowering.bind(argument, value)
            self.tma_loop.base = base
            emit_tile()
            scf.YieldOp([add(base, self.tma_loop.plan.trip_count)])
        self.tma_loop.base = None


def tile_order(t: ir.Value, grid: list[int]) -> list[ir.Value]:
    """Block ids (x, y, ...) of the t-th tile in grouped order: GROUP_ROWS
    consecutive rows of the grid (y) are walked column by column (x), so the
    tiles running at once share fewer rows of A and columns of B than whole
    rows of the grid would (the L2-friendly order of CUTLASS's and Triton's
    GEMMs, speed_techniques.md 1.4). A bijection of the grid: every tile once."""
    if len(grid) == 1:
        return [t]
    gx, gy = grid[0], grid[1]
    per_group = GROUP_ROWS * gx
    within = urem(t, per_group)
    first = mul(udiv(t, per_group), GROUP_ROWS)
    rows = arith.MinUIOp(arith.SubIOp(const_index(gy), first).result, const_index(GROUP_ROWS)).result
    return [arith.DivUIOp(within, rows).result, add(first, arith.RemUIOp(within, rows).result)]


def named_consumer_barriers(block: ir.Block, threads: int) -> None:
    """Every CTA barrier (gpu.barrier) emitted in `block` becomes named barrier
    CONSUMER_BARRIER of `threads` threads: the producer warpgroup never reaches
    them (PTX ISA, "bar.sync": a barrier with a thread count waits for that
    many threads, in whole warps)."""
    barriers = []

    def collect(b: ir.Block) -> None:
        for op in b.operations:
            if op.name == "gpu.barrier":
                barriers.append(op)
            for region in op.regions:
                for inner in region.blocks:
                    collect(inner)
    collect(block)
    i32 = ir.IntegerType.get_signless(32)
    for barrier in barriers:
        with ir.InsertionPoint(barrier), barrier.location:
            nvvm.BarrierOp(None, barrierId=arith.ConstantOp(i32, CONSUMER_BARRIER).result,
                           numberOfThreads=arith.ConstantOp(i32, threads).result)
        barrier.erase()

