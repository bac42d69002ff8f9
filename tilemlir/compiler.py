"""tilemlir.compile: tile IR (or GPU-level IR) to HSACO, stage by stage.

(This module is `compiler`, not `compile`: a submodule named like the function
would replace `tilemlir.compile` with the module once imported.)

    import tilemlir
    result = tilemlir.compile(text, target="amdgpu:gfx942", emit="isa")
    result.artifact                 # the .s text (bytes for emit="hsaco")
    result.artifacts["llvm"]        # every stage reached: tile, gpu, llvm, isa, hsaco
    result.report                   # the --report JSON as a dict (once the ISA exists)

Stages, each timed in `report["compile_seconds"]`:

    parse -> tile-verify -> tile -> gpu -> gpu-to-llvm -> translate -> llvm-opt
          -> llc -> llvm-mc -> ld.lld

`tile` and `gpu` run TILE_PIPELINE (backends/amdgpu/pipeline.py); input that is
already GPU-level IR (a gpu.module and no tile ops) starts at gpu-to-llvm. After
llc the kernel's usage is checked against the target (`report.check_resources`).
Failures raise `CompileError` (located diagnostics, as tile-opt prints them) or
another `UserError` (a missing or failing LLVM tool).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from mlir import ir, passmanager

from tilemlir.backends.amdgpu import pipeline, toolchain
from tilemlir.backends.amdgpu.gpu_checks import AmdgpuCheckResources
from tilemlir.backends.amdgpu.report import ResourceError, build_report, check_resources
from tilemlir.diagnostics import (
    Chunk,
    Diag,
    ParseFailure,
    SourceBuffer,
    UserError,
    collect_diagnostics,
    file_position,
    format_diag,
    mlir_error_diags,
    parse_chunk,
    region_nesting_error,
)
from tilemlir.irutil import walk
from tilemlir.target.model import Target

EMITS = ("tile", "gpu", "llvm", "isa", "hsaco", "maca", "ptx")
DEFAULT_TARGET = "amdgpu:gfx942"
FAMILY = "amdgpu"
# The stages of the metax family's pipeline (backends/metax/pipeline.py).
METAX_EMITS = ("tile", "gpu", "maca")


class CompileError(UserError):
    """Compilation failed with diagnostics (`diags`), formatted like tile-opt's."""

    def __init__(self, diags: list[Diag], source: SourceBuffer | None = None):
        self.diags = diags
        self.source = source
        super().__init__("".join(format_diag(d, source) for d in diags).rstrip("\n"))


@dataclass(frozen=True)
class CompileOptions:
    """What the user asked for, apart from the target and the emitted stage."""

    report: bool = False  # go on to the ISA for the report even when emitting an earlier stage
    allow_spills: bool = False  # spilling to scratch is an error unless allowed (--allow-spills)
    tiling: str = ""  # tile-tiling's options, e.g. "block=128,128,64 threads=256 stages=2"
    select: str = ""  # tile-select-mma's options, e.g. "prefer=wgmma"
    # Options of any tile pass, as a pipeline: "tile-lower-to-gpu{direct-lds-loads=true}".
    passes: str = ""


@dataclass
class CompileResult:
    target: Target
    emit: str
    artifacts: dict[str, str | bytes] = field(default_factory=dict)
    report: dict | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def artifact(self) -> str | bytes:
        """The requested stage's output."""
        return self.artifacts[self.emit]


# --------------------------------------------------------------------------
# Targets and pipelines
# --------------------------------------------------------------------------


def target_spec(target: Target) -> str:
    """Text that names `target` in a pass option: `family:name` when the
    registry gives back this very descriptor, else the file it came from."""
    from tilemlir.target import get_target

    try:
        if get_target(str(target)) == target:
            return str(target)
    except UserError:
        pass
    return target.path or str(target)


