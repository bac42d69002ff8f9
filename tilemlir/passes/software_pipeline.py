"""tile-pipeline: software pipelining of loops marked `tile.num_stages = N`.

TileLang's `T.Pipelined(..., num_stages=N)` loop copies tiles into shared
memory and computes on them. With one buffer per operand, every iteration
waits for its own copy. This pass gives each shared buffer N stages and runs
the copies N-1 iterations ahead:

    prologue: for s in 0 .. N-2:  copy tile(s)      -> stage s
    loop i:                       copy tile(i+N-1)  -> stage (i+N-1) mod N   [tile.prefetch]
                                  gemm on stage i mod N

* each `tile.alloc_shared` written by the loop's copies becomes one buffer of
  shape [N, ...]; stage views are `memref.subview`s selected by the iteration
  number modulo N;
* the copy for iteration i+N-1 runs before the gemm of iteration i. Past the
  end of the loop it copies the last iteration's tile again, into a stage no
  gemm reads, so the loop needs no guard and in-bounds copies stay in bounds;
* where the family peels (`peel-tail`; amdgpu), a loop of N >= 2 stages
  with constant bounds and at least N+1 iterations runs its last N-1 in a
  loop of their own (tile.pipeline_tail) that prefetches nothing, so the
  main loop's prefetch needs no clamp and its addresses step by a constant
  (llvm-mca's busy ratio per wave, bench/results/gemm-defaults-amd.md:
  gfx942 f16 1024^3 0.533 -> 0.577, fp8 0.516 -> 0.593, every gfx950 row
  up; gfx90a f16 1024^3 0.906 -> 0.874). Not where a bound is computed at
  run time (causal attention's diagonal): the split point's arithmetic then
  spilled scalar registers on gfx942; nor around another pipelined loop;
* a loop of fewer iterations than stages (a constant trip count) gets as
  many stages as it has iterations, at least 2: more would hold copies of the
  last tile that no gemm reads, and the LDS they take costs workgroups per CU
  (ResNet's 1x1 convolutions of 64-128 channels are loops of 1-2 K steps);
* the LDS budget is checked with the multiplied buffers: stages that do not
  fit become the most that do, with a remark naming the numbers
  (`over-budget=error`: a compile-time error with the numbers instead); where
  not even one stage fits, a buffer copied from global memory once before
  the loop and read in it only as its gemms' A (attention's Q) leaves the
  LDS where the family's matrix core reads such an A from global memory
  into registers, once, before the loop (`MatrixCore.reads_a_from_global`:
  AMD, MetaX), and the loop gets the stages that then fit: the buffer is
  marked tile.read_from_global, and a remark says so; a loop that fits no
  stage even so is an error either way. Such a buffer also leaves the LDS
  where, with it, the LDS lets a CU run only one wave per SIMD
  (`shared_memory.waves_by_lds`) and, without it, two or more, the loop is
  the kernel's only pipelined one and its fragments leave registers for a
  second wave: the loop then gets the most stages, up to the asked ones,
  that keep two (`waves_from_global`; a remark says so);
* tile-lower-to-gpu turns a `tile.prefetch` copy into global loads at the top
  of the iteration and LDS stores at its end, with one barrier per iteration:
  the stage written at the end of iteration i was last read in iteration i-1
  (before this iteration's barrier) and is next read in iteration i+N-1 (after
  the next one).
* N = 1 keeps one stage and prefetches one iteration ahead through registers:
  the copy of tile(i+1) follows the gemm of iteration i (the tile IR keeps
  its sequential meaning); tile-lower-to-gpu issues its global loads at the
  top of the iteration and stores them into the stage at its end, after a
  second barrier (every wave's reads of tile(i) are done), so the loads
  still overlap the gemm.
* a copy under a condition (`if BlockMask[by, bx, k]: T.copy(...); T.gemm(...)`,
  block-sparse kernels) moves out of its `scf.if` first, with the index
  arithmetic it needs, where the buffer it fills is used only under that
  condition and not before the copy: it then runs on every iteration (a
  tile the condition skips is loaded and never read; out-of-bounds reads give
  0), so it can be prefetched; a remark says so;
* a loop whose trip count is not known to be positive (bounds computed at run
  time, e.g. a causal loop stopping at the diagonal) runs its prologue under
  `scf.if lower < upper`: a loop of zero iterations copies nothing.

Input invariant: in a marked loop, the copies from global memory into shared
buffers allocated outside the loop and used only by this loop have indices
computed from the induction variable and loop invariants; the rest of the body
(gemms reading those buffers, fragment arithmetic, the program's own writes to
other shared buffers, e.g. a fragment staged for a gemm) is left in place.
Output invariant: marked loops are pipelined and carry `tile.pipelined = N`
(a peeled tail also `tile.pipeline_tail`, directly after its loop);
sequential semantics are unchanged.

Options:
  target=FAMILY:NAME   (for the LDS budget; default: the module's tile.target)
  over-budget=fewer-stages|error   (stages over the LDS budget: step down to the
                       most that fit with a remark (default), or refuse)
  enabled=true|false   (false: no loop is pipelined, each copy runs where the
                       program has it; tile-compile compiles so again, with a
                       remark, when prefetching through registers spills them)
  peel-tail=auto|true|false   (the peeled tail above; auto: where the target's
                       family says so, Backend.peels_pipeline_tail)

Example (N = 2):

    %a = "tile.alloc_shared"() : () -> memref<128x32xf16, #shared>
    scf.for %ko = %c0 to %c32 step %c1 { "tile.copy"(%A, %a, ...); "tile.gemm"(%a, ...) }
        {tile.num_stages = 2 : i64}
    // becomes
    %a = "tile.alloc_shared"() : () -> memref<2x128x32xf16, #shared>
    "tile.copy"(%A, %a0, ... k of iteration 0 ...)                      // prologue, stage 0
    scf.for %ko = ... { %stage = ...; "tile.copy"(%A, %a_next, ...) {tile.prefetch};
                        "tile.gemm"(%a_cur, ...) } {tile.num_stages = 2 : i64, tile.pipelined = 2 : i64}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal

from mlir import ir
from mlir.dialects import arith, memref, scf

from tilemlir.dialects import attributes, tile
from tilemlir.irutil import erase_unused, parent_ops, walk
from tilemlir.passes.base import PassState, Switch, TilePass, resolve_switch
from tilemlir.passes.kernel_facts import kernel_threads
from tilemlir.passes.shared_memory import (
    lds_breakdown,
    logical_shared_bytes,
    position_text,
    shared_buffer_text,
    waves_by_lds,
)
from tilemlir.targets import resolve_target
from tilemlir.targets.model import is_unknown


class NotPipelinable(Exception):
    pass


def _constant(value: ir.Value) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.OpView | ir.Operation) and owner.name == "arith.constant":
        return ir.IntegerAttr(owner.attributes["value"]).value
    return None


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def stages_for_trips(stages: int, trips: int | None) -> int:
    """The stages a loop of `trips` iterations (None: not constant) asking
    for `stages` is pipelined with: no more than its iterations, and at
    least 2 where it asked for 2 or more (a stage no iteration fills holds a
    re-read copy of the last tile and takes LDS, and so workgroups per CU)."""
    return stages if trips is None else min(stages, max(2, trips))


def trip_count(lower: ir.Value, upper: ir.Value, step: ir.Value) -> int | None:
    """The iterations of a loop with constant bounds, else None."""
    bounds = [_constant(v) for v in (lower, upper, step)]
    if None in bounds or bounds[2] <= 0:
        return None
    return max(0, -(-(bounds[1] - bounds[0]) // bounds[2]))


def stage_indices(number: ir.Value, stages: int, lead: int, trips: int | None) -> tuple[ir.Value, ir.Value]:
    """The stage iteration `number` reads and the stage its prefetch `lead`
    iterations ahead writes: number mod stages and (number + lead) mod stages.
    A count of stages that is not a power of two (no mask) takes its
    remainders in 32 bits where the loop's trip count is known to fit: an
    index is 64 bits on AMD, where a 64-bit remainder by 3 is some 30 scalar
    instructions per iteration (gfx942 f16 256^3, 32x64x64 blocks of 2 waves
    and 3 stages: llvm-mca's busy ratio 0.32 -> 0.372)."""
    narrow = stages & (stages - 1) != 0 and trips is not None and trips < 2 ** 31
    kind = ir.IntegerType.get_signless(32) if narrow else ir.IndexType.get()
    counted = arith.IndexCastUIOp(kind, number).result if narrow else number
    count = arith.ConstantOp(kind, stages).result
    indices = (arith.RemUIOp(counted, count).result,
               arith.RemUIOp(arith.AddIOp(counted, arith.ConstantOp(kind, lead).result).result, count).result)
    if narrow:
        return tuple(arith.IndexCastUIOp(ir.IndexType.get(), value).result for value in indices)
    return indices


def staged_view(buffer: ir.Value, stage: ir.Value, shape: list[int]) -> ir.Value:
    """The rank-reducing view of one stage of an [N, *shape] buffer."""
    buffer_type = ir.MemRefType(buffer.type)
    strides = [1]
    for extent in reversed(shape[1:]):
        strides.insert(0, strides[0] * extent)
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    layout = ir.StridedLayoutAttr.get(dynamic, strides)
    view_type = ir.MemRefType.get(shape, buffer_type.element_type, layout=layout,
                                  memory_space=buffer_type.memory_space)
    return memref.SubViewOp(
        view_type, buffer, [stage], [], [],
        [ir.ShapedType.get_dynamic_stride_or_offset()] + [0] * len(shape),
        [1, *shape], [1] * (len(shape) + 1)).result


@dataclass(frozen=True)
class TilePipeline(TilePass):
    name: ClassVar[str] = "tile-pipeline"
    summary: ClassVar[str] = (f"Multi-buffer the shared tiles of {attributes.NUM_STAGES.name} loops "
                               "and prefetch ahead")

    target: str = ""
    # A loop whose stages do not fit the LDS: pipelined with the most stages
    # that fit, with a remark (TileLang's num_stages is a request), or refused.
    over_budget: Literal["fewer-stages", "error"] = "fewer-stages"
    # False: no loop is pipelined (tile-compile's retry when the prefetch spills).
    enabled: bool = True
    # Loops of 2 stages or more: their last `lead` iterations run in a loop of
    # their own without prefetches (auto: where the target's family says so,
    # Backend.peels_pipeline_tail).
    peel_tail: Switch = "auto"

    def run(self, module: ir.Operation, state: PassState) -> None:
        if not self.enabled:
            return
        loops = [op for op in walk(module) if op.name == "scf.for"
                 and attributes.NUM_STAGES.is_on(op) and not attributes.PIPELINED.is_on(op)]
        for loop in loops:
            stages = attributes.NUM_STAGES.read(loop)
            if stages < 1:
                continue
            hoisted = _hoist_conditional_copies(loop)
            try:
                copies, buffers = self.analyze(loop)
            except NotPipelinable as reason:
                if stages > 1:  # one stage asks for nothing more than the loop as written
                    state.error(loop, f"tile-pipeline: cannot pipeline this loop: {reason}")
                continue
            for condition in hoisted:
                state.remark(condition, "tile-pipeline: the copies under this condition run on every "
                                        "iteration, so that they can be prefetched (a tile the condition "
                                        "skips is loaded and not used)", kind="speed")
            stages = stages_for_trips(stages, trip_count(*list(loop.operands)[:3]))
            stages = self.stages_within_budget(module, loop, buffers, stages, state)
            if stages is not None:
                self.pipeline(loop, copies, buffers, stages, self.peels(module))

    def peels(self, module: ir.Operation) -> bool:
        from tilemlir.targets.registry import backend

        if self.peel_tail != "auto":
            return resolve_switch(self.peel_tail, False)
        return backend(resolve_target(module, self.target).family).peels_pipeline_tail

    # -- analysis -------------------------------------------------------------

    @staticmethod
    def analyze(loop: ir.Operation) -> tuple[list[ir.Operation], list[ir.Value]]:
        body = loop.regions[0].blocks[0]
        if len(list(loop.operands)) > 3:
            raise NotPipelinable("it carries loop values (iter_args)")
        copies, buffers, written = [], [], []
        for op in body.operations:
            op = op.operation
            if op.name == "tile.copy" and tile.memory_level(op.operands[1].type) == tile.SHARED:
                destination = op.operands[1]
                owner = destination.owner
                if not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "tile.alloc_shared":
                    raise NotPipelinable(f"the shared destination of the copy at {position_text(op)} "
                                         "is not a tile.alloc_shared")
                if tile.memory_level(op.operands[0].type) != tile.GLOBAL:
                    # The program's own write (a fragment staged for a gemm): it stays
                    # where it is, ordered by tile-insert-barriers, single-buffered.
                    written.append(op)
                    continue
                if destination in buffers:
                    raise NotPipelinable(f"{shared_buffer_text(owner.operation)} is written twice "
                                         "in one iteration")
                copies.append(op)
                buffers.append(destination)
        if not copies:
            raise NotPipelinable("it copies nothing into shared memory from global memory")
        for op in written:
            if op.operands[1] in buffers:
                raise NotPipelinable(f"{shared_buffer_text(op.operands[1].owner.operation)} is filled from "
                                     f"global memory and also written by the copy at {position_text(op)}")
        for copy in copies:  # their indices are recomputed for other iterations
            for operand in list(copy.operands)[2:]:
                _check_recomputable(operand, body)
        for buffer in buffers:
            for use in buffer.uses:
                if not _inside(use.owner, loop):
                    raise NotPipelinable(f"{shared_buffer_text(buffer.owner.operation)}, which it "
                                         f"fills, is also used outside the loop (by {use.owner.name} "
                                         f"at {position_text(use.owner)})")
        return copies, buffers

    def stages_within_budget(self, module, loop, buffers, stages: int, state: PassState) -> int | None:
        """The stages the loop is pipelined with: `stages` when their buffers
        fit the LDS; else, with over-budget=fewer-stages, the most that fit
        (a remark says so); else None, after an error with the numbers."""
        target = resolve_target(module, self.target)
        limit = target.require("memory.shared_bytes_per_workgroup", "the LDS budget")
        kernel = loop
        while kernel is not None and kernel.name != "tile.kernel":
            kernel = kernel.parent
        others = []
        if kernel is not None:
            others = [op for op in walk(kernel) if op.name == "tile.alloc_shared" and op.results[0] not in buffers
                      and not attributes.READ_FROM_GLOBAL.is_on(op)]  # an earlier loop took it out
        staged = [b.owner.operation for b in buffers]

        def needed_with(count: int) -> int:
            return lds_breakdown([(op, 1) for op in others] + [(op, count) for op in staged])[0]

        needed, account, largest = lds_breakdown([(op, 1) for op in others]
                                                 + [(op, stages) for op in staged])
        if needed <= limit:
            return self.waves_from_global(loop, kernel, others, staged, stages, stages, target, state) or stages
        fitting = next((s for s in range(stages - 1, 0, -1) if needed_with(s) <= limit), None)
        if fitting is None and self.over_budget == "fewer-stages":
            fitting = self.read_from_global(loop, kernel, others, staged, stages, limit, target, state)
            if fitting is not None:
                return fitting
        if fitting is not None and self.over_budget == "fewer-stages":
            state.remark(loop, f"tile-pipeline: {stages} stages need {needed} bytes of LDS, {target.name} "
                               f"allows {limit}: pipelined with {fitting} stage{'s' if fitting > 1 else ''} "
                               f"({needed_with(fitting)} bytes) instead; tile-pipeline{{over-budget=error}} "
                               "refuses", kind="speed")
            return self.waves_from_global(loop, kernel, others, staged, fitting, stages, target, state) \
                or fitting
        if fitting is not None:
            advice = (f"{fitting} stage{'s' if fitting > 1 else ''} would fit ({needed_with(fitting)} bytes; "
                      "over-budget=fewer-stages steps down to them)")
        else:
            advice = (f"fewer stages cannot help (1 stage needs {needed_with(1)} bytes): use smaller "
                      f"tiles, starting with this one")
        state.error(largest, f"tile-pipeline: {stages} stages need {needed} bytes of LDS, "
                             f"{target.name} allows {limit}; {advice}. By buffer: {account} "
                             f"(the pipelined loop is at {position_text(loop)})")
        return None

    @staticmethod
    def waves_from_global(loop, kernel, others, staged, chosen: int, stages: int, target,
                          state: PassState) -> int | None:
        """Where the LDS lets a CU run one wave per SIMD with the loop's
        buffers at `chosen` stages (`waves_by_lds`), and two or more once
        the buffers `read_from_global` takes leave it, at some number of
        stages: those leave it (marked tile.read_from_global, with a remark),
        and the loop gets the most stages, up to the asked `stages`, that
        keep two waves per SIMD, fewer than `chosen` if need be (gfx942
        attention at head size 80, 128x64 blocks of 4 waves: 0.594 of the
        matrix unit busy per wave at two waves in one stage against 0.472 at
        one wave in two; llvm-mca). A second wave issues while the first
        waits for memory; one wave per SIMD hides nothing (Triton's and CK's
        attention kernels hold Q in registers too). Only where the registers leave room for that
        second wave (`registers_allow_two_waves`) and the loop is the
        kernel's only pipelined one (a later loop would count its stages
        without the buffer and could take the LDS back). None where nothing
        changes."""
        if kernel is None or sum(1 for op in walk(kernel) if attributes.NUM_STAGES.is_on(op)) > 1:
            return None
        threads = kernel_threads(kernel)
        with_it = waves_by_lds(lds_breakdown([(op, 1) for op in others] + [(op, chosen) for op in staged])[0],
                               threads, target)
        if with_it is None or with_it >= 2:
            return None
        taken, needed_with = _leaving_lds(loop, kernel, others, staged, target)
        two = [s for s in range(stages, 0, -1) if waves_by_lds(needed_with(s), threads, target) >= 2]
        if not taken or not two or not registers_allow_two_waves(kernel, taken, target):
            return None
        fitting = two[0]
        names = _take_out(taken)
        state.remark(loop, f"tile-pipeline: with {names} in LDS, {target.name}'s "
                           f"{target.memory.shared_bytes_per_cu} bytes of LDS a CU let it run one wave per SIMD; "
                           f"the gemms of this loop read it from global memory into registers, once, before the "
                           f"loop, so that {waves_by_lds(needed_with(fitting), threads, target)} waves per SIMD "
                           f"may run, and the loop is pipelined with {fitting} stage{'s' if fitting > 1 else ''} "
                           f"({needed_with(fitting)} bytes of LDS)", kind="speed")
        return fitting

    @staticmethod
    def read_from_global(loop, kernel, others, staged, stages: int, limit: int, target,
                         state: PassState) -> int | None:
        """Where not one stage fits: the most stages that fit once the
        buffers the gemms of the loop read as A and a copy from global
        memory fills once before it (flash attention's Q) leave the LDS, the
        gemms reading them from global memory into registers, once, before
        the loop (tile.read_from_global, `MatrixCore.reads_a_from_global`);
        a remark names them. None where that does not fit either, or the
        family's matrix instructions cannot take A so."""
        if kernel is None:
            return None
        taken, needed_with = _leaving_lds(loop, kernel, others, staged, target)
        if not taken:
            return None
        fitting = next((s for s in range(stages, 0, -1) if needed_with(s) <= limit), None)
        if fitting is None:
            return None
        names = _take_out(taken)
        state.remark(loop, f"tile-pipeline: not even 1 stage fits {target.name}'s {limit} bytes of LDS with "
                           f"{names}: the gemms of this loop read it from global memory into registers, "
                           f"once, before the loop, and the loop is pipelined with {fitting} "
                           f"stage{'s' if fitting > 1 else ''} ({needed_with(fitting)} bytes of LDS); "
                           "tile-pipeline{over-budget=error} refuses", kind="speed")
        return fitting

    # -- the rewrite ------------------------------------------------------------

    def pipeline(self, loop: ir.Operation, copies, buffers, stages: int, peel: bool = False) -> None:
        lower, upper, step = list(loop.operands)[:3]
        body = loop.regions[0].blocks[0]
        induction = body.arguments[0]
        staged = {}
        for buffer in buffers:
            owner = buffer.owner
            shape = list(ir.MemRefType(buffer.type).shape)
            with ir.InsertionPoint(owner), owner.location:
                staged_type = ir.MemRefType.get([stages, *shape], ir.MemRefType(buffer.type).element_type,
                                                memory_space=ir.MemRefType(buffer.type).memory_space)
                staged_buffer = tile.alloc_shared(staged_type)
                for name in owner.attributes:  # keep the LDS layout (tile.smem_layout)
                    staged_buffer.owner.attributes[name] = owner.attributes[name]
                staged[buffer] = (staged_buffer, shape)
        # Copies run `lead` iterations ahead: N-1, or 1 with a single stage
        # (whose prefetch waits in registers until the iteration's reads are done).
        lead = max(1, stages - 1)
        trips = trip_count(lower, upper, step)
        # Peeled where the main loop keeps two iterations or more and its bounds
        # are constants (a bound computed at run time, causal attention's
        # diagonal, costs the tail's split in scalar registers: gfx942's
        # 128x64 causal blocks at d 64 then spilled 2 SGPRs).
        # Not around another pipelined loop: the copy would hold one that
        # run() did not collect.
        peel = peel and stages > 1 and trips is not None and trips >= lead + 2 and not any(
            op.name == "scf.for" and attributes.NUM_STAGES.is_on(op) for op in walk(loop)[1:])
        # Prologue: iterations 0 .. lead-1 into stages 0 .. lead-1, clamped to
        # the last iteration as in the loop (a loop shorter than that re-reads
        # its last tile into stages never consumed; in-bounds copies stay in
        # bounds).
        with ir.InsertionPoint(loop), loop.location:
            final = arith.AddIOp(lower, arith.MulIOp(arith.DivUIOp(arith.SubIOp(
                arith.SubIOp(upper, lower).result, _index(1)).result, step).result, step).result).result
            known = [_constant(v) for v in (lower, upper)]
            guard = None
            if None in known or known[1] <= known[0]:
                # A loop that may run zero times (a causal bound: stop at the
                # diagonal) copies nothing: its prologue runs only if it runs.
                runs = arith.CmpIOp(arith.CmpIPredicate.slt, lower, upper).result
                guard = scf.IfOp(runs)
        where = ir.InsertionPoint(guard.then_block) if guard is not None else ir.InsertionPoint(loop)
        with where, loop.location:
            for s in range(lead):
                iteration = arith.MinUIOp(arith.AddIOp(lower, arith.MulIOp(step, _index(s)).result).result,
                                          final).result
                stage = _index(s)
                self.copy_for_iteration(body, induction, iteration, copies, staged, stage, prologue=True)
            if guard is not None:
                scf.YieldOp([])
        # In the loop: the stage of this iteration, and the copy `lead` ahead.
        first = next(iter(body.operations)).operation
        with ir.InsertionPoint(first), loop.location:
            number = arith.DivUIOp(arith.SubIOp(induction, lower).result, step).result
            current, ahead_stage = stage_indices(number, stages, lead, trips)
            ahead = arith.AddIOp(induction, arith.MulIOp(step, _index(lead)).result).result
            if not peel:
                # Clamped to the last iteration: past the end, a prefetch re-reads
                # the last tile into a stage no gemm reads (in-bounds copies stay so).
                ahead = arith.MinUIOp(ahead, final).result
            views = {buffer: staged_view(staged[buffer][0], current, staged[buffer][1])
                     for buffer in buffers}
        for copy in copies:
            # One stage: the next tile is copied after this iteration's gemms
            # (tile-lower-to-gpu still issues its global loads before them).
            where = ir.InsertionPoint.at_block_terminator(body) if stages == 1 else ir.InsertionPoint(copy)
            with where, copy.location:
                self.copy_for_iteration(body, induction, ahead, [copy], staged, ahead_stage,
                                        prologue=False)
            copy.erase()
        for buffer in buffers:
            buffer.replace_all_uses_with(views[buffer])
            buffer.owner.erase()
        attributes.PIPELINED.write(loop, stages)
        if peel:
            peel_tail(loop, lead, trips)

    def copy_for_iteration(self, body, induction, iteration, copies, staged, stage, prologue: bool):
        """Clones `copies` (and the index arithmetic they depend on) for
        `iteration`, writing into `stage` of the staged buffers."""
        mapping = {induction: iteration}
        for copy in copies:
            for operand in list(copy.operands)[2:]:
                self.materialize(operand, body, mapping)
            destination, shape = staged[copy.operands[1]]
            view = staged_view(destination, stage, shape)
            segments = list(ir.DenseI32ArrayAttr(copy.attributes["operandSegmentSizes"]))
            src_indices = [mapping.get(v, v) for v in list(copy.operands)[2:2 + segments[2]]]
            new = tile.copy(copy.operands[0], view, src_indices)
            for name in copy.attributes:
                if name != "operandSegmentSizes":
                    new.attributes[name] = copy.attributes[name]
            attributes.PREFETCH.mark(new)

    def materialize(self, value: ir.Value, body: ir.Block, mapping: dict) -> None:
        """Clones the pure ops of the loop body that compute `value`, with the
        induction variable replaced, into the current insertion point."""
        if value in mapping:
            return
        owner = value.owner
        if not isinstance(owner, ir.OpView | ir.Operation) or owner.operation.block != body:
            return  # defined outside the loop
        owner = owner.operation  # pure arithmetic (analyze: _check_recomputable)
        for operand in owner.operands:
            self.materialize(operand, body, mapping)
        clone = owner.clone()
        for i, operand in enumerate(owner.operands):
            clone.operands[i] = mapping.get(operand, operand)
        for old, new in zip(owner.results, clone.results):
            mapping[old] = new


def peel_tail(loop: ir.Operation, lead: int, trips: int) -> None:
    """Runs the last `lead` iterations of the pipelined `loop` (its prefetch
    `lead` iterations ahead unclamped) in a loop of their own after it, with
    the prefetch copies and what only they used removed and tile.pipeline_tail
    set: the main loop then never prefetches past the last tile. Both loops
    compute their stages from the original lower bound. `trips`: the loop's
    constant trip count, more than `lead`."""
    lower, _, step = list(loop.operands)[:3]
    with ir.InsertionPoint(loop), loop.location:
        split = _index(_constant(lower) + (trips - lead) * _constant(step))
        main = loop.clone()
    main.operands[1] = split
    loop.operands[0] = split
    for op in list(loop.regions[0].blocks[0].operations):
        if op.operation.name == "tile.copy" and attributes.PREFETCH.is_on(op.operation):
            op.operation.erase()
    # Their addresses and stage views.
    erase_unused(loop, lambda op: op.name.startswith("arith.") or op.name == "memref.subview")
    attributes.PIPELINE_TAIL.mark(loop)


def in_peeled_tail(op: ir.Operation) -> bool:
    """Whether `op` lies in a peeled tail (a copy of its loop's body): what
    counts per iteration or per source op counts it once, in the main loop."""
    return any(attributes.PIPELINE_TAIL.is_on(parent) for parent in parent_ops(op))


def _hoist_conditional_copies(loop: ir.Operation) -> list[ir.Operation]:
    """Moves the global-to-shared copies at the top of an `scf.if`'s then
    block, directly in `loop`'s body, to just before the `scf.if`, with the
    pure arithmetic their indices come from (see the module docstring), where
    that keeps the program's meaning: every other use of the buffer a copy
    fills lies in that then block, after the copy. Returns the `scf.if`s
    that lost copies."""
    body = loop.regions[0].blocks[0]
    changed = []
    for op in list(body.operations):
        op = op.operation
        if op.name != "scf.if":
            continue
        then = op.regions[0].blocks[0]
        ops = [o.operation for o in then.operations]
        movable = []
        for position, candidate in enumerate(ops):
            if candidate.name != "tile.copy" or tile.memory_level(candidate.operands[1].type) != tile.SHARED \
                    or tile.memory_level(candidate.operands[0].type) != tile.GLOBAL:
                continue
            buffer = candidate.operands[1]
            owner = buffer.owner
            if not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "tile.alloc_shared":
                continue
            later = set(ops[position + 1:])
            if not all(use.owner == candidate or _at_or_under(use.owner, later) for use in buffer.uses):
                continue
            try:  # its indices: pure arithmetic in the branch, of values the loop can recompute
                for operand in list(candidate.operands)[2:]:
                    _check_recomputable(operand, then)
                    _check_recomputable_in_loop(operand, then, body)
            except NotPipelinable:
                continue
            movable.append(candidate)
        for copy in movable:
            for operand in list(copy.operands)[2:]:
                _move_before(operand, then, op)
            copy.move_before(op)
        if movable:
            changed.append(op)
    return changed


def _check_recomputable_in_loop(value: ir.Value, then: ir.Block, body: ir.Block) -> None:
    """The values of the loop body that `value` (computed in the branch block
    `then`) depends on are recomputable for another iteration."""
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation):
        return
    owner = owner.operation
    if owner.block == body:
        _check_recomputable(value, body)
    elif owner.block == then:
        for operand in owner.operands:
            _check_recomputable_in_loop(operand, then, body)


