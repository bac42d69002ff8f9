"""tile-tune's search: the candidates for a whole-problem GEMM, their compiles, their ranking.

    tuned = tune_problem(module, target, source)          # the one whole-problem tile.gemm
    chosen = candidates(tuned.problem, target)[:budget]   # the default first, then by the model
    jobs = [compile_job(c, i, text, name, target) for i, c in enumerate(chosen)]
    with local_executor(2) as executor:                   # or ray_executor(...)
        for outcome in executor(jobs): ...                # in the order they finish
    model_seconds(tuned.problem, chosen[i], outcome.report, target)

The candidates are tile-tiling's configurations that fit the target
(`passes.gemm_configs.candidate_configs`: block M/N/K, threads, stages, each
with the instruction and wave split tile-select-mma gives it, and with each
instruction it takes only when preferred, such as a warpgroup's wgmma:
`select = "prefer=..."`), and split-K where C can take the slices' atomic
adds. They are ordered by the cost model's prediction from the
configuration alone, tile-tiling's own order (`passes.tiling.rank_configs`), so
the first is tile-compile's default; a budget of N takes the first N. The
default is compiled without options, exactly as tile-compile compiles it; the
others with their options.

Measured by the model (`model_seconds`), a compiled candidate's time is the
cost model's prediction fed with what the compiled kernel shows and the model
otherwise estimates: the matrix unit's busy ratio in the main loop (llvm-mca,
where the report has it) and the workgroups a CU holds (the compiler's
occupancy where the report has it, else the model's with the kernel's real
shared-memory size). Measured on a device, it is the median time of its
launches (`tilemlir.runtime.gemm_timing`).

Compiles run in worker processes (`local_executor`: spawned, so MLIR's state
is never forked) or as Ray tasks (`ray_executor`); `compile_candidate` is the
function both run, and it never raises: a candidate that does not compile is
an outcome with its error.
"""

from __future__ import annotations

import contextlib
import json
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mlir import ir

from tilemlir.backends.driver import CompileError
from tilemlir.cost.facts import model_facts
from tilemlir.cost.model import (
    GemmProblem,
    GemmShape,
    KernelConfig,
    kernel_figures,
    occupancy,
    predict,
)
from tilemlir.diagnostics import Diag, SourceBuffer, UserError, emit_remark, file_position
from tilemlir.passes.gemm_configs import gemm_problem
from tilemlir.passes.gemm_facts import gemm_shape, memref_of
from tilemlir.passes.tiling import ranked_candidates, whole_problem_gemms
from tilemlir.targets.model import Target
from tilemlir.tune.db import (
    OpSignature,
    TunedConfig,
    TuningDatabase,
    TuningEntry,
    TuningKey,
    memory_layout,
)

RAY_HINT = "pip install tilemlir[ray]"


# --------------------------------------------------------------------------
# What is tuned
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class TunedGemm:
    """The one whole-problem tile.gemm of a module, as tile-tune tunes it."""

    signature: OpSignature
    problem: GemmProblem

    def key(self, target: Target) -> TuningKey:
        return TuningKey.of(target, self.signature)


def _signature(op: ir.Operation, shape: GemmShape, zero_init: bool) -> OpSignature:
    """The problem a whole-problem tile.gemm poses: nothing of its function's
    or values' names, or of where it is written."""
    layouts = []
    for operand in op.operands[:3]:
        memref = memref_of(operand)
        strides, offset = memref.get_strides_and_offset()
        layouts.append(memory_layout(list(strides), offset, list(memref.shape)))
    return OpSignature(shape.m, shape.n, shape.k, shape.a, shape.b, shape.c, shape.accum,
                       shape.transpose_a, shape.transpose_b, not zero_init, tuple(layouts))


def _tunable_gemm(module: ir.Operation) -> tuple[ir.Operation, OpSignature] | None:
    pairs = whole_problem_gemms(module)
    if len(pairs) != 1:
        return None
    op, fill = pairs[0]
    shape = gemm_shape(op)
    if min(shape.m, shape.n, shape.k) < 0:  # dynamic
        return None
    return op, _signature(op, shape, fill is not None)


def tuning_key(module: ir.Operation, target: Target) -> TuningKey | None:
    """The database key of a module with one whole-problem gemm of static
    shape (what tile-tune tunes); None for any other module."""
    found = _tunable_gemm(module)
    return TuningKey.of(target, found[1]) if found is not None else None


def find_entry(database: TuningDatabase, module: ir.Operation, target: Target) -> TuningEntry | None:
    """The database's entry for the module's gemm on `target`, or None. A
    miss with near matches (`TuningDatabase.near_matches`: one extent, type,
    transpose or the target apart) is a remark at the gemm naming each and
    what differs, so a configuration does not go unused without a word."""
    found = _tunable_gemm(module)
    if found is None:
        return None
    op, signature = found
    key = TuningKey.of(target, signature)
    entry = database.lookup(key)
    if entry is None:
        near = database.near_matches(key)
        if near:
            listed = "; ".join(f"the entry for {e.key.op} on {e.key.target} ({differences[0]})"
                               for e, differences in near[:3])
            more = f" and {len(near) - 3} more" if len(near) > 3 else ""
            emit_remark(op.location, f"tuning database {database.path} has no entry for this gemm "
                                     f"({signature}) on {target.qualified_name}, and the cost model "
                                     f"chooses its configuration; near matches: {listed}{more}",
                        origin="tuning-db", kind="speed")
    return entry


