"""tile-tune: search the tilings of a whole-problem GEMM and record the best in a tuning database.

    tile-tune gemm.mlir --target amdgpu:gfx942 --budget 8 --jobs 2 --db tuning.json
    tile-compile gemm.mlir --target amdgpu:gfx942 --tuning-db tuning.json --report   # config_source "tuning-db"
    tile-tune gemm.mlir --target nvidia:sm_90a --measure device --prepare DIR          # then, by the GPU:
    python3 DIR/measure.py DIR;  tile-tune --merge DIR --db tuning.json

The candidates are tile-tiling's configurations that fit the target, the
default (what tile-compile chooses) first, then the fastest by the cost model
(`tilemlir.tune.search`); `--budget N` compiles the first N, in `--jobs`
worker processes or as Ray tasks (`--executor ray`). `--measure model` ranks
them by the cost model fed with each compiled kernel's figures; `--measure
device` by their median time on an NVIDIA GPU, each first checked against
float64 (`tilemlir.runtime.gemm_timing`), here when this machine has the GPU,
or in two steps (`--prepare`, then `--merge`). The best is recorded per
(target, gemm signature, tile-IR hash) in the database (`tilemlir.tune.db`),
after every result, so an interrupted run keeps what it ranked.

stdout: the ranking, one candidate a line. stderr: a progress bar when it is
a terminal, and one summary line. Errors print as `file:line:col: error: ...`
(or `tile-tune: error: ...`), the exit status is 1; 130 when interrupted
(Ctrl-C), 143 on SIGTERM; a second signal while it stops changes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PROG = "tile-tune"
DEFAULT_BUDGET = 16
MEASURES = ("model", "device")
EXECUTORS = ("local", "ray")
BAR_WIDTH = 24

# The last summary, for the line printed when the run is interrupted.
_STATUS: list[str] = []


@dataclass
class Options:
    input: str | None = None
    target: str | None = None
    target_desc: str | None = None
    budget: int = DEFAULT_BUDGET
    jobs: int | None = None
    db: str | None = None
    measure: str = "model"
    executor: str = "local"
    ray_address: str = ""
    prepare: str | None = None
    merge: str | None = None
    seed: int = 0


def _parser():
    from tilemlir.targets.selection import TARGET_HELP
    from tilemlir.tools.common import ToolParser

    parser = ToolParser(
        PROG,
        description="Search the tilings of a whole-problem tile.gemm (block M/N/K, threads, stages,\n"
                    "instruction preference), compile the candidates in parallel, rank them by the cost\n"
                    "model or by measurement on a GPU, and record the best in a tuning database that\n"
                    "tile-compile reads.",
        epilog=_EPILOG,
    )
    parser.add_argument("input", nargs="?", help="input .mlir file with one whole-problem tile.gemm ('-' for stdin)")
    parser.add_argument("--target", metavar="FAMILY:NAME", help=TARGET_HELP)
    parser.add_argument("--target-desc", metavar="FILE", help="tune for the target described in FILE (.toml)")
    parser.add_argument("--budget", metavar="N", type=int, default=DEFAULT_BUDGET,
                        help=f"compile at most N candidates (default {DEFAULT_BUDGET})")
    parser.add_argument("--jobs", metavar="J", type=int, default=None,
                        help="compile J candidates at once (default: the CPUs, at most N)")
    parser.add_argument("--db", metavar="PATH",
                        help="the tuning database to write (default: $TILEMLIR_TUNING_DB, else "
                             "$XDG_CACHE_HOME/tilemlir/tuning.json)")
    parser.add_argument("--measure", choices=MEASURES, default="model",
                        help="rank by the cost model (default) or by time on an NVIDIA GPU")
    parser.add_argument("--executor", choices=EXECUTORS, default="local",
                        help="compile in local worker processes (default) or as Ray tasks")
    parser.add_argument("--ray-address", metavar="ADDR", default="",
                        help="with --executor ray: the cluster (default: a local Ray instance of J CPUs)")
    parser.add_argument("--prepare", metavar="DIR",
                        help="with --measure device: compile the candidates, inputs and the measuring "
                             "script into DIR (a new folder) instead of measuring here")
    parser.add_argument("--merge", metavar="DIR",
                        help="record the timings measured in DIR (by DIR/measure.py) in the database")
    parser.add_argument("--seed", type=int, default=0, help="with --measure device: the inputs' seed (default 0)")
    return parser


_EPILOG = """\
measure:
  model   the cost model (tilemlir.cost.model) fed with each compiled kernel's
          figures: llvm-mca's matrix busy ratio and the compiler's occupancy
          where the report has them, else the kernel's real shared memory
  device  the median of timed launches on an NVIDIA GPU, after one launch
          checked element by element against float64 (tile-run's tolerance);
          here if this machine has the GPU, else in two steps:
            tile-tune FILE --target nvidia:sm_90a --measure device --prepare DIR
            python3 DIR/measure.py DIR        (there: Python, NumPy, the CUDA driver)
            tile-tune --merge DIR [--db PATH]

database (a JSON file, one entry per line): the best configuration per
(target, gemm signature, tile-IR hash), its seconds and the default's.
tile-compile reads --tuning-db PATH, else $TILEMLIR_TUNING_DB, else the cache
file when it exists, and reports config_source "tuning-db".

exit status: 0 on success, 1 on any error, 130 when interrupted (Ctrl-C; 143 on
SIGTERM), the database keeping the best ranked so far.
"""


def parse_args(argv: list[str]) -> Options:
    from tilemlir.diagnostics import UserError

    options = Options(**vars(_parser().parse_command_line(argv)))
    if options.merge is not None:
        given = [flag for flag, value in (("FILE", options.input), ("--target", options.target),
                                          ("--target-desc", options.target_desc),
                                          ("--prepare", options.prepare)) if value]
        if given:
            raise UserError(f"--merge records measured timings and takes only --db, not {', '.join(given)}")
        return options
    if options.input is None:
        raise UserError("give the input FILE (or --merge DIR)")
    if options.target and options.target_desc:
        raise UserError("give either --target or --target-desc, not both")
    if options.budget < 1:
        raise UserError(f"--budget must be at least 1, got {options.budget}")
    if options.jobs is not None and options.jobs < 1:
        raise UserError(f"--jobs must be at least 1, got {options.jobs}")
    if options.prepare is not None and options.measure != "device":
        raise UserError("--prepare writes candidates to measure on a device: give --measure device")
    if options.ray_address and options.executor != "ray":
        raise UserError("--ray-address is for --executor ray")
    return options


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

class Progress:
    """A one-line progress bar on stderr when it is a terminal; nothing otherwise."""

    def __init__(self, total: int, verb: str, stream=None):
        self.total, self.verb = total, verb
        self.stream = stream or sys.stderr
        self.shown = self.stream.isatty()
        self.done = 0

    def step(self, note: str = "") -> None:
        self.done += 1
        if self.shown:
            filled = BAR_WIDTH * self.done // max(1, self.total)
            self.stream.write(f"\r{PROG}: [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done}/{self.total} "
                              f"{self.verb}{'; ' + note if note else ''}\x1b[K")
            self.stream.flush()

    def close(self) -> None:
        if self.shown and self.done:
            self.stream.write("\n")
            self.stream.flush()


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.3f} us"


def _first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    chosen = next((line for line in lines if ": error: " in line), lines[0] if lines else "")
    return chosen.strip()


def ranking_table(ranking, measure: str) -> str:
    """The ranking as text: rank, seconds, compile time, configuration."""
    lines = [f"{'rank':>4}  {measure + ' time':>13}  {'compile':>8}  configuration"]
    rank = 0
    for result in ranking.ranked():
        compiled = "-" if result.compile_seconds is None else f"{result.compile_seconds:.1f} s"
        label = result.config.describe() + (" (default)" if result.default else "")
        if result.seconds is None:
            lines.append(f"{'-':>4}  {'-':>13}  {compiled:>8}  {label}: {result.error}")
            continue
        rank += 1
        lines.append(f"{rank:>4}  {_us(result.seconds):>13}  {compiled:>8}  {label}")
    return "\n".join(lines) + "\n"


def summary(ranking, started: float, database: Path | None, jobs: int | None = None) -> str:
    best, default = ranking.best(), ranking.default()
    ranked = sum(r.seconds is not None for r in ranking.results.values())
    how = f" ({jobs} job{'s' if jobs != 1 else ''})" if jobs else ""
    text = f"{ranked} of {ranking.total} candidates ranked by {ranking.measure} in " \
           f"{time.perf_counter() - started:.1f} s{how}"
    if best is not None:
        text += f"; best {best.config.describe()}: {_us(best.seconds)}"
        text += f", default {_us(default.seconds) if default else 'not ranked'}"
    if database is not None and ranking.entry() is not None:
        text += f"; recorded in {database}"
    return text


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------

def _load(options: Options):
    """(module, source, target) of the input; parse errors as a CompileError."""
    from tilemlir.backends.driver import CompileError
    from tilemlir.diagnostics import ParseFailure, collect_diagnostics, parse_chunk, split_input
    from tilemlir.dialects import tile
    from tilemlir.targets import select_target
    from tilemlir.tools.common import read_input

    source = read_input(options.input)
    context = tile.make_context()
    (chunk,) = split_input(source, False)
    diags: list = []
    with collect_diagnostics(context, diags, source):
        try:
            module = parse_chunk(chunk, context)
        except ParseFailure as failure:
            raise CompileError(failure.diags, source) from None
    return module, source, select_target(options.target_desc or options.target, module)


def _executor(options: Options, jobs: int):
    from tilemlir.tune.search import local_executor, ray_executor

    if options.executor == "ray":
        return ray_executor(jobs, options.ray_address)
    return local_executor(jobs)


def _compile_all(options: Options, jobs_list: list, jobs: int, on_outcome) -> None:
    with _executor(options, jobs) as execute:
        for outcome in execute(jobs_list):
            on_outcome(outcome)


def _tune_by_model(options, module, source, target, tuned, chosen, jobs: int) -> int:
    from tilemlir.backends.driver import default_emit
    from tilemlir.cost.model import DoesNotFit
    from tilemlir.tune.db import database_path, load_database, record_entry, writing
    from tilemlir.tune.ranking import Ranking, Result
    from tilemlir.tune.search import compile_job, model_seconds

    path = database_path(options.db, os.environ, for_writing=True)
    load_database(path, missing_ok=True)  # a foreign or corrupt file fails before anything compiles
    started = time.perf_counter()
    ranking = Ranking(tuned.key(target), len(chosen), "model")
    emit = default_emit(target.family)
    work = [compile_job(c, i, source.text, source.name, target, emit) for i, c in enumerate(chosen)]
    progress = Progress(len(work), "compiled")

    def on_outcome(outcome) -> None:
        candidate = chosen[outcome.index]
        seconds, error = None, _first_line(outcome.error)
        if outcome.report is not None:
            try:
                seconds = model_seconds(tuned.problem, candidate, outcome.report, target)
            except DoesNotFit as why:
                error = f"the compiled kernel does not fit a CU: {why}"
        ranking.add(Result(outcome.index, candidate.tuned(), candidate.default, seconds, error, outcome.seconds))
        # One step for a Ctrl-C (`_stop_now` waits for it): the entry written,
        # then the line that says so.
        with writing():
            entry = ranking.entry()
            if entry is not None:
                record_entry(path, entry)
            _STATUS[:] = [summary(ranking, started, path)]
        best = ranking.best()
        progress.step(f"best {_us(best.seconds)}" if best else "")

    try:
        _compile_all(options, work, jobs, on_outcome)
    finally:
        progress.close()
    return _finish(ranking, started, path, jobs)


def _finish(ranking, started: float, path: Path, jobs: int | None) -> int:
    from tilemlir.diagnostics import UserError

    sys.stdout.write(ranking_table(ranking, ranking.measure))
    sys.stdout.flush()
    if ranking.best() is None:
        errors = [r.error for r in ranking.ranked() if r.error]
        raise UserError(f"none of the {ranking.total} candidates could be ranked; the first: "
                        f"{errors[0] if errors else 'no result'}")
    sys.stderr.write(f"{PROG}: {summary(ranking, started, path, jobs)}\n")
    return 0


# -- measuring on a device ---------------------------------------------------

def _require_ptx(target) -> None:
    from tilemlir.backends.driver import stage_names
    from tilemlir.diagnostics import UserError

    if "ptx" not in stage_names(target.family):
        raise UserError(f"--measure device times PTX through the CUDA driver (NVIDIA targets); the "
                        f"{target.family} backend of {target} emits none: use --measure model")


def _prepare(options, module, source, target, tuned, chosen, jobs: int, folder: Path) -> list:
    """Compiles the candidates to PTX into `folder` with the inputs, the
    manifest and the measuring script; returns the ranking's placeholders
    (compile failures)."""
    from tilemlir.diagnostics import UserError
    from tilemlir.irutil import parent_ops
    from tilemlir.passes.tiling import whole_problem_gemms
    from tilemlir.runtime import gemm_timing
    from tilemlir.runtime.gemm_inputs import write_gemm_inputs
    from tilemlir.tune.db import config_json, key_json
    from tilemlir.tune.search import compile_job

    gemm = whole_problem_gemms(module)[0][0]
    function_op = next(op for op in parent_ops(gemm) if op.name == "func.func")
    inputs = write_gemm_inputs(folder, function_op, options.seed)
    work = [compile_job(c, i, source.text, source.name, target, "ptx", str(folder / f"cand{i}"))
            for i, c in enumerate(chosen)]
    outcomes = {}
    progress = Progress(len(work), "compiled")

    def on_outcome(outcome) -> None:
        outcomes[outcome.index] = outcome
        progress.step()

    try:
        _compile_all(options, work, jobs, on_outcome)
    finally:
        progress.close()
    if not any(o.report is not None for o in outcomes.values()):
        first = next(iter(outcomes.values()))
        raise UserError(f"none of the {len(work)} candidates compiled; the first: {_first_line(first.error)}")
    manifest = {
        "format": gemm_timing.MANIFEST_FORMAT, "version": gemm_timing.VERSION,
        "key": key_json(tuned.key(target)), "inputs": inputs,
        "candidates": [{"name": f"cand{i}", "json": f"cand{i}.json", "config": config_json(c.tuned()),
                        "default": c.default, "describe": c.tuned().describe(),
                        "compiled": outcomes[i].report is not None,
                        "compile_seconds": round(outcomes[i].seconds, 3),
                        "error": _first_line(outcomes[i].error)} for i, c in enumerate(chosen)],
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    runtime = Path(gemm_timing.__file__).parent
    shutil.copyfile(runtime / "gemm_timing.py", folder / "measure.py")
    shutil.copyfile(runtime / "cuda_launch.py", folder / "cuda_launch.py")
    return manifest


def _new_folder(path: str) -> Path:
    from tilemlir.diagnostics import UserError

    folder = Path(path)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UserError(f"--prepare {path}: give a new or empty folder (this one holds files)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"--prepare {path}: cannot create the folder: {error.strerror or error}") from None
    return folder


def merge(folder: Path, db: str | None) -> int:
    """Records the timings measured in `folder` (`--merge`)."""
    from tilemlir.diagnostics import UserError
    from tilemlir.runtime.gemm_timing import MeasureError, read_manifest, read_timings
    from tilemlir.tune.db import (
        Malformed,
        config_from,
        database_path,
        key_from,
        load_database,
        record_entry,
    )
    from tilemlir.tune.ranking import Ranking, Result

    started = time.perf_counter()
    try:
        manifest = read_manifest(folder)
        timings = read_timings(folder)
    except MeasureError as error:
        raise UserError(str(error)) from None
    try:
        key = key_from(manifest, "key")
        candidates = [(c["name"], config_from(c, "config"), bool(c.get("default")), c)
                      for c in manifest["candidates"]]
    except (Malformed, KeyError, TypeError) as error:
        raise UserError(f"{folder / 'manifest.json'}: malformed: {error}") from None
    if not timings:
        raise UserError(f"{folder} has no timings yet: run `python3 {folder / 'measure.py'} {folder}` "
                        f"where the GPU is, then merge")
    path = database_path(db, os.environ, for_writing=True)
    load_database(path, missing_ok=True)
    ranking = Ranking(key, len(candidates), "device")
    for index, (name, config, default, record) in enumerate(candidates):
        timing = timings.get(name)
        if not record.get("compiled"):
            ranking.add(Result(index, config, default, None, f"did not compile: {record.get('error', '')}"))
        elif isinstance(timing, dict) and timing.get("ok") and isinstance(timing.get("seconds"), (int, float)) \
                and timing["seconds"] > 0:
            ranking.add(Result(index, config, default, float(timing["seconds"]), "",
                               record.get("compile_seconds")))
        elif isinstance(timing, dict):
            ranking.add(Result(index, config, default, None, str(timing.get("error", "no time"))))
    entry = ranking.entry()
    if entry is not None:
        record_entry(path, entry)
    return _finish(ranking, started, path, None)


def _tune_on_device(options, module, source, target, tuned, chosen, jobs: int) -> int:
    from tilemlir.diagnostics import UserError
    from tilemlir.runtime import cuda_launch, gemm_timing
    from tilemlir.tune.db import database_path, load_database

    _require_ptx(target)
    if options.prepare is not None:
        folder = _new_folder(options.prepare)
        manifest = _prepare(options, module, source, target, tuned, chosen, jobs, folder)
        compiled = sum(c["compiled"] for c in manifest["candidates"])
        sys.stderr.write(f"{PROG}: {compiled} of {len(chosen)} candidates compiled into {folder}; measure "
                         f"them with `python3 {folder / 'measure.py'} {folder}` where the GPU is, then "
                         f"`{PROG} --merge {folder}`\n")
        return 0
    try:
        cuda_launch.driver()
    except cuda_launch.CudaError as error:
        raise UserError(f"--measure device needs an NVIDIA GPU on this machine ({error}); or measure in "
                        f"two steps: --prepare DIR here, `python3 DIR/measure.py DIR` where the GPU is, "
                        f"then --merge DIR") from None
    load_database(database_path(options.db, os.environ, for_writing=True), missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="tile-tune.") as scratch:
        folder = Path(scratch)
        _prepare(options, module, source, target, tuned, chosen, jobs, folder)
        gemm_timing.measure(folder, say=lambda line: sys.stderr.write(f"{PROG}: {line}\n"))
        return merge(folder, options.db)


def run(argv: list[str]) -> int:
    from tilemlir.backends.driver import CompileError
    from tilemlir.diagnostics import UserError
    from tilemlir.tune.db import TuningDatabaseError
    from tilemlir.tune.search import candidates, tune_problem

    options = parse_args(argv)
    try:
        if options.merge is not None:
            return merge(Path(options.merge), options.db)
        module, source, target = _load(options)
        tuned = tune_problem(module, target, source)
        found = candidates(tuned.problem, target)
        if not found:
            raise UserError(f"no configuration of the search space fits this {tuned.signature} gemm on "
                            f"{target}; tile-compile tiles it by its fixed rule, and there is nothing to "
                            f"choose among")
        chosen = found[:options.budget]
        jobs = min(options.jobs or os.cpu_count() or 1, len(chosen))
        if options.measure == "device":
            return _tune_on_device(options, module, source, target, tuned, chosen, jobs)
        return _tune_by_model(options, module, source, target, tuned, chosen, jobs)
    except (CompileError, TuningDatabaseError) as error:
        sys.stderr.write(f"{error}\n")  # already `file:line:col: error: ...`
        return 1


def main(argv: list[str] | None = None) -> int:
    from tilemlir.tools.common import guarded_main

    restore = _stop_on_signals()
    try:
        status = guarded_main(PROG, run, sys.argv[1:] if argv is None else argv)
        _RUN["finished"] = True  # from here a signal changes nothing: the run is over
    except KeyboardInterrupt:  # the signal came as the run returned
        status = 130
    if _RUN["signal"] or status == 130:
        status = 128 + (_RUN["signal"] or signal.SIGINT)  # 130 for SIGINT, 143 for SIGTERM
        from tilemlir.irutil import write_user_stderr
        from tilemlir.tune.db import stop_writing

        stop_writing()  # the update under way ends first, with the line that says what it recorded
        # The run's thread may be compiling, its native stderr captured.
        write_user_stderr(f"{PROG}: interrupted; {_STATUS[0] if _STATUS else 'nothing was ranked'}\n")
        _stop_now(status)
    restore()
    return status


# The first SIGINT or SIGTERM of the run (0: none), and whether the run is over.
_RUN = {"signal": 0, "finished": False}


def _on_signal(signum: int, frame) -> None:
    """Ctrl-C or SIGTERM (`timeout`, a scheduler) stops the run: the first one
    raises KeyboardInterrupt where the main thread is; any later one, which
    would interrupt the stopping itself (a second Ctrl-C, a terminal's and
    `timeout`'s), is taken as said already."""
    if _RUN["signal"] or _RUN["finished"]:
        return
    _RUN["signal"] = signum
    raise KeyboardInterrupt


def _stop_on_signals():
    """Installs `_on_signal` for SIGINT and SIGTERM where they have their
    default action (a signal the caller ignores stays ignored; handlers can
    only be set on the main thread); returns what puts the old ones back."""
    import threading

    _RUN.update(signal=0, finished=False)
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {}
    for signum, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
        if signal.getsignal(signum) is default:
            previous[signum] = signal.signal(signum, _on_signal)

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    return restore


def _stop_now(status: int = 130) -> None:
    """Ends the process after Ctrl-C without the interpreter's shutdown: the
    run's thread may be inside MLIR, whose objects cannot be torn down then
    (nanobind aborts). A database write in progress on that thread finishes
    first and later ones are blocked (`db.stop_writing`), so the database is
    whole and no temporary file is left; the worker processes and a local Ray
    instance are stopped too."""
    import multiprocessing

    from tilemlir.tune.db import stop_writing

    stop_writing()
    for child in multiprocessing.active_children():
        child.terminate()
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    sys.exit(main())
