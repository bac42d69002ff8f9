"""tile-infer-layout: which lane holds which element of each register fragment,
and how wide each copy's per-lane accesses are.

A fragment that is the accumulator C of a tile.gemm takes the C/D lane layout
of the gemm's chosen instruction (`tile.mma`, `tilemlir.mma_layouts`), tiled
over the waves of `tile.warp_grid`. It is recorded on the fragment's
`tile.alloc_fragment` as

    tile.layout = {kind = "mma_accumulator", instruction = array<i64: m, n, k>,
                   warps = array<i64: wm, wn>}

with `transposed = true` added where the family's core issues the
instruction on the transposed problem, C^T += B^T A^T, so that a lane holds
runs along C's rows (every accumulator, on families whose core can:
`MatrixCore.transposes_accumulator`). All gemms
accumulating into one fragment must agree; otherwise the diagnostic names
the conflicting uses.

Every other fragment gets a layout too (`fragment_inference`,
`fragment_layout`): the accumulators anchor, layouts propagate through
tile.reduce (a reduced fragment follows its source's other dims), T.Parallel
(fragments indexed by the loop's variables take its driver's layout) and
copies between fragments; a fragment nothing reaches is `blocked` (128-bit
vectors of the narrowest type it is copied from or to, consecutive threads
along a row). For example

    tile.layout = {kind = "blocked", base_shape = array<i64: 4, 1024>, threads_per_row = 128,
                   vector = 8, rows_per_pass = 1, dims = array<i64: 0>}

is the row vector of a 4x1024 tile's row maxima. Where two uses still
disagree, the lowering converts through shared memory and a remark says so;
a T.Parallel that would write a fragment it cannot convert is refused,
naming both fragments. A fragment one thread cannot hold is refused with its
numbers: the thread's elements, packed into 32-bit registers, against the
descriptor's registers.vgprs_per_lane (`register_bound`); the lowering gives
every element its own code, so this also bounds the code per fragment access. Reductions across waves and conversions get one
`tile.alloc_shared` per element type marked `tile.scratch`, sized here. Copies into shared memory get
`tile.vector_width`: elements per lane per access, 128 bits where the row
length allows (halving until it divides).

Shared buffers read by a gemm get an LDS layout (when the family's matrix
core describes its operand reads):

    tile.smem_layout = {transposed = B, transpose_read = T, pad = P, conflicts = C,
                        banks = "..."}

* `transposed`: the buffer is stored K-contiguous (e.g. B of shape K x N is
  stored N x K), so each lane's operand elements are one vector read
  (ds_read_b64/b128) instead of one read per element;
* `transpose_read` (where the descriptor lists memory.shared_transpose_reads,
  e.g. gfx950's ds_read_b64_tr_b16/b8; option `transpose-reads`: auto, the
  default, where `transpose_reads_pay`, or true or false): an operand that is
  not K-contiguous stays as it is and the transpose reads hand each lane a K
  run of one column: no transposing copy;
* `pad`: elements added to each stored row, the smallest that makes the
  wave's operand reads conflict-free under the descriptor's bank count
  (`tilemlir.lds_banks`; when the bank count is unknown, for both 32 and 64
  banks); `conflicts` is what remains per read (0 when a padding exists);
* one buffer may be read by several gemms, as A or B, along its rows or
  down its columns (S = Q K^T next to H = K^T Q): its one layout is taken
  from all of those uses (`storage`, `buffer_layout`). Transpose reads only
  when every use reading down its columns wants and fits them (the uses
  along its rows still read vectors: `shared_memory.use_reads_transposed`);
  otherwise transposed when more uses read down its columns than along its
  rows, a remark naming the uses left reading element by element; the
  padding that costs the fewest conflict clocks over all uses, aligned for
  each use's vector reads; an XOR swizzle only when every use is a
  transpose read; `conflicts` is the costliest use's;
* when the kernel's padded buffers (times their stages) do not fit the
  workgroup's LDS and unpadded ones would fit more stages, the padding goes:
  `pad = 0`, `conflicts` those of the unpadded rows, `dropped_pad` the
  padding given up (otherwise tile-pipeline steps the stages down, padding
  and all: `fit_padding`); padding that fits goes too where the LDS then
  holds more waves per SIMD and every padded buffer has a swizzle that
  leaves few of the unpadded rows' conflicts (`more_workgroups_unpadded`).
  Where the matrix core reads XOR-swizzled rows
  with its vector reads (`MatrixCore.reads_swizzled_rows`: AMD) and only
  copies into the buffer and gemms use it, the rows are swizzled instead,
  by the swizzle that leaves the fewest conflicts (found when the padding
  is chosen, `buffer_layout`). A gemm whose A and B both lie in such rows
  reads several K steps at once where the matrix core can
  (`MatrixCore.k_steps_per_read`, recorded as `tile.operand_read_steps`;
  AMD: a 16-byte chunk a lane for two steps, where the steps' 8-byte reads
  at scattered columns would not merge as they do in padded rows), and the
  buffers' `conflicts` are counted for those reads (`pair_swizzled_reads`):
  flash attention at d = 128 on gfx942 costs 128 conflict clocks per
  iteration (V's reads) where unpadded rows cost 4800.

Whatever is given up is said in a remark at the buffer, with its cost: row
padding dropped to fit the LDS (bank-conflict clocks per iteration with and
without it), transpose reads asked for (`true`, or `auto` on a chip that has
them) that the element width or shape cannot use, and reads no padding or
swizzle makes conflict-free (the clocks that remain).

A buffer the program indexes itself (any user besides tile.copy, tile.gemm
and tile.fill, whose lowerings follow the recorded layout: memref.load/store,
vector ops, views) keeps the layout it is written in: not transposed, no pad,
no swizzle, no transpose reads; its `tile.smem_layout` says why in
`as_written` (the first such use and its position). tile-lower-to-gpu refuses
a program access to a buffer stored any other way.

The gemm gets `tile.lds_conflicts`: the conflict clocks of all its operand
reads in one execution (summed over its reads: K steps, or pairs of them,
and instruction tiles), which the lowering reports per main-loop iteration.

Input invariant: tile-select-mma ran (in-kernel gemms carry tile.mma and
tile.warp_grid); gemm A/B operands are shared buffers.
Output invariant: every fragment has tile.layout (gemm accumulators the
instruction's) and fits one thread's registers; every global->shared tile.copy has tile.vector_width; a
shared buffer the program indexes itself is stored as written; the kernel
has the tile.scratch its reductions and conversions need.

Example:

    %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
    // becomes
    %c = "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 32, 32, 16>,
        kind = "mma_accumulator", transposed = true, warps = array<i64: 2, 2>}} : () -> memref<128x128xf32, ...>
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.dialects import attributes, tile
from tilemlir.irutil import walk
from tilemlir.lds_banks import (
    LARGEST_PADDING,
    conflict_free_swizzle,
    least_conflicted_padding,
    least_conflicted_swizzle,
)
from tilemlir.passes.base import PassState, Switch, TilePass, resolve_switch
from tilemlir.passes.fragment_inference import (
    FragmentLayouts,
    conversions,
    parallel_loop,
    scratch_uses,
)
from tilemlir.passes.fragment_layout import FragmentLayout
from tilemlir.passes.gemm_facts import MmaChoice, copy_vector_width, k_along_rows, warp_grid_of
from tilemlir.passes.gpu_builders import bit_width
from tilemlir.passes.kernel_facts import enclosing_kernel, i64_array, int_attr, kernel_threads
from tilemlir.passes.lower_to_gpu.api import matrix_core_for
from tilemlir.passes.shared_memory import (
    TRANSPOSE_READS,
    logical_shared_bytes,
    operand_conflicts,
    operand_read,
    operand_reads_of,
    physical_shared_bytes,
    shared_alloc_of,
    shared_buffer_text,
    shared_layout,
    transpose_read_elements,
    waves_by_lds,
)
from tilemlir.passes.stage_operands import register_a_from
from tilemlir.targets import resolve_target
from tilemlir.targets.model import is_unknown
from tilemlir.targets.registry import shipped_targets


def transpose_reads_pay(gemm: ir.Operation, target) -> bool:
    """tile-infer-layout{transpose-reads=auto}: whether a gemm's operands that
    are not K-contiguous are read with LDS transpose reads (and, with
    tile-lower-to-gpu{direct-lds-loads=auto}, its loop's copies go straight
    into LDS): where its accumulator takes at most a quarter of a lane's
    registers (registers.vgprs_per_lane).

    Measured with bench/amd_vs_triton.py on gfx950 (mfma_busy_ratio, spills;
    transpose-read rows XOR-swizzled, see conflict_free_swizzle). Transpose reads
    alone: fp8 128x128x128 0.410 -> 0.512, f16 256x256x64 0.751 -> 0.255 with
    82 spills; direct loads alone: 0.327 and 0.607. Together they keep the
    operands out of VGPRs entirely and pay where the accumulator leaves room:
    fp8 128x128x128 in 4 waves (64 of 512 registers) 0.410 -> 0.650, f16
    256x256x64 in 8 waves (128) 0.285 with 141 spills -> 0.541 with none; but
    not f16 256x256x64 in 4 waves (256 of 512): 0.751 -> 0.610, 32 spills."""
    registers = target.registers.vgprs_per_lane
    kernel = enclosing_kernel(gemm)
    if is_unknown(registers) or kernel is None:
        return False
    accumulator = ir.MemRefType(gemm.operands[2].type)
    bits = math.prod(accumulator.shape) * max(32, bit_width(accumulator.element_type))
    per_lane = bits // 32 // kernel_threads(kernel)
    return per_lane * 4 <= registers


def fragment_registers(layout: FragmentLayout, element: ir.Type) -> int:
    """32-bit registers one thread needs for its elements of a fragment (its
    layout's slots), packed: the fewest any lowering could use (two f16 to a
    register, an f64 in two)."""
    return math.ceil(len(layout.slots) * bit_width(element) / 32)


def register_bound(target) -> tuple[int, str] | None:
    """The registers one thread may hold, and where the number comes from:
    the descriptor's `registers.vgprs_per_lane` (gfx942: 512, VGPRs and AGPRs
    together; sm_90a: 255 per thread). Where the descriptor leaves it unknown
    (MetaX), the most any shipped descriptor states, so that only a fragment
    no known GPU could hold is refused; None when none states one."""
    registers = target.registers.vgprs_per_lane
    if not is_unknown(registers):
        return registers, f"{target} has {registers} registers per lane (registers.vgprs_per_lane)"
    stated = [(t.registers.vgprs_per_lane, str(t)) for t in shipped_targets()
              if not is_unknown(t.registers.vgprs_per_lane)]
    if not stated:
        return None
    most = max(value for value, _ in stated)
    names = ", ".join(sorted(name for value, name in stated if value == most))
    return most, (f"{target}'s registers per lane are unknown (registers.vgprs_per_lane), and no "
                  f"shipped target has more than {most} ({names})")


# Users of a shared buffer that follow whatever layout this pass records: the
# copies into and out of it and tile.fill are lowered from tile.smem_layout,
# gemm operand reads likewise. Any other user (memref.load/store, vector ops,
# views, calls) addresses it with logical indices.
LAYOUT_AWARE_USERS = ("tile.copy", "tile.gemm", "tile.fill")


def program_accesses(alloc: ir.Operation) -> list[ir.Operation]:
    """The users of a tile.alloc_shared that index it as written (logical
    indices), in program order: those not in LAYOUT_AWARE_USERS."""
    from tilemlir.diagnostics import file_position

    accesses = [use.owner for use in alloc.results[0].uses if use.owner.name not in LAYOUT_AWARE_USERS]
    return sorted(accesses, key=lambda op: file_position(op.location)[1:])  # uses are listed last first


def bank_facts(target) -> tuple[tuple[int, ...], int, str]:
    """The bank counts to model (both 32 and 64 where the descriptor does not
    know), the bank width, and the note tile.smem_layout records."""
    banks = target.memory.shared_banks
    bank_bytes = target.memory.shared_bank_bytes
    bank_bytes = 4 if is_unknown(bank_bytes) else bank_bytes
    if is_unknown(banks):
        return (32, 64), bank_bytes, "unknown (32 and 64 checked)"
    return (banks,), bank_bytes, str(banks)


def more_workgroups_unpadded(allocs: list[ir.Operation], padded: int, unpadded: int, threads: int,
                             target) -> str | None:
    """Why a kernel whose padded buffers fit its LDS drops their padding all
    the same, or None: unpadded, more of its waves fit a SIMD by the LDS
    (`shared_memory.waves_by_lds`, up to compute.max_waves_per_simd; the
    registers are not known yet), and every padded buffer has a swizzle
    for its unpadded rows (`buffer_layout` offers one where the matrix core
    reads swizzled rows) that leaves at most SWIZZLE_LEFTOVER of the
    conflicts the unpadded rows would cost: 2 KiB of padding must not halve
    the waves that hide each other's latency (flash attention at d 64 in
    128x64 blocks of 4 waves on gfx942: 34816 bytes padded, one workgroup;
    32768 swizzled, two, 4 conflict clocks per read of 60 unswizzled)."""
    if not padded or not unpadded:
        return None
    cap = target.compute.max_waves_per_simd
    waves = [waves_by_lds(lds, threads, target) for lds in (padded, unpadded)]
    if None in waves:
        return None
    if not is_unknown(cap):
        waves = [min(w, cap) for w in waves]
    if waves[1] <= waves[0]:
        return None
    for op in allocs:
        layout = attributes.SMEM_LAYOUT.read(op)
        if layout is None or not ir.IntegerAttr(layout["pad"]).value:
            continue
        if UNPADDED_SWIZZLE not in layout or ir.IntegerAttr(layout[SWIZZLED_CONFLICTS]).value \
                > SWIZZLE_LEFTOVER * ir.IntegerAttr(layout["unpadded_conflicts"]).value:
            return None
    per_cu = target.memory.shared_bytes_per_cu
    per_simd = [f"{w} wave{'s' if w != 1 else ''} per SIMD" for w in waves]
    return (f"to fit {per_cu // unpadded} workgroups ({per_simd[1]}) into a CU's {per_cu} bytes of LDS, "
            f"where {per_cu // padded} fit with padding ({padded} bytes each, {per_simd[0]})")


def read_cost(read, banks_options: tuple[int, ...], bank_bytes: int, pad: int = 0, swizzle: int = 0) -> int:
    """Conflict clocks of one operand read (`shared_memory.OperandRead`: all
    of its accesses) in rows padded by `pad` and swizzled by `swizzle`, the
    worst of the bank counts modelled (`bank_facts`)."""
    return max(read.conflicts(b, bank_bytes, pad, swizzle) for b in banks_options) * read.accesses


def _swizzled_along_rows(alloc: ir.Operation) -> bool:
    """A buffer stored in XOR-swizzled, unpadded rows that its reads take
    along the rows (not with LDS transpose reads)."""
    layout = shared_layout(alloc)
    return bool(layout.swizzle) and not layout.pad and not layout.transpose_read


def filled_and_gemm_read(alloc: ir.Operation) -> bool:
    """Whether every user of a tile.alloc_shared is a gemm reading it or a
    tile.copy or tile.fill into it: the users whose lowerings read and write
    XOR-swizzled rows wherever they run (a copy out of a window of it does not)."""
    buffer = alloc.results[0]

    def swizzles_with_it(user: ir.Operation) -> bool:
        destination = {"tile.copy": 1, "tile.fill": 0}.get(user.name)
        return user.name == "tile.gemm" or (destination is not None and user.operands[destination] == buffer)
    return all(swizzles_with_it(use.owner) for use in buffer.uses)


def as_written_reason(accesses: list[ir.Operation]) -> str:
    """Why a shared buffer keeps its written layout (tile.smem_layout as_written)."""
    first = accesses[0]
    more = f" and {len(accesses) - 1} more" if len(accesses) > 1 else ""
    return (f"kept as written (no transpose, padding or swizzle): {first.name} at "
            f"{_location_text(first)}{more} indexes it directly")


def _location_text(op: ir.Operation) -> str:
    from tilemlir.diagnostics import file_position

    file, line, col = file_position(op.location)
    return f"{file}:{line}:{col}" if line else str(op.location)


def _stages_of(alloc: ir.Operation) -> int:
    """How many copies tile-pipeline will make of a shared buffer: the stages
    of the pipelined loop whose copies fill it (1 otherwise)."""
    for use in alloc.results[0].uses:
        user = use.owner
        if user.name != "tile.copy":
            continue
        loop = user.parent
        stages = attributes.NUM_STAGES.read(loop) if loop is not None and loop.name == "scf.for" else None
        if stages is not None:
            return max(1, stages)
    return 1


@dataclass(frozen=True)
class OperandUse:
    """One gemm's read of a shared buffer: operand `role` ("A" or "B") of
    `gemm`, its lanes (the matrix core's `operand_lanes` entry: outer index,
    K index, elements per lane), whether its K runs along the buffer's rows
    as written, and whether its gemm wants LDS transpose reads."""

    gemm: ir.Operation
    role: str
    lanes: tuple
    k_contiguous: bool
    transpose_reads: bool


def use_text(use: OperandUse) -> str:
    return f"operand {use.role} of the gemm at {_location_text(use.gemm)}"


# Entries of tile.smem_layout that live only between buffer_layout and
# fit_padding: the XOR swizzle of a padded buffer's unpadded rows where the
# matrix core reads swizzled rows, and its conflict clocks per read.
UNPADDED_SWIZZLE, SWIZZLED_CONFLICTS = "unpadded_swizzle", "swizzled_conflicts"
# The share of the unpadded rows' conflicts a swizzle may leave where padding
# that fits is dropped for more workgroups per CU (`more_workgroups_unpadded`):
# a few clocks a read, against half the waves.
SWIZZLE_LEFTOVER = 1 / 8


def common_swizzle(reads: list, banks_options, bank_bytes: int) -> int | None:
    """The smallest XOR swizzle of the 16-byte chunks of a buffer's (unpadded)
    rows under which every one of `reads` is free of bank conflicts for every
    bank count, or None."""
    return conflict_free_swizzle(reads[0].row_elements * reads[0].element_bytes, lambda swizzle: all(
        read.conflicts(banks, bank_bytes, 0, swizzle) == 0 for read in reads for banks in banks_options))


@dataclass(frozen=True)
class TileInferLayout(TilePass):
    name: ClassVar[str] = "tile-infer-layout"
    summary: ClassVar[str] = "Assign lane layouts to register fragments and vector widths to copies"

    target: str = ""
    # Read operands that are not K-contiguous with the chip's LDS transpose
    # reads instead of storing them transposed; "auto": where the gemm's
    # accumulator takes at most a quarter of a lane's registers
    # (`transpose_reads_pay`).
    transpose_reads: Switch = "auto"

    def run(self, module: ir.Operation, state: PassState) -> None:
        chosen: dict = {}  # fragment value -> (layout key, the gemm that set it)
        for op in walk(module):
            if op.name == "tile.gemm" and enclosing_kernel(op) is not None:
                self.layout_from_gemm(op, chosen, state)
            elif op.name == "tile.copy" and enclosing_kernel(op) is not None:
                self.copy_width(op)
        if not state.failed:
            for kernel in [op for op in walk(module) if op.name == "tile.kernel"]:
                self.shared_layouts(kernel, state)
        if not state.failed:
            for kernel in [op for op in walk(module) if op.name == "tile.kernel"]:
                self.fragment_layouts(kernel, state)
        if not state.failed:
            for kernel in [op for op in walk(module) if op.name == "tile.kernel"]:
                self.fit_padding(kernel, state)

    def fragment_layouts(self, kernel: ir.Operation, state: PassState) -> None:
        """Every fragment's lane layout (`fragment_inference`), and the shared
        scratch its reductions and layout conversions need."""
        target = resolve_target(kernel, self.target)
        core = matrix_core_for(target)
        wave = target.require("compute.wave_size", "fragment layouts")

        def lanes(m: int, n: int, k: int):
            return core.accumulator_layout(m, n, k, wave)

        inference = FragmentLayouts(kernel, target, lanes, state)
        inference.run()
        if state.failed:
            return
        self.check_registers(inference, target, state)
        if state.failed:
            return
        layouts = {value: assigned.layout for value, assigned in inference.assigned.items()}
        for op in walk(kernel):
            if op.name != "scf.parallel":
                continue
            loop = parallel_loop(op)
            for fragment, _ in conversions(loop, layouts):
                writes = [a for a in loop.accesses if a.fragment == fragment and a.writes]
                if writes:
                    driver = loop.driver.fragment
                    state.error(writes[0].op, (
                        f"tile-infer-layout: this T.Parallel runs over the fragment at "
                        f"{_location_text(driver.owner)} ({layouts[driver].describe()}) and writes the "
                        f"fragment at {_location_text(fragment.owner)}, which is laid out otherwise "
                        f"({layouts[fragment].describe()}, fixed by its other uses); write it in a "
                        "T.Parallel over its own shape, or copy it into a fragment of the loop's layout"))
        if state.failed:
            return
        for stale in [op for op in walk(kernel) if attributes.SCRATCH.is_on(op)]:
            stale.erase()
        body = kernel.regions[0].blocks[0]
        needs: dict = {}
        for use in scratch_uses(kernel, layouts, wave):
            needs[use.element] = max(needs.get(use.element, 0), use.count)
            if use.remark is not None:
                state.remark(use.op, use.remark, kind="speed")
        for element, count in needs.items():
            with ir.InsertionPoint.at_block_begin(body), kernel.location:
                memref_type = ir.MemRefType.get([count], element,
                                                memory_space=ir.Attribute.parse("#gpu.address_space<workgroup>"))
                scratch = tile.alloc_shared(memref_type)
                attributes.SCRATCH.mark(scratch.owner)

    @staticmethod
    def check_registers(inference: FragmentLayouts, target, state: PassState) -> None:
        """Refuses a fragment whose elements in one thread cannot fit that
        thread's registers (`fragment_registers` against `register_bound`):
        its code would be unrolled per element and spill anyway, and the code
        generator's time grows faster than the element count (a 64x64 f32
        fragment held by one thread ran llc for minutes)."""
        bound = register_bound(target)
        if bound is None:
            return
        limit, why = bound
        for op in inference.fragments:
            assigned = inference.assigned.get(op.results[0])
            if assigned is None:
                continue
            memref_type = ir.MemRefType(op.results[0].type)
            element = memref_type.element_type
            registers = fragment_registers(assigned.layout, element)
            if registers <= limit:
                continue
            shape = "x".join(str(d) for d in memref_type.shape) or "scalar"
            threads = inference.threads
            state.error(op, (
                f"tile-infer-layout: this fragment ({shape}x{element}) needs {registers} registers per "
                f"thread ({len(assigned.layout.slots)} of its {math.prod(memref_type.shape)} elements in "
                f"each of {threads} thread{'s' if threads != 1 else ''}, {assigned.layout.kind} layout); {why}; "
                "spread it over more threads or hold less of it at a time"))

    def fit_padding(self, kernel: ir.Operation, state: PassState) -> None:
        """`drop_padding_to_fit`, then the swizzles buffer_layout offered for
        it are taken off every buffer's tile.smem_layout."""
        self.drop_padding_to_fit(kernel, state)
        for op in walk(kernel):
            layout = attributes.SMEM_LAYOUT.read(op) if op.name == "tile.alloc_shared" else None
            if layout is not None and UNPADDED_SWIZZLE in layout:
                attributes.SMEM_LAYOUT.write(op, {entry.name: entry.attr for entry in layout
                                                  if entry.name not in (UNPADDED_SWIZZLE, SWIZZLED_CONFLICTS)})

    def drop_padding_to_fit(self, kernel: ir.Operation, state: PassState) -> None:
        """Row padding must not push a kernel over its LDS: if the kernel's
        shared buffers, padded and times the stages of the loop filling them,
        exceed the workgroup's LDS, the padding goes (conflicts stay as
        computed for the unpadded rows and are reported), the padding given
        up is recorded (`dropped_pad`) and a remark says what it costs --
        unless dropping it would fit no more stages than keeping it: then
        tile-pipeline steps the stages down to what fits, padding and all
        (flash attention's K and V at d = 128 on gfx942: one padded stage,
        not one unpadded stage with 1920 bank-conflict clocks per iteration).
        Padding that fits goes as well where `more_workgroups_unpadded` says
        why; either way gemms whose operands lie in swizzled rows then read
        them several K steps at a time (`pair_swizzled_reads`)."""
        target = resolve_target(kernel, self.target)
        limit = target.memory.shared_bytes_per_workgroup
        if is_unknown(limit):
            return
        allocs = [op for op in walk(kernel) if op.name == "tile.alloc_shared"]
        gemms = [op for op in walk(kernel) if op.name == "tile.gemm"]

        def total(bytes_of, stages: int) -> int:
            return sum(bytes_of(op) * min(_stages_of(op), stages) for op in allocs)

        def most_stages(bytes_of) -> int:
            """The most stages (each loop's own, capped) that fit; 0 if one does not."""
            return next((s for s in range(requested, 0, -1) if total(bytes_of, s) <= limit), 0)

        requested = max((_stages_of(op) for op in allocs), default=1)
        padded = total(physical_shared_bytes, requested)
        if padded <= limit:
            why = more_workgroups_unpadded(allocs, padded, total(logical_shared_bytes, requested),
                                           kernel_threads(kernel), target)
            if why is None:
                return
        elif most_stages(physical_shared_bytes) >= max(1, most_stages(logical_shared_bytes)):
            # Unpadded, no more stages would fit: tile-pipeline steps them down
            # to the most that fit (a remark says so), padding and all.
            return
        else:
            why = f"to fit the kernel into {target.name}'s {limit} bytes of LDS ({padded} bytes with padding)"
        dropped = {}
        for op in allocs:
            layout = attributes.SMEM_LAYOUT.read(op)
            if layout is not None:
                entries = {name: layout[name]
                           for name in ("transposed", "transpose_read", "banks", "conflicts", "swizzle",
                                     "as_written", "dropped_pad")
                           if name in layout}
                pad = ir.IntegerAttr(layout["pad"]).value
                entries["pad"] = int_attr(0)
                # A hand-written layout may lack the bank model's entries: nothing to carry over.
                if "unpadded_conflicts" in layout:
                    if "swizzle" not in layout:  # a swizzled layout has no padding to lose
                        entries["conflicts"] = layout["unpadded_conflicts"]
                    entries["unpadded_conflicts"] = layout["unpadded_conflicts"]
                if pad and UNPADDED_SWIZZLE in layout:
                    # The rows XOR-swizzled instead: fewer conflicts, no LDS more.
                    entries.update(swizzle=layout[UNPADDED_SWIZZLE], conflicts=layout[SWIZZLED_CONFLICTS])
                if pad:
                    entries["dropped_pad"] = int_attr(pad)
                    dropped[op] = (pad, operand_reads_of(op, gemms))
                attributes.SMEM_LAYOUT.write(op, entries)
        self.pair_swizzled_reads(gemms, target)
        for gemm in gemms:
            if attributes.MMA.is_on(gemm):
                self.count_conflicts(gemm)
        for op, (pad, reads) in dropped.items():
            before, after = (sum(clocks for _, _, clocks in r) for r in (reads, operand_reads_of(op, gemms)))
            cost = ""
            if reads:
                cost = f": its gemm operand reads cost {after} bank-conflict clocks per iteration"
                cost += f" instead of {before}" if after != before else ", as padded"
            swizzle = shared_layout(op).swizzle
            if swizzle:
                cost = f"; its rows are XOR-swizzled instead (swizzle {swizzle}){cost}"
            # A cost only where the reads conflict more (or nobody counted them).
            kind = "speed" if not reads or after > before else "info"
            state.remark(op, (f"tile-infer-layout: row padding of {pad} elements dropped from "
                              f"{shared_buffer_text(op)} {why}{cost}"), kind=kind)

    @staticmethod
    def pair_swizzled_reads(gemms: list[ir.Operation], target) -> None:
        """Gemms whose A and B both lie in XOR-swizzled rows (their padding
        dropped to fit) read several K steps at once where the matrix core
        can (`MatrixCore.k_steps_per_read`; tile.operand_read_steps): a
        swizzled row's 16-byte chunk is one 16-byte read, where the steps'
        8-byte reads, whose columns the swizzle scatters, cannot merge into
        one two-address read as llc merges them in padded rows (ds_read2_b64);
        there pairing would need wider padding for nothing. The conflict
        counts of the buffers they read are counted again for those reads."""
        wave = target.require("compute.wave_size", "LDS layouts")
        core = matrix_core_for(target)
        paired = set()
        for gemm in gemms:
            allocs = [shared_alloc_of(operand) for operand in gemm.operands[:2]]
            if MmaChoice.of(gemm) is None or any(alloc is None or not _swizzled_along_rows(alloc)
                                                 for alloc in allocs):
                continue
            steps = core.k_steps_per_read(gemm, wave)
            if steps > 1:
                attributes.OPERAND_READ_STEPS.write(gemm, steps)
                paired.update(allocs)
        banks_options, bank_bytes, _ = bank_facts(target)
        for alloc in paired:
            layout = shared_layout(alloc)
            shape = list(ir.MemRefType(alloc.results[0].type).shape)
            element_bytes = max(1, bit_width(ir.MemRefType(alloc.results[0].type).element_type) // 8)
            costs = []
            for role, gemm, _ in operand_reads_of(alloc, gemms):
                choice = MmaChoice.of(gemm)
                steps = attributes.OPERAND_READ_STEPS.read(gemm) or 1
                lanes = core.operand_lanes(choice.m, choice.n, choice.k, wave, steps=steps)
                read = operand_read(lanes[0 if role == "A" else 1], shape, element_bytes,
                                    k_along_rows(gemm)[0 if role == "A" else 1], layout.transposed)
                costs.append(read_cost(read, banks_options, bank_bytes, 0, layout.swizzle))
            entries = {named.name: named.attr for named in attributes.SMEM_LAYOUT.read(alloc)}
            entries["conflicts"] = int_attr(max(costs))
            attributes.SMEM_LAYOUT.write(alloc, entries)

    def layout_from_gemm(self, op: ir.Operation, chosen: dict, state: PassState) -> None:
        choice, warps = MmaChoice.of(op), warp_grid_of(op)
        if choice is None or warps is None:
            state.error(op, "tile-infer-layout: tile.gemm has no chosen instruction; run "
                            "tile-select-mma first")
            return
        for role, operand in (("A", op.operands[0]), ("B", op.operands[1])):
            if tile.memory_level(operand.type) != tile.FRAGMENT:
                continue
            if role == "A" and register_a_from(op, resolve_target(op, self.target)) is not None:
                continue  # the accumulator layout of its source gemm (copy propagation)
            state.error(op, f"tile-infer-layout: gemm operand {role} is held in registers where "
                            "the matrix instruction cannot read it (run tile-stage-operands, which "
                            "stages it through shared memory)")
            return
        accumulator = op.operands[2]
        owner = accumulator.owner
        if not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "tile.alloc_fragment":
            state.error(op, "tile-infer-layout: the gemm accumulator must come from tile.alloc_fragment")
            return
        key = (choice.m, choice.n, choice.k, warps)
        previous = chosen.get(accumulator)
        if previous is not None and previous[0] != key:
            other = previous[1]
            state.error(
                op,
                f"tile-infer-layout: conflicting layouts for one accumulator fragment: this gemm "
                f"uses {choice.name} over {warps[0]}x{warps[1]} waves, the gemm at "
                f"{_location_text(other)} uses a {previous[0][0]}x{previous[0][1]}x{previous[0][2]} "
                f"instruction over {previous[0][3][0]}x{previous[0][3][1]} waves",
            )
            return
        chosen[accumulator] = (key, op)
        entries = {
            "kind": ir.StringAttr.get("mma_accumulator"),
            "instruction": i64_array([choice.m, choice.n, choice.k]),
            "warps": i64_array(list(warps)),
        }
        if matrix_core_for(resolve_target(op, self.target)).transposes_accumulator:
            entries["transposed"] = ir.BoolAttr.get(True)
        attributes.LAYOUT.write(owner, entries)

    def shared_layouts(self, kernel: ir.Operation, state: PassState) -> None:
        """The LDS layout of every shared buffer the kernel's gemms read
        (`buffer_layout`), taken once per buffer from all of its gemm uses,
        then each gemm's conflict clocks."""
        gemms = [op for op in walk(kernel) if op.name == "tile.gemm"]
        if not gemms:
            return
        target = resolve_target(kernel, self.target)
        wave = target.require("compute.wave_size", "LDS layouts")
        core = matrix_core_for(target)
        uses: dict = {}  # tile.alloc_shared -> [OperandUse], in program order
        counted = []
        for op in gemms:
            choice, warps = MmaChoice.of(op), warp_grid_of(op)
            if choice is None or warps is None:
                continue
            if attributes.OPERAND_READ_STEPS.is_on(op):  # decided again (`pair_swizzled_reads`)
                del op.attributes[attributes.OPERAND_READ_STEPS.name]
            try:
                lanes = core.operand_lanes(choice.m, choice.n, choice.k, wave)
            except ValueError as error:  # a tile.mma written by hand
                state.error(op, f"tile-infer-layout: this gemm's {attributes.MMA.name} ({choice.name}, "
                                f"{choice.m}x{choice.n}x{choice.k}) has no lane layout on {target.family}:"
                                f"{target.name}: {error} (run tile-select-mma, which chooses one)")
                continue
            if lanes is None:
                continue
            counted.append(op)
            wanted = resolve_switch(self.transpose_reads, transpose_reads_pay(op, target))
            a_along, b_along = k_along_rows(op)
            for role, operand, lanes_of, k_contiguous in (
                ("A", op.operands[0], lanes[0], a_along),
                ("B", op.operands[1], lanes[1], b_along),
            ):
                owner = operand.owner
                if isinstance(owner, ir.OpView | ir.Operation) and owner.name == "tile.alloc_shared":
                    uses.setdefault(owner.operation, []).append(
                        OperandUse(op, role, lanes_of, k_contiguous, wanted))
        for owner, buffer_uses in uses.items():
            self.buffer_layout(owner, buffer_uses, target, state)
        for op in counted:
            self.count_conflicts(op)

    def buffer_layout(self, owner: ir.Operation, uses: list[OperandUse], target, state: PassState) -> None:
        """One tile.smem_layout for a shared buffer that serves every gemm
        reading it: stored transposed or not and for transpose reads or not
        (`storage`), then the padding (or XOR swizzle) that leaves the fewest
        conflict clocks over all of its uses' reads. `conflicts` is the
        costliest use's per operand read."""
        banks_options, bank_bytes, banks_note = bank_facts(target)
        memref_type = ir.MemRefType(owner.results[0].type)
        shape = list(memref_type.shape)
        element_bits = memref_type.element_type.width
        element_bytes = max(1, element_bits // 8)

        def costs(reads: list, pad: int = 0, swizzle: int = 0) -> list[int]:
            return [read_cost(read, banks_options, bank_bytes, pad, swizzle) for read in reads]

        accesses = program_accesses(owner)
        if accesses:
            # The program's own loads and stores use logical indices: the
            # buffer stays as written (row-major, no padding, no swizzle).
            conflicts = max(costs([operand_read(use.lanes, shape, element_bytes, use.k_contiguous)
                                   for use in uses]))
            attributes.SMEM_LAYOUT.write(owner, {
                "transposed": ir.BoolAttr.get(False),
                "transpose_read": ir.BoolAttr.get(False),
                "pad": int_attr(0),
                "conflicts": int_attr(conflicts),
                "unpadded_conflicts": int_attr(conflicts),
                "banks": ir.StringAttr.get(banks_note),
                "as_written": ir.StringAttr.get(as_written_reason(accesses)),
            })
            return
        transposed, transpose = self.storage(owner, uses, shape, element_bits, target, state)
        reads = [operand_read(use.lanes, shape, element_bytes, use.k_contiguous, transposed, transpose)
                 for use in uses]
        # Pads keep every use's vector reads aligned to their width (powers of two).
        pad, best = least_conflicted_padding(lambda padding: sum(costs(reads, padding)),
                                             step=max(read.per_access for read in reads))
        conflicts, unpadded = costs(reads, pad), costs(reads)
        swizzle = None
        along = next((use for use in uses if use.k_contiguous), None)
        if best and transpose is not None and along is None:
            # Transpose reads of 4 rows x 64 bytes per 32 lanes: no row
            # padding avoids conflicts with 32 and with 64 banks at once; an
            # XOR swizzle of the 16-byte chunks does. Only transpose reads
            # read swizzled rows: every use must be one.
            swizzle = common_swizzle(reads, banks_options, bank_bytes)
        entries = {
            "transposed": ir.BoolAttr.get(transposed),
            "transpose_read": ir.BoolAttr.get(transpose is not None),
            "pad": int_attr(pad),
            "conflicts": int_attr(max(conflicts)),  # per operand read, the costliest use's
            "unpadded_conflicts": int_attr(max(unpadded)),
            "banks": ir.StringAttr.get(banks_note),
        }
        if swizzle is None and pad and matrix_core_for(target).reads_swizzled_rows and filled_and_gemm_read(owner):
            # Unpadded rows XOR-swizzled, for fit_padding if it drops the padding:
            # the swizzle that leaves the fewest conflict clocks, if any is fewer.
            unpadded_swizzle = least_conflicted_swizzle(reads[0].row_elements * reads[0].element_bytes,
                                                        lambda s: sum(costs(reads, 0, s)))
            if unpadded_swizzle is not None:  # for fit_padding, which removes these entries
                entries[UNPADDED_SWIZZLE] = int_attr(unpadded_swizzle)
                entries[SWIZZLED_CONFLICTS] = int_attr(max(costs(reads, 0, unpadded_swizzle)))
        if swizzle is not None:
            entries.update(pad=int_attr(0), conflicts=int_attr(0), swizzle=int_attr(swizzle))
        elif best:
            tried = f"no row padding up to {LARGEST_PADDING} elements"
            if transpose is not None and along is None:
                tried += " and no XOR swizzle"
            elif transpose is not None:
                tried += (f" (no XOR swizzle: {use_text(along)} reads it along its rows, and only "
                          "transpose reads read swizzled rows)")
            worst = max(range(len(uses)), key=lambda i: conflicts[i])
            state.remark(owner, (
                f"tile-infer-layout: {tried} makes the reads of {shared_buffer_text(owner)} "
                f"({use_text(uses[worst])}) free of bank conflicts; padded by {pad} elements, "
                f"{conflicts[worst]} conflict clocks per operand read remain (banks: {banks_note})"),
                kind="speed")
        attributes.SMEM_LAYOUT.write(owner, entries)

    def storage(self, owner: ir.Operation, uses: list[OperandUse], shape: list[int], element_bits: int,
                target, state: PassState) -> tuple[bool, int | None]:
        """How a buffer read by `uses` is stored: (transposed, elements per
        lane of its LDS transpose reads or None). Uses whose K runs along the
        rows as written read them as vectors; the others (`across`) need the
        buffer transposed, or LDS transpose reads. Transpose reads are taken
        only when every use across wants them (transpose-reads, or auto where
        `transpose_reads_pay`) and can use them (`transpose_read_fit`): the
        buffer stays as written and the uses along still read vectors.
        Otherwise the buffer is transposed when more uses read across than
        along; a remark names the uses left reading element by element, and
        the transpose reads given up for one use's sake."""
        across = [use for use in uses if not use.k_contiguous]
        along = [use for use in uses if use.k_contiguous]
        if not across:
            return False, None
        wanted = [use for use in across if use.transpose_reads]
        fits = [self.transpose_read_fit(use.gemm, use.role, owner, use.lanes[2], shape, element_bits,
                                        target, state) for use in wanted]
        if len(wanted) == len(across) and all(fit is not None for fit in fits):
            return False, fits[0]
        transposed = len(across) > len(along)
        if wanted and all(fit is not None for fit in fits):
            unwanted = next(use for use in across if not use.transpose_reads)
            state.remark(owner, (
                f"tile-infer-layout: {shared_buffer_text(owner)} is not read with LDS transpose reads "
                f"({use_text(wanted[0])} wants them): one layout serves every gemm reading it, and "
                f"{use_text(unwanted)} does not (transpose-reads=auto, its accumulator leaves too few "
                "registers: transpose_reads_pay)"), kind="speed")
        slow = along if transposed else across
        if slow:
            state.remark(owner, (
                f"tile-infer-layout: the gemms reading {shared_buffer_text(owner)} want it stored both "
                f"ways: stored {'transposed' if transposed else 'as written'}, "
                f"{', '.join(use_text(use) for use in slow)} read{'s' if len(slow) == 1 else ''} it "
                "element by element"), kind="speed")
        return transposed, None

    def transpose_read_fit(self, gemm: ir.Operation, role: str, alloc: ir.Operation, count: int,
                           shape: list[int], element_bits: int, target, state: PassState) -> int | None:
        """Elements per lane of the LDS transpose read this operand (not
        K-contiguous, transpose reads wanted) is read with, or None: the chip
        has none for its element width, or they do not divide the lane's run
        or the row. A remark says so when the reads were asked for
        (`transpose-reads=true`) or the chip has them (`auto`)."""
        elements = transpose_read_elements(target, element_bits)
        if elements is not None and count % elements == 0 and shape[-1] % elements == 0:
            return elements
        if elements is None and self.transpose_reads != "true":
            return None  # auto on a chip without them: nothing was given up
        if elements is None:
            why = (f"{target.name} has no LDS transpose read of {element_bits}-bit elements "
                   "(memory.shared_transpose_reads)")
        else:
            why = (f"{TRANSPOSE_READS[element_bits][0]} reads {elements} elements per lane, which do "
                   f"not divide the {count} each lane reads or the rows of {shape[-1]}")
        state.remark(alloc, (f"tile-infer-layout: operand {role} of the gemm at {_location_text(gemm)} "
                             "is not read with LDS transpose reads (its storage follows from all of "
                             f"the buffer's uses): {why}"), kind="speed")
        return None

    @staticmethod
    def count_conflicts(op: ir.Operation) -> None:
        attributes.LDS_CONFLICTS.write(op, sum(operand_conflicts(op)))

    @staticmethod
    def copy_width(op: ir.Operation) -> None:
        src, dst = op.operands[0], op.operands[1]
        if tile.memory_level(dst.type) != tile.SHARED or tile.memory_level(src.type) != tile.GLOBAL:
            return
        dst_type = ir.MemRefType(dst.type)
        element_bits = ir.MemRefType(src.type).element_type
        bits = element_bits.width if hasattr(element_bits, "width") else 32
        attributes.VECTOR_WIDTH.write(op, copy_vector_width(dst_type.shape[-1], bits))
