"""AMD CDNA matrix cores through `amdgpu.mfma`: the amdgpu family's `MatrixCore`
(lane layouts: `tilemlir.mma_layouts`, from AMD's documented MFMA layouts).

Operands are read from LDS per lane, a vector load where the lane's K run is
contiguous, element loads where it is not, or, for buffers tile-infer-layout
marked `transpose_read` (gfx950), LDS transpose reads (`ds_read_b64_tr_b*`),
the only reads of XOR-swizzled rows.

Every accumulator is laid out transposed (`api.TransposedAccumulator`,
tile-infer-layout) and computed as C^T += B^T A^T: B's operand
in the instruction's A slot, A's in its B slot. The MFMA's D layout gives a
lane one column and runs of four consecutive rows (`mma_layouts`); transposed,
a lane holds one row of C and runs of four consecutive columns, so a row-major
C is stored with vectors: 4 f16 in one global_store_dwordx2, 4 f32 in one
global_store_dwordx4, where the instruction's own layout stores element by
element (global_store_short). (An f64 accumulator's lane holds rows 4 apart,
so transposed its columns are 4 apart too: no vector stores there.) The operand reads do not change: with m = n, a
lane's A operand (`MfmaLayout.a_coord`) and B operand (`b_coord`) have the
same form, so the rows of A a lane reads are what the B slot wants, and
vice versa.

A gemm whose A is the copy of another gemm's accumulator (flash attention's
P = softmax(S) in O += P V) reads it from registers (`register_a`) where a
lane already holds the A elements of its rows: the source issued transposed
gives a lane one row of S and runs of four columns, and an instruction of the
same rows reads a lane's row with a K run of its lane group. Where the runs
a lane holds are not the instruction's K order (gfx950's doubled-K
instructions take 8 consecutive K per lane, the source holds two runs of 4),
K is permuted alike in A and B (`RegisterAPlan`): B is read with the same
runs, which leaves the sum unchanged (mma_layouts' docstring).

RDNA chips (wave32) have WMMAs instead (`amdgpu.wmma`, 16x16x16), whose lane
layouts are their architecture generation's (`mma_layouts.WmmaLayout`, the
descriptor's `architecture`): on RDNA3 lanes 16-31 read the same K as lanes
0-15, on RDNA4 the next 8. Everything above holds for them too: they are
square, their A and B take the same form, and a transposed RDNA4 accumulator
gives a lane 8 consecutive columns of one row, which are its A elements of an
instruction of the same rows (checked lane by lane, `register_a_plan`), so P
stays in registers where the waves split M alone. RDNA3's lane halves each
need all of K, so there A is staged.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import amdgpu, vector

from tilemlir import mma_layouts
from tilemlir.dialects import tile
from tilemlir.passes.gemm_facts import MmaChoice, gemm_shape
from tilemlir.passes.lower_to_gpu.api import (
    AccumulatorLayout,
    GemmOperands,
    MatrixCore,
    add,
    concatenated,
    lane_operand,
    mul,
    sub,
    swizzled_column,
    udiv,
    urem,
)
from tilemlir.passes.shared_memory import TRANSPOSE_READ_GROUP, TRANSPOSE_READS


@dataclass(frozen=True)
class MfmaAccumulator(AccumulatorLayout):
    layout: mma_layouts.Layout

    @property
    def m(self) -> int:  # type: ignore[override]
        return self.layout.m

    @property
    def n(self) -> int:  # type: ignore[override]
        return self.layout.n

    @property
    def c_per_lane(self) -> int:  # type: ignore[override]
        return self.layout.c_per_lane

    def lane_row(self, lane: ir.Value) -> ir.Value:
        return mul(udiv(lane, self.layout.n), self.layout.c_row_terms(0)[1])

    def lane_col(self, lane: ir.Value) -> ir.Value:
        return urem(lane, self.layout.n)

    def row_offset(self, j: int) -> int:
        return self.layout.c_row_terms(j)[0]

    def col_offset(self, j: int) -> int:
        return 0

    def lane_terms(self):
        n = self.layout.n
        return ((n, self.layout.wave_size // n, self.layout.c_row_terms(0)[1]),), ((1, n, 1),)


# The widest LDS read of a lane (ds_read_b128): where a lane's operand of
# one K step is at most half of it, two steps are read at once
# (`MfmaCore.k_steps_per_read`).
MAX_READ_BITS = 128

# The narrowest run of K a lane's B operand is read in (`RegisterAPlan.runs`):
# one 64-bit LDS read, and a whole LDS transpose read of 16-bit elements.
MIN_RUN_BITS = 64


@dataclass(frozen=True)
class RegisterAPlan:
    """How an instruction (`layout`) takes its A operand from registers laid
    out as a transposed accumulator of the same rows (`source`, the issued
    instruction's layout). K steps repeat every `period` columns of the
    source (the least common multiple of the step's K and the source's tile
    width); step q of a period reads, for its element i, the source's tile
    `slots[q][i][0]` of the period and element `slots[q][i][1]` of that tile.
    A lane of lane group g (lane // m) then holds K offsets `base + g *
    group_stride` of the step for the step's bases, in `runs` of consecutive
    offsets (offset for group 0, length): where B must be read."""

    period: int
    slots: tuple[tuple[tuple[int, int], ...], ...]
    runs: tuple[tuple[tuple[int, int], ...], ...]
    group_stride: int

    @property
    def steps_per_period(self) -> int:
        return len(self.slots)


def register_a_plan(layout: mma_layouts.Layout, source: mma_layouts.Layout) -> RegisterAPlan | None:
    """The plan for `layout`'s A from a transposed `source` accumulator, or
    None where a lane does not hold its rows' A elements: every (lane,
    element) is checked against both layouts."""
    if layout.m != source.n or source.m != source.n or layout.wave_size != source.wave_size \
            or source.c_bits != 32 or layout.a_group_stride != layout.a_per_lane:
        # (Lane groups that replicate A, RDNA3's, each need all of K: no lane
        # group's registers can stand for another's part of it.)
        return None
    k, width, wave = layout.k, source.n, layout.wave_size
    period = math.lcm(k, width)

    def source_column(lane: int, tile: int, j: int) -> int:
        # Transposed: the issued instruction's row is the column of S.
        return tile * width + source.c_coord(lane, j)[0]

    slots, runs, stride = [], [], None
    for q in range(period // k):
        low = q * k
        chosen = [(t, j) for t in range(period // width) for j in range(source.c_per_lane)
                  if low <= source_column(0, t, j) < low + k]
        if len(chosen) != layout.a_per_lane:
            return None
        bases = [source_column(0, t, j) - low for t, j in chosen]
        offsets = set()
        for lane in range(wave):
            group = lane // layout.m
            for i, (t, j) in enumerate(chosen):
                if source.c_coord(lane, j)[1] != layout.a_coord(lane, i)[0]:
                    return None  # the lane holds another row
                offset = source_column(lane, t, j) - low
                if group and stride is None:
                    stride = (offset - bases[i]) // group
                if offset != bases[i] + group * (stride or 0) or not 0 <= offset < k:
                    return None
                offsets.add((group, offset))
        if len({offset for _, offset in offsets}) != k:
            return None  # not every K of the step once: no permutation
        step_runs = []
        for base in bases:
            if step_runs and step_runs[-1][0] + step_runs[-1][1] == base:
                step_runs[-1] = (step_runs[-1][0], step_runs[-1][1] + 1)
            else:
                step_runs.append((base, 1))
        slots.append(tuple(chosen))
        runs.append(tuple(step_runs))
    return RegisterAPlan(period, tuple(slots), tuple(runs), stride or 0)


class MfmaCore(MatrixCore):
    """AMD matrix cores: CDNA's MFMAs through `amdgpu.mfma`, RDNA's WMMAs
    through `amdgpu.wmma` (layouts: `tilemlir.mma_layouts`)."""

    transposes_accumulator = True
    register_a_bits = frozenset({16})  # 8-bit runs of four would be 32-bit reads of B
    reads_swizzled_rows = True  # mfma_operand: vector reads at the swizzled column
    reads_a_from_global = True  # global_a_operand

    @property
    def wmma_architecture(self) -> str | None:
        """The target's architecture where its matrix instructions are WMMAs
        of a documented generation (`mma_layouts.WMMA_GENERATIONS`), else None."""
        architecture = getattr(self.target, "architecture", None)
        return architecture if architecture in mma_layouts.WMMA_GENERATIONS else None

    def layout(self, m: int, n: int, k: int, wave_size: int = 64, c_bits: int = 32) -> mma_layouts.Layout:
        """The lane layout of the target's m x n x k instruction (ValueError where
        none is documented)."""
        architecture = self.wmma_architecture
        if architecture is None:
            return mma_layouts.layout_for(m, n, k, wave_size, c_bits)
        if not mma_layouts.wmma_supported(architecture, m, n, k, 1, wave_size) or c_bits != 32:
            raise ValueError(f"no documented lane layout for a {m}x{n}x{k} WMMA of {c_bits}-bit results "
                             f"on {architecture} in wave{wave_size}")
        return mma_layouts.WmmaLayout(architecture)

    def register_a(self, choice: MmaChoice, warps: tuple[int, int], source: MmaChoice,
                   source_warps: tuple[int, int], a_bits: int) -> bool:
        """A from registers (module docstring): both gemms' waves split along
        M alike (a wave holds whole rows of the source), square single-block
        instructions of the same rows, a `register_a_plan`, and B's runs of
        at least MIN_RUN_BITS (an 8-bit operand's runs of 4 would be 32-bit
        LDS reads, and no LDS transpose read)."""
        if tuple(warps) != tuple(source_warps) or warps[1] != 1:
            return False
        wave = self.target.compute.wave_size if self.wmma_architecture else 64
        if not (self.supported(choice.m, choice.n, choice.k, choice.blocks, wave)
                and self.supported(source.m, source.n, source.k, source.blocks, wave)):
            return False
        source_bits = 64 if source.c == "f64" else 32
        try:
            plan = register_a_plan(self.layout(choice.m, choice.n, choice.k, wave),
                                   self.layout(source.m, source.n, source.k, wave, c_bits=source_bits))
        except ValueError:
            return False
        return plan is not None and all(length * a_bits >= MIN_RUN_BITS
                                        for step in plan.runs for _, length in step)

    def supported(self, m: int, n: int, k: int, blocks: int, wave_size: int) -> bool:
        architecture = self.wmma_architecture
        if architecture is not None:
            return mma_layouts.wmma_supported(architecture, m, n, k, blocks, wave_size)
        return mma_layouts.supported(m, n, k, blocks, wave_size)

    def accumulator_layout(self, m: int, n: int, k: int, wave_size: int,
                           c_bits: int = 32) -> AccumulatorLayout:
        return MfmaAccumulator(self.layout(m, n, k, wave_size, c_bits))

    def operand_lanes(self, m: int, n: int, k: int, wave_size: int, steps: int = 1):
        """The instruction's operand lanes (`mma_layouts`); reading `steps`
        K steps at once, a lane of group g reads steps x its elements from
        K = g x steps x its elements (`k_steps_per_read`)."""
        layout = self.layout(m, n, k, wave_size)
        lanes = range(wave_size)
        a = ([layout.a_coord(lane, 0)[0] for lane in lanes],
             [layout.a_coord(lane, 0)[1] * steps for lane in lanes], layout.a_per_lane * steps)
        b = ([layout.b_coord(lane, 0)[1] for lane in lanes],
             [layout.b_coord(lane, 0)[0] * steps for lane in lanes], layout.b_per_lane * steps)
        return a, b

    def k_steps_per_read(self, gemm: ir.Operation, wave_size: int) -> int:
        """Two K steps a read where both operands come from LDS and a lane's
        part of one step is at most 64 bits (f16/bf16 4 elements, fp8 8, one
        f32 or f64) and its lane groups hold consecutive runs of K (CDNA's
        single-block MFMAs; not RDNA's WMMAs, whose lane halves repeat K on
        RDNA3), over an even number of steps: lane group g reads 2 x its
        elements at pair base + g x 2 x its elements (one 128-bit ds_read of
        f16 for two 64-bit ones), and step 2j takes the first half, step
        2j + 1 the second, in A and B alike (`MatrixCore.k_steps_per_read`).
        A from registers (flash attention's P) keeps its source's order."""
        choice = MmaChoice.of(gemm)
        if choice is None or choice.blocks != 1 or self.wmma_architecture is not None:
            return 1
        a, b = gemm.operands[0], gemm.operands[1]
        if tile.memory_level(a.type) != tile.SHARED or tile.memory_level(b.type) != tile.SHARED:
            return 1
        try:
            layout = self.layout(choice.m, choice.n, choice.k, wave_size)
        except ValueError:
            return 1
        shape = gemm_shape(gemm)
        widths = (ir.MemRefType(a.type).element_type.width * layout.a_per_lane,
                  ir.MemRefType(b.type).element_type.width * layout.b_per_lane)
        if (shape.k // choice.k) % 2 or layout.a_group_stride != layout.a_per_lane \
                or layout.b_group_stride != layout.b_per_lane or max(widths) * 2 > MAX_READ_BITS:
            return 1
        return 2

    def emit_k_steps(self, gemm: GemmOperands) -> None:
        fragment = gemm.fragment
        transposed = fragment.layout.issued_transposed
        issued = fragment.layout.transposed() if transposed else fragment.layout
        layout: mma_layouts.Layout = issued.layout
        wtm, wtn = fragment.warp_tile
        tiles_m, tiles_n = fragment.tiles
        # K steps read at once (`k_steps_per_read`): lane group g reads
        # `steps` x its elements at the group's base, the steps take them in order.
        steps = gemm.k_steps_per_read
        a_group = mul(udiv(gemm.lane, layout.m), layout.a_group_stride * steps)
        b_group = mul(udiv(gemm.lane, layout.n), layout.b_group_stride * steps)
        a_row0 = add(mul(gemm.wave_m, wtm), urem(gemm.lane, layout.m))
        b_col0 = add(mul(gemm.wave_n, wtn), urem(gemm.lane, layout.n))
        b_element = ir.MemRefType(gemm.b_smem.type).element_type
        a_element = None if gemm.a_smem is None else ir.MemRefType(gemm.a_smem.type).element_type
        plan = register_a_operand_plan(gemm, layout)
        # K offset of the lane's group in B's runs (`RegisterAPlan.group_stride`).
        group = None if plan is None else mul(udiv(gemm.lane, layout.n), plan.group_stride)

        def b_operand(column: ir.Value, k: ir.Value, count: int) -> ir.Value:
            return mfma_operand(gemm.b_smem, column, k, count, b_element, k_contiguous=gemm.transpose_b,
                                transpose_read_lane=gemm.lane if gemm.transpose_read_b else None,
                                swizzle=gemm.swizzle_b)

        read_a, read_b = [], []
        for k_step in range(gemm.block_k // layout.k):
            k0 = k_step * layout.k
            if plan is None:
                part = k_step % steps
                if part == 0:  # the reads of this step and the next steps - 1
                    ka, kb = add(a_group, k0), add(b_group, k0)
                    if gemm.a_global is not None:
                        read_a = [global_a_operand(gemm, layout, wtm, tm, k0, steps) for tm in range(tiles_m)]
                    else:
                        read_a = [mfma_operand(gemm.a_smem, add(a_row0, tm * layout.m), ka,
                                               layout.a_per_lane * steps, a_element,
                                               k_contiguous=not gemm.transpose_a,
                                               transpose_read_lane=gemm.lane if gemm.transpose_read_a else None,
                                               swizzle=gemm.swizzle_a)
                                  for tm in range(tiles_m)]
                    read_b = [b_operand(add(b_col0, tn * layout.n), kb, layout.b_per_lane * steps)
                              for tn in range(tiles_n)]
                a_values = [part_of(value, part, layout.a_per_lane, steps) for value in read_a]
                b_values = [part_of(value, part, layout.b_per_lane, steps) for value in read_b]
            else:
                a_values = [registers_a(gemm, plan, tm, k_step) for tm in range(tiles_m)]
                runs = plan.runs[k_step % plan.steps_per_period]
                b_values = [concatenated([b_operand(add(b_col0, tn * layout.n), add(group, k0 + base), length)
                                          for base, length in runs])
                            for tn in range(tiles_n)]
            for tm, tn in itertools.product(range(tiles_m), range(tiles_n)):
                index = fragment.tile_index(tm, tn)
                a, b = (b_values[tn], a_values[tm]) if transposed else (a_values[tm], b_values[tn])
                if isinstance(layout, mma_layouts.WmmaLayout):
                    fragment.values[index] = amdgpu.WMMAOp(
                        layout.m, layout.n, layout.k, a, b, fragment.values[index]).result
                else:
                    fragment.values[index] = amdgpu.MFMAOp(
                        layout.m, layout.n, layout.k, a, b, fragment.values[index],
                        blocks=gemm.choice.blocks).result


def global_a_operand(gemm: GemmOperands, layout: mma_layouts.Layout, wtm: int, tm: int, k0: int,
                     steps: int) -> ir.Value:
    """The A operand of row tile `tm` for the K steps from `k0` (`steps` of
    them, as `mfma_operand` reads them from LDS) read from global memory,
    once, before the gemm's loop (`GlobalOperand.read`): rows of A are the
    instruction's lanes mod m, K runs by lane group."""
    count = layout.a_per_lane * steps

    def indices() -> tuple[ir.Value, ir.Value]:
        row = add(add(mul(gemm.wave_m, wtm), urem(gemm.lane, layout.m)), tm * layout.m)
        return row, add(mul(udiv(gemm.lane, layout.m), layout.a_group_stride * steps), k0)

    key = (layout.m, layout.a_group_stride, wtm, tm, k0, count)
    return gemm.a_global.read(key, indices, count)


def part_of(value: ir.Value, part: int, count: int, parts: int) -> ir.Value:
    """Elements part x count .. (part + 1) x count - 1 of a vector read for
    `parts` K steps (`value` itself where there is one)."""
    if parts == 1:
        return value
    if count == 1:  # an operand of one element is a scalar (f32, f64 MFMAs)
        return vector.ExtractOp(value, [], [part]).result
    return vector.shuffle(value, value, list(range(part * count, (part + 1) * count)))


def register_a_operand_plan(gemm: GemmOperands, layout: mma_layouts.Layout) -> RegisterAPlan | None:
    """The plan for a gemm whose A is in registers (`MfmaCore.register_a`
    accepted it), None for A in LDS."""
    if gemm.a_fragment is None:
        return None
    source = gemm.a_source_layout
    issued = source.transposed() if source is not None and source.issued_transposed else None
    plan = None if issued is None else register_a_plan(layout, issued.layout)
    if plan is None:
        raise ValueError("amdgpu: a gemm's A in registers must be a transposed accumulator of the "
                         "instruction's rows (MfmaCore.register_a)")
    return plan


def registers_a(gemm: GemmOperands, plan: RegisterAPlan, tm: int, k_step: int) -> ir.Value:
    """The A operand of row tile `tm` and K step `k_step` from the fragment's
    registers (slot = source tile index * c_per_lane + element, the source's
    tiles row-major over the wave's rows by all of its columns)."""
    fragment = gemm.a_fragment
    issued = gemm.a_source_layout.transposed()
    width, per_lane = issued.n, issued.c_per_lane
    tiles_n = fragment.placement.shape[1] // width  # waves split along M only: a wave holds every column
    period, q = divmod(k_step, plan.steps_per_period)
    first_tile = period * (plan.period // width)
    scalars = [fragment.read(((tm * tiles_n) + first_tile + t) * per_lane + j) for t, j in plan.slots[q]]
    return vector.FromElementsOp(ir.VectorType.get([len(scalars)], fragment.element), scalars).result


def mfma_operand(smem: ir.Value, outer: ir.Value, k: ir.Value, count: int, element: ir.Type,
                 k_contiguous: bool, transpose_read_lane: ir.Value | None = None,
                 swizzle: int = 0) -> ir.Value:
    """`api.lane_operand` (in XOR-swizzled rows too: `MfmaCore.reads_swizzled_rows`),
    or, given `transpose_read_lane` (the lane id), LDS transpose reads of E
    elements each (`transpose_read_operand`)."""
    if transpose_read_lane is not None:
        return transpose_read_operand(smem, outer, k, count, element, transpose_read_lane, swizzle)
    return lane_operand(smem, outer, k, count, element, k_contiguous, swizzle)


def transpose_read_operand(smem: ir.Value, outer: ir.Value, k: ir.Value, count: int,
                           element: ir.Type, lane: ir.Value, swizzle: int = 0) -> ir.Value:
    """`lane_operand` of a [k, outer] buffer through amdgpu.transpose_load
    (gfx950 ds_read_b64_tr_b16/b8): in each group of 16 lanes, whose `outer`
    indices are consecutive and whose K runs start alike, lane i addresses row
    k + i // (16/E), column outer - i + E * (i % (16/E)) and receives column
    `outer`, rows k .. k+E-1 (tile.smem_layout transpose_read; the layout and
    its sources are in the descriptor's memory.shared_transpose_reads). In
    XOR-swizzled rows the column is the one the lane's row stores it at."""
    per_lane = TRANSPOSE_READS[element.width][1]
    assert count % per_lane == 0, f"{count} elements are not whole transpose reads of {per_lane}"
    per_row = TRANSPOSE_READ_GROUP // per_lane
    in_group = urem(lane, TRANSPOSE_READ_GROUP)
    column = add(sub(outer, in_group), mul(urem(in_group, per_row), per_lane))
    chunk_type = ir.VectorType.get([per_lane], element)
    row_elements = ir.MemRefType(smem.type).shape[-1]
    chunks = []
    for c in range(count // per_lane):
        row = add(add(k, c * per_lane), udiv(in_group, per_row))
        chunks.append(amdgpu.transpose_load(
            chunk_type, smem, [row, swizzled_column(row, column, swizzle, row_elements, element)]))
    return concatenated(chunks)
