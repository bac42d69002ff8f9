"""tilemlir.compile: tile IR (or GPU-level IR) to a backend's artefacts, stage by stage.

(This module is `compiler`, not `compile`: a submodule named like the function
would replace `tilemlir.compile` with the module once imported.)

    import tilemlir
    result = tilemlir.compile(text, target="amdgpu:gfx942", emit="isa")
    result.artifact                 # the emitted stage's output (bytes for a binary)
    result.artifacts["gpu"]         # every stage reached, by name
    result.report                   # the --report JSON as a dict (docs/report.md)
    result.report["kernels"][0]["config_source"]  # who chose the tiling: "model", "tuning-db" or "user"
    result.report["spill_fallback"] # set when the model's choice spilled and its next was used

The driver parses, resolves the target, and runs its backend's stages
(`Backend.stages`: tile and gpu, shared, then the backend's own) up to `emit`,
timing every step in `report["compile_seconds"]`, and completes the backend's
report (`backends/report_schema.complete_report`: the times, the decisions, how
each kernel was configured); `backends/driver.py` holds
the stage machinery. Input that is already GPU-level IR (a gpu.module and no
tile ops) skips the tile passes. Failures raise `CompileError` (located
diagnostics, as tile-opt prints them) or another `UserError`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from mlir import ir

from tilemlir.backends.driver import (
    Compilation,
    CompileError,
    CompileOptions,
    default_emit,
    emits,
    has_gpu_module,
    has_tile_ops,
    run_stages,
    target_spec,
)
from tilemlir.backends.report_schema import complete_report
from tilemlir.diagnostics import (
    Chunk,
    Diag,
    ParseFailure,
    SourceBuffer,
    collect_diagnostics,
    emit_remark,
    parse_chunk,
    remark_mark,
    remarks_configured,
    remarks_since,
    restore_remarks,
    shown_remarks,
    withdraw_remarks,
)
from tilemlir.targets.model import Target

__all__ = ["CompileError", "CompileOptions", "CompileResult", "compile",
           "compile_module", "default_emit", "emits", "has_gpu_module", "has_tile_ops", "target_spec"]

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
    for `target`, up to the stage `emit` (None: the backend's `default_emit`).
    `seconds` carries stage times measured before (the parse); `dump_pipeline`
    receives every stage's pipeline or command line, one line at a time
    (`backends/driver.run_stages`, which checks the input first:
    `check_input`).

    When the cost model chose every kernel's configuration (no --tiling, no
    tuning database entry) and the compiled kernel spills registers (the only
    thing wrong with it), the module is compiled again with tile-tiling's
    next-ranked configuration (`rank=1`, 2, ... up to MAX_SPILL_FALLBACKS),
    and a remark names the spilling configurations and the one used; when they
    all spill, the first error stands, with a note naming the others. A
    configuration someone gave that spills stays an error, unless compiling
    it without tile-pipeline's prefetch does not spill (`_unpipeline`: a
    remark says so)."""
    options = options or CompileOptions()
    emit = emit or default_emit(target.family)
    start = time.perf_counter() - sum((seconds or {}).values())
    pristine = None
    other_tilings = _may_fall_back(module, options)
    unsplit = _may_unsplit(module, options)
    more_threads = not options.allow_spills and bool(_default_thread_kernels(module))
    unpipelined = _may_unpipeline(module, options, target)
    if other_tilings or unsplit or more_threads or unpipelined:
        with module.context:
            pristine = module.clone()
    mark = remark_mark()
    job, error, dumped = _attempt(module, target, emit, options, source, seconds, dump_pipeline, pristine)
    if error is not None and unsplit and job.notes.get("spills") and _split_loops(job, mark):
        job, error, dumped = _unsplit(job, error, dumped, pristine, target, emit, options, source, seconds,
                                      dump_pipeline, mark)
    if error is not None and more_threads and job.notes.get("spills"):
        job, error, dumped = _more_threads(job, error, dumped, pristine, target, emit, options, source,
                                           seconds, dump_pipeline, mark)
    if error is not None and unpipelined and job.notes.get("spills") and not _spilled(job):
        job, error, dumped = _unpipeline(job, error, dumped, pristine, target, emit, options, source,
                                         seconds, dump_pipeline, mark)
    if error is not None:
        spilled = _spilled(job)
        if not other_tilings or spilled is None:
            _replay(dumped, dump_pipeline)
            raise error
        job = _fall_back(job, error, spilled, dumped, pristine, target, emit, options, source, seconds,
                         dump_pipeline, mark)
    else:
        _replay(dumped, dump_pipeline)  # held back while a fallback could follow: this compile stands
    job.seconds["total"] = time.perf_counter() - start
    remarks = shown_remarks(job.diags)
    decisions = job.decisions or []
    if job.report is not None:
        job.report = complete_report(job.report, target, seconds=job.seconds, decisions=decisions,
                                     configurations=job.notes.get("configurations", []),
                                     spill_fallback=job.notes.get("spill_fallback"))
    return CompileResult(target, emit, job.artifacts, job.report, job.seconds,
                         remarks + job.notes.get("fallback_remarks", []), decisions)


