"""The output tile written by TMA: a TMA-fed kernel's epilogue through shared memory.

Stored from registers, a wgmma accumulator leaves each thread with pairs of
columns in 8 rows, so every store instruction of a warp writes 16 bytes in
each of 8 rows, and the consumers stall until the whole tile has gone out
before the next tile's K loop starts. Measured on the H200 (bench/gemm.py's
f16 4096^3 default, its stores predicated off): 214 us with them, 184 us
without; 4096x4096x1024 72 against 46 us. CUTLASS's sm90 epilogues and
FlashAttention-3 write the tile into shared memory instead and let the TMA
unit copy it out (`cp.async.bulk.tensor` shared -> global), asynchronously:
the consumers go on with the next tile while the copy drains
(shared/reference/speed_techniques.md 1.2).

The tile goes out in chunks of its columns, 128 bytes of each row
(`CHUNK_BYTES`, one row of the 128-byte swizzle, so a chunk is one TMA box
of rows x 128 bytes), through two chunk buffers used in turn (one where the
tile has an odd number of chunks):

    for each chunk c (buffer b = c % 2):
        every thread: its registers of chunk c -> buffer b (swizzled)
                      fence.proxy.async (its writes, before the TMA reads them)
        thread 0:     cp.async.bulk.wait_group.read 0  (chunk c-1's copy has read
                      buffer 1-b, so chunk c+1 may write it)
        barrier of the consumers
        thread 0:     TMA store of buffer b at the tile's origin + c's columns; commit

With one buffer, thread 0 also waits and the consumers meet before the
writes. Thread 0 waits for every copy's reads once more after the last tile,
before the block's shared memory goes (PTX ISA, "cp.async.bulk.wait_group").

The swizzle: the 16-byte piece p of row r lands at piece p ^ (r % 8), the
layout TMA's 128-byte swizzle reads (wgmma.py's module docstring), so the
eight rows a warp's store instruction writes fall in distinct banks.

What takes this path (`plan_tma_store`): the one tile.copy of a kernel's body
(not inside a loop or branch: every consumer thread runs it) from a 2-D
register fragment to a 2-D argument of the host function (what the
launcher's tensor maps describe: static shape, row-major, rows of 16-byte
multiples, a TMA element type), with 8 to 256 rows, a multiple of 8, and
each row a whole number of 128-byte chunks, whose thread's columns fall in
chunks the layout fixes; in a kernel whose K loop is TMA-fed. The argument
has no other use, in the kernel or in the host function, but reads of it
before the copy (C += A B), which the threads order before the TMA unit's
writes with fence.proxy.async.global. Boxes past the argument's edge are
clipped by the TMA unit, so edge tiles need no code.
The chunk buffers must fit beside the K loop's slots without fewer blocks
per SM (`NvidiaMatrixCore.place_store_staging`); otherwise each thread
stores its registers as before.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, builtin, gpu, llvm, memref, nvgpu, nvvm, vector

from tilemlir.dialects import attributes
from tilemlir.irutil import parent_ops, walk
from tilemlir.passes.lower_to_gpu.api import (
    KernelLowering,
    add,
    bit_width,
    const_index,
    guarded,
    mul,
    urem,
)

CHUNK_BYTES = 128  # a chunk's row: one row of the 128-byte swizzle
SWIZZLE_PIECE = 16  # bytes the swizzle moves together
SWIZZLE_ROWS = 8  # rows of one swizzle period
BOX_LIMIT = 256  # a TMA box's extents (cuTensorMapEncodeTiled)
GLOBAL_ROW_MULTIPLE = 16  # TMA's global strides are multiples of 16 bytes
# Element types a tensor map describes (the launcher's TENSOR_MAP_TYPES).
TMA_TYPES = ("f16", "bf16", "f32", "f8E4M3FN", "f8E5M2")
WORKGROUP = "#gpu.address_space<workgroup>"


@dataclass(frozen=True)
class StoreStaging:
    """The tile.copy whose fragment goes out by TMA, and its chunks."""

    copy: ir.Operation
    rows: int
    cols: int
    element: ir.Type
    # The kernel reads the destination before the copy: the threads order
    # those generic reads before the TMA unit's writes (fence.proxy.async.global).
    read_first: bool = False

    @property
    def element_bytes(self) -> int:
        return bit_width(self.element) // 8

    @property
    def chunk_cols(self) -> int:
        return CHUNK_BYTES // self.element_bytes

    @property
    def chunks(self) -> int:
        return self.cols // self.chunk_cols

    @property
    def buffers(self) -> int:
        # Two in turn; an odd count would start a tile in the buffer the last
        # tile's final copy may still be reading.
        return 2 if self.chunks % 2 == 0 else 1

    @property
    def chunk_bytes(self) -> int:
        return self.rows * CHUNK_BYTES

    @property
    def bytes(self) -> int:
        return self.buffers * self.chunk_bytes


def plan_tma_store(kernel: ir.Operation) -> StoreStaging | None:
    """The kernel's one epilogue copy that TMA can write (module docstring), or None."""
    found = [staging for op in kernel.regions[0].blocks[0].operations
             if (staging := _tma_storable(op)) is not None]
    if len(found) != 1:
        return None
    reads = _reads_before(kernel, found[0].copy)
    return None if reads is None else dataclasses.replace(found[0], read_first=reads)


