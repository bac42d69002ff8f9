"""amdgpu-math-to-intrinsics: the native math ops convert-gpu-to-rocdl would
refuse or turn into OCML calls become calls of the LLVM intrinsics llc lowers.

convert-gpu-to-rocdl maps `math.floor`, `math.sin`, ... to OCML functions
(`__ocml_floor_f32`), which need the ROCm device libraries, and marks the
LLVM intrinsics of the same ops illegal (`llvm.intr.floor`: "failed to
legalize"), although llc-22 lowers them to instructions (v_floor_f32,
v_sin_f32 after scaling by 1/2π, v_exp_f32, v_log_f32). `llvm.call_intrinsic`
is legal there and translates to the same intrinsic call.

An f32 `math.exp2` marked `fastmath<afn>` (approximate functions: the
tile dialect's spelling of "the hardware's exp2 unit will do", docs/kernels.md)
becomes `rocdl.exp2`, llvm.amdgcn.exp2.f32: one v_exp_f32. llc expands the
plain llvm.exp2.f32 around it into a range fix-up (a compare against -126, a
select of +64, the v_exp_f32, a v_ldexp_f32 by -64: v_exp_f32 flushes results
below 2^-126 to zero), five instructions per element in a softmax. (Triton's
AMD backend makes the same choice under its ftz option:
triton-lang/triton test/Conversion/amd/math-denorm-handling.mlir.)

Input invariant: GPU-level IR after tile-expand-math (every float math op is
one of NATIVE_MATH's). Output: the ops of INTRINSICS on f32/f64 (scalars or
vectors) are `llvm.call_intrinsic`s, but scalar f32 `math.exp2` with `afn`
is `rocdl.exp2`; every other op is unchanged. No options.

    %y = math.floor %x : f32
    %z = math.exp2 %x fastmath<afn> : f32
    // becomes
    %y = llvm.call_intrinsic "llvm.floor.f32"(%x) : (f32) -> f32
    %z = rocdl.exp2 %x : f32
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir
from mlir.dialects import llvm, rocdl

from tilemlir.irutil import approximate_function, walk
from tilemlir.passes.base import PassState, TilePass

# math op -> the LLVM intrinsic's name, for the ops convert-gpu-to-rocdl sends to
# OCML; on f32 and f64 (the others: f32 exp/log, sqrt, fma, trunc, ... it lowers itself).
INTRINSICS = {"math.floor": "floor", "math.ceil": "ceil", "math.exp2": "exp2", "math.log2": "log2",
              "math.log10": "log10", "math.sin": "sin", "math.cos": "cos"}


def _mangled(value_type: ir.Type) -> str | None:
    """The LLVM overload suffix of f32/f64 or a 1-D vector of them (None otherwise)."""
    if isinstance(value_type, ir.VectorType):
        vector = ir.VectorType(value_type)
        element = _mangled(vector.element_type)
        return f"v{vector.shape[0]}{element}" if element and vector.rank == 1 else None
    return {"f32": "f32", "f64": "f64"}.get(str(value_type))


@dataclass(frozen=True)
class AmdgpuMathToIntrinsics(TilePass):
    """Native math ops as LLVM intrinsic calls (module docstring)."""

    name: ClassVar[str] = "amdgpu-math-to-intrinsics"
    summary: ClassVar[str] = "math ops that llc lowers natively as llvm.call_intrinsic (not OCML calls)"

    def run(self, module: ir.Operation, state: PassState) -> None:
        for op in [op for op in walk(module) if op.name in INTRINSICS]:
            suffix = _mangled(op.results[0].type)
            if suffix is None:
                continue
            with ir.InsertionPoint(op), op.location:
                if op.name == "math.exp2" and suffix == "f32" and approximate_function(op):
                    call = rocdl.exp2(op.results[0].type, op.operands[0])
                else:
                    call = llvm.call_intrinsic(op.results[0].type, f"llvm.{INTRINSICS[op.name]}.{suffix}",
                                               list(op.operands), [], [])
            op.results[0].replace_all_uses_with(call)
            op.erase()
