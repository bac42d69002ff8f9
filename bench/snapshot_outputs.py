"""Every kernel the project has, compiled and written out: proof that a refactor changed nothing.

    export PATH=/usr/lib/llvm-22/bin:$PWD/.venv/bin:$PATH        # the LLVM 22 tools
    python bench/snapshot_outputs.py build/before --jobs 2
    ... change the compiler ...
    python bench/snapshot_outputs.py build/after --jobs 2
    python bench/snapshot_outputs.py --compare build/before build/after   # or diff -r

DIR must be empty or absent. `--only SUBSTR` keeps the compiles whose name (the file name
below, without the stage) contains SUBSTR, e.g. `--only gfx950` or `--only bench__gemm`;
`--list` prints the compiles (and what is not covered) without compiling. `--compare A B`
prints the names of the files that differ or exist on one side only, then how many files it
compared; its exit status is 1 if any differ or are missing.

What is compiled, each compile in a worker process (`--jobs`, default 1):

1. Every `// -----` chunk of every .mlir file under examples/ and test/ (cut as
   `--split-input-file` cuts), except negative tests (chunks containing `expected-error`),
   with `tilemlir.compile(text, target, emit, {"report": True})`: for the chunk's own
   `tile.target` if it has one, else, when it has tile ops, for each of TARGETS; the stage
   emitted is the family's last (FINAL_STAGE: amdgpu isa, metax maca, nvidia ptx). A chunk
   with neither is compiled for the API's default target if it holds a gpu.module
   (GPU-level input), and not at all otherwise; a chunk MLIR cannot parse is compiled once,
   with no target, which records its parse error.
2. The RUN lines that lit runs (test/, not Inputs/; .mlir and .test) and that invoke
   tile-compile, with their `--target`, `--target-desc`, `--emit`, `--tiling`, `--select`,
   `--pass-options`, `--report`, `--allow-spills` and `--dump-pass-pipeline` (written as
   the lines `tilemlir.compiler.compile_module(..., dump_pipeline=)` gives), on the file they name (lit's %s,
   %S, %examples, %repo), on `echo '...' |` or on `sed 's/A/B/[g]; ...' FILE |` where every
   pattern is a literal string. With `--verify-diagnostics`, each chunk without
   `expected-error` is compiled (chunks only with `--split-input-file`). Where a RUN line
   names no target and its input no `tile.target`, the API's default (amdgpu:gfx942) is used
   where tile-compile would stop with "no target". A RUN line whose compile is one already
   listed (same text, target, emit and options) is not repeated. Not covered, and listed in
   the summary: other producers of stdin, sed scripts with regex syntax, unknown flags, and
   command lines tile-compile refuses before compiling (--target with --target-desc,
   --split-input-file without --verify-diagnostics, --emit hsaco without -o).
3. The bench kernels: bench/gemm.py's TEST_CASES and its candidates() for every shape and
   dtype, each through its own `compile_case` (PTX and launch metadata, as `--prepare`
   writes them); bench/amd_vs_triton.py's CASES through `tilemlir.compile` as its `ours`
   does (ISA and report, no Triton) and, on chips where `direct_applies`, again with each
   of its ALTERNATIVE pass options.

Files, one per (kernel, target, stage), are named `SOURCE.VARIANT.TARGET.STAGE`:
  SOURCE   the path, `/` written `__` (`test__Transforms__pipeline.mlir`), or
           `bench__gemm.py`, `bench__amd_vs_triton.py`
  VARIANT  `chunkN`, `runN` or `runN.chunkN` (1-based: the Nth chunk, the Nth RUN line of
           the file), or a bench case's name
  TARGET   `amdgpu_gfx942`; `default` for the API's default target, `desc_NAME` for a
           descriptor file
  STAGE    every stage the compile returned (tile, gpu, llvm, isa, hsaco, maca, ptx);
           `report.json` (keys naming seconds removed, keys sorted); `launch.json`
           (bench/gemm.py's launch metadata); `pipeline.txt` (--dump-pass-pipeline, or
           `pipeline.error`); `error` (`ExceptionType: message` of a failed compile: errors
           must stay the same too)
In text files the repository's path is written `<repo>`, so snapshots of two checkouts
compare.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import multiprocessing
import os
import re
import shlex
import sys
import tempfile
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
TARGETS = ("amdgpu:gfx90a", "amdgpu:gfx942", "amdgpu:gfx950", "metax:xcore1000", "nvidia:sm_90a")
FINAL_STAGE = {"amdgpu": "isa", "metax": "maca", "nvidia": "ptx"}
DEFAULT_TAG = "default"  # a chunk that names no target: compiled for DEFAULT_TARGET
# What the API compiled for when nothing named a target, before that default
# became tilemlir.targets.selection's rule: pinned, so snapshots stay comparable.
DEFAULT_TARGET = "amdgpu:gfx942"
os.environ["TILEMLIR_TARGET"] = DEFAULT_TARGET  # the rule's step 3; workers inherit it
os.environ["TILEMLIR_GPU"] = "none"  # and never this machine's GPU
SPLIT_MARKER = "// -----"
NEGATIVE_MARKER = "expected-error"
LIT_EXCLUDES = {"Inputs", "lit_support", "Output"}  # what lit does not run (test/lit.cfg.py)
GEMM_TARGET_TAG = "nvidia:sm_90a"  # bench/gemm.py's TARGET


@dataclass(frozen=True)
class Job:
    """One compile, and the stem of the files it writes."""

    name: str
    text: str = ""
    target: str | None = None  # None: the module's tile.target, else DEFAULT_TARGET
    emit: str = "isa"
    options: tuple[tuple[str, object], ...] = ()  # CompileOptions fields, as sorted pairs
    dump_pipeline: bool = False
    gemm_case: tuple | None = None  # bench/gemm.py compile_case's arguments instead of `text`

    @property
    def key(self) -> tuple:
        """What the compile depends on: equal keys give equal outputs."""
        return (self.text, self.target, self.emit, self.options, self.dump_pipeline, self.gemm_case)


def compile_options(report: bool = False, allow_spills: bool = False, tiling: str = "",
                    select: str = "", passes: str = "") -> tuple[tuple[str, object], ...]:
    return tuple(sorted({"report": report, "allow_spills": allow_spills, "tiling": tiling,
                         "select": select, "passes": passes}.items()))


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)


def target_tag(target: str | None) -> str:
    """`amdgpu_gfx942` for a name, `desc_STEM` for a descriptor file."""
    if target is None:
        return DEFAULT_TAG
    if target.endswith(".toml") or "/" in target:
        return safe_name(f"desc_{Path(target).stem}")
    return safe_name(target)


def source_name(path: Path) -> str:
    return safe_name(path.relative_to(REPO).as_posix().replace("/", "__"))


def split_chunks(text: str) -> list[str]:
    """The `// -----` chunks, as tile-compile --split-input-file cuts them."""
    chunks, current = [], []
    for line in text.split("\n"):
        if line.strip() == SPLIT_MARKER:
            chunks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    chunks.append("\n".join(current))
    return chunks


def load_bench(name: str) -> ModuleType:
    """bench/NAME.py as a module (bench/ is not a package)."""
    module_name = f"_snapshot_bench_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, REPO / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------
# What each chunk is (parsed once, in the main process)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkFacts:
    parsed: bool
    target: str | None  # the module's tile.target
    tile_ops: bool
    gpu_module: bool


class ChunkInspector:
    def __init__(self):
        from tilemlir.dialects import tile

        self.context = tile.make_context()
        self.cache: dict[str, ChunkFacts] = {}

    def facts(self, text: str) -> ChunkFacts:
        if text not in self.cache:
            self.cache[text] = self._inspect(text)
        return self.cache[text]

    def _inspect(self, text: str) -> ChunkFacts:
        from mlir import ir

        from tilemlir.compiler import has_gpu_module, has_tile_ops

        try:
            module = ir.Module.parse(text, self.context).operation
        except Exception:  # noqa: BLE001 - any parse failure: the compile records it
            return ChunkFacts(False, None, False, False)
        target = None
        if "tile.target" in module.attributes:
            attribute = module.attributes["tile.target"]
            target = getattr(attribute, "value", None)
            target = target if isinstance(target, str) else str(attribute)
        return ChunkFacts(True, target, has_tile_ops(module), has_gpu_module(module))


def family_of(target: str | None) -> str:
    return target.split(":", 1)[0] if target and ":" in target else "amdgpu"


# --------------------------------------------------------------------------
# 1. Chunks of examples/ and test/
# --------------------------------------------------------------------------


def mlir_files() -> list[Path]:
    files = []
    for top in ("examples", "test"):
        files.extend(path for path in sorted((REPO / top).rglob("*.mlir"))
                     if "Output" not in path.relative_to(REPO).parts)
    return files


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def chunk_jobs(inspector: ChunkInspector, skipped: list[str]) -> list[Job]:
    jobs = []
    for path in mlir_files():
        text = read_text(path)
        if text is None:
            skipped.append(f"{source_name(path)}: not UTF-8")
            continue
        for number, chunk in enumerate(split_chunks(text), start=1):
            if NEGATIVE_MARKER in chunk:
                continue
            facts = inspector.facts(chunk)
            if not facts.parsed:
                targets = [(None, DEFAULT_TAG)]
            elif facts.target is not None:
                targets = [(None, facts.target)]
            elif facts.tile_ops:
                targets = [(target, target) for target in TARGETS]
            elif facts.gpu_module:
                targets = [(None, DEFAULT_TAG)]
            else:
                continue
            for target, tag in targets:
                jobs.append(Job(f"{source_name(path)}.chunk{number}.{target_tag(tag)}", chunk,
                                target, FINAL_STAGE.get(family_of(tag), "isa"),
                                compile_options(report=True)))
    return jobs


# --------------------------------------------------------------------------
# 2. RUN lines that invoke tile-compile
# --------------------------------------------------------------------------


class Unsupported(Exception):
    """A RUN line this script cannot turn into a compile."""


def run_commands(text: str) -> list[str]:
    """The file's RUN commands, `\\`-continued lines joined, as lit reads them."""
    commands, pending = [], ""
    for line in text.splitlines():
        match = re.search(r"\bRUN:(.*)$", line)
        if match is None:
            continue
        part = match.group(1).strip()
        if part.endswith("\\"):
            pending += part[:-1] + " "
            continue
        commands.append(pending + part)
        pending = ""
    return commands


