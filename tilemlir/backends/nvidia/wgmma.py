"""Hopper's warpgroup MMA (`wgmma.mma_async`, sm_90a) fed by TMA with mbarriers.

A gemm whose chosen instruction is a `wgmma` row (tile-select-mma with
`prefer=wgmma`, the cost model's choice, or `NvidiaMatrixCore.preference` for
a kernel written with its own sizes) is executed by warpgroups, four
consecutive warps each, every warpgroup a band of the block's rows: one m64nN
instruction per 64 of them per K step, over the block's whole N (a 128x128
block of 128 threads: two m64n128 per K step). Facts used here, from the PTX
ISA 8.5:

* "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions",
  register fragment of D for m64nNk16/k32: warp w of the warpgroup holds rows
  16w + g and 16w + g + 8 (g = lane / 4), columns 8j + 2t, 8j + 2t + 1
  (t = lane % 4) in registers 4j .. 4j + 3. That is the m16n8 accumulator of
  mma.sync repeated over N: per warp, 16 rows of each instruction, an m16n8
  tile per 8 columns (`WarpgroupAccumulator`, whose `group` of 4 says how the
  warps of a band split each instruction's rows).
* "Matrix Descriptor Format": bits 0-13 start address >> 4, 16-29 leading
  byte offset >> 4, 32-45 stride byte offset >> 4, 49-51 base offset,
  62-63 swizzle (1: 128-byte, 2: 64-byte, 3: 32-byte).
* "Shared Memory Matrix Layout": with the 128-byte swizzle an operand is
  stored as rows of 128 bytes in which 16-byte chunks are XOR-permuted by the
  row index mod 8; eight rows (1024 bytes) make one swizzle atom. K-major
  (K contiguous): the stride byte offset is the distance between 8-row groups
  (1024), and a K step moves the start address along the row. MN-major (M or N
  contiguous, only for 16-bit types): the leading byte offset is the distance
  between 64-element chunks of M or N, the stride byte offset that between
  8-row groups of K.
* "Tensor Copy" (`cp.async.bulk.tensor`) with CU_TENSOR_MAP_SWIZZLE_128B
  writes a box of R rows x 128 bytes in exactly that swizzled layout, which is
  why TMA and wgmma pair: every copied tile lives in shared memory as boxes of
  its rows x 128 bytes, one box per 128 bytes of its columns, 1024-aligned. A
  tile whose rows are 64 bytes (K = 32 f16) is one box of the 64-byte
  swizzle (16-byte chunks XORed by (row / 2) % 4), whose pattern repeats
  every 1024 bytes too (`swizzle_width`).

The K loop (a `tile.num_stages = S` loop of global->shared copies and gemms)
becomes, with one mbarrier per slot counting the TMA bytes:

    prologue:  thread 0: for s < S-1: expect_tx(full[s]); TMA boxes of iteration s
    loop i:    wait full[i % S] at phase (i / S) & 1
               wgmma.fence; per K step one wgmma per 64 rows of the band; commit; wait_group 1
               lane 0 of each warp: arrive empty[(i-1) % S]   # its wgmmas of i-1 are done
               thread 0: if i+S-1 < T: wait empty[(i-1) % S] (all warps released
                         iteration i-1's slot); expect_tx(full[slot]); TMA boxes of i+S-1
    after:     wait_group 0

No CTA-wide barrier in the loop: warps only wait for their data, and thread 0
for the slot it refills (CUTLASS's consumer-release pattern).

Out-of-bounds box elements are filled with zeros by the TMA unit (the tensor
map's OOB fill), so shapes that are not multiples of the block need no code.
Tensor maps are created by the launcher (`cuTensorMapEncodeTiled`) from the
kernel's metadata (`tile.kernel_arguments` on the gpu.func, see
`KernelLowering.add_kernel_argument`) and reach the kernel by value, one extra
128-byte `__grid_constant__` parameter each (nvidia-tensor-maps-by-value).

By default (tile-lower-to-gpu{warp-specialize=true}) a kernel whose one K
loop this is, directly in its body, is warp-specialized instead
(warp_specialize.py): a producer warpgroup after the kernel's threads issues
every refill (`TmaLoop.emit_producer`, waiting on empty[i % S] for iteration
i-S), the kernel's threads run `TmaLoop.emit_consumer` (the loop above less
the leader's refill), and with {persistent=true} the workgroups loop over
tiles, the slots' phases counted over the launch (`TmaLoop.base`).

With tile-lower-to-gpu{tma-copies=true} the same slots and barriers feed
mma.sync gemms: their ldmatrix addresses undo the swizzle
(`gpu_builders.box_index`), and only operands every read of which is an
ldmatrix qualify (`ldmatrix_only`). A warp's ldmatrix reads of a slot are done
within its iteration, so one mma.sync gemm gets a loop that releases sooner
and reads ahead (as the cp.async loop does):

    before:    wait full[0]; registers of K step 0 of slot 0
    loop i:    thread 0: if i+S-1 < T: wait empty[(i-1) % S]; TMA boxes of i+S-1
               for each K step j: registers of K step j+1 (the last: lane 0
                   arrives empty[i % S]; wait full[(i+1) % S] if i+1 < T;
                   registers of K step 0 of slot (i+1) % S); mma.sync of K step j

Two blocks of 128 threads fit an SM with three 32 KiB slots each; measured on
the H200 (bench/gemm.py), f16 4096^3 with the 128x128x64 block: 357 TFLOP/s
at 3 slots (two blocks per SM) against 277 at 4 (one).

The slot of the group in flight: a loop of `num_stages = S` asks for S-1
iterations' copies in flight while one computes (what the cp.async pipeline
gives it), but wgmma's consumers hold two slots: they release iteration
i-1's only after issuing iteration i's wgmmas (the group `wait_group 1` still
lets run), so S slots leave S-2 copies ahead. A wgmma loop asking for 2 or 3
stages (at most one copy ahead) therefore gets S+1 slots where they fit at
the same blocks per SM with the same epilogue
(`NvidiaMatrixCore.place_shared`; the report's `stages` says how many it
got). Measured on the H100: docs/language.md's matmul (128x128x32 blocks of
128 threads, two blocks per SM either way), f16 4096^3 at 3 slots 0.73 of
torch.matmul, at 4 slots 0.89-0.92; 1024^3 0.59 and 0.80-0.97 (three runs).
2 stages given 3 slots follows the same count, unmeasured. Not beyond:
fp8's 4-stage defaults (128x128x128, two warpgroups) given a fifth slot ran
at 0.86 of their speed (4096^3 1098 against 1277 TFLOP/s; why was not
established), so `IN_FLIGHT_SLOT_STAGES` bounds the rule.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, builtin, gpu, llvm, memref, nvgpu, nvvm, scf, vector

from tilemlir.backends.nvidia.cp_async_pipelining import (
    PipelinePlan,
    flatten,
    mma_reading_ahead,
    plain_tile_copy,
    plan_pipeline,
    unflatten,
)
from tilemlir.backends.nvidia.matrix import (
    MmaSyncAccumulator,
    MmaSyncCore,
    SharedBudgetError,
    a_element_of,
    box_destination,
    registers_a,
    registers_of,
)
from tilemlir.backends.nvidia.tma_store import StoreStaging, TmaStore, plan_tma_store
from tilemlir.backends.nvidia.warp_specialize import (
    LAUNCH_QUERIES,
    PRODUCER_THREADS,
    SYSTEM_SHARED_PER_BLOCK,
    WarpSpecializedKernel,
    consumer_registers,
    producer_values,
    register_split,
)
from tilemlir.backends.nvidia.wgmma_threads import is_wgmma, register_a_wgmma, thread_fed_operands
from tilemlir.dialects import attributes, tile
from tilemlir.irutil import walk
from tilemlir.passes.gemm_facts import MmaChoice
from tilemlir.passes.kernel_facts import kernel_grid
from tilemlir.passes.lower_to_gpu.api import (
    KernelLowering,
    LoweringError,
    LoweringHooks,
    LoweringOption,
    add,
    bit_width,
    const_index,
    for_loop_parts,
    fragment_values,
    mul,
    rebind_fragments,
    udiv,
    urem,
)
from tilemlir.passes.shared_memory import SharedLayout
from tilemlir.targets import backend

WARPGROUP_WARPS = 4
SWIZZLE_BYTES = 128  # the widest swizzle mode: 128-byte rows
SWIZZLE_ATOM = 1024  # 8 rows x 128 bytes: the widest pattern's period, every slot's alignment
# Swizzle modes by row width in bytes: the descriptor's bits 62-63 (PTX ISA,
# "Matrix Descriptor Format": 1 128-byte, 2 64-byte, 3 32-byte) and nvgpu's
# tensor map names. A tile whose rows are 64 bytes (K = 32 f16 elements, say)
# is stored with the 64-byte mode, whose XOR of 16-byte chunks also repeats
# every 1024 bytes (TMA and wgmma both apply it). The 32-byte mode (3) would
# serve 32-byte rows the same way, but no kernel of it has run on the H200
# yet: such tiles are refused (mma.sync takes those loops).
SWIZZLE_MODES = {128: 1, 64: 2}
TMA_BOX_LIMIT = 256  # boxDim entries are at most 256 (cuTensorMapEncodeTiled)
# The stages a wgmma K loop may ask for and still get a slot for the group in
# flight (module docstring: measured to gain at 3, to lose at 4; 2 unmeasured).
IN_FLIGHT_SLOT_STAGES = (2, 3)
# PTX type names of wgmma operands by MLIR element type.
WGMMA_TYPES = {"f16": "f16", "bf16": "bf16", "f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}
WORKGROUP = "#gpu.address_space<workgroup>"


def swizzle_width(row_bytes: int) -> int | None:
    """The swizzle mode (bytes per pattern row) that stores tile rows of
    `row_bytes` bytes: 128-byte boxes for whole multiples of 128, the row's own
    width for 64 (SWIZZLE_MODES); None for other widths."""
    if row_bytes % SWIZZLE_BYTES == 0:
        return SWIZZLE_BYTES
    return row_bytes if row_bytes in SWIZZLE_MODES else None


@dataclass
class SwizzledBuffer:
    """A shared tile stored as TMA boxes of rows x `swizzle` bytes (128, or the
    row's width when narrower); its slots follow one another from `offset`."""

    offset: int  # bytes into dynamic shared memory
    rows: int
    cols: int
    element: ir.Type

    @property
    def element_bytes(self) -> int:
        return max(1, bit_width(self.element) // 8)

    @property
    def swizzle(self) -> int:
        return swizzle_width(self.cols * self.element_bytes)

    @property
    def box_cols(self) -> int:
        return self.swizzle // self.element_bytes

    @property
    def boxes(self) -> int:
        return self.cols // self.box_cols

    @property
    def box_bytes(self) -> int:
        return self.rows * self.swizzle

    @property
    def slot_bytes(self) -> int:
        return self.boxes * self.box_bytes


def _tma_copyable(copy: ir.Operation, threads: int) -> bool:
    """A global -> shared tile.copy TMA boxes can do (`tma_tile_misfit`):
    its source is an argument of the host function (the launcher encodes a
    tensor map of it) with the plain row-major layout the map describes."""
    types = plain_tile_copy(copy)
    if types is None or not isinstance(copy.operands[0], ir.BlockArgument):
        return False
    src_type, dst_type = types
    rows, cols = dst_type.shape
    if src_type.get_strides_and_offset() != ([src_type.shape[1], 1], 0):
        return False
    size = max(1, bit_width(src_type.element_type) // 8)
    return tma_tile_misfit(rows, cols, src_type.shape[1], size) is None


def tma_tile_misfit(rows: int, cols: int, global_cols: int, size: int) -> str | None:
    """Why TMA cannot fill a rows x cols tile (elements of `size` bytes) from
    global rows of `global_cols` elements; None when it can. Global rows must
    be 16-byte multiples (TMA's stride rule); the tile's rows whole 128-byte
    boxes, or one 64-byte box (`swizzle_width`), of at most 256 rows;
    every box a whole number of 1024-byte atoms (every box and slot then starts
    1024-aligned, as the descriptors assume: base offset 0)."""
    if (global_cols * size) % 16:
        return f"global rows of {global_cols * size} bytes are not 16-byte multiples"
    width = swizzle_width(cols * size)
    if width is None:
        return (f"a {rows}x{cols} tile's rows of {cols * size} bytes are neither whole {SWIZZLE_BYTES}-byte "
                f"boxes nor {' or '.join(str(w) for w in sorted(SWIZZLE_MODES) if w < SWIZZLE_BYTES)} bytes")
    if rows > TMA_BOX_LIMIT or (rows * width) % SWIZZLE_ATOM:
        return (f"a {rows}x{cols} tile's {rows} rows of {width}-byte boxes are not whole "
                f"{SWIZZLE_ATOM}-byte atoms ({SWIZZLE_ATOM // width} rows) of at most {TMA_BOX_LIMIT} rows")
    return None


def plan_tma_pipeline(op: ir.Operation, threads: int, mma_sync_too: bool = False) -> PipelinePlan | None:
    """A pipelined loop whose copies TMA can do and whose gemms are wgmma (or,
    with `mma_sync_too`, mma.sync reading its operands with ldmatrix only)."""
    plan = plan_pipeline(op, threads, _tma_copyable)
    if plan is None:
        return None
    choices = [MmaChoice.of(g) for g in plan.gemms]
    if any(c is None for c in choices):
        return None
    if all(is_wgmma(c.name) for c in choices):
        return plan
    # ldmatrix addresses undo the 128-byte swizzle only (gpu_builders.box_index).
    wide = all(_row_bytes(b) % SWIZZLE_BYTES == 0 for b in plan.buffers)
    if mma_sync_too and wide and all(not is_wgmma(c.name) and ldmatrix_only(g)
                                     for c, g in zip(choices, plan.gemms)):
        return plan
    return None


def _row_bytes(tile: ir.Value) -> int:
    tile_type = ir.MemRefType(tile.type)
    return tile_type.shape[-1] * max(1, bit_width(tile_type.element_type) // 8)


def ldmatrix_only(gemm: ir.Operation) -> bool:
    """mma.sync reads every operand with ldmatrix except 8-bit A stored K x M
    and 8-bit B stored K x N (byte loads: matrix.Operands), which a swizzled
    tile cannot serve."""
    bits = bit_width(ir.MemRefType(gemm.operands[0].type).element_type)
    transpose_a = ir.BoolAttr(gemm.attributes["transpose_a"]).value
    transpose_b = ir.BoolAttr(gemm.attributes["transpose_b"]).value
    return bits == 16 or (not transpose_a and transpose_b)


# An 8-bit wgmma accumulator's registers: the f32 sum and each block K's
# partial sums (PROMOTED_COPIES: promoted after wgmma.wait_group 0), or two
# sets of partial sums taking turns (DEFERRED_COPIES: promoted one iteration
# late, the tensor cores busy meanwhile). Measured on the H200 (fp8 4096^3,
# 128x128x128 blocks of two warpgroups): 1189 TFLOP/s promoting at once, 1388
# with no promotion at all (which sums in 13 bits, bench/gemm.py's
# FP8_WGMMA_SUM_BITS).
PROMOTED_COPIES, DEFERRED_COPIES = 2, 3
# Iterations of a deferred loop's trip (`TmaLoop.deferred_loop`), the first
# of these that divides the loop's count: one wgmma.wait_group 0 per trip. A
# loop no run divides promotes at once: with the left-over iterations in a
# loop of their own after it, ptxas 12.8 spilled 256-572 bytes (and
# serialized the wgmmas at 7 iterations) in 128x128x128 fp8 kernels of 5-33
# iterations, none where a run divides the count. Runs of 3 and 2 compile
# without spills too, but were not run on the H200: 4 only until they are.
DEFERRED_RUNS = (4,)
DEFERRED_K_STEPS = 4  # the most wgmma K steps of an iteration that defers (block K 128 of fp8)


def deferred_run(trips: int) -> int | None:
    return next((run for run in DEFERRED_RUNS if trips % run == 0), None)


def defers_promotion(plan: PipelinePlan) -> bool:
    """Whether the loop's partial sums may be promoted one iteration late
    (`TmaLoop.deferred_loop`): its one gemm is an 8-bit wgmma of at most
    DEFERRED_K_STEPS K steps an iteration, and a run of DEFERRED_RUNS
    divides its iterations. A persistent warp-specialized kernel takes it
    where the register split holds the third copy at the same blocks per SM
    (`warp_specialized`)."""
    if len(plan.gemms) != 1 or deferred_run(plan.trip_count) is None:
        return False
    (gemm,) = plan.gemms
    choice = MmaChoice.of(gemm)
    if choice is None or not is_wgmma(choice.name):
        return False
    a = ir.MemRefType(gemm.operands[0].type)
    block_k = a.shape[0] if ir.BoolAttr(gemm.attributes["transpose_a"]).value else a.shape[1]
    return bit_width(a.element_type) == 8 and block_k // choice.k <= DEFERRED_K_STEPS


class NvidiaLoweringHooks(LoweringHooks):
    """The nvidia family's tile-lower-to-gpu option; the code reading it is
    the matrix core's (`NvidiaMatrixCore.buffer_stages`)."""

    options = (
        LoweringOption("tma_copies", bool, False,
                       "the global -> shared copies of pipelined loops go through TMA with "
                       "mbarriers (128-byte-swizzled tiles) for mma.sync gemms too, not only "
                       "for wgmma, which always uses them"),
        LoweringOption("warp_specialize", bool, True,
                       "a kernel whose K loop is TMA + wgmma gets a producer warpgroup that "
                       "issues the loads, and its own threads only wait, multiply and release "
                       "(backends/nvidia/warp_specialize.py); false: its own threads issue "
                       "the loads too"),
        LoweringOption("persistent", bool, True,
                       "a warp-specialized kernel launches at most as many workgroups as the "
                       "SMs hold at once, each looping over tiles of the grid in grouped order; "
                       "false: one workgroup per tile"),
    )


class NvidiaMatrixCore(MmaSyncCore):
    """The nvidia matrix core: warp-level mma.sync (`MmaSyncCore`) and, for
    gemms given a wgmma row, warpgroup-level wgmma with TMA-filled operands."""

    def __init__(self):
        super().__init__()
        self.swizzled: dict = {}  # tile-level shared value -> SwizzledBuffer
        self.base: ir.Value | None = None  # the dynamic shared memory, as bytes
        self.tma_operands: set = set()  # shared values filled by TMA (wgmma operands, ...)
        self.tma_copies = False  # tile-lower-to-gpu{tma-copies}: mma.sync operands by TMA too
        self.shared_bytes = 0  # the dynamic shared memory placed (`place_shared`)
        self.specialized: dict = {}  # the K loop of a warp-specialized kernel -> its TmaLoop
        # id() of an 8-bit accumulator fragment -> its partial sums still in
        # flight, one m64nN struct per instruction of the band (TmaLoop.deferred).
        self.pending: dict = {}
        # The epilogue copy written by TMA and where its chunk buffers start
        # in dynamic shared memory (tma_store.py); None: stored from registers.
        self.staging: StoreStaging | None = None
        self.staging_offset = 0
        self.stores: TmaStore | None = None  # the staged epilogue, once emitted
        # wgmma operands the kernel's threads store (wgmma_threads.py), and
        # each one's view (one slot), as its copies and gemms see it.
        self.thread_fed: set = set()
        self.thread_fed_views: dict = {}
        # wgmma K loops given a slot more than their num_stages, for the group
        # in flight (module docstring; `place_shared`).
        self.slot_in_flight: set = set()

    def tma_plan(self, op: ir.Operation, threads: int, mma_sync_too: bool = False) -> PipelinePlan | None:
        """`plan_tma_pipeline`, with the slot of the group in flight where
        `place_shared` gave the loop one."""
        plan = plan_tma_pipeline(op, threads, mma_sync_too)
        if plan is not None and op in self.slot_in_flight:
            return dataclasses.replace(plan, stages=plan.stages + 1)
        return plan

    # -- selection -----------------------------------------------------------

    def supported(self, m: int, n: int, k: int, blocks: int, wave_size: int) -> bool:
        if m == 64 and wave_size == 32 and blocks == 1:
            return k in (16, 32) and n % 8 == 0 and 8 <= n <= 256
        return super().supported(m, n, k, blocks, wave_size)

    def register_a(self, choice, warps, source, source_warps, a_bits: int) -> bool:
        """mma.sync's rule (`MmaSyncCore.register_a`), and wgmma reading a
        16-bit A from the registers of a wgmma accumulator of the same bands
        (the same m64 rows over the same warps: wgmma_threads.py)."""
        if is_wgmma(choice.name) or is_wgmma(source.name):
            return (a_bits == 16 and is_wgmma(choice.name) and is_wgmma(source.name)
                    and choice.m == source.m and tuple(warps) == tuple(source_warps) and warps[1] == 1)
        return super().register_a(choice, warps, source, source_warps, a_bits)

    def waves_per_instruction(self, name: str) -> int:
        return WARPGROUP_WARPS if is_wgmma(name) else 1

    def preference(self, gemm: ir.Operation, threads: int, target) -> str:
        """wgmma for a gemm of a pipelined K loop that the TMA path can take
        whole, on a chip that has it: every gemm of the loop reads A and B
        from the loop's TMA-copied tiles, fits a wgmma row (tile-select-mma's
        rule), and, for 8-bit operands, reads both K-major (A M x K, B N x K:
        PTX ISA, imm-trans-a/b are for .f16/.bf16 only); or for a gemm of a
        loop whose operands its threads store (flash attention:
        `thread_fed_operands`). Anything else keeps the table's ranking
        (mma.sync), as the loop cannot mix the two."""
        from tilemlir.passes.gemm_facts import gemm_shape
        from tilemlir.passes.select_mma import select_mma_for

        if not any(is_wgmma(row.name) for row in target.mma):
            return ""
        loop = gemm.parent
        while loop is not None and loop.name != "scf.for":
            loop = loop.parent if loop.name != "tile.kernel" else None
        plan = plan_pipeline(loop, threads, _tma_copyable) if loop is not None else None
        if plan is None or gemm not in plan.gemms:
            fed = loop is not None and gemm.parent == loop and \
                thread_fed_operands(loop, threads, target) is not None
            return "wgmma" if fed else ""
        for member in plan.gemms:
            if member.operands[0] not in plan.buffers or member.operands[1] not in plan.buffers:
                return ""
            bits = bit_width(ir.MemRefType(member.operands[0].type).element_type)
            transpose_a = ir.BoolAttr(member.attributes["transpose_a"]).value
            transpose_b = ir.BoolAttr(member.attributes["transpose_b"]).value
            if bits == 8 and (transpose_a or not transpose_b):
                return ""
            chosen = select_mma_for(target, gemm_shape(member), threads, "wgmma")
            if isinstance(chosen, list) or not is_wgmma(chosen[0].name):
                return ""
        return "wgmma"

    def min_stages(self, name: str) -> int:
        return 2 if is_wgmma(name) else 1  # the TMA loop's slots (TmaLoop)

    def operand_misfit(self, name: str, rows: int, cols: int, global_cols: int, element_bytes: int) -> str | None:
        if not is_wgmma(name):
            return None
        why = tma_tile_misfit(rows, cols, global_cols, element_bytes)
        return None if why is None else f"TMA cannot fill its operands: {why}"

    def accumulator_layout(self, m: int, n: int, k: int, wave_size: int, c_bits: int = 32):
        if m == 64 and self.supported(m, n, k, 1, wave_size):
            return WarpgroupAccumulator()
        return super().accumulator_layout(m, n, k, wave_size, c_bits)

    # -- shared memory -------------------------------------------------------

    def wgmma_operands(self, kernel: ir.Operation) -> set:
        operands = set()
        for op in walk(kernel):
            choice = MmaChoice.of(op) if op.name == "tile.gemm" else None
            if choice is None or not is_wgmma(choice.name):
                continue
            a_type = ir.MemRefType(op.operands[0].type).element_type
            transpose_a = ir.BoolAttr(op.attributes["transpose_a"]).value
            transpose_b = ir.BoolAttr(op.attributes["transpose_b"]).value
            if bit_width(a_type) == 8 and (transpose_a or not transpose_b):
                # PTX ISA: imm-trans-a/b exist for .f16/.bf16 only.
                raise LoweringError(op, "tile-lower-to-gpu: 8-bit wgmma reads both operands K-major: "
                                        "A must be M x K (transpose_a = false) and B N x K "
                                        "(transpose_b = true)")
            operands.update(v for v in op.operands[:2] if tile.memory_level(v.type) == tile.SHARED)
        return operands

    def buffer_stages(self, lowering: KernelLowering) -> dict:
        stages = super().buffer_stages(lowering)
        self.tma_copies = bool(lowering.option("tma_copies"))
        self.tma_operands = self.wgmma_operands(lowering.kernel)
        fed = {}
        for op in walk(lowering.kernel):
            plan = self.tma_plan(op, lowering.threads, self.tma_copies) if op.name == "scf.for" else None
            if plan is not None and self.tma_copies:
                self.tma_operands.update(plan.buffers)
            for buffer in plan.buffers if plan else []:
                fed[buffer] = plan.stages
        self.thread_fed = {buffer for op in walk(lowering.kernel) if op.name == "scf.for"
                           for buffer in thread_fed_operands(op, lowering.threads, lowering.target) or ()
                           if buffer in self.tma_operands and buffer not in fed}
        for buffer in self.thread_fed:
            fed[buffer] = 1
        for buffer in self.tma_operands:
            if buffer not in fed:
                raise LoweringError(buffer.owner, "tile-lower-to-gpu: a wgmma operand must be filled "
                                    f"by TMA in a pipelined K loop ({attributes.NUM_STAGES.name} >= 2: global -> "
                                    "shared copies of rows of 64 or a multiple of 128 bytes, global "
                                    "rows of 16-byte multiples, then the gemms), or stored by the "
                                    "threads of a loop prefetched with cp.async whose gemms all run on "
                                    "16-bit wgmma (flash attention: backends/nvidia/wgmma_threads.py)")
            stages[buffer] = fed[buffer]
        return stages

    def reserved_shared_bytes(self) -> int:
        # The mbarriers are static shared variables; the dynamic buffers start
        # at the next 1024-byte boundary after them.
        return SWIZZLE_ATOM if self.tma_operands else 0

    def buffer_alignment(self, value: ir.Value) -> int:
        return SWIZZLE_ATOM if value in self.tma_operands else super().buffer_alignment(value)

    def place_buffer(self, lowering: KernelLowering, value, base, offset, stages) -> int:
        if value not in self.tma_operands:
            return super().place_buffer(lowering, value, base, offset, stages)
        self.base = base
        tile_type = ir.MemRefType(value.type)
        rows, cols = tile_type.shape
        buffer = SwizzledBuffer(offset, rows, cols, tile_type.element_type)
        self.swizzled[value] = buffer
        view = self.slot_base(buffer, const_index(0))
        if value in self.thread_fed:
            self.thread_fed_views[value] = view
            lowering.bind_shared(value, view, SharedLayout(boxed=True))
            lowering.note_shared(value, pad=0, swizzle=f"{buffer.swizzle}-byte (boxes)",
                                 fill="the threads (cp.async, vector stores)", stages=1, bytes=buffer.slot_bytes)
            return buffer.slot_bytes
        lowering.bind_shared(value, view, SharedLayout())
        lowering.note_shared(value, pad=0, swizzle=f"{buffer.swizzle}-byte (TMA boxes)",
                             fill="cp.async.bulk.tensor (TMA)", stages=stages, bytes=stages * buffer.slot_bytes)
        return stages * buffer.slot_bytes

    def prefetches_into(self, buffer: ir.Value) -> bool:
        return buffer in self.thread_fed or super().prefetches_into(buffer)

    def async_destination(self, buffer: ir.Value, slot: ir.Value):
        if buffer not in self.thread_fed:
            return super().async_destination(buffer, slot)
        return box_destination(self.thread_fed_views[buffer])  # its one slot

    def fence_shared_writes(self, buffer: ir.Value) -> None:
        if buffer in self.thread_fed:  # generic-proxy writes, read by wgmma through the async proxy
            nvvm.FenceProxyOp(ir.Attribute.parse("#nvvm.proxy_kind<async.shared>"),
                              space=ir.Attribute.parse("#nvvm.shared_space<cta>"))

    def slot_base(self, buffer: SwizzledBuffer, slot: ir.Value) -> ir.Value:
        """Slot `slot` of a swizzled buffer as a rows x cols memref (its bytes are
        swizzled boxes: only its address is used, by descriptors)."""
        return self.boxed_slot_view(self.base, buffer.offset, buffer.slot_bytes, buffer.rows, buffer.cols,
                                    buffer.element, slot)

    def box_view(self, buffer: SwizzledBuffer, slot: ir.Value, box: int) -> ir.Value:
        view_type = ir.MemRefType.get([buffer.rows, buffer.box_cols], buffer.element,
                                      memory_space=ir.Attribute.parse(WORKGROUP))
        start = add(mul(slot, buffer.slot_bytes), buffer.offset + box * buffer.box_bytes)
        return memref.ViewOp(view_type, self.base, start, []).result

    # -- the K loop ----------------------------------------------------------

    def place_shared(self, lowering: KernelLowering, shared_ops: list) -> int:
        """Places the buffers and the epilogue's staging (`place_store_staging`),
        then again with a slot more for the group in flight in each wgmma K
        loop with iterations to spare (module docstring), kept where that
        fits at the same blocks per SM with the same epilogue; else placed as
        asked once more. A placement sets the buffers' views, this core's
        state and the report's notes, all of which the next one overwrites;
        a placement not kept leaves its views as dead ops. (Where no register
        split holds the consumers, `blocks_per_sm` is 0 with and without the
        slot, which is kept when it fits: such a kernel keeps one role with
        the most registers a thread, which in the kernels seen holds it to
        one block per SM anyway.)"""
        placed = self.place_all(lowering, shared_ops)
        loops = self.in_flight_candidates(lowering)
        if not loops:
            return placed
        # The registers it weighs (need, instruction) do not depend on the slots.
        specialization = self.specialization(lowering)
        staged, blocks = self.staging is not None, self.blocks_per_sm(lowering, specialization, self.shared_bytes)
        self.slot_in_flight.update(loops)
        try:
            more = self.place_all(lowering, shared_ops)
            kept = (self.staging is not None) == staged and \
                self.blocks_per_sm(lowering, specialization, self.shared_bytes) == blocks
        except SharedBudgetError:
            kept = False
        if kept:
            return more
        self.slot_in_flight.difference_update(loops)
        return self.place_all(lowering, shared_ops)

    def place_all(self, lowering: KernelLowering, shared_ops: list) -> int:
        self.staging = None
        placed = self.place_store_staging(lowering, super().place_shared(lowering, shared_ops))
        self.shared_bytes = placed + self.reserved_shared_bytes()  # the block's, for its blocks per SM
        return placed

    def in_flight_candidates(self, lowering: KernelLowering) -> list:
        """The TMA-fed K loops whose gemms are all wgmma (their consumers
        release each slot an iteration late), asking for
        `IN_FLIGHT_SLOT_STAGES`, that run more iterations than they have
        slots."""
        loops = []
        for op in walk(lowering.kernel):
            plan = plan_tma_pipeline(op, lowering.threads, False) if op.name == "scf.for" else None
            if plan is not None and plan.stages in IN_FLIGHT_SLOT_STAGES and plan.trip_count > plan.stages and \
                    all(b in self.swizzled and b not in self.thread_fed for b in plan.buffers):
                loops.append(op)
        return loops

    def place_store_staging(self, lowering: KernelLowering, placed: int) -> int:
        """The epilogue's chunk buffers after the `placed` bytes, where the
        kernel's K loop is TMA-fed, its epilogue copy qualifies (tma_store.py)
        and the buffers cost no block per SM; returns the bytes placed."""
        tma_fed = self.base is not None and not self.tma_operands <= self.thread_fed
        staging = plan_tma_store(lowering.kernel) if tma_fed else None
        if staging is None:
            return placed
        offset = -(-placed // SWIZZLE_ATOM) * SWIZZLE_ATOM
        limit = lowering.target.require("memory.shared_bytes_per_workgroup", "the shared memory budget")
        reserved = self.reserved_shared_bytes()
        if offset + staging.bytes + reserved > limit:
            return placed
        specialization = self.specialization(lowering)
        if self.blocks_per_sm(lowering, specialization, offset + staging.bytes + reserved) < \
                self.blocks_per_sm(lowering, specialization, placed + reserved):
            return placed
        self.staging, self.staging_offset = staging, offset
        return offset + staging.bytes

    @staticmethod
    def blocks_per_sm(lowering: KernelLowering, specialization: tuple | None, shared_bytes: int) -> int:
        """Blocks of this kernel one SM holds with `shared_bytes` of shared
        memory each: the register split's count where it is warp-specialized
        (`specialization`; 0: it would not be), else what shared memory allows."""
        if specialization is None:
            return lowering.target.memory.shared_bytes_per_cu // (shared_bytes + SYSTEM_SHARED_PER_BLOCK)
        split = register_split(lowering.target, lowering.threads, shared_bytes, *specialization[3:5])
        return 0 if split is None else split.blocks_per_sm

    def store_fragment(self, lowering: KernelLowering, op, fragment, indices) -> bool:
        if self.staging is None or op.operation != self.staging.copy:
            return False
        stores = TmaStore(lowering, self.staging, self.base, self.staging_offset)
        if not stores.emit(fragment, indices):
            return False
        self.stores = stores
        return True

    def drain_stores(self) -> None:
        """After the kernel's last tile: the epilogue's copies have read their
        buffers before the block's shared memory goes."""
        if self.stores is not None:
            self.stores.drain()

    # -- warp specialization -------------------------------------------------

    def emit_kernel_body(self, lowering: KernelLowering, emit_body) -> int:
        specialized = self.warp_specialized(lowering)
        if specialized is None:
            emit_body()
            self.drain_stores()
            return lowering.threads
        return specialized.emit(emit_body, after=self.drain_stores)

    def warp_specialized(self, lowering: KernelLowering) -> WarpSpecializedKernel | None:
        """The producer/consumer split of the kernel (warp_specialize.py), or
        None where the kernel keeps one role: `specialization` says no, or no
        register split gives the consumers what they hold (`register_split`)."""
        specialization = self.specialization(lowering)
        if specialization is None:
            return None
        loop, plan, coordinate_ops, need, instruction, deferred_need = specialization
        kernel, threads = lowering.kernel, lowering.threads
        split = register_split(lowering.target, threads, self.shared_bytes, need, instruction)
        if split is None:
            return None
        persistent = lowering.option("persistent") and len(kernel_grid(kernel)) <= 2
        # Deferred promotion where measured to hold its registers: persistent
        # kernels whose split gives the third accumulator copy at the same
        # blocks per SM. ptxas 12.8 spilled 20-44 bytes in the same kernels
        # launched one workgroup per tile, and 256 (serializing the wgmmas:
        # C7512) with block K 256, 8 wgmmas an iteration (DEFERRED_K_STEPS).
        deferred = None
        if deferred_need is not None and persistent:
            deferred = register_split(lowering.target, threads, self.shared_bytes, deferred_need, instruction)
        if deferred is not None and deferred.blocks_per_sm >= split.blocks_per_sm:
            split = deferred
        else:
            deferred = None
        tma_loop = TmaLoop(self, lowering, loop, plan, deferred=deferred is not None)
        self.specialized[loop] = tma_loop
        resident = 0
        if persistent:
            resident = lowering.target.compute.compute_units * split.blocks_per_sm
        others = any(op.name == "tile.alloc_shared" and op.results[0] not in plan.buffers
                     for op in walk(kernel))
        return WarpSpecializedKernel(lowering, tma_loop, coordinate_ops, split, resident, others)

    def specialization(self, lowering: KernelLowering) -> tuple | None:
        """(K loop, its plan, the producer's coordinate ops, the registers a
        consumer needs, the widest instruction's, and those it needs with its
        8-bit partial sums promoted one iteration late, or None where they
        are not: `defers_promotion`) of a kernel that can be
        warp-specialized; None where it keeps one role: the option is off,
        the kernel has not exactly one TMA + wgmma K loop directly in its
        body, the producer could not compute the copies' coordinates, the
        body reads the launch's shape (`LAUNCH_QUERIES`), or the threads do
        not fit."""
        if not lowering.option("warp_specialize"):
            return None
        kernel, threads = lowering.kernel, lowering.threads
        loops = [op for op in walk(kernel)
                 if op.name == "scf.for" and self.tma_plan(op, threads, self.tma_copies) is not None]
        if len(loops) != 1 or loops[0].parent != kernel:
            return None
        plan = self.tma_plan(loops[0], threads, False)  # wgmma gemms only
        if plan is None or any(b not in self.swizzled for b in plan.buffers):
            return None
        most = lowering.target.compute.max_threads_per_workgroup
        if threads % PRODUCER_THREADS or threads + PRODUCER_THREADS > most:
            return None
        if any(op.name in LAUNCH_QUERIES for op in walk(kernel)):
            return None
        coordinate_ops = producer_values(kernel, loops[0], plan)
        if coordinate_ops is None:
            return None
        overhead = backend(lowering.target.family).address_registers
        choices = [MmaChoice.of(gemm) for gemm in plan.gemms]
        eight_bit = [gemm.operands[2] for gemm in plan.gemms
                     if bit_width(ir.MemRefType(gemm.operands[0].type).element_type) == 8]
        need = consumer_registers(kernel, threads, overhead, dict.fromkeys(eight_bit, PROMOTED_COPIES))
        deferred_need = consumer_registers(kernel, threads, overhead, dict.fromkeys(eight_bit, DEFERRED_COPIES)) \
            if defers_promotion(plan) else None
        # One m64nN instruction's f32 accumulator: N / 2 registers per thread.
        instruction = max(choice.n // 2 for choice in choices) + overhead
        return loops[0], plan, coordinate_ops, need, instruction, deferred_need

    def lower_loop(self, lowering: KernelLowering, op) -> bool:
        if op in self.specialized:
            self.specialized[op].emit_consumer()
            return True
        plan = self.tma_plan(op, lowering.threads, self.tma_copies)
        if plan is None or any(b not in self.swizzled for b in plan.buffers):
            return super().lower_loop(lowering, op)
        TmaLoop(self, lowering, op, plan).emit()
        return True

    # -- one tile.gemm -------------------------------------------------------

    def emit_k_steps(self, step) -> None:
        if not is_wgmma(step.choice.name):
            super().emit_k_steps(step)
            return
        fragment = step.fragment
        a_type = a_element_of(step)
        b_type = ir.MemRefType(step.b_smem.type).element_type
        bits = bit_width(a_type)
        n, k = step.choice.n, step.choice.k
        # The warpgroup's band of rows is `repeats` instructions high: instruction
        # i reads A's 64-row block (band start / 64 + i) and B whole, and updates
        # the fragment's tiles of row tm = i (WarpgroupAccumulator).
        repeats, per_instruction = fragment.tiles
        group = udiv(step.wave_m, WARPGROUP_WARPS)
        # A from registers (wgmma_threads.py: P in flash attention), else by descriptor.
        a = None if step.a_fragment is not None else \
            [Operand(step.a_smem, step.transpose_a, k, add(mul(group, repeats), i)) for i in range(repeats)]
        b = Operand(step.b_smem, not step.transpose_b, k)
        # 8-bit wgmma sums in less than f32 precision (measured on the H200:
        # up to 1.9x the f32 summation bound at K=256), so 8-bit gemms sum each
        # block K in a fresh accumulator and add it to the f32 one with FADDs.
        promote = bits == 8
        # Deferred (`TmaLoop.deferred_loop`): the last block K's partial sums,
        # still in flight, are added once this block's wgmmas are issued.
        deferred = promote and id(fragment) in self.pending
        tiles = [fragment.values[i * per_instruction:(i + 1) * per_instruction] for i in range(repeats)]
        accumulators = [llvm.PoisonOp(self.struct_type(n)).result if promote else self.pack(t, n)
                        for t in tiles]
        nvvm.WgmmaFenceAlignedOp()
        for s in range(step.block_k // k):
            for i in range(repeats):
                if a is None:
                    accumulators[i] = register_a_wgmma(accumulators[i], registers_of(registers_a(step, i, s), 4),
                                                       b.at(s), n, str(a_type), b_mn_major=not step.transpose_b)
                    continue
                accumulators[i] = wgmma(accumulators[i], a[i].at(s), b.at(s), n, k, a_type, b_type,
                                        b_mn_major=not step.transpose_b, a_mn_major=step.transpose_a,
                                        accumulate=not (promote and s == 0))
        nvvm.WgmmaGroupSyncAlignedOp()
        # A K loop's gemm leaves its last group in flight (the loop waits for
        # it, TmaLoop); one whose operands the threads store is read at once.
        at_once = (promote and not deferred) or step.b_smem in self.thread_fed_views.values()
        nvvm.WgmmaWaitGroupSyncOp(0 if at_once else 1)
        if deferred:
            accumulators, self.pending[id(fragment)] = self.pending[id(fragment)], accumulators
            if accumulators is None:  # the first of a run: nothing to add yet
                return
        values = [v for acc in accumulators for v in self.unpack(acc, n, fragment.vector_type)]
        if promote:
            values = [arith.AddFOp(old, new).result for old, new in zip(fragment.values, values)]
        fragment.values = values

    def add_pending(self, fragment) -> None:
        """`wgmma.wait_group 0`, then the deferred partial sums into the sum;
        the next gemm starts a new run."""
        nvvm.WgmmaWaitGroupSyncOp(0)
        n = fragment.layout.n * fragment.tiles[1]
        in_flight, self.pending[id(fragment)] = self.pending[id(fragment)], None
        values = [v for acc in in_flight for v in self.unpack(acc, n, fragment.vector_type)]
        fragment.values = [arith.AddFOp(old, new).result for old, new in zip(fragment.values, values)]

    @staticmethod
    def struct_type(n: int) -> ir.Type:
        """A lane's m64nN f32 accumulator as nvvm.wgmma.mma_async takes it."""
        return llvm.StructType.get_literal([ir.F32Type.get()] * (n // 2))

    def pack(self, values: list, n: int) -> ir.Value:
        packed = llvm.PoisonOp(self.struct_type(n)).result
        for j, tile_value in enumerate(values):
            for e in range(4):
                scalar = vector.ExtractOp(tile_value, [], [e]).result
                packed = llvm.InsertValueOp(packed, scalar, [4 * j + e]).result
        return packed

    @staticmethod
    def unpack(packed: ir.Value, n: int, vector_type: ir.VectorType) -> list:
        f32 = ir.F32Type.get()
        return [vector.FromElementsOp(vector_type, [llvm.ExtractValueOp(f32, packed, [4 * j + e]).result
                                                    for e in range(4)]).result
                for j in range(n // 8)]


@dataclass(frozen=True)
class WarpgroupAccumulator(MmaSyncAccumulator):
    """D of wgmma m64nN, per warp (PTX ISA fragment above): 16 rows of the
    instruction's 64, an m16n8 tile per 8 columns; the warpgroup's four warps
    split each instruction's rows, so a warpgroup whose band is several
    instructions high holds rows 16w.. of each (`AccumulatorLayout.group`)."""

    group: int = WARPGROUP_WARPS


class Operand:
    """Descriptors of one operand tile in its swizzled boxes.

    Boxes are `swizzle` (128 or 64) bytes wide. K-major: rows are M/N, K
    runs along the box rows; a K step of k elements (32 bytes for every wgmma
    type) moves along the row, into the next box every `swizzle` bytes.
    MN-major: rows are K, M/N runs along the box rows, one box per `swizzle`
    bytes of them; a K step moves k rows down (k * swizzle bytes). `group`:
    read the group-th 64 rows of M (N) only: 64 lines K-major, the boxes of
    64 elements MN-major.
    """

    def __init__(self, smem: ir.Value, mn_major: bool, k: int, group: ir.Value | None = None):
        memref_type = ir.MemRefType(smem.type)
        self.element_bytes = max(1, bit_width(memref_type.element_type) // 8)
        self.mn_major = mn_major
        self.k = k
        self.swizzle = swizzle_width(_row_bytes(smem))
        self.box_bytes = memref_type.shape[0] * self.swizzle
        i64 = ir.IntegerType.get_signless(64)
        address = memref.ExtractAlignedPointerAsIndexOp(smem).result
        if group is not None:  # 64 rows: 64 lines K-major, the boxes of 64 elements MN-major
            block = 64 * self.element_bytes // self.swizzle * self.box_bytes if mn_major else 64 * self.swizzle
            address = add(address, mul(group, block))
        address = arith.IndexCastOp(i64, address).result
        # The stride offset is the distance between 8-line groups; the leading
        # offset that between boxes MN-major, unused for swizzled K-major (a K
        # step stays within one line of a box).
        leading = self.box_bytes if mn_major else 16
        stride = 8 * self.swizzle
        fixed = ((leading >> 4) << 16) | ((stride >> 4) << 32) | (SWIZZLE_MODES[self.swizzle] << 62)
        start = arith.ShRUIOp(address, _i64(4)).result
        self.base = arith.OrIOp(start, _i64(fixed)).result

    def at(self, k_step: int) -> ir.Value:
        """The descriptor of K step `k_step` (start address advanced, >> 4)."""
        if self.mn_major:
            offset = k_step * self.k * self.swizzle
        else:
            byte = k_step * self.k * self.element_bytes
            offset = (byte // self.swizzle) * self.box_bytes + byte % self.swizzle
        return arith.AddIOp(self.base, _i64(offset >> 4)).result if offset else self.base


def _i64(value: int) -> ir.Value:
    """An i64 constant of the bits of `value` (descriptor fields reach bit 63)."""
    signed = value - (1 << 64) if value >= 1 << 63 else value
    return arith.ConstantOp(ir.IntegerType.get_signless(64), signed).result


def wgmma(accumulator: ir.Value, desc_a: ir.Value, desc_b: ir.Value, n: int, k: int,
          a_type: ir.Type, b_type: ir.Type, b_mn_major: bool, a_mn_major: bool,
          accumulate: bool = True) -> ir.Value:
    """One wgmma.mma_async: D = A * B + (D if accumulate else 0)."""
    parse = ir.Attribute.parse
    return nvvm.WgmmaMmaAsyncOp(
        accumulator.type, accumulator, desc_a, desc_b,
        parse(f"#nvvm.shape<m = 64, n = {n}, k = {k}>"),
        parse(f"#nvvm.wgmma_type<{WGMMA_TYPES[str(a_type)]}>"),
        parse(f"#nvvm.wgmma_type<{WGMMA_TYPES[str(b_type)]}>"),
        parse("#nvvm.wgmma_type<f32>"),
        parse(f"#nvvm.wgmma_scale_out<{'one' if accumulate else 'zero'}>"),
        parse("#nvvm.wgmma_scale_in<one>"),
        parse("#nvvm.wgmma_scale_in<one>"),
        parse(f"#nvvm.mma_layout<{'col' if a_mn_major else 'row'}>"),  # A: row = K-major
        parse(f"#nvvm.mma_layout<{'row' if b_mn_major else 'col'}>")).result  # B: col = K-major


class TmaLoop:
    """One pipelined K loop: TMA boxes into S slots, wgmma gemms on slot i % S."""

    def __init__(self, core: NvidiaMatrixCore, lowering: KernelLowering, op: ir.Operation,
                 plan: PipelinePlan, deferred: bool = False):
        self.core, self.lowering, self.op, self.plan = core, lowering, op, plan
        self.stages = plan.stages
        self.barrier_type = ir.Type.parse(f"!nvgpu.mbarrier.group<memorySpace = {WORKGROUP}, "
                                          f"num_barriers = {self.stages}>")
        self.iv = for_loop_parts(op).induction_variable  # the tile-level loop's, bound per iteration emitted
        self.maps = [self.tensor_map(copy) for copy in plan.copies]
        self.bytes_per_stage = sum(core.swizzled[c.operands[1]].slot_bytes for c in plan.copies)
        # Iterations of this loop run before the current one's first, in a
        # persistent kernel (warp_specialize.py: the tiles done by this
        # workgroup so far x the trip count); None: the loop runs once.
        self.base: ir.Value | None = None
        # 8-bit partial sums promoted one iteration late (`deferred_loop`):
        # warp-specialized consumers whose register split holds them.
        self.deferred = deferred

    def tensor_map(self, copy: ir.Operation) -> ir.Value:
        """The tensor map of a copy's global source: a kernel argument (a map
        the launcher encodes, passed by value: tensor_map_params.py) cast to
        nvgpu's descriptor type."""
        buffer = self.core.swizzled[copy.operands[1]]
        source = copy.operands[0]
        source_type = ir.MemRefType(source.type)
        element = str(buffer.element)
        desc_type = ir.Type.parse(
            f"!nvgpu.tensormap.descriptor<tensor = memref<{buffer.rows}x{buffer.box_cols}x{element}, "
            f"{WORKGROUP}>, swizzle = swizzle_{buffer.swizzle}b, l2promo = l2promo_128b, oob = zero, "
            "interleave = none>")
        pointer = self.lowering.add_kernel_argument(llvm.PointerType.get(), {
            "tensor_map": {"source": self.lowering.value_of(source), "dtype": element,
                           "shape": list(source_type.shape),
                           "box": [buffer.rows, buffer.box_cols], "swizzle": buffer.swizzle}})
        return builtin.UnrealizedConversionCastOp([desc_type], [pointer]).result

    def create_barriers(self) -> None:
        """The slots' mbarriers, initialized by thread 0, then a CTA barrier."""
        lowering = self.lowering
        warps = lowering.threads // lowering.wave_size  # the warps reading the slots
        self.leader = arith.CmpIOp(arith.CmpIPredicate.eq, lowering.ids.thread, const_index(0)).result
        # full[s]: slot s's TMA bytes arrived (the leader's expect_tx + the copies);
        # empty[s]: every warp is done reading slot s (one arrival per warp).
        self.full = nvgpu.MBarrierCreateOp(self.barrier_type).result
        self.empty = nvgpu.MBarrierCreateOp(self.barrier_type).result
        for s in range(self.stages):
            nvgpu.MBarrierInitOp(self.full, const_index(1), const_index(s), predicate=self.leader)
            nvgpu.MBarrierInitOp(self.empty, const_index(warps), const_index(s), predicate=self.leader)
        for tensor_map in self.maps:
            nvgpu.TmaPrefetchOp(tensor_map, predicate=self.leader)
        gpu.BarrierOp()

    def emit(self) -> None:
        lowering, plan, stages = self.lowering, self.plan, self.stages
        trips = plan.trip_count
        self.create_barriers()
        self.lane0 = arith.CmpIOp(arith.CmpIPredicate.eq, lowering.ids.lane, const_index(0)).result
        prologue = scf.IfOp(self.leader)
        with ir.InsertionPoint(prologue.then_block):
            for s in range(min(stages - 1, trips)):
                self.issue(const_index(s), const_index(s))
            scf.YieldOp([])
        carried = lowering.fragments()
        flat = fragment_values(carried)
        warp_level = len(plan.gemms) == 1 and not is_wgmma(MmaChoice.of(plan.gemms[0]).name)
        if warp_level:
            self.read_ahead_loop(carried, flat)
        else:
            self.wgmma_loop(carried, flat)
        for buffer in plan.buffers:
            self.bind_slot(buffer, const_index(0))

    def issue(self, iteration: ir.Value, slot: ir.Value) -> None:
        """TMA boxes of `iteration` into `slot` (emitted where only the leader runs)."""
        self.lowering.bind(self.iv, iteration)
        for inner in self.plan.prefix:
            self.lowering.lower_op(inner)
        nvgpu.MBarrierArriveExpectTxOp(self.full, const_index(self.bytes_per_stage), slot)
        for copy, tensor_map in zip(self.plan.copies, self.maps):
            self.load(copy, tensor_map, self.full, slot)

    def parity(self, iteration: ir.Value) -> ir.Value:
        """The phase of a slot's barriers that `iteration`'s use completes."""
        return arith.IndexCastOp(ir.IntegerType.get_signless(1),
                                 urem(udiv(iteration, self.stages), 2)).result

    def wait(self, barriers: ir.Value, iteration: ir.Value) -> None:
        nvgpu.MBarrierTryWaitParityOp(barriers, self.parity(iteration), const_index(10_000_000),
                                      urem(iteration, self.stages))

    def release(self, iteration: ir.Value, when: ir.Value | None = None) -> None:
        """Lane 0 of each warp (if `when`): the warp is done reading `iteration`'s slot."""
        branch = scf.IfOp(self.lane0 if when is None else arith.AndIOp(when, self.lane0).result)
        with ir.InsertionPoint(branch.then_block):
            nvgpu.MBarrierArriveOp(self.empty, urem(iteration, self.stages),
                                   results=[ir.Type.parse("!nvgpu.mbarrier.token")])
            scf.YieldOp([])

    def refill(self, i: ir.Value) -> None:
        """The leader: iteration i+S-1 into slot (i-1) % S once every warp
        released iteration i-1 (at i = 0 the slot, S-1, is still fresh)."""
        ahead = add(i, self.stages - 1)
        more = arith.CmpIOp(arith.CmpIPredicate.ult, ahead, const_index(self.plan.trip_count)).result
        branch = scf.IfOp(arith.AndIOp(self.leader, more).result)
        with ir.InsertionPoint(branch.then_block):
            started = arith.CmpIOp(arith.CmpIPredicate.uge, i, const_index(1)).result
            reuse = scf.IfOp(started)
            with ir.InsertionPoint(reuse.then_block):
                self.wait(self.empty, arith.SubIOp(i, const_index(1)).result)
                scf.YieldOp([])
            self.issue(ahead, urem(ahead, self.stages))
            scf.YieldOp([])

    def bind(self, slot: ir.Value) -> None:
        for buffer in self.plan.buffers:
            self.bind_slot(buffer, slot)

    def bind_slot(self, buffer: ir.Value, slot: ir.Value) -> None:
        """The gemms read `buffer` from its slot `slot` from here on."""
        self.lowering.bind_shared(buffer, self.core.slot_base(self.core.swizzled[buffer], slot),
                                  SharedLayout())

    def emit_consumer(self) -> None:
        """The loop of a warp-specialized kernel's consumer warps (the
        barriers made before the split, `create_barriers`): wait for a slot,
        its wgmmas, release the previous one; the producer refills."""
        self.lane0 = arith.CmpIOp(arith.CmpIPredicate.eq, self.lowering.ids.lane, const_index(0)).result
        carried = self.lowering.fragments()
        self.wgmma_loop(carried, fragment_values(carried), refill=False)
        if self.base is not None:  # the next tile's loads reuse the last slot too
            self.release(self.counted(const_index(self.plan.trip_count - 1)))
        for buffer in self.plan.buffers:
            self.bind_slot(buffer, const_index(0))

    def counted(self, i: ir.Value) -> ir.Value:
        """Iteration i of this loop counted over the whole launch: a persistent
        kernel's earlier tiles (`base` iterations) used the slots before it."""
        return i if self.base is None else add(self.base, i)

    def emit_producer(self) -> None:
        """The loop of a warp-specialized kernel's producer thread: iteration
        i's boxes into slot i % S once the consumers released iteration i-S
        there (the first S slots are fresh)."""
        stages = self.stages
        loop = scf.ForOp(const_index(0), const_index(self.plan.trip_count), const_index(1), [])
        with ir.InsertionPoint(loop.body):
            i = loop.induction_variable
            g = self.counted(i)
            reused = arith.CmpIOp(arith.CmpIPredicate.uge, g, const_index(stages)).result
            branch = scf.IfOp(reused)
            with ir.InsertionPoint(branch.then_block):
                self.wait(self.empty, arith.SubIOp(g, const_index(stages)).result)
                scf.YieldOp([])
            self.issue(i, urem(g, stages))
            scf.YieldOp([])

    def wgmma_loop(self, carried: list, flat: list, refill: bool = True) -> None:
        if self.deferred:
            self.deferred_loop(carried, refill)
            return
        loop = scf.ForOp(const_index(0), const_index(self.plan.trip_count), const_index(1), flat)
        rebind_fragments(carried, list(loop.inner_iter_args))
        with ir.InsertionPoint(loop.body):
            self.iteration(loop.induction_variable, refill)
            scf.YieldOp(fragment_values(carried))
        rebind_fragments(carried, list(loop.results))
        nvvm.WgmmaWaitGroupSyncOp(0)

    def iteration(self, i: ir.Value, refill: bool) -> None:
        """One iteration of the K loop: wait for its slot, its gemms, release
        the slot of the one before, and (`refill`) the leader's refill."""
        lowering = self.lowering
        g = self.counted(i)
        self.wait(self.full, g)
        self.bind(urem(g, self.stages))
        lowering.bind(self.iv, i)
        for gemm in self.plan.gemms:
            lowering.lower_op(gemm)
        # The gemms end in wgmma.wait_group 1 (0 for 8-bit sums promoted at
        # once): this warp's wgmmas of iteration i-1 are done, so it releases
        # their slot.
        previous = arith.SubIOp(g, const_index(1)).result
        self.release(previous, arith.CmpIOp(arith.CmpIPredicate.uge, i, const_index(1)).result)
        if refill:
            self.refill(i)

    def deferred_loop(self, carried: list, refill: bool) -> None:
        """The K loop of one 8-bit gemm whose block K's partial sums are added
        one iteration late (`partial_sum_copies`): iteration i issues its
        wgmmas into fresh registers, waits for iteration i-1's (wait_group
        1) and adds those to the sum, so the tensor cores work while the
        FADDs run. The loop runs `deferred_run` iterations a trip (a divisor
        of the count) and ends each with wgmma.wait_group 0 and the last
        partial sums added: no partial sums in flight cross from one trip to
        the next, where the loop would copy them, and ptxas serializes wgmmas
        whose registers another instruction reads in flight (C7514)."""
        lowering, trips = self.lowering, self.plan.trip_count
        (gemm,) = self.plan.gemms
        fragment = lowering.gemm_operands(gemm).fragment
        run = deferred_run(trips)
        self.core.pending[id(fragment)] = None
        loop = scf.ForOp(const_index(0), const_index(trips), const_index(run), fragment_values(carried))
        rebind_fragments(carried, list(loop.inner_iter_args))
        with ir.InsertionPoint(loop.body):
            for step in range(run):
                self.iteration(add(loop.induction_variable, step), refill)
            self.core.add_pending(fragment)
            scf.YieldOp(fragment_values(carried))
        rebind_fragments(carried, list(loop.results))
        del self.core.pending[id(fragment)]

    def read_ahead_loop(self, carried: list, flat: list) -> None:
        """One mma.sync gemm: its reads of a slot are ldmatrix, done within the
        iteration, so each warp releases slot i as soon as it loaded the last K
        step's registers, then waits for slot i+1 and loads its first K step's
        registers before the last K step's mma.sync (as the cp.async loop);
        the leader refills slot i-1 at the top of iteration i."""
        lowering, core, trips = self.lowering, self.core, self.plan.trip_count
        gemm = self.plan.gemms[0]
        self.wait(self.full, const_index(0))
        self.bind(const_index(0))
        lowering.bind(self.iv, const_index(0))
        template, first = flatten(core.load_k_step(lowering.gemm_operands(gemm), 0))
        loop = scf.ForOp(const_index(0), const_index(trips), const_index(1), flat + first)
        inner_args = list(loop.inner_iter_args)
        rebind_fragments(carried, inner_args[:len(flat)])
        with ir.InsertionPoint(loop.body):
            i = loop.induction_variable
            self.refill(i)
            self.bind(urem(i, self.stages))
            lowering.bind(self.iv, i)

            def next_slot() -> None:  # this warp is done with slot i; slot i+1 landed
                self.release(i)
                following = add(i, 1)
                more = arith.CmpIOp(arith.CmpIPredicate.ult, following, const_index(trips)).result
                ready = scf.IfOp(more)  # past the end nothing comes: the registers go unused
                with ir.InsertionPoint(ready.then_block):
                    self.wait(self.full, following)
                    scf.YieldOp([])
                self.bind(urem(following, self.stages))

            current = unflatten(template, iter(inner_args[len(flat):]))
            registers = mma_reading_ahead(core, lowering, gemm, current, next_slot)
            scf.YieldOp(fragment_values(carried) + registers)
        rebind_fragments(carried, list(loop.results)[:len(flat)])

    def load(self, copy: ir.Operation, tensor_map: ir.Value, barriers: ir.Value, slot: ir.Value) -> None:
        """The copy's window as TMA boxes (coordinates innermost first)."""
        buffer = self.core.swizzled[copy.operands[1]]
        row, col = (self.lowering.value_of(v) for v in list(copy.operands)[2:4])
        for box in range(buffer.boxes):
            nvgpu.TmaAsyncLoadOp(self.core.box_view(buffer, slot, box), barriers, tensor_map,
                                 [add(col, box * buffer.box_cols), row], slot)