def _require_family(target: Target) -> None:
    if target.family != FAMILY:
        raise UserError(
            f"no compile pipeline for {target} (family '{target.family}'); "
            f"tile-compile compiles for the {FAMILY} family"
        )


def missing_tile_passes() -> list[str]:
    from tilemlir.passes import is_tile_pass

    return [name for name in pipeline.TILE_PIPELINE if name.startswith("tile-") and not is_tile_pass(name)]


def _tile_pm(text: str, spec: str, context: ir.Context) -> passmanager.PassManager:
    from tilemlir.passes import build_pipeline

    return build_pipeline(text, context=context, overrides={"target": spec})


def _gpu_to_llvm_pm(target: Target, context: ir.Context) -> passmanager.PassManager:
    from tilemlir.passes import add_to

    check = AmdgpuCheckResources(target=target_spec(target))
    pm = passmanager.PassManager("builtin.module", context=context)
    pm.add(check.as_mlir_callable(), name=check.name, argument=check.name, description=check.summary)
    return add_to(pm, pipeline.gpu_to_llvm_pipeline(target.name), context=context)


def _tile_stage_text(text: str, spec: str) -> str:
    """A tile-stage pipeline as tile-opt -p takes it, the target option spelled out."""
    from tilemlir.passes import is_tile_pass, make_pass
    from tilemlir.passes.pipeline import parse_pipeline

    def element(step) -> str:
        if not is_tile_pass(step.name):
            return step.name + (f"{{{step.options}}}" if step.options else "")
        return str(make_pass(step.name, step.options, {"target": spec}))

    return f"builtin.module({','.join(element(step) for step in parse_pipeline(text))})"


def describe_pipeline(target: Target, *, tile_input: bool, tiling: str = "", select: str = "",
                      passes: str = "") -> str:
    """Every stage's pipeline or command line, one per line, in forms that
    reproduce it: `tile-opt -p` for the tile stages, `mlir-opt --pass-pipeline`
    for gpu-to-llvm (after the Python resource check), shell commands after."""
    spec = target_spec(target)
    lines = []
    tail = None
    tile_steps = pipeline
    if target.family == "metax":
        from tilemlir.backends.metax.pipeline import describe

        tail = describe(target)
    if target.family == "nvidia":
        from tilemlir.backends.gpu_input import GpuCheckInput
        from tilemlir.backends.nvidia import pipeline as nvidia_pipeline

        tile_steps = nvidia_pipeline
        nvvm = nvidia_pipeline.gpu_to_nvvm_pipeline(target.name)
        binary = nvidia_pipeline.TO_BINARY
        tail = [(f"gpu-to-nvvm: {GpuCheckInput()}, then {nvvm} "
                 "(index-bitwidth 32 when every memref is under 2^31 elements)"),
                f"ptx: builtin.module({binary}) (in process; ptxas runs in the CUDA driver at load)"]
    if tile_input:
        first = tile_steps.tile_pipeline(stop_before=tile_steps.EMIT_TILE_BEFORE, tiling=tiling,
                                         select=select, passes=passes)
        rest = tile_steps.tile_pipeline(passes=passes, start_at=tile_steps.EMIT_TILE_BEFORE)
        lines.append(f"tile: {_tile_stage_text(first, spec)}")
        lines.append(f"gpu: {_tile_stage_text(rest, spec)}")
    else:
        lines.append("tile, gpu: skipped (the input is GPU-level IR)")
    if tail is not None:
        return "\n".join(lines + tail) + "\n"
    lines.append(f"gpu-to-llvm: {AmdgpuCheckResources(target=spec)}, then {pipeline.gpu_to_llvm_pipeline(target.name)}")
    lines.append("translate: in process (mlir-translate --mlir-to-llvmir) of the gpu.module's body")
    lines.extend(f"{stage}: {command}" for stage, command in toolchain.commands(target.name).items())
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# The stages
# --------------------------------------------------------------------------


