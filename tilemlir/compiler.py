"""tilemlir.compile: tile IR (or GPU-level IR) to a backend's artefacts, stage by stage.

(This module is `compiler`, not `compile`: a submodule named like the function
would replace `tilemlir.compile` with the module once imported.)

    import tilemlir
    result = tilemlir.compile(text, target="amdgpu:gfx942", emit="isa")
    result.artifact                 # the emitted stage's output (bytes for a binary)
    result.artifacts["gpu"]         # every stage reached, by name
    result.report                   # the --report JSON as a dict (from the backend's report stage)
    result.report["config_source"]  # who chose the tiling: "model", "tuning-db" or "user"

The driver parses, resolves the target, and runs its backend's stages
(`Backend.stages`: tile and gpu, shared, then the backend's own) up to `emit`,
timing every step in `report["compile_seconds"]`, and adds to the backend's
report how each kernel was configured (`configuration_report`: workgroups,
split_k, predicted_seconds, config_source); `backends/stages.py` holds
the stage machinery. Input that is already GPU-level IR (a gpu.module and no
tile ops) skips the tile passes. Failures raise `CompileError` (located
diagnostics, as tile-opt prints them) or another `UserError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from mlir import ir

from tilemlir.backends.stages import (
    DEFAULT_TARGET,
    Compilation,
    CompileError,
    CompileOptions,
    backend_stages,
    check_emit,
    default_emit,
    emits,
    has_gpu_module,
    has_tile_ops,
    run_stages,
    stages_to_run,
    target_spec,
)
from tilemlir.diagnostics import (
    Chunk,
    Diag,
    ParseFailure,
    SourceBuffer,
    file_position,
    parse_chunk,
    region_nesting_error,
)
from tilemlir.target.model import Target

__all__ = ["DEFAULT_TARGET", "CompileError", "CompileOptions", "CompileResult", "compile",
           "compile_module", "default_emit", "emits", "has_gpu_module", "has_tile_ops", "target_spec"]

# LLVM's loop passes and llc grow faster than linearly with loop depth (measured
# on gfx942: 256 nested loops 3.5 s and 0.25 GB; 400 nested loops 8 s and 0.45 GB;
# 2000 exhausted 24 GB), so deeper input is refused before compiling.
MAX_REGION_NESTING = 256


@dataclass
class CompileResult:
    target: Target
    emit: str
    artifacts: dict[str, str | bytes] = field(default_factory=dict)
    report: dict | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    # What the passes decided and said (`diagnostics.emit_remark`), when this
    # compilation collected its own diagnostics (a tool's collector, when there
    # is one, prints them instead).
    remarks: list = field(default_factory=list)
    # What the tile passes decided, per kernel (`backends.decisions.KernelDecisions`;
    # empty for GPU-level input); the report's `decisions` is their JSON.
    decisions: list = field(default_factory=list)

    @property
    def artifact(self) -> str | bytes:
        """The requested stage's output."""
        return self.artifacts[self.emit]


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


# The report's fields saying how each kernel's configuration was decided
# (passes/kernel_facts.configuration_of).
CONFIGURATION_FIELDS = ("workgroups", "split_k", "predicted_seconds", "config_source")


def configuration_report(configurations: list[dict]) -> dict:
    """The --report fields `CONFIGURATION_FIELDS` for the module's tile.kernels:
    one kernel's values, or for several a list of each in program order. Input
    without tile.kernels (GPU-level IR) was configured by the user, and the
    compiler knows nothing else of it."""
    if not configurations:
        return {"workgroups": None, "split_k": None, "predicted_seconds": None, "config_source": "user"}
    if len(configurations) == 1:
        return {key: configurations[0][key] for key in CONFIGURATION_FIELDS}
    return {key: [c[key] for c in configurations] for key in CONFIGURATION_FIELDS}


def compile_module(
    module: ir.Operation,
    target: Target,
    emit: str | None = None,
    options: CompileOptions | None = None,
    *,
    source: SourceBuffer | None = None,
    seconds: dict[str, float] | None = None,
    dump_pipeline: Callable[[str], None] | None = None,
) -> CompileResult:
    """Compiles a parsed builtin.module in place (callers pass a copy they own)
    for `target`, up to the stage `emit` (None: the backend's last stage).
    `seconds` carries stage times measured before (the parse); `dump_pipeline`
    receives every stage's pipeline or command line, one line at a time
    (`backends/stages.run_stages`)."""
    options = options or CompileOptions()
    emit = emit or backend_stages(target.family)[-1].name
    check_emit(target, emit)
    too_deep = region_nesting_error(module, MAX_REGION_NESTING, source)
    if too_deep is not None:
        raise CompileError([too_deep], source)
    if any(stage.one_kernel_function for stage in stages_to_run(target, emit, options)):
        _require_one_kernel_function(module, target, source)  # the IR stages hold any number
    job = Compilation(module, target, emit, options, source, seconds=dict(seconds or {}))
    start = time.perf_counter() - sum(job.seconds.values())
    run_stages(job, dump=dump_pipeline)
    job.seconds["total"] = time.perf_counter() - start
    remarks = [d for d in job.diags if d.severity == "remark"]
    decisions = job.decisions or []
    if job.report is not None:
        job.report["compile_seconds"] = {k: round(v, 4) for k, v in job.seconds.items()}
        job.report["decisions"] = [kernel.as_json() for kernel in decisions]
        job.report.update(configuration_report(job.notes.get("configurations", [])))
    return CompileResult(target, emit, job.artifacts, job.report, job.seconds, remarks, decisions)


# --------------------------------------------------------------------------
# The Python API
# --------------------------------------------------------------------------


def _resolve(target: str | Target | None, module: ir.Operation) -> Target:
    from tilemlir.dialects import attributes
    from tilemlir.target import resolve_target

    if isinstance(target, Target):
        return target
    if target is None and not attributes.TARGET.is_on(module):
        target = DEFAULT_TARGET
    return resolve_target(module, target)


def compile(
    module_or_text: str | ir.Module | ir.Operation | ir.OpView,
    target: str | Target | None = None,
    emit: str | None = None,
    options: CompileOptions | dict | None = None,
) -> CompileResult:
    """Compiles tile IR or GPU-level IR for a target.

    `target`: "amdgpu:gfx942", a descriptor path, or a Target; None takes the
    module's `tile.target` attribute, else DEFAULT_TARGET. `emit`: a stage of
    the target's backend (`emits()` lists them all); None is its last stage
    (hsaco, maca, ptx). `options`: CompileOptions or a dict of its fields. A
    module passed in is not modified (a copy is compiled)."""
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
