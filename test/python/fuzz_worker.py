"""Token-level fuzzing of tile-opt and tile-compile over the .mlir corpus.

The corpus (test/**/*.mlir and examples/**/*.mlir) is cut into MLIR tokens
(`tilemlir.diagnostics.tokenize`: identifiers, %values, ^blocks, @symbols,
#attributes, !types, strings, numbers, punctuation; comments and spaces are
kept as they are, so `// -----` splits and expected-* comments survive). A case
is one corpus file (or one of its `// -----` chunks) with one to four token
mutations: delete a run, duplicate a run, swap two tokens, replace a token or
insert one, drawing the new tokens from the corpus and from `NASTY` (huge and
negative numbers, odd strings, dialect-namespace op names, deep brackets).

Each case runs through tile-opt or tile-compile (amdgpu:gfx942, metax:xcore1000,
nvidia:sm_90a; --emit gpu or the target's final stage) and must end with status
0 or 1, print no "Traceback" and no "internal error", die of no signal, finish
within the case timeout, and leave no output file (nor a temporary) on failure.

Case N is a function of (seed, N) alone, so a failure is reproduced by its
number whatever the number of jobs. Usage:

    fuzz_worker.py --count 10000 --jobs 2 --seed 1 --workdir build/fuzz

prints a summary (cases, seconds, statuses, distinct failure classes) and
writes report.json in the workdir; the exit status is 1 if any case failed.
Workers run the tools' entry points in-process (a process per case would cost
most of the time); the parent restarts a worker that a case killed or hung,
and records that case as the failure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tilemlir.diagnostics import SPLIT_MARKER, tokenize

# Tokens no test would write: the corners of the lexer, the parser and the passes.
NASTY: tuple[str, ...] = (
    "0", "-1", "1", "-0", "65536", "2147483648", "-2147483649", "9223372036854775807",
    "-9223372036854775808", "18446744073709551616", "99999999999999999999999999",
    "0x0", "0xFFFFFFFFFFFFFFFFFFFF", "1.0e999", "-0.0", "0x7FC00000", "1e", "0x",
    '""', '"\\n"', '"\\""', '"a\\00b"', '"\\ff\\fe"', '"\\\\"', '"\\t\\n\\""', '"é"', '"%0"',
    '"tile"', '"tile."', '"arith"', '"arith."', '"func"', '"func."', '"scf"', '"scf."',
    '"gpu"', '"gpu."', '"builtin"', '"builtin."', '"memref."', '"\\74ile"', '"tile.kernel."',
    '".tile"', '"tile..gemm"', '"tile.gemm"', '"tile.copy"', '"tile.kernel"', '"nonesuch.op"',
    "tile", "tile.", "arith.", "scf", "gpu.", "builtin.module", "func.func", "tile.gemm",
    "[" * 40, "]" * 40, "(" * 40, ")" * 40, "{" * 40, "}" * 40, "<" * 40, ">" * 40,
    "[" * 300 + "]" * 300, "tuple<" * 200 + ">" * 200,
    "memref<0x0xf16>", "memref<?x?xf8E4M3FNUZ>", "memref<9223372036854775807xf32>",
    "memref<4xf16, #gpu.address_space<workgroup>>", "memref<4xi1, #gpu.address_space<private>>",
    "memref<4x4xf16, strided<[1, 4]>>", "memref<*xf32>", "tensor<*xf32>", "vector<[4]xf32>",
    "vector<0xf32>", "i0", "i1", "i65", "i1048576", "f8E8M0FNU", "f4E2M1FN", "tf32", "index",
    "none", "complex<f32>", "!llvm.ptr", "#gpu.address_space<global>", "dense<>", "dense<1>",
    "array<i64>", "array<i64: -1>", "array<i32: 1, 1, 1, 1>", "unit", "loc(unknown)",
    "affine_map<(d0) -> (d0 floordiv 0)>", "affine_map<(d0)[s0] -> (d0 mod s0)>",
    "{tile.num_stages = 0 : i64}", "{tile.num_stages = -7 : i64}", "tile.num_stages",
    "grid", "threads", "accum_dtype", "transpose_a", "operandSegmentSizes", "kind",
    "@", "%", "^", "#", "!", "...", "->", "{-#", "#-}", "=", ":", ",", "?", "*", "\\", ";",
    "%0", "%arg0", "^bb0", "^bb1", "@f", "@main", "a" * 3000, "%" + "x" * 3000,
)

TARGETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("amdgpu:gfx942", ("gpu", "isa")),
    ("metax:xcore1000", ("gpu", "maca")),
    ("nvidia:sm_90a", ("gpu", "ptx")),
)

OPT_FLAGS: tuple[tuple[str, ...], ...] = (
    (),
    ("--split-input-file",),
    ("--split-input-file", "--verify-diagnostics"),
    ("-p", "builtin.module(tile-verify,canonicalize,cse)"),
    ("-p", "builtin.module(func.func(canonicalize,tile-verify))"),
    ("--mlir-print-op-generic",),
    ("--mlir-print-debuginfo",),
    ("--tile-verify=allow-narrow-accumulator=true",),
    ("--target", "amdgpu:gfx942", "-p", "builtin.module(tile-tiling,tile-legalize-precision,tile-select-mma)"),
    ("--target", "nvidia:sm_90a", "-p",
     "builtin.module(tile-tiling,tile-select-mma,tile-infer-layout,tile-pipeline,tile-lower-to-gpu)"),
)

# A worker is restarted when one case takes longer than this (a hang is a failure).
CASE_TIMEOUT_S = 120.0
# Each worker's address space: a runaway allocation fails instead of taking the machine.
WORKER_MEMORY_BYTES = 6 << 30


# --------------------------------------------------------------------------
# The corpus and its mutation.
# --------------------------------------------------------------------------

def corpus() -> list[str]:
    """Every .mlir file of the tests and the examples (lit's Output folders excluded)."""
    files = sorted((REPO / "test").rglob("*.mlir")) + sorted((REPO / "examples").rglob("*.mlir"))
    return [f.read_text(encoding="utf-8", errors="replace") for f in files if "Output" not in f.parts]


def _significant(kind: str) -> bool:
    return kind not in ("space", "comment")


_TYPE_WORD = re.compile(r"(?:[fi]\d+|bf16|tf32|index|none|f[468]E\w+)")


def token_class(kind: str, text: str) -> str:
    """A finer kind: a token replaced by another of its class often still parses."""
    if kind == "number":
        return "integer" if text.isdigit() or text.startswith("0x") else "float"
    if kind == "bare":
        if _TYPE_WORD.fullmatch(text):
            return "type"
        return "op-name" if "." in text else "keyword"
    return kind


class Mutator:
    """Token-level mutations drawn from the corpus' own tokens and `NASTY`."""

    def __init__(self, texts: list[str]):
        self.texts = texts
        self.by_class: dict[str, list[str]] = {}
        for text in texts:
            for token in tokenize(text):
                self.by_class.setdefault(token_class(token.kind, token.text), []).append(token.text)
        self.every = [text for tokens in self.by_class.values() for text in tokens]
        self.nasty_numbers = [t for t in NASTY if re.fullmatch(r"-?(?:0x)?[\dA-Fa-f.e]+", t)]

    def pick_source(self, rng: random.Random, whole_file: bool) -> str:
        text = rng.choice(self.texts)
        if whole_file or SPLIT_MARKER not in text:
            return text
        chunks = re.split(r"^[ \t]*// -----[ \t]*$", text, flags=re.MULTILINE)
        return rng.choice(chunks)

    def new_token(self, rng: random.Random, klass: str) -> str:
        """A token to put where a `klass` token was: mostly one of the same class
        (the mutant then often still parses and reaches the passes)."""
        roll = rng.random()
        if roll < 0.6 and klass in self.by_class:
            return rng.choice(self.by_class[klass])
        if roll < 0.75 and klass in ("integer", "float"):
            return rng.choice(self.nasty_numbers)
        if roll < 0.85:
            return rng.choice(self.every)
        return rng.choice(NASTY)

    def mutate(self, text: str, rng: random.Random) -> str:
        tokens = [(t.kind, t.text) for t in tokenize(text, keep_trivia=True)]
        for _ in range(rng.choice((1, 1, 1, 1, 2, 2, 3, 4))):
            where = [i for i, (kind, _) in enumerate(tokens) if _significant(kind)]
            if not where:
                tokens.append(("other", rng.choice(NASTY)))
                continue
            words = [i for i in where if tokens[i][0] != "punct"]
            at = rng.choice(words if words and rng.random() < 0.7 else where)
            klass = token_class(*tokens[at])
            span = where[where.index(at): where.index(at) + rng.randint(1, 4)]
            operation = rng.choices(("replace", "delete", "duplicate", "swap", "insert"), (50, 12, 12, 10, 16))[0]
            if operation == "replace":
                tokens[at] = (tokens[at][0], self.new_token(rng, klass))
            elif operation == "delete":  # a run of tokens
                del tokens[span[0]: span[-1] + 1]
            elif operation == "duplicate":  # a run of tokens
                tokens[span[-1] + 1: span[-1] + 1] = [("space", " "), *tokens[span[0]: span[-1] + 1]]
            elif operation == "swap":  # with a token of the same class where there is one
                alike = [i for i in where if token_class(*tokens[i]) == klass]
                other = rng.choice(alike if len(alike) > 1 and rng.random() < 0.7 else where)
                tokens[at], tokens[other] = tokens[other], tokens[at]
            else:
                tokens[at:at] = [("other", self.new_token(rng, klass)), ("space", " ")]
        return "".join(text for _, text in tokens)


    def mutate_gently(self, text: str, rng: random.Random) -> str:
        """One or two numbers or element types replaced by others of their class:
        the mutant usually still parses, so it reaches the passes and backends."""
        tokens = [(t.kind, t.text) for t in tokenize(text, keep_trivia=True)]
        where = [i for i, token in enumerate(tokens) if token_class(*token) in ("integer", "float", "type")]
        for at in rng.sample(where, min(len(where), rng.choice((1, 1, 2)))):
            klass = token_class(*tokens[at])
            pool = self.by_class[klass] + (self.nasty_numbers if klass != "type" else [])
            tokens[at] = (tokens[at][0], rng.choice(pool))
        return "".join(text for _, text in tokens)


def mutate(text: str, rng: random.Random, mutator: Mutator | None = None) -> str:
    """One mutant of `text` (a Mutator over the whole corpus unless given)."""
    return (mutator or Mutator(corpus())).mutate(text, rng)


# --------------------------------------------------------------------------
# One case.
# --------------------------------------------------------------------------

def plan_case(seed: int, index: int, mutator: Mutator) -> tuple[str, list[str], str]:
    """(tool, flags, input text) of case `index`: a function of (seed, index) only."""
    rng = random.Random(f"{seed}:{index}")
    if rng.random() < 0.5:
        flags = list(rng.choice(OPT_FLAGS))
        tool = "tile-opt"
        whole_file = "--split-input-file" in flags
    else:
        target, emits = rng.choice(TARGETS)
        flags = ["--target", target, "--emit", rng.choice(emits)]
        if rng.random() < 0.15:
            flags += ["--split-input-file", "--verify-diagnostics"]
        if rng.random() < 0.2:
            flags.append("--allow-spills")
        tool = "tile-compile"
        whole_file = "--split-input-file" in flags
    source = mutator.pick_source(rng, whole_file)
    text = mutator.mutate_gently(source, rng) if rng.random() < 0.35 else mutator.mutate(source, rng)
    return tool, flags, text


def _entry_point(tool: str):
    from tilemlir.tools import tile_compile, tile_opt

    return {"tile-opt": tile_opt.main, "tile-compile": tile_compile.main}[tool]


def run_in_process(tool: str, argv: list[str], capture: Path) -> tuple[int, str]:
    """Runs a tool's entry point here, with file descriptors 1 and 2 (so native
    output too) sent to `capture`; returns (status, what it printed)."""
    main = _entry_point(tool)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(capture, "w+b") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            status = main(argv)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        sink.seek(0)
        output = sink.read().decode("utf-8", errors="replace")
    return status, output


def judge(status: int, output: str, leftovers: list[str]) -> str | None:
    """Why a finished case failed, or None."""
    if status not in (0, 1):
        return f"exit status {status}"
    if "Traceback" in output:
        return "Python traceback"
    if "internal error" in output:
        return "internal error"
    if status == 1 and leftovers:
        return f"output left behind on failure: {', '.join(leftovers)}"
    return None


def serve(workdir: Path, seed: int, indices: list[int]) -> int:
    """Worker: runs the given cases, appending one JSON line per case to results.jsonl."""
    resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
    mutator = Mutator(corpus())
    scratch = workdir / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    case_file, capture = workdir / "case.mlir", workdir / "capture.txt"
    with open(workdir / "results.jsonl", "a", encoding="utf-8") as results:
        for index in indices:
            tool, flags, text = plan_case(seed, index, mutator)
            case_file.write_text(text, encoding="utf-8", errors="surrogatepass")
            for leftover in scratch.iterdir():
                leftover.unlink()
            argv = [str(case_file), "-o", str(scratch / "out"), *flags]
            (workdir / "current.json").write_text(json.dumps({"index": index, "tool": tool, "argv": argv}))
            start = time.monotonic()
            status, output = run_in_process(tool, argv, capture)
            leftovers = sorted(p.name for p in scratch.iterdir())
            why = judge(status, output, leftovers)
            record = {"index": index, "tool": tool, "status": status, "seconds": time.monotonic() - start}
            if why is not None:
                record.update(flags=flags, why=why, output=output[-3000:], text=text)
            results.write(json.dumps(record) + "\n")
            results.flush()
    return 0


# --------------------------------------------------------------------------
# The parent: workers, restarts, the report.
# --------------------------------------------------------------------------

def failure_class(record: dict) -> str:
    """A short signature grouping failures of one cause."""
    output = record.get("output", "")
    lines = [line for line in output.splitlines() if line.strip()]
    detail = ""
    for marker in ("LLVM ERROR", "Assertion", "internal error", "Error", "error:"):
        found = [line for line in lines if marker in line]
        if found:
            detail = found[-1] if marker != "error:" else found[0]
            break
    if not detail and lines:
        detail = lines[-1]
    detail = re.sub(r"\S*case\.mlir:\d+:\d+", "FILE:L:C", detail).replace("unexpected error: ", "")
    detail = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", detail)
    detail = re.sub(r"\d+", "N", detail)[:200]
    return f"{record['tool']}: {record['why']}: {detail}"


def _start_worker(workdir: Path, seed: int, indices: list[int]) -> subprocess.Popen:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "current.json").unlink(missing_ok=True)
    (workdir / "indices.json").write_text(json.dumps(indices))
    return subprocess.Popen(
        [sys.executable, __file__, "--serve", str(workdir), "--seed", str(seed)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def _done_indices(workdir: Path) -> dict[int, dict]:
    path = workdir / "results.jsonl"
    if not path.exists():
        return {}
    done = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            done[record["index"]] = record
    return done


def _record_death(workdir: Path, seed: int, why: str) -> None:
    """Appends the case a worker died (or hung) on to its results."""
    current = json.loads((workdir / "current.json").read_text())
    text = (workdir / "case.mlir").read_text(encoding="utf-8", errors="replace")
    output = (workdir / "capture.txt").read_text(encoding="utf-8", errors="replace")
    record = {"index": current["index"], "tool": current["tool"], "status": None, "why": why,
              "flags": current["argv"][3:], "output": output[-3000:], "text": text}
    with open(workdir / "results.jsonl", "a", encoding="utf-8") as results:
        results.write(json.dumps(record) + "\n")


def fuzz(count: int, jobs: int, seed: int, workdir: Path, case_timeout: float, quiet: bool) -> dict:
    start = time.monotonic()
    shares = {job: list(range(job, count, jobs)) for job in range(jobs)}
    workers = {job: _start_worker(workdir / f"job{job}", seed, shares[job]) for job in range(jobs)}
    last_progress = {job: (None, time.monotonic()) for job in range(jobs)}
    last_report = time.monotonic()
    while workers:
        time.sleep(0.2)
        for job, process in list(workers.items()):
            jobdir = workdir / f"job{job}"
            current_file = jobdir / "current.json"
            current = current_file.read_text() if current_file.exists() else None
            if current != last_progress[job][0]:
                last_progress[job] = (current, time.monotonic())
            hung = time.monotonic() - last_progress[job][1] > case_timeout
            status = process.poll()
            if status == 0:
                del workers[job]
                continue
            if status is None and not hung:
                continue
            if status is None:
                process.kill()
                process.wait()
                _record_death(jobdir, seed, f"no result within {case_timeout:.0f} s")
            elif current is None:
                raise RuntimeError(f"fuzz worker {job} failed to start (status {status})")
            else:
                why = f"killed by signal {-status}" if status < 0 else f"worker exited with {status}"
                _record_death(jobdir, seed, why)
            remaining = [i for i in shares[job] if i not in _done_indices(jobdir)]
            if remaining:
                workers[job] = _start_worker(jobdir, seed, remaining)
                last_progress[job] = (None, time.monotonic())
            else:
                del workers[job]
        if not quiet and time.monotonic() - last_report > 60:
            last_report = time.monotonic()
            ran = sum(len(_done_indices(workdir / f"job{j}")) for j in range(jobs))
            print(f"  ... {ran}/{count} cases, {last_report - start:.0f} s", flush=True)
    records = [r for job in range(jobs) for r in _done_indices(workdir / f"job{job}").values()]
    statuses: dict[str, dict[str, int]] = {}
    classes: dict[str, dict] = {}
    for record in records:
        by_tool = statuses.setdefault(record["tool"], {})
        by_tool[str(record["status"])] = by_tool.get(str(record["status"]), 0) + 1
        if "why" in record:
            entry = classes.setdefault(failure_class(record), {"count": 0, "example": None})
            entry["count"] += 1
            if entry["example"] is None:
                example = workdir / "failures" / f"case{record['index']}.mlir"
                example.parent.mkdir(exist_ok=True)
                example.write_text(record["text"], encoding="utf-8", errors="surrogatepass")
                entry["example"] = {"index": record["index"], "file": str(example),
                                    "argv": [record["tool"], str(example), *record["flags"]],
                                    "output": record["output"][-1500:]}
    slowest = max(records, key=lambda r: r.get("seconds") or 0, default=None)
    return {"seed": seed, "cases": len(records), "seconds": round(time.monotonic() - start, 1),
            "statuses": statuses, "failures": sum(c["count"] for c in classes.values()),
            "classes": classes,
            "slowest_case": None if slowest is None else
            {"index": slowest["index"], "tool": slowest["tool"], "seconds": round(slowest["seconds"], 2)}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=10000, help="number of cases (default 10000)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--seed", type=int, default=1, help="the seed that, with a case's number, fixes it")
    parser.add_argument("--workdir", type=Path, default=REPO / "build" / "fuzz",
                        help="where cases, results and report.json go (emptied first)")
    parser.add_argument("--case-timeout", type=float, default=CASE_TIMEOUT_S,
                        help="seconds a case may take before it counts as hung")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.serve is not None:
        indices = json.loads((options.serve / "indices.json").read_text())
        return serve(options.serve, options.seed, indices)
    import shutil

    shutil.rmtree(options.workdir, ignore_errors=True)
    options.workdir.mkdir(parents=True)
    report = fuzz(options.count, max(1, options.jobs), options.seed, options.workdir,
                  options.case_timeout, options.quiet)
    (options.workdir / "report.json").write_text(json.dumps(report, indent=1))
    print(f"{report['cases']} cases in {report['seconds']} s (seed {report['seed']}); "
          f"statuses {json.dumps(report['statuses'])}; {report['failures']} failures "
          f"in {len(report['classes'])} classes; report: {options.workdir / 'report.json'}")
    for signature, entry in report["classes"].items():
        print(f"  {entry['count']:5d}  {signature}\n         e.g. {' '.join(entry['example']['argv'])}")
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