# --------------------------------------------------------------------------
# When the model's configuration spills
# --------------------------------------------------------------------------

# The cost model's next-ranked configurations tried, each a whole compile,
# when the one it chose spills registers.
MAX_SPILL_FALLBACKS = 4


def _may_fall_back(module: ir.Operation, options: CompileOptions) -> bool:
    """Whether tile-tiling's choice is the model's alone: whole-problem gemms,
    no tiling options (--tiling, a tuning database's, --pass-options), and
    spills refused."""
    from tilemlir.passes.tiling import whole_problem_gemms

    return (not options.allow_spills and not options.tiling and "tile-tiling" not in options.passes
            and bool(whole_problem_gemms(module)))


SPLIT_LOOPS = "tile-split-loops"


def _split_candidate(module: ir.Operation) -> ir.Operation | None:
    """The first scf.for of the module with an arith.select in it (what
    tile-split-loops may split), or None."""
    from tilemlir.irutil import parent_ops, walk

    for op in walk(module):
        if op.name == "arith.select":
            loops = [p for p in parent_ops(op) if p.name == "scf.for"]
            if loops:
                return loops[-1]
    return None


def _may_unsplit(module: ir.Operation, options: CompileOptions) -> bool:
    """Whether a compile that spills may be retried without tile-split-loops:
    spills are refused, the pass has no options given, and some loop of the
    module selects (what the pass may split)."""
    if options.allow_spills or SPLIT_LOOPS in options.passes:
        return False
    return _split_candidate(module) is not None


def _split_loops(job: Compilation, mark: int | None) -> list[Diag]:
    """The remarks of the loops tile-split-loops split in `job`: in its own
    diagnostics, or, under a tool's collector (the outermost, which receives
    every remark), in what that received since `mark`."""
    return [d for d in job.diags + remarks_since(mark) if d.severity == "remark" and d.origin == SPLIT_LOOPS]


def _unsplit(first: Compilation, first_error: CompileError, first_dumped: list[str], pristine: ir.Operation,
             target, emit, options, source, seconds, dump_pipeline, mark):
    """The loops tile-split-loops split spill registers: compiles `pristine`
    again without the split (`_again_with`), with a remark at the first split loop."""
    message = (f"tile-compile: splitting this loop at the first iteration its masks may act "
               f"({SPLIT_LOOPS}) spills registers on {target.name} ({_spill_words(first.notes['spills'])}); "
               "compiled without the split, which does not spill")
    return _again_with(f"{SPLIT_LOOPS}{{enabled=false}}", _split_candidate, message, first, first_error,
                       first_dumped, pristine, target, emit, options, source, seconds, dump_pipeline, mark)