def _at_or_under(op, ops: set) -> bool:
    return op in ops or any(parent in ops for parent in parent_ops(op))


def _move_before(value: ir.Value, block: ir.Block, anchor: ir.Operation) -> None:
    """Moves the pure ops of `block` computing `value` before `anchor` (their
    operands first). An op other ops of the block still use stays valid: it
    now dominates them."""
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation) or owner.operation.block != block:
        return
    owner = owner.operation
    for operand in owner.operands:
        _move_before(operand, block, anchor)
    owner.move_before(anchor)


def _check_recomputable(value: ir.Value, body: ir.Block) -> None:
    """`value` is defined outside the loop body or by pure arithmetic of such
    values (what `TilePipeline.materialize` can clone for another iteration)."""
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation) or owner.operation.block != body:
        return
    owner = owner.operation
    if owner.regions or not owner.name.startswith(("arith.", "affine.apply", "index.")):
        raise NotPipelinable(f"a copy index comes from {owner.name}, which is not pure arithmetic")
    for operand in owner.operands:
        _check_recomputable(operand, body)


# Ops whose result is a view of their first operand's memory.
_VIEW_OPS = ("memref.reinterpret_cast", "memref.subview", "memref.cast", "memref.view", "memref.expand_shape",
             "memref.collapse_shape", "memref.transpose", "memref.memory_space_cast")