class _Stages:
    """Runs and times the stages on one parsed module."""

    def __init__(self, module: ir.Operation, target: Target, source: SourceBuffer | None):
        self.module = module
        self.target = target
        self.source = source
        self.context = module.context
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        except ir.MLIRError as error:
            raise CompileError(mlir_error_diags(error, self.source), self.source) from None
        finally:
            self.seconds[name] = time.perf_counter() - start

    def run_pm(self, pm: passmanager.PassManager) -> None:
        with self.context:
            pm.run(self.module)

    def asm(self) -> str:
        return self.module.get_asm() + "\n"

    def file_error(self, message: str) -> CompileError:
        name = self.source.name if self.source else ""
        return CompileError([Diag("error", message, name)], self.source)


# LLVM's loop passes and llc grow faster than linearly with loop depth (measured
# on gfx942: 256 nested loops 3.5 s and 0.25 GB; 400 nested loops 8 s and 0.45 GB;
# 2000 exhausted 24 GB), so deeper input is refused before compiling.
MAX_REGION_NESTING = 256

# Families whose artefact holds one gpu.module (one HSACO, one PTX module);
# metax emits every kernel function into one C++ file, and the tile and gpu
# stages (and the emulator behind them) take any number.
ONE_KERNEL_FUNCTION_FAMILIES = ("amdgpu", "nvidia")


def _require_one_kernel_function(module: ir.Operation, target: Target,
                                 source: SourceBuffer | None) -> None:
    """Refuses, before anything is compiled, a module whose functions would
    lower to several gpu.modules: each function holding tile ops becomes one,
    and hand-written gpu.modules count as they are."""
    units = []
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "gpu.module" or (op.name == "func.func" and has_tile_ops(op)):
            units.append(op)
    if len(units) <= 1:
        return
    with module.context:  # symbol names printed as MLIR prints them (quoted and escaped if need be)
        names = ", ".join(str(ir.FlatSymbolRefAttr.get(ir.StringAttr(op.attributes["sym_name"]).value))
                          for op in units)
    file, line, col = file_position(units[1].location)
    if source is not None:
        file, line, col = source.map_position(file, line, col)
    raise CompileError([Diag(
        "error",
        f"{target.family} compiles one kernel function per module into one artefact, and this module "
        f"has {len(units)} ({names}); put each in a file of its own",
        file, line, col)], source)


def has_tile_ops(module: ir.Operation) -> bool:
    return any(op.name.startswith("tile.") for op in walk(module))


def has_gpu_module(module: ir.Operation) -> bool:
    return any(op.name == "gpu.module" for op in walk(module))


