"""What the compiler decided for each kernel, as the passes recorded it in the
IR: the `decisions` of `tile-compile --report` and the data `--plot-layout` draws.

Nothing here chooses anything; it reads what the passes wrote, at two points
of the shared stages (`backends/driver.py`):

* when the `tile` stage ends (the tile IR just before tile-lower-to-gpu), per
  `tile.kernel`: its `grid` and `threads`; the stages of its loops
  (`tile.pipelined`, else `tile.num_stages`); each tile.gemm's block (its
  operand shapes), `tile.warp_grid`, `tile.mma` and `tile.lds_conflicts`;
  each shared buffer's `tile.smem_layout`; each fragment's `tile.layout`;
* when the `gpu` stage ends, from the gpu.funcs tile-lower-to-gpu made (in the
  order it made them, which is the kernels' order): the kernel's name and
  what its matrix core and hooks recorded in `tile.shared_storage` (direct
  loads into shared memory; the padding and swizzle of a core that places
  shared memory itself, as NVIDIA's does).

The JSON (`KernelDecisions.as_json`), one object per kernel in program order:

    kernel        the lowered kernel's name (null if the compile stopped before lowering)
    at            file:line:col of the tile.kernel
    grid, threads, waves    the launch: blocks per dimension, threads per block, waves per block
    stages        the largest pipeline depth of its loops (1: none pipelined)
    split_k       the split-K factor (tile-tiling's `tile.tiling`; 1 when none is recorded)
    cleared_first   the function's arguments (positions) a host gpu.memset clears to zero
                  right before the launch (a split-K kernel's C: a launcher of the kernel
                  alone must clear them too); [] when none
    block         {m, n, k} of the kernel's first tile.gemm (null without one); `gemms` lists each
    warp_grid     [waves along M, along N] of that gemm
    instruction   the matrix instruction tile-select-mma chose for it
    lds_bank_conflicts_per_iteration   the bank-model clocks of all its gemms' operand reads,
                  per execution (per main-loop iteration); null where the family's core has no
                  bank model (NVIDIA)
    gemms         [{at, block, warp_grid, instruction, instruction_shape [m, n, k, blocks],
                    lds_bank_conflicts_per_iteration}]
    shared_buffers  per tile.alloc_shared:
        name, at, shape, dtype   as written (name: the SSA name in the source, else sharedN)
        use           e.g. "A of the tile.gemm at f:12:7", "scratch", "indexed by the program"
        stages        copies of it in shared memory (tile-pipeline's, or the core's slots: a
                      wgmma K loop's one more than asked where it fits, for the group in flight)
        bytes         shared memory it takes, stages and padding included
        transposed    stored with its last two dimensions swapped (K-contiguous for the gemm)
        padding       elements added to each stored row
        padding_dropped  row padding given up to fit the kernel's shared memory (null: none)
        swizzle       XOR swizzle of the rows' 16-byte chunks (an integer, 0: none), or the
                      core's own (text, e.g. NVIDIA's "128-byte (TMA boxes)")
        transpose_reads  stored for LDS transpose reads (ds_read_b64_tr_*): the uses whose K runs
                      down its stored columns read it with them (marked "(LDS transpose reads)"
                      in `use`), the others with vector reads along its rows
        bank_conflicts_per_iteration   clocks its gemm reads cost per execution of the gemms
        bank_conflicts_per_read        clocks of one operand read: {as_stored, unpadded} (rows as stored; unpadded rows)
        banks         the bank count the model used ("unknown (32 and 64 checked)")
        direct_loads  the instruction that fills it straight from global memory (no registers),
                      false when its copies go through registers, null when nothing copies
                      global memory into it
        kept_as_written  why it keeps the layout it is written in (the program indexes it)
    fragments     per tile.alloc_fragment: name, at, shape, dtype, layout (its kind),
                  registers_per_thread, threads_per_element (replicas; null when unknown)

Fields that do not apply are null: a kernel without a gemm has no block, a
buffer no gemm reads has no bank model, NVIDIA's core models no banks.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

import numpy as np
from mlir import ir

from tilemlir.diagnostics import SourceBuffer, file_position
from tilemlir.dialects import attributes, tile
from tilemlir.irutil import walk
from tilemlir.lds_banks import lane_ways
from tilemlir.passes.fragment_layout import FragmentLayout, read_layout
from tilemlir.passes.gemm_facts import MmaChoice, gemm_shape, k_along_rows, warp_grid_of
from tilemlir.passes.gpu_builders import bit_width
from tilemlir.passes.infer_layout import program_accesses
from tilemlir.passes.kernel_facts import kernel_grid, kernel_threads
from tilemlir.passes.lower_to_gpu.api import matrix_core_for
from tilemlir.passes.shared_memory import (
    OperandRead,
    operand_read,
    operand_reads_of,
    physical_shared_bytes,
    physical_shared_shape,
    shared_layout,
    transpose_read_elements,
    use_reads_transposed,
)
from tilemlir.passes.software_pipeline import in_peeled_tail
from tilemlir.targets.model import Target, is_unknown

# --------------------------------------------------------------------------
# What was decided
# --------------------------------------------------------------------------


@dataclass
class GemmDecision:
    at: str
    block: dict[str, int]
    warp_grid: list[int] | None
    instruction: str | None
    instruction_shape: list[int] | None
    lds_bank_conflicts_per_iteration: int | None

    def as_json(self) -> dict:
        return dict(vars(self))


@dataclass
class BankModel:
    """A shared buffer's stored geometry, for its bank map: one stage of
    `rows` stored rows of `row_elements` (padding included) elements of
    `element_bytes`, 16-byte chunks XOR-swizzled by `swizzle`, over `banks`
    banks of `bank_bytes`; `read` is one wave's gemm operand read of it."""

    rows: int
    row_elements: int
    pad: int
    element_bytes: int
    swizzle: int
    banks: int
    bank_bytes: int
    read: OperandRead | None = None

    def bank_map(self) -> np.ndarray:
        """The bank of every stored slot (rows x row_elements), padding included."""
        row_bytes = self.row_elements * self.element_bytes
        rows = np.arange(self.rows)[:, None]
        cols = np.arange(self.row_elements)[None, :]
        return ((rows * row_bytes + cols * self.element_bytes) // self.bank_bytes) % self.banks

    def read_ways(self) -> np.ndarray:
        """For every stored slot, how many ways its bank serializes when one
        wave makes one access of its gemm operand read (`lds_banks.lane_ways`):
        0 for slots that access does not read, 1 for a conflict-free read,
        w > 1 for a slot whose bank serves w distinct dwords in that clock."""
        ways = np.zeros((self.rows, self.row_elements), dtype=np.int64)
        if self.read is None:
            return ways
        width = self.read.per_access * self.element_bytes
        addresses = self.read.addresses(self.pad, self.swizzle)
        row_bytes = self.row_elements * self.element_bytes
        for address, lane in zip(addresses, lane_ways(addresses, width, self.banks, self.bank_bytes)):
            for byte in range(address, address + width, self.element_bytes):
                row, col = divmod(byte, row_bytes)
                if row < self.rows:
                    ways[row, col // self.element_bytes] = max(ways[row, col // self.element_bytes], lane)
        return ways

    def conflicts(self) -> int:
        """Conflict clocks of that one access (as the pass counted them)."""
        return 0 if self.read is None else self.read.conflicts(self.banks, self.bank_bytes, self.pad,
                                                                self.swizzle)


@dataclass
class SharedBufferDecision:
    name: str
    at: str
    shape: list[int]
    dtype: str
    use: str
    stages: int
    bytes: int
    transposed: bool | None = None
    padding: int | None = None
    padding_dropped: int | None = None
    swizzle: int | str | None = None
    transpose_reads: bool | None = None
    bank_conflicts_per_iteration: int | None = None
    bank_conflicts_per_read: dict[str, int] | None = None
    banks: str | None = None
    direct_loads: str | bool | None = None
    kept_as_written: str | None = None
    model: BankModel | None = field(default=None, repr=False)

    def as_json(self) -> dict:
        return {k: v for k, v in vars(self).items() if k != "model"}


@dataclass
class FragmentDecision:
    name: str
    at: str
    shape: list[int]
    dtype: str
    layout: str | None
    registers_per_thread: int | None
    threads: int
    placement: FragmentLayout | None = field(default=None, repr=False)
    # (m, n) of the matrix instruction whose C layout it has (mma_accumulator
    # layouts, projected ones included); None for other layouts.
    instruction_tile: tuple[int, int] | None = field(default=None, repr=False)

    def owners(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Which thread holds each element: (owner, register, holders), each of
        the fragment's shape: the lowest thread holding it, the register slot
        it is in there, and how many threads hold it (replicas); None when the
        layout's thread parts are not known as bit fields."""
        layout = self.placement
        if layout is None or not self.shape or any(part.terms is None for part in layout.parts) or not layout.slots:
            return None
        threads = np.arange(layout.threads)
        parts = np.stack([sum((threads // div) % mod * scale for div, mod, scale in part.terms)
                          + np.zeros_like(threads) for part in layout.parts], axis=-1)
        indices = parts[:, None, :] + np.array(layout.slots)[None, :, :]  # thread, slot, dim
        shape = tuple(self.shape)
        try:
            flat = np.ravel_multi_index(tuple(np.moveaxis(indices, -1, 0)), shape).ravel()
        except ValueError:  # an element outside the shape: not a layout of this fragment
            return None
        size = math.prod(shape)
        owner = np.full(size, layout.threads, dtype=np.int64)
        np.minimum.at(owner, flat, np.repeat(threads, len(layout.slots)))
        holders = np.bincount(flat, minlength=size)
        register = np.full(size, -1, dtype=np.int64)
        thread_of = np.repeat(threads, len(layout.slots))
        slot_of = np.tile(np.arange(len(layout.slots)), layout.threads)
        first = thread_of == owner[flat]
        register[flat[first]] = slot_of[first]
        owner[holders == 0] = -1
        return owner.reshape(shape), register.reshape(shape), holders.reshape(shape)

    def as_json(self) -> dict:
        owners = self.owners()
        replicas = None
        if owners is not None and owners[2].size:
            replicas = int(owners[2].max()) if owners[2].min() == owners[2].max() else None
        return {"name": self.name, "at": self.at, "shape": self.shape, "dtype": self.dtype,
                "layout": self.layout, "registers_per_thread": self.registers_per_thread,
                "threads_per_element": replicas}


@dataclass
class KernelDecisions:
    at: str
    grid: list[int]
    threads: int
    waves: int | None
    stages: int
    split_k: int
    cleared_first: list[int]
    gemms: list[GemmDecision]
    shared_buffers: list[SharedBufferDecision]
    fragments: list[FragmentDecision]
    kernel: str | None = None

    def as_json(self) -> dict:
        first = self.gemms[0] if self.gemms else None
        modelled = [g.lds_bank_conflicts_per_iteration for g in self.gemms
                    if g.lds_bank_conflicts_per_iteration is not None]
        return {
            "kernel": self.kernel,
            "at": self.at,
            "grid": self.grid,
            "threads": self.threads,
            "waves": self.waves,
            "stages": self.stages,
            "split_k": self.split_k,
            "cleared_first": self.cleared_first,
            "block": first.block if first else None,
            "warp_grid": first.warp_grid if first else None,
            "instruction": first.instruction if first else None,
            "lds_bank_conflicts_per_iteration": sum(modelled) if modelled else None,
            "gemms": [g.as_json() for g in self.gemms],
            "shared_buffers": [b.as_json() for b in self.shared_buffers],
            "fragments": [f.as_json() for f in self.fragments],
        }

    def named(self) -> dict[str, SharedBufferDecision | FragmentDecision]:
        """The kernel's buffers and fragments by name."""
        return {item.name: item for item in [*self.fragments, *self.shared_buffers]}


# --------------------------------------------------------------------------
# Reading them from the IR
# --------------------------------------------------------------------------

_RESULT_NAME = re.compile(r"(%[\w$.\-]+)(?::\d+)?\s*=\s*$")


class _Reader:
    def __init__(self, target: Target, source: SourceBuffer | None):
        self.target = target
        self.source = source
        wave = target.compute.wave_size
        self.wave = None if is_unknown(wave) else wave

    def at(self, op: ir.Operation) -> str:
        file, line, col = file_position(op.location)
        if self.source is not None:
            file, line, col = self.source.map_position(file, line, col)
        return f"{file}:{line}:{col}" if line else str(op.location)

    def source_name(self, op: ir.Operation) -> str | None:
        """The SSA name the source gives the op's result (`%A_shared = ...`)."""
        file, line, col = file_position(op.location)
        if self.source is None or file != self.source.name or not 1 <= line <= len(self.source.lines):
            return None
        _, line, col = self.source.map_position(file, line, col)
        match = _RESULT_NAME.search(self.source.lines[line - 1][:max(col - 1, 0)])
        return match.group(1) if match else None

    def name(self, op: ir.Operation, fallback: str, taken: set[str]) -> str:
        name = self.source_name(op)
        if name is None or name in taken:
            name = fallback
        taken.add(name)
        return name

    def kernel(self, kernel: ir.Operation) -> KernelDecisions:
        threads = kernel_threads(kernel)
        ops = list(walk(kernel))
        loops = [attributes.PIPELINED.read(op) or attributes.NUM_STAGES.read(op) or 1
                 for op in ops if op.name == "scf.for"]
        gemms = [op for op in ops if op.name == "tile.gemm" and not in_peeled_tail(op)]
        taken: set[str] = set()
        shared = [op for op in ops if op.name == "tile.alloc_shared"]
        fragments = [op for op in ops if op.name == "tile.alloc_fragment"]
        return KernelDecisions(
            at=self.at(kernel), grid=kernel_grid(kernel), threads=threads,
            waves=threads // self.wave if self.wave else None,
            stages=max(loops, default=1), split_k=_split_k(kernel), cleared_first=_cleared_first(kernel),
            gemms=[self.gemm(op) for op in gemms],
            shared_buffers=[self.shared_buffer(op, f"shared{i}", taken, gemms) for i, op in enumerate(shared)],
            fragments=[self.fragment(op, f"fragment{i}", taken, threads) for i, op in enumerate(fragments)],
        )

    def gemm(self, op: ir.Operation) -> GemmDecision:
        shape = gemm_shape(op)
        choice, warps = MmaChoice.of(op), warp_grid_of(op)
        return GemmDecision(
            at=self.at(op), block={"m": shape.m, "n": shape.n, "k": shape.k},
            warp_grid=list(warps) if warps else None,
            instruction=choice.name if choice else None,
            instruction_shape=[choice.m, choice.n, choice.k, choice.blocks] if choice else None,
            lds_bank_conflicts_per_iteration=attributes.LDS_CONFLICTS.read(op))

    def shared_buffer(self, op: ir.Operation, fallback: str, taken: set[str],
                      gemms: list[ir.Operation]) -> SharedBufferDecision:
        memref_type = ir.MemRefType(op.results[0].type)
        shape, stages = list(memref_type.shape), 1
        if _staged(op):  # tile-pipeline's [stages, ...] buffer
            stages, shape = shape[0], shape[1:]
        reads = operand_reads_of(op, gemms)
        roles = [(role, gemm) for role, gemm, _ in reads]
        uses = [f"{role} of the tile.gemm at {self.at(gemm)}" for role, gemm in roles]
        if attributes.SCRATCH.is_on(op):
            uses.append("scratch (reductions across waves, layout conversions)")
        elif not roles and program_accesses(op):
            uses.append("indexed by the program")
        held = attributes.READ_FROM_GLOBAL.is_on(op)  # in registers, not in shared memory
        if held:
            uses = [f"{use}, read from global memory into registers before its loop" for use in uses]
        decision = SharedBufferDecision(
            name=self.name(op, fallback, taken), at=self.at(op), shape=shape,
            dtype=str(memref_type.element_type), use="; ".join(uses) or "copies",
            stages=stages, bytes=0 if held else physical_shared_bytes(op), direct_loads=_filled_from_global(op))
        layout = attributes.SMEM_LAYOUT.read(op)
        if layout is None:
            return decision

        def entry(name: str, default=None):
            if name not in layout:
                return default
            value = layout[name]
            return ir.BoolAttr(value).value if isinstance(value, ir.BoolAttr) else \
                ir.StringAttr(value).value if isinstance(value, ir.StringAttr) else ir.IntegerAttr(value).value

        clocks = sum(clock for _, _, clock in reads)
        if entry("transpose_read", False):  # which of its uses read it so (use_reads_transposed)
            decision.use = "; ".join(
                f"{role} of the tile.gemm at {self.at(gemm)}"
                + (" (LDS transpose reads)" if use_reads_transposed(shared_layout(op), _k_contiguous(role, gemm))
                   else "")
                for role, gemm in roles)
        decision.transposed = entry("transposed")
        decision.padding = entry("pad")
        decision.padding_dropped = entry("dropped_pad")
        decision.swizzle = entry("swizzle", 0)
        decision.transpose_reads = entry("transpose_read", False)
        decision.bank_conflicts_per_iteration = clocks
        decision.bank_conflicts_per_read = {"as_stored": entry("conflicts"), "unpadded": entry("unpadded_conflicts")}
        decision.banks = entry("banks")
        decision.kept_as_written = entry("as_written")
        decision.model = self.bank_model(op, decision, roles)
        return decision

    def bank_model(self, op: ir.Operation, decision: SharedBufferDecision, roles) -> BankModel | None:
        """The stored geometry of one stage and the first gemm's operand read of it."""
        stored = physical_shared_shape(op)
        if len(stored) < 2 or len(decision.shape) < 2:
            return None
        banks, bank_bytes = self.target.memory.shared_banks, self.target.memory.shared_bank_bytes
        element_bytes = max(1, bit_width(ir.MemRefType(op.results[0].type).element_type) // 8)
        model = BankModel(rows=stored[-2], row_elements=stored[-1], pad=decision.padding or 0,
                          element_bytes=element_bytes,
                          swizzle=decision.swizzle if isinstance(decision.swizzle, int) else 0,
                          banks=32 if is_unknown(banks) else banks,
                          bank_bytes=4 if is_unknown(bank_bytes) else bank_bytes)
        if not roles or self.wave is None:
            return model
        role, gemm = roles[0]
        choice = MmaChoice.of(gemm)
        if choice is None:
            return model
        lanes = matrix_core_for(self.target).operand_lanes(
            choice.m, choice.n, choice.k, self.wave, steps=attributes.OPERAND_READ_STEPS.read(gemm) or 1)
        if lanes is None:
            return model
        operand_shape = list(ir.MemRefType(gemm.operands[0 if role == "A" else 1].type).shape)
        transpose = transpose_read_elements(self.target, element_bytes * 8) if decision.transpose_reads else None
        model.read = operand_read(lanes[0 if role == "A" else 1], operand_shape, element_bytes,
                                  _k_contiguous(role, gemm), bool(decision.transposed), transpose)
        return model

    def fragment(self, op: ir.Operation, fallback: str, taken: set[str], threads: int) -> FragmentDecision:
        memref_type = ir.MemRefType(op.results[0].type)
        shape = list(memref_type.shape)
        attr = attributes.LAYOUT.read(op)
        placement = None
        if attr is not None and self.wave is not None:
            core = matrix_core_for(self.target)
            try:
                placement = read_layout(attr, tuple(shape), threads, self.wave,
                                        lambda m, n, k: core.accumulator_layout(m, n, k, self.wave))
            except (ValueError, KeyError):
                placement = None
        return FragmentDecision(
            name=self.name(op, fallback, taken), at=self.at(op), shape=shape,
            dtype=str(memref_type.element_type),
            layout=ir.StringAttr(attr["kind"]).value if attr is not None else None,
            registers_per_thread=len(placement.slots) if placement is not None else None,
            threads=threads, placement=placement,
            instruction_tile=tuple(ir.DenseI64ArrayAttr(attr["instruction"]))[:2]
            if attr is not None and "instruction" in attr else None)


def _k_contiguous(role: str, gemm: ir.Operation) -> bool:
    """Whether operand `role` of a tile.gemm has its K runs along the rows of
    its buffer as written."""
    return k_along_rows(gemm)[role == "B"]


def _cleared_first(kernel: ir.Operation) -> list[int]:
    """Positions of the function arguments the host `gpu.memset`s between the
    previous tile.kernel (or the block's start) and `kernel` clear."""
    cleared = []
    for op in kernel.block.operations:
        op = op.operation
        if op == kernel.operation:
            return cleared
        if op.name == "tile.kernel":
            cleared = []
        elif op.name == "gpu.memset" and isinstance(op.operands[0], ir.BlockArgument) \
                and op.operands[0].owner == kernel.block:
            cleared.append(ir.BlockArgument(op.operands[0]).arg_number)
    return cleared


def _split_k(kernel: ir.Operation) -> int:
    """The split-K factor tile-tiling recorded in the kernel's `tile.tiling`, else 1."""
    record = attributes.TILING.read(kernel)
    return ir.IntegerAttr(record["split_k"]).value if record is not None else 1


def _staged(alloc: ir.Operation) -> bool:
    """Whether tile-pipeline multi-buffered this buffer: its prefetch copies
    write stage views of it."""
    return any(use.owner.name == "memref.subview" and any(
        inner.owner.name == "tile.copy" and attributes.PREFETCH.is_on(inner.owner)
        for inner in use.owner.results[0].uses) for use in alloc.results[0].uses)


def _filled_from_global(alloc: ir.Operation) -> bool | None:
    """False when copies from global memory fill the buffer (through registers
    unless the lowering records otherwise), None when none does."""
    values = [alloc.results[0]] + [use.owner.results[0] for use in alloc.results[0].uses
                                   if use.owner.name == "memref.subview"]
    for value in values:
        for use in value.uses:
            user = use.owner
            if user.name == "tile.copy" and use.operand_number == 1 \
                    and tile.memory_level(user.operands[0].type) == tile.GLOBAL:
                return False
    return None


def tile_decisions(module: ir.Operation, target: Target, source: SourceBuffer | None = None
                   ) -> list[KernelDecisions]:
    """The decisions of every tile.kernel of a module of tile IR (after the
    tile passes, before tile-lower-to-gpu), in program order."""
    reader = _Reader(target, source)
    return [reader.kernel(op) for op in walk(module) if op.name == "tile.kernel"]


def add_lowered_facts(decisions: list[KernelDecisions], module: ir.Operation) -> None:
    """Adds what tile-lower-to-gpu recorded on the gpu.funcs it made (one per
    tile.kernel, in the same order): the kernel's name and
    `tile.shared_storage`."""
    lowered = [op for op in walk(module)
               if op.name == "gpu.func" and attributes.LDS_BANK_CONFLICTS_PER_ITERATION.is_on(op)]
    if len(lowered) != len(decisions):
        return  # not what the lowering made of these kernels (GPU-level input mixed in)
    for kernel, func in zip(decisions, lowered):
        kernel.kernel = ir.StringAttr(func.attributes["sym_name"]).value
        for entry in attributes.SHARED_STORAGE.read(func) or []:
            note = json.loads(entry)
            buffer = kernel.shared_buffers[note["buffer"]]
            for key, attribute in (("fill", "direct_loads"), ("pad", "padding"), ("swizzle", "swizzle"),
                                   ("stages", "stages"), ("bytes", "bytes")):
                if key in note:
                    setattr(buffer, attribute, note[key])
