"""The driver: the loop that runs a backend's stages, and what every stage list is made of.

A backend declares its stages on its manifest (`Backend.stages`, "module:OBJECT"
naming a sequence of `Stage`s): first the shared `TileStage` and `GpuStage`
(TILE_PIPELINE split at EMIT_TILE_BEFORE), then its own (amdgpu: llvm, isa,
hsaco; metax: maca; nvidia: ptx). A stage's name is what `--emit` takes and the
key of its artefact. Each stage

  - describes itself (`describe`): one `label: text` line per step, a pass
    pipeline exactly as `tile-opt -p` takes it, or a tool's command line;
  - runs on a `Compilation` (`run`): the module in place, the options, the
    artefacts of the stages before, timing each step under its label.

`run_stages` is the whole driver, and every path to code generation goes
through it: the input checks (`check_input`: the stage is the backend's, the
nesting depth, one kernel function where the artefact holds one), tile-verify,
then every stage up to the one asked for, each described just before it runs
(so a described pipeline is the one that ran, on the IR it ran on). `tilemlir.compiler` adds parsing, target
resolution and the result; `emits()` is the union of the registered stage lists.
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from mlir import ir

from tilemlir.backends.decisions import add_lowered_facts, tile_decisions
from tilemlir.diagnostics import (
    Diag,
    SourceBuffer,
    UserError,
    collect_diagnostics,
    file_position,
    format_diag,
    mlir_error_diags,
    region_nesting_error,
)
from tilemlir.irutil import walk
from tilemlir.passes.kernel_facts import configuration_of
from tilemlir.targets.model import Backend, Target


class CompileError(UserError):
    """Compilation failed with diagnostics (`diags`), formatted like tile-opt's."""

    def __init__(self, diags: list[Diag], source: SourceBuffer | None = None):
        self.diags = diags
        self.source = source
        super().__init__("".join(format_diag(d, source) for d in diags).rstrip("\n"))


@dataclass(frozen=True)
class CompileOptions:
    """What the user asked for, apart from the target and the emitted stage."""

    report: bool = False  # go on to the backend's report stage even when emitting an earlier one
    allow_spills: bool = False  # spilling to scratch is an error unless allowed (--allow-spills)
    tiling: str = ""  # tile-tiling's options, e.g. "block=128,128,64 threads=256 stages=2"
    select: str = ""  # tile-select-mma's options, e.g. "prefer=wgmma"
    # Options of any tile pass, as a pipeline: "tile-lower-to-gpu{direct-lds-loads=true}".
    passes: str = ""
    # Print the IR before / after every pass of every stage to stderr, as
    # mlir-opt's --mlir-print-ir-before-all / --mlir-print-ir-after-all.
    print_ir_before_all: bool = False
    print_ir_after_all: bool = False


def has_tile_ops(module: ir.Operation) -> bool:
    return any(op.name.startswith("tile.") for op in walk(module))


def has_gpu_module(module: ir.Operation) -> bool:
    return any(op.name == "gpu.module" for op in walk(module))


def target_spec(target: Target) -> str:
    """Text that names `target` in a pass option: `family:name` when the
    registry gives back this very descriptor, else the file it came from."""
    from tilemlir.targets.registry import get_target

    try:
        if get_target(str(target)) == target:
            return str(target)
    except UserError:
        pass
    return target.path or str(target)


