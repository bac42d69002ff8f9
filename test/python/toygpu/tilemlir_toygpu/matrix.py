"""toygpu's part of tile-lower-to-gpu: its matrix core and lowering hooks.

The toy's matrix instruction `toy_mma_MxNxK_<type>` is issued by a wave of
m x n lanes and computes an m x n x k product, one accumulator element per
lane. At the GPU level it is a call of a declared function named after the
descriptor row, one per lane:

    %d = func.call @toy_mma_8x8x4_f16(%a, %b, %c)
        : (vector<4xf16>, vector<4xf16>, vector<1xf32>) -> vector<1xf32>

Lane l holds D[l // n][l % n] and passes row l // n of A and column l % n of
B, k values each: d[0] = c[0] + sum_i a[i] * b[i], products and sums in the
accumulator's type. The toyasm stage prints the call as an instruction.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from tilemlir.passes.lower_to_gpu.api import (
    AccumulatorLayout,
    GemmOperands,
    LoweringHooks,
    LoweringOption,
    MatrixCore,
    add,
    const_index,
    lane_operand,
    mul,
    udiv,
    urem,
)

# The gpu.func attribute the hooks write when asked (tile-lower-to-gpu{toy-banner=true}).
BANNER_ATTR = "toygpu.banner"


@dataclass(frozen=True)
class ToyAccumulator(AccumulatorLayout):
    """Lane l holds element (l // n, l % n) of each m x n instruction tile."""

    m: int
    n: int
    c_per_lane: int = 1

    def lane_row(self, lane: ir.Value) -> ir.Value:
        return udiv(lane, self.n)

    def lane_col(self, lane: ir.Value) -> ir.Value:
        return urem(lane, self.n)

    def row_offset(self, j: int) -> int:
        return 0

    def col_offset(self, j: int) -> int:
        return 0


class ToyMatrixCore(MatrixCore):
    """One accumulator element per lane: the simplest layout the generic
    lowering drives (no shared-memory placement or loop lowering of its own)."""

    def supported(self, m: int, n: int, k: int, blocks: int, wave_size: int) -> bool:
        return blocks == 1 and m * n == wave_size

    def accumulator_layout(self, m: int, n: int, k: int, wave_size: int,
                           c_bits: int = 32) -> AccumulatorLayout:
        if not self.supported(m, n, k, 1, wave_size) or c_bits != 32:
            raise ValueError(f"no toygpu lane layout for {m}x{n}x{k} with {c_bits}-bit results "
                             f"on a wave of {wave_size}")
        return ToyAccumulator(m, n)

    def emit_k_steps(self, gemm: GemmOperands) -> None:
        choice, fragment = gemm.choice, gemm.fragment
        wtm, wtn = fragment.warp_tile
        tiles_m, tiles_n = fragment.tiles
        # The lane's row of A and column of B in its wave's first instruction tile.
        a_row0 = add(mul(gemm.wave_m, wtm), udiv(gemm.lane, choice.n))
        b_col0 = add(mul(gemm.wave_n, wtn), urem(gemm.lane, choice.n))
        a_element = ir.MemRefType(gemm.a_smem.type).element_type
        b_element = ir.MemRefType(gemm.b_smem.type).element_type
        callee = declare(choice.name, ir.VectorType.get([choice.k], a_element),
                         ir.VectorType.get([choice.k], b_element), fragment.vector_type)
        for k_step in range(gemm.block_k // choice.k):
            k0 = const_index(k_step * choice.k)
            a_values = [lane_operand(gemm.a_smem, add(a_row0, tm * choice.m), k0, choice.k,
                                     a_element, k_contiguous=not gemm.transpose_a)
                        for tm in range(tiles_m)]
            b_values = [lane_operand(gemm.b_smem, add(b_col0, tn * choice.n), k0, choice.k,
                                     b_element, k_contiguous=gemm.transpose_b)
                        for tn in range(tiles_n)]
            for tm, tn in itertools.product(range(tiles_m), range(tiles_n)):
                index = fragment.tile_index(tm, tn)
                fragment.values[index] = func.CallOp(
                    [fragment.vector_type], callee,
                    [a_values[tm], b_values[tn], fragment.values[index]]).result


def declare(name: str, a_type: ir.Type, b_type: ir.Type, c_type: ir.Type) -> ir.FlatSymbolRefAttr:
    """`name` as a private func.func of the enclosing gpu.module (declared once)."""
    owner = ir.InsertionPoint.current.block.owner.operation
    while owner is not None and owner.name != "gpu.module":
        owner = owner.parent.operation if owner.parent is not None else None
    if owner is None:
        raise ValueError("toygpu matrix instructions are emitted inside a gpu.module")
    body = owner.regions[0].blocks[0]
    declared = {ir.StringAttr(op.attributes["sym_name"]).value
                for op in body.operations if op.operation.name == "func.func"}
    if name not in declared:
        with ir.InsertionPoint.at_block_begin(body):
            func.FuncOp(name, ir.FunctionType.get([a_type, b_type, c_type], [c_type]),
                        visibility="private")
    return ir.FlatSymbolRefAttr.get(name)


class ToyLoweringHooks(LoweringHooks):
    """toygpu's code at the generic lowering's fixed points: at a kernel's
    entry, when `tile-lower-to-gpu{toy-banner=true}`, a note on the gpu.func
    (`toygpu.banner`) that the toyasm stage prints as a comment."""

    options = (LoweringOption("toy_banner", bool, False,
                              "note the target on every kernel, printed by --emit toyasm"),)

    def begin_kernel(self) -> None:
        if self.lowering.option("toy_banner"):
            gpu_func = self.lowering.entry_block.owner.operation
            gpu_func.attributes[BANNER_ATTR] = ir.StringAttr.get(
                f"lowered for {self.lowering.target} by tilemlir-toygpu")
