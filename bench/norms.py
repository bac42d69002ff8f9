"""Row softmax, layernorm and rmsnorm on the H200: tilemlir's nvidia backend against torch, in one run.

Two steps, because the device machine has the GPU but not our MLIR wheels:

    .venv/bin/python bench/norms.py --prepare build/normbench    # here: PTX for every case
    python3 bench/norms.py --run build/normbench [--out DIR]     # there: check, time, table

`--prepare` writes, for every kernel in OPS, dtype in DTYPES and (rows, cols) in
SHAPES, the tile-dialect program of `kernel_text` (the row kernels of
examples/kernels with their sizes as parameters: f32 math, whole rows held in
register fragments, one copy in and one copy out) for each candidate of
`candidates` (rows per block and threads, so that a thread holds at most
MAX_VALUES_PER_THREAD f32 values of a row tile), compiles it for sm_90a and
records what its PTX says (local memory, global access widths, and, where a
ptxas is on the PATH, registers and spills). A candidate the compiler refuses
is listed in the manifest with the compiler's message and left out.

`--run` needs torch only (and tilemlir/runtime/cuda_launch.py, loaded by path).
For every case it draws fresh random inputs, poisons the outputs with NaN, runs
each candidate and torch's op once and checks every element of a sample of rows
against float64 with a tolerance derived from the dtypes (see `tolerance`);
then it times each checked candidate, torch's op (torch.softmax,
F.layer_norm with weight and bias, F.rms_norm with weight), the same op
compiled by Inductor (`torch.compile`, its generated Triton kernel; checked
like torch's) and a device-to-device `Tensor.copy_` of the same rows x cols
elements, interleaved in ROUNDS rounds.
Each timed sample is one replay of a CUDA graph of many launches that rotate
over enough input/output sets to overflow the L2 (so that no variant is timed
from the cache), between CUDA events, after warm-up replays; a variant's time is
the median sample over its launches. GB/s counts the bytes every variant must
move once: the input read, the output written, the weight (and bias) vectors
read. Results: bench/results/norms-h200.md.

`--launch-once DIR --only NAMES` launches the named kernels and torch's op once
each, checked, for a profiler (`ncu -k regex:kernel0 ...`).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench folder's shared helpers
from bench_device import RunLog, load_launcher

OPS = ("softmax", "layernorm", "rmsnorm")
DTYPES = ("f16", "bf16")
SHAPES = [(4096, 1024), (4096, 4096), (4096, 8192), (16384, 1024), (16384, 4096), (16384, 8192)]
TARGET = "nvidia:sm_90a"
ELEMENT_BYTES = {"f16": 2, "bf16": 2}
# Whole rows live in registers: a thread's share of the f32 row tile stays
# small enough that the fragment (and layernorm's second one, the squares) fit
# without spilling (255 registers at most per thread on sm_90).
MAX_VALUES_PER_THREAD = 32
# Not 1024: a thread then has 64 registers, and these kernels spill (ptxas 13.0
# -v: softmax 16384x8192, 2 rows x 1024 threads, 40 bytes; 4 rows, 484 bytes).
THREAD_COUNTS = (128, 256, 512)
MAX_BLOCK_ROWS = 8
EPS = {"layernorm": 1.0e-5, "rmsnorm": 1.0e-6}  # torch's layer_norm default; a usual rms_norm value

# Timing (see the module docstring).
ROUNDS, REPLAYS_PER_ROUND, WARMUP_REPLAYS = 8, 3, 2
FOOTPRINT_BYTES = 512 << 20  # input and output sets rotated over: several times the 60 MB L2
GRAPH_BYTES = 2 << 30  # bytes moved by one graph replay (launches x bytes per launch), at least
MAX_LAUNCHES_PER_GRAPH = 256
SAMPLE_ROWS = 256


def case_name(op: str, dtype: str, rows: int, cols: int, block_rows: int, threads: int) -> str:
    return f"{op}_{dtype}_{rows}x{cols}_r{block_rows}_t{threads}"


def matches(name: str, only: str | None) -> bool:
    """`only`: comma-separated globs (softmax_*_16384x1024,*_4096x8192); None: all."""
    return only is None or any(fnmatch.fnmatch(name, glob) for glob in only.split(","))


def candidates(cols: int) -> list[tuple[int, int]]:
    """(rows per block, threads): every block of THREAD_COUNTS threads whose
    threads hold 8, 16 or 32 (at most MAX_VALUES_PER_THREAD) values of a tile of
    whole rows, at most MAX_BLOCK_ROWS rows."""
    found = []
    for threads in THREAD_COUNTS:
        for values in (8, 16, 32):
            if values > MAX_VALUES_PER_THREAD or (values * threads) % cols:
                continue
            block_rows = values * threads // cols
            if 1 <= block_rows <= MAX_BLOCK_ROWS:
                found.append((block_rows, threads))
    return found


# --------------------------------------------------------------------------
# Kernel texts: examples/kernels/{softmax,layernorm,rmsnorm}.mlir with sizes,
# element type, rows per block and threads as parameters. Layernorm keeps the
# example's arithmetic but does not write mean and rstd (torch does not).
# --------------------------------------------------------------------------

def kernel_text(op: str, dtype: str, rows: int, cols: int, block_rows: int, threads: int) -> str:
    if rows % block_rows:
        raise ValueError(f"{rows} rows are not a multiple of {block_rows} rows per block")
    body = {"softmax": _softmax_body, "layernorm": _layernorm_body, "rmsnorm": _rmsnorm_body}[op]
    header = f"""!X = memref<{rows}x{cols}x{dtype}>