@dataclass
class Compilation:
    """One compile in progress: the module (rewritten in place), what was asked,
    and what the stages produced so far."""

    module: ir.Operation
    target: Target
    emit: str
    options: CompileOptions
    source: SourceBuffer | None = None
    artifacts: dict[str, str | bytes] = field(default_factory=dict)
    report: dict | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    diags: list[Diag] = field(default_factory=list)
    # What a stage leaves a later one of the same backend (e.g. facts the lowering
    # attached to gpu.funcs that a conversion drops; `spills`, the spilling
    # kernels when spills are all that failed, for the driver's fallback).
    notes: dict[str, object] = field(default_factory=dict)
    # What the tile passes decided, per kernel (`backends.decisions`), read
    # when the tile stage ends and completed when the gpu stage does.
    decisions: list | None = None

    def __post_init__(self) -> None:
        self.tile_input = has_tile_ops(self.module)
        self.spec = target_spec(self.target)

    @property
    def context(self) -> ir.Context:
        return self.module.context

    @contextlib.contextmanager
    def timed(self, label: str) -> Iterator[None]:
        """Times a step under `label`; MLIR's own errors become a CompileError."""
        start = time.perf_counter()
        try:
            yield
        except ir.MLIRError as error:
            raise CompileError(mlir_error_diags(error, self.source), self.source) from None
        finally:
            self.seconds[label] = time.perf_counter() - start

    def run_pipeline(self, pipeline: str) -> None:
        """Runs a pipeline string (tile and upstream passes) on the module."""
        from tilemlir.passes import build_pipeline

        with self.context:
            pm = build_pipeline(pipeline, context=self.context)
            if self.options.print_ir_before_all or self.options.print_ir_after_all:
                pm.enable_ir_printing(print_before_all=self.options.print_ir_before_all,
                                      print_after_all=self.options.print_ir_after_all)
            pm.run(self.module)

    def asm(self) -> str:
        return self.module.get_asm() + "\n"

    def file_error(self, message: str) -> CompileError:
        name = self.source.name if self.source else ""
        return CompileError([Diag("error", message, name)], self.source)

    def located_errors(self, errors: Sequence[tuple[ir.Operation | ir.Location, str]]) -> CompileError:
        """A CompileError holding `errors`, each at its op (or location), with
        whatever the context reported before."""
        for where, message in errors:
            location = where if isinstance(where, ir.Location) else where.location
            location.emit_error(message)
        return CompileError(list(self.diags), self.source)


class Stage(ABC):
    """One named step of a backend's compile (see the module docstring)."""

    name: str = ""
    summary: str = ""  # what its artefact is, for --help
    binary: bool = False  # its artefact is bytes, not text
    # The artefact's file name ending, as clang names its temporaries
    # (tile-compile --save-temps: `kernel.s` for kernel.mlir); "" is `.NAME`.
    suffix: str = ""
    # Its artefact holds the code of one gpu.module (one HSACO, one PTX module),
    # so the module may hold one kernel function (metax emits any number).
    one_kernel_function: bool = False

    @abstractmethod
    def describe(self, job: Compilation) -> list[str]:
        """What --dump-pass-pipeline prints for this stage: pipelines `tile-opt
        -p` reads back, or the commands it runs."""

    @abstractmethod
    def run(self, job: Compilation) -> None:
        """Advances `job`: rewrites its module and/or adds this stage's artefact."""


# --------------------------------------------------------------------------
# The shared stages: tile IR -> GPU-level IR
# --------------------------------------------------------------------------

# Tile level -> GPU level; each tile pass takes the target through its
# `target` option (spelled out in the printed pipeline).
TILE_PIPELINE: tuple[str, ...] = (
    # Whole-problem ops become kernels first: every later pass works per kernel.
    "tile-tiling",
    "canonicalize",
    # Casts and accumulator types must be final before an instruction is chosen by dtype.
    "tile-legalize-precision",
    # Copies of kernels written with their own sizes whose windows provably stay
    # inside memory lose their bounds checks (tile-tiling marks its own); after
    # the casts, which it leaves checked.
    "tile-prove-bounds",
    "tile-select-mma",
    # A gemm operand in registers goes through shared memory; before layouts,
    # which then place that buffer as the instruction reads it.
    "tile-stage-operands",
    # Layouts follow from the chosen instruction's lane layouts.
    "tile-infer-layout",
    # Multi-buffers shared tiles and prefetches ahead; after layouts (it keeps
    # the copies' vector widths) and before lowering (which emits its barriers).
    "tile-pipeline",
    # Loops whose masks have one value over their leading iterations (causal
    # attention's) run those in a copy without them; after tile-pipeline, so
    # that the two loops share the pipeline's stages.
    "tile-split-loops",
    # Orders the program's own shared-memory accesses; after tile-pipeline
    # (its prefetch copies are the pipelined loop's to order) and before
    # lowering, whose own barriers it counts.
    "tile-insert-barriers",
    "tile-lower-to-gpu",
    "canonicalize",
    "cse",
)
# `--emit tile` stops just before this pass; `--emit gpu` after the whole list.
EMIT_TILE_BEFORE = "tile-lower-to-gpu"


