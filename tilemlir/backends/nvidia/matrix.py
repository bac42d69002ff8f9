"""NVIDIA warp-level tensor cores: `mma.sync` fed by `ldmatrix` from shared memory.

The lane layouts are those of the PTX ISA, section "Warp Level Matrix
Multiply-Accumulate Instructions" (PTX ISA 8.5), with groupID = lane / 4 and
threadID_in_group = lane % 4 (written g and t below):

* "Matrix Fragments for mma.m16n8k16 with floating point type" (f16, bf16):
  A (16x16, row) a0..a7: row g (a0,a1,a4,a5) or g+8, col 2t + (i & 1), +8 for
  a4..a7; B (16x8, col) b0..b3: row (k) 2t + (i & 1), +8 for b2,b3, col g;
  C/D (16x8 f32) c0..c3: row g (c0,c1) or g+8, col 2t + (i & 1).
* "Matrix Fragments for mma.m16n8k32" (.e4m3/.e5m2/.s8, four per 32-bit
  register): A a0..a15: row g (a0..a3, a8..a11) or g+8, col 4t + (i & 3), +16
  for a8..a15; B b0..b7: row (k) 4t + (i & 3), +16 for b4..b7, col g; C/D as
  above. In bytes these are the 16-bit layouts with element pairs, so
  `ldmatrix` (8x8 tiles of 16-bit elements, "Warp-level matrix load
  instruction: ldmatrix") loads both.

Operands come from shared memory through `nvgpu.ldmatrix`: four 8x8 tiles per
instruction, `.trans` where the 16-bit operand is stored with M or N contiguous.
8-bit operands that would need a byte transpose (A stored K x M, B stored
K x N) are read with plain loads, four bytes per register. f16 uses
`nvgpu.mma.sync`; bf16 (nvgpu-to-nvvm cannot deduce its PTX type) and the
fp8 and s8 shapes (not accepted by nvgpu/nvvm in LLVM 22) are one inline PTX
`mma.sync` each.

Shared memory is placed by this core (`place_shared`): one dynamic shared
buffer (so a block can use up to the 227 KiB opt-in limit instead of 48 KiB of
static shared memory), and `stages` copies of each buffer that a
software-pipelined loop fills (`cp_async_pipelining.py`). The eight row
addresses of one ldmatrix tile must fall into distinct banks. A buffer that
only the loop's cp.async copies write and only ldmatrix reads, in rows of
whole 128-byte lines, is stored as boxes of rows x 128 bytes with the 16-byte
chunks XOR-swizzled by row (`gpu_builders.box_index`, the layout TMA writes):
a warp's cp.async chunks then fill whole shared lines, so each instruction's
global reads stay whole lines too. Other buffers keep logical rows, each
padded by 16 bytes: there a warp's chunks straddle shared lines, and the L1
splits each instruction into more L2 requests (ncu on an H100, f16
16x8192x8192 in 32x64x128 blocks: 3.6 million requests for 8.2 million
sectors against 1.2 million for 4.9 million unpadded).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import ClassVar

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, nvgpu, vector

from tilemlir.backends.nvidia.cp_async_overlap import lower_overlapped_loop
from tilemlir.backends.nvidia.cp_async_pipelining import (
    lower_pipelined_loop,
    pipelined_buffers,
    slot_destination,
    slot_view,
)
from tilemlir.diagnostics import UserError, emit_remark
from tilemlir.dialects import attributes
from tilemlir.passes.gpu_builders import BOX_BYTES, box_index
from tilemlir.passes.lower_to_gpu.api import (
    AccumulatorLayout,
    GemmOperands,
    KernelLowering,
    MatrixCore,
    add,
    bit_width,
    const_index,
    mul,
    udiv,
    urem,
)
from tilemlir.passes.shared_memory import SharedLayout

# (m, n, k) of the mma.sync shapes this core lowers, by operand bit width.
SHAPES = {16: (16, 8, 16), 8: (16, 8, 32)}
ROW_PAD_BYTES = 16  # one ldmatrix row (8 x 16 bit): rows r and r+1 land 16 bytes apart in the banks
SHARED_ALIGN = 128

# PTX type names of the 8-bit mma.sync operands (PTX ISA: .e4m3, .e5m2, .s8).
PTX_8BIT = {"f8E4M3FN": "e4m3", "f8E5M2": "e5m2", "i8": "s8"}


@dataclass(frozen=True)
class MmaSyncAccumulator(AccumulatorLayout):
    """C/D of m16n8kK: lane holds rows g and g+8, columns 2t and 2t+1."""

    m: int = 16
    n: int = 8
    c_per_lane: int = 4

    def lane_row(self, lane: ir.Value) -> ir.Value:
        return udiv(lane, 4)

    def lane_col(self, lane: ir.Value) -> ir.Value:
        return mul(urem(lane, 4), 2)

    def row_offset(self, j: int) -> int:
        return 8 * (j // 2)

    def col_offset(self, j: int) -> int:
        return j % 2

    def lane_terms(self):
        return ((4, 8, 1),), ((1, 4, 2),)


class SharedBudgetError(UserError):
    """The buffers as placed exceed the target's shared memory per workgroup."""