def compile_module(
    module: ir.Operation,
    target: Target,
    emit: str = "hsaco",
    options: CompileOptions | None = None,
    *,
    source: SourceBuffer | None = None,
    seconds: dict[str, float] | None = None,
) -> CompileResult:
    """Compiles a parsed builtin.module in place (callers pass a copy they own).
    `seconds` carries stage times measured before (the parse)."""
    from tilemlir.passes import build_pipeline

    options = options or CompileOptions()
    if emit not in EMITS:
        raise UserError(f"unknown --emit '{emit}' (choose from {', '.join(EMITS)})")
    too_deep = region_nesting_error(module, MAX_REGION_NESTING, source)
    if too_deep is not None:
        raise CompileError([too_deep], source)
    if target.family in ONE_KERNEL_FUNCTION_FAMILIES and (emit not in ("tile", "gpu") or options.report):
        _require_one_kernel_function(module, target, source)  # the IR stages hold any number
    if target.family == "nvidia":  # its own stages: tile, gpu, ptx (backends/nvidia/toolchain.py)
        from tilemlir.backends.nvidia.toolchain import compile_module_nvidia

        return compile_module_nvidia(module, target, emit, source=source, seconds=seconds,
                                     report=options.report, tiling=options.tiling,
                                     select=options.select, passes=options.passes)
    if emit == "ptx":
        raise UserError(f"--emit ptx is for nvidia targets, not {target}")
    if emit == "maca" and target.family != "metax":
        raise UserError(f"--emit maca is for metax targets, not {target}")
    if target.family == "metax" and emit not in METAX_EMITS:
        raise UserError(f"--emit {emit} is not a stage of the metax pipeline "
                        f"(for {target}: {', '.join(METAX_EMITS)})")
    if target.family != "metax":
        _require_family(target)
    need_isa = emit in ("isa", "hsaco") or options.report
    result = CompileResult(target, emit)
    stages = _Stages(module, target, source)
    stages.seconds.update(seconds or {})
    start = time.perf_counter() - sum(stages.seconds.values())
    diags: list[Diag] = []
    with collect_diagnostics(stages.context, diags, source):
        with stages.stage("tile-verify"):
            stages.run_pm(build_pipeline("tile-verify", context=stages.context))
        _to_gpu(stages, result, emit, options.tiling, options.select, options.passes)
        lds_conflicts = _lds_conflicts(module)
        if target.family == "metax":
            _to_maca(stages, result, emit, options, diags)
            return _finish(result, stages, start)
        if emit in ("tile", "gpu") and not need_isa:
            return _finish(result, stages, start)
        with stages.stage("gpu-to-llvm"):
            stages.run_pm(_gpu_to_llvm_pm(target, stages.context))
        with stages.stage("translate"):
            device = toolchain.extract_device_module(module)
            leftover = toolchain.unconverted_ops(device)
            for op in leftover:
                op.location.emit_error(
                    f"'{op.name}' is not in the LLVM or ROCDL dialect after the amdgpu pipeline, "
                    "so it cannot be translated to LLVM IR"
                )
            if leftover:
                raise CompileError(diags, source)
            toolchain.order_lds_dma(device)
            llvm_ir = toolchain.translate_to_llvmir(device)
        with stages.stage("llvm-opt"):
            result.artifacts["llvm"] = toolchain.optimize_llvmir(llvm_ir, target.name)
        if not need_isa:
            return _finish(result, stages, start)
        with stages.stage("llc"):
            isa = result.artifacts["isa"] = toolchain.llc_to_isa(result.artifacts["llvm"], target.name)
        # Asked for, the report runs llvm-mca on the main loop: a stage of its own.
        with stages.stage("report") if options.report else contextlib.nullcontext():
            result.report = build_report(isa, target, mca=options.report)
        if lds_conflicts is not None:
            # From the LDS layout (tile-infer-layout's static bank model), not the ISA.
            result.report["lds_bank_conflicts_per_iteration"] = lds_conflicts
        try:
            check_resources(result.report, target, allow_spills=options.allow_spills)
        except ResourceError as error:
            raise stages.file_error(str(error)) from None
        if emit == "hsaco":
            with stages.stage("llvm-mc"):
                obj = toolchain.assemble(isa, target.name)
            with stages.stage("ld.lld"):
                result.artifacts["hsaco"] = toolchain.link_hsaco(obj)
    return _finish(result, stages, start)


def _lds_conflicts(module: ir.Operation) -> int | None:
    """Sum of `tile.lds_bank_conflicts_per_iteration` over the lowered kernels
    (None for hand-written GPU-level input, which has no tile layouts)."""
    values = [ir.IntegerAttr(op.attributes["tile.lds_bank_conflicts_per_iteration"]).value
              for op in walk(module) if op.name == "gpu.func"
              and "tile.lds_bank_conflicts_per_iteration" in op.attributes]
    return sum(values) if values else None