def _again_with(pass_options: str, remarked, message: str, first: Compilation, first_error: CompileError,
                first_dumped: list[str], pristine: ir.Operation, target, emit, options, source, seconds,
                dump_pipeline, mark):
    """Compiles `pristine` again with `pass_options` added to the options'
    passes: (job, error, dumped) of that compile when it does not fail, with
    `message` as a remark at `remarked(pristine)` (an op), else the first's."""
    first_remarks = withdraw_remarks(mark)
    with pristine.context:
        module = pristine.clone()
    passes = ",".join(p for p in (options.passes, pass_options) if p)
    job, error, dumped = _attempt(module, target, emit, dataclasses.replace(options, passes=passes), source,
                                  seconds, dump_pipeline, pristine)
    if error is not None:
        withdraw_remarks(mark)
        restore_remarks(first_remarks)
        return first, first_error, first_dumped
    job.notes["fallback_remarks"] = _remark(pristine, remarked(pristine).location, message, source)
    return job, None, dumped


PIPELINE = "tile-pipeline"


def _pipelined_loop(module: ir.Operation) -> ir.Operation | None:
    """The first loop of the module that tile-pipeline prefetches (tile.num_stages >= 1), or None.
    Read before the verifier runs: a malformed tile.num_stages is no such loop
    (tile-verify reports it)."""
    from tilemlir.dialects import attributes
    from tilemlir.irutil import walk

    def stages(op: ir.Operation) -> int:
        given = attributes.NUM_STAGES.get(op)
        return ir.IntegerAttr(given).value if isinstance(given, ir.IntegerAttr) else 0
    return next((op for op in walk(module) if op.name == "scf.for" and stages(op) >= 1), None)


def _may_unpipeline(module: ir.Operation, options: CompileOptions, target) -> bool:
    """Whether a compile that spills may be retried without tile-pipeline's
    prefetch: spills are refused, the pass has no options given, the target's
    tile passes run it, and some loop asks for it."""
    from tilemlir.backends.driver import TileStage, backend_stages

    if options.allow_spills or PIPELINE in options.passes or _pipelined_loop(module) is None:
        return False
    return any(PIPELINE in stage.steps for stage in backend_stages(target.family) if isinstance(stage, TileStage))


def _unpipeline(first: Compilation, first_error: CompileError, first_dumped: list[str], pristine: ir.Operation,
                target, emit, options, source, seconds, dump_pipeline, mark):
    """Prefetching the pipelined loops' copies (through registers, which hold
    the next tiles across an iteration) spills registers: compiles `pristine`
    again with no loop pipelined, each copy where the program has it
    (`_again_with`), with a remark at the first such loop."""
    message = (f"tile-compile: prefetching this loop's copies ({PIPELINE}) spills registers on {target.name} "
               f"({_spill_words(first.notes['spills'])}); compiled without the prefetch, each copy where "
               "the program has it, which does not spill (slower: the loads no longer overlap the compute)")
    return _again_with(f"{PIPELINE}{{enabled=false}}", _pipelined_loop, message, first, first_error,
                       first_dumped, pristine, target, emit, options, source, seconds, dump_pipeline, mark)


def _attempt(module, target, emit, options, source, seconds, dump_pipeline, pristine):
    """One compile: (the job, its CompileError or None, the lines it dumped).
    With `pristine` (a fallback may follow), the dumped lines are held back."""
    job = Compilation(module, target, emit, options, source, seconds=dict(seconds or {}))
    dumped: list[str] = []
    dump = dumped.append if dump_pipeline is not None and pristine is not None else dump_pipeline
    try:
        run_stages(job, dump=dump)
    except CompileError as error:
        return job, error, dumped
    return job, None, dumped


def _replay(dumped: list[str], dump_pipeline: Callable[[str], None] | None) -> None:
    for line in dumped if dump_pipeline is not None else ():
        dump_pipeline(line)


def _spilled(job: Compilation) -> list[dict] | None:
    """The spilling kernels, when spills are all that failed and the model
    chose every kernel's configuration; else None."""
    spills = job.notes.get("spills")
    configurations = job.notes.get("configurations") or []
    if not spills or not configurations or any(c["config_source"] != "model" for c in configurations):
        return None
    return spills


