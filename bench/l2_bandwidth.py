"""Read bandwidth of the H200's L2 and device memory, as the cost model reads them.

    python3 bench/l2_bandwidth.py [--out DIR]     # on the GPU machine (torch only)

A float16 tensor is read once by a Triton kernel of many programs (each sums
ITERS blocks of BLOCK elements) in a CUDA graph of REPLAYS back-to-back
launches, timed with CUDA events after warm-up, the median of ROUNDS. Tensors of 8-32 MiB stay in the L2 between
launches (the H200's L2 holds 50-60 MB), so the rate is the L2's; one of 2 GiB
streams from device memory. The rate printed is bytes read over time: a lower
bound of what the memory delivers (the reduction's own work is included).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench folder's shared helpers
from bench_device import RunLog

SIZES_MIB = [8, 16, 32, 2048]
REPLAYS, ROUNDS, WARMUP = 50, 7, 3


def read_kernel():
    """A Triton kernel that reads every element once: each program sums
    ITERS blocks of BLOCK f16 and stores one f32 (enough programs to fill
    every SM many times over)."""
    import triton
    import triton.language as tl

    @triton.jit
    def read(x_ptr, out_ptr, BLOCK: tl.constexpr, ITERS: tl.constexpr):
        pid = tl.program_id(0)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for i in range(ITERS):
            offsets = (pid * ITERS + i) * BLOCK + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + offsets).to(tl.float32)
        tl.store(out_ptr + pid, tl.sum(acc))

    return read


BLOCK, ITERS = 4096, 4


def rate_gbps(kernel, mib: int) -> float:
    import torch

    x = torch.ones(mib * 2 ** 20 // 2, device="cuda", dtype=torch.float16)
    programs = x.numel() // (BLOCK * ITERS)
    out = torch.empty(programs, device="cuda", dtype=torch.float32)

    def launch():
        kernel[(programs,)](x, out, BLOCK=BLOCK, ITERS=ITERS, num_warps=8)

    for _ in range(WARMUP):
        launch()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(REPLAYS):
            launch()
    times = []
    for _ in range(ROUNDS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / REPLAYS)
    assert float(out.sum()) == x.numel()  # every element read once
    return x.numel() * 2 / statistics.median(times) / 1e9


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", metavar="DIR", help="write the log here")
    options = parser.parse_args(argv)
    say = RunLog(Path(options.out) if options.out else None, "l2_bandwidth.txt")
    props = torch.cuda.get_device_properties(0)
    say(f"device: {props.name}, {props.multi_processor_count} SMs, L2 {props.L2_cache_size / 2 ** 20:.0f} MiB; "
        f"torch {torch.__version__}")
    kernel = read_kernel()
    for mib in SIZES_MIB:
        say(f"{mib:5d} MiB: {rate_gbps(kernel, mib):8.0f} GB/s read")
    say.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