# Ops that only read the memref they take first.
_READS = ("tile.copy", "memref.load", "vector.load", "vector.transfer_read")


def _read_only_in(kernel: ir.Operation, source: ir.Value) -> bool:
    """Whether nothing in the kernel writes `source`'s memory: every use of
    its root memref and of every view of it (inside the kernel or not) that
    lies in the kernel reads it as its first operand."""
    while isinstance(source.owner, ir.OpView | ir.Operation) and source.owner.name in _VIEW_OPS:
        source = source.owner.operands[0]
    pending = [source]
    while pending:
        for use in pending.pop().uses:
            owner = use.owner
            if owner.name in _VIEW_OPS and use.operand_number == 0:
                pending.append(owner.results[0])
            elif _inside(owner, kernel) and not (owner.name in _READS and use.operand_number == 0):
                return False
    return True


def _leaving_lds(loop, kernel, others, staged, target) -> tuple[list, Callable[[int], int]]:
    """(the buffers of `others` the gemms of `loop` can read from global
    memory instead, `readable_from_global`; the LDS bytes of the kernel's
    buffers without them, given the stages of the loop's `staged` ones)."""
    taken = [alloc for alloc in readable_from_global(others, kernel, target)
             if any(_inside(use.owner, loop) for use in alloc.results[0].uses)]
    kept = [(op, 1) for op in others if op not in taken]
    return taken, lambda count: lds_breakdown(kept + [(op, count) for op in staged])[0]


