"""tile-infer-layout: which lane holds which element of each register fragment,
and how wide each copy's per-lane accesses are.

A fragment that is the accumulator C of a tile.gemm takes the C/D lane layout
of the gemm's chosen instruction (`tile.mma`, `tilemlir.mma_layouts`), tiled
over the waves of `tile.warp_grid`. It is recorded on the fragment's
`tile.alloc_fragment` as

    tile.layout = {kind = "mma_accumulator", instruction = array<i64: m, n, k>,
                   warps = array<i64: wm, wn>}

All gemms accumulating into one fragment must agree; otherwise the diagnostic
names the conflicting uses. Copies into shared memory get
`tile.vector_width`: elements per lane per access, 128 bits where the row
length allows (halving until it divides).

Input invariant: tile-select-mma ran (in-kernel gemms carry tile.mma and
tile.warp_grid); gemm A/B operands are shared buffers.
Output invariant: every gemm accumulator fragment has tile.layout; every
global->shared tile.copy has tile.vector_width.

Example:

    %c = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
    // becomes
    %c = "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 32, 32, 16>,
        kind = "mma_accumulator", warps = array<i64: 2, 2>}} : () -> memref<128x128xf32, ...>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.dialects import tile
from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass
from tilemlir.passes.common import (
    LAYOUT_ATTR,
    VECTOR_WIDTH_ATTR,
    MmaChoice,
    enclosing_kernel,
    i64_array,
    int_attr,
    warp_grid_of,
)


def _location_text(op: ir.Operation) -> str:
    from tilemlir.diagnostics import _file_position

    file, line, col = _file_position(op.location)
    return f"{file}:{line}:{col}" if line else str(op.location)


def copy_vector_width(cols: int, element_bits: int) -> int:
    """Elements per 128-bit access, halved until it divides the row length."""
    width = max(1, 128 // element_bits)
    while width > 1 and cols % width:
        width //= 2
    return width


@dataclass(frozen=True)
class TileInferLayout(TilePass):
    name: ClassVar[str] = "tile-infer-layout"
    summary: ClassVar[str] = "Assign lane layouts to register fragments and vector widths to copies"

    def run(self, module: ir.Operation, state: PassState) -> None:
        chosen: dict = {}  # fragment value -> (layout key, the gemm that set it)
        for op in walk(module):
            if op.name == "tile.gemm" and enclosing_kernel(op) is not None:
                self.layout_from_gemm(op, chosen, state)
            elif op.name == "tile.copy" and enclosing_kernel(op) is not None:
                self.copy_width(op)

    def layout_from_gemm(self, op: ir.Operation, chosen: dict, state: PassState) -> None:
        choice, warps = MmaChoice.of(op), warp_grid_of(op)
        if choice is None or warps is None:
            state.error(op, "tile-infer-layout: tile.gemm has no chosen instruction; run "
                            "tile-select-mma first")
            return
        for role, operand in (("A", op.operands[0]), ("B", op.operands[1])):
            if tile.memory_level(operand.type) == tile.FRAGMENT:
                state.error(op, f"tile-infer-layout: gemm operand {role} is held in registers; "
                                "only shared-memory A and B have a lane layout so far "
                                "(copy it to a tile.alloc_shared buffer)")
                return
        accumulator = op.operands[2]
        owner = accumulator.owner
        if not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "tile.alloc_fragment":
            state.error(op, "tile-infer-layout: the gemm accumulator must come from tile.alloc_fragment")
            return
        key = (choice.m, choice.n, choice.k, warps)
        previous = chosen.get(accumulator)
        if previous is not None and previous[0] != key:
            other = previous[1]
            state.error(
                op,
                f"tile-infer-layout: conflicting layouts for one accumulator fragment: this gemm "
                f"uses {choice.name} over {warps[0]}x{warps[1]} waves, the gemm at "
                f"{_location_text(other)} uses a {previous[0][0]}x{previous[0][1]}x{previous[0][2]} "
                f"instruction over {previous[0][3][0]}x{previous[0][3][1]} waves",
            )
            return
        chosen[accumulator] = (key, op)
        owner.attributes[LAYOUT_ATTR] = ir.DictAttr.get({
            "kind": ir.StringAttr.get("mma_accumulator"),
            "instruction": i64_array([choice.m, choice.n, choice.k]),
            "warps": i64_array(list(warps)),
        })

    @staticmethod
    def copy_width(op: ir.Operation) -> None:
        src, dst = op.operands[0], op.operands[1]
        if tile.memory_level(dst.type) != tile.SHARED or tile.memory_level(src.type) != tile.GLOBAL:
            return
        dst_type = ir.MemRefType(dst.type)
        element_bits = ir.MemRefType(src.type).element_type
        bits = element_bits.width if hasattr(element_bits, "width") else 32
        op.attributes[VECTOR_WIDTH_ATTR] = int_attr(copy_vector_width(dst_type.shape[-1], bits))