def tile_pipeline(stop_before: str | None = None, tiling: str = "",
                  steps: tuple[str, ...] = TILE_PIPELINE, select: str = "",
                  passes: str = "", start_at: str | None = None) -> str:
    """`steps` (TILE_PIPELINE, or a backend's own list) as a pipeline string;
    with `stop_before`, only the passes before that one (e.g. EMIT_TILE_BEFORE),
    with `start_at` only that one and those after it; `tiling` gives
    tile-tiling its options ("block=128,128,64 threads=256 stages=2"), `select`
    tile-select-mma its options ("prefer=wgmma"), and `passes` any step its
    options ("tile-infer-layout{transpose-reads=true},
    tile-lower-to-gpu{direct-lds-loads=true}"; a pass not in the list is an error)."""
    from tilemlir.passes.pipeline_text import parse_pipeline

    given = {element.name: element.options or "" for element in parse_pipeline(passes)}
    unknown = sorted(set(given) - set(steps))
    if unknown:
        raise UserError(f"--pass-options: {', '.join(unknown)} is not a step of this pipeline "
                        f"(steps: {', '.join(steps)})")
    given.update({name: _options_of(name, value) for name, value in (("tile-tiling", tiling),
                                                                    ("tile-select-mma", select))
                  if value})
    first = steps.index(start_at) if start_at is not None else 0
    last = steps.index(stop_before) if stop_before is not None else len(steps)
    return ",".join(f"{step}{{{given[step]}}}" if given.get(step) else step
                    for step in steps[first:last])


def _options_of(step: str, options: str) -> str:
    """`options` when it is an option list of `step` alone; a UserError when
    the text would close the braces and add passes of its own
    ("prefer=x},symbol-dce,tile-select-mma{prefer=y"): options are values,
    never pipeline text."""
    from tilemlir.passes.pipeline_text import PipelineError, parse_pipeline

    try:
        parsed = parse_pipeline(f"{step}{{{options}}}")
    except PipelineError as error:
        raise UserError(f"{step}'s options {options!r} are not an option list: {error}") from None
    if len(parsed) != 1 or parsed[0].name != step or parsed[0].options != options:
        raise UserError(f"{step}'s options {options!r} are not an option list of that one pass")
    return options


def spelled_out(pipeline: str, spec: str) -> str:
    """`pipeline` as tile-opt -p takes it: anchored on builtin.module, every
    tile pass with its options and the target spelled out."""
    from tilemlir.passes import is_tile_pass, make_pass
    from tilemlir.passes.pipeline_text import parse_pipeline

    def element(step) -> str:
        if not is_tile_pass(step.name):
            return step.text()
        return str(make_pass(step.name, step.options, {"target": spec}))

    return f"builtin.module({','.join(element(step) for step in parse_pipeline(pipeline))})"


