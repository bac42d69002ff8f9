"""What a Python call of a `@tilemlir.jit` kernel costs on torch CUDA tensors,
next to the kernel itself and to torch's own call (issue: calls on the GPU's
memory, at most 20 us more than the kernel).

    python bench/call_overhead.py [--out DIR] [--calls 2000]

Run on a machine with an NVIDIA GPU, torch, and tilemlir importable (the MLIR
bindings with it): the kernels compile there, through the JIT, as a user's
would. For each case (examples/python/softmax.py at 4096x1024, the matmul of
docs/language.md at 4096^3, and the same pair through torch):

* kernel: the GPU time of one kernel, from CUDA events around a CUDA graph
  of 20 launches (no host work inside), median of 7;
* kernel in a loop: the same graph replayed back to back for as many
  kernels as a block of the call loop runs, synchronised at the end, median
  of 7 blocks: what the kernel alone sustains over the call loop's span (a
  long kernel, e.g. a 4096^3 matmul, runs slower over 15 ms than over one
  short graph, torch's as well as ours);
* host: the host time of one call (the Python function returns; nothing
  waits for the GPU), median over `--calls` calls in blocks of 50;
* call: the time per call of `--calls` back-to-back calls, synchronised at
  the end (what a loop of calls pays), median of 7 blocks;
* call - kernel: the goal is at most 20 us; both differences are printed,
  to the short graph's kernel time and to the kernel in a loop.

Every output is checked against float64 (torch on the CPU) first. The table
is printed and written to DIR/call_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

LOG2E = 1.4426950408889634


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def capture_graph(torch, launch, repeats: int):
    """A CUDA graph of `repeats` launches of `launch()`."""
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        launch()  # allocations made once, outside the graph
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(repeats):
                launch()
    torch.cuda.synchronize()
    return graph


def graph_kernel_ms(torch, graph, repeats: int = 20, trials: int = 7) -> float:
    """Median GPU time of one launch of a graph of `repeats` launches."""
    times = []
    for _ in range(trials):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / repeats / 1e3)
    return median_ms(times)


def host_ms(torch, call, calls: int) -> float:
    """Median host time of one call: blocks of 50 calls, the GPU drained
    between blocks so the launch queue never fills."""
    samples = []
    for _ in range(max(1, calls // 50)):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(50):
            call()
        samples.append((time.perf_counter() - start) / 50)
    torch.cuda.synchronize()
    return median_ms(samples)


def loop_ms(torch, call, calls: int, blocks: int = 7) -> float:
    samples = []
    for _ in range(blocks):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls // blocks):
            call()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) / (calls // blocks))
    return median_ms(samples)


def measure(torch, name: str, call, calls: int, repeats: int = 20) -> dict:
    for _ in range(20):  # warm-up: compiled, loaded, allocator primed
        call()
    torch.cuda.synchronize()
    graph = capture_graph(torch, call, repeats)
    kernel = graph_kernel_ms(torch, graph, repeats)
    # Interleaved: host, call-loop and kernel-loop timings alternate, three
    # rounds, medians. The kernel loop replays the graph for as many kernels
    # as a call-loop block makes.
    hosts, loops, kernel_loops = [], [], []
    for _ in range(3):
        hosts.append(host_ms(torch, call, calls))
        loops.append(loop_ms(torch, call, calls))
        kernel_loops.append(loop_ms(torch, graph.replay, calls // repeats) / repeats)
    row = {"case": name, "kernel_us": kernel * 1e3, "host_us": statistics.median(hosts) * 1e3,
           "call_us": statistics.median(loops) * 1e3,
           "kernel_loop_us": statistics.median(kernel_loops) * 1e3}
    row["call_minus_kernel_us"] = row["call_us"] - row["kernel_us"]
    row["call_minus_kernel_loop_us"] = row["call_us"] - row["kernel_loop_us"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--calls", type=int, default=2100)
    parser.add_argument("--target", default=None, help="target= for the kernels (default: the JIT's)")
    args = parser.parse_args()

    import torch

    import tilemlir
    from tilemlir.runtime import cache

    args.out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT / "examples" / "python"))
    import softmax as softmax_example
    from tune_model import docs_matmul

    # What a user runs: the example's factory, the docs' factory, no target
    # given unless --target says so.
    softmax_jit = softmax_example.softmax if args.target is None else tilemlir.jit(
        softmax_example.softmax.function, out_idx=[1], target=args.target)
    matmul_factory = docs_matmul(args.out)
    matmul_jit = matmul_factory if args.target is None else tilemlir.jit(
        matmul_factory.function, out_idx=[-1], target=args.target)

    rows, checks = [], []
    start = time.perf_counter()
    softmax = softmax_jit(4096, 1024)
    x = (torch.rand(4096, 1024, device="cuda") * 8 - 4).half()
    y = softmax(x)
    compile_softmax = time.perf_counter() - start
    reference = torch.softmax(x.double().cpu(), dim=1)
    error = (y.double().cpu() - reference).abs().max().item()
    checks.append({"case": "softmax 4096x1024", "returns": f"{type(y).__name__} on {y.device}",
                   "max_abs_error": error, "bound": 2.0 ** -10, "target": str(softmax.target),
                   "engine": softmax.engine, "first_call_s": compile_softmax})
    assert y.is_cuda and error <= 2.0 ** -10, checks[-1]

    start = time.perf_counter()
    matmul = matmul_jit(4096, 4096, 4096)
    a = torch.randn(4096, 4096, device="cuda").half()
    b = torch.randn(4096, 4096, device="cuda").half()
    c = matmul(a, b)
    compile_matmul = time.perf_counter() - start
    product = (a.double() @ b.double())
    # f32 accumulation over K=4096, f16 output: the f16 rounding dominates.
    bound = (2.0 ** -11 * product.abs() + 4096 * 2.0 ** -24 * (a.double().abs() @ b.double().abs()) + 2.0 ** -24)
    excess = ((c.double() - product).abs() - bound).max().item()
    checks.append({"case": "docs matmul 4096^3", "returns": f"{type(c).__name__} on {c.device}",
                   "max_excess_over_bound": excess, "target": str(matmul.target), "engine": matmul.engine,
                   "first_call_s": compile_matmul})
    assert c.is_cuda and excess <= 0, checks[-1]
    del product, bound

    rows.append(measure(torch, "softmax 4096x1024 (tilemlir)", lambda: softmax(x), args.calls))
    rows.append(measure(torch, "softmax 4096x1024 (torch)", lambda: torch.softmax(x, dim=1), args.calls))
    rows.append(measure(torch, "matmul 4096^3 (tilemlir)", lambda: matmul(a, b), args.calls // 4))
    rows.append(measure(torch, "matmul 4096^3 (torch)", lambda: torch.matmul(a, b), args.calls // 4))

    # The disk cache: a second process would find both kernels.
    cached = sorted(str(p.relative_to(cache.cache_dir())) for p in cache.cache_dir().glob("*/*"))
    print("checks:")
    for check in checks:
        print("  " + json.dumps(check))
    print("\n| case | kernel (us) | kernel in a loop (us) | host per call (us) | call in a loop (us) "
          "| call - kernel (us) | call - kernel in a loop (us) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['case']} | {row['kernel_us']:.1f} | {row['kernel_loop_us']:.1f} | {row['host_us']:.1f} | "
              f"{row['call_us']:.1f} | {row['call_minus_kernel_us']:.1f} | {row['call_minus_kernel_loop_us']:.1f} |")
    print(f"\ncache entries: {cached}")
    (args.out / "call_overhead.json").write_text(json.dumps({"checks": checks, "rows": rows,
                                                              "cache": cached}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
