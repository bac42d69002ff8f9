"""amdgpu-contract-float-ops: the kernels' float multiplies and adds may fuse.

docs/kernels.md allows contraction: a multiply feeding an add may become one
fused multiply-add, rounded once, as Triton (`enable_fp_fusion`) and TileLang
allow by default. On AMD the permission goes on the kernel's own operations,
not to llc as a whole: llc's `-fp-contract=fast` would also fuse inside the
expansions llc writes for `llvm.exp.f32` and `llvm.log.f32`, whose steps LLVM
marks as not to be contracted (the product's rounding error is taken out
exactly in a separate step; fused, it is counted twice: exp's error grows
from under 1 ulp to about 45). With `contract` on the kernel's
`llvm.fmul`/`llvm.fadd`/`llvm.fsub` only, llc fuses a product into the add
or subtract that uses it where both carry the flag (flash attention's scaled
scores minus the row max: one `v_fma_f32` each) and leaves its own
expansions as LLVM wrote them.

Input invariant: the LLVM dialect (after convert-gpu-to-rocdl). Output: every
`llvm.fmul`, `llvm.fadd` and `llvm.fsub` carries `contract` among its
fast-math flags, the flags it had kept. No options.

    %p = llvm.fmul %a, %b : f32
    %r = llvm.fsub %p, %m : f32
    // becomes
    %p = llvm.fmul %a, %b {fastmathFlags = #llvm.fastmath<contract>} : f32
    %r = llvm.fsub %p, %m {fastmathFlags = #llvm.fastmath<contract>} : f32
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.irutil import fastmath_flags, walk
from tilemlir.passes.base import PassState, TilePass

CONTRACTED = ("llvm.fmul", "llvm.fadd", "llvm.fsub")
FLAGS = "fastmathFlags"


def contract_float_ops(module: ir.Operation) -> int:
    """Adds `contract` to the fast-math flags of the module's float
    multiplies, adds and subtracts (module docstring); returns how many."""
    changed = 0
    for op in walk(module):
        if op.name not in CONTRACTED:
            continue
        flags = fastmath_flags(op, FLAGS)
        if "contract" in flags or "fast" in flags:
            continue
        flags.add("contract")
        op.attributes[FLAGS] = ir.Attribute.parse(f"#llvm.fastmath<{', '.join(sorted(flags))}>", op.context)
        changed += 1
    return changed


@dataclass(frozen=True)
class AmdgpuContractFloatOps(TilePass):
    """The kernels' float multiplies and adds may fuse (module docstring)."""

    name: ClassVar[str] = "amdgpu-contract-float-ops"
    summary: ClassVar[str] = ("let llc fuse the kernels' float multiplies into the adds that use them "
                              "(contract on llvm.fmul/fadd/fsub; llc's own expansions keep theirs)")

    def run(self, module: ir.Operation, state: PassState) -> None:
        contract_float_ops(module)