def tune_problem(module: ir.Operation, target: Target, source: SourceBuffer) -> TunedGemm:
    """The gemm tile-tune tunes in `module`; a CompileError saying why when
    there is not exactly one whole-problem gemm of static shape."""
    pairs = whole_problem_gemms(module)

    def refuse(message: str, op: ir.Operation | None = None) -> CompileError:
        if op is None:
            return CompileError([Diag("error", message, source.name)], source)
        file, line, col = source.map_position(*file_position(op.location))
        return CompileError([Diag("error", message, file, line, col)], source)

    if not pairs:
        raise refuse("tile-tune tunes a whole-problem tile.gemm (one outside any tile.kernel, which "
                     "tile-tiling tiles), and this module has none")
    if len(pairs) > 1:
        raise refuse(f"tile-tune tunes one whole-problem tile.gemm per module, and this one has "
                     f"{len(pairs)}; put each in a file of its own", pairs[1][0])
    op, fill = pairs[0]
    shape = gemm_shape(op)
    if min(shape.m, shape.n, shape.k) < 0:
        raise refuse("tile-tune needs static GEMM shapes (tile-tiling does not tile dynamic ones)", op)
    return TunedGemm(_signature(op, shape, fill is not None), gemm_problem(shape, target, fill is not None))


# --------------------------------------------------------------------------
# Candidates
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Candidate:
    """One configuration to compile (`config`: tile-tiling's part and the
    instruction preference it needs); `default` is tile-compile's choice."""

    config: KernelConfig
    default: bool = False

    @property
    def select(self) -> str:
        """tile-select-mma's options that give the config's instruction."""
        return f"prefer={self.config.prefer}" if self.config.prefer else ""

    def tuned(self) -> TunedConfig:
        return TunedConfig(self.config.block, self.config.threads, self.config.stages, self.select,
                           self.config.instruction.name, self.config.split_k)

    def tiling_options(self) -> str:
        return "" if self.default else self.tuned().tiling_options()


def candidates(problem: GemmProblem, target: Target) -> list[Candidate]:
    """Every candidate, fastest by the cost model first (tile-tiling's order:
    the first is tile-compile's default); empty when no configuration fits."""
    ranked = ranked_candidates(problem, target)
    return [Candidate(config, default=index == 0) for index, (_, config) in enumerate(ranked)]


# --------------------------------------------------------------------------
# Compiling one candidate (in a worker process or a Ray task)
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class CompileJob:
    """What a worker needs to compile one candidate: plain values, picklable."""

    index: int
    text: str  # the module
    name: str  # the input's name, for messages
    target: str  # a target name or descriptor path (backends.driver.target_spec)
    emit: str
    tiling: str = ""
    select: str = ""
    save_as: str = ""  # with emit ptx: write SAVE_AS.ptx and SAVE_AS.json (the launch metadata)


@dataclass(frozen=True)
class CompileOutcome:
    index: int
    report: dict | None  # tile-compile --report's, None when it failed
    error: str = ""
    seconds: float = 0.0  # wall time of the compile


def compile_job(candidate: Candidate, index: int, text: str, name: str, target: Target, emit: str,
                save_as: str = "") -> CompileJob:
    from tilemlir.backends.driver import target_spec

    return CompileJob(index, text, name, target_spec(target), emit, candidate.tiling_options(),
                      candidate.select, save_as)


def compile_candidate(job: CompileJob) -> CompileOutcome:
    """Compiles one candidate with --report; never raises."""
    from tilemlir.compiler import CompileOptions, compile_module
    from tilemlir.diagnostics import Chunk, ParseFailure, parse_chunk
    from tilemlir.dialects import tile
    from tilemlir.targets import resolve_target

    start = time.perf_counter()
    source = SourceBuffer(job.name, job.text)
    try:
        try:
            module = parse_chunk(Chunk(source, job.text, 1), tile.make_context())
        except ParseFailure as failure:
            raise CompileError(failure.diags, source) from None
        result = compile_module(module, resolve_target(module, job.target), job.emit,
                                CompileOptions(report=True, tiling=job.tiling, select=job.select), source=source)
        fallback = (result.report or {}).get("spill_fallback")
        if fallback is not None:
            # The default candidate is the model's first configuration as it is: the
            # one tile-compile fell back to is a candidate of its own.
            (first, *_) = fallback["tried"]
            return CompileOutcome(job.index, None, f"{first['configuration']} spills registers",
                                  time.perf_counter() - start)
        if job.save_as:
            save = Path(job.save_as)
            save.with_suffix(".ptx").write_text(result.artifacts["ptx"], encoding="utf-8")
            metadata = {"target": result.report["target"], "functions": result.report["functions"],
                        "ptx": save.with_suffix(".ptx").name}
            save.with_suffix(".json").write_text(json.dumps(metadata, indent=1) + "\n", encoding="utf-8")
    except UserError as error:
        return CompileOutcome(job.index, None, str(error), time.perf_counter() - start)
    except Exception as error:  # noqa: BLE001 - a bug in tilemlir: one candidate's outcome, not a crash
        return CompileOutcome(job.index, None, f"internal error: {type(error).__name__}: {error}",
                              time.perf_counter() - start)
    return CompileOutcome(job.index, result.report, "", time.perf_counter() - start)