def _to_gpu(stages: _Stages, result: CompileResult, emit: str, tiling: str = "",
            select: str = "", passes: str = "") -> None:
    """The tile and gpu stages, or a check that the input is GPU-level already."""
    if not has_tile_ops(stages.module):
        if not has_gpu_module(stages.module):
            raise stages.file_error("nothing to compile: the input has no tile ops and no gpu.module")
        if emit == "tile":
            raise stages.file_error("the input is GPU-level IR (no tile ops); --emit tile needs tile IR")
        result.artifacts["gpu"] = stages.asm()
        return
    missing = missing_tile_passes()
    if missing:
        raise stages.file_error(
            f"the tile pipeline needs pass '{missing[0]}', which is not registered "
            f"(missing: {', '.join(missing)}); only GPU-level input (a gpu.module, no tile ops) compiles today"
        )
    spec = target_spec(stages.target)
    with stages.stage("tile"):
        first = pipeline.tile_pipeline(stop_before=pipeline.EMIT_TILE_BEFORE, tiling=tiling,
                                       select=select, passes=passes)
        stages.run_pm(_tile_pm(first, spec, stages.context))
    result.artifacts["tile"] = stages.asm()
    if emit == "tile":
        return
    with stages.stage("gpu"):
        rest = pipeline.tile_pipeline(passes=passes, start_at=pipeline.EMIT_TILE_BEFORE)
        stages.run_pm(_tile_pm(rest, spec, stages.context))
    result.artifacts["gpu"] = stages.asm()


def _to_maca(stages: _Stages, result: CompileResult, emit: str, options: CompileOptions,
             diags: list[Diag]) -> None:
    """The metax family's last stage: GPU-level IR -> MACA C++ (backends/metax)."""
    from tilemlir.backends.metax.emitter import EmitError
    from tilemlir.backends.metax.pipeline import maca_stage

    if emit == "tile" or (emit == "gpu" and not options.report):
        return
    with stages.stage("maca"):
        try:
            text, result.report = maca_stage(stages.module, stages.target, options.report)
        except EmitError as error:
            error.op.location.emit_error(str(error))
            raise CompileError(diags, stages.source) from None
    result.artifacts["maca"] = text


def _finish(result: CompileResult, stages: _Stages, start: float) -> CompileResult:
    stages.seconds["total"] = time.perf_counter() - start
    result.seconds = dict(stages.seconds)
    if result.report is not None:
        result.report["compile_seconds"] = {k: round(v, 4) for k, v in result.seconds.items()}
    return result


# --------------------------------------------------------------------------
# The Python API
# --------------------------------------------------------------------------


def _resolve(target: str | Target | None, module: ir.Operation) -> Target:
    from tilemlir.target import TARGET_ATTRIBUTE, resolve_target

    if isinstance(target, Target):
        return target
    if target is None and TARGET_ATTRIBUTE not in module.attributes:
        target = DEFAULT_TARGET
    return resolve_target(module, target)


def compile(
    module_or_text: str | ir.Module | ir.Operation | ir.OpView,
    target: str | Target | None = None,
    emit: str = "hsaco",
    options: CompileOptions | dict | None = None,
) -> CompileResult:
    """Compiles tile IR or GPU-level IR for an amdgpu target.

    `target`: "amdgpu:gfx942", a descriptor path, or a Target; None takes the
    module's `tile.target` attribute, else amdgpu:gfx942. `emit`: one of EMITS.
    `options`: CompileOptions or a dict of its fields. A module passed in is
    not modified (a copy is compiled)."""
    if isinstance(options, dict):
        options = CompileOptions(**options)
    seconds: dict[str, float] = {}
    source = None
    if isinstance(module_or_text, str):
        from tilemlir.dialects import tile

        start = time.perf_counter()
        source = SourceBuffer("<input>", module_or_text)
        context = tile.make_context()
        try:
            module = parse_chunk(Chunk(source, module_or_text, 1), context)
        except ParseFailure as failure:
            raise CompileError(failure.diags, source) from None
        seconds["parse"] = time.perf_counter() - start
    else:
        original = module_or_text.operation
        with original.context:
            module = original.clone()
    return compile_module(module, _resolve(target, module), emit, options, source=source, seconds=seconds)
