"""Facts about tile IR that several passes read: GEMM shapes, the attributes
the pipeline records on ops, and the target a pass works for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from mlir import ir

from tilemlir.irutil import enclosing

# Attributes the pipeline records (discardable, so upstream passes keep them).
MMA_ATTR = "tile.mma"              # on tile.gemm: the chosen instruction, a dictionary
WARP_GRID_ATTR = "tile.warp_grid"  # on tile.gemm: waves along M and N, array<i64: wm, wn>
LAYOUT_ATTR = "tile.layout"        # on tile.alloc_fragment: who holds which element
VECTOR_WIDTH_ATTR = "tile.vector_width"  # on tile.copy: elements per lane per access
SMEM_LAYOUT_ATTR = "tile.smem_layout"  # on tile.alloc_shared: stored transposed? row padding
IN_BOUNDS_ATTR = "tile.in_bounds"  # on tile.copy: every window lies inside the global memref
LDS_CONFLICTS_ATTR = "tile.lds_conflicts"  # on tile.gemm: LDS bank-conflict clocks per execution


@dataclass(frozen=True)
class GemmShape:
    """M, N, K of a tile.gemm and its operand types (MLIR spellings)."""

    m: int
    n: int
    k: int
    a: str
    b: str
    c: str
    accum: str
    transpose_a: bool
    transpose_b: bool


def element_span(memref: ir.MemRefType) -> tuple[int, int] | None:
    """[lowest, highest] element offset from the base that a static memref
    reaches, strides of either sign and the layout offset included; None when
    a size, stride or offset is dynamic (or the layout is not strided)."""
    try:
        strides, offset = memref.get_strides_and_offset()
    except (ValueError, RuntimeError):
        return None
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    if not memref.has_static_shape or dynamic in (*strides, offset):
        return None
    if 0 in memref.shape:
        return offset, offset - 1  # no element: an empty span
    reach = [(extent - 1) * stride for extent, stride in zip(memref.shape, strides)]
    return offset + sum(min(0, r) for r in reach), offset + sum(max(0, r) for r in reach)


def memref_of(value: ir.Value) -> ir.MemRefType:
    return ir.MemRefType(value.type)


def gemm_shape(op: ir.Operation) -> GemmShape:
    a, b, c = (memref_of(v) for v in op.operands[:3])
    transpose_a = ir.BoolAttr(op.attributes["transpose_a"]).value
    transpose_b = ir.BoolAttr(op.attributes["transpose_b"]).value
    m, k = (a.shape[1], a.shape[0]) if transpose_a else (a.shape[0], a.shape[1])
    n = b.shape[0] if transpose_b else b.shape[1]
    accum = str(ir.TypeAttr(op.attributes["accum_dtype"]).value)
    return GemmShape(m, n, k, str(a.element_type), str(b.element_type), str(c.element_type),
                     accum, transpose_a, transpose_b)


def copy_vector_width(cols: int, element_bits: int) -> int:
    """Elements per lane per access of a copy: 128 bits, halved until it divides
    the row length."""
    width = max(1, 128 // element_bits)
    while width > 1 and cols % width:
        width //= 2
    return width


class SharedLayout(NamedTuple):
    """How a tile.alloc_shared is stored and read (tile.smem_layout)."""

    transposed: bool = False  # stored with its last two dimensions swapped
    pad: int = 0  # elements added to each stored row
    transpose_read: bool = False  # gemm operand reads are LDS transpose reads
    swizzle: int = 0  # XOR swizzle of the rows' 16-byte chunks (lds_banks.swizzled_byte); 0: none


def shared_layout(alloc: ir.Operation) -> SharedLayout:
    """The tile.smem_layout of a tile.alloc_shared (defaults without one)."""
    if SMEM_LAYOUT_ATTR not in alloc.attributes:
        return SharedLayout()
    layout = ir.DictAttr(alloc.attributes[SMEM_LAYOUT_ATTR])
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


def physical_shared_bytes(alloc: ir.Operation) -> int:
    """LDS bytes of a tile.alloc_shared as stored, padding included."""
    memref_type = ir.MemRefType(alloc.results[0].type)
    count = 1
    for extent in physical_shared_shape(alloc):
        count *= extent
    element = memref_type.element_type
    bits = element.width if hasattr(element, "width") else 32
    return count * max(1, bits // 8)


# Most blocks a launch may have along x, y and z, by family: (limits, source).
# The descriptors have no field for it yet; these are the published or, where
# none is published, the most conservative values.
GRID_LIMITS = {
    "nvidia": ((2 ** 31 - 1, 65535, 65535),
               "CUDA C++ Programming Guide, compute capabilities table: grid x 2^31-1, y and z 65535"),
    # HIP's hipDeviceProp_t.maxGridSize differs between ROCm versions (ROCm/clr
    # hipamd/src/hip_device.cpp: (INT32_MAX, UINT16_MAX, UINT16_MAX) in some,
    # INT32_MAX or UINT32_MAX for all in others): the lowest, conservatively.
    "amdgpu": ((2 ** 31 - 1, 65535, 65535),
               "HIP's maxGridSize, the lowest any ROCm version reports (conservative)"),
    # MetaX publishes no limit; MACA's launch API follows CUDA's, so CUDA's values.
    "metax": ((2 ** 31 - 1, 65535, 65535), "unpublished for MetaX: CUDA's limits assumed"),
}
# AMD's dispatch packet counts the grid in work-items, 32 bits per dimension
# (HSA Platform System Architecture Specification 1.2, hsa_kernel_dispatch_packet_t.grid_size_x).
WORK_ITEMS_PER_DIMENSION = {"amdgpu": 2 ** 32 - 1}


def grid_problem(grid: list[int], threads: int, target) -> str | None:
    """Why `target` cannot launch this grid (blocks along x, y, z; `threads`
    along x in each), or None."""
    limits, source = GRID_LIMITS.get(target.family, GRID_LIMITS["metax"])
    for axis, extent, most in zip("xyz", grid, limits):
        if extent > most:
            return (f"{extent} blocks along {axis}, {target.name} launches at most {most} ({source})")
    most_items = WORK_ITEMS_PER_DIMENSION.get(target.family)
    if most_items is not None and grid and grid[0] * threads > most_items:
        return (f"{grid[0]} blocks of {threads} threads along x are {grid[0] * threads} work-items, "
                f"{target.name} launches at most {most_items} per dimension (the dispatch packet's "
                "32-bit grid size)")
    return None


def kernel_threads(kernel: ir.Operation) -> int:
    return ir.IntegerAttr(kernel.attributes["threads"]).value


def kernel_grid(kernel: ir.Operation) -> list[int]:
    return list(ir.DenseI64ArrayAttr(kernel.attributes["grid"]))


def enclosing_kernel(op: ir.Operation) -> ir.Operation | None:
    return enclosing(op, "tile.kernel")


def i64_array(values) -> ir.DenseI64ArrayAttr:
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def int_attr(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))


@dataclass(frozen=True)
class MmaChoice:
    """What tile-select-mma recorded on a gemm."""

    name: str
    m: int
    n: int
    k: int
    blocks: int
    a: str
    b: str
    c: str

    def attribute(self) -> ir.Attribute:
        return ir.DictAttr.get({
            "name": ir.StringAttr.get(self.name),
            "shape": i64_array([self.m, self.n, self.k, self.blocks]),
            "types": ir.ArrayAttr.get([ir.StringAttr.get(t) for t in (self.a, self.b, self.c)]),
        })

    @staticmethod
    def of(op: ir.Operation) -> MmaChoice | None:
        if MMA_ATTR not in op.attributes:
            return None
        attr = ir.DictAttr(op.attributes[MMA_ATTR])
        m, n, k, blocks = list(ir.DenseI64ArrayAttr(attr["shape"]))
        a, b, c = (ir.StringAttr(t).value for t in ir.ArrayAttr(attr["types"]))
        return MmaChoice(ir.StringAttr(attr["name"]).value, m, n, k, blocks, a, b, c)


def warp_grid_of(op: ir.Operation) -> tuple[int, int] | None:
    if WARP_GRID_ATTR not in op.attributes:
        return None
    wm, wn = list(ir.DenseI64ArrayAttr(op.attributes[WARP_GRID_ATTR]))
    return wm, wn


def split_waves(waves: int, rows: int, cols: int, quantum_m: int,
                quantum_n: int | None = None) -> tuple[int, int] | None:
    """Waves along M and N (wm * wn == waves) so that each wave's tile is a
    whole number of quantum_m x quantum_n instruction tiles, as square as possible."""
    quantum_n = quantum_m if quantum_n is None else quantum_n
    best = None
    for wm in range(1, waves + 1):
        if waves % wm:
            continue
        wn = waves // wm
        if rows % (wm * quantum_m) or cols % (wn * quantum_n):
            continue
        balance = abs((rows // wm) - (cols // wn))
        if best is None or balance < best[0]:
            best = (balance, wm, wn)
    return None if best is None else (best[1], best[2])
