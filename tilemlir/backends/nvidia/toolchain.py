"""From tile IR (or GPU-level IR) to PTX and launch metadata, all in process.

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
import time
from dataclasses import dataclass, field
from pathlib import Path

from mlir import ir, passmanager

from tilemlir.backends.gpu_input import GpuCheckInput
from tilemlir.backends.nvidia import pipeline
from tilemlir.diagnostics import UserError
from tilemlir.irutil import walk
from tilemlir.passes.lower_to_gpu.api import KERNEL_ARGUMENTS_ATTR
from tilemlir.target.model import Target

DYNAMIC_SHARED_PREFIX = "__dynamic_shmem__"
DYNAMIC_SHARED_ALIGN = 1024  # the 128-byte swizzle's period (backends/nvidia/wgmma.py)


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
            dynamic = (op.attributes["tile.dynamic_shared_bytes"]  # noqa: SIM401 - no .get on MLIR attribute maps
                       if "tile.dynamic_shared_bytes" in op.attributes else None)
            kernels[name] = ir.IntegerAttr(dynamic).value if dynamic is not None else 0
            if KERNEL_ARGUMENTS_ATTR in op.attributes:
                specs = [json.loads(ir.StringAttr(a).value)
                         for a in ir.ArrayAttr(op.attributes[KERNEL_ARGUMENTS_ATTR])]
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
        for argument in arguments:
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


def make_dynamic_shared_extern(module: ir.Operation) -> None:
    """convert-gpu-to-nvvm gives the dynamic shared memory global internal
    linkage, and LLVM's NVPTX backend then demotes it to a one-byte local
    `.shared` variable; external linkage prints the `.extern .shared ... []`
    array that dynamic shared memory is (aligned to DYNAMIC_SHARED_ALIGN)."""
    external = ir.Attribute.parse("#llvm.linkage<external>")
    for op in walk(module):
        if op.name == "llvm.mlir.global":
            name = ir.StringAttr(op.attributes["sym_name"]).value
            if name.startswith(DYNAMIC_SHARED_PREFIX):
                op.attributes["linkage"] = external
                # Static shared variables (mbarriers) come first; TMA boxes with
                # the 128-byte swizzle need 1024-byte aligned addresses.
                op.attributes["alignment"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                                DYNAMIC_SHARED_ALIGN)


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


def lower_to_ptx(module: ir.Operation, target: Target, seconds: dict | None = None) -> str:
    """GPU-level IR (in place) -> PTX text."""
    from tilemlir.compiler import target_spec

    seconds = seconds if seconds is not None else {}
    context = module.context
    start = time.perf_counter()
    bits = index_bitwidth(module)
    with context:
        # Names, target attributes and sizes first: NVPTX aborts the process on
        # a symbol PTX cannot spell, and serialization reads a target's `link` files.
        check = GpuCheckInput(target=target_spec(target))
        pm = passmanager.PassManager("builtin.module", context=context)
        pm.add(check.as_mlir_callable(), name=check.name, argument=check.name,
               description=check.summary)
        pm.run(module)
        passmanager.PassManager.parse(pipeline.gpu_to_nvvm_pipeline(target.name, index_bits=bits)).run(module)
        make_dynamic_shared_extern(module)
    seconds["gpu-to-nvvm"] = time.perf_counter() - start
    start = time.perf_counter()
    with context:
        passmanager.PassManager.parse(f"builtin.module({pipeline.TO_BINARY})").run(module)
    seconds["ptx"] = time.perf_counter() - start
    return binary_assembly(module)


def compile_to_ptx(module: ir.Operation, target: Target, tiling: str = "",
                   select: str = "", passes: str = "") -> PtxKernel:
    """tile IR or GPU-level IR (compiled in place) -> PTX and launch metadata.
    `tiling`: tile-tiling options ("block=128,128,64 threads=256 stages=3");
    `select`: tile-select-mma options ("prefer=wgmma" for the Hopper path);
    `passes`: any tile pass's options ("tile-lower-to-gpu{tma-copies=true}")."""
    from tilemlir.compiler import has_tile_ops, target_spec
    from tilemlir.passes import build_pipeline

    seconds: dict[str, float] = {}
    context = module.context
    if has_tile_ops(module):
        start = time.perf_counter()
        with context:
            build_pipeline("tile-verify", context=context).run(module)
            build_pipeline(pipeline.tile_pipeline(tiling=tiling, select=select, passes=passes),
                           context=context,
                           overrides={"target": target_spec(target)}).run(module)
        seconds["tile"] = time.perf_counter() - start
    gpu_ir = module.get_asm()
    metadata = launch_metadata(module, target)
    ptx = lower_to_ptx(module, target, seconds)
    return PtxKernel(ptx, metadata, gpu_ir, seconds)