def _reads_before(kernel: ir.Operation, copy: ir.Operation) -> bool | None:
    """Whether the kernel reads the copy's destination before it (a tile.copy
    from it), where every other use of the destination is such a read: the
    TMA unit's writes, which land after the kernel's own, then race with none
    of them; None where another use exists, in the kernel or in the host
    function (a view of it there could reach the kernel as another operand)."""
    dst, before, reads = copy.operands[1], True, False
    if any(all(parent != kernel for parent in parent_ops(use.owner)) for use in dst.uses):
        return None
    for op in walk(kernel):
        if op == copy:
            before = False
            continue
        if not any(operand == dst for operand in op.operands):
            continue
        if not (before and op.name == "tile.copy" and op.operands[0] == dst and op.operands[1] != dst):
            return None
        reads = True
    return reads


def _tma_storable(op: ir.Operation) -> StoreStaging | None:
    if op.name != "tile.copy" or attributes.ATOMIC_ADD.is_on(op):
        return None
    src, dst = op.operands[0], op.operands[1]
    if not isinstance(src, ir.OpResult) or src.owner.operation.name != "tile.alloc_fragment":
        return None
    if not isinstance(dst, ir.BlockArgument) or dst.owner.owner.operation.name != "func.func":
        return None  # a view of an argument has no tensor map of its own
    src_type, dst_type = ir.MemRefType(src.type), ir.MemRefType(dst.type)
    if src_type.rank != 2 or dst_type.rank != 2 or dst_type.memory_space is not None:
        return None
    identity = ir.AffineMap.get_identity(2)
    if any(ir.ShapedType.is_dynamic_size(d) for d in dst_type.shape) or \
            not isinstance(dst_type.layout, ir.AffineMapAttr) or dst_type.layout.value != identity:
        return None
    element = dst_type.element_type
    if str(element) not in TMA_TYPES:
        return None
    rows, cols = src_type.shape
    size = bit_width(element) // 8
    # Rows in whole swizzle periods: every chunk buffer starts 1024-aligned,
    # where TMA's swizzle pattern starts (its address bits pick the XOR).
    if rows > BOX_LIMIT or rows % SWIZZLE_ROWS or (cols * size) % CHUNK_BYTES \
            or (dst_type.shape[1] * size) % GLOBAL_ROW_MULTIPLE:
        return None
    return StoreStaging(op.operation, rows, cols, element)


def column_span(part) -> tuple[int, int] | None:
    """(alignment, largest value) of a fragment's thread part of its columns,
    from its bit fields; None where they are unknown."""
    if part.terms is None:
        return None
    live = [(mod, scale) for _, mod, scale in part.terms if mod > 1]
    alignment = math.gcd(*(scale for _, scale in live)) if live else CHUNK_BYTES
    return alignment, sum((mod - 1) * scale for mod, scale in live)


