"""Lane-level matrix instructions, one strategy per backend family.

tile-lower-to-gpu is family-neutral except at one point: how a wave holds an
accumulator tile and how one K step of a gemm becomes matrix instructions.
A `MatrixCore` answers exactly that:

* `supported(m, n, k, blocks, wave_size)`: whether the lane layout of such an
  instruction is known (tile-select-mma only chooses those);
* `accumulator_layout(m, n, k, wave_size, c_bits)`: where element j of a lane's
  accumulator vector sits in the instruction tile, as
  `row = lane_row(lane) + row_offset(j)`, `col = lane_col(lane) + col_offset(j)`;
* `emit_k_steps(step)`: per-lane operand loads from shared memory and the
  matrix instructions for the whole block K of one tile.gemm.

Families register a core in `CORES` ("family" -> "module:Class", imported on
first use), so a new backend adds a file, not a branch in the emitter.
"""

from __future__ import annotations

import importlib
import itertools
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from mlir import ir
from mlir.dialects import amdgpu, memref, vector

from tilemlir import mma_layouts
from tilemlir.diagnostics import UserError
from tilemlir.passes.common import TRANSPOSE_READ_GROUP, TRANSPOSE_READS
from tilemlir.passes.gpu_builders import add, mul, sub, swizzled_column, udiv, urem

CORES: dict[str, str] = {
    "amdgpu": "tilemlir.passes.matrix_cores:MfmaCore",
    "nvidia": "tilemlir.backends.nvidia.wgmma:WarpgroupCore",
    "metax": "tilemlir.backends.metax.matrix:MetaxMmaCore",
}


@dataclass
class GemmStep:
    """Everything one tile.gemm's lowering needs, with lane ids already computed."""

    fragment: object  # lower_to_gpu.AccumulatorFragment
    choice: object  # common.MmaChoice
    a_smem: ir.Value
    b_smem: ir.Value
    transpose_a: bool
    transpose_b: bool
    block_k: int
    lane: ir.Value
    wave_m: ir.Value
    wave_n: ir.Value
    # Operands read with LDS transpose reads (tile.smem_layout transpose_read).
    transpose_read_a: bool = False
    transpose_read_b: bool = False
    # Their XOR swizzles (tile.smem_layout swizzle; 0: none).
    swizzle_a: int = 0
    swizzle_b: int = 0


class AccumulatorLayout(ABC):
    """Where a lane's accumulator elements sit inside one m x n instruction tile
    (an interface: each family's core implements it)."""

    m: int
    n: int
    c_per_lane: int

    @abstractmethod
    def lane_row(self, lane: ir.Value) -> ir.Value:
        """The lane's row offset inside the tile, as an index value."""

    @abstractmethod
    def lane_col(self, lane: ir.Value) -> ir.Value:
        """The lane's column offset inside the tile, as an index value."""

    @abstractmethod
    def row_offset(self, j: int) -> int:
        """The static row offset of the lane's j-th accumulator element."""

    @abstractmethod
    def col_offset(self, j: int) -> int:
        """The static column offset of the lane's j-th accumulator element."""


class MatrixCore(ABC):
    """A family's lane-level matrix instructions (an interface; see the module doc)."""

    family: ClassVar[str] = ""

    @abstractmethod
    def supported(self, m: int, n: int, k: int, blocks: int, wave_size: int) -> bool:
        """Whether the lane layout of such an instruction is known."""

    @abstractmethod
    def accumulator_layout(self, m: int, n: int, k: int, wave_size: int,
                           c_bits: int = 32) -> AccumulatorLayout:
        """The accumulator layout of an m x n x k instruction."""

    @abstractmethod
    def emit_k_steps(self, step: GemmStep) -> None:
        """Operand loads and matrix instructions for one tile.gemm's block K."""

    def waves_per_instruction(self, name: str) -> int:
        """How many consecutive waves execute one instruction of this name
        together (1: every wave its own; NVIDIA's wgmma: a warpgroup of 4)."""
        return 1

    def operand_lanes(self, m: int, n: int, k: int, wave_size: int):
        """For LDS layout choice: per lane, the (row of A, K index) and (column of
        B, K index) of its first operand element and the elements it reads, as
        ((rows_a, ks_a, count_a), (cols_b, ks_b, count_b)); None when the core
        keeps the buffers as they are."""
        return

    # Optional hooks; the defaults keep the generic lowering (used by AMD).
    # True: the core places shared buffers itself (`place_shared`) instead of
    # workgroup attributions, e.g. in dynamic shared memory with padded rows.
    places_shared_memory: ClassVar[bool] = False

    def place_shared(self, emitter, shared_ops: list) -> int:
        """Binds `emitter.shared[...]` for every tile.alloc_shared; returns the
        bytes of dynamic shared memory the launch must provide. Called only
        when `places_shared_memory` is set, which obliges the core to define it."""
        raise TypeError(f"{type(self).__name__} sets places_shared_memory but does not "
                        "define place_shared")

    def lower_loop(self, emitter, op) -> bool:
        """A chance to lower an scf.for itself (e.g. software pipelining);
        False leaves it to the generic lowering."""
        return False