def place_flat(lowering: KernelLowering, value: ir.Value, base: ir.Value, offset: int) -> int:
    """Binds a 1-D shared buffer at byte `offset`; returns the bytes it takes."""
    memref_type = ir.MemRefType(value.type)
    view_type = ir.MemRefType.get(memref_type.shape, memref_type.element_type,
                                  memory_space=memref_type.memory_space)
    lowering.bind_shared(value, memref.ViewOp(view_type, base, const_index(offset), []).result,
                         SharedLayout())
    return memref_type.shape[0] * max(1, bit_width(memref_type.element_type) // 8)


class MmaSyncCore(MatrixCore):
    """`mma.sync` m16n8k16 (f16, bf16) and m16n8k32 (e4m3, e5m2, s8) per warp."""

    places_shared_memory: ClassVar[bool] = True
    register_a_bits: ClassVar[frozenset[int]] = frozenset({16})

    def __init__(self):
        self.stage_views: dict = {}  # tile-level shared value -> memref<S x R x C> view, or BoxedSlots
        self.first_slot: dict = {}  # tile-level shared value -> slot 0 view
        self.boxed_views: set = set()  # slot views of buffers stored as boxes, as the gemms see them

    def supported(self, m: int, n: int, k: int, blocks: int, wave_size: int) -> bool:
        return wave_size == 32 and blocks == 1 and (m, n, k) in SHAPES.values()

    def accumulator_layout(self, m: int, n: int, k: int, wave_size: int,
                           c_bits: int = 32) -> AccumulatorLayout:
        if not self.supported(m, n, k, 1, wave_size):
            raise UserError(f"nvidia: no lowering for a {m}x{n}x{k} matrix instruction "
                            "(mma.sync m16n8k16 and m16n8k32 are lowered)")
        return MmaSyncAccumulator()

    # -- shared memory ---------------------------------------------------------

    def place_shared(self, lowering: KernelLowering, shared_ops: list) -> int:
        stages_of = self.buffer_stages(lowering)
        workgroup = ir.Attribute.parse("#gpu.address_space<workgroup>")
        base_type = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()],
                                      ir.IntegerType.get_signless(8), memory_space=workgroup)
        base = gpu.DynamicSharedMemoryOp(base_type).result
        offset = 0
        for op in shared_ops:
            value = op.results[0]
            rank = len(ir.MemRefType(value.type).shape)
            if rank == 1 and value not in stages_of:
                # A flat buffer (a reduction's scratch, a program's row vector): no row padding.
                offset = -(-offset // SHARED_ALIGN) * SHARED_ALIGN
                offset += place_flat(lowering, value, base, offset)
                continue
            if rank != 2:
                raise UserError(f"nvidia: shared buffers of rank {rank} are not supported (1-D and 2-D are)")
            align = self.buffer_alignment(value)
            offset = -(-offset // align) * align
            offset += self.place_buffer(lowering, value, base, offset, stages_of.get(value, 1))
        limit = lowering.target.require("memory.shared_bytes_per_workgroup", "the shared memory budget")
        limit -= self.reserved_shared_bytes()
        if offset > limit:
            raise SharedBudgetError(f"tile-lower-to-gpu: this kernel needs {offset} bytes of shared memory "
                                    f"(pipeline stages and row padding or swizzle alignment included), "
                                    f"{lowering.target.name} allows {limit}")
        return offset

    def reserved_shared_bytes(self) -> int:
        """Shared memory the dynamic buffers cannot use (static variables and
        the padding that aligns the dynamic ones after them)."""
        return 0

    def buffer_stages(self, lowering: KernelLowering) -> dict:
        """Shared buffer value -> the number of slots a pipelined loop fills."""
        return pipelined_buffers(lowering.kernel, lowering.threads)

    def buffer_alignment(self, value: ir.Value) -> int:
        return SHARED_ALIGN

    def place_buffer(self, lowering: KernelLowering, value: ir.Value, base: ir.Value, offset: int, stages: int) -> int:
        """Binds one buffer at byte `offset` of dynamic shared memory: `stages`
        slots, as boxes where `boxable`, else of rows padded by 16 bytes;
        returns the bytes it takes."""
        workgroup = ir.Attribute.parse("#gpu.address_space<workgroup>")
        tile_type = ir.MemRefType(value.type)
        rows, cols = tile_type.shape
        element = tile_type.element_type
        element_bytes = max(1, bit_width(element) // 8)
        if stages > 1 and boxable(value):  # filled by a pipelined loop (its plans have 2 stages or more)
            slots = BoxedSlots(base, offset, rows, cols, element)
            self.stage_views[value] = slots
            self.first_slot[value] = self.slot_view(value, const_index(0))
            lowering.bind_shared(value, self.first_slot[value], SharedLayout(boxed=True))
            lowering.note_shared(value, pad=0, swizzle=f"{BOX_BYTES}-byte (boxes)", stages=stages,
                                 bytes=stages * slots.slot_bytes)
            return stages * slots.slot_bytes
        pad = ROW_PAD_BYTES // element_bytes if (cols * element_bytes) % 16 == 0 else 0
        view_type = ir.MemRefType.get([stages, rows, cols + pad], element, memory_space=workgroup)
        view = memref.ViewOp(view_type, base, const_index(offset), []).result
        self.stage_views[value] = view
        self.first_slot[value] = slot_view(view, const_index(0))
        lowering.bind_shared(value, self.first_slot[value], SharedLayout())  # rows padded only
        placed = stages * rows * (cols + pad) * element_bytes
        lowering.note_shared(value, pad=pad, stages=stages, bytes=placed)
        return placed

    def prefetches_into(self, buffer: ir.Value) -> bool:
        """Whether cp.async may fill `buffer` (`async_destination`)."""
        return buffer in self.stage_views

    def async_destination(self, buffer: ir.Value, slot: ir.Value):
        """Where a cp.async copy stores (row, col) of `buffer` in slot `slot`
        (`cp_async_pipelining.async_copy`)."""
        if isinstance(self.stage_views[buffer], BoxedSlots):
            return box_destination(self.slot_view(buffer, slot))
        return slot_destination(self.stage_views[buffer], slot)

    def slot_view(self, buffer: ir.Value, slot: ir.Value) -> ir.Value:
        """Slot `slot` of a placed buffer as a rows x cols memref, as gemms read it."""
        slots = self.stage_views[buffer]
        if not isinstance(slots, BoxedSlots):
            return slot_view(slots, slot)
        return self.boxed_slot_view(slots.base, slots.offset, slots.slot_bytes, slots.rows, slots.cols,
                                    slots.element, slot)

    def boxed_slot_view(self, base: ir.Value, offset: int, slot_bytes: int, rows: int, cols: int,
                        element: ir.Type, slot: ir.Value) -> ir.Value:
        """Slot `slot` of boxed slots at byte `offset` of `base` as a rows x cols
        memref, recorded as boxed (`operand_swizzle`): cp.async-filled
        (`BoxedSlots`) and TMA-filled (wgmma.py's SwizzledBuffer) alike."""
        view_type = ir.MemRefType.get([rows, cols], element,
                                      memory_space=ir.Attribute.parse("#gpu.address_space<workgroup>"))
        view = memref.ViewOp(view_type, base, add(mul(slot, slot_bytes), offset), []).result
        self.boxed_views.add(view)
        return view

    def slot_layout(self, buffer: ir.Value) -> SharedLayout:
        """How `slot_view`'s slots of a placed buffer are stored."""
        return SharedLayout(boxed=isinstance(self.stage_views[buffer], BoxedSlots))

    def lower_loop(self, lowering: KernelLowering, op: ir.Operation) -> bool:
        if lower_pipelined_loop(self, lowering, op) or lower_overlapped_loop(self, lowering, op):
            return True
        stages = attributes.NUM_STAGES.read(op) if op.name == "scf.for" else None
        if stages is not None and stages >= 2:  # asked for, not done: say so
            emit_remark(op.location, f"tile-lower-to-gpu: this loop (num_stages = {stages}) runs without "
                                     "prefetch on NVIDIA: cp.async takes loops of global->shared "
                                     "copies followed by gemms, and loops of two or more such copies "
                                     "each read by later gemms only",
                        origin="tile-lower-to-gpu", kind="speed")
        return False

    def register_a(self, choice, warps, source, source_warps, a_bits: int) -> bool:
        """The m16n8k16 A fragment of 16-bit elements is two adjacent m16n8
        accumulator tiles (PTX ISA, "Matrix Fragments for mma.m16n8k16": A's
        a0..a7 hold rows g and g+8, columns 2t, 2t+1 and 2t+8, 2t+9; the C/D
        fragment rows g and g+8, columns 2t, 2t+1 of an 8-column tile): a wave
        holding whole rows of the source accumulator (warps split along M only,
        the same split) holds its A registers already. (tile-select-mma splits
        that way when each wave gets at least two m16 tiles.)"""
        shapes = ((choice.m, choice.n, choice.k), (source.m, source.n))
        return (a_bits == 16 and shapes == (SHAPES[16], SHAPES[16][:2]) and tuple(warps) == tuple(source_warps)
                and warps[1] == 1)

    # -- one tile.gemm -----------------------------------------------------------

    def emit_k_steps(self, step: GemmOperands) -> None:
        for k_step in range(self.k_steps(step)):
            self.mma_k_step(step, self.load_k_step(step, k_step))

    def k_steps(self, step: GemmOperands) -> int:
        return step.block_k // SHAPES[self.operand_bits(step)][2]

    @staticmethod
    def operand_bits(step: GemmOperands) -> int:
        a_element = a_element_of(step)
        b_element = ir.MemRefType(step.b_smem.type).element_type
        bits = bit_width(a_element)
        if bits != bit_width(b_element) or bits not in SHAPES:
            raise UserError(f"nvidia: no mma.sync for {a_element} x {b_element}")
        return bits

    def load_k_step(self, step: GemmOperands, k_step: int) -> tuple[list, list]:
        """The warp's A and B registers of one K step (ldmatrix from shared
        memory): a list per m16 tile and a list per n8 tile."""
        bits = self.operand_bits(step)
        _, _, k = SHAPES[bits]
        wtm, wtn = step.fragment.warp_tile
        tiles_m, tiles_n = step.fragment.tiles
        m0 = mul(step.wave_m, wtm)
        n0 = mul(step.wave_n, wtn)
        operands = Operands(step, bits, self.operand_swizzle(step))
        k0 = k_step * k
        if step.a_fragment is not None:
            return ([registers_a(step, tm, k_step) for tm in range(tiles_m)],
                    operands.b_tiles(n0, k0, tiles_n))
        return ([operands.a(add(m0, tm * 16), k0) for tm in range(tiles_m)],
                operands.b_tiles(n0, k0, tiles_n))

    def operand_swizzle(self, step: GemmOperands) -> tuple[bool, bool]:
        """Whether A and B are stored as boxes with the 128-byte swizzle (`boxable`,
        and NvidiaMatrixCore's TMA-filled buffers)."""
        return step.a_smem in self.boxed_views, step.b_smem in self.boxed_views

    def mma_k_step(self, step: GemmOperands, registers: tuple[list, list]) -> None:
        """The m16n8 instructions of one K step on registers from load_k_step."""
        fragment = step.fragment
        a_frags, b_frags = registers
        a_element = a_element_of(step)
        b_element = ir.MemRefType(step.b_smem.type).element_type
        bits = self.operand_bits(step)
        tiles_m, tiles_n = fragment.tiles
        for tm, tn in itertools.product(range(tiles_m), range(tiles_n)):
            index = fragment.tile_index(tm, tn)
            fragment.values[index] = mma(bits, a_element, b_element, a_frags[tm], b_frags[tn],
                                         fragment.values[index], fragment.element)


@dataclass(frozen=True)
class BoxedSlots:
    """The slots of a buffer stored as boxes (`boxable`): slot s of rows x
    cols elements at byte offset + s x slot_bytes of `base`."""

    base: ir.Value  # the dynamic shared memory, as bytes
    offset: int
    rows: int
    cols: int
    element: ir.Type

    @property
    def slot_bytes(self) -> int:
        return self.rows * self.cols * max(1, bit_width(self.element) // 8)


def box_destination(view: ir.Value):
    """Where a cp.async chunk (row, col) lies in a slot `view` stored as boxes:
    (flat memref, [index]), as `cp_async_pipelining.async_copy` takes it."""
    def destination(row: ir.Value, col: ir.Value):
        flat, index = box_index(view, row, col)
        return flat, [index]
    return destination


def boxable(value: ir.Value) -> bool:
    """Whether a pipelined loop's shared buffer may be stored as boxes of
    rows x 128 bytes (module docstring): rows of whole 128-byte lines, read
    only by gemms through ldmatrix (16-bit operands, or 8-bit ones with K
    contiguous; plain byte loads read the others at logical indices) and
    written only by copies into it. `plan_pipeline`, which made it a stage
    buffer, takes none that anything but its loop's own copy writes or
    anything but gemms reads; the uses are looked at again here all the same."""
    tile_type = ir.MemRefType(value.type)
    if len(tile_type.shape) != 2:
        return False
    element_bits = bit_width(tile_type.element_type)
    if (tile_type.shape[1] * element_bits // 8) % BOX_BYTES:
        return False
    for use in value.uses:
        owner, index = use.owner.operation, use.operand_number
        if owner.name == "tile.copy" and index == 1:
            continue
        if owner.name == "tile.gemm" and index in (0, 1):
            k_contiguous = not ir.BoolAttr(owner.attributes["transpose_a" if index == 0 else "transpose_b"]).value
            if index == 1:
                k_contiguous = not k_contiguous
            if element_bits == 16 or k_contiguous:
                continue
        return False
    return True


def a_element_of(step: GemmOperands) -> ir.Type:
    if step.a_fragment is not None:
        return step.a_fragment.element
    return ir.MemRefType(step.a_smem.type).element_type


def registers_a(step: GemmOperands, tm: int, k_step: int) -> ir.Value:
    """The A registers of m16 tile `tm` and K step `k_step` (16 wide) from a
    fragment laid out as an m16n8 accumulator (`MmaSyncCore.register_a`):
    its n8 tiles 2*k_step and 2*k_step + 1, elements 0..3 each, are
    a0..a3 and a4..a7 (slot = (tile * 4 + element), tiles in row-major
    order over the wave's tiles, `AccumulatorFragment.owned`)."""
    fragment = step.a_fragment
    per_lane = 4
    tiles_n = fragment.placement.shape[1] // 8  # the wave's n8 tiles: warps split along M only
    scalars = [fragment.read((tm * tiles_n + tn) * per_lane + j)
               for tn in (2 * k_step, 2 * k_step + 1) for j in range(per_lane)]
    return vector.FromElementsOp(ir.VectorType.get([4, 2], fragment.element), scalars).result


def as_bytes(smem: ir.Value) -> ir.Value:
    """The same shared bytes as an i8 memref: LLVM 22's nvgpu.ldmatrix lowering
    mishandles fp8 result vectors, so 8-bit operands are loaded as i8."""
    memref_type = ir.MemRefType(smem.type)
    i8 = ir.IntegerType.get_signless(8)
    if memref_type.element_type == i8:
        return smem
    owner = smem.owner
    name = owner.name if isinstance(owner, ir.OpView | ir.Operation) else ""
    if name == "memref.subview":
        source = as_bytes(owner.operands[0])
        result = ir.MemRefType.get(memref_type.shape, i8, memref_type.layout, memref_type.memory_space)
        return memref.SubViewOp(result, source, list(owner.operands[1:]), [], [],
                                owner.attributes["static_offsets"], owner.attributes["static_sizes"],
                                owner.attributes["static_strides"]).result
    if name == "memref.view":
        result = ir.MemRefType.get(memref_type.shape, i8, memory_space=memref_type.memory_space)
        return memref.ViewOp(result, owner.operands[0], owner.operands[1], []).result
    raise UserError("nvidia: an 8-bit gemm operand must live in shared memory placed by the core")


class Operands:
    """Per-lane A and B registers of one tile.gemm, in the PTX fragment layouts."""

    def __init__(self, step: GemmOperands, bits: int, swizzled: tuple[bool, bool] = (False, False)):
        self.step = step
        self.bits = bits
        self.lane = step.lane
        # A in registers (step.a_fragment) has no shared buffer.
        self.a_smem = step.a_smem if bits == 16 or step.a_smem is None else as_bytes(step.a_smem)
        self.b_smem = step.b_smem if bits == 16 else as_bytes(step.b_smem)
        # Operands stored as boxes with the 128-byte swizzle (wgmma.py's TMA-filled
        # SwizzledBuffer, or a cp.async-filled operand, `boxable`): ldmatrix
        # addresses go through `gpu_builders.box_index`.
        self.swizzled = {self.a_smem: swizzled[0], self.b_smem: swizzled[1]}
        # Element offset of the second 8-column half of a 16x16-byte-pair tile.
        self.half = 8 if bits == 16 else 16
        self.element = ir.MemRefType(self.b_smem.type).element_type
        for smem in (s for s in (self.a_smem, self.b_smem) if s is not None):
            cols = ir.MemRefType(smem.type).shape[1]
            if (cols * bits // 8) % 16:
                raise UserError("nvidia: shared rows of gemm operands must be multiples of 16 bytes "
                                "(ldmatrix reads 16-byte rows)")

    def ldmatrix(self, smem: ir.Value, row: ir.Value, col: ir.Value, tiles: int,
                 transpose: bool) -> ir.Value:
        per_register = 32 // self.bits
        result = ir.VectorType.get([tiles, per_register], self.element)
        if self.swizzled.get(smem):
            flat, index = box_index(smem, row, col)
            return nvgpu.LdMatrixOp(result, flat, [index], transpose, tiles).result
        return nvgpu.LdMatrixOp(result, smem, [row, col], transpose, tiles).result

    def a(self, m0: ir.Value, k0: int):
        """A registers of the 16 x k tile at rows m0.. (vector<4x2xT> or four i32)."""
        lane = self.lane
        if not self.step.transpose_a:  # [M, K]: rows are M, K contiguous
            loaded = self.ldmatrix(self.a_smem, add(m0, urem(lane, 16)),
                                   add(mul(udiv(lane, 16), self.half), k0), 4, False)
            return loaded if self.bits == 16 else registers_of(loaded, 4)
        if self.bits == 16:  # [K, M]: rows are K; .trans gives the M-major fragment
            row = add(add(urem(lane, 8), k0), mul(udiv(lane, 16), 8))
            col = add(m0, mul(urem(udiv(lane, 8), 2), 8))
            return self.ldmatrix(self.a_smem, row, col, 4, True)
        # 8-bit [K, M]: register r holds row g + 8*(r%2), K bytes 16*(r//2) + 4t .. +3.
        g, t = udiv(lane, 4), urem(lane, 4)
        regs = []
        for r in range(4):
            m = add(add(m0, g), 8 * (r % 2))
            k = add(mul(t, 4), k0 + 16 * (r // 2))
            regs.append(pack_bytes([memref.LoadOp(self.a_smem, [add(k, i), m]).result
                                    for i in range(4)]))
        return regs

    def b_tiles(self, n0: ir.Value, k0: int, tiles_n: int) -> list:
        """B registers of every n8 tile of the warp (two tiles per ldmatrix.x4)."""
        frags = []
        tn = 0
        while tn < tiles_n:
            pair = tn + 1 < tiles_n and (self.bits == 16 or self.step.transpose_b)
            frags.extend(self.b(add(n0, tn * 8), k0, 2 if pair else 1))
            tn += 2 if pair else 1
        return frags

    def b(self, n0: ir.Value, k0: int, count: int) -> list:
        lane = self.lane
        tiles = 2 * count
        if self.step.transpose_b:  # [N, K]: rows are N, K contiguous
            row = add(add(n0, urem(lane, 8)), mul(udiv(lane, 16), 8) if count == 2 else 0)
            col = add(mul(urem(udiv(lane, 8), 2), self.half), k0)
            loaded = self.ldmatrix(self.b_smem, row, col, tiles, False)
            return split_tiles(loaded, count, self.bits)
        if self.bits == 16:  # [K, N]: rows are K; .trans gives the K-major fragment
            row = add(urem(lane, 16), k0)
            col = add(n0, mul(udiv(lane, 16), 8)) if count == 2 else n0
            loaded = self.ldmatrix(self.b_smem, row, col, tiles, True)
            return split_tiles(loaded, count, self.bits)
        # 8-bit [K, N]: register r holds column g, K bytes 16*r + 4t .. +3.
        g, t = udiv(lane, 4), urem(lane, 4)
        n = add(n0, g)
        regs = []
        for r in range(2):
            k = add(mul(t, 4), k0 + 16 * r)
            regs.append(pack_bytes([memref.LoadOp(self.b_smem, [add(k, i), n]).result
                                    for i in range(4)]))
        return [regs]


def split_tiles(loaded: ir.Value, count: int, bits: int) -> list:
    """ldmatrix rows 2i, 2i+1 are the B registers of n8 tile i."""
    if bits != 16:
        regs = registers_of(loaded, 2 * count)
        return [regs[2 * i:2 * i + 2] for i in range(count)]
    element = ir.VectorType(loaded.type).element_type
    tile_type = ir.VectorType.get([2, 2], element)
    result = []
    for i in range(count):
        rows = [vector.ExtractOp(loaded, [], [2 * i + r]).result for r in range(2)]
        flat = [vector.ExtractOp(row, [], [c]).result for row in rows for c in range(2)]
        result.append(vector.ShapeCastOp(tile_type, vector.FromElementsOp(
            ir.VectorType.get([4], element), flat).result).result)
    return result


def registers_of(loaded: ir.Value, count: int) -> list[ir.Value]:
    """Rows of a vector<count x (32 bits)> (4 x i8, 2 x bf16) as 32-bit registers."""
    i32 = ir.IntegerType.get_signless(32)
    regs = []
    for r in range(count):
        row = vector.ExtractOp(loaded, [], [r]).result
        word = vector.BitCastOp(ir.VectorType.get([1], i32), row).result
        regs.append(vector.ExtractOp(word, [], [0]).result)
    return regs


def pack_bytes(values: list[ir.Value]) -> ir.Value:
    i8, i32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32)
    as_i8 = [v if v.type == i8 else arith.BitcastOp(i8, v).result for v in values]
    packed = vector.FromElementsOp(ir.VectorType.get([4], i8), as_i8).result
    word = vector.BitCastOp(ir.VectorType.get([1], i32), packed).result
    return vector.ExtractOp(word, [], [0]).result


def mma(bits: int, a_element: ir.Type, b_element: ir.Type, a, b, c: ir.Value,
        accumulator: ir.Type) -> ir.Value:
    """D = A * B + C for one m16n8 tile; C and D are the lane's vector<4 x acc>."""
    acc_type = ir.VectorType.get([4], accumulator)
    if bits == 16 and str(a_element) == "f16":
        c2 = vector.ShapeCastOp(ir.VectorType.get([2, 2], accumulator), c).result
        d2 = nvgpu.MmaSyncOp(c2.type, a, b, c2, [16, 8, 16]).result
        return vector.ShapeCastOp(acc_type, d2).result
    if bits == 16:  # bf16: LLVM 22's nvgpu-to-nvvm cannot deduce its PTX type
        a, b = registers_of(a, 4), registers_of(b, 2)
        a_ptx = b_ptx = "bf16"
        shape = "m16n8k16"
    else:
        a_ptx, b_ptx = PTX_8BIT[str(a_element)], PTX_8BIT[str(b_element)]
        shape = "m16n8k32"
    integer = a_ptx == "s8"
    acc_ptx = "s32" if integer else "f32"
    letter = "r" if integer else "f"
    text = (f"mma.sync.aligned.{shape}.row.col.{acc_ptx}.{a_ptx}.{b_ptx}.{acc_ptx} "
            "{$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};")
    constraints = ",".join([f"={letter}"] * 4 + ["r"] * 6 + [letter] * 4)
    c_scalars = [vector.ExtractOp(c, [], [j]).result for j in range(4)]
    struct = llvm.StructType.get_literal([accumulator] * 4)
    result = llvm.InlineAsmOp(struct, [*a, *b, *c_scalars], text, constraints).result
    d = [llvm.ExtractValueOp(accumulator, result, [j]).result for j in range(4)]
    return vector.FromElementsOp(acc_type, d).result