# The share of a two-wave register budget that the kernel's fragments and
# the tiles read into registers may take: the rest holds the gemms' operands,
# addresses and temporaries. Calibrated on gfx942/gfx950 flash attention
# (llc's counts, the torch backend's kernel and TileLang's example): 128x64
# blocks of 4 waves at head size 128 (147 of 256 registers estimated) ran two
# waves per SIMD; 128x128 blocks of 4 waves (195) and 128x64 of 2 waves (294)
# kept one.
TWO_WAVE_REGISTER_SHARE = 0.6


def registers_allow_two_waves(kernel: ir.Operation, taken: list, target) -> bool:
    """Whether the kernel's register fragments and the `taken` tiles, per
    lane (their bytes over the workgroup's threads), fit
    TWO_WAVE_REGISTER_SHARE of half a SIMD's register file (two waves a
    SIMD); False where the descriptor leaves the file unknown."""
    registers = target.registers
    file = registers.vgprs_per_lane if is_unknown(registers.file_per_lane) else registers.file_per_lane
    if is_unknown(file):
        return False
    held = [op for op in walk(kernel) if op.name == "tile.alloc_fragment"] + list(taken)
    words = sum(logical_shared_bytes(op) for op in held) / (4 * kernel_threads(kernel))  # any alloc's bytes
    return words <= TWO_WAVE_REGISTER_SHARE * file / 2


