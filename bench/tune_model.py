"""The cost model against the H200: every tile-tune candidate of bench/gemm.py's shapes, predicted and measured.

Three steps, because the device machine has the GPU but not our MLIR wheels:

    .venv/bin/python bench/tune_model.py --prepare build/tunemodel --jobs 2   # here: PTX, predictions
    python3 bench/tune_model.py --run build/tunemodel --out DIR              # there: check, time
    .venv/bin/python bench/tune_model.py --analyse build/tunemodel DIR/tune_results.json   # here again

`--prepare` takes, for every shape in gemm.SHAPES and dtype in gemm.DTYPES
(bench/gemm.py's layouts: B is N x K for fp8; with `--cases split-k`,
SPLIT_K_CASES: too few C tiles for the chip, an f32 C, so split-K
candidates too, timed against cuBLAS writing f32), the module tile-tune tunes (the
whole-problem tile.gemm of gemm.gemm_text, the nvidia:sm_90a target) and
every candidate tile-tune would consider (`tilemlir.tune.search.candidates`,
no budget), compiles each to PTX exactly as tile-tune does
(`compile_candidate`, in `--jobs` worker processes), and records the model's
prediction for each compiled kernel (`model_seconds`, what `tile-tune
--measure model` ranks by), which candidate is tile-compile's default, and
the compile's report (reports.json, kept here).

`--run` needs torch only (tilemlir/runtime/cuda_launch.py loaded by path).
Per case: inputs as bench/gemm.py draws them; cuBLAS (gemm.py's call) checked
and timed; then every compiled candidate launched once on a NaN-filled output,
checked against float64 on sampled rows (gemm.check, gemm.py's bounds), and, if
correct, timed: a CUDA graph of up to GRAPH_LAUNCHES back-to-back launches
(about GRAPH_MS of them; so that the host's launch overhead, which exceeds a
1024^3 GEMM, is not timed), replayed between CUDA events after warm-up, the
median of up to REPEATS replays (fewer for slow candidates, at least
MIN_REPEATS) over the launches in one. Finally the default, the measured best
and cuBLAS (captured the same way) are re-timed interleaved in ROUNDS rounds
for the speed table. Results go to tune_results.json as they come (a run cut
off keeps its cases). `--jit-jobs N` has N processes load every module first,
so the driver's JIT cache holds them before the timed loop.

Both `--run` and `--analyse` print, per case, over the candidates measured
correct: Spearman's rank correlation between predicted and measured time, the
speed of the model's top choice (the fastest predicted) as a fraction of the
best measured candidate's, and the same for tile-compile's default.
`--analyse` re-predicts with the model as it is now (from the saved reports),
so a change to the model is judged against the same measurements.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench folder's shared helpers
import gemm
from bench_device import RunLog, load_launcher

REPEATS, MIN_REPEATS, WARMUP = 30, 5, 3
TIME_PER_CANDIDATE = 0.25  # seconds of timed launches per candidate, at most (REPEATS permitting)
GRAPH_LAUNCHES, GRAPH_MS = 20, 0.5  # launches per graph: up to 20, about 0.5 ms of them
ROUNDS, SAMPLES_PER_ROUND = 6, 5  # the final interleaved timing


# `--cases split-k`: GEMMs whose C tiles cannot fill the H200's 132 SMs, with
# an f32 C (the accumulator type), so tile-tune's candidates split K too.
SPLIT_K_CASES = [("f16", 16, 8192, 8192), ("bf16", 16, 8192, 8192), ("f16", 256, 256, 16384),
                 ("f16", 1024, 1024, 8192)]


def case_key(dtype: str, m: int, n: int, k: int, c_type: str = "f16") -> str:
    return f"{dtype}_{m}x{n}x{k}" + (f"_{c_type}" if c_type != "f16" else "")


def case_list(which: str) -> list[tuple[str, int, int, int, str]]:
    """(dtype, M, N, K, C's type) of `--cases gemm` (bench/gemm.py's shapes
    and dtypes, f16 C) or `--cases split-k` (SPLIT_K_CASES, f32 C)."""
    if which == "split-k":
        return [(dtype, m, n, k, "f32") for dtype, m, n, k in SPLIT_K_CASES]
    return [(dtype, m, n, k, "f16") for dtype in gemm.DTYPES for m, n, k in gemm.SHAPES]


# --------------------------------------------------------------------------
# --prepare (needs tilemlir and MLIR)
# --------------------------------------------------------------------------

def tuned_case(dtype: str, m: int, n: int, k: int, c_type: str = "f16"):
    """The module, tile-tune's view of its gemm, and the candidates (default first)."""
    from mlir import ir

    from tilemlir.diagnostics import SourceBuffer
    from tilemlir.dialects import tile
    from tilemlir.targets import get_target
    from tilemlir.tune.search import candidates, tune_problem

    target = get_target(gemm.TARGET)
    text = gemm.gemm_text(m, n, k, dtype, dtype == "fp8", c_type)
    source = SourceBuffer(f"{case_key(dtype, m, n, k, c_type)}.mlir", text)
    module = ir.Module.parse(text, tile.make_context())
    tuned = tune_problem(module.operation, target, source)
    return text, source, target, tuned, candidates(tuned.problem, target)