!vec = memref<{cols}x{dtype}>
!tile = memref<{block_rows}x{cols}xf32, #gpu.address_space<private>>
!rows = memref<{block_rows}xf32, #gpu.address_space<private>>
"""
    arguments = {"softmax": "%X: !X, %Y: !X", "layernorm": "%X: !X, %gamma: !vec, %beta: !vec, %Y: !X",
                 "rmsnorm": "%X: !X, %weight: !vec, %Y: !X"}[op]
    return f"""{header}
module attributes {{tile.target = "{TARGET}"}} {{
func.func @{op}({arguments}) {{
  "tile.kernel"() ({{
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %bm = arith.constant {block_rows} : index
    %n = arith.constant {cols} : index
    %row = arith.muli %bx, %bm : index
{body(op, dtype, cols)}
    "tile.copy"(%x, %Y, %row, %c0) {{operandSegmentSizes = array<i32: 1, 1, 0, 2>}} : (!tile, !X, index, index) -> ()
    gpu.yield
  }}) {{grid = array<i64: {rows // block_rows}>, threads = {threads} : i64}} : () -> ()
  return
}}
}}
"""


_LOAD_X = ('    "tile.copy"(%X, %x, %row, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} '
           ': (!X, !tile, index, index) -> ()')


def _float(value: float) -> str:
    return f"{value:.9e}"


def _softmax_body(op: str, dtype: str, cols: int) -> str:
    return f"""    %x = "tile.alloc_fragment"() : () -> !tile
    %log2e = arith.constant 1.44269504 : f32  // exp(d) = exp2(d log2(e)), examples/kernels/softmax.mlir
    %max = "tile.alloc_fragment"() : () -> !rows
    %sum = "tile.alloc_fragment"() : () -> !rows
{_LOAD_X}
    "tile.reduce"(%x, %max) {{clear = true, dim = 1 : i64, kind = "max"}} : (!tile, !rows) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %n) step (%c1, %c1) {{
      %v = memref.load %x[%i, %j] : !tile
      %m = memref.load %max[%i] : !rows
      %d = arith.subf %v, %m : f32
      %l = arith.mulf %d, %log2e : f32
      %e = math.exp2 %l fastmath<afn> : f32
      memref.store %e, %x[%i, %j] : !tile
      scf.reduce
    }}
    "tile.reduce"(%x, %sum) {{clear = true, dim = 1 : i64, kind = "sum"}} : (!tile, !rows) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %n) step (%c1, %c1) {{
      %e = memref.load %x[%i, %j] : !tile
      %s = memref.load %sum[%i] : !rows
      %y = arith.divf %e, %s : f32
      memref.store %y, %x[%i, %j] : !tile
      scf.reduce
    }}"""


def _layernorm_body(op: str, dtype: str, cols: int) -> str:
    return f"""    %inv_n = arith.constant {_float(1.0 / cols)} : f32
    %eps = arith.constant {_float(EPS[op])} : f32
    %x = "tile.alloc_fragment"() : () -> !tile
    %sq = "tile.alloc_fragment"() : () -> !tile
    %sum = "tile.alloc_fragment"() : () -> !rows
    %mean = "tile.alloc_fragment"() : () -> !rows
    %rstd = "tile.alloc_fragment"() : () -> !rows
{_LOAD_X}
    "tile.reduce"(%x, %sum) {{clear = true, dim = 1 : i64, kind = "sum"}} : (!tile, !rows) -> ()
    scf.parallel (%i) = (%c0) to (%bm) step (%c1) {{
      %s = memref.load %sum[%i] : !rows
      %mu = arith.mulf %s, %inv_n : f32
      memref.store %mu, %mean[%i] : !rows
      scf.reduce
    }}
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %n) step (%c1, %c1) {{
      %v = memref.load %x[%i, %j] : !tile
      %mu = memref.load %mean[%i] : !rows
      %d = arith.subf %v, %mu : f32
      %d2 = arith.mulf %d, %d : f32
      memref.store %d, %x[%i, %j] : !tile
      memref.store %d2, %sq[%i, %j] : !tile
      scf.reduce
    }}
    "tile.reduce"(%sq, %sum) {{clear = true, dim = 1 : i64, kind = "sum"}} : (!tile, !rows) -> ()
    scf.parallel (%i) = (%c0) to (%bm) step (%c1) {{
      %s = memref.load %sum[%i] : !rows
      %var = arith.mulf %s, %inv_n : f32
      %ve = arith.addf %var, %eps : f32
      %r = math.rsqrt %ve : f32
      memref.store %r, %rstd[%i] : !rows
      scf.reduce
    }}
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %n) step (%c1, %c1) {{
      %d = memref.load %x[%i, %j] : !tile
      %r = memref.load %rstd[%i] : !rows
      %g = memref.load %gamma[%j] : !vec
      %b = memref.load %beta[%j] : !vec
      %g32 = arith.extf %g : {dtype} to f32
      %b32 = arith.extf %b : {dtype} to f32
      %xn = arith.mulf %d, %r : f32
      %xg = arith.mulf %xn, %g32 : f32
      %y = arith.addf %xg, %b32 : f32
      memref.store %y, %x[%i, %j] : !tile
      scf.reduce
    }}"""


def _rmsnorm_body(op: str, dtype: str, cols: int) -> str:
    return f"""    %inv_n = arith.constant {_float(1.0 / cols)} : f32
    %eps = arith.constant {_float(EPS[op])} : f32
    %x = "tile.alloc_fragment"() : () -> !tile
    %sq = "tile.alloc_fragment"() : () -> !tile
    %ss = "tile.alloc_fragment"() : () -> !rows
{_LOAD_X}
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %n) step (%c1, %c1) {{
      %v = memref.load %x[%i, %j] : !tile
      %v2 = arith.mulf %v, %v : f32
      memref.store %v2, %sq[%i, %j] : !tile
      scf.reduce
    }}
    "tile.reduce"(%sq, %ss) {{clear = true, dim = 1 : i64, kind = "sum"}} : (!tile, !rows) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %n) step (%c1, %c1) {{
      %v = memref.load %x[%i, %j] : !tile
      %s = memref.load %ss[%i] : !rows
      %w = memref.load %weight[%j] : !vec
      %ms = arith.mulf %s, %inv_n : f32
      %mse = arith.addf %ms, %eps : f32
      %r = math.rsqrt %mse : f32
      %w32 = arith.extf %w : {dtype} to f32
      %xn = arith.mulf %v, %r : f32
      %y = arith.mulf %xn, %w32 : f32
      memref.store %y, %x[%i, %j] : !tile
      scf.reduce
    }}"""


# --------------------------------------------------------------------------
# --prepare (needs tilemlir and MLIR)
# --------------------------------------------------------------------------

def ptx_facts(ptx: str) -> dict:
    """What the PTX says about memory traffic: local (stack) bytes declared, and
    the global loads and stores by width (`ld.global.b16`, `ld.global.v4.b32`...)."""
    local = sum(int(size) for size in re.findall(r"\.local\s+\.align\s+\d+\s+\.b8\s+\w+\[(\d+)\]", ptx))
    accesses: dict[str, int] = {}
    for kind in re.findall(r"\b((?:ld|st)\.global(?:\.\w+)*?\.(?:v[248]\.)?[bfsu]\d+)\b", ptx):
        accesses[kind] = accesses.get(kind, 0) + 1
    return {"local_bytes": local, "global_accesses": accesses,
            "shfl": ptx.count("shfl.sync"), "bar_sync": len(re.findall(r"\bbar\.sync\b", ptx))}


def ptxas_facts(ptx_path: Path) -> dict:
    """Registers, spills and stack from `ptxas -v` where a ptxas is on the
    PATH (the driver's JIT on the device machine compiles the same PTX)."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return {}
    done = subprocess.run([ptxas, "-arch=sm_90a", "-v", "-o", "/dev/null", str(ptx_path)],
                          capture_output=True, text=True, check=False)
    text = done.stdout + done.stderr
    facts = {}
    for key, pattern in (("registers", r"Used (\d+) registers"), ("stack_bytes", r"(\d+) bytes stack frame"),
                         ("spill_store_bytes", r"(\d+) bytes spill stores"),
                         ("spill_load_bytes", r"(\d+) bytes spill loads")):
        match = re.search(pattern, text)
        if match:
            facts[key] = int(match.group(1))
    if done.returncode:
        facts["ptxas_error"] = text.strip()[-400:]
    return facts


def compile_case(out: Path, op, dtype, rows, cols, block_rows, threads) -> dict:
    from mlir import ir

    from tilemlir.backends.nvidia.toolchain import compile_to_ptx
    from tilemlir.dialects import tile
    from tilemlir.targets import get_target

    name = case_name(op, dtype, rows, cols, block_rows, threads)
    entry = {"name": name, "json": f"{name}.json", "op": op, "dtype": dtype, "rows": rows, "cols": cols,
             "block_rows": block_rows, "threads": threads}
    module = ir.Module.parse(kernel_text(op, dtype, rows, cols, block_rows, threads), tile.make_context())
    kernel = compile_to_ptx(module.operation, get_target(TARGET))
    ptx_path, _ = kernel.save(out / name)
    entry.update(ptx_facts(kernel.ptx))
    entry.update(ptxas_facts(ptx_path))
    entry["compile_seconds"] = round(sum(kernel.seconds.values()), 3)
    return entry


def prepare(out: Path, only: str | None = None, shapes: list[tuple[int, int]] = SHAPES) -> dict:
    """Compiles every case (of `shapes`, whose name matches `only`) into `out`
    and writes manifest.json there; a case the compiler refuses is listed
    under "failed" with the compiler's message. Returns the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"target": TARGET, "bench": [], "failed": []}
    for op in OPS:
        for dtype in DTYPES:
            for rows, cols in shapes:
                for block_rows, threads in candidates(cols):
                    name = case_name(op, dtype, rows, cols, block_rows, threads)
                    if not matches(name, only):
                        continue
                    try:
                        entry = compile_case(out, op, dtype, rows, cols, block_rows, threads)
                    except Exception as error:  # noqa: BLE001 - recorded, and the case is left out
                        manifest["failed"].append({"name": name, "error": f"{type(error).__name__}: {error}"})
                        print(f"FAILED {name}: {type(error).__name__}: {str(error)[:300]}")
                        continue
                    manifest["bench"].append(entry)
                    print(f"{entry['name']}: {entry['compile_seconds']} s, local {entry['local_bytes']} B, "
                          f"registers {entry.get('registers', '?')}, "
                          f"spills {entry.get('spill_store_bytes', '?')} B, {entry['global_accesses']}")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


# --------------------------------------------------------------------------
# --run (needs torch only)
# --------------------------------------------------------------------------

def torch_dtype(dtype: str):
    import torch

    return {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]


# Half an ulp relative to the value (round to nearest into the output type),
# and half the spacing of the output type's subnormals (f16 softmax outputs of
# long rows are subnormal: e^-8 / 8192 < 2^-14).
OUTPUT_ROUNDING = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8}
SUBNORMAL_HALF_SPACING = {"f16": 2.0 ** -25, "bf16": 2.0 ** -134}
F32_UNIT = 2.0 ** -24


def summation_bound(cols: int) -> float:
    """Relative error of an f32 sum of `cols` terms formed the blocked way
    (each thread adds its share serially, at most 4 * MAX_VALUES_PER_THREAD terms
    for a peer, then a tree over lanes, warps and chunks), with a few ulps for
    exp, rsqrt and the final products."""
    return (4 * MAX_VALUES_PER_THREAD + math.log2(cols) + 16) * F32_UNIT


def make_inputs(op: str, dtype: str, rows: int, cols: int, generator):
    """x: softmax U(-4, 4) (rows whose exps span e^-8), layernorm U(-0.5, 1.5)
    (a mean to take away), rmsnorm U(-1, 1); weight U(0.5, 1.5), bias U(-0.5, 0.5);
    all rounded to the dtype."""
    import torch

    def uniform(shape, low, high):
        return (torch.rand(*shape, device="cuda", generator=generator) * (high - low) + low).to(torch_dtype(dtype))

    low, high = {"softmax": (-4.0, 4.0), "layernorm": (-0.5, 1.5), "rmsnorm": (-1.0, 1.0)}[op]
    x = uniform((rows, cols), low, high)
    weights = {"softmax": [], "layernorm": [uniform((cols,), 0.5, 1.5), uniform((cols,), -0.5, 0.5)],
               "rmsnorm": [uniform((cols,), 0.5, 1.5)]}[op]
    return x, weights


def reference(op: str, x64, weights64):
    """float64 result of sampled rows and the scale its f32 arithmetic errors
    are relative to (|each term| that carries an error of summation_bound)."""
    if op == "softmax":
        e = (x64 - x64.max(dim=1, keepdim=True).values).exp()
        ref = e / e.sum(dim=1, keepdim=True)
        return ref, ref.abs()
    if op == "rmsnorm":
        (w,) = weights64
        r = (x64.pow(2).mean(dim=1, keepdim=True) + EPS[op]).rsqrt()
        ref = x64 * r * w
        return ref, ref.abs()
    gamma, beta = weights64
    mean = x64.mean(dim=1, keepdim=True)
    d = x64 - mean
    r = (d.pow(2).mean(dim=1, keepdim=True) + EPS[op]).rsqrt()
    ref = d * r * gamma + beta
    # the mean's error (relative to mean |x|) moves every d; beta is added once
    scale = (d.abs() + x64.abs().mean(dim=1, keepdim=True)) * r * gamma.abs() + beta.abs()
    return ref, scale


def tolerance(dtype: str, cols: int, ref, scale, extra_roundings: int = 0):
    """|got - ref| allowed: the output's rounding (half an ulp of |ref|), f32
    arithmetic (summation_bound x scale), half the output's subnormal spacing;
    a peer that rounds intermediates to the dtype (torch's composite ops do)
    gets `extra_roundings` more half ulps of scale."""
    rounding = OUTPUT_ROUNDING[dtype]
    return (rounding * ref.abs() + extra_roundings * rounding * scale + summation_bound(cols) * scale
            + (1 + extra_roundings) * SUBNORMAL_HALF_SPACING[dtype])


def check(op: str, dtype: str, y, x, weights, seed: int, extra_roundings: int = 0) -> dict:
    """Every element of SAMPLE_ROWS random rows of y against float64."""
    import torch

    rows, cols = x.shape
    g = torch.Generator(device="cpu").manual_seed(seed)
    sample = torch.randperm(rows, generator=g)[:SAMPLE_ROWS].to("cuda")
    ref, scale = reference(op, x[sample].to(torch.float64), [w.to(torch.float64) for w in weights])
    got = y[sample].to(torch.float64)
    tol = tolerance(dtype, cols, ref, scale, extra_roundings)
    finite = bool(torch.isfinite(got).all())
    err = (got - ref).abs()
    worst = float((err / tol).max()) if finite else math.inf
    rel = float((got - ref).norm() / ref.norm()) if finite else math.inf
    return {"ok": finite and worst <= 1.0, "worst": worst, "rel": rel}


def torch_op(op: str, cols: int):
    import torch
    import torch.nn.functional as F

    if op == "softmax":
        return lambda x, weights: torch.softmax(x, dim=-1)
    if op == "layernorm":
        return lambda x, weights: F.layer_norm(x, (cols,), weights[0], weights[1], eps=EPS[op])
    return lambda x, weights: F.rms_norm(x, (cols,), weights[0], eps=EPS[op])


class Timed:
    """One variant: a CUDA graph of `launches` calls of fn(set index), rotating
    over the input/output sets, replayed and timed with CUDA events."""

    def __init__(self, fn, launches: int, sets: int):
        import torch

        self.launches = launches
        self.samples: list[float] = []
        for i in range(sets):  # warm-up, outside the capture (module loads, workspaces)
            fn(i)
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        self.keep = []  # outputs a peer allocates inside the capture stay distinct buffers
        with torch.cuda.graph(self.graph):
            for launch in range(launches):
                self.keep.append(fn(launch % sets))
        torch.cuda.synchronize()
        for _ in range(WARMUP_REPLAYS):
            self.graph.replay()
        torch.cuda.synchronize()

    def sample(self, replays: int) -> None:
        import torch

        for _ in range(replays):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            self.graph.replay()
            end.record()
            end.synchronize()
            self.samples.append(start.elapsed_time(end) / self.launches)

    def median_ms(self) -> float:
        ordered = sorted(self.samples)
        return ordered[len(ordered) // 2]


def interleaved(variants: dict) -> dict:
    """Median per-launch milliseconds of each Timed variant, sampled in ROUNDS
    rounds that visit every variant in turn (so clock drift hits all alike)."""
    for _ in range(ROUNDS):
        for timed in variants.values():
            timed.sample(REPLAYS_PER_ROUND)
    return {name: timed.median_ms() for name, timed in variants.items()}


def measure_case(launcher, directory: Path, entries: list[dict], seed: int, say,
                 time_wrong: bool = False) -> tuple[dict, int]:
    """Checks and times every candidate of one (op, dtype, rows, cols), torch's
    op and the copy (a wrong candidate is timed only with `time_wrong`, and is
    never the best). Returns the record and the number of failed checks of ours."""
    import torch

    op, dtype, rows, cols = (entries[0][key] for key in ("op", "dtype", "rows", "cols"))
    element = ELEMENT_BYTES[dtype]
    tensor_bytes = rows * cols * element
    moved = 2 * tensor_bytes + {"softmax": 0, "layernorm": 2, "rmsnorm": 1}[op] * cols * element
    sets = max(1, math.ceil(FOOTPRINT_BYTES / (2 * tensor_bytes)))
    launches = min(MAX_LAUNCHES_PER_GRAPH, sets * max(1, math.ceil(GRAPH_BYTES / (moved * sets))))
    g = torch.Generator(device="cuda").manual_seed(1000 + seed)
    xs = [make_inputs(op, dtype, rows, cols, g)[0] for _ in range(sets)]
    _, weights = make_inputs(op, dtype, 1, cols, g)  # one weight (and bias) for all sets, as a model has
    ys = [torch.full_like(x, float("nan")) for x in xs]
    record = {"op": op, "dtype": dtype, "rows": rows, "cols": cols, "bytes": moved, "sets": sets,
              "launches_per_graph": launches, "ours": {}}
    failures = 0
    variants = {}
    for entry in entries:  # ours: checked on two input sets (fresh draws), then timed
        module = launcher.CudaModule.load(directory / entry["json"])

        def ours(i, module=module):
            module.launch(op, [xs[i], *weights, ys[i]])
        verdicts = []
        for i in sorted({0, sets - 1}):
            ys[i].fill_(float("nan"))
            ours(i)
            torch.cuda.synchronize()
            verdicts.append(check(op, dtype, ys[i], xs[i], weights, seed))
        worst = max(verdicts, key=lambda v: v["worst"])
        right = all(v["ok"] for v in verdicts)
        record["ours"][entry["name"]] = {"check": worst, "right": right, "registers": entry.get("registers")}
        if not right:
            failures += 1
            say(f"  ours {entry['name']}: WRONG (worst err/tol {worst['worst']:.3g}, "
                f"rel norm {worst['rel']:.2e})")
            if not time_wrong:
                continue
        variants[entry["name"]] = Timed(ours, launches, sets)
    peer = torch_op(op, cols)
    record["torch_check"] = check(op, dtype, peer(xs[0], weights), xs[0], weights, seed, extra_roundings=1)
    variants["torch"] = Timed(lambda i: peer(xs[i], weights), launches, sets)
    # Each case compiles afresh: torch_op's lambdas share their code objects,
    # and past dynamo's recompile limit for one (8) it runs them eagerly.
    torch._dynamo.reset()
    inductor = torch.compile(peer, dynamic=False)
    record["inductor_check"] = check(op, dtype, inductor(xs[0], weights), xs[0], weights, seed, extra_roundings=1)
    variants["inductor"] = Timed(lambda i: inductor(xs[i], weights), launches, sets)
    variants["copy"] = Timed(lambda i: ys[i].copy_(xs[i]), launches, sets)
    ms = interleaved(variants)
    for name, t in ms.items():
        gbps = (2 * tensor_bytes if name == "copy" else moved) / t / 1e6
        if name in PEERS:
            record[f"{name}_ms"], record[f"{name}_gbps"] = t, gbps
        else:
            record["ours"][name].update(ms=t, gbps=gbps)
            mine = record["ours"][name]
            say(f"  ours {name}: {gbps:.0f} GB/s ({mine['check']['worst']:.3f} of the tolerance, rel norm "
                f"{mine['check']['rel']:.1e}, {mine['registers']} registers){'' if mine['right'] else ' WRONG'}")
    timed = [name for name, mine in record["ours"].items() if "ms" in mine and mine["right"]]
    record["best"] = min(timed, key=lambda n: record["ours"][n]["ms"], default=None)
    return record, failures


# The variants of a case that are not ours.
PEERS = ("torch", "inductor", "copy")

TABLE_HEADER = ("| op | dtype | rows x cols | copy GB/s | torch GB/s | Inductor GB/s | ours GB/s | ours/torch | "
                "ours/Inductor | ours/copy | ours: rows/block x threads (ptxas registers) | ours err/tol | "
                "torch err/tol | Inductor err/tol |\n"
                "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")


def table_row(record: dict) -> str:
    name = record["best"]
    if name is None:
        ours, label, worst = math.nan, "-", math.nan
    else:
        mine = record["ours"][name]
        label = re.sub(r"^.*_r(\d+)_t(\d+)$", r"\1 x \2", name)
        if mine.get("registers"):
            label += f" ({mine['registers']} regs)"
        ours, worst = mine["gbps"], mine["check"]["worst"]
    copy, peer, inductor = record["copy_gbps"], record["torch_gbps"], record["inductor_gbps"]
    return (f"| {record['op']} | {record['dtype']} | {record['rows']}x{record['cols']} | {copy:.0f} | {peer:.0f} | "
            f"{inductor:.0f} | {ours:.0f} | {ours / peer:.2f} | {ours / inductor:.2f} | {ours / copy:.2f} | {label} | "
            f"{worst:.2f} | {record['torch_check']['worst']:.2f} | {record['inductor_check']['worst']:.2f} |")


def run(directory: Path, out: Path | None, only: str | None, time_wrong: bool = False) -> int:
    import torch

    launcher = load_launcher()
    manifest = json.loads((directory / "manifest.json").read_text())
    say = RunLog(out, "norms_log.txt")

    props = torch.cuda.get_device_properties(0)
    say(f"device: {props.name}, {props.multi_processor_count} SMs, L2 {props.L2_cache_size >> 20} MiB; "
        f"torch {torch.__version__}")
    for failed in manifest["failed"]:
        say(f"refused at --prepare: {failed['name']}: {failed['error'].splitlines()[-1][:200]}")
    cases: dict[tuple, list[dict]] = {}
    for entry in manifest["bench"]:
        cases.setdefault((entry["op"], entry["dtype"], entry["rows"], entry["cols"]), []).append(entry)
    failures, results = 0, []
    for seed, key in enumerate(sorted(cases, key=lambda c: (OPS.index(c[0]), DTYPES.index(c[1]), c[2], c[3]))):
        op, dtype, rows, cols = key
        if not matches(f"{op}_{dtype}_{rows}x{cols}", only):
            continue
        started = time.perf_counter()
        record, failed = measure_case(launcher, directory, cases[key], seed, say, time_wrong)
        failures += failed
        results.append(record)
        torch.cuda.empty_cache()
        peer, inductor = record["torch_check"], record["inductor_check"]
        say(f"{op} {dtype} {rows}x{cols}: copy {record['copy_gbps']:.0f}, torch {record['torch_gbps']:.0f} GB/s "
            f"(check: {'ok' if peer['ok'] else 'OUT OF TOLERANCE'}, {peer['worst']:.3f} of the tolerance), "
            f"Inductor {record['inductor_gbps']:.0f} GB/s (check: {'ok' if inductor['ok'] else 'OUT OF TOLERANCE'}, "
            f"{inductor['worst']:.3f}), "
            f"best ours {record['best']} ({record['sets']} sets, {record['launches_per_graph']} launches "
            f"a graph, {time.perf_counter() - started:.1f} s)")
    say("")
    say(f"GB/s = (input read + output written + weights read, once) / median time; each sample is one "
        f"CUDA-graph replay of many launches over {FOOTPRINT_BYTES >> 20}+ MiB of rotating buffers "
        f"(CUDA events), {ROUNDS} interleaved rounds x {REPLAYS_PER_ROUND} replays after warm-up; "
        "copy = Tensor.copy_ of the same rows x cols (bytes read + written); every result checked "
        f"against float64 first ({SAMPLE_ROWS} rows; err/tol = worst |err| / dtype-derived tolerance)")
    say("")
    say(TABLE_HEADER)
    for record in results:
        say(table_row(record))
    say(f"{failures} failed check(s) of ours")
    if out is not None:
        (out / "norms_results.json").write_text(json.dumps(results, indent=2) + "\n")
        say.close()
    return 1 if failures else 0


def launch_once(directory: Path, only: str) -> int:
    """For a profiler (ncu -k regex:kernel0): each prepared kernel whose name
    matches `only`, and torch's op of its case, launched once on fresh inputs and
    checked; nothing timed."""
    import torch

    launcher = load_launcher()
    manifest = json.loads((directory / "manifest.json").read_text())
    failures = 0
    for seed, entry in enumerate(e for e in manifest["bench"] if matches(e["name"], only)):
        op, dtype, rows, cols = (entry[key] for key in ("op", "dtype", "rows", "cols"))
        x, weights = make_inputs(op, dtype, rows, cols, torch.Generator(device="cuda").manual_seed(seed))
        y = torch.full_like(x, float("nan"))
        module = launcher.CudaModule.load(directory / entry["json"])
        module.launch(op, [x, *weights, y])
        torch.cuda.synchronize()
        verdict = check(op, dtype, y, x, weights, seed)
        failures += not verdict["ok"]
        peer = check(op, dtype, torch_op(op, cols)(x, weights), x, weights, seed, extra_roundings=1)
        print(f"{entry['name']}: {'ok' if verdict['ok'] else 'WRONG'} ({verdict['worst']:.3f} of the tolerance); "
              f"torch's op launched after it: {'ok' if peer['ok'] else 'out of tolerance'}", flush=True)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--prepare", metavar="DIR", help="compile PTX for every case into DIR")
    group.add_argument("--run", metavar="DIR", help="check and time the cases prepared in DIR")
    group.add_argument("--launch-once", metavar="DIR", help="launch each kernel of DIR that --only names "
                       "once, then torch's op of its case, and check both (for a profiler)")
    parser.add_argument("--out", metavar="DIR", help="with --run: write the log and JSON here")
    parser.add_argument("--only", metavar="GLOBS", help="cases whose name matches one of these "
                        "comma-separated globs (names: softmax_f16_4096x1024[_r2_t128])")
    parser.add_argument("--time-wrong", action="store_true",
                        help="with --run: time candidates that fail their check too (never reported as best)")
    options = parser.parse_args(argv)
    if options.prepare:
        start = time.perf_counter()
        manifest = prepare(Path(options.prepare), options.only)
        print(f"prepared {len(manifest['bench'])} kernels in {time.perf_counter() - start:.1f} s; "
              f"{len(manifest['failed'])} refused by the compiler")
        return 0 if manifest["bench"] else 1
    if options.launch_once:
        if not options.only:
            parser.error("--launch-once needs --only")
        return launch_once(Path(options.launch_once), options.only)
    return run(Path(options.run), Path(options.out) if options.out else None, options.only, options.time_wrong)


if __name__ == "__main__":
    sys.exit(main())
