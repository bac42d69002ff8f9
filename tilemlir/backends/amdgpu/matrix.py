"""AMD CDNA matrix cores through `amdgpu.mfma`: the amdgpu family's `MatrixCore`
(lane layouts: `tilemlir.mma_layouts`, from AMD's documented MFMA layouts).

Operands are read from LDS per lane, a vector load where the lane's K run is
contiguous, element loads where it is not, or, for buffers tile-infer-layout
marked `transpose_read` (gfx950), LDS transpose reads (`ds_read_b64_tr_b*`),
the only reads of XOR-swizzled rows.

An accumulator tile-infer-layout lays out transposed (`api.TransposedAccumulator`,
where its kernel has no tile.reduce) is computed as C^T += B^T A^T: B's operand
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
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import amdgpu, vector

from tilemlir import mma_layouts
from tilemlir.passes.lower_to_gpu.api import (
    AccumulatorLayout,
    GemmOperands,
    MatrixCore,
    add,
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

    def lane_terms(self):
        n = self.layout.n
        return ((n, self.layout.wave_size // n, self.layout.c_row_terms(0)[1]),), ((1, n, 1),)


class MfmaCore(MatrixCore):
    """AMD CDNA matrix cores through `amdgpu.mfma` (layouts: `tilemlir.mma_layouts`)."""

    transposes_accumulator = True

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

    def emit_k_steps(self, gemm: GemmOperands) -> None:
        fragment = gemm.fragment
        transposed = fragment.layout.issued_transposed
        issued = fragment.layout.transposed() if transposed else fragment.layout
        layout: mma_layouts.MfmaLayout = issued.layout
        wtm, wtn = fragment.warp_tile
        tiles_m, tiles_n = fragment.tiles
        a_group = mul(udiv(gemm.lane, layout.m), layout.a_per_lane)
        b_group = mul(udiv(gemm.lane, layout.n), layout.b_per_lane)
        a_row0 = add(mul(gemm.wave_m, wtm), urem(gemm.lane, layout.m))
        b_col0 = add(mul(gemm.wave_n, wtn), urem(gemm.lane, layout.n))
        a_element = ir.MemRefType(gemm.a_smem.type).element_type
        b_element = ir.MemRefType(gemm.b_smem.type).element_type
        for k_step in range(gemm.block_k // layout.k):
            ka = add(a_group, k_step * layout.k)
            kb = add(b_group, k_step * layout.k)
            a_values = [mfma_operand(gemm.a_smem, add(a_row0, tm * layout.m), ka, layout.a_per_lane,
                                     a_element, k_contiguous=not gemm.transpose_a,
                                     transpose_read_lane=gemm.lane if gemm.transpose_read_a else None,
                                     swizzle=gemm.swizzle_a)
                        for tm in range(tiles_m)]
            b_values = [mfma_operand(gemm.b_smem, add(b_col0, tn * layout.n), kb, layout.b_per_lane,
                                     b_element, k_contiguous=gemm.transpose_b,
                                     transpose_read_lane=gemm.lane if gemm.transpose_read_b else None,
                                     swizzle=gemm.swizzle_b)
                        for tn in range(tiles_n)]
            for tm, tn in itertools.product(range(tiles_m), range(tiles_n)):
                index = fragment.tile_index(tm, tn)
                a, b = (b_values[tn], a_values[tm]) if transposed else (a_values[tm], b_values[tn])
                fragment.values[index] = amdgpu.MFMAOp(
                    layout.m, layout.n, layout.k, a, b, fragment.values[index],
                    blocks=gemm.choice.blocks).result


def mfma_operand(smem: ir.Value, outer: ir.Value, k: ir.Value, count: int, element: ir.Type,
                 k_contiguous: bool, transpose_read_lane: ir.Value | None = None,
                 swizzle: int = 0) -> ir.Value:
    """`api.lane_operand`, or, given `transpose_read_lane` (the lane id), LDS
    transpose reads of E elements each (`transpose_read_operand`, the only
    reads of XOR-swizzled rows)."""
    if transpose_read_lane is not None:
        return transpose_read_operand(smem, outer, k, count, element, transpose_read_lane, swizzle)
    if swizzle:
        raise ValueError("XOR-swizzled LDS rows are read by transpose reads only")
    return lane_operand(smem, outer, k, count, element, k_contiguous)


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