def prepare(out: Path, jobs: int, which: str = "gemm", only: str | None = None) -> None:
    from tilemlir.cost.model import DoesNotFit
    from tilemlir.tune.db import config_json
    from tilemlir.tune.search import compile_job, local_executor, model_seconds

    out.mkdir(parents=True, exist_ok=True)
    cases, work, owners = [], [], []
    for dtype, m, n, k, c_type in case_list(which):
        key = case_key(dtype, m, n, k, c_type)
        if only and only not in (dtype, key):
            continue
        text, source, target, tuned, chosen = tuned_case(dtype, m, n, k, c_type)
        case = {"key": key, "dtype": dtype, "m": m, "n": n, "k": k, "c": c_type,
                "transpose_b": dtype == "fp8", "candidates": []}
        for i, candidate in enumerate(chosen):
            name = f"{key}_c{i}"
            case["candidates"].append({
                "name": name, "json": f"{name}.json", "config": config_json(candidate.tuned()),
                "describe": candidate.tuned().describe(), "default": candidate.default,
                "wgmma": candidate.config.instruction.name.startswith("wgmma")})
            work.append(compile_job(candidate, len(work), text, source.name, target, "ptx", str(out / name)))
            owners.append((case, i, candidate, tuned.problem, target))
        cases.append(case)
    print(f"{len(work)} candidates over {len(cases)} cases; compiling with {jobs} jobs", flush=True)
    started, reports = time.perf_counter(), {}
    with local_executor(jobs) as executor:
        for done, outcome in enumerate(executor(work), 1):
            case, i, candidate, problem, target = owners[outcome.index]
            record = case["candidates"][i]
            record["compile_seconds"] = round(outcome.seconds, 3)
            record["compiled"] = outcome.report is not None
            if outcome.report is None:
                record["error"] = outcome.error.splitlines()[0] if outcome.error else "no report"
                continue
            reports[record["name"]] = outcome.report
            try:
                record["predicted"] = model_seconds(problem, candidate, outcome.report, target)
            except DoesNotFit as error:
                record["predicted"] = None
                record["error"] = str(error)
            if done % 100 == 0:
                print(f"  {done}/{len(work)} compiled, {time.perf_counter() - started:.0f} s", flush=True)
    manifest = {"target": gemm.TARGET, "cases": cases, "docs": prepare_docs(out)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    (out / "reports.json").write_text(json.dumps(reports) + "\n", encoding="utf-8")
    failed = sum(not c["compiled"] for case in cases for c in case["candidates"])
    print(f"prepared {len(work)} candidates ({failed} did not compile) in {time.perf_counter() - started:.0f} s")


DOCS_SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096)]


