"""How tile.alloc_shared buffers are stored in shared memory (LDS): the
layout tile-infer-layout chose (`tile.smem_layout`), the bytes a buffer
takes as stored, LDS transpose reads, and how a buffer is named in messages."""

from __future__ import annotations

from typing import NamedTuple

from mlir import ir

from tilemlir.dialects import attributes


class SharedLayout(NamedTuple):
    """How a tile.alloc_shared is stored and read (tile.smem_layout)."""

    transposed: bool = False  # stored with its last two dimensions swapped
    pad: int = 0  # elements added to each stored row
    transpose_read: bool = False  # gemm operand reads are LDS transpose reads
    swizzle: int = 0  # XOR swizzle of the rows' 16-byte chunks (lds_banks.swizzled_byte); 0: none


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
    memref_type = ir.MemRefType(alloc.results[0].type)
    count = 1
    for extent in physical_shared_shape(alloc):
        count *= extent
    element = memref_type.element_type
    bits = element.width if hasattr(element, "width") else 32
    return count * max(1, bits // 8)


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
