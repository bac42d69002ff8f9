"""amdgpu-scope-atomics: memref.atomic_rmw's additions relaxed, at agent scope.

tile-lower-to-gpu lowers `tile.atomic_add` (split-K's partial sums added into
C) to `memref.atomic_rmw`, whose meaning is an atomic read-modify-write and
nothing more; its upstream lowering still gives the `llvm.atomicrmw` the
strongest form, acq_rel at system scope. That costs on AMD: llc-22 lowers a
system-scope f32 `fadd` to global memory as a compare-and-swap loop
(`global_atomic_cmpswap`, since fine-grained host memory may not add floats),
where an agent-scope relaxed one is one `global_atomic_add_f32` on gfx942 and
gfx950 (checked with llc-22). gfx90a keeps the loop: llc adds there in one
instruction only given `!amdgpu.no.fine.grained.memory` and
`!amdgpu.ignore.denormal.mode` (its float atomics flush denormals), metadata
the LLVM dialect cannot attach; the loop is slower, not wrong. This pass gives every such atomic the
meaning HIP's `atomicAdd` has: relaxed (`monotonic`), agent (device) scope.
That is what the additions need: they are atomic with each other, and the
kernel's end, not an ordering, makes them visible; a kernel that orders
other accesses through an atomic must say so with a fence of its own.

Input invariant: the LLVM dialect (after convert-gpu-to-rocdl). Output: the
`llvm.atomicrmw` ops that memref.atomic_rmw's lowering made (acq_rel, no
syncscope) are `monotonic` at syncscope "agent"; any other atomic is left as
it is. No options.

    %old = llvm.atomicrmw fadd %p, %v acq_rel : !llvm.ptr<1>, f32
    // becomes
    %old = llvm.atomicrmw fadd %p, %v syncscope("agent") monotonic : !llvm.ptr<1>, f32
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass

# LLVM's AtomicOrdering values as the LLVM dialect stores them (LLVMEnums.td).
MONOTONIC, ACQ_REL = 2, 6
AGENT_SCOPE = "agent"


def scope_atomics(module: ir.Operation) -> int:
    """Relaxes the atomics of `module` (module docstring); returns how many."""
    changed = 0
    for op in walk(module):
        if op.name != "llvm.atomicrmw" or "syncscope" in op.attributes \
                or ir.IntegerAttr(op.attributes["ordering"]).value != ACQ_REL:
            continue
        ordering = op.attributes["ordering"]
        op.attributes["ordering"] = ir.IntegerAttr.get(ordering.type, MONOTONIC)
        op.attributes["syncscope"] = ir.StringAttr.get(AGENT_SCOPE)
        changed += 1
    return changed


@dataclass(frozen=True)
class AmdgpuScopeAtomics(TilePass):
    """memref.atomic_rmw's atomics relaxed at agent scope (module docstring)."""

    name: ClassVar[str] = "amdgpu-scope-atomics"
    summary: ClassVar[str] = ("give memref.atomic_rmw's atomics HIP atomicAdd's meaning (relaxed, agent "
                              "scope), so llc adds floats in one instruction, not a compare-swap loop")

    def run(self, module: ir.Operation, state: PassState) -> None:
        scope_atomics(module)