def docs_matmul(out: Path):
    """The `matmul` factory of docs/language.md's first Python example, as
    printed (the lines that call it are left out), written to a file in `out`
    (kernels are read from their source file) and imported from there."""
    import importlib.util

    text = (Path(__file__).resolve().parent.parent / "docs" / "language.md").read_text(encoding="utf-8")
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    path = out / "docs_matmul.py"
    path.write_text(code.split("\nkernel = matmul(", 1)[0], encoding="utf-8")
    spec = importlib.util.spec_from_file_location("docs_matmul", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.matmul


def prepare_docs(out: Path) -> list[dict]:
    """The docs' Python matmul with its own defaults, for the H200 (set as a
    user would, TILEMLIR_TARGET), at DOCS_SHAPES: PTX and launch metadata."""
    import os

    from mlir import ir

    from tilemlir.backends.nvidia.toolchain import compile_to_ptx
    from tilemlir.dialects import tile
    from tilemlir.targets import get_target

    matmul, entries = docs_matmul(out), []
    for m, n, k in DOCS_SHAPES:
        before = os.environ.get("TILEMLIR_TARGET")
        os.environ["TILEMLIR_TARGET"] = gemm.TARGET
        try:
            source = matmul(m, n, k).get_kernel_source()
        finally:  # the caller's environment as it was (the tests run this in-process)
            if before is None:
                del os.environ["TILEMLIR_TARGET"]
            else:
                os.environ["TILEMLIR_TARGET"] = before
        module = ir.Module.parse(source, tile.make_context())
        kernel = compile_to_ptx(module.operation, get_target(gemm.TARGET))
        name = f"docs_matmul_{m}x{n}x{k}"
        kernel.save(out / name)
        entries.append({"name": name, "json": f"{name}.json", "m": m, "n": n, "k": k,
                        "wgmma": kernel.ptx.count("wgmma.mma_async"), "tma": kernel.ptx.count("cp.async.bulk.tensor")})
        print(f"{name}: {entries[-1]['wgmma']} wgmma, {entries[-1]['tma']} TMA")
    return entries


# --------------------------------------------------------------------------
# Summaries (no tilemlir, no torch)
# --------------------------------------------------------------------------

def ranks(values: list[float]) -> list[float]:
    """1-based ranks, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            result[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return result


def spearman(xs: list[float], ys: list[float]) -> float:
    """Spearman's rank correlation (Pearson's on the ranks); NaN under 3 points."""
    if len(xs) < 3:
        return math.nan
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    return cov / math.sqrt(vx * vy) if vx and vy else math.nan


def summarise(case: dict, measured: dict, predicted: dict) -> dict | None:
    """One case's figures over the candidates both measured correct and predicted."""
    names = [c["name"] for c in case["candidates"]
             if isinstance(measured.get(c["name"]), float) and isinstance(predicted.get(c["name"]), float)]
    if not names:
        return None
    best = min(names, key=measured.__getitem__)
    top = min(names, key=predicted.__getitem__)
    default = next((c["name"] for c in case["candidates"] if c["default"]), None)
    return {
        "candidates": len(names),
        "spearman": spearman([predicted[n] for n in names], [measured[n] for n in names]),
        "best": best, "best_ms": measured[best],
        "top": top, "top_fraction": measured[best] / measured[top],
        "default": default,
        "default_fraction": measured[best] / measured[default] if default in measured else math.nan,
    }


def summary_table(manifest: dict, results: dict, predicted: dict, say) -> None:
    describe = {c["name"]: c["describe"] for case in manifest["cases"] for c in case["candidates"]}
    say(f"{'case':>22} {'cands':>5} {'spearman':>8} {'top/best':>8} {'default/best':>12}  "
        f"best measured | model's top choice")
    rhos = []
    for case in manifest["cases"]:
        measured = {n: r["ms"] for n, r in results.get(case["key"], {}).get("candidates", {}).items()
                    if r.get("ok")}
        figures = summarise(case, measured, predicted)
        if figures is None:
            continue
        rhos.append(figures["spearman"])
        say(f"{case['key']:>22} {figures['candidates']:5d} {figures['spearman']:8.3f} "
            f"{figures['top_fraction']:8.3f} {figures['default_fraction']:12.3f}  "
            f"{describe[figures['best']]} | {describe[figures['top']]}")
    finite = sorted(r for r in rhos if not math.isnan(r))
    if finite:
        say(f"spearman: min {finite[0]:.3f}, median {finite[len(finite) // 2]:.3f}, max {finite[-1]:.3f}")


