"""Whole models on the GPU: eager torch, torch.compile with Inductor, and
torch.compile with tilemlir's backend, in one interleaved run.

    python bench/models.py [--out DIR] [--models bert-8x128,resnet50-b32,...] [--autotune]

Run on a machine with an NVIDIA GPU, torch, transformers and torchvision, and
tilemlir importable (the MLIR bindings with it): tilemlir's kernels compile
there, through the backend, as a user's would.

Models (random weights, eval mode, fp16): BERT-base (transformers' BertModel
from BertConfig(), input ids at batch x sequence) and ResNet-50 (torchvision,
weights=None, channels-last). For each model and configuration:

* every variant's output is compared with the model run eagerly in fp32 on the
  same weights and inputs (the largest error relative to the largest
  magnitude of the fp32 result);
* the variants are timed interleaved: ROUNDS rounds, in each round each
  variant runs WARMUP forwards then TIMED forwards between CUDA events; a
  variant's time is the median over rounds of its mean time per forward;
* tilemlir's row also says how many fusion groups (kernels) a forward runs
  and how many ATen nodes fell back to torch.

Variants: eager; Inductor (`torch.compile(m)`); Inductor with CUDA graphs
(`mode="reduce-overhead"`); with `--autotune`, Inductor
`mode="max-autotune-no-cudagraphs"`; tilemlir (`backend=tilemlir.torch_backend.backend`,
which replays CUDA graphs by default) and tilemlir without them
(`options={"cudagraphs": False}`).
Results: DIR/models.json and a Markdown table on stdout.

`--soak SECONDS` instead runs each model through tilemlir as a user would
(CUDA graphs) for SECONDS after warm-up, each forward timed between CUDA
events, in windows of SOAK_WINDOW_S: per window the median and p99 time per
forward, the device memory allocated and reserved, and the graphs the
backend has compiled so far; then the drift (the last window's median over the
first's, less 1), the memory's growth, the recompilations after warm-up and
whether the last output equals the first (`soak_summary`). Results:
DIR/soak.json and a table.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ROUNDS, WARMUP, TIMED = 3, 3, 10
SOAK_WINDOW_S = 10.0
CONFIGS = {
    "bert-8x128": ("bert", 8, 128),
    "bert-32x512": ("bert", 32, 512),
    "resnet50-b32": ("resnet50", 32, 224),
    "resnet50-b128": ("resnet50", 128, 224),
}


def make_model(torch, kind: str, batch: int, size: int):
    """(fp32 model, its input) on the GPU."""
    torch.manual_seed(0)
    if kind == "bert":
        from transformers import BertConfig, BertModel

        model = BertModel(BertConfig()).eval().cuda()
        inputs = torch.randint(0, BertConfig().vocab_size, (batch, size), device="cuda")
        return model, inputs
    import torchvision

    model = torchvision.models.resnet50(weights=None).eval().cuda()
    return model, torch.randn(batch, 3, size, size, device="cuda")


def half_model(torch, name: str):
    """(fp16 model, its input) of a configuration, ResNet-50 channels-last, as the benches time them."""
    kind, batch, size = CONFIGS[name]
    model, inputs = make_model(torch, kind, batch, size)
    half = model.half()
    if kind == "resnet50":
        half, inputs = half.to(memory_format=torch.channels_last), inputs.half().to(memory_format=torch.channels_last)
    return half, inputs


def output_of(result):
    """The tensor a forward returns (BERT: the last hidden state)."""
    if hasattr(result, "last_hidden_state"):
        return result.last_hidden_state
    if isinstance(result, (tuple, list)):
        return result[0]
    return result


def time_forward(torch, forward, inputs) -> float:
    for _ in range(WARMUP):
        forward(inputs)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(TIMED):
        forward(inputs)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / TIMED


class Counter(logging.Handler):
    """Collects the backend's fallback lines."""

    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--models", default="bert-8x128,resnet50-b32")
    parser.add_argument("--autotune", action="store_true")
    parser.add_argument("--profile", action="store_true",
                        help="only tilemlir: each kernel call of one forward timed alone (synchronised), the slowest listed")
    parser.add_argument("--soak", type=float, metavar="SECONDS",
                        help="only tilemlir: run each model this long, timing every forward (drift, memory, recompiles)")
    args = parser.parse_args()

    import torch

    from tilemlir.torch_backend import dynamo

    args.out.mkdir(parents=True, exist_ok=True)
    counter = Counter()
    logging.getLogger("tilemlir.torch").addHandler(counter)
    if args.profile:
        return profile(torch, dynamo, args.models.split(","))
    if args.soak:
        return soak(torch, dynamo, args.models.split(","), args.soak, args.out)
    rows = []
    for name in args.models.split(","):
        kind, batch, size = CONFIGS[name]
        model, inputs = make_model(torch, kind, batch, size)
        with torch.no_grad():
            reference = output_of(model(inputs)).float()
            half = model.half()
            if kind == "resnet50":
                half = half.to(memory_format=torch.channels_last)
                inputs = inputs.half().to(memory_format=torch.channels_last)
            variants = {"eager": half, "inductor": torch.compile(half),
                        "inductor graphs": torch.compile(half, mode="reduce-overhead")}
            if args.autotune:
                variants["inductor max-autotune"] = torch.compile(half, mode="max-autotune-no-cudagraphs")
            calls = []
            original_call = dynamo.GroupKernel.__call__

            def counted(self, *tensors, _original=original_call, _calls=calls):
                _calls.append(self.name)
                return _original(self, *tensors)

            dynamo.GroupKernel.__call__ = counted
            variants["tilemlir"] = torch.compile(half, backend=dynamo.backend)
            variants["tilemlir no graphs"] = torch.compile(half, backend=dynamo.backend,
                                                           options={"cudagraphs": False})
            row = {"model": name, "errors": {}, "compile_s": {}, "ms": {}}
            for variant, forward in variants.items():
                counter.lines.clear()
                calls.clear()  # the first call runs every kernel (later ones may replay a graph)
                start = time.perf_counter()
                try:
                    out = output_of(forward(inputs)).float()
                except Exception as error:  # noqa: BLE001 - reported in the table
                    row["errors"][variant] = f"failed: {type(error).__name__}: {str(error)[:300]}"
                    continue
                torch.cuda.synchronize()
                row["compile_s"][variant] = time.perf_counter() - start
                row["errors"][variant] = ((out - reference).abs().max() / reference.abs().max()).item()
                if variant == "tilemlir":
                    row["kernels_per_forward"] = len(calls)
                if variant.startswith("tilemlir"):  # calls 2 and 3: captured, then replayed (graphs)
                    again = [output_of(forward(inputs)).float() for _ in range(2)]
                    row.setdefault("same_as_first_call", {})[variant] = all(torch.equal(a, out) for a in again)
                    row["fallback_lines"] = [line[:600] for line in counter.lines]
            timings = {v: [] for v in variants if not isinstance(row["errors"].get(v), str)}
            for _ in range(ROUNDS):
                for variant, samples in timings.items():
                    samples.append(time_forward(torch, variants[variant], inputs))
            row["ms"] = {v: statistics.median(t) for v, t in timings.items()}
            dynamo.GroupKernel.__call__ = original_call
        rows.append(row)
        print(json.dumps(row), flush=True)
        del model, half, variants
        torch.cuda.empty_cache()
    (args.out / "models.json").write_text(json.dumps(rows, indent=1))
    names = ["eager", "inductor", "inductor graphs"] + (["inductor max-autotune"] if args.autotune else []) \
        + ["tilemlir", "tilemlir no graphs"]
    print("\n| model | " + " | ".join(f"{n} (ms)" for n in names) + " | tilemlir speed vs eager | vs the best "
          "Inductor | max rel. error (tilemlir) | kernels per forward |")
    print("|---|" + "---:|" * (len(names) + 4))
    for row in rows:
        ms = row["ms"]
        times = [f"{ms[n]:.2f}" if n in ms else "failed" for n in names]
        speed = f"{ms['eager'] / ms['tilemlir']:.2f}x" if "tilemlir" in ms else "-"
        inductors = [ms[n] for n in names if n.startswith("inductor") and n in ms]
        versus = f"{min(inductors) / ms['tilemlir']:.2f}x" if inductors and "tilemlir" in ms else "-"
        error = row["errors"].get("tilemlir")
        shown = f"{error:.1e}" if isinstance(error, float) else str(error)
        print(f"| {row['model']} | " + " | ".join(times)
              + f" | {speed} | {versus} | {shown} | {row.get('kernels_per_forward', '-')} |")
    return 0


