"""tile-stage-operands: a gemm operand held in registers is read from there
where the family can, else staged through shared memory.

TileLang programs multiply a fragment straight into the next gemm (flash
attention's O += P V, P being the softmax of the previous gemm's
accumulator). The matrix cores read A and B from shared memory, so for each
in-kernel `tile.gemm` whose A (or B) is a fragment this pass adds a shared
buffer of the operand's shape and type (once, at the kernel's entry) and a
`tile.copy` of the fragment into it right before the gemm, and makes the gemm
read the buffer; a remark says so, with the bytes it costs. The copy is the
program's own write to shared memory: tile-insert-barriers orders it after the
previous iteration's reads and before this gemm's; tile-infer-layout stores
the buffer as the instruction reads it best (transposed, padded, swizzled),
and the copy follows that layout.

Input invariant: tile-verify holds; tile-select-mma ran (the remark names the
instruction).
Output invariant: an in-kernel tile.gemm reads A from a fragment only where
`register_a_from` accepts it, and B never.

Options:
  target (string): the target (default: the module's tile.target).

Example:

    "tile.gemm"(%p, %v_s, %o) {...} : (memref<64x64xf16, #private>, memref<64x64xf16, #shared>, ...)
    // becomes
    %p_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #shared>     // at the kernel's entry
    ...
    "tile.copy"(%p, %p_s) : (memref<64x64xf16, #private>, memref<64x64xf16, #shared>) -> ()
    "tile.gemm"(%p_s, %v_s, %o) {...}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.dialects import tile
from tilemlir.dialects.element_types import bit_width
from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass
from tilemlir.passes.gemm_facts import MmaChoice, register_a_source, warp_grid_of
from tilemlir.passes.kernel_facts import enclosing_kernel
from tilemlir.passes.lower_to_gpu.api import matrix_core_for
from tilemlir.passes.shared_memory import position_text
from tilemlir.targets import resolve_target

WORKGROUP = "#gpu.address_space<workgroup>"


def register_a_from(gemm: ir.Operation, target) -> ir.Operation | None:
    """The gemm whose accumulator this gemm reads as A straight from
    registers (`MatrixCore.register_a` accepts the pair, both chosen by
    tile-select-mma), or None."""
    source = register_a_source(gemm)
    if source is None or enclosing_kernel(source) != enclosing_kernel(gemm):
        return None
    choice, source_choice = MmaChoice.of(gemm), MmaChoice.of(source)
    warps, source_warps = warp_grid_of(gemm), warp_grid_of(source)
    if None in (choice, source_choice, warps, source_warps):
        return None
    bits = bit_width(ir.MemRefType(gemm.operands[0].type).element_type)
    core = matrix_core_for(target)
    return source if core.register_a(choice, warps, source_choice, source_warps, bits) else None


@dataclass(frozen=True)
class TileStageOperands(TilePass):
    name: ClassVar[str] = "tile-stage-operands"
    summary: ClassVar[str] = "Stage gemm operands held in registers through shared memory"

    target: str = ""

    def run(self, module: ir.Operation, state: PassState) -> None:
        gemms = [op for op in walk(module) if op.name == "tile.gemm" and enclosing_kernel(op) is not None]
        for gemm in gemms:
            for role, position in (("A", 0), ("B", 1)):
                operand = gemm.operands[position]
                if tile.memory_level(operand.type) != tile.FRAGMENT:
                    continue
                source = register_a_from(gemm, resolve_target(module, self.target)) if role == "A" else None
                if source is not None:
                    state.remark(gemm, f"{self.name}: gemm operand A stays in registers: it is the "
                                       f"accumulator of the gemm at {position_text(source)}, laid out as "
                                       f"{MmaChoice.of(gemm).name} reads its A", kind="info")
                    continue
                self.stage(gemm, role, position, operand, module, state)

    def stage(self, gemm: ir.Operation, role: str, position: int, fragment: ir.Value,
              module: ir.Operation, state: PassState) -> None:
        kernel = enclosing_kernel(gemm)
        fragment_type = ir.MemRefType(fragment.type)
        shared_type = ir.MemRefType.get(fragment_type.shape, fragment_type.element_type,
                                        memory_space=ir.Attribute.parse(WORKGROUP))
        with ir.InsertionPoint.at_block_begin(kernel.regions[0].blocks[0]), gemm.location:
            staged = tile.alloc_shared(shared_type)
        with ir.InsertionPoint(gemm), gemm.location:
            tile.copy(fragment, staged)
        gemm.operands[position] = staged
        choice = MmaChoice.of(gemm)
        instruction = f" ({choice.name})" if choice is not None else ""
        size = math.prod(fragment_type.shape) * max(1, bit_width(fragment_type.element_type) // 8)
        target = resolve_target(module, self.target)
        state.remark(gemm, f"{self.name}: gemm operand {role} is held in registers; {target.family}'s "
                           f"matrix instructions{instruction} read it from shared memory here, so it is "
                           f"copied there first ({size} bytes of shared memory, a barrier before the gemm)",
                     kind="speed")