# --------------------------------------------------------------------------
# --run (needs torch, not MLIR)
# --------------------------------------------------------------------------

class Timed:
    """Launches of one kernel (or cuBLAS call) as a CUDA graph of `count`
    back-to-back launches, so that the host's launch overhead (our ctypes
    launcher's, torch's) is not in the time of small kernels; eager launches
    when the graph cannot be captured (`count` 1, `graph` None)."""

    def __init__(self, fn):
        import torch

        self.fn = fn
        fn()  # the first launch builds what it caches (TMA descriptors, cuBLAS handles)
        torch.cuda.synchronize()
        first = self._event_ms(fn)
        self.count = max(1, min(GRAPH_LAUNCHES, int(GRAPH_MS / max(first, 1e-3))))
        self.graph = None
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(self.count):
                    fn()
            self.graph = graph
        except Exception:  # noqa: BLE001 - a call that cannot be captured: timed eagerly
            self.count = 1
        torch.cuda.synchronize()

    @staticmethod
    def _event_ms(fn) -> float:
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def sample_ms(self) -> float:
        """Milliseconds of one launch, from one graph replay."""
        return self._event_ms(self.graph.replay if self.graph else self.fn) / self.count


def time_ms(timed: Timed) -> float:
    """Median of up to REPEATS samples after WARMUP, fewer (not under
    MIN_REPEATS) when they would take over TIME_PER_CANDIDATE seconds."""
    for _ in range(WARMUP):
        timed.sample_ms()
    times, budget = [], REPEATS
    while len(times) < budget:
        times.append(timed.sample_ms())
        if len(times) == 1:
            per_sample = times[0] * timed.count
            budget = max(MIN_REPEATS, min(REPEATS, int(TIME_PER_CANDIDATE * 1e3 / max(per_sample, 1e-3))))
    return statistics.median(times)


def interleaved_ms(timed: dict) -> dict:
    """Median per-launch milliseconds of each, over ROUNDS rounds that visit
    each in turn (SAMPLES_PER_ROUND samples each), after WARMUP samples each."""
    for t in timed.values():
        for _ in range(WARMUP):
            t.sample_ms()
    samples = {name: [] for name in timed}
    for _ in range(ROUNDS):
        for name, t in timed.items():
            samples[name].extend(t.sample_ms() for _ in range(SAMPLES_PER_ROUND))
    return {name: statistics.median(values) for name, values in samples.items()}


def _load_all(directory: str, names: list[str]) -> None:
    launcher = load_launcher()
    for name in names:
        try:
            launcher.CudaModule.load(Path(directory) / f"{name}.json").close()
        except launcher.CudaError:
            pass  # run_case records it


def warm_jit(directory: Path, names: list[str], jobs: int, say) -> None:
    """Loads every module once in `jobs` processes, so that the driver's JIT
    cache holds them all before the timed loop loads them again (give the
    cache room: CUDA_CACHE_MAXSIZE)."""
    import multiprocessing

    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        pool.starmap(_load_all, [(str(directory), names[i::jobs]) for i in range(jobs)])
    say(f"{len(names)} modules JIT-compiled in {jobs} processes in {time.perf_counter() - started:.0f} s")