def _configuration(job: Compilation) -> str:
    """The kernels' configurations as tile-tiling chose them."""
    described = []
    for kernel in job.decisions or []:
        block = kernel.gemms[0].block if kernel.gemms else None
        shape = f"block {block['m']}x{block['n']}x{block['k']}, " if block else ""
        instruction = f"{kernel.gemms[0].instruction}, " if kernel.gemms else ""
        described.append(f"{shape}{kernel.threads} threads, {kernel.stages} stage"
                         f"{'s' if kernel.stages != 1 else ''}, {instruction}split-K {kernel.split_k}")
    return "; ".join(described) or "unknown"


def _spill_words(spills: list[dict]) -> str:
    return ", ".join(f"kernel '{s['kernel']}' spills {s['vgpr_spills']} VGPRs and {s['sgpr_spills']} SGPRs"
                     for s in spills)


def _fall_back(first: Compilation, first_error: CompileError, spilled: list[dict], first_dumped: list[str],
               pristine: ir.Operation, target, emit, options, source, seconds, dump_pipeline,
               mark) -> Compilation:
    """Compiles `pristine` with tile-tiling's rank=1, 2, ... until a
    configuration does not spill (`compile_module`)."""
    from tilemlir.passes.tiling import whole_problem_gemms

    first_remarks = withdraw_remarks(mark)
    tried = [{"rank": 0, "configuration": _configuration(first), "spills": spilled}]
    for rank in range(1, MAX_SPILL_FALLBACKS + 1):
        with pristine.context:
            module = pristine.clone()
        retry = dataclasses.replace(options, tiling=f"rank={rank}")
        job, error, dumped = _attempt(module, target, emit, retry, source, seconds, dump_pipeline, pristine)
        if error is None:
            _replay(dumped, dump_pipeline)
            text = "; ".join(f"rank {t['rank']} ({t['configuration']}): {_spill_words(t['spills'])}"
                             for t in tried)
            message = (f"tile-compile: the cost model's configuration spills registers on {target.name}, "
                       f"so the next it ranks was compiled: {text}; used rank {rank} "
                       f"({_configuration(job)}), which does not spill")
            job.notes["fallback_remarks"] = _remark(pristine, whole_problem_gemms(pristine)[0][0].location,
                                                    message, source)
            job.notes["spill_fallback"] = {"tried": tried, "rank": rank, "configuration": _configuration(job)}
            return job
        withdraw_remarks(mark)
        spills = _spilled(job)
        if spills is None:  # no such rank, or another failure: the model's choice is the error to show
            break
        tried.append({"rank": rank, "configuration": _configuration(job), "spills": spills})
    restore_remarks(first_remarks)
    _replay(first_dumped, dump_pipeline)
    if len(tried) == 1:
        raise first_error
    others = "; ".join(f"rank {t['rank']} ({t['configuration']}): {_spill_words(t['spills'])}"
                       for t in tried[1:])
    diags = list(first_error.diags)
    last = diags[-1]
    diags[-1] = dataclasses.replace(last, notes=(*last.notes, Diag(
        "note", f"the cost model's next-ranked configurations spill too: {others}", last.file)))
    raise CompileError(diags, source)


# --------------------------------------------------------------------------
# When threads nobody chose spill
# --------------------------------------------------------------------------

def _default_thread_kernels(module: ir.Operation) -> list[ir.Operation]:
    """The tile.kernels whose thread count the Python front end chose
    (attributes.DEFAULT_THREADS): tile-compile may launch them with more."""
    from tilemlir.dialects import attributes
    from tilemlir.irutil import walk

    return [op for op in walk(module) if op.name == "tile.kernel" and attributes.DEFAULT_THREADS.is_on(op)]


