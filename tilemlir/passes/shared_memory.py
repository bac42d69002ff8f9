"""How tile.alloc_shared buffers are stored in shared memory (LDS): the
layout tile-infer-layout chose (`tile.smem_layout`), the bytes a buffer
takes as stored, LDS transpose reads, how one wave reads a gemm operand from
its buffer (the lanes the bank model sees) and what that costs per gemm, and
how a buffer is named in messages."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from mlir import ir

from tilemlir.dialects import attributes
from tilemlir.lds_banks import operand_read_conflicts, swizzled_byte
from tilemlir.passes.gemm_facts import MmaChoice, gemm_shape, warp_grid_of
from tilemlir.targets.model import is_unknown


class SharedLayout(NamedTuple):
    """How a tile.alloc_shared is stored and read (tile.smem_layout)."""

    transposed: bool = False  # stored with its last two dimensions swapped
    pad: int = 0  # elements added to each stored row
    transpose_read: bool = False  # gemm operand reads are LDS transpose reads
    swizzle: int = 0  # XOR swizzle of the rows' 16-byte chunks (lds_banks.swizzled_byte); 0: none
    # Stored as boxes of rows x 128 bytes with the 128-byte swizzle
    # (`gpu_builders.box_index`: what NVIDIA's wgmma reads), written by the
    # kernel's own copies from global memory, read by gemms only.
    boxed: bool = False


def shared_layout(alloc: ir.Operation) -> SharedLayout:
    """The tile.smem_layout of a tile.alloc_shared (defaults without one)."""
    layout = attributes.SMEM_LAYOUT.read(alloc)
    if layout is None:
        return SharedLayout()
    transpose_read = "transpose_read" in layout and ir.BoolAttr(layout["transpose_read"]).value
    swizzle = ir.IntegerAttr(layout["swizzle"]).value if "swizzle" in layout else 0
    return SharedLayout(ir.BoolAttr(layout["transposed"]).value,
                        ir.IntegerAttr(layout["pad"]).value, transpose_read, swizzle)


# LDS transpose reads by element width: (descriptor name, elements per lane).
TRANSPOSE_READS = {16: ("ds_read_b64_tr_b16", 4), 8: ("ds_read_b64_tr_b8", 8)}
TRANSPOSE_READ_GROUP = 16  # lanes exchanging data in one transpose read


def transpose_read_elements(target, element_bits: int) -> int | None:
    """Elements per lane of the target's LDS transpose read for this element
    width (memory.shared_transpose_reads), or None when it has none."""
    read = TRANSPOSE_READS.get(element_bits)
    if read is None or read[0] not in target.memory.shared_transpose_reads:
        return None
    return read[1]


@dataclass(frozen=True)
class OperandRead:
    """One wave's read of a gemm operand from its shared buffer, as the bank
    model (`tilemlir.lds_banks`) sees it: lane l reads `per_access`
    consecutive elements of stored row `rows[l]` from column `cols[l]`, in
    stored rows of `row_elements` before padding; one operand read (the
    instruction's operand, every lane's elements) is `accesses` such reads."""

    rows: tuple[int, ...]
    cols: tuple[int, ...]
    row_elements: int
    element_bytes: int
    per_access: int
    accesses: int

    def addresses(self, pad: int = 0, swizzle: int = 0) -> list[int]:
        """The first byte each lane reads, in rows padded by `pad` elements
        and swizzled by `swizzle` (`lds_banks.swizzled_byte`)."""
        row_bytes = (self.row_elements + pad) * self.element_bytes
        return [row * row_bytes + swizzled_byte(row, col * self.element_bytes, swizzle, row_bytes)
                for row, col in zip(self.rows, self.cols)]

    def conflicts(self, banks: int, bank_bytes: int, pad: int = 0, swizzle: int = 0) -> int:
        """Conflict clocks of one of the `accesses`."""
        return operand_read_conflicts(self.rows, self.cols, (self.row_elements + pad) * self.element_bytes,
                                      self.element_bytes, self.per_access, banks, bank_bytes, swizzle)


def operand_read(lanes: tuple, shape: list[int], element_bytes: int, k_contiguous: bool,
                 transposed: bool = False, transpose_elements: int | None = None) -> OperandRead:
    """How one wave reads a gemm operand from its buffer of `shape` (as
    written). `lanes` is the matrix core's `operand_lanes` entry for it:
    (outer index, K index, elements) per lane; `k_contiguous`: the operand's
    K runs along the rows as written. The buffer is stored `transposed` (last
    two dimensions swapped) or not, so each use of it reads

    * K runs along the stored rows: vector reads of 16 bytes at most;
    * K runs down the stored columns, with transpose reads of
      `transpose_elements` per lane (tile.smem_layout transpose_read): lane l
      of a 16-lane group reads row k + (l % 16) // (16/E), column
      n - l % 16 + E * (l % (16/E));
    * K runs down the stored columns otherwise: element by element.

    One buffer read by several gemms is stored one way for all of them:
    `transposed` and `transpose_elements` are the buffer's, `k_contiguous`
    and `lanes` the use's."""
    outer, ks, count = lanes
    row_elements = shape[-2] if transposed else shape[-1]
    if k_contiguous != transposed:
        per_access = min(count, max(1, 16 // element_bytes))
        return OperandRead(tuple(outer), tuple(ks), row_elements, element_bytes, per_access,
                           -(-count // per_access))
    if transpose_elements is not None:
        per_row = TRANSPOSE_READ_GROUP // transpose_elements
        rows = [k + (lane % TRANSPOSE_READ_GROUP) // per_row for lane, k in enumerate(ks)]
        cols = [n - lane % TRANSPOSE_READ_GROUP + transpose_elements * (lane % per_row)
                for lane, n in enumerate(outer)]
        return OperandRead(tuple(rows), tuple(cols), row_elements, element_bytes, transpose_elements,
                           -(-count // transpose_elements))
    return OperandRead(tuple(ks), tuple(outer), row_elements, element_bytes, 1, count)


def use_reads_transposed(layout: SharedLayout, k_contiguous: bool) -> bool:
    """Whether one gemm use of a buffer stored as `layout` is read with LDS
    transpose reads: the buffer is stored for them (transpose_read) and the
    use's K runs down its stored columns. A use whose K runs along the stored
    rows reads them with vector reads, whatever the flag."""
    return layout.transpose_read and k_contiguous == layout.transposed


def shared_alloc_of(value: ir.Value) -> ir.Operation | None:
    """The tile.alloc_shared a shared value is (or is a view of, through
    tile-pipeline's stage subviews), or None."""
    owner = value.owner
    while isinstance(owner, ir.OpView | ir.Operation) and owner.name == "memref.subview":
        owner = owner.operands[0].owner
    if isinstance(owner, ir.OpView | ir.Operation) and owner.name == "tile.alloc_shared":
        return owner.operation
    return None


def operand_conflicts(gemm: ir.Operation) -> tuple[int, int]:
    """Bank-conflict clocks of one execution of a tile.gemm's A and B reads:
    each operand is read once per K step (or per tile.operand_read_steps of
    them) and instruction tile of a wave,
    each read costing what its buffer's tile.smem_layout records (`conflicts`;
    0 for a buffer without one)."""
    choice, warps = MmaChoice.of(gemm), warp_grid_of(gemm)
    if choice is None or warps is None:
        return 0, 0
    shape = gemm_shape(gemm)
    k_steps = shape.k // choice.k // (attributes.OPERAND_READ_STEPS.read(gemm) or 1)
    reads = (k_steps * (shape.m // warps[0] // choice.m), k_steps * (shape.n // warps[1] // choice.n))
    clocks = []
    for operand, count in zip(gemm.operands[:2], reads):
        alloc = shared_alloc_of(operand)
        layout = attributes.SMEM_LAYOUT.read(alloc) if alloc is not None else None
        per_read = ir.IntegerAttr(layout["conflicts"]).value if layout is not None and "conflicts" in layout else 0
        clocks.append(count * per_read)
    return clocks[0], clocks[1]


def operand_reads_of(alloc: ir.Operation, gemms: list[ir.Operation]) -> list[tuple[str, ir.Operation, int]]:
    """The gemms among `gemms` that read a shared buffer: (operand "A" or "B",
    the gemm, the bank-conflict clocks of those reads per execution of it)."""
    reads = []
    for gemm in gemms:
        for role, operand, clocks in zip("AB", gemm.operands[:2], operand_conflicts(gemm)):
            found = shared_alloc_of(operand)
            if found is not None and found == alloc:
                reads.append((role, gemm, clocks))
    return reads


def physical_shared_shape(alloc: ir.Operation) -> list[int]:
    """How a tile.alloc_shared is stored in LDS (tile.smem_layout): the last
    two dimensions swapped when transposed, and each stored row padded."""
    shape = list(ir.MemRefType(alloc.results[0].type).shape)
    layout = shared_layout(alloc)
    if layout.transposed:
        shape[-2], shape[-1] = shape[-1], shape[-2]
    shape[-1] += layout.pad
    return shape


def physical_shared_bytes(alloc: ir.Operation) -> int:
    """LDS bytes of a tile.alloc_shared as stored, padding included."""
    return _shared_bytes(alloc, physical_shared_shape(alloc))


def logical_shared_bytes(alloc: ir.Operation) -> int:
    """LDS bytes of a tile.alloc_shared without padding."""
    return _shared_bytes(alloc, ir.MemRefType(alloc.results[0].type).shape)


def _shared_bytes(alloc: ir.Operation, shape) -> int:
    element = ir.MemRefType(alloc.results[0].type).element_type
    bits = element.width if hasattr(element, "width") else 32
    return math.prod(shape) * max(1, bits // 8)


def position_text(op: ir.Operation) -> str:
    """Where `op` is, as file:line:col (or its location as printed)."""
    from tilemlir.diagnostics import file_position

    file, line, col = file_position(op.location)
    return f"{file}:{line}:{col}" if line else str(op.location)


def shared_buffer_text(alloc: ir.Operation) -> str:
    """A tile.alloc_shared as a reader finds it: its type and position."""
    memref_type = ir.MemRefType(alloc.results[0].type)
    shape = "x".join(str(d) for d in memref_type.shape)
    return f"the {shape}x{memref_type.element_type} tile.alloc_shared at {position_text(alloc)}"


def lds_breakdown(entries: list[tuple[ir.Operation, int]]) -> tuple[int, str, ir.Operation]:
    """For (tile.alloc_shared, copies) pairs: the bytes of LDS they need, a
    per-buffer account (stages, padding), and the buffer that needs the most."""
    parts, total, largest, most = [], 0, entries[0][0], -1
    for alloc, copies in entries:
        one = physical_shared_bytes(alloc)
        pad = shared_layout(alloc).pad
        padded = f", rows padded by {pad} elements" if pad else ""
        staged = f"{copies} stages x {one} = {copies * one}" if copies > 1 else f"{one}"
        parts.append(f"{shared_buffer_text(alloc)}: {staged} bytes{padded}")
        total += copies * one
        if copies * one > most:
            largest, most = alloc, copies * one
    return total, "; ".join(parts), largest


def waves_by_lds(lds_bytes: int, workgroup_size: int, target) -> int | None:
    """Waves per SIMD the LDS allows a kernel of `lds_bytes` (> 0) in
    workgroups of `workgroup_size` threads: the workgroups a CU's LDS holds
    (memory.shared_bytes_per_cu), their waves spread over the CU's SIMDs
    rounding up, as LLVM's getOccupancyWithWorkGroupSizes does; None where
    the descriptor leaves a fact unknown. (Not capped by
    compute.max_waves_per_simd: the report's occupancy takes the least of
    all its bounds.)"""
    compute, memory = target.compute, target.memory
    if any(is_unknown(fact) for fact in (memory.shared_bytes_per_cu, compute.wave_size, compute.simds_per_cu)):
        return None
    workgroups = memory.shared_bytes_per_cu // lds_bytes
    waves_per_workgroup = -(-max(workgroup_size, 1) // compute.wave_size)
    return -(-workgroups * waves_per_workgroup // compute.simds_per_cu)