def run_case(launcher, directory: Path, case: dict, say, record: dict, flush) -> dict:
    import torch

    m, n, k, dtype, transpose_b = case["m"], case["n"], case["k"], case["dtype"], case["transpose_b"]
    a, b = gemm.make_inputs(m, n, k, dtype, transpose_b, 11)
    c_f32 = case.get("c", "f16") == "f32"
    c = torch.empty(m, n, device="cuda", dtype=torch.float32 if c_f32 else torch.float16)
    if c_f32:
        def cublas():  # cuBLAS writing f32 (torch >= 2.8), else its f16 GEMM
            try:
                return torch.mm(a, b, out_dtype=torch.float32)
            except TypeError:
                return torch.matmul(a, b)
    elif dtype == "fp8":
        one = torch.ones((), device="cuda", dtype=torch.float32)

        def cublas():
            return torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.float16)
    else:
        def cublas():
            return torch.matmul(a, b)
    peer = cublas()
    ok, worst, _ = gemm.check(peer, a, b, transpose_b, 11, gemm.sum_bits_of(dtype))
    record.update({"cublas_ok": ok, "cublas_worst": worst, "cublas_out": str(peer.dtype), "candidates": {}})
    modules = {}
    started = time.perf_counter()
    for count, entry in enumerate(case["candidates"]):
        if not entry.get("compiled"):
            continue
        if count % 25 == 0:
            flush()
        try:
            module = launcher.CudaModule.load(directory / entry["json"])
            c.fill_(float("nan"))
            module.launch("gemm", [a, b, c])
            torch.cuda.synchronize()
        except launcher.CudaError as error:
            record["candidates"][entry["name"]] = {"ok": False, "error": f"CUDA: {str(error)[:300]}"}
            continue
        bits = gemm.FP8_WGMMA_SUM_BITS if dtype == "fp8" and entry["wgmma"] else None
        good, worst, _ = gemm.check(c, a, b, transpose_b, 11, bits)
        if not good:
            record["candidates"][entry["name"]] = {"ok": False, "error": f"wrong: worst err/tol {worst:.3g}"}
            say(f"  {entry['name']}: WRONG (worst err/tol {worst:.3g}; {entry['describe']})")
            module.close()
            continue
        timed = Timed(lambda module=module: module.launch("gemm", [a, b, c]))
        record["candidates"][entry["name"]] = {"ok": True, "ms": time_ms(timed), "worst": worst,
                                               "graph": timed.graph is not None}
        modules[entry["name"]] = module, timed
    measured = {name: r["ms"] for name, r in record["candidates"].items() if r["ok"]}
    say(f"{case['key']}: {len(measured)} of {len(case['candidates'])} candidates checked and timed "
        f"in {time.perf_counter() - started:.0f} s")
    default = next((e["name"] for e in case["candidates"] if e["default"]), None)
    triton = None if c_f32 else best_triton(m, dtype, a, b, c, transpose_b, say, record)
    if measured:
        best = min(measured, key=measured.get)
        finalists = {"cublas": Timed(cublas)}
        for name in {best, default} & measured.keys():
            finalists[name] = modules[name][1]
        if triton is not None:
            finalists["triton"] = triton
        final = interleaved_ms(finalists)
        flops = 2.0 * m * n * k
        record["final"] = {"cublas_ms": final["cublas"], "best": best, "best_ms": final[best],
                           "default": default, "default_ms": final.get(default),
                           "triton_ms": final.get("triton")}
        tf = {name: flops / ms / 1e9 for name, ms in final.items()}
        say(f"  TFLOP/s: default {tf.get(default, math.nan):.1f}, tuned (best measured) {tf[best]:.1f}, "
            f"cuBLAS {tf['cublas']:.1f}, Triton {tf.get('triton', math.nan):.1f}")
    for module, _ in modules.values():
        module.close()
    return record


def best_triton(m: int, dtype: str, a, b, c, transpose_b: bool, say, record: dict) -> Timed | None:
    """bench/gemm.py's Triton tl.dot kernel over its eight configurations:
    each checked against float64 and timed as ours are; the fastest, or None."""
    import torch

    run_triton = gemm.triton_kernel()
    b_kn = b.t() if transpose_b else b
    best, timings = None, {}
    for config in gemm.triton_configs(m, dtype, wide=True):
        try:
            c.fill_(float("nan"))
            run_triton(a, b_kn, c, config)
            torch.cuda.synchronize()
            good, worst, _ = gemm.check(c, a, b, transpose_b, 11, gemm.sum_bits_of(dtype))
            if not good:
                say(f"  triton {config}: WRONG (worst err/tol {worst:.3g})")
                continue
            timed = Timed(lambda config=config: run_triton(a, b_kn, c, config))
            ms = time_ms(timed)
        except Exception as error:  # noqa: BLE001 - a configuration Triton cannot build here
            say(f"  triton {config}: {type(error).__name__}: {str(error)[:200]}")
            continue
        timings[str(config)] = ms
        if best is None or ms < best[0]:
            best = (ms, timed)
    record["triton"] = timings
    return best[1] if best else None