def core_for(family: str) -> MatrixCore:
    if family not in CORES:
        raise UserError(f"no lane-level matrix lowering for the '{family}' family "
                        f"(known: {', '.join(sorted(CORES))})")
    module_name, _, class_name = CORES[family].partition(":")
    return getattr(importlib.import_module(module_name), class_name)()


# --------------------------------------------------------------------------
# AMD: amdgpu.mfma
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class MfmaAccumulator(AccumulatorLayout):
    layout: mma_layouts.MfmaLayout

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


class MfmaCore(MatrixCore):
    """AMD CDNA matrix cores through `amdgpu.mfma` (layouts: `tilemlir.mma_layouts`)."""

    family: ClassVar[str] = "amdgpu"

    def supported(self, m: int, n: int, k: int, blocks: int, wave_size: int) -> bool:
        return mma_layouts.supported(m, n, k, blocks, wave_size)

    def accumulator_layout(self, m: int, n: int, k: int, wave_size: int,
                           c_bits: int = 32) -> AccumulatorLayout:
        return MfmaAccumulator(mma_layouts.layout_for(m, n, k, wave_size, c_bits))

    def operand_lanes(self, m: int, n: int, k: int, wave_size: int):
        layout = mma_layouts.layout_for(m, n, k, wave_size)
        lanes = range(wave_size)
        a = ([layout.a_coord(lane, 0)[0] for lane in lanes], [layout.a_coord(lane, 0)[1] for lane in lanes],
             layout.a_per_lane)
        b = ([layout.b_coord(lane, 0)[1] for lane in lanes], [layout.b_coord(lane, 0)[0] for lane in lanes],
             layout.b_per_lane)
        return a, b

    def emit_k_steps(self, step: GemmStep) -> None:
        fragment = step.fragment
        layout: mma_layouts.MfmaLayout = fragment.layout.layout
        wtm, wtn = fragment.warp_tile
        tiles_m, tiles_n = fragment.tiles
        a_group = mul(udiv(step.lane, layout.m), layout.a_per_lane)
        b_group = mul(udiv(step.lane, layout.n), layout.b_per_lane)
        a_row0 = add(mul(step.wave_m, wtm), urem(step.lane, layout.m))
        b_col0 = add(mul(step.wave_n, wtn), urem(step.lane, layout.n))
        a_element = ir.MemRefType(step.a_smem.type).element_type
        b_element = ir.MemRefType(step.b_smem.type).element_type
        for k_step in range(step.block_k // layout.k):
            ka = add(a_group, k_step * layout.k)
            kb = add(b_group, k_step * layout.k)
            a_values = [lane_operand(step.a_smem, add(a_row0, tm * layout.m), ka, layout.a_per_lane,
                                     a_element, k_contiguous=not step.transpose_a,
                                     transpose_read_lane=step.lane if step.transpose_read_a else None,
                                     swizzle=step.swizzle_a)
                        for tm in range(tiles_m)]
            b_values = [lane_operand(step.b_smem, add(b_col0, tn * layout.n), kb, layout.b_per_lane,
                                     b_element, k_contiguous=step.transpose_b,
                                     transpose_read_lane=step.lane if step.transpose_read_b else None,
                                     swizzle=step.swizzle_b)
                        for tn in range(tiles_n)]
            for tm, tn in itertools.product(range(tiles_m), range(tiles_n)):
                index = fragment.tile_index(tm, tn)
                fragment.values[index] = amdgpu.MFMAOp(
                    layout.m, layout.n, layout.k, a_values[tm], b_values[tn],
                    fragment.values[index], blocks=step.choice.blocks).result


def lane_operand(smem: ir.Value, outer: ir.Value, k: ir.Value, count: int, element: ir.Type,
                 k_contiguous: bool, transpose_read_lane: ir.Value | None = None,
                 swizzle: int = 0) -> ir.Value:
    """A lane's `count` consecutive-K elements of one row of A or column of B.
    `k_contiguous`: the buffer is indexed [outer, k] (one vector load), else
    [k, outer]: one load per element, or, given `transpose_read_lane` (the lane
    id), LDS transpose reads of E elements each (`transpose_read_operand`,
    the only reads of XOR-swizzled rows)."""
    if transpose_read_lane is not None:
        return transpose_read_operand(smem, outer, k, count, element, transpose_read_lane, swizzle)
    if swizzle:
        raise ValueError("XOR-swizzled LDS rows are read by transpose reads only")
    if k_contiguous:
        if count == 1:
            return memref.LoadOp(smem, [outer, k]).result
        return vector.LoadOp(ir.VectorType.get([count], element), smem, [outer, k]).result
    scalars = [memref.LoadOp(smem, [add(k, i), outer]).result for i in range(count)]
    if count == 1:
        return scalars[0]
    return vector.FromElementsOp(ir.VectorType.get([count], element), scalars).result


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
    while len(chunks) > 1:  # concatenate pairwise
        size = ir.VectorType(chunks[0].type).shape[0]
        chunks = [vector.shuffle(chunks[i], chunks[i + 1], list(range(2 * size)))
                  for i in range(0, len(chunks), 2)]
    return chunks[0]