@dataclass(frozen=True)
class TileStage(Stage):
    """`tile`: the tile passes before EMIT_TILE_BEFORE. For GPU-level input
    (a gpu.module, no tile ops) it only checks that there is something to compile."""

    steps: tuple[str, ...] = TILE_PIPELINE
    name: str = "tile"
    summary: str = "tile IR after the tile passes, before tile-lower-to-gpu"
    suffix: str = ".tile.mlir"

    def pipeline(self, job: Compilation) -> str:
        options = job.options
        return spelled_out(tile_pipeline(stop_before=EMIT_TILE_BEFORE, tiling=options.tiling,
                                         steps=self.steps, select=options.select,
                                         passes=options.passes), job.spec)

    def describe(self, job: Compilation) -> list[str]:
        if not job.tile_input:
            return ["tile, gpu: skipped (the input is GPU-level IR)"]
        return [f"tile: {self.pipeline(job)}"]

    def run(self, job: Compilation) -> None:
        if not job.tile_input:
            if not has_gpu_module(job.module):
                raise job.file_error("nothing to compile: the input has no tile ops and no gpu.module")
            if job.emit == self.name:
                raise job.file_error("the input is GPU-level IR (no tile ops); --emit tile needs tile IR")
            return
        with job.timed(self.name):
            job.run_pipeline(self.pipeline(job))
            job.decisions = tile_decisions(job.module, job.target, job.source)
        job.artifacts[self.name] = job.asm()
        # The kernels' configurations, for the report (lowering replaces the tile.kernels).
        job.notes["configurations"] = [configuration_of(op) for op in walk(job.module)
                                       if op.name == "tile.kernel"]


@dataclass(frozen=True)
class GpuStage(Stage):
    """`gpu`: the rest of the tile passes, from EMIT_TILE_BEFORE: GPU-level IR.
    GPU-level input is its own artefact."""

    steps: tuple[str, ...] = TILE_PIPELINE
    name: str = "gpu"
    summary: str = "GPU-level IR (gpu.module, gpu.func, the family's matrix ops)"
    suffix: str = ".gpu.mlir"

    def pipeline(self, job: Compilation) -> str:
        return spelled_out(tile_pipeline(passes=job.options.passes, steps=self.steps,
                                         start_at=EMIT_TILE_BEFORE), job.spec)

    def describe(self, job: Compilation) -> list[str]:
        return [f"gpu: {self.pipeline(job)}"] if job.tile_input else []

    def run(self, job: Compilation) -> None:
        if job.tile_input:
            with job.timed(self.name):
                job.run_pipeline(self.pipeline(job))
                if job.decisions is not None:
                    add_lowered_facts(job.decisions, job.module)
        job.artifacts[self.name] = job.asm()


# --------------------------------------------------------------------------
# Stage lists of the registered backends
# --------------------------------------------------------------------------


def backend_stages(family: str) -> tuple[Stage, ...]:
    """The stages `family`'s manifest names: its resolved backend's `stages`
    part (`tilemlir.targets.registry.resolve_backend`, imported once), checked
    to be distinct `Stage`s."""
    from tilemlir.targets.registry import resolve_backend

    resolved = resolve_backend(family)
    manifest: Backend = resolved.require()
    listed = resolved.part("stages")  # a TargetError (a UserError) saying why it did not load
    if listed is None:
        raise UserError(f"the {family} backend declares no compile stages")
    stages = tuple(listed) if isinstance(listed, (tuple, list)) else ()
    names = [getattr(stage, "name", None) for stage in stages]
    if not stages or len(set(names)) != len(names) or not all(isinstance(s, Stage) for s in stages):
        raise UserError(f"the {family} backend's stages ({manifest.stages}) are not distinct Stages")
    return stages


def stage_names(family: str) -> tuple[str, ...]:
    return tuple(stage.name for stage in backend_stages(family))


def registered_stages() -> dict[str, Stage]:
    """Every stage name of every registered backend, in stage-list order,
    with the first stage of that name."""
    from tilemlir.targets.registry import report_broken_family, usable_families

    found: dict[str, Stage] = {}
    for family in usable_families():
        try:
            stages = backend_stages(family)
        except UserError as error:  # reported once and skipped; an error where it is used
            report_broken_family(family, error)
            continue
        for stage in stages:
            found.setdefault(stage.name, stage)
    return found


def emits() -> tuple[str, ...]:
    """What `--emit` takes: the stage names of the registered backends."""
    return tuple(registered_stages())


