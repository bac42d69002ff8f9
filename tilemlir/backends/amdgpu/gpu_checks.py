"""amdgpu-check-resources: GPU-level kernels checked against the target, before codegen.

What it checks, with the location of the op concerned:
  - what every backend refuses in GPU-level IR (`passes/check_gpu_input.py`):
    symbols of a gpu.module that are not identifiers (llc writes
    `.amdhsa_kernel NAME` unquoted), a gpu.module `targets` attribute (its
    `link` list names files), non-positive `known_block_size`/`known_grid_size`
    (an APInt assertion in the lowering);
and on every `gpu.func ... kernel`:
  - static LDS (workgroup attributions plus workgroup-space `memref.global`s the
    kernel takes with `memref.get_global`) <= memory.shared_bytes_per_workgroup:
    "kernel 'k' needs 98304 bytes of LDS, gfx942 allows 65536";
  - `known_block_size` threads <= compute.max_threads_per_workgroup;
  - every fp8 operand of `amdgpu.mfma` is an encoding in matrix.fp8_formats
    (FNUZ on gfx942, OCP on gfx950): upstream's own error ("no intrinsic
    matching MFMA size") does not say that the encoding is the problem.

Input invariant: GPU-level IR (gpu.module with gpu.func kernels).
Output: unchanged IR; errors fail the pass. Limits the descriptor leaves
unknown are not checked. Sizes of dynamically shaped buffers are not known
here; `report.check_resources` checks what llc allocated afterwards.

    gpu.func @k() workgroup(%lds: memref<98304xi8, #gpu.address_space<workgroup>>) kernel
    // error (gfx942): kernel 'k' needs 98304 bytes of LDS, gfx942 allows 65536
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass
from tilemlir.passes.check_gpu_input import gpu_input_problems
from tilemlir.targets.model import FP8_KIND, is_unknown
from tilemlir.targets.registry import resolve_target

_WORKGROUP_SPACES = ("#gpu.address_space<workgroup>", "3", "3 : i32", "3 : i64")


def _bits(element: ir.Type) -> int | None:
    if isinstance(element, ir.VectorType):
        inner = _bits(element.element_type)
        return None if inner is None else inner * math.prod(element.shape)
    if isinstance(element, ir.IndexType):
        return 64
    if isinstance(element, (ir.IntegerType, ir.FloatType)):
        return element.width
    return None


def workgroup_bytes(memref_type: ir.Type) -> int | None:
    """Bytes of a statically shaped memref in the workgroup address space;
    0 for any other memref; None when the size is not static."""
    if not isinstance(memref_type, ir.MemRefType):
        return 0
    memref = memref_type
    if str(memref.memory_space) not in _WORKGROUP_SPACES:
        return 0
    bits = _bits(memref.element_type)
    if bits is None or not memref.has_static_shape:
        return None
    return math.prod(memref.shape) * bits // 8


def kernel_lds_bytes(kernel: ir.Operation, module: ir.Operation) -> int:
    """Static LDS of one gpu.func: its workgroup attributions and the
    workgroup-space memref.globals it references."""
    inputs = len(ir.FunctionType(ir.TypeAttr(kernel.attributes["function_type"]).value).inputs)
    attributions = ir.IntegerAttr(kernel.attributes["workgroup_attributions"]).value \
        if "workgroup_attributions" in kernel.attributes else 0
    entry = kernel.regions[0].blocks[0]
    total = sum(workgroup_bytes(entry.arguments[inputs + i].type) or 0 for i in range(attributions))
    used_globals = {
        ir.FlatSymbolRefAttr(op.attributes["name"]).value
        for op in walk(kernel) if op.name == "memref.get_global"
    }
    scope = kernel.parent
    for op in walk(scope) if scope is not None else ():
        if op.name == "memref.global" and ir.StringAttr(op.attributes["sym_name"]).value in used_globals:
            total += workgroup_bytes(ir.TypeAttr(op.attributes["type"]).value) or 0
    return total


def _element_type(value: ir.Value) -> ir.Type:
    if isinstance(value.type, ir.VectorType):
        return value.type.element_type
    return value.type


@dataclass(frozen=True)
class AmdgpuCheckResources(TilePass):
    """Checks GPU-level kernels against the target's LDS, workgroup and fp8 limits."""

    name: ClassVar[str] = "amdgpu-check-resources"
    summary: ClassVar[str] = "check gpu.func kernels against the target's LDS, workgroup size and fp8 formats"

    target: str = ""

    def run(self, module: ir.Operation, state: PassState) -> None:
        problems = gpu_input_problems(module)
        for op, message in problems:
            state.error(op, message)
        if problems:  # the checks below read the sizes refused above
            return
        target = resolve_target(module, self.target or None)
        chip = target.name
        shared_limit = target.memory.shared_bytes_per_workgroup
        thread_limit = target.compute.max_threads_per_workgroup
        fp8_formats = target.matrix.fp8_formats
        for op in walk(module):
            if op.name == "gpu.func" and "gpu.kernel" in op.attributes:
                name = ir.StringAttr(op.attributes["sym_name"]).value
                needed = kernel_lds_bytes(op, module)
                if not is_unknown(shared_limit) and needed > shared_limit:
                    state.error(op, f"kernel '{name}' needs {needed} bytes of LDS, {chip} allows {shared_limit}")
                if "known_block_size" in op.attributes and not is_unknown(thread_limit):
                    threads = math.prod(ir.DenseI32ArrayAttr(op.attributes["known_block_size"]))
                    if threads > thread_limit:
                        state.error(
                            op, f"kernel '{name}' needs {threads} threads per workgroup, {chip} allows {thread_limit}"
                        )
            elif op.name == "amdgpu.mfma" and not is_unknown(fp8_formats):
                for operand in list(op.operands)[:2]:
                    element = str(_element_type(operand))
                    if element in FP8_KIND and element not in fp8_formats:
                        takes = ", ".join(fp8_formats) if fp8_formats else "no fp8 at all"
                        state.error(
                            op,
                            f"{chip} matrix instructions take {takes}, not {element}; convert the "
                            f"operands (arith.extf/truncf) or compile for a chip that reads {element}",
                        )
                        break