def _take_out(taken: list) -> str:
    """Marks `taken` tile.read_from_global; their names for a remark."""
    for alloc in taken:
        attributes.READ_FROM_GLOBAL.mark(alloc)
    return "; ".join(shared_buffer_text(alloc) for alloc in taken)


def read_once_from_global(alloc: ir.Operation, kernel: ir.Operation) -> bool:
    """Whether a 2-D shared buffer can be read from global memory instead
    (tile.read_from_global): it is filled by one tile.copy from global
    memory into the whole buffer (no destination indices), from memory
    nothing in the kernel writes (through any view), and read only as the
    untransposed A operand of gemms that come after that copy in its block
    (or inside ops after it there). The gemms then read the copy's source
    where they are, or before the outermost loop around them the copy is
    not in, and see what the copy would have stored."""
    buffer = alloc.results[0]
    if len(ir.MemRefType(buffer.type).shape) != 2:
        return False
    fills, reads = [], []
    for use in buffer.uses:
        owner = use.owner
        if owner.name == "tile.copy" and use.operand_number == 1:
            fills.append(owner.operation)
        elif owner.name == "tile.gemm" and use.operand_number == 0 \
                and not ir.BoolAttr(owner.attributes["transpose_a"]).value:
            reads.append(owner.operation)
        else:
            return False
    if len(fills) != 1 or not reads:
        return False
    fill = fills[0]
    if tile.memory_level(fill.operands[0].type) != tile.GLOBAL \
            or list(ir.DenseI32ArrayAttr(fill.attributes["operandSegmentSizes"]))[3]:
        return False
    block = fill.block
    position = {op.operation: i for i, op in enumerate(block.operations)}
    for read in reads:  # the op of the copy's block the gemm is (in) comes after the copy
        op = next((op for op in (read, *parent_ops(read)) if op.name != "builtin.module" and op.block == block),
                  None)
        if op is None or position[op] <= position[fill]:
            return False
    return _read_only_in(kernel, fill.operands[0])


def readable_from_global(allocs: list, kernel: ir.Operation, target) -> list:
    """The buffers of `allocs` the kernel's gemms can read from global
    memory instead (`read_once_from_global`), where the target's matrix
    core reads such an A (`MatrixCore.reads_a_from_global`); none elsewhere."""
    from tilemlir.passes.lower_to_gpu.api import matrix_core_for

    if not matrix_core_for(target).reads_a_from_global:
        return []
    return [alloc for alloc in allocs if read_once_from_global(alloc, kernel)]


def _inside(op, loop: ir.Operation) -> bool:
    return any(parent == loop for parent in parent_ops(op))