def substitute(command: str, path: Path) -> str:
    """lit's substitutions (test/lit.cfg.py and lit's own), longest names first."""
    table = {
        "%tile_irdl": str(REPO / "tilemlir" / "dialects" / "tile.irdl.mlir"),
        "%examples": str(REPO / "examples"),
        "%python": str(REPO / ".venv" / "bin" / "python"),
        "%repo": str(REPO),
        "%s": str(path),
        "%S": str(path.parent),
        "%t": str(Path(tempfile.gettempdir()) / "snapshot-outputs.tmp"),
    }
    pattern = re.compile("|".join(re.escape(name) for name in table))
    return pattern.sub(lambda match: table[match.group(0)], command)


_REDIRECT_ALONE = {">", ">>", "<", "2>", "2>>", "&>"}
_REDIRECT_ATTACHED = re.compile(r"^\d*(>>?|<|>&|&>)\S+$")


def pipeline_segments(command: str) -> list[list[str]]:
    """The words of each `|`-separated command, redirections and `not` dropped."""
    segments: list[list[str]] = [[]]
    words = iter(shlex.split(command))
    for word in words:
        if word == "|":
            segments.append([])
        elif word in _REDIRECT_ALONE:
            next(words, None)
        elif not _REDIRECT_ATTACHED.match(word):
            segments[-1].append(word)
    for segment in segments:
        while segment and segment[0] == "not":
            segment.pop(0)
    return segments