def run_docs(launcher, directory: Path, entries: list[dict], say) -> int:
    """The docs' matmul: checked against float64, then timed interleaved with
    torch.matmul (CUDA graphs, as the candidates). Returns the failed checks."""
    import torch

    failures = 0
    for entry in entries:
        m, n, k = entry["m"], entry["n"], entry["k"]
        a, b = gemm.make_inputs(m, n, k, "f16", False, 11)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
        module = launcher.CudaModule.load(directory / entry["json"])
        module.launch("main", [a, b, c])
        torch.cuda.synchronize()
        good, worst, _ = gemm.check(c, a, b, False, 11)
        if not good:
            failures += 1
            say(f"{entry['name']}: WRONG (worst err/tol {worst:.3g})")
            continue
        final = interleaved_ms({"ours": Timed(lambda module=module, a=a, b=b, c=c: module.launch("main", [a, b, c])),
                                "torch": Timed(lambda a=a, b=b: torch.matmul(a, b))})
        flops = 2.0 * m * n * k
        say(f"{entry['name']} ({entry['wgmma']} wgmma in the PTX): {flops / final['ours'] / 1e9:.1f} TFLOP/s, "
            f"torch.matmul {flops / final['torch'] / 1e9:.1f}: {final['torch'] / final['ours']:.3f} of torch "
            f"(checked, worst err/tol {worst:.3f})")
        module.close()
    return failures


def run(directory: Path, out: Path | None, only: str | None, jit_jobs: int) -> int:
    import torch

    launcher = load_launcher()
    manifest = json.loads((directory / "manifest.json").read_text())
    say = RunLog(out, f"tune_log{'_' + only if only else ''}.txt")
    props = torch.cuda.get_device_properties(0)
    say(f"device: {props.name}, {props.multi_processor_count} SMs; torch {torch.__version__}")
    results = {}
    path = (out or directory) / f"tune_results{'_' + only if only else ''}.json"

    def flush():
        path.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")

    failures = run_docs(launcher, directory, manifest.get("docs", []), say) if not only else 0
    cases = [case for case in manifest["cases"] if not only or only in (case["dtype"], case["key"])]
    if jit_jobs > 1:
        warm_jit(directory, [c["name"] for case in cases for c in case["candidates"] if c.get("compiled")],
                 jit_jobs, say)
    for case in cases:
        results[case["key"]] = {}
        run_case(launcher, directory, case, say, results[case["key"]], flush)
        flush()
    predicted = {c["name"]: c["predicted"] for case in manifest["cases"] for c in case["candidates"]
                 if isinstance(c.get("predicted"), float)}
    say("")
    say("the model at --prepare against the measurements:")
    summary_table(manifest, results, predicted, say)
    speed_table(manifest, results, say)
    wrong = sum(not r["ok"] for case in results.values() for r in case["candidates"].values()) + failures
    say(f"{wrong} candidate(s) failed their check")
    say.close()
    return 1 if wrong else 0


def speed_table(manifest: dict, results: dict, say) -> None:
    say("")
    say("TFLOP/s, default / tuned (best measured) / cuBLAS re-timed interleaved "
        f"({ROUNDS} rounds of {SAMPLES_PER_ROUND} graph replays each, the median)")
    say(f"{'case':>22} {'default':>8} {'tuned':>8} {'cuBLAS':>8} {'Triton':>8} {'def/tuned':>9} "
        f"{'def/cuBLAS':>10} {'tuned/cuBLAS':>12} {'def/Triton':>10}")
    for case in manifest["cases"]:
        final = results.get(case["key"], {}).get("final")
        if not final:
            continue
        flops = 2.0 * case["m"] * case["n"] * case["k"]
        d = flops / final["default_ms"] / 1e9 if final.get("default_ms") else math.nan
        t, c = flops / final["best_ms"] / 1e9, flops / final["cublas_ms"] / 1e9
        tri = flops / final["triton_ms"] / 1e9 if final.get("triton_ms") else math.nan
        say(f"{case['key']:>22} {d:8.1f} {t:8.1f} {c:8.1f} {tri:8.1f} {d / t:9.3f} {d / c:10.3f} "
            f"{t / c:12.3f} {d / tri:10.3f}")