def percentile(values: list[float], fraction: float) -> float:
    """The value below which `fraction` of `values` lie (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def soak_summary(windows: list[dict]) -> dict:
    """Drift and growth over a soak's windows, each {"median_ms", "p99_ms",
    "allocated", "reserved", "compiles"} in time order: the last window's
    median over the first's, less 1 (`drift`), the largest such ratio of any
    window (`worst_drift`), the bytes reserved and allocated at the end less
    at the start, and the graphs compiled after the first window."""
    first, last = windows[0], windows[-1]
    return {
        "window_count": len(windows),
        "drift": last["median_ms"] / first["median_ms"] - 1,
        "worst_drift": max(abs(w["median_ms"] / first["median_ms"] - 1) for w in windows),
        "p99_over_median": max(w["p99_ms"] / w["median_ms"] for w in windows),
        "reserved_growth": last["reserved"] - first["reserved"],
        "allocated_growth": last["allocated"] - first["allocated"],
        "recompiles": last["compiles"] - first["compiles"],
    }


def soak(torch, dynamo, names, seconds: float, out: Path) -> int:
    """Each model through tilemlir's backend with CUDA graphs for `seconds`
    (module docstring)."""
    results = []
    for name in names:
        half, inputs = half_model(torch, name)
        compiles = []

        def counted_backend(graph, example_inputs, _compiles=compiles):
            _compiles.append(1)
            return dynamo.backend(graph, example_inputs)
        compiled = torch.compile(half, backend=counted_backend)
        windows = []
        with torch.no_grad():
            first = output_of(compiled(inputs)).clone()
            for _ in range(WARMUP):
                compiled(inputs)
            torch.cuda.synchronize()
            began = time.perf_counter()
            while time.perf_counter() - began < seconds:
                pairs, window_start = [], time.perf_counter()
                while time.perf_counter() - window_start < min(SOAK_WINDOW_S, seconds):
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    compiled(inputs)
                    end.record()
                    pairs.append((start, end))
                    if len(pairs) % 64 == 0:
                        end.synchronize()  # the host stays at most 64 forwards ahead
                torch.cuda.synchronize()
                times = [start.elapsed_time(end) for start, end in pairs]
                windows.append({"seconds": round(time.perf_counter() - began, 1), "forwards": len(times),
                                "median_ms": statistics.median(times), "p99_ms": percentile(times, 0.99),
                                "allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved(),
                                "compiles": len(compiles)})
                print(json.dumps({"model": name, **windows[-1]}), flush=True)
            same = torch.equal(output_of(compiled(inputs)), first)
        results.append({"model": name, "windows": windows, "same_output": same, **soak_summary(windows)})
        del half, compiled
        torch.cuda.empty_cache()
    (out / "soak.json").write_text(json.dumps(results, indent=1))
    print("\n| model | seconds | forwards | first window median (ms) | last window median (ms) | drift | worst window "
          "drift | p99 / median | reserved growth (MiB) | recompiles | last output = first |")
    print("|---|" + "---:|" * 9 + "---|")
    for r in results:
        w = r["windows"]
        print(f"| {r['model']} | {w[-1]['seconds']:.0f} | {sum(x['forwards'] for x in w)} | {w[0]['median_ms']:.3f} | "
              f"{w[-1]['median_ms']:.3f} | {r['drift']:+.2%} | {r['worst_drift']:.2%} | {r['p99_over_median']:.2f} | "
              f"{r['reserved_growth'] / 2**20:.1f} | {r['recompiles']} | {r['same_output']} |")
    return 0


def profile(torch, dynamo, names) -> int:
    """The slowest kernel calls of one forward of each model through tilemlir."""
    original = dynamo.GroupKernel.__call__
    for name in names:
        half, inputs = half_model(torch, name)
        # Without graph replay: a replayed forward calls no kernel of ours.
        compiled = torch.compile(half, backend=dynamo.backend, options={"cudagraphs": False})
        with torch.no_grad():
            compiled(inputs)
            compiled(inputs)
            calls = []

            def timed(self, *tensors, _calls=calls):
                torch.cuda.synchronize()
                start = time.perf_counter()
                result = original(self, *tensors)
                torch.cuda.synchronize()
                _calls.append((time.perf_counter() - start, self.name, [tuple(t.shape) for t in tensors]))
                return result

            dynamo.GroupKernel.__call__ = timed
            torch.cuda.synchronize()
            start = time.perf_counter()
            compiled(inputs)
            torch.cuda.synchronize()
            total = time.perf_counter() - start
            dynamo.GroupKernel.__call__ = original
        print(f"{name}: forward {total * 1e3:.2f} ms (synchronised per kernel), kernels {sum(c[0] for c in calls) * 1e3:.2f} ms "
              f"in {len(calls)} calls")
        for seconds, group, shapes in sorted(calls, reverse=True)[:12]:
            print(f"  {seconds * 1e3:8.3f} ms  {group}  {shapes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