def default_emit(family: str) -> str:
    """The stage compiled to when none is asked for (tile-compile without
    --emit, `tilemlir.compile` without emit=): the backend's declared
    `default_emit`, else its last stage."""
    from tilemlir.targets.registry import backend

    return backend(family).default_emit or stage_names(family)[-1]


def check_emit(target: Target, emit: str) -> None:
    """Refuses an `emit` that is not a stage of `target`'s backend, naming the
    backends that have it."""
    names = stage_names(target.family)  # stages that do not load: this error says why
    known = emits()
    if emit not in known:
        raise UserError(f"unknown --emit '{emit}' (choose from {', '.join(known)})")
    if emit not in names:
        from tilemlir.targets.registry import usable_families

        owners = [f for f in usable_families()
                  if f != target.family and emit in _stage_names_or_none(f)]
        raise UserError(f"--emit {emit} is not a stage of the {target.family} backend "
                        f"(for {target}: {', '.join(names)}); {emit} is a stage of "
                        f"{' and '.join(owners)}")


def _stage_names_or_none(family: str) -> tuple[str, ...]:
    try:
        return stage_names(family)
    except UserError:
        return ()


def stages_to_run(target: Target, emit: str, options: CompileOptions) -> tuple[Stage, ...]:
    """The stages up to `emit`, or up to the backend's report stage when a
    report is asked for and comes later."""
    from tilemlir.targets.registry import backend

    stages = backend_stages(target.family)
    names = [stage.name for stage in stages]
    last = names.index(emit)
    report_stage = backend(target.family).report_stage
    if options.report and report_stage in names:
        last = max(last, names.index(report_stage))
    return stages[:last + 1]


# LLVM's loop passes and llc grow faster than linearly with loop depth (measured
# on gfx942: 256 nested loops 3.5 s and 0.25 GB; 400 nested loops 8 s and 0.45 GB;
# 2000 exhausted 24 GB), so deeper input is refused before compiling.
MAX_REGION_NESTING = 256


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


def check_input(job: Compilation) -> None:
    """The driver's checks of what it is asked to compile, before anything
    runs: `job.emit` is a stage of the target's backend (`check_emit`), no op
    is nested in more than MAX_REGION_NESTING regions, and a module compiled
    to a stage whose artefact holds one kernel function has one (the IR
    stages hold any number)."""
    check_emit(job.target, job.emit)
    too_deep = region_nesting_error(job.module, MAX_REGION_NESTING, job.source)
    if too_deep is not None:
        raise CompileError([too_deep], job.source)
    if any(stage.one_kernel_function for stage in stages_to_run(job.target, job.emit, job.options)):
        _require_one_kernel_function(job.module, job.target, job.source)


def run_stages(job: Compilation, *, dump: Callable[[str], None] | None = None) -> Compilation:
    """The input checks (`check_input`), tile-verify, then the stages up to
    `job.emit` (`stages_to_run`): every compile, whoever asks for it, goes
    through here. With `dump`, every stage of the backend is described
    through it, each just before it runs; the stages that do not run (after
    the last one asked for, or after a failure) are described on the IR as
    it is then."""
    check_input(job)
    stages = backend_stages(job.target.family)
    running = {stage.name for stage in stages_to_run(job.target, job.emit, job.options)}
    failure: UserError | None = None
    with collect_diagnostics(job.context, job.diags, job.source):
        with job.timed("tile-verify"):
            job.run_pipeline("tile-verify")
        for stage in stages:
            if dump is not None:
                for line in stage.describe(job):
                    dump(line + "\n")
            if stage.name in running and failure is None:
                try:
                    stage.run(job)
                except UserError as error:
                    if dump is None:
                        raise
                    failure = error  # the stages after it are still described
            elif dump is None:
                break
    if failure is not None:
        raise failure
    if any(d.severity == "error" for d in job.diags):
        raise CompileError(job.diags, job.source)
    return job