# --------------------------------------------------------------------------
# --analyse (needs tilemlir: re-predicts with the model as it is now)
# --------------------------------------------------------------------------

def schema_1(report: dict) -> dict:
    """A saved nvidia report as docs/report.md has it: those --prepare wrote
    before the report had a schema_version held the launch metadata only, and
    the kernel's shared memory is its launches' dynamic shared memory."""
    if "schema_version" in report:
        return report
    shared = [launch["dynamic_shared_bytes"] for function in report["functions"]
              for launch in function["launches"] if "dynamic_shared_bytes" in launch]
    kernel = {"shared_bytes": max(shared, default=None), "occupancy": None, "nvidia": {}}
    return {**report, "schema_version": 1, "family": "nvidia", "kernels": [kernel]}


def analyse(directory: Path, result_files: list[Path]) -> int:
    from tilemlir.cost.model import DoesNotFit
    from tilemlir.tune.db import config_from
    from tilemlir.tune.search import model_seconds

    manifest = json.loads((directory / "manifest.json").read_text())
    reports = {name: schema_1(report) for name, report in json.loads((directory / "reports.json").read_text()).items()}
    results = {}
    for path in result_files:
        results.update(json.loads(path.read_text()))
    predicted, defaults = {}, {}
    for case in manifest["cases"]:
        _, _, target, tuned, chosen = tuned_case(case["dtype"], case["m"], case["n"], case["k"],
                                                 case.get("c", "f16"))
        by_config = {candidate.tuned(): candidate for candidate in chosen}
        defaults[case["key"]] = chosen[0].tuned()
        for record in case["candidates"]:
            candidate = by_config.get(config_from(record, "config"))
            if candidate is None or record["name"] not in reports:
                continue
            try:
                predicted[record["name"]] = model_seconds(tuned.problem, candidate, reports[record["name"]], target)
            except DoesNotFit:
                continue
        for record in case["candidates"]:  # tile-compile's default under the model as it is now
            record["default"] = config_from(record, "config") == defaults[case["key"]]
    print("the model as it is now against the measurements:")
    summary_table(manifest, results, predicted, print)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--prepare", metavar="DIR", help="compile every candidate into DIR")
    group.add_argument("--run", metavar="DIR", help="check and time the candidates prepared in DIR")
    group.add_argument("--analyse", nargs="+", metavar="PATH",
                       help="DIR RESULTS.json...: re-rank the measured candidates by the model as it is now")
    parser.add_argument("--jobs", type=int, default=2, help="with --prepare: parallel compiles")
    parser.add_argument("--cases", choices=("gemm", "split-k"), default="gemm",
                        help="with --prepare: bench/gemm.py's GEMMs (f16 C), or SPLIT_K_CASES (f32 C)")
    parser.add_argument("--out", metavar="DIR", help="with --run: write the log and results here")
    parser.add_argument("--only", metavar="DTYPE|KEY", help="with --prepare or --run: the cases of this dtype (or this one case) only")
    parser.add_argument("--jit-jobs", type=int, default=1,
                        help="with --run: JIT-compile every module first in this many processes")
    options = parser.parse_args(argv)
    if options.prepare:
        prepare(Path(options.prepare), options.jobs, options.cases, options.only)
        return 0
    if options.analyse:
        return analyse(Path(options.analyse[0]), [Path(p) for p in options.analyse[1:]])
    return run(Path(options.run), Path(options.out) if options.out else None, options.only,
               options.jit_jobs)


if __name__ == "__main__":
    sys.exit(main())
