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
from dataclasses import dataclass, field
from pathlib import Path

from mlir import ir

from tilemlir.diagnostics import UserError
from tilemlir.dialects import attributes
from tilemlir.irutil import walk
from tilemlir.target.model import Target


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


def _constant(value: ir.Value) -> int:
    owner = value.owner
    if isinstance(owner, ir.OpView | ir.Operation) and owner.name == "arith.constant":
        return ir.IntegerAttr(owner.attributes["value"]).value
    raise UserError("nvidia: launch sizes must be constants")


def launch_metadata(module: ir.Operation, target: Target) -> dict:
    """The entry functions' launches, read from GPU-level IR (after tile-lower-to-gpu)."""
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
        entry_block = op.regions[0].blocks[0]
        arguments = list(entry_block.arguments)
        launches = []
        for inner in walk(op):
            if inner.name != "gpu.launch_func":
                continue
            kernel = str(inner.attributes["kernel"]).split("::")[-1].lstrip("@")
            operands = list(inner.operands)
            segments = list(ir.DenseI32ArrayAttr(inner.attributes["operandSegmentSizes"]))
            # async deps, grid x3, block x3, cluster x0/3, dynamic shared, kernel operands, object
            position = segments[0]
            grid = [_constant(v) for v in operands[position:position + 3]]
            block = [_constant(v) for v in operands[position + 3:position + 6]]
            kernel_operands = operands[sum(segments[:-2]):sum(segments[:-1])]
            indices = []
            for position, value in enumerate(kernel_operands):
                spec = added.get(kernel, {}).get(position)
                if spec is not None:  # e.g. a TMA tensor map of another argument
                    indices.append(_host_positions(spec, kernel_operands, arguments))
                elif value in arguments:
                    indices.append(arguments.index(value))
                else:
                    raise UserError("nvidia: kernel arguments must be arguments of the host function")
            launches.append({"kernel": kernel, "grid": grid, "block": block,
                             "dynamic_shared_bytes": kernels.get(kernel, 0), "arguments": indices})
        if not launches:
            continue
        params = []
        for position, argument in enumerate(arguments):
            if not isinstance(argument.type, ir.MemRefType):
                # The launcher (runtime/cuda_launch.py) passes device pointers only.
                name = ir.StringAttr(op.attributes["sym_name"]).value
                raise UserError(f"nvidia: argument {position} of @{name} has type {argument.type}; "
                                "the nvidia launcher passes memrefs only, so a scalar argument "
                                "is not supported yet (pass it as a memref of one element)")
            memref_type = ir.MemRefType(argument.type)
            params.append({"shape": list(memref_type.shape),
                           "dtype": str(memref_type.element_type)})
        functions.append({"entry": ir.StringAttr(op.attributes["sym_name"]).value,
                          "arguments": params, "launches": launches})
    if not functions:
        raise UserError("nvidia: nothing to launch: no gpu.launch_func in any function")
    return {"target": str(target), "functions": functions}


def _host_positions(spec, kernel_operands: list, arguments: list):
    """A kernel argument's metadata with its references to other kernel
    arguments ({"kernel_argument": i}) turned into host argument indices
    ({"argument": j}): what the launcher reads."""
    if isinstance(spec, dict):
        if set(spec) == {"kernel_argument"}:  # checked above to be a host argument
            return {"argument": arguments.index(kernel_operands[spec["kernel_argument"]])}
        return {key: _host_positions(v, kernel_operands, arguments) for key, v in spec.items()}
    if isinstance(spec, list):
        return [_host_positions(v, kernel_operands, arguments) for v in spec]
    return spec


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
    from tilemlir.backends.stages import Compilation, CompileOptions, run_stages

    options = CompileOptions(tiling=tiling, select=select, passes=passes)
    job = run_stages(Compilation(module, target, "ptx", options))
    metadata = {key: job.report[key] for key in ("target", "functions")}
    return PtxKernel(job.artifacts["ptx"], metadata, job.artifacts["gpu"], job.seconds)
