"""Facts about a tile.gemm that several passes read: its shape and operand
types, the matrix instruction tile-select-mma chose for it (`tile.mma`), how
its waves split M and N (`tile.warp_grid`), and the vector width of copies."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

# Defined with the cost model, whose GemmProblem extends it.
from tilemlir.cost.model import GemmShape
from tilemlir.dialects import attributes


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


def k_along_rows(op: ir.Operation) -> tuple[bool, bool]:
    """Whether a tile.gemm's A and B have their K runs along the rows of
    their buffers as written: A untransposed (M x K), B transposed (N x K)."""
    shape = gemm_shape(op)
    return not shape.transpose_a, shape.transpose_b


def copy_vector_width(cols: int, element_bits: int) -> int:
    """Elements per lane per access of a copy: 128 bits, halved until it divides
    the row length."""
    width = max(1, 128 // element_bits)
    while width > 1 and cols % width:
        width //= 2
    return width


@dataclass(frozen=True)
class MmaChoice:
    """What tile-select-mma recorded on a gemm (`tile.mma`)."""

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
            "shape": ir.DenseI64ArrayAttr.get([self.m, self.n, self.k, self.blocks]),
            "types": ir.ArrayAttr.get([ir.StringAttr.get(t) for t in (self.a, self.b, self.c)]),
        })

    def record(self, op: ir.Operation) -> None:
        attributes.MMA.set(op, self.attribute())

    @staticmethod
    def of(op: ir.Operation) -> MmaChoice | None:
        attr = attributes.MMA.read(op)
        if attr is None:
            return None
        m, n, k, blocks = list(ir.DenseI64ArrayAttr(attr["shape"]))
        a, b, c = (ir.StringAttr(t).value for t in ir.ArrayAttr(attr["types"]))
        return MmaChoice(ir.StringAttr(attr["name"]).value, m, n, k, blocks, a, b, c)


def warp_grid_of(op: ir.Operation) -> tuple[int, int] | None:
    """Waves along M and N of a gemm (`tile.warp_grid`), or None."""
    grid = attributes.WARP_GRID.read(op)
    if grid is None:
        return None
    wm, wn = grid
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


def register_a_source(gemm: ir.Operation) -> ir.Operation | None:
    """The gemm whose accumulator a gemm's fragment A was copied from (flash
    attention's P = cast(S) into O += P V), or None: A is not a fragment, or
    not the plain copy of one gemm's accumulator. Copies of one loop body
    (tile-split-loops) count as one: every writer of A is a copy of the same
    accumulator, and every gemm producing it has the same operand types and
    attributes (so the same instruction and warp grid); the first is returned."""
    from tilemlir.dialects import tile

    operand = gemm.operands[0]
    if tile.memory_level(operand.type) != tile.FRAGMENT:
        return None
    def writes(use) -> bool:
        owner, position = use.owner, use.operand_number
        return ((owner.name in ("tile.copy", "tile.reduce") and position == 1)
                or (owner.name == "memref.store" and position == 1)
                or (owner.name == "tile.fill" and position == 0)
                or (owner.name == "tile.gemm" and position == 2))

    writers = [use.owner for use in operand.uses if writes(use)]
    if not writers or any(w.name != "tile.copy" or w.operands[0] != writers[0].operands[0] for w in writers):
        return None  # written otherwise too: its layout is not the accumulator's alone
    source = writers[0].operands[0]
    producers = [use.owner for use in source.uses
                 if use.owner.name == "tile.gemm" and use.operand_number == 2]
    if not producers or any(_signature(p) != _signature(producers[0]) for p in producers):
        return None
    return producers[0]


def _signature(gemm: ir.Operation) -> tuple:
    """What makes two gemms lower alike: operand types and attributes."""
    return (tuple(str(v.type) for v in gemm.operands),
            tuple(sorted((name, str(gemm.attributes[name])) for name in gemm.attributes)))