def _more_threads(first: Compilation, first_error: CompileError, first_dumped: list[str], pristine: ir.Operation,
                  target, emit, options, source, seconds, dump_pipeline, mark):
    """The kernels' default thread count spills registers (a wave32 chip holds
    the same fragments in twice the waves' registers of a wave64 one):
    compiles `pristine` again with those kernels' threads doubled, up to the
    chip's workgroup limit, until it does not spill. (job, error, dumped) of
    that compile, with a remark at the kernel, else the first's."""
    from tilemlir.targets.model import is_unknown

    limit = target.compute.max_threads_per_workgroup
    limit = 1024 if is_unknown(limit) else limit
    first_remarks = withdraw_remarks(mark)
    threads = {int(ir.IntegerAttr(op.attributes["threads"]).value) for op in _default_thread_kernels(pristine)}
    counts = ", ".join(map(str, sorted(threads)))
    tried = [f"{counts} threads: {_spill_words(first.notes['spills'])}"]
    factor = 2
    while max(threads) * factor <= limit:
        with pristine.context:
            module = pristine.clone()
            for op in _default_thread_kernels(module):
                given = int(ir.IntegerAttr(op.attributes["threads"]).value)
                op.attributes["threads"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), given * factor)
        job, error, dumped = _attempt(module, target, emit, options, source, seconds, dump_pipeline, pristine)
        used = ", ".join(str(t * factor) for t in sorted(threads))
        if error is None:
            message = (f"tile-compile: the default {counts} threads (no threads= given) spill registers on "
                       f"{target.name} ({'; '.join(tried)}); launched with {used} threads, which do not")
            job.notes["fallback_remarks"] = _remark(pristine, _default_thread_kernels(pristine)[0].location,
                                                    message, source)
            return job, None, dumped
        withdraw_remarks(mark)
        if not job.notes.get("spills"):
            break
        tried.append(f"{used} threads: {_spill_words(job.notes['spills'])}")
        factor *= 2
    restore_remarks(first_remarks)
    return first, first_error, first_dumped


def _remark(module: ir.Operation, location: ir.Location, message: str, source) -> list[Diag]:
    """Emits a remark at `location`: to the tools' collector when there is
    one, else returned (for CompileResult.remarks)."""
    held: list[Diag] = []
    with collect_diagnostics(module.context, held, source):
        emit_remark(location, message, origin="tile-compile", kind="speed")
    return shown_remarks(held)


# --------------------------------------------------------------------------
# The Python API
# --------------------------------------------------------------------------


def _resolve(target: str | Target | None, module: ir.Operation) -> Target:
    from tilemlir.targets.selection import select_target

    return select_target(target, module)  # tile-compile's rule, the same function


def compile(
    module_or_text: str | ir.Module | ir.Operation | ir.OpView,
    target: str | Target | None = None,
    emit: str | None = None,
    options: CompileOptions | dict | None = None,
    *,
    remarks: str | None = None,
) -> CompileResult:
    """Compiles tile IR or GPU-level IR for a target.

    `target` and `emit` default as tile-compile's --target and --emit do
    (README.md, "Which target, which artefact"; `targets.selection`):
    `target` is "amdgpu:gfx942", a chip one family ships ("gfx942"), a family
    ("cuda"), a descriptor path or a Target; None takes the module's
    `tile.target`, else $TILEMLIR_TARGET, else this machine's GPU, else raises
    a TargetError saying how to name one. `emit` is a stage of the target's
    backend (`emits()` lists them all); None is the backend's default stage
    (`default_emit`: amdgpu isa, metax maca, nvidia ptx; emit="hsaco" for
    AMD's code object). `options`: CompileOptions or a dict of its fields.
    `remarks`: which remarks `CompileResult.remarks` holds, as tile-compile's
    --remarks takes them (none, all, default, or a regex over pass names;
    None: `diagnostics.configure_remarks`'s setting, "default" unless set). A
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
    with remarks_configured(remarks):
        return compile_module(module, _resolve(target, module), emit, options, source=source, seconds=seconds)
