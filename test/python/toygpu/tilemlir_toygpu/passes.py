"""toygpu-count-mma: the toy family's own pass (registered by its manifest).

Counts the matrix instructions of every gpu.func and records the count on it,
for the toyasm stage's `.mma` line and its report. A pass a family declares in
`Backend.passes` is found by name wherever tilemlir reads a pipeline, so the
pipeline `tile-compile --dump-pass-pipeline` prints runs through `tile-opt -p`.

Input invariant: GPU-level IR (after tile-lower-to-gpu). Output: every gpu.func
has `toygpu.mma_count` (i64): the calls of `toy_mma_*` functions in its body.
No options.

    gpu.func @k(...) kernel { ... func.call @toy_mma_8x8x4_f16(...) ... }
    // becomes
    gpu.func @k(...) kernel attributes {toygpu.mma_count = 1 : i64} { ... }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass

MMA_COUNT_ATTR = "toygpu.mma_count"
MMA_PREFIX = "toy_mma_"


def is_mma_call(op: ir.Operation) -> bool:
    return op.name == "func.call" and \
        ir.FlatSymbolRefAttr(op.attributes["callee"]).value.startswith(MMA_PREFIX)


@dataclass(frozen=True)
class ToyCountMma(TilePass):
    """Records on every gpu.func how many toy matrix instructions it issues."""

    name: ClassVar[str] = "toygpu-count-mma"
    summary: ClassVar[str] = "record on every gpu.func its count of toy_mma instructions"

    def run(self, module: ir.Operation, state: PassState) -> None:
        i64 = ir.IntegerType.get_signless(64, module.context)
        for op in walk(module):
            if op.name == "gpu.func":
                count = sum(1 for inner in walk(op) if is_mma_call(inner))
                op.attributes[MMA_COUNT_ATTR] = ir.IntegerAttr.get(i64, count)
