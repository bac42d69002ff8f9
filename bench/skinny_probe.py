"""A skinny GEMM's kernels side by side, for ncu or a quick timing: ours, Triton's, cuBLAS's.

    python3 bench/skinny_probe.py DIR DTYPE [LABEL ...]

DIR is a `bench/gemm_defaults.py --prepare DIR --shape 16x8192x8192` directory
(with `--sweep` for its explicit configurations); LABEL names its kernels
(DTYPE_16x8192x8192_LABEL.json, default: `default`). Each of ours, bench/gemm.py's
Triton `tl.dot` kernel at three configurations and cuBLAS (fp8: torch._scaled_mm)
is launched three times (what `ncu --launch-skip/--launch-count` select from),
then timed in three interleaved rounds of 20 launches (CUDA events, no graphs):
microseconds, TFLOP/s and B's bytes per second. Outputs are not checked here:
gemm_defaults.py --run checks the same kernels against float64.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gemm as nvbench
from bench_device import load_launcher

M, N, K = 16, 8192, 8192
TRITON_CONFIGS = [(16, 64, 2, 4, 4), (16, 128, 1, 4, 4), (32, 64, 2, 4, 4)]  # block K in units of 64 (f16)


def main() -> None:
    directory, dtype = Path(sys.argv[1]), sys.argv[2]
    labels = sys.argv[3:] or ["default"]
    launcher = load_launcher()
    transpose_b = dtype == "fp8"
    a, b = nvbench.make_inputs(M, N, K, dtype, transpose_b, 11)
    fns = {}
    for label in labels:
        module = launcher.CudaModule.load(directory / f"{dtype}_{M}x{N}x{K}_{label}.json")
        c = torch.empty((M, N), device="cuda", dtype=torch.float16)
        fns[f"ours {label}"] = lambda module=module, c=c: module.launch("gemm", [a, b, c])
    run = nvbench.triton_kernel()
    unit = 128 if dtype == "fp8" else 64
    b_kn = b.t() if transpose_b else b
    for bm, bn, k_units, warps, stages in TRITON_CONFIGS:
        config = (bm, bn, k_units * unit, warps, stages)
        c = torch.empty((M, N), device="cuda", dtype=torch.float16)
        fns[f"triton {config}"] = lambda config=config, c=c: run(a, b_kn, c, config)
    if dtype == "fp8":
        one = torch.ones((), device="cuda", dtype=torch.float32)
        fns["cublas"] = lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.float16)
    else:
        fns["cublas"] = lambda: torch.matmul(a, b)
    for fn in fns.values():
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        for name, fn in fns.items():
            start.record()
            for _ in range(20):
                fn()
            end.record()
            end.synchronize()
            us = start.elapsed_time(end) / 20 * 1e3
            print(f"{name}: {us:.1f} us, {2 * M * N * K / us / 1e6:.1f} TFLOP/s, "
                  f"{b.numel() * b.element_size() / us / 1e6:.2f} TB/s of B", flush=True)


if __name__ == "__main__":
    main()
