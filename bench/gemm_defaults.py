"""tile-compile's default GEMM on the H200 against cuBLAS and a tuned Triton kernel.

Issue 28's measure: what a user gets with no options. Two steps, because the
device machine has the GPU but not our MLIR wheels (or carries them):

    .venv/bin/python bench/gemm_defaults.py --prepare build/gd     # here: PTX of every variant
    python3 bench/gemm_defaults.py --run build/gd --out DIR        # there: check, time, table

For every shape of bench/gemm.py's SHAPES and dtype of DTYPES, `--prepare`
compiles the **default** (the whole-problem tile.gemm, no options: the cost
model's choice and every default of the lowering) and VARIANTS of it: the same
choice with one lowering option changed (so a row says what each default is
worth), and the explicit configurations of EXTRA_CONFIGS (SKINNY_CONFIGS where
M <= 64; with --sweep also SKINNY_SWEEP's, mma.sync and wgmma); without --only
or --shape also the docs' Python matmul as printed
(bench/tune_model.py's `prepare_docs`, run first). `--run` checks every
variant against float64 (bench/gemm.py's `check`: sampled rows, dtype-derived
tolerances, NaN-poisoned output), then times the default, each variant,
cuBLAS (`torch.matmul`; fp8: `torch._scaled_mm`) and Triton (bench/gemm.py's
`tl.dot` kernel with grouped launch order, the best of its eight
configurations, each checked first) interleaved in rounds, as
bench/tune_model.py times its finalists (`Timed`: CUDA graphs of back-to-back
launches; `interleaved_ms`; `best_triton`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gemm as nvbench  # the bench folder's GEMM harness: shapes, inputs, checks, Triton
import tune_model  # its timing (CUDA graphs, interleaved rounds) and its tuned Triton peer
from bench_device import RunLog, load_launcher

# Lowering options of the variants: (name, tile-lower-to-gpu options).
VARIANTS = [("tiles", "tile-lower-to-gpu{persistent=false}"),
            ("one-role", "tile-lower-to-gpu{warp-specialize=false}")]
# Explicit configurations (block, threads, stages), wgmma, for shapes with M > 64.
EXTRA_CONFIGS = {"f16": [((128, 256, 64), 256, 4), ((128, 256, 64), 256, 3), ((128, 256, 32), 256, 4),
                         ((128, 128, 64), 128, 4), ((64, 64, 64), 128, 4)],
                 "bf16": [((128, 256, 64), 256, 4), ((128, 256, 64), 256, 3), ((128, 256, 32), 256, 4),
                          ((128, 128, 64), 128, 4)],
                 "fp8": [((128, 128, 128), 256, 4), ((128, 256, 128), 256, 3), ((128, 128, 256), 256, 3)]}
# For M <= 64: one warpgroup of 64-row wgmma blocks, the rows past M zero-filled
# by TMA (and clipped from the TMA store), deep pipelines to stream B.
SKINNY_CONFIGS = {"f16": [((64, 64, 64), 128, 8), ((64, 128, 64), 128, 6), ((64, 64, 128), 128, 6)],
                  "bf16": [((64, 64, 64), 128, 8), ((64, 128, 64), 128, 6)],
                  "fp8": [((64, 64, 128), 128, 8), ((64, 128, 128), 128, 6)]}
# --sweep, for M <= 64: (block, threads, stages, instruction preference) in
# units of 16-bit elements of K (8-bit operands take twice the block K).
SKINNY_SWEEP = [((32, 64, 64), 128, 8, "mma.sync"), ((32, 64, 128), 128, 4, "mma.sync"),
                ((32, 64, 128), 128, 6, "mma.sync"), ((32, 64, 256), 128, 3, "mma.sync"),
                ((32, 64, 256), 128, 4, "mma.sync"), ((32, 32, 128), 64, 6, "mma.sync"),
                ((32, 32, 256), 64, 4, "mma.sync"), ((32, 128, 128), 128, 4, "mma.sync"),
                ((64, 32, 128), 128, 8, "wgmma"), ((64, 64, 256), 128, 3, "wgmma"),
                ((64, 32, 256), 128, 4, "wgmma"), ((64, 64, 128), 128, 4, "wgmma"),
                ((16, 64, 64), 128, 8, "mma.sync"), ((16, 64, 128), 128, 4, "mma.sync"),
                ((16, 64, 128), 128, 6, "mma.sync"), ((16, 64, 256), 128, 3, "mma.sync"),
                ((16, 128, 128), 128, 4, "mma.sync"), ((16, 32, 128), 64, 6, "mma.sync")]


def variant_name(dtype, m, n, k, label) -> str:
    return f"{dtype}_{m}x{n}x{k}_{label}"


def compile_variant(out: Path, m, n, k, dtype, label, tiling="", select="", passes="") -> dict:
    from mlir import ir

    from tilemlir.backends.nvidia.toolchain import compile_to_ptx
    from tilemlir.dialects import tile
    from tilemlir.targets import get_target

    name = variant_name(dtype, m, n, k, label)
    context = tile.make_context()
    module = ir.Module.parse(nvbench.gemm_text(m, n, k, dtype, dtype == "fp8"), context)
    kernel = compile_to_ptx(module.operation, get_target(nvbench.TARGET), tiling, select, passes)
    kernel.save(out / name)
    launch = next(launch for function in kernel.metadata["functions"] for launch in function["launches"]
                  if "kernel" in launch)
    return {"name": name, "json": f"{name}.json", "m": m, "n": n, "k": k, "dtype": dtype, "label": label,
            "wgmma": kernel.ptx.count("wgmma.mma_async"), "block": launch.get("block"),
            "grid": launch.get("grid"), "setmaxnreg": kernel.ptx.count("setmaxnreg"),
            "shared": launch.get("dynamic_shared_bytes")}


def prepare(out: Path, only: str | None, shape: str | None = None, sweep: bool = False) -> None:
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for dtype in nvbench.DTYPES:
        if only and dtype != only:
            continue
        for m, n, k in [tuple(int(v) for v in shape.split("x"))] if shape else nvbench.SHAPES:
            variants = [("default", "", "", "")]
            variants += [(label, "", "", passes) for label, passes in VARIANTS]
            for block, threads, stages in (EXTRA_CONFIGS if m > 64 else SKINNY_CONFIGS)[dtype]:
                tiling = f"block={block[0]},{block[1]},{block[2]} threads={threads} stages={stages}"
                label = f"b{block[0]}x{block[1]}x{block[2]}_t{threads}_s{stages}"
                variants.append((label, tiling, "prefer=wgmma", ""))
            for block, threads, stages, prefer in SKINNY_SWEEP if sweep and m <= 64 else ():
                bk = block[2] * (2 if dtype == "fp8" else 1)
                tiling = f"block={block[0]},{block[1]},{bk} threads={threads} stages={stages}"
                label = f"{prefer.replace('.', '')}_b{block[0]}x{block[1]}x{bk}_t{threads}_s{stages}"
                variants.append((label, tiling, f"prefer={prefer}", ""))
            for label, tiling, select, passes in variants:
                start = time.perf_counter()
                try:
                    entry = compile_variant(out, m, n, k, dtype, label, tiling, select, passes)
                except Exception as error:
                    if not sweep:
                        raise
                    print(f"{label}: not compiled: {str(error).splitlines()[0][:300]}", flush=True)
                    continue
                entries.append(entry)
                print(f"{entry['name']}: block {entry['block']}, grid {entry['grid']}, "
                      f"{entry['wgmma']} wgmma, {time.perf_counter() - start:.1f} s", flush=True)
    docs = tune_model.prepare_docs(out) if not only and not shape else []
    (out / "manifest.json").write_text(json.dumps({"variants": entries, "docs": docs}, indent=2) + "\n")


def run(directory: Path, out: Path | None, only: str | None) -> int:
    import torch

    launcher = load_launcher()
    manifest = json.loads((directory / "manifest.json").read_text())
    say = RunLog(out, "gemm_defaults_log.txt")
    props = torch.cuda.get_device_properties(0)
    say(f"device: {props.name}, {props.multi_processor_count} SMs; torch {torch.__version__}")
    failures, results = tune_model.run_docs(launcher, directory, manifest.get("docs", []), say), []
    cases = sorted({(e["dtype"], e["m"], e["n"], e["k"]) for e in manifest["variants"]},
                   key=lambda c: (nvbench.DTYPES.index(c[0]), c[1:]))
    for dtype, m, n, k in cases:
        if only and dtype != only:
            continue
        entries = [e for e in manifest["variants"] if (e["dtype"], e["m"], e["n"], e["k"]) == (dtype, m, n, k)]
        transpose_b = dtype == "fp8"
        a, b = nvbench.make_inputs(m, n, k, dtype, transpose_b, 11)
        flops = 2.0 * m * n * k
        fns = {}
        if dtype == "fp8":
            one = torch.ones((), device="cuda", dtype=torch.float32)
            fns["cublas"] = lambda a=a, b=b, one=one: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one,
                                                                         out_dtype=torch.float16)
        else:
            fns["cublas"] = lambda a=a, b=b: torch.matmul(a, b)
        ok, worst, _ = nvbench.check(fns["cublas"](), a, b, transpose_b, 11, nvbench.sum_bits_of(dtype))
        say(f"{dtype} {m}x{n}x{k}: cuBLAS checked {'ok' if ok else 'WRONG'} (worst {worst:.3f})")
        for entry in entries:
            module = launcher.CudaModule.load(directory / entry["json"])
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
            module.launch("gemm", [a, b, c])
            torch.cuda.synchronize()
            path = {"path": nvbench.WGMMA if entry["wgmma"] else nvbench.MMA_SYNC}
            ok, worst, _ = nvbench.check(c, a, b, transpose_b, 11, nvbench.sum_bits_of(dtype, path))
            say(f"  {entry['label']}: {'ok' if ok else 'WRONG'} (worst err/tol {worst:.3f}), block "
                f"{entry['block']}, grid {entry['grid']}, setmaxnreg {entry['setmaxnreg']}")
            if not ok:
                failures += 1
                continue
            fns[entry["label"]] = lambda module=module, a=a, b=b, c=c: module.launch("gemm", [a, b, c])
        c_tri = torch.empty((m, n), device="cuda", dtype=torch.float16)
        triton_record: dict = {}
        triton = tune_model.best_triton(m, dtype, a, b, c_tri, transpose_b, say, triton_record)
        timed = {name: tune_model.Timed(fn) for name, fn in fns.items()}
        if triton is not None:
            timed["triton"] = triton
        ms = tune_model.interleaved_ms(timed)
        tf = {name: flops / t / 1e9 for name, t in ms.items()}
        record = {"dtype": dtype, "shape": [m, n, k], "tflops": tf, "triton_ms": triton_record.get("triton")}
        results.append(record)
        cub = tf["cublas"]
        line = ", ".join(f"{name} {value:.1f} ({value / cub:.2f})" for name, value in tf.items())
        say(f"  TFLOP/s (ratio to cuBLAS): {line}")
    say("")
    say(f"TFLOP/s; CUDA graphs of up to {tune_model.GRAPH_LAUNCHES} launches, {tune_model.ROUNDS} interleaved "
        f"rounds of {tune_model.SAMPLES_PER_ROUND} replays, the median; every kernel checked against float64 "
        "first; ratio to cuBLAS")
    labels = []
    for record in results:
        labels += [name for name in record["tflops"] if name not in labels]
    say("| case | " + " | ".join(labels) + " | default/cuBLAS | default/Triton |")
    say("|---|" + "---:|" * (len(labels) + 2))
    for record in results:
        tf = record["tflops"]
        m, n, k = record["shape"]
        cells = [f"{tf[name]:.1f}" if name in tf else "-" for name in labels]
        d = tf.get("default", float("nan"))
        say(f"| {record['dtype']} {m}x{n}x{k} | " + " | ".join(cells)
            + f" | {d / tf['cublas']:.2f} | {d / tf.get('triton', float('nan')):.2f} |")
    say(f"{failures} failed check(s)")
    if out is not None:
        (out / "gemm_defaults.json").write_text(json.dumps(results, indent=2) + "\n")
    say.close()
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--prepare", metavar="DIR", help="compile every variant into DIR")
    group.add_argument("--run", metavar="DIR", help="check and time the variants prepared in DIR")
    parser.add_argument("--out", metavar="DIR", help="with --run: write the log and JSON here")
    parser.add_argument("--only", choices=nvbench.DTYPES, help="one dtype only")
    parser.add_argument("--shape", metavar="MxNxK", help="with --prepare: this shape instead of SHAPES")
    parser.add_argument("--sweep", action="store_true",
                        help="with --prepare: also SKINNY_SWEEP's configurations where M <= 64")
    options = parser.parse_args(argv)
    if options.prepare:
        prepare(Path(options.prepare), options.only, options.shape, options.sweep)
        return 0
    return run(Path(options.run), Path(options.out) if options.out else None, options.only)


if __name__ == "__main__":
    sys.exit(main())
