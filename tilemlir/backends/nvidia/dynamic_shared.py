"""nvidia-dynamic-shared-extern: dynamic shared memory as the `.extern .shared` array PTX needs.

convert-gpu-to-nvvm gives the global it makes for dynamic shared memory
(`__dynamic_shmem__N`) internal linkage, and LLVM's NVPTX backend then demotes
it to a one-byte local `.shared` variable, so every kernel indexing past its
first byte would read and write memory it does not own. External linkage
prints `.extern .shared .align 1024 .b8 __dynamic_shmem__0[]`, which is what
dynamic shared memory is. The alignment is the period of the 128-byte TMA
swizzle (wgmma.py): static shared variables (mbarriers) come first, and TMA
boxes with that swizzle need 1024-byte aligned addresses.

Input invariant: the LLVM and NVVM dialects (after convert-gpu-to-nvvm).
Output: every `llvm.mlir.global` named `__dynamic_shmem__*` has external
linkage and alignment 1024; nothing else changes. No options.

    llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
    // becomes
    llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass

DYNAMIC_SHARED_PREFIX = "__dynamic_shmem__"
DYNAMIC_SHARED_ALIGN = 1024  # the 128-byte swizzle's period (backends/nvidia/wgmma.py)


def make_dynamic_shared_extern(module: ir.Operation) -> None:
    """Gives the dynamic shared memory globals of `module` external linkage
    and DYNAMIC_SHARED_ALIGN (module docstring)."""
    external = ir.Attribute.parse("#llvm.linkage<external>", module.context)
    alignment = ir.IntegerAttr.get(ir.IntegerType.get_signless(64, module.context), DYNAMIC_SHARED_ALIGN)
    for op in walk(module):
        if op.name == "llvm.mlir.global":
            name = ir.StringAttr(op.attributes["sym_name"]).value
            if name.startswith(DYNAMIC_SHARED_PREFIX):
                op.attributes["linkage"] = external
                op.attributes["alignment"] = alignment


@dataclass(frozen=True)
class NvidiaDynamicSharedExtern(TilePass):
    """Makes dynamic shared memory an `.extern .shared` array (module docstring)."""

    name: ClassVar[str] = "nvidia-dynamic-shared-extern"
    summary: ClassVar[str] = ("give the dynamic shared memory global external linkage and 1024-byte "
                              "alignment, so NVPTX prints it as an .extern .shared array")

    def run(self, module: ir.Operation, state: PassState) -> None:
        make_dynamic_shared_extern(module)
