"""PTX and launch metadata, all in process: what the nvidia stages (stages.py) use.

    kernel = compile_to_ptx(module, target)            # module is compiled in place
    kernel.ptx                                          # PTX text for cuModuleLoadData
    kernel.metadata                                     # launches, grids, arguments (JSON-able)
    kernel.save("out/gemm")                             # gemm.ptx + gemm.json

The PyPI LLVM has the NVPTX backend, so `gpu-module-to-binary{format=isa}`
gives PTX without any external tool; ptxas runs later, in the CUDA driver
(`tilemlir.runtime.cuda_launch`). The metadata is what a launcher needs
besides the PTX: for every `gpu.launch_func` of the entry function, in order,
the kernel name, grid, block, dynamic shared memory bytes and which entry
arguments it takes (kernel arguments are bare pointers).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from mlir import ir

from tilemlir.backends.nvidia.dynamic_arguments import dynamic_extents, has_identity_layout
from tilemlir.diagnostics import UserError
from tilemlir.dialects import attributes
from tilemlir.irutil import walk
from tilemlir.targets.model import Target


@dataclass
class PtxKernel:
    ptx: str
    metadata: dict
    gpu_ir: str = ""
    seconds: dict[str, float] = field(default_factory=dict)

    def save(self, stem: str | Path) -> tuple[Path, Path]:
        stem = Path(stem)
        ptx_path, json_path = stem.with_suffix(".ptx"), stem.with_suffix(".json")
        ptx_path.write_text(self.ptx, encoding="utf-8")
        meta = dict(self.metadata, ptx=ptx_path.name)
        json_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        return ptx_path, json_path


class LaunchError(UserError):
    """What the launcher cannot pass, at the op (or argument location) that needs it."""

    def __init__(self, op: ir.Operation | ir.Location, message: str):
        super().__init__(message)
        self.op = op


def _constant(value: ir.Value, op: ir.Operation) -> int:
    owner = value.owner
    if isinstance(owner, ir.OpView | ir.Operation) and owner.name == "arith.constant":
        return ir.IntegerAttr(owner.attributes["value"]).value
    raise LaunchError(op, "nvidia: launch sizes must be constants")


# Host view ops the launcher sees through: their result is the source's memory
# (the same base pointer); the view's shape, strides and static offset are in
# its type, which the kernel argument has, and the bare-pointer convention
# applies that offset inside the kernel (MemRefDescriptor::fromStaticShape).
HOST_VIEWS = ("memref.subview", "memref.collapse_shape", "memref.expand_shape",
              "memref.reinterpret_cast", "memref.cast")
DYNAMIC_STRIDE = ir.ShapedType.get_dynamic_stride_or_offset()
# Scalar argument types the launcher passes by value (cuda_launch.SCALAR_TYPES).
SCALAR_TYPES = ("f64", "f32", "f16", "i64", "i32", "i16", "i8", "index")


def host_origin(value: ir.Value, arguments: list) -> tuple[int, list[ir.Operation]]:
    """(host argument index, view ops from it to `value`, outermost last) of a
    kernel operand, or (-1, ...) when it is not made from a host argument."""
    views = []
    while value not in arguments:
        owner = value.owner
        if not isinstance(owner, ir.OpView | ir.Operation) or owner.name not in HOST_VIEWS:
            return -1, views
        views.insert(0, owner.operation)
        value = owner.operands[0]
    return arguments.index(value), views


def _extents(value: ir.Value, origin: int, views: list[ir.Operation], arguments: list,
             op: ir.Operation) -> list[dict]:
    """The launcher's form of the dynamic extents of kernel operand `value`
    (dynamic_arguments.dynamic_extents), read from the host argument's
    runtime shape: through memref.cast only (the same shape)."""
    if not isinstance(value.type, ir.MemRefType):
        return []
    t = ir.MemRefType(value.type)
    strides, offset = t.get_strides_and_offset()
    if not has_identity_layout(t) and DYNAMIC_STRIDE in (*strides, offset):
        raise LaunchError(views[-1] if views else op,
                          f"nvidia: a view with a dynamic offset or strides ({value.type}) reaches "
                          "a kernel; the bare-pointer convention needs them static")
    axes = dynamic_extents(value.type)
    if not axes:
        return []
    if any(view.name != "memref.cast" for view in views):
        raise LaunchError(views[-1], f"nvidia: a host view of dynamic shape ({value.type}) "
                                     "reaches a kernel; the launcher knows the extents of the "
                                     "host arguments only (pass the argument itself)")
    if not has_identity_layout(value.type):
        raise LaunchError(op, f"nvidia: kernel operand of type {value.type}: a dynamic shape is "
                              "supported with the identity (row-major) layout only")
    source = ir.MemRefType(arguments[origin].type).shape
    dynamic = ir.ShapedType.get_dynamic_size()
    # A cast from a static shape: the extent is the source's.
    return [{"extent": {"argument": origin, "axis": axis}} if source[axis] == dynamic
            else {"constant": source[axis]} for axis in axes]


def _parameter(argument: ir.BlockArgument, position: int, function: str) -> dict:
    t = argument.type
    if isinstance(t, ir.MemRefType):
        memref_type = ir.MemRefType(t)
        dynamic = ir.ShapedType.get_dynamic_size()
        if not has_identity_layout(memref_type):
            raise LaunchError(argument.location, f"nvidia: argument {position} of @{function} has "
                              f"type {t}; the launcher passes contiguous row-major memrefs only")
        return {"shape": [None if d == dynamic else d for d in memref_type.shape],
                "dtype": str(memref_type.element_type)}
    if str(t) in SCALAR_TYPES:
        return {"scalar": str(t)}
    raise LaunchError(argument.location, f"nvidia: argument {position} of @{function} has type "
                      f"{t}; the launcher passes memrefs and scalars of {', '.join(SCALAR_TYPES)}")


def launch_metadata(module: ir.Operation, target: Target) -> dict:
    """The entry functions' launches, read from GPU-level IR (after tile-lower-to-gpu).

    Per entry function: `arguments`, one per host argument ({"shape", "dtype"}
    for a memref, null for a dynamic extent; {"scalar": type} for a scalar),
    and `launches` in order: a host `gpu.memset` as {"memset": {"argument",
    "element_bytes", "bits"}} (the whole argument cleared to that pattern),
    and each kernel launch with its kernel, grid, block, dynamic shared
    bytes and `arguments`, one per kernel parameter: a host argument index (its
    device pointer, or a scalar's value), {"tensor_map": ...} (a TMA
    descriptor, wgmma.py), or, after the kernel's own operands, the dynamic
    extents nvidia-dynamic-memref-arguments adds ({"extent": {"argument": i,
    "axis": a}}: extent a of argument i's shape; {"constant": n} where a
    memref.cast made a static extent dynamic). `params` (each parameter's PTX type) is added by the
    ptx stage from the PTX (`entry_parameters`)."""
    kernels, added = {}, {}
    for op in walk(module):
        if op.name == "gpu.func":
            name = ir.StringAttr(op.attributes["sym_name"]).value
            kernels[name] = attributes.DYNAMIC_SHARED_BYTES.read(op) or 0
            arguments = attributes.KERNEL_ARGUMENTS.read(op)
            if arguments is not None:
                specs = [json.loads(text) for text in arguments]
                added[name] = {spec.pop("position"): spec for spec in specs}
    functions = []
    for op in walk(module):
        if op.name != "func.func" or not op.regions[0].blocks:
            continue
        function = ir.StringAttr(op.attributes["sym_name"]).value
        entry_block = op.regions[0].blocks[0]
        arguments = list(entry_block.arguments)
        launches = []
        for inner in walk(op):
            if inner.name == "gpu.memset":
                launches.append({"memset": _memset(inner, arguments)})
                continue
            if inner.name != "gpu.launch_func":
                continue
            kernel = str(inner.attributes["kernel"]).split("::")[-1].lstrip("@")
            operands = list(inner.operands)
            segments = list(ir.DenseI32ArrayAttr(inner.attributes["operandSegmentSizes"]))
            # async deps, grid x3, block x3, cluster x0/3, dynamic shared, kernel operands, object
            position = segments[0]
            grid = [_constant(v, inner) for v in operands[position:position + 3]]
            block = [_constant(v, inner) for v in operands[position + 3:position + 6]]
            kernel_operands = operands[sum(segments[:-2]):sum(segments[:-1])]
            indices, extents = [], []
            for position, value in enumerate(kernel_operands):
                spec = added.get(kernel, {}).get(position)
                if spec is not None:  # e.g. a TMA tensor map of another argument
                    indices.append(_host_positions(spec, kernel_operands, arguments, inner))
                    continue
                origin, views = host_origin(value, arguments)
                if origin < 0:
                    raise LaunchError(inner, f"nvidia: kernel operand {position} is computed on the "
                                             "host; the launcher passes host arguments (and views of "
                                             "them) only")
                indices.append(origin)
                extents += _extents(value, origin, views, arguments, inner)
            launches.append({"kernel": kernel, "grid": grid, "block": block,
                             "dynamic_shared_bytes": kernels.get(kernel, 0),
                             "arguments": indices + extents})
        if not launches:
            continue
        params = [_parameter(argument, position, function) for position, argument in enumerate(arguments)]
        functions.append({"entry": function, "arguments": params, "launches": launches})
    if not functions:
        raise UserError("nvidia: nothing to launch: no gpu.launch_func in any function")
    return {"target": str(target), "functions": functions}


# Float types whose bit pattern NumPy gives (others: +0 only).
_FLOAT_BITS = {"f32": (np.float32, np.uint32), "f16": (np.float16, np.uint16)}


def _memset(op: ir.Operation, arguments: list) -> dict:
    """A host `gpu.memset` as the launcher does it (cuMemsetD8/D16/D32Async
    over a whole argument): the argument, the element's bytes and bit pattern."""
    if len(op.operands) != 2 or len(op.results):
        raise LaunchError(op, "nvidia: gpu.memset with async tokens is not supported")
    destination, value = op.operands
    if destination not in arguments:
        raise LaunchError(op, "nvidia: gpu.memset of a view or of memory the host made; the launcher "
                              "clears whole host arguments only")
    element = ir.MemRefType(destination.type).element_type
    width = element.width if isinstance(element, ir.IntegerType | ir.FloatType) else 0
    owner = value.owner
    if width not in (8, 16, 32) or not isinstance(owner, ir.OpView | ir.Operation) \
            or owner.name != "arith.constant":
        raise LaunchError(op, f"nvidia: gpu.memset of {element} by a value the launcher cannot "
                              "encode (a constant of 8, 16 or 32 bits)")
    attr = owner.attributes["value"]
    if isinstance(attr, ir.FloatAttr):
        number = np.array(ir.FloatAttr(attr).value)
        if str(element) in _FLOAT_BITS:
            float_type, bits_type = _FLOAT_BITS[str(element)]
            bits = int(number.astype(float_type).view(bits_type))
        elif number == 0 and not np.signbit(number):
            bits = 0
        else:
            raise LaunchError(op, f"nvidia: gpu.memset of {element} by a value other than +0 is not supported")
    else:
        bits = ir.IntegerAttr(attr).value & ((1 << width) - 1)
    return {"argument": arguments.index(destination), "element_bytes": width // 8, "bits": bits}


def _host_positions(spec, kernel_operands: list, arguments: list, launch: ir.Operation):
    """A kernel argument's metadata with its references to other kernel
    arguments ({"kernel_argument": i}) turned into host argument indices
    ({"argument": j}): what the launcher reads."""
    if isinstance(spec, dict):
        if set(spec) == {"kernel_argument"}:
            value = kernel_operands[spec["kernel_argument"]]
            if value not in arguments:
                raise LaunchError(launch, "nvidia: a TMA tensor map needs its source to be an "
                                          "argument of the host function, not a view of one")
            return {"argument": arguments.index(value)}
        return {key: _host_positions(v, kernel_operands, arguments, launch) for key, v in spec.items()}
    if isinstance(spec, list):
        return [_host_positions(v, kernel_operands, arguments, launch) for v in spec]
    return spec


# `.param .u64 .ptr .align 1 name_param_0,` in a PTX `.entry` signature.
_ENTRY = re.compile(r"\.entry\s+(\w+)\s*\((.*?)\)", re.DOTALL)


def entry_parameters(ptx: str) -> dict[str, list[str]]:
    """Each `.entry`'s parameter types as PTX spells them ("u64.ptr", "f32",
    "u32", "b8[128]" for a byte array such as a TMA map): how wide each value
    the launcher passes is (an `index` scalar is 32 or 64 bits by the index
    width, section `index_bitwidth`)."""
    entries = {}
    for match in _ENTRY.finditer(ptx):
        types = []
        for declaration in filter(None, (d.strip() for d in match.group(2).split(","))):
            words = declaration.split()
            # .param [.align N] .TYPE [.ptr [.space] [.align N]] NAME[SIZE]
            qualifiers = [w.lstrip(".") for w in words[1:-1] if w.startswith(".")]
            kind = next(q for q in qualifiers if q not in ("align", "ptr", "global", "const",
                                                          "shared", "local"))
            if "ptr" in qualifiers:
                kind += ".ptr"
            if "[" in words[-1]:
                kind += words[-1][words[-1].index("["):]
            types.append(kind)
        entries[match.group(1)] = types
    return entries


def add_parameter_types(metadata: dict, ptx: str) -> None:
    """Gives every launch of `metadata` its kernel's PTX parameter types
    (`params`), which must be one per argument the launcher passes."""
    entries = entry_parameters(ptx)
    for function in metadata["functions"]:
        for launch in function["launches"]:
            if "memset" in launch:
                continue
            params = entries.get(launch["kernel"])
            if params is None or len(params) != len(launch["arguments"]):
                found = "no such .entry" if params is None else f"{len(params)} parameters"
                raise UserError(f"nvidia: internal error: kernel {launch['kernel']} is launched with "
                                f"{len(launch['arguments'])} arguments, its PTX has {found}")
            launch["params"] = params


def binary_assembly(module: ir.Operation) -> str:
    from mlir.dialects import gpu

    texts = []
    for op in walk(module):
        if op.name == "gpu.binary":
            for obj in ir.ArrayAttr(op.attributes["objects"]):
                texts.append(gpu.ObjectAttr(obj).object.decode("utf-8"))
    if len(texts) != 1:
        raise UserError(f"nvidia: expected one gpu.module to serialize, found {len(texts)}")
    return texts[0]


def index_bitwidth(module: ir.Operation) -> int:
    """32 when every memref in the module is static with fewer than 2^31
    elements (no offset can overflow), else 64."""
    for op in walk(module):
        for value in [*op.results, *(a for r in op.regions for b in r.blocks for a in b.arguments)]:
            if not isinstance(value.type, ir.MemRefType):
                continue
            shape = ir.MemRefType(value.type).shape
            if any(d == ir.ShapedType.get_dynamic_size() for d in shape):
                return 64
            count = 1
            for d in shape:
                count *= d
            if count >= 2 ** 31:
                return 64
    return 32


def compile_to_ptx(module: ir.Operation, target: Target, tiling: str = "",
                   select: str = "", passes: str = "") -> PtxKernel:
    """tile IR or GPU-level IR (compiled in place) -> PTX and launch metadata,
    through the nvidia stages. `tiling`: tile-tiling options ("block=128,128,64
    threads=256 stages=3"); `select`: tile-select-mma options ("prefer=wgmma"
    for the Hopper path); `passes`: any tile pass's options
    ("tile-lower-to-gpu{tma-copies=true}")."""
    from tilemlir.backends.driver import Compilation, CompileOptions, run_stages

    options = CompileOptions(tiling=tiling, select=select, passes=passes)
    job = run_stages(Compilation(module, target, "ptx", options))
    metadata = {key: job.report[key] for key in ("target", "functions")}
    return PtxKernel(job.artifacts["ptx"], metadata, job.artifacts["gpu"], job.seconds)
