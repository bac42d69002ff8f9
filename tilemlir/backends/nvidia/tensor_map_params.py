"""nvidia-tensor-maps-by-value: a kernel's TMA tensor maps as `__grid_constant__` parameters.

tile-lower-to-gpu gives a kernel one `!llvm.ptr` argument per tensor map its
TMA copies read (wgmma.py, tma_store.py; `tile.kernel_arguments` says which).
Passed as a pointer, the map must live in device memory: the launcher would
allocate and fill it with a synchronous copy for each new tensor address, and
keep it. Passed by value, the 128-byte map is a kernel parameter, as CUDA
C++'s `const __grid_constant__ CUtensorMap` is: the launcher encodes it on the
host into the parameter buffer (runtime/cuda_launch.py), a CUDA graph records
it with the launch, and nothing is allocated. The TMA instructions take the
parameter's generic address (`cvta.param`, PTX ISA 7.7, sm_70 and later).

Input invariant: the LLVM and NVVM dialects (after convert-gpu-to-nvvm, with
bare-pointer kernel arguments: a kernel's argument i is its gpu.func's
argument i). Output: every kernel argument that `tile.kernel_arguments` names
as a tensor map is `llvm.byval` of 128 bytes, `llvm.align` 64 and
`nvvm.grid_constant`, which NVPTX prints as `.param .align 64 .b8 NAME[128]`;
nothing else changes. No options.

    llvm.func @k(%arg0: !llvm.ptr, %arg1: !llvm.ptr) attributes {nvvm.kernel,
        tile.kernel_arguments = ["{\\"position\\": 1, \\"tensor_map\\": {...}}"]}
    // becomes
    llvm.func @k(%arg0: !llvm.ptr, %arg1: !llvm.ptr {llvm.align = 64 : i64,
        llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}) attributes {...}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.dialects import attributes
from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass

# CUtensorMap (cuda.h): 128 bytes, 64-byte aligned.
TENSOR_MAP_BYTES, TENSOR_MAP_ALIGN = 128, 64
BY_VALUE = (f"{{llvm.align = {TENSOR_MAP_ALIGN} : i64, "
            f"llvm.byval = !llvm.array<{TENSOR_MAP_BYTES} x i8>, nvvm.grid_constant}}")


def tensor_map_positions(function: ir.Operation) -> list[int]:
    """The argument positions of `function` that `tile.kernel_arguments` names as tensor maps."""
    entries = attributes.KERNEL_ARGUMENTS.read(function) or []
    return sorted(spec["position"] for spec in map(json.loads, entries) if "tensor_map" in spec)


def pass_tensor_maps_by_value(module: ir.Operation, state: PassState) -> None:
    """Marks every tensor-map argument of every kernel of `module` by value
    (module docstring); a position that is not a bare pointer argument is
    the compiler's own error, reported at its function."""
    by_value = ir.Attribute.parse(BY_VALUE, module.context)
    for op in walk(module):
        if op.name != "llvm.func" or "nvvm.kernel" not in op.attributes:
            continue
        positions = tensor_map_positions(op)
        if not positions:
            continue
        arguments = op.regions[0].blocks[0].arguments
        old = list(ir.ArrayAttr(op.attributes["arg_attrs"])) if "arg_attrs" in op.attributes else []
        old += [ir.DictAttr.get({}, module.context)] * (len(arguments) - len(old))
        for position in positions:
            if position >= len(arguments) or str(arguments[position].type) != "!llvm.ptr" or len(old[position]):
                state.error(op, f"internal error in pass nvidia-tensor-maps-by-value: argument {position} "
                                f"of this kernel is named a tensor map in {attributes.KERNEL_ARGUMENTS.name} "
                                "but is not a bare !llvm.ptr argument without attributes")
                break
            old[position] = by_value
        else:
            op.attributes["arg_attrs"] = ir.ArrayAttr.get(old, module.context)


@dataclass(frozen=True)
class NvidiaTensorMapsByValue(TilePass):
    """Passes TMA tensor maps as 128-byte `__grid_constant__` parameters (module docstring)."""

    name: ClassVar[str] = "nvidia-tensor-maps-by-value"
    summary: ClassVar[str] = ("pass each kernel's TMA tensor maps by value, as 128-byte grid-constant "
                              "parameters (.param .align 64 .b8 [128]) that the launcher encodes")

    def run(self, module: ir.Operation, state: PassState) -> None:
        pass_tensor_maps_by_value(module, state)