NVIDIA_EMITS = ("tile", "gpu", "ptx")


def compile_module_nvidia(module: ir.Operation, target: Target, emit: str, *, source=None,
                          seconds: dict | None = None, report: bool = False, tiling: str = "",
                          select: str = "", passes: str = ""):
    """`tilemlir.compile` / tile-compile for an nvidia target: stages tile, gpu
    and ptx (the PTX text; `result.report` holds the launch metadata and the
    counts of matrix, ldmatrix and cp.async instructions)."""
    from tilemlir.compiler import (
        CompileError,
        CompileResult,
        _finish,
        _Stages,
        has_gpu_module,
        has_tile_ops,
        target_spec,
    )
    from tilemlir.diagnostics import Diag, collect_diagnostics
    from tilemlir.passes import build_pipeline

    if emit not in NVIDIA_EMITS:
        raise UserError(f"--emit {emit} is not a stage of the nvidia backend "
                        f"(choose from {', '.join(NVIDIA_EMITS)})")
    result = CompileResult(target, emit)
    stages = _Stages(module, target, source)
    stages.seconds.update(seconds or {})
    start = time.perf_counter() - sum(stages.seconds.values())
    diags: list = []
    spec = target_spec(target)
    with collect_diagnostics(stages.context, diags, source):
        with stages.stage("tile-verify"):
            stages.run_pm(build_pipeline("tile-verify", context=stages.context))
        if has_tile_ops(module):
            with stages.stage("tile"):
                stages.run_pm(build_pipeline(
                    pipeline.tile_pipeline(stop_before=pipeline.EMIT_TILE_BEFORE, tiling=tiling,
                                           select=select, passes=passes),
                    context=stages.context, overrides={"target": spec}))
            result.artifacts["tile"] = stages.asm()
            if emit == "tile":
                return _finish(result, stages, start)
            rest = pipeline.tile_pipeline(passes=passes, start_at=pipeline.EMIT_TILE_BEFORE)
            with stages.stage("gpu"):
                stages.run_pm(build_pipeline(rest, context=stages.context, overrides={"target": spec}))
        elif not has_gpu_module(module) or emit == "tile":
            raise CompileError([Diag("error", "nothing to compile for --emit "
                                     f"{emit}: the input has no tile ops"
                                     + ("" if has_gpu_module(module) else " and no gpu.module"),
                                     source.name if source else "")], source)
        result.artifacts["gpu"] = stages.asm()
        if emit == "gpu" and not report:
            return _finish(result, stages, start)
        metadata = launch_metadata(module, target)
        with stages.stage("ptx"):
            ptx = lower_to_ptx(module, target, stages.seconds)
        result.artifacts["ptx"] = ptx
    if diags and any(d.severity == "error" for d in diags):
        raise CompileError(diags, source)
    result.report = {
        "target": str(target), **metadata,
        "ptx_instructions": {name: ptx.count(name) for name in
                             ("mma.sync", "ldmatrix", "cp.async.cg", "cp.async.wait_group", "bar.sync",
                              "wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait")},
    }
    return _finish(result, stages, start)
