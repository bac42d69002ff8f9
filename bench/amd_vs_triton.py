"""The same GEMM compiled offline by tilemlir and by Triton for AMD chips, side by side.

    .venv/bin/python bench/amd_vs_triton.py [--out build/amd_vs_triton]
    .venv/bin/python bench/amd_vs_triton.py --defaults [--out build/amd_defaults]
    .venv/bin/python bench/amd_vs_triton.py --ours f16:gfx942:1024x1024x1024:128x128x64:4:2 ...

`--ours DTYPE:CHIP:MxNxK:BMxBNxBK:WAVES:STAGES ...` compiles only our side at
the configurations given and prints each one's busy ratio (per wave, and of
the work its block needs), spills and the model's predicted time with that
ratio: what a default would give at another configuration (no Triton).

`--defaults` compares what each compiler gives a user who names no
configuration (`--defaults --rdna`: on RDNA3's gfx1100 and RDNA4's gfx1201,
wave32 WMMA, f16/bf16/fp8 at the same sizes), on issue 28's table: {f16, bf16, fp8} x {gfx942, gfx950} x
{4096^3, 1024^3}, f16 on gfx90a, and 256^3, 16x8192x8192 and 200x96x136 (f16
on the three chips, fp8 on gfx942). Ours is tile-compile's default (no
--tiling); Triton has no default, so its row is the best by busy ratio of the
configurations `triton_configs` lists for the shape, the usual choices of
Triton's AMD matmul tutorial and autotune lists, with masked loads and
stores where the shape is not a multiple of the block. Besides the busy ratio
each row gives the model's predicted time (tilemlir.cost.model.predict with
the compiled kernel's busy ratio, for Triton's block, waves and stages too)
and, for ours, the LDS bank conflicts per iteration the report gives.

The busy ratio compared is that of the work the block needs: where the block
is smaller than its waves' instruction tiles, Triton gives each wave a
multiple of its share (its 32x32x64 blocks of 4 waves issue 8 32x32x8 MFMAs
per wave and iteration, a quarter of them needed), which raises llvm-mca's
ratio without doing more of the GEMM; `with_useful_busy` counts the C elements each wave's
main loop accumulates and divides the ratio by that replication.

No GPU is needed: both compilers stop at the ISA. Triton (TRITON_VERSION) lives in
its own throwaway venv, build/triton-venv, created with this Python and filled
with pip on first use; this script runs itself there (`--triton-worker`) to
compile Triton's kernels, since Triton and our MLIR wheels do not share a venv.

On chips with 16-byte loads into LDS and LDS transpose reads (gfx950), ours
uses both where its own rule says they pay (tile-infer-layout{transpose-reads=auto},
tile-lower-to-gpu{direct-lds-loads=auto}: infer_layout.transpose_reads_pay);
a second row shows the other choice, forced (ALTERNATIVE: "tr+dma on" or "tr+dma off").

For every case: C (f16) = A x B, sums in f32, A M x K and B K x N row-major,
M = N = K = PROBLEM. Ours is the whole-problem `tile.gemm` tiled with
`tile-tiling{block=BM,BN,BK threads=T stages=S}`; Triton's is the textbook
blocked `tl.dot` loop with BLOCK_M/N/K = BM/BN/BK, num_warps = T / 64 and
num_stages = S, its arguments specialised as Triton's launcher would for
16-byte-aligned tensors (pointers, sizes and strides divisible by 16, unit
strides constant).

Every number but two comes from the same functions of
tilemlir/backends/amdgpu/report.py applied to each compiler's ISA: spills,
VGPR+AGPR, MFMAs per main-loop iteration (`main_loop`'s heuristic) and
`mfma_busy_ratio` (the descriptor's MFMA cycles over llvm-mca-22's estimate
of one main-loop iteration). The two: LDS bytes, which for Triton are its
kernel's `metadata.shared` (Triton allocates LDS dynamically, so its ISA says
0), and compile seconds, each compiler's own wall time for one compile in a
process that has already compiled another kernel (ours: report["compile_seconds"]
less the report's own llvm-mca time; Triton's: triton.compile with an empty
cache).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRITON_VERSION = "3.9.0"
TRITON_VENV = REPO / "build" / "triton-venv"
PROBLEM = 4096
WAVE = 64  # CDNA's; RDNA's chips run wave32 (Case.wave)


@dataclass(frozen=True)
class Case:
    dtype: str  # f16, bf16, fp8 (e4m3 in the chip's encoding)
    chip: str
    block: tuple[int, int, int]
    stages: int = 2
    threads: int = 256
    shape: tuple[int, int, int] = (PROBLEM, PROBLEM, PROBLEM)  # M, N, K
    wave: int = WAVE  # lanes per wave of the chip (32 on RDNA)

    @property
    def name(self) -> str:
        bm, bn, bk = self.block
        size = "" if self.shape == (PROBLEM,) * 3 else "{}x{}x{}_".format(*self.shape)
        return f"{self.dtype}_{size}{bm}x{bn}x{bk}_{self.chip}_w{self.threads // self.wave}_s{self.stages}"

    @property
    def masked(self) -> bool:
        """Whether the shape is not a multiple of the block (Triton masks)."""
        return any(extent % block for extent, block in zip(self.shape, self.block, strict=True))


CASES = [
    Case("f16", "gfx942", (128, 128, 64)),
    Case("bf16", "gfx942", (128, 128, 64)),
    Case("fp8", "gfx942", (128, 128, 128)),
    Case("fp8", "gfx950", (128, 128, 128)),
    Case("f16", "gfx950", (256, 256, 64)),
    Case("f16", "gfx950", (256, 256, 64), threads=512),
    Case("f16", "gfx90a", (128, 128, 32)),
    # One stage on gfx942, where two of 128x128 tiles leave no room for LDS padding.
    Case("f16", "gfx942", (128, 128, 64), stages=1),
    Case("bf16", "gfx942", (128, 128, 64), stages=1),
    Case("fp8", "gfx942", (128, 128, 128), stages=1),
]

# fp8 e4m3: FNUZ on gfx942 (what its MFMAs read), OCP on gfx950 and RDNA4 (gfx1201).
MLIR_TYPES = {"f16": "f16", "bf16": "bf16", ("fp8", "gfx942"): "f8E4M3FNUZ", ("fp8", "gfx950"): "f8E4M3FN",
              ("fp8", "gfx1201"): "f8E4M3FN"}
TRITON_TYPES = {"f16": "fp16", "bf16": "bf16", ("fp8", "gfx942"): "fp8e4b8", ("fp8", "gfx950"): "fp8e4nv",
                ("fp8", "gfx1201"): "fp8e4nv"}


def _type(table: dict, case: Case) -> str:
    return table.get(case.dtype) or table[(case.dtype, case.chip)]


# --------------------------------------------------------------------------
# Triton's side (runs in build/triton-venv)
# --------------------------------------------------------------------------

try:  # only in the Triton venv
    import triton
    import triton.language as tl
except ImportError:
    triton = None

if triton is not None:

    @triton.jit
    def gemm(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, MASKED: tl.constexpr):
        rows = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        ks = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        if MASKED:  # a shape that is no multiple of the block: loads and stores masked
            for k in range(0, K, BLOCK_K):
                a = tl.load(A + rows[:, None] * stride_am + (k + ks)[None, :] * stride_ak,
                            mask=(rows[:, None] < M) & ((k + ks)[None, :] < K), other=0.0)
                b = tl.load(B + (k + ks)[:, None] * stride_bk + cols[None, :] * stride_bn,
                            mask=((k + ks)[:, None] < K) & (cols[None, :] < N), other=0.0)
                acc += tl.dot(a, b)
            tl.store(C + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc.to(tl.float16),
                     mask=(rows[:, None] < M) & (cols[None, :] < N))
        else:
            a_tile = A + rows[:, None] * stride_am + ks[None, :] * stride_ak
            b_tile = B + ks[:, None] * stride_bk + cols[None, :] * stride_bn
            for _ in range(tl.cdiv(K, BLOCK_K)):
                acc += tl.dot(tl.load(a_tile), tl.load(b_tile))
                a_tile += BLOCK_K * stride_ak
                b_tile += BLOCK_K * stride_bk
            tl.store(C + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc.to(tl.float16))


def triton_compile(case: Case) -> tuple[str, int, float]:
    """(AMDGCN ISA, LDS bytes, seconds) of Triton's kernel for `case`."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    element = "*" + _type(TRITON_TYPES, case)
    signature = {"A": element, "B": element, "C": "*fp16", "M": "i32", "N": "i32", "K": "i32",
                 "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32",
                 "stride_bn": "constexpr", "stride_cm": "i32", "stride_cn": "constexpr",
                 "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "MASKED": "constexpr"}
    names = list(signature)
    # What the launcher specialises for aligned tensors: divisible by 16, unit strides constant.
    divisible = ("A", "B", "C", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")
    attrs = {(names.index(name),): [["tt.divisibility", 16]] for name in divisible}
    bm, bn, bk = case.block
    constants = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                 "MASKED": case.masked}
    if case.masked:  # sizes as they are: only what is true of them is specialised
        m, n, k = case.shape
        divisible = [name for name, value in (("M", m), ("N", n), ("K", k), ("stride_am", k),
                                              ("stride_bk", n), ("stride_cm", n)) if value % 16 == 0]
        attrs = {(names.index(name),): [["tt.divisibility", 16]] for name in ("A", "B", "C", *divisible)}
    source = ASTSource(gemm, signature, constexprs=constants, attrs=attrs)
    start = time.perf_counter()
    kernel = triton.compile(source, target=GPUTarget("hip", case.chip, case.wave),
                            options={"num_warps": case.threads // case.wave, "num_stages": case.stages})
    seconds = time.perf_counter() - start
    return kernel.asm["amdgcn"], int(kernel.metadata.shared), seconds


def triton_worker(cases_file: Path, out: Path) -> None:
    cases = [Case(c["dtype"], c["chip"], tuple(c["block"]), c["stages"], c["threads"], tuple(c["shape"]), c["wave"])
             for c in json.loads(cases_file.read_text())]
    triton_compile(Case("f16", "gfx942", (64, 64, 32)))  # one-time loading, untimed
    results = {}
    for case in cases:
        try:
            isa, lds, seconds = triton_compile(case)
        except Exception as error:  # noqa: BLE001 - any failure is a table cell
            results[case.name] = {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"}
            continue
        (out / f"{case.name}.triton.s").write_text(isa)
        results[case.name] = {"isa": f"{case.name}.triton.s", "lds_bytes": lds, "seconds": seconds}
    (out / "triton.json").write_text(json.dumps(results, indent=1))


def ensure_triton() -> Path:
    """build/triton-venv/bin/python with Triton TRITON_VERSION, installed on first use."""
    python = TRITON_VENV / "bin" / "python"
    check = [str(python), "-c", f"import triton, sys; sys.exit(triton.__version__ != '{TRITON_VERSION}')"]
    if python.exists() and subprocess.run(check, capture_output=True, check=False).returncode == 0:
        return python
    print(f"installing triton=={TRITON_VERSION} into {TRITON_VENV} ...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(TRITON_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"triton=={TRITON_VERSION}"], check=True)
    return python


def run_triton_worker(script: str, jobs_file: Path, out: Path) -> dict:
    """Runs `script --triton-worker JOBS OUT` in the Triton venv, with an
    empty cache of its own, and returns the OUT/triton.json it writes."""
    python = ensure_triton()
    with tempfile.TemporaryDirectory(prefix="triton-cache-") as cache:
        env = {**os.environ, "TRITON_CACHE_DIR": cache, "TRITON_ALWAYS_COMPILE": "1",
               "TRITON_DEFAULT_FP_FUSION": "1"}
        subprocess.run([str(python), script, "--triton-worker", str(jobs_file), str(out)], check=True, env=env)
    return json.loads((out / "triton.json").read_text())


def parse_or_work(parser: argparse.ArgumentParser, worker) -> argparse.Namespace | None:
    """The script's arguments, with the hidden `--triton-worker JOBS OUT`
    (`run_triton_worker` runs the script so in the Triton venv): when given,
    runs `worker(JOBS, OUT)` instead and returns None."""
    parser.add_argument("--triton-worker", nargs=2, type=Path, metavar=("JOBS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.triton_worker:
        worker(*args.triton_worker)
        return None
    return args


def run_triton(cases: list[Case], out: Path) -> dict:
    cases_file = out / "cases.json"
    cases_file.write_text(json.dumps([asdict(case) for case in cases]))
    return run_triton_worker(__file__, cases_file, out)


# --------------------------------------------------------------------------
# Our side
# --------------------------------------------------------------------------


def gemm_text(case: Case) -> str:
    t, (m, n, k) = _type(MLIR_TYPES, case), case.shape
    a, b, c = f"memref<{m}x{k}x{t}>", f"memref<{k}x{n}x{t}>", f"memref<{m}x{n}xf16>"
    return f"""module {{
  func.func @gemm(%A: {a}, %B: {b}, %C: {c}) {{
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : ({c}, f16) -> ()
    "tile.gemm"(%A, %B, %C) {{accum_dtype = f32, transpose_a = false, transpose_b = false}}
        : ({a}, {b}, {c}) -> ()
    return
  }}
}}
"""


def tiling(case: Case) -> str:
    bm, bn, bk = case.block
    return f"block={bm},{bn},{bk} threads={case.threads} stages={case.stages}"


# The forced choices on gfx950: the operands reach LDS without VGPRs and stay
# as stored (B K x N is read with ds_read_b64_tr_*), as Triton's gfx950 loop
# does, or they go through VGPRs and B is stored transposed.
ALTERNATIVE = {
    True: ("tr+dma on", "tile-infer-layout{transpose-reads=true},tile-lower-to-gpu{direct-lds-loads=true}"),
    False: ("tr+dma off", "tile-infer-layout{transpose-reads=false},tile-lower-to-gpu{direct-lds-loads=false}"),
}


def direct_applies(case: Case) -> bool:
    from tilemlir.targets import get_target

    target = get_target(f"amdgpu:{case.chip}")
    return ("buffer_load_dwordx4" in target.family_facts.buffer_load_lds
            and bool(target.memory.shared_transpose_reads))


def ours(case: Case, out: Path, passes: str = "") -> dict:
    import tilemlir
    from tilemlir.diagnostics import UserError

    try:
        result = tilemlir.compile(gemm_text(case), target=f"amdgpu:{case.chip}", emit="isa",
                                  options={"report": True, "tiling": tiling(case), "passes": passes})
    except UserError as error:
        return {"error": str(error).strip().splitlines()[0][:160]}
    suffix = ".forced" if passes else ""
    (out / f"{case.name}.tilemlir{suffix}.s").write_text(result.artifact)
    seconds = result.seconds["total"] - result.seconds.get("report", 0.0)
    (kernel,) = result.report["kernels"]
    return row(result.report, kernel["shared_bytes"], seconds)


def accumulated_per_wave(isa: str) -> int | None:
    """Elements of C one wave's main loop accumulates: over the kernel's
    (largest) function, the M x N of each chain of dense matrix
    instructions, a chain starting at an instruction whose C operand no
    earlier matrix instruction of the loop wrote (a loop-carried
    accumulator, however llc renames registers along the chain); None
    without a main loop. It assumes no register move between two links of
    a chain and single-block instructions, as every kernel of the tables
    has."""
    import re

    from tilemlir.backends.amdgpu.report import function_sections, main_loop_instructions

    sections = function_sections(isa)
    if not sections:
        return None
    held, written = 0, set()
    for instruction in main_loop_instructions(max(sections.values(), key=len)):
        match = re.match(r"\s*v_(?:mfma|wmma)\w*?_(\d+)x(\d+)x\d+\w*\s+(.*)", instruction)
        if not match:
            continue
        operands = [operand.strip().split()[0] for operand in match.group(3).split(",")]
        if operands[3] not in written:
            held += int(match.group(1)) * int(match.group(2))
        written.add(operands[0])
    return held or None


def with_useful_busy(entry: dict, case: Case, isa: str) -> dict:
    """`entry` with `replication` (how many times each wave computes its share
    of the block's C: Triton gives each wave a multiple of its share where the
    block is smaller than its waves' instruction tiles, e.g. the whole of a
    32x32 block on each of 4 waves, half of a 64x32 one) and
    `useful_busy` (the busy ratio of the matrix work the block needs, the
    busy ratio over the replication: what the model's time is costed with)."""
    if "error" in entry or entry.get("mfma_busy_ratio") is None:
        return {**entry, "replication": None, "useful_busy": None}
    held = accumulated_per_wave(isa)
    bm, bn, _ = case.block
    share = bm * bn / (case.threads // case.wave)
    replication = max(1, round(held / share)) if held else 1
    return {**entry, "replication": replication, "useful_busy": round(entry["mfma_busy_ratio"] / replication, 3)}


def row(report: dict, lds_bytes: int, seconds: float) -> dict:
    """The table's row for the one kernel of a report (docs/report.md)."""
    (kernel,) = report["kernels"]
    own = kernel["amdgpu"]
    return {
        "spills": kernel["spills"],
        "vgpr": own["vgpr"],
        "agpr": own["agpr"],
        "lds_bytes": lds_bytes,
        "mfma_per_iteration": sum(c["main_loop"] for c in kernel["matrix_instructions"].values()),
        "mfma": ",".join(name.removeprefix("v_mfma_") for name in kernel["matrix_instructions"]),
        "mfma_busy_ratio": own["mfma_busy_ratio"],
        "main_loop_cycles": own["main_loop_cycles"],
        # Which of llc's schedules the isa stage kept (ours; backends/amdgpu/schedule.py).
        "schedule": (own.get("schedule") or {}).get("strategy"),
        "compile_seconds": round(seconds, 2),
    }


def theirs(case: Case, compiled: dict, out: Path) -> dict:
    from tilemlir.backends.amdgpu.report import build_report
    from tilemlir.targets import get_target

    if "error" in compiled:
        return compiled
    isa = (out / compiled["isa"]).read_text()
    report = build_report(isa, get_target(f"amdgpu:{case.chip}"))
    return with_useful_busy(row(report, compiled["lds_bytes"], compiled["seconds"]), case, isa)


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------

COLUMNS = ("case", "compiler", "spills", "VGPR+AGPR", "LDS bytes", "MFMA/iter", "mfma_busy_ratio", "compile s", "MFMA")


def cells(case: Case, compiler: str, entry: dict) -> list[str]:
    if "error" in entry:
        return [case.name, compiler, f"error: {entry['error']}"] + [""] * (len(COLUMNS) - 3)
    busy = entry["mfma_busy_ratio"]
    return [case.name, compiler, str(entry["spills"]), f"{entry['vgpr']}+{entry['agpr']}",
            str(entry["lds_bytes"]), str(entry["mfma_per_iteration"]),
            "n/a" if busy is None else f"{busy:.3f}", f"{entry['compile_seconds']:.2f}", entry["mfma"]]


def print_table(rows: list[list[str]]) -> None:
    widths = [max(len(COLUMNS[i]), *(len(r[i]) for r in rows if len(r[i]) < 60)) for i in range(len(COLUMNS))]
    print("| " + " | ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")


# --------------------------------------------------------------------------
# --defaults: what each compiler gives a user who names no configuration
# --------------------------------------------------------------------------

LARGE = ((4096, 4096, 4096), (1024, 1024, 1024))
SMALL = ((256, 256, 256), (16, 8192, 8192), (200, 96, 136))
DEFAULT_ROWS = ([(dtype, chip, shape) for chip in ("gfx942", "gfx950") for dtype in ("f16", "bf16", "fp8")
                 for shape in LARGE]
                + [("f16", "gfx90a", shape) for shape in LARGE]
                + [(dtype, chip, shape) for chip, dtype in (("gfx942", "f16"), ("gfx942", "fp8"),
                                                            ("gfx950", "f16"), ("gfx90a", "f16"))
                   for shape in SMALL])
# --rdna: f16 and bf16 on RDNA3 (gfx1100), f16 and OCP fp8 on RDNA4 (gfx1201), wave32 WMMAs.
RDNA_ROWS = ([(dtype, "gfx1100", shape) for dtype in ("f16", "bf16") for shape in LARGE]
             + [(dtype, "gfx1201", shape) for dtype in ("f16", "fp8") for shape in LARGE]
             + [("f16", chip, shape) for chip in ("gfx1100", "gfx1201") for shape in SMALL])


def wave_of(chip: str) -> int:
    from tilemlir.targets import get_target

    return get_target(f"amdgpu:{chip}").compute.wave_size


def triton_configs(dtype: str, chip: str, shape: tuple[int, int, int]) -> list[Case]:
    """Triton's candidates for a row (block, waves, stages): its AMD matmul
    tutorial's and autotune lists' usual choices, K doubled for fp8."""
    m, n, k = shape
    scale = 2 if dtype == "fp8" else 1
    if min(m, n) >= 1024:
        blocks = [((128, 128, 64), 4, 2), ((256, 128, 64), 8, 2), ((128, 256, 64), 8, 2),
                  ((256, 256, 64), 8, 2), ((128, 128, 32), 4, 2)]
    elif m <= 32:
        blocks = [((16, 128, 128), 4, 2), ((16, 64, 128), 4, 2), ((32, 64, 64), 4, 2), ((16, 256, 64), 4, 2)]
    else:
        blocks = [((64, 64, 64), 4, 2), ((32, 32, 64), 4, 2), ((64, 32, 64), 4, 2), ((32, 64, 32), 2, 2),
                  ((64, 64, 32), 4, 2)]
    cases = []
    for (bm, bn, bk), waves, stages in blocks:
        bk = min(bk * scale, 1 << (k - 1).bit_length()) if k < bk * scale else bk * scale
        wave = wave_of(chip)
        cases.append(Case(dtype, chip, (bm, bn, bk), stages, waves * wave, shape, wave))
    return cases


def predicted_us(case: Case, busy: float | None) -> float | None:
    """The model's time for `case`'s block, waves and stages with the busy
    ratio its compiled kernel measured (None where it fits no instruction)."""
    from tilemlir.cost.model import DoesNotFit, GemmShape, KernelConfig, predict
    from tilemlir.passes.gemm_configs import gemm_problem, instruction_for
    from tilemlir.targets import get_target

    target = get_target(f"amdgpu:{case.chip}")
    t = _type(MLIR_TYPES, case)
    problem = gemm_problem(GemmShape(*case.shape, t, t, "f16", "f32"), target, True)
    try:
        row, split, group = instruction_for(problem, case.block, case.threads, target)
        config = KernelConfig(case.block, case.threads, case.stages, row, split, group)
        return predict(problem, config, target, busy_ratio=busy).seconds * 1e6
    except (DoesNotFit, ValueError, TypeError):
        return None


def ours_default(dtype: str, chip: str, shape: tuple[int, int, int], out: Path) -> dict:
    import tilemlir
    from tilemlir.diagnostics import UserError

    probe = Case(dtype, chip, (0, 0, 0), shape=shape, wave=wave_of(chip))
    try:
        result = tilemlir.compile(gemm_text(probe), target=f"amdgpu:{chip}", emit="isa",
                                  options={"report": True}, remarks="none")
    except UserError as error:
        return {"error": str(error).strip().splitlines()[0][:160]}
    (decision,) = result.report["decisions"]
    block = tuple(decision["block"][axis] for axis in "mnk")
    case = Case(dtype, chip, block, decision["stages"], decision["threads"], shape, probe.wave)
    (out / f"{case.name}.default.s").write_text(result.artifact)
    (kernel,) = result.report["kernels"]
    entry = with_useful_busy(row(result.report, kernel["shared_bytes"], 0.0), case, result.artifact)
    return {**entry, "case": asdict(case), "config": case.name, "workgroups": kernel["workgroups"],
            "predicted_us": predicted_us(case, entry["useful_busy"]),
            "bank_conflicts": decision["lds_bank_conflicts_per_iteration"]}


def defaults_table(out: Path, rows: list = DEFAULT_ROWS) -> int:
    """The --defaults table (module docstring) of `rows`. A Triton configuration counts
    only where its kernel does not spill and llvm-mca found its main loop
    (else the model would cost it as if its matrix unit never waited)."""
    mine = {row_key: ours_default(*row_key, out) for row_key in rows}
    same = {row_key: Case(**{**entry["case"], "block": tuple(entry["case"]["block"]),
                             "shape": tuple(entry["case"]["shape"])})
            for row_key, entry in mine.items() if "error" not in entry}
    listed = {row_key: triton_configs(*row_key) for row_key in rows}
    wanted = {case.name: case for cases in listed.values() for case in cases} | {c.name: c for c in same.values()}
    compiled = run_triton(list(wanted.values()), out)

    def measured(case: Case) -> dict:
        entry = theirs(case, compiled[case.name], out)
        if "error" in entry:
            return {**entry, "config": case.name}
        return {**entry, "config": case.name, "predicted_us": predicted_us(case, entry["useful_busy"])}

    results, lines = {}, []
    for row_key in rows:
        theirs_all = [measured(case) for case in listed[row_key]]
        at_ours = measured(same[row_key]) if row_key in same else None
        ok = [e for e in theirs_all if "error" not in e and e["useful_busy"] is not None and e["spills"] == 0]
        best = max(ok, key=lambda e: e["useful_busy"], default=None)
        fastest = min((e for e in ok if e["predicted_us"] is not None), key=lambda e: e["predicted_us"],
                      default=None)
        dtype, chip, shape = row_key
        key = f"{dtype} {'x'.join(map(str, shape))} {chip}"
        results[key] = {"tilemlir": mine[row_key], "triton_at_ours": at_ours, "triton": theirs_all}
        lines.append(defaults_line(key, mine[row_key], at_ours, best, fastest))
    (out / "defaults.json").write_text(json.dumps(results, indent=1))
    print(f"Defaults: C (f16) = A x B, f32 sums, Triton {TRITON_VERSION}. busy: llvm-mca mfma_busy_ratio of the "
          "main loop (n/a: no loop, one K step) over the kernel's replication (`with_useful_busy`: a kernel "
          "whose every wave computes the whole block counts only its share; xN marks it, with the ratio "
          "llvm-mca gives in brackets); us: the model's time with that busy ratio. Triton at ours: "
          "Triton compiled with our default's block, waves and stages; Triton best: the highest busy ratio of "
          "triton_configs' non-spilling kernels; Triton fastest: the lowest us of them.")
    print("| case | ours: config (workgroups) | spills | bank conflicts | busy | us | Triton at ours: busy "
          "| Triton best: config | busy | Triton fastest: config | us | busy >= at ours | busy >= best "
          "| us <= fastest |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|---|---:|---|---|---|")
    for line in lines:
        print(line)
    return 0


def defaults_line(key: str, mine: dict, at_ours: dict | None, best: dict | None, fastest: dict | None) -> str:
    def number(value, digits=3):
        return "n/a" if value is None else f"{value:.{digits}f}"

    def busy(entry: dict | None) -> str:
        if not entry or "error" in entry:
            return "n/a"
        if (entry.get("replication") or 1) > 1:
            return f"{number(entry['useful_busy'])} (x{entry['replication']}: {number(entry['mfma_busy_ratio'])})"
        return number(entry.get("useful_busy"))

    def at_least(a, b, more_is_better=True):
        if a is None or b is None:
            return "n/a"
        return "yes" if (a >= b if more_is_better else a <= b) else "NO"

    def config(entry: dict | None) -> str:
        return entry["config"].replace(f"{dtype}_", "", 1).replace(f"{shape}_", "", 1) if entry else "n/a"

    if "error" in mine:
        return f"| {key} | error: {mine['error']} |" + " |" * 12
    dtype, shape = mine["case"]["dtype"], "x".join(map(str, mine["case"]["shape"]))
    useful = mine["useful_busy"]
    same_busy = at_ours.get("useful_busy") if at_ours and "error" not in at_ours else None
    best_busy = best["useful_busy"] if best else None
    fastest_us = fastest["predicted_us"] if fastest else None
    return (f"| {key} | {config(mine)} ({mine['workgroups']}) | {mine['spills']} | {mine['bank_conflicts']} "
            f"| {busy(mine)} | {number(mine['predicted_us'], 2)} | {busy(at_ours)} "
            f"| {config(best)} | {busy(best)} | {config(fastest)} | {number(fastest_us, 2)} "
            f"| {at_least(useful, same_busy)} | {at_least(useful, best_busy)} "
            f"| {at_least(mine['predicted_us'], fastest_us, more_is_better=False)} |")


def parse_config(text: str) -> Case:
    """The Case of `--ours`'s DTYPE:CHIP:MxNxK:BMxBNxBK:WAVES:STAGES."""
    from tilemlir.targets.model import TargetError

    try:
        dtype, chip, shape, block, waves, stages = text.split(":")
        shape, block = (tuple(int(x) for x in part.split("x")) for part in (shape, block))
        if len(shape) != 3 or len(block) != 3 or dtype not in ("f16", "bf16", "fp8"):
            raise ValueError
        wave = wave_of(chip)
        return Case(dtype, chip, block, int(stages), int(waves) * wave, shape, wave)
    except TargetError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not DTYPE:CHIP:MxNxK:BMxBNxBK:WAVES:STAGES "
                                         "(e.g. f16:gfx942:1024x1024x1024:128x128x64:4:2)") from None


def ours_at(cases: list[Case], out: Path) -> int:
    """`--ours`: each case compiled by us, its busy ratios, spills and predicted time."""
    for case in cases:
        entry = ours(case, out)
        if "error" in entry:
            print(f"{case.name}: {entry['error']}")
            continue
        entry = with_useful_busy(entry, case, (out / f"{case.name}.tilemlir.s").read_text())
        us = predicted_us(case, entry["useful_busy"])
        print(f"{case.name}: busy {entry['mfma_busy_ratio']}, of the work the block needs {entry['useful_busy']}, "
              f"spills {entry['spills']}, predicted {'n/a' if us is None else f'{us:.2f}'} us")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "build" / "amd_vs_triton",
                        help="where the ISAs and results.json go")
    parser.add_argument("--defaults", action="store_true",
                        help="each compiler's default on issue 28's shapes (the module docstring)")
    parser.add_argument("--rdna", action="store_true",
                        help="with --defaults: RDNA3's gfx1100 and RDNA4's gfx1201 (wave32 WMMA) instead")
    parser.add_argument("--ours", nargs="+", type=parse_config, metavar="DTYPE:CHIP:MxNxK:BMxBNxBK:WAVES:STAGES",
                        help="only our side, at these configurations (the module docstring)")
    args = parse_or_work(parser, triton_worker)
    if args is None:
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    if args.ours:
        return ours_at(args.ours, args.out)
    if args.defaults:
        return defaults_table(args.out, RDNA_ROWS if args.rdna else DEFAULT_ROWS)
    triton_results = run_triton(CASES, args.out)
    ours(Case("f16", "gfx942", (64, 64, 32)), args.out)  # one-time loading, untimed
    rows, results = [], {}
    for case in CASES:
        mine, other = ours(case, args.out), theirs(case, triton_results[case.name], args.out)
        results[case.name] = {"tilemlir": mine, "triton": other}
        rows.append(cells(case, "tilemlir", mine))
        if direct_applies(case) and "error" not in mine:
            chosen = "ds_read_b64_tr" in (args.out / f"{case.name}.tilemlir.s").read_text()
            label, passes = ALTERNATIVE[not chosen]
            forced = ours(case, args.out, passes)
            results[case.name]["tilemlir_forced"] = {"passes": passes, **forced}
            rows.append(cells(case, f"tilemlir {label}", forced))
        rows.append(cells(case, f"triton {TRITON_VERSION}", other))
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(f"C = A x B, M = N = K = {PROBLEM}, f32 sums, f16 out; block BMxBNxBK, w = waves, s = stages; "
          "tilemlir: defaults; tr+dma on/off: --pass-options " + " / ".join(
              f"'{passes}'" for _, passes in ALTERNATIVE.values()))
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