def _tile_compile_parser() -> argparse.ArgumentParser:
    """tile-compile's flags (tilemlir/tools/tile_compile.py), read without its checks."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    parser.add_argument("input", nargs="?", default="-")
    parser.add_argument("-o", dest="output")
    for flag in ("--target", "--target-desc"):
        parser.add_argument(flag)
    parser.add_argument("--emit", default=None)  # None: the backend's default, as tile-compile
    for flag in ("--tiling", "--select", "--pass-options"):
        parser.add_argument(flag, default="")
    for flag in ("--report", "--allow-spills", "--no-spills", "--dump-pass-pipeline",
                 "--verify-diagnostics", "--split-input-file"):
        parser.add_argument(flag, action="store_true")

    def error(message: str):
        raise Unsupported(f"tile-compile flags: {message}")

    parser.error = error  # type: ignore[method-assign]
    return parser


def _sed_literal(text: str, delimiter: str, special: str, script: str) -> str:
    """A sed pattern or replacement as the literal string it stands for: `\\\\` and
    `\\DELIMITER` unescaped; any other escape or a character of `special` refused."""
    literal, index = [], 0
    while index < len(text):
        char = text[index]
        if char == "\\":
            escaped = text[index + 1:index + 2]
            if escaped not in ("\\", delimiter):
                raise Unsupported(f"sed script {script!r}: not a literal string")
            literal.append(escaped)
            index += 2
            continue
        if char in special:
            raise Unsupported(f"sed script {script!r}: not a literal string")
        literal.append(char)
        index += 1
    return "".join(literal)


def _split_unescaped(text: str, delimiter: str) -> tuple[str, str]:
    """text up to the first `delimiter` not escaped by a backslash, and what follows it."""
    index = 0
    while index < len(text):
        if text[index] == "\\":
            index += 2
        elif text[index] == delimiter:
            return text[:index], text[index + 1:]
        else:
            index += 1
    raise Unsupported(f"sed: unterminated s command {text!r}")


def literal_sed(script: str, text: str) -> str:
    """`sed SCRIPT` on text, for scripts of `s/LITERAL/LITERAL/[g]` commands."""
    commands = []
    rest = script.strip()
    while rest:
        if not rest.startswith("s") or len(rest) < 2:
            raise Unsupported(f"sed script {script!r}: only s commands")
        delimiter = rest[1]
        pattern, rest = _split_unescaped(rest[2:], delimiter)
        replacement, rest = _split_unescaped(rest, delimiter)
        flags, _, rest = rest.partition(";")
        flags, rest = flags.strip(), rest.strip()
        if flags not in ("", "g"):
            raise Unsupported(f"sed script {script!r}: flags {flags!r}")
        commands.append((_sed_literal(pattern, delimiter, ".[]*^$", script),
                         _sed_literal(replacement, delimiter, "&", script), flags == "g"))
    lines = text.split("\n")
    for index, line in enumerate(lines):
        for pattern, replacement, every in commands:
            line = line.replace(pattern, replacement, -1 if every else 1)
        lines[index] = line
    return "\n".join(lines)


def read_input(word: str, test: Path) -> str:
    path = Path(word) if Path(word).is_absolute() else test.parent / word
    if not path.is_file():
        raise Unsupported(f"input {word} not found")
    text = read_text(path)
    if text is None:
        raise Unsupported(f"input {word} is not UTF-8")
    return text


def stdin_text(producer: list[str], test: Path) -> str:
    """What `producer | tile-compile -` reads."""
    if not producer:
        raise Unsupported("tile-compile reads stdin with nothing piped in")
    command, args = producer[0], producer[1:]
    if command == "echo":
        return " ".join(args) + "\n"
    if command == "cat" and len(args) == 1:
        return read_input(args[0], test)
    if command == "sed" and len(args) == 2:
        return literal_sed(args[0], read_input(args[1], test))
    raise Unsupported(f"stdin from {shlex.join(producer)}")


def cli_default_emit(target: str | None) -> str:
    """tile-compile's --emit when none is given: the target's backend's default
    (DEFAULT_TARGET's when there is none)."""
    from tilemlir.compiler import default_emit
    from tilemlir.targets import get_target

    try:
        return default_emit(get_target(target or DEFAULT_TARGET).family)
    except Exception:  # noqa: BLE001 - an unknown target: the compile records the error
        return default_emit(get_target(DEFAULT_TARGET).family)


def run_line_jobs(path: Path, number: int, command: str, inspector: ChunkInspector) -> list[Job]:
    segments = pipeline_segments(substitute(command, path))
    positions = [i for i, words in enumerate(segments) if words and words[0] == "tile-compile"]
    if not positions:
        return []
    position = positions[0]
    flags, unknown = _tile_compile_parser().parse_known_args(segments[position][1:])
    if unknown:
        raise Unsupported(f"unknown tile-compile arguments {unknown}")
    if flags.target and flags.target_desc:
        raise Unsupported("--target with --target-desc: tile-compile refuses it before compiling")
    if flags.split_input_file and not flags.verify_diagnostics:
        raise Unsupported("--split-input-file without --verify-diagnostics: refused by tile-compile")
    if flags.emit == "hsaco" and flags.output is None and not flags.report:
        raise Unsupported("--emit hsaco without -o: refused by tile-compile")
    if flags.target_desc and not Path(flags.target_desc).is_file():
        raise Unsupported(f"--target-desc {flags.target_desc}: written by an earlier RUN line")
    if flags.input == "-":
        text = stdin_text(segments[position - 1] if position else [], path)
    else:
        text = read_input(flags.input, path)
    chunks = list(enumerate(split_chunks(text) if flags.split_input_file else [text], start=1))
    if flags.verify_diagnostics:
        chunks = [(index, chunk) for index, chunk in chunks if NEGATIVE_MARKER not in chunk]
    target = flags.target_desc or flags.target
    options = compile_options(report=flags.report, allow_spills=flags.allow_spills,
                              tiling=flags.tiling, select=flags.select, passes=flags.pass_options)
    jobs = []
    for index, chunk in chunks:
        chunk_part = f".chunk{index}" if flags.split_input_file else ""
        tag = target_tag(target if target else inspector.facts(chunk).target)
        emit = flags.emit or cli_default_emit(target or inspector.facts(chunk).target)
        jobs.append(Job(f"{source_name(path)}.run{number}{chunk_part}.{tag}", chunk, target,
                        emit, options, flags.dump_pass_pipeline))
    return jobs


def all_run_line_jobs(inspector: ChunkInspector, skipped: list[str]) -> list[Job]:
    tests = sorted(path for suffix in ("*.mlir", "*.test") for path in (REPO / "test").rglob(suffix)
                   if not LIT_EXCLUDES & set(path.relative_to(REPO).parts))
    jobs = []
    for path in tests:
        text = read_text(path)
        if text is None or "tile-compile" not in text:
            continue
        for number, command in enumerate(run_commands(text), start=1):
            try:
                jobs.extend(run_line_jobs(path, number, command, inspector))
            except Unsupported as reason:
                skipped.append(f"{source_name(path)}.run{number}: {reason}")
    return jobs


# --------------------------------------------------------------------------
# 3. Bench kernels
# --------------------------------------------------------------------------


def gemm_bench_jobs() -> list[Job]:
    gemm = load_bench("gemm")
    cases = [tuple(case) for case in gemm.TEST_CASES]
    for dtype in gemm.DTYPES:
        for m, n, k in gemm.SHAPES:
            cases.extend((m, n, k, dtype, dtype == "fp8", *candidate)
                         for candidate in gemm.candidates(m, n, dtype))
    jobs = []
    for m, n, k, dtype, transpose_b, block, threads, stages, path in cases:
        name = gemm.case_name(dtype, m, n, k, transpose_b, block, threads, stages, path)
        jobs.append(Job(f"bench__gemm.py.{safe_name(name)}.{target_tag(GEMM_TARGET_TAG)}",
                        emit="ptx", gemm_case=(m, n, k, dtype, transpose_b, block, threads,
                                               stages, path)))
    return jobs


def amd_bench_jobs() -> list[Job]:
    amd = load_bench("amd_vs_triton")
    jobs = []
    for case in amd.CASES:
        target = f"amdgpu:{case.chip}"
        variants = [(case.name, "")]
        if amd.direct_applies(case):
            variants += [(f"{case.name}.{label}", passes) for label, passes in amd.ALTERNATIVE.values()]
        for variant, passes in variants:
            jobs.append(Job(f"bench__amd_vs_triton.py.{safe_name(variant)}.{target_tag(target)}",
                            amd.gemm_text(case), target, "isa",
                            compile_options(report=True, tiling=amd.tiling(case), passes=passes)))
    return jobs


# --------------------------------------------------------------------------
# The workers
# --------------------------------------------------------------------------

Outputs = list[tuple[str, bytes]]


def without_timings(value):
    """`value` with every dict key that names seconds removed, at any depth."""
    if isinstance(value, dict):
        return {key: without_timings(item) for key, item in value.items() if "seconds" not in key}
    if isinstance(value, list):
        return [without_timings(item) for item in value]
    return value


def as_bytes(value: str | bytes) -> bytes:
    """Text as UTF-8, the repository's path written <repo> (snapshots of two
    checkouts compare); binary artefacts (hsaco) as they are."""
    return value if isinstance(value, bytes) else value.replace(str(REPO), "<repo>").encode("utf-8")


def json_bytes(value) -> bytes:
    return as_bytes(json.dumps(without_timings(value), indent=2, sort_keys=True) + "\n")


def error_bytes(error: BaseException) -> bytes:
    return as_bytes(f"{type(error).__name__}: {error}\n")


def describe(job: Job) -> str:
    """What tile-compile --dump-pass-pipeline prints for the job: every stage,
    described as the driver runs it (and after a failure, as it would)."""
    from mlir import ir

    from tilemlir.compiler import CompileOptions, compile_module
    from tilemlir.diagnostics import UserError
    from tilemlir.dialects import tile
    from tilemlir.targets import resolve_target

    module = ir.Module.parse(job.text, tile.make_context()).operation
    lines: list[str] = []
    try:
        compile_module(module, resolve_target(module, job.target), job.emit,
                       CompileOptions(**dict(job.options)), dump_pipeline=lines.append)
    except UserError:
        pass  # the compile records its own error
    return "".join(lines)


def compile_job(job: Job) -> Outputs:
    import tilemlir

    outputs: Outputs = []
    if job.dump_pipeline:
        try:
            outputs.append((f"{job.name}.pipeline.txt", as_bytes(describe(job))))
        except Exception as error:  # noqa: BLE001 - recorded, like every failure
            outputs.append((f"{job.name}.pipeline.error", error_bytes(error)))
    try:
        result = tilemlir.compile(job.text, target=job.target, emit=job.emit,
                                  options=dict(job.options))
    except Exception as error:  # noqa: BLE001 - recorded, like every failure
        return outputs + [(f"{job.name}.error", error_bytes(error))]
    outputs.extend((f"{job.name}.{stage}", as_bytes(artifact))
                   for stage, artifact in result.artifacts.items())
    if result.report is not None:
        outputs.append((f"{job.name}.report.json", json_bytes(result.report)))
    return outputs


def gemm_job(job: Job) -> Outputs:
    gemm = load_bench("gemm")
    with tempfile.TemporaryDirectory(prefix="snapshot-gemm-") as directory:
        try:
            entry = gemm.compile_case(Path(directory), *job.gemm_case)
        except Exception as error:  # noqa: BLE001 - recorded, like every failure
            return [(f"{job.name}.error", error_bytes(error))]
        stem = Path(directory) / entry["name"]
        ptx = stem.with_suffix(".ptx").read_text(encoding="utf-8")
        metadata = json.loads(stem.with_suffix(".json").read_text(encoding="utf-8"))
    return [(f"{job.name}.ptx", as_bytes(ptx)), (f"{job.name}.launch.json", json_bytes(metadata))]


def run_job(job: Job) -> Outputs:
    try:
        return gemm_job(job) if job.gemm_case is not None else compile_job(job)
    except Exception as error:  # noqa: BLE001 - a failure of this script's own steps
        return [(f"{job.name}.error", error_bytes(error))]


def run_all(jobs: list[Job], workers: int, write) -> None:
    """Runs every job in `workers` processes, calling write(job, outputs) as each ends.
    A job whose worker dies is run again alone; if it kills that worker too, its
    .error file says so."""
    context = multiprocessing.get_context("spawn")  # no fork of a process that holds MLIR
    retry = []
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = {pool.submit(run_job, job): job for job in jobs}
        for future in concurrent.futures.as_completed(futures):
            try:
                write(futures[future], future.result())
            except BrokenProcessPool:
                retry.append(futures[future])
    pool = None
    for job in sorted(retry, key=lambda job: job.name):
        pool = pool or concurrent.futures.ProcessPoolExecutor(1, mp_context=context)
        try:
            write(job, pool.submit(run_job, job).result())
        except BrokenProcessPool:
            write(job, [(f"{job.name}.error", b"worker process died\n")])
            pool.shutdown()
            pool = None
    if pool is not None:
        pool.shutdown()


# --------------------------------------------------------------------------
# Snapshot and compare
# --------------------------------------------------------------------------


def enumerate_jobs(skipped: list[str]) -> list[Job]:
    inspector = ChunkInspector()
    jobs, seen, names = [], set(), set()
    for job in (chunk_jobs(inspector, skipped) + all_run_line_jobs(inspector, skipped)
                + gemm_bench_jobs() + amd_bench_jobs()):
        if job.key in seen:
            continue
        if job.name in names:
            raise RuntimeError(f"two different compiles named {job.name}")
        seen.add(job.key)
        names.add(job.name)
        jobs.append(job)
    return jobs


def selected_jobs(only: str | None) -> tuple[list[Job], list[str]]:
    """The compiles whose name has `only`, and what could not be covered, as
    `NAME: reason` lines."""
    skipped: list[str] = []
    jobs = enumerate_jobs(skipped)
    if only is None:
        return jobs, skipped
    return [job for job in jobs if only in job.name], [line for line in skipped if only in line]


def list_jobs(only: str | None) -> int:
    jobs, skipped = selected_jobs(only)
    for job in jobs:
        options = ", ".join(f"{key}={value!r}" for key, value in job.options if value)
        print(f"{job.name}: emit {job.emit}" + (f", {options}" if options else "")
              + (", dump pipeline" if job.dump_pipeline else ""))
    for line in skipped:
        print(f"not covered: {line}")
    print(f"{len(jobs)} compiles, {len(skipped)} not covered")
    return 0


def snapshot(directory: Path, workers: int, only: str | None) -> int:
    if directory.exists() and any(directory.iterdir()):
        print(f"error: {directory} is not empty", file=sys.stderr)
        return 2
    start = time.perf_counter()
    jobs, skipped = selected_jobs(only)
    print(f"{len(jobs)} compiles, {workers} worker(s)", flush=True)
    directory.mkdir(parents=True, exist_ok=True)
    counts = {"files": 0, "errors": 0, "done": 0}

    def write(job: Job, outputs: Outputs) -> None:
        for name, data in outputs:
            (directory / name).write_bytes(data)
            counts["files"] += 1
            counts["errors"] += name.endswith(".error")
        counts["done"] += 1
        if counts["done"] % 50 == 0:
            print(f"  {counts['done']}/{len(jobs)} compiles, "
                  f"{time.perf_counter() - start:.0f} s", flush=True)

    run_all(jobs, workers, write)
    if skipped:
        print(f"not covered ({len(skipped)}):")
        for line in skipped:
            print(f"  {line}")
    print(f"{counts['files']} files written to {directory} ({counts['errors']} .error) "
          f"from {len(jobs)} compiles in {time.perf_counter() - start:.1f} s")
    return 0


def compare(before: Path, after: Path) -> int:
    def files(root: Path) -> dict[str, Path]:
        return {path.relative_to(root).as_posix(): path for path in root.rglob("*") if path.is_file()}

    left, right = files(before), files(after)
    common = sorted(left.keys() & right.keys())
    differ = [name for name in common if left[name].read_bytes() != right[name].read_bytes()]
    only_left, only_right = sorted(left.keys() - right.keys()), sorted(right.keys() - left.keys())
    for label, names in (("differ", differ), (f"only in {before}", only_left),
                         (f"only in {after}", only_right)):
        for name in names:
            print(f"{label}: {name}")
    print(f"compared {len(common)} files: {len(differ)} differ, {len(only_left)} only in "
          f"{before}, {len(only_right)} only in {after}")
    return 1 if differ or only_left or only_right else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", type=Path, help="where the outputs go (empty)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--only", metavar="SUBSTR", help="only the compiles whose name has SUBSTR")
    parser.add_argument("--list", action="store_true", help="list the compiles; compile nothing")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"),
                        help="compare two snapshots instead of taking one")
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.list:
        return list_jobs(args.only)
    if args.directory is None:
        parser.error("give DIR, or --compare A B")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return snapshot(args.directory, args.jobs, args.only)


if __name__ == "__main__":
    sys.exit(main())