# --------------------------------------------------------------------------
# Ranking by the model
# --------------------------------------------------------------------------

def shared_bytes_of(report: dict) -> int | None:
    """The compiled kernels' largest shared memory per workgroup, as the report
    gives it (docs/report.md); None when no kernel's is known."""
    sizes = [k["shared_bytes"] for k in report["kernels"] if isinstance(k["shared_bytes"], int)]
    return max(sizes) if sizes else None


def _occupancy_of(report: dict) -> int | None:
    """The compiled kernels' lowest occupancy (waves per SIMD), None unless every kernel's is known."""
    waves = [k["occupancy"] for k in report["kernels"]]
    return min(waves) if waves and all(isinstance(w, int) for w in waves) else None


def _busy_ratio_of(report: dict) -> float | None:
    """The lowest matrix-unit busy ratio in a kernel's main loop, where the
    family's section of the report has one (amdgpu's llvm-mca estimate)."""
    ratios = [k[report["family"]].get("mfma_busy_ratio") for k in report["kernels"]]
    ratios = [r for r in ratios if isinstance(r, (int, float)) and r > 0]
    return min(ratios) if ratios else None


def compiled_resident(problem: GemmProblem, config: KernelConfig, report: dict, target: Target) -> int | None:
    """Workgroups a CU holds at once as the compiled kernel allows: from the
    compiler's occupancy (waves per SIMD) where the report has it, else the
    model's bounds with the kernel's real shared memory; None without either."""
    facts = model_facts(target)
    waves = config.threads // facts.wave_size
    occupancy_waves = _occupancy_of(report)
    if occupancy_waves is not None:
        return occupancy_waves * facts.simds_per_cu // waves
    shared = shared_bytes_of(report)
    if shared is None:
        return None
    limits = occupancy(kernel_figures(problem, config, facts), facts)
    limits["lds"] = facts.shared_bytes_per_cu // max(1, shared)
    return min(limits.values())


def model_seconds(problem: GemmProblem, candidate: Candidate, report: dict, target: Target) -> float:
    """The cost model's prediction for a compiled candidate (module
    docstring); DoesNotFit when the compiled kernel does not fit a CU."""
    return predict(problem, candidate.config, target, busy_ratio=_busy_ratio_of(report),
                   resident=compiled_resident(problem, candidate.config, report, target)).seconds


# --------------------------------------------------------------------------
# Executors
# --------------------------------------------------------------------------

Executor = Callable[[list[CompileJob]], Iterator[CompileOutcome]]


def _ignore_interrupts() -> None:
    """Workers leave Ctrl-C to tile-tune, which stops them (no traceback from each)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def local_executor(jobs: int) -> Iterator[Executor]:
    """Compiles in `jobs` spawned worker processes (in this process when 1);
    leaving the block stops the workers, finished or not."""
    if jobs <= 1:
        yield lambda work: (compile_candidate(job) for job in work)
        return
    import multiprocessing

    pool = multiprocessing.get_context("spawn").Pool(jobs, initializer=_ignore_interrupts)
    try:
        yield lambda work: pool.imap_unordered(compile_candidate, work, chunksize=1)
    finally:
        pool.terminate()
        pool.join()


@contextlib.contextmanager
def ray_executor(jobs: int, address: str = "") -> Iterator[Executor]:
    """Compiles as Ray tasks: on the cluster at `address`, else on a local
    Ray instance of `jobs` CPUs started for the run and shut down after it.
    The cluster's nodes need tilemlir installed as here."""
    try:
        import ray
    except ImportError:
        raise UserError(f"--executor ray needs ray: {RAY_HINT}") from None
    options = {"address": address} if address else {"address": "local", "num_cpus": jobs}
    try:
        ray.init(include_dashboard=False, log_to_driver=False, logging_level="ERROR", **options)
    except Exception as error:  # noqa: BLE001 - Ray's own errors are of many kinds
        where = f"reach the Ray cluster at {address}" if address else "start a local Ray instance"
        raise UserError(f"--executor ray: could not {where}: {type(error).__name__}: {error}") from None
    remote = ray.remote(num_cpus=1)(compile_candidate)

    def run(work: list[CompileJob]) -> Iterator[CompileOutcome]:
        pending = [remote.remote(job) for job in work]
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                yield ray.get(done[0])
        finally:
            for task in pending:
                ray.cancel(task, force=True)

    try:
        yield run
    finally:
        ray.shutdown()