def run_chunks(staging: StoreStaging, layout) -> list[int] | None:
    """The chunk of each of the thread's runs (`layout.runs(chunk_cols)`,
    the order `fragment_runs` gives them), decided by the layout alone; None
    where a run's chunk depends on the thread (a column part that reaches
    past a chunk) or is unknown."""
    span = column_span(layout.parts[1])
    if span is None:
        return None
    widest = span[1]
    width = staging.chunk_cols
    chunks = []
    for run in layout.runs(width):
        first = layout.slots[run[0]][1]
        if first // width != (first + widest + len(run) - 1) // width:
            return None
        chunks.append(first // width)
    return chunks


def chunk_pieces(staging: StoreStaging, layout, runs, chunks: list[int]) -> list[list[tuple]]:
    """Per chunk, the (values, row, column in the chunk) pieces of the
    thread's runs in it (`chunks`: `run_chunks`), each a power of two of
    elements, at most 16 bytes, at a column aligned to its size: one vector
    store inside one 16-byte piece of the swizzle."""
    alignment = column_span(layout.parts[1])[0]
    width = staging.chunk_cols
    per_chunk: list[list[tuple]] = [[] for _ in range(staging.chunks)]
    for run, chunk in zip(runs, chunks, strict=True):
        row, col = run.indices
        first = run.offsets[1]
        local = arith.SubIOp(col, const_index(chunk * width)).result
        start = 0
        while start < len(run.values):
            most = min(len(run.values) - start, SWIZZLE_PIECE // staging.element_bytes)
            count = 1 << (most.bit_length() - 1)
            while count > 1 and (alignment % count or (first + start) % count):
                count //= 2
            per_chunk[chunk].append((run.values[start:start + count], row,
                                     add(local, start) if start else local))
            start += count
    return per_chunk


def swizzled_offset(row: ir.Value, col: ir.Value, element_bytes: int) -> ir.Value:
    """The element index of (row, col) in a chunk of 128-byte swizzled rows."""
    byte = mul(col, element_bytes)
    piece = arith.DivUIOp(byte, const_index(SWIZZLE_PIECE)).result
    moved = arith.XOrIOp(piece, urem(row, SWIZZLE_ROWS)).result
    inside = urem(byte, SWIZZLE_PIECE)
    offset = add(add(mul(row, CHUNK_BYTES), mul(moved, SWIZZLE_PIECE)), inside)
    return arith.DivUIOp(offset, const_index(element_bytes)).result


class TmaStore:
    """Emits one staged epilogue (module docstring); `base` is the dynamic
    shared memory as bytes, `offset` where the chunk buffers start in it."""

    def __init__(self, lowering: KernelLowering, staging: StoreStaging, base: ir.Value, offset: int):
        self.lowering, self.staging, self.base, self.offset = lowering, staging, base, offset
        self.leader = arith.CmpIOp(arith.CmpIPredicate.eq, lowering.ids.thread, const_index(0)).result

    def tensor_map(self) -> ir.Value:
        staging = self.staging
        dst_type = ir.MemRefType(staging.copy.operands[1].type)
        element = str(staging.element)
        desc_type = ir.Type.parse(
            f"!nvgpu.tensormap.descriptor<tensor = memref<{staging.rows}x{staging.chunk_cols}x{element}, "
            f"{WORKGROUP}>, swizzle = swizzle_128b, l2promo = l2promo_128b, oob = zero, interleave = none>")
        pointer = self.lowering.add_kernel_argument(llvm.PointerType.get(), {
            "tensor_map": {"source": self.lowering.value_of(staging.copy.operands[1]), "dtype": element,
                           "shape": list(dst_type.shape), "box": [staging.rows, staging.chunk_cols],
                           "swizzle": CHUNK_BYTES}})
        return builtin.UnrealizedConversionCastOp([desc_type], [pointer]).result

    def chunk_view(self, buffer: int, flat: bool) -> ir.Value:
        staging = self.staging
        shape = [staging.rows * staging.chunk_cols] if flat else [staging.rows, staging.chunk_cols]
        view_type = ir.MemRefType.get(shape, staging.element, memory_space=ir.Attribute.parse(WORKGROUP))
        start = const_index(self.offset + buffer * staging.chunk_bytes)
        return memref.ViewOp(view_type, self.base, start, []).result

    def emit(self, fragment, indices: list[ir.Value]) -> bool:
        """The copy of `fragment` at `indices` of the global argument; False
        (nothing emitted) where the fragment's columns do not split into
        chunks per thread statically (`run_chunks`)."""
        staging = self.staging
        chunks = run_chunks(staging, fragment.placement)
        if chunks is None:
            return False
        guard, runs = self.lowering.fragment_runs(fragment, staging.element, staging.chunk_cols)
        per_chunk = chunk_pieces(staging, fragment.placement, runs, chunks)
        tensor_map = self.tensor_map()
        row0, col0 = indices
        for chunk, pieces in enumerate(per_chunk):
            buffer = chunk % staging.buffers
            if staging.buffers == 1:
                self.wait_reads()
                gpu.BarrierOp()
            self.write(pieces, buffer, guard)
            nvvm.FenceProxyOp(nvvm.ProxyKind.async_shared, space=nvvm.SharedSpace.shared_cta)
            if staging.read_first and chunk == 0:
                nvvm.FenceProxyOp(nvvm.ProxyKind.async_global)
            self.wait_reads()
            gpu.BarrierOp()
            column = add(col0, chunk * staging.chunk_cols)
            nvgpu.TmaAsyncStoreOp(self.chunk_view(buffer, flat=False), tensor_map, [column, row0],
                                  predicate=self.leader)
            guarded(self.leader, nvvm.CpAsyncBulkCommitGroupOp)
        return True

    def write(self, pieces: list[tuple], buffer: int, guard: ir.Value | None) -> None:
        view = self.chunk_view(buffer, flat=True)
        size = self.staging.element_bytes

        def stores() -> None:
            for values, row, col in pieces:
                at = swizzled_offset(row, col, size)
                if len(values) == 1:
                    memref.StoreOp(values[0], view, [at])
                    continue
                packed = vector.FromElementsOp(ir.VectorType.get([len(values)], self.staging.element),
                                               list(values)).result
                vector.StoreOp(packed, view, [at], alignment=len(values) * size)
        guarded(guard, stores)

    def wait_reads(self, leader: ir.Value | None = None) -> None:
        """Thread 0: every bulk copy it committed has read its shared source."""
        guarded(self.leader if leader is None else leader, lambda: nvvm.CpAsyncBulkWaitGroupOp(0, read=True))

    def drain(self) -> None:
        """`wait_reads` after the last tile (outside the loop over tiles,
        where this epilogue's own values are not visible)."""
        self.wait_reads(arith.CmpIOp(arith.CmpIPredicate.eq, self.lowering.ids.thread, const_index(0)).result)
