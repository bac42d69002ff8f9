"""Small IR builders over the upstream Python builders, shared by the GPU-level
lowering and the per-family matrix cores. The insertion point and location
are implicit, as in the upstream builders."""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, memref, scf, vector

from tilemlir.diagnostics import UserError
from tilemlir.dialects.element_types import bit_width
from tilemlir.lds_banks import SWIZZLE_CHUNK_BYTES
from tilemlir.passes import fp8_decode


def index_type() -> ir.IndexType:
    return ir.IndexType.get()


def const_index(value: int) -> ir.Value:
    return arith.ConstantOp(index_type(), int(value)).result


def add(a: ir.Value, b: ir.Value | int) -> ir.Value:
    if isinstance(b, int):
        if b == 0:
            return a
        b = const_index(b)
    return arith.AddIOp(a, b).result


def sub(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.SubIOp(a, b).result


def mul(a: ir.Value, b: int) -> ir.Value:
    if b == 1:
        return a
    return arith.MulIOp(a, const_index(b)).result


def udiv(a: ir.Value, b: int) -> ir.Value:
    return a if b == 1 else arith.DivUIOp(a, const_index(b)).result


def urem(a: ir.Value, b: int) -> ir.Value:
    return arith.RemUIOp(a, const_index(b)).result


def ult(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.CmpIOp(arith.CmpIPredicate.ult, a, b).result


def and_(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.AndIOp(a, b).result


def is_float(t: ir.Type) -> bool:
    return isinstance(t, ir.FloatType)


def convert(value: ir.Value, source: ir.Type, target: ir.Type,
            native_fp8: tuple[str, ...] | None = ()) -> ir.Value:
    """Element-type conversion as tile.copy defines it: floats round to nearest
    even (through f32 between two 8/16-bit formats); floats to integers
    truncate toward zero; integers sign-extend or truncate.

    fp8 needs care: a format the chip converts in hardware (`native_fp8`) uses
    arith.extf/truncf element by element (the AMD lowering packs them into
    v_cvt_*fp8*); any other fp8 source is decoded exactly in software
    (`fp8_decode`), and any other fp8 target encoded in software from f32.
    `native_fp8=None`: the family's code generator takes no fp8 conversion
    at all (Backend.converts_fp8 false); encoding into fp8 is then refused."""
    if source == target:
        return value
    native = native_fp8 or ()
    if isinstance(value.type, ir.VectorType) and (is_fp8(source) or is_fp8(target)):
        count = value.type.shape[0]
        if is_fp8(source) and str(source) not in native:
            decoded = fp8_decode.decode_to_f32(value, str(source))
            return convert(decoded, ir.F32Type.get(), target, native_fp8)
        scalars = [convert(vector.ExtractOp(value, [], [i]).result, source, target, native_fp8)
                   for i in range(count)]
        return vector.FromElementsOp(ir.VectorType.get([count], target), scalars).result
    if is_fp8(source) and str(source) not in native:
        return convert(fp8_decode.decode_to_f32(value, str(source)), ir.F32Type.get(), target,
                       native_fp8)
    if is_fp8(target) and str(target) not in native:
        if native_fp8 is None:
            raise UserError(f"tile-lower-to-gpu: converting to {target} is not supported here: the "
                            "target's code generator encodes no fp8 format in a kernel; keep the "
                            "fragment in f16 or bf16")
        wide = convert(value, source, ir.F32Type.get(), native_fp8)  # encoded in software
        return fp8_decode.encode_from_f32(wide, str(target))

    def typed(element: ir.Type) -> ir.Type:
        vt = value.type
        if isinstance(vt, ir.VectorType):
            return ir.VectorType.get(vt.shape, element)
        return element

    if is_float(source) and is_float(target):
        ws, wt = bit_width(source), bit_width(target)
        if ws == wt:  # e.g. f16 <-> bf16, fp8 FNUZ <-> OCP: through f32, exactly
            wide = arith.ExtFOp(typed(ir.F32Type.get()), value).result
            return arith.TruncFOp(typed(target), wide).result
        if wt > ws:
            return arith.ExtFOp(typed(target), value).result
        return arith.TruncFOp(typed(target), value).result
    if is_float(source):
        return arith.FPToSIOp(typed(target), value).result
    if is_float(target):
        return arith.SIToFPOp(typed(target), value).result
    if bit_width(target) > bit_width(source):
        return arith.ExtSIOp(typed(target), value).result
    return arith.TruncIOp(typed(target), value).result


def is_fp8(t: ir.Type) -> bool:
    # Index and integer types answered without printing them: printing every
    # type of a kernel's ops took a fifth of a second per compile.
    return not isinstance(t, ir.IndexType | ir.IntegerType) and str(t) in fp8_decode.FORMATS


def zero_of(t: ir.Type) -> ir.Attribute:
    if is_float(t):
        return ir.FloatAttr.get(t, 0.0)
    return ir.IntegerAttr.get(t, 0)


def splat(vector_type: ir.VectorType, scalar_attr: ir.Attribute) -> ir.Value:
    return arith.ConstantOp(vector_type, ir.DenseElementsAttr.get_splat(vector_type, scalar_attr)).result


def zeros(t: ir.Type) -> ir.Value:
    if isinstance(t, ir.VectorType):
        return splat(t, zero_of(t.element_type))
    return arith.ConstantOp(t, zero_of(t)).result


def load_or_zero(inside: ir.Value, result_type: ir.Type, load) -> ir.Value:
    """`load()` where `inside` holds, else zeros: out-of-bounds reads give 0."""
    return loads_or_zeros(inside, [result_type], lambda: [load()])[0]


def loads_or_zeros(inside: ir.Value, result_types: list[ir.Type], load) -> list[ir.Value]:
    """The values `load()` returns where `inside` holds, else zeros."""
    branch = scf.IfOp(inside, result_types, has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp(load())
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([zeros(t) for t in result_types])
    return list(branch.results)


# A byte permutation of two dwords as AMD's v_perm_b32 defines it: (low,
# high, selector) -> the dword whose byte i is byte (selector >> 8 i) & 0xFF
# of the 8 bytes high:low (0-3 low's, 4-7 high's). A family whose hardware has
# it gives one (LoweringHooks.byte_permute); None: dword bit arithmetic.
BytePermute = Callable[[ir.Value, ir.Value, int], ir.Value]


def columns_of(rows: list[ir.Value], permute: BytePermute | None = None) -> list[ir.Value]:
    """The columns of a small matrix held as row vectors: `len(rows)` (a power
    of two) vectors of `width` elements in, `width` vectors of `len(rows)` out.
    16- and 32-bit elements go through pairwise interleaving shuffles, which the
    AMDGPU backend selects as v_perm_b32/v_pack; 8-bit elements (4 rows, width
    a multiple of 4) through the same interleaving a dword at a time, with
    `permute` where given, else as dword bit arithmetic, since llc scalarizes
    byte shuffles into one SDWA op per byte."""
    row_type = ir.VectorType(rows[0].type)
    width, depth, element = row_type.shape[0], len(rows), row_type.element_type
    if bit_width(element) == 8:
        return _byte_columns(rows, permute)
    group = 1
    while len(rows) > 1:
        mask = [half * group * width + i * group + t
                for i in range(width) for half in (0, 1) for t in range(group)]
        rows = [vector.shuffle(rows[p], rows[p + 1], mask) for p in range(0, len(rows), 2)]
        group *= 2
    return [vector.shuffle(rows[0], rows[0], list(range(i * depth, (i + 1) * depth)))
            for i in range(width)]


# The interleavings of `_byte_columns` as byte selectors (BytePermute):
# bytes 0 and 1 (or 2 and 3) of two dwords alternated, and half 0 (or 1) of
# each side by side; indexed by `high` (bytes 2 and 3, half 1).
INTERLEAVE_BYTES = (0x05010400, 0x07030602)
INTERLEAVE_HALVES = (0x05040100, 0x07060302)


def _byte_columns(rows: list[ir.Value], permute: BytePermute | None) -> list[ir.Value]:
    """columns_of for 4 rows of 8-bit elements: per dword of the rows, two
    levels of interleaving (bytes of rows 0/1 and 2/3, then halves of those),
    eight byte permutations per 4x4 block where the family has them. Without,
    the same as bit arithmetic, which llc-22 selects as about 22 AMD
    instructions a block once InstCombine has canonicalized the masks and
    shifts (measured on fp8 1024^3 64x128x128 gfx942)."""
    row_type = ir.VectorType(rows[0].type)
    width, element = row_type.shape[0], row_type.element_type
    i32 = ir.IntegerType.get_signless(32)
    words = [vector.bitcast(ir.VectorType.get([width // 4], i32), row) for row in rows]

    def const(value: int) -> ir.Value:
        return arith.constant(i32, value)

    def bits(value: ir.Value, mask: int, shift: int) -> ir.Value:
        """(value & mask) shifted left by `shift` (right when negative)."""
        masked = arith.andi(value, const(mask - (1 << 32) if mask >= 1 << 31 else mask))
        if shift > 0:
            return arith.shli(masked, const(shift))
        return arith.shrui(masked, const(-shift)) if shift < 0 else masked

    def interleave_bytes(a: ir.Value, b: ir.Value, high: bool) -> ir.Value:
        """[a.b0, b.b0, a.b1, b.b1] (or the same of bytes 2 and 3)."""
        if permute is not None:
            return permute(a, b, INTERLEAVE_BYTES[high])
        base = 16 if high else 0
        parts = [bits(a, 0xFF << base, -base), bits(b, 0xFF << base, 8 - base),
                 bits(a, 0xFF00 << base, 8 - base), bits(b, 0xFF00 << base, 16 - base)]
        return arith.ori(arith.ori(parts[0], parts[1]), arith.ori(parts[2], parts[3]))

    def interleave_halves(a: ir.Value, b: ir.Value, high: bool) -> ir.Value:
        """[a.h0, b.h0] (or [a.h1, b.h1]) as one dword."""
        if permute is not None:
            return permute(a, b, INTERLEAVE_HALVES[high])
        if high:
            return arith.ori(arith.shrui(a, const(16)), arith.andi(b, const(-65536)))
        return arith.ori(arith.andi(a, const(0xFFFF)), arith.shli(b, const(16)))

    column_type = ir.VectorType.get([4], element)
    columns = []
    for d in range(width // 4):
        word = [vector.extract(w, [], [d]) for w in words]
        pairs = [[interleave_bytes(word[r], word[r + 1], high) for high in (False, True)]
                 for r in (0, 2)]
        for e in range(4):
            packed = interleave_halves(pairs[0][e // 2], pairs[1][e // 2], bool(e % 2))
            columns.append(vector.bitcast(column_type, vector.from_elements(
                ir.VectorType.get([1], i32), [packed])))
    return columns


def swizzled_column(row: ir.Value, col: ir.Value, swizzle: int, row_elements: int,
                    element: ir.Type) -> ir.Value:
    """Where column `col` of row `row` of a shared buffer with XOR-swizzled
    16-byte chunks is stored (lds_banks.swizzled_byte): col ^ (((row + k (row
    div C)) * s) mod C) x the elements of a chunk, C the chunks per row (a
    power of two), k = s div C."""
    if not swizzle:
        return col
    per_chunk = SWIZZLE_CHUNK_BYTES * 8 // bit_width(element)
    chunks = row_elements // per_chunk
    if swizzle >= chunks:  # skewed: row + k (row div C)
        run = arith.ShRUIOp(row, const_index(chunks.bit_length() - 1)).result
        row = add(row, mul(run, swizzle // chunks))
    phase = arith.AndIOp(mul(row, swizzle), const_index(chunks - 1)).result
    return arith.XOrIOp(col, mul(phase, per_chunk)).result


BOX_BYTES = 128  # the width of a box's rows (`box_index`)


def box_index(smem: ir.Value, row: ir.Value, col: ir.Value,
              chunk_start: bool = True) -> tuple[ir.Value, ir.Value]:
    """(1-D view, element index) of logical (row, col) in a rows x cols tile
    stored as boxes of rows x 128 bytes with the 128-byte swizzle, the layout
    NVIDIA's TMA writes and wgmma reads (`SharedLayout.boxed`): box
    col // (128 / e), the row-th 128-byte line of it, 16-byte chunk XOR
    (row % 8) (PTX ISA, "Tensor Copy" swizzle modes). The swizzle is taken
    from the logical row: TMA and wgmma, which take it from the address, need
    the tile 1024-byte aligned; ldmatrix and cp.async (mma.sync operands
    stored so, nvidia/matrix.py `boxable`) only 128-byte aligned, for the
    rows' chunks to fall into distinct banks. `chunk_start`: `col` starts a
    16-byte chunk (else its place within the chunk is kept too)."""
    memref_type = ir.MemRefType(smem.type)
    rows, cols = memref_type.shape
    element_bytes = max(1, bit_width(memref_type.element_type) // 8)
    box_cols, chunk = BOX_BYTES // element_bytes, SWIZZLE_CHUNK_BYTES // element_bytes
    flat_type = ir.MemRefType.get([rows * cols], memref_type.element_type,
                                  memory_space=memref_type.memory_space)
    flat = memref.CollapseShapeOp(flat_type, smem, [[0, 1]]).result
    box, within = udiv(col, box_cols), urem(col, box_cols)
    swizzled_chunk = arith.XOrIOp(udiv(within, chunk), urem(row, 8)).result
    index = add(add(mul(box, rows * box_cols), mul(row, box_cols)), mul(swizzled_chunk, chunk))
    return flat, index if chunk_start else add(index, urem(within, chunk))


_ANY_MULTIPLE = 1 << 40  # what 0 is a multiple of


def known_multiple(value: ir.Value, depth: int = 0) -> int:
    """A number `value` (an index or integer computed by arith ops) is
    statically known to be a multiple of: through constants, products,
    sums, remainders, selects and `scf.for` induction variables; 1 when
    nothing is known. For proving vector accesses aligned."""
    import math as _math

    if depth > 16:
        return 1
    owner = value.owner
    if isinstance(owner, ir.Block):
        parent = owner.owner
        if parent is not None and parent.name == "scf.for" and ir.BlockArgument(value).arg_number == 0:
            lower, step = parent.operands[0], parent.operands[2]
            return _math.gcd(known_multiple(lower, depth + 1), known_multiple(step, depth + 1))
        return 1
    name = owner.name
    operands = list(owner.operands)
    if name == "arith.constant":
        number = abs(ir.IntegerAttr(owner.attributes["value"]).value) if isinstance(
            owner.attributes["value"], ir.IntegerAttr) else 1
        return number or _ANY_MULTIPLE
    if name == "arith.muli":
        return min(_ANY_MULTIPLE, known_multiple(operands[0], depth + 1) * known_multiple(operands[1], depth + 1))
    if name in ("arith.addi", "arith.subi", "arith.remui", "arith.remsi"):
        return _math.gcd(known_multiple(operands[0], depth + 1), known_multiple(operands[1], depth + 1))
    if name == "arith.select":
        return _math.gcd(known_multiple(operands[1], depth + 1), known_multiple(operands[2], depth + 1))
    if name in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui"):
        return known_multiple(operands[0], depth + 1)
    return 1


def memref_dims(value: ir.Value) -> list[ir.Value]:
    """The extents of a memref as index values (memref.dim where dynamic)."""
    from mlir.dialects import memref

    memref_type = ir.MemRefType(value.type)
    dims = []
    for axis, extent in enumerate(memref_type.shape):
        if extent == ir.ShapedType.get_dynamic_size():
            dims.append(memref.DimOp(value, const_index(axis)).result)
        else:
            dims.append(const_index(extent))
    return dims


def load_vector_guarded(buffer: ir.Value, indices: list[ir.Value], vector_type: ir.VectorType,
                        inside: ir.Value | None, element_at, alignment: int | None = None) -> ir.Value:
    """The vector of consecutive elements from `indices` on: one vector.load
    where `inside` (i1; None: always) says the whole vector is in the buffer,
    else element by element, `element_at(i)` building each (an element
    outside the buffer reads 0)."""
    from mlir.dialects import vector as vector_dialect

    def whole() -> ir.Value:
        return vector_dialect.LoadOp(vector_type, buffer, indices, alignment=alignment).result

    if inside is None:
        return whole()
    branch = scf.IfOp(inside, [vector_type], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp([whole()])
    with ir.InsertionPoint(branch.else_block):
        scalars = [element_at(i) for i in range(vector_type.shape[0])]
        scf.YieldOp([vector_dialect.FromElementsOp(vector_type, scalars).result])
    return branch.results[0]


def store_vector_guarded(buffer: ir.Value, indices: list[ir.Value], packed: ir.Value,
                         inside: ir.Value | None, store_elements, alignment: int | None = None) -> None:
    """Stores `packed` at `indices`: one vector.store where `inside` (i1;
    None: always) says the whole vector is in the buffer, else
    `store_elements()` (which drops the elements outside)."""
    from mlir.dialects import vector as vector_dialect

    if inside is None:
        vector_dialect.StoreOp(packed, buffer, indices, alignment=alignment)
        return
    branch = scf.IfOp(inside, [], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        vector_dialect.StoreOp(packed, buffer, indices, alignment=alignment)
        scf.YieldOp([])
    with ir.InsertionPoint(branch.else_block):
        store_elements()
        scf.YieldOp([])
