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


def physical_shared_bytes(alloc: ir.Operation) -> int:
    """LDS bytes of a tile.alloc_shared as stored, padding included."""
    memref_type = ir.MemRefType(alloc.results[0].type)
    count = 1
    for extent in physical_shared_shape(alloc):
        count *= extent
    element = memref_type.element_type
    bits = element.width if hasattr(element, "width") else 32
    return count * max(1, bits // 8)


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
