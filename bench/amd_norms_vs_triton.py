"""Row softmax, layernorm and rmsnorm compiled offline for AMD by tilemlir and by Triton: instructions per element.

    .venv/bin/python bench/amd_norms_vs_triton.py [--out build/amd_norms_vs_triton] [--chip gfx942]

No GPU is needed: both compilers stop at the ISA. The sibling of
bench/amd_vs_triton.py (GEMM), whose Triton venv (build/triton-venv, made on
first use) this script reuses.

For every case (op in OPS, dtype in DTYPES, a ROWS x cols input for cols in
COLS), ours is bench/norms.py's kernel (`kernel_text`: examples/kernels'
row kernels with their sizes as parameters, whole rows held in register
fragments, f32 math) for every candidate of `candidates` (rows per block and
threads: norms.candidates' for the H200, and one wave of 64 lanes holding up
to 64 values of the rows, which AMD's 512 registers per lane hold), compiled
with `tilemlir.compile(..., target="amdgpu:CHIP", emit="isa")`; Triton's is the textbook one-row-per-program kernel of its
fused-softmax and layer-norm tutorials (`triton_kernels`: the row in one
block of `cols`, f32 math, the same epsilon) for every num_warps of
TRITON_WARPS. Each side shows its candidate with the fewest instructions per
element and no spills; every candidate is in results.json.

Instructions per element: the instructions of the kernel's function, a static
count, over the elements one lane owns (the workgroup's rows x columns over
its threads). At these sizes neither compiler's kernel loops (checked: a
kernel with a backward branch is marked and not counted), so a wave issues
each instruction at most once; a block a branch skips (a wave with no lane
guarded in) counts as issued. Also counted: cross-lane operations (DPP, ds_swizzle,
ds_bpermute/permute, v_permlane*, v_readlane), s_waitcnt, LDS accesses and
barriers.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WAVE = 64
OPS = ("softmax", "layernorm", "rmsnorm")
DTYPES = ("f16", "bf16")
ROWS = 4096
COLS = (1024, 4096)
TRITON_WARPS = (1, 2, 4, 8, 16)
TRITON_TYPES = {"f16": "fp16", "bf16": "bf16"}


sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench folder's scripts
import amd_vs_triton as gemm_bench
import norms as norms_bench


@dataclass(frozen=True)
class Case:
    op: str
    dtype: str
    cols: int
    chip: str = "gfx942"

    @property
    def name(self) -> str:
        return f"{self.op}_{self.dtype}_{ROWS}x{self.cols}_{self.chip}"


# --------------------------------------------------------------------------
# Counting
# --------------------------------------------------------------------------

_INSTRUCTION = re.compile(r"^\s+([a-z_][a-z0-9_]*)\b")
_LABEL = re.compile(r"^([.\w$]+):")
_BRANCH = re.compile(r"^\s+s_(?:cbranch_\w+|branch)\s+([.\w$]+)")
CROSS_LANE = re.compile(r"_dpp\b|\brow_\w+:|quad_perm:|ds_swizzle|ds_bpermute|ds_permute|v_permlane|v_readlane")
EXCHANGES = ("ds_swizzle_b32", "ds_bpermute_b32", "ds_bpermute_fi_b32", "ds_permute_b32")


def instruction_counts(isa: str) -> dict:
    """Counts over the instructions of the kernel's (largest) function
    (module docstring): total, cross-lane (DPP, swizzles, permutes, lane
    reads), s_waitcnt, LDS accesses, barriers; `loops` True where a branch
    goes back to an earlier label (then nothing is counted)."""
    from tilemlir.backends.amdgpu.report import function_sections

    sections = function_sections(isa)
    labels, total = {}, []
    for line in max(sections.values(), key=len, default="").splitlines():
        line = line.split(";", 1)[0].rstrip()
        label = _LABEL.match(line)
        if label:
            labels[label.group(1)] = len(total)
        elif _INSTRUCTION.match(line) and not line.lstrip().startswith("."):
            total.append(line)
    loops = any((m := _BRANCH.match(line)) and m.group(1) in labels and labels[m.group(1)] <= index
                for index, line in enumerate(total))
    mnemonics = [_INSTRUCTION.match(line).group(1) for line in total]
    return {
        "instructions": len(total),
        "cross_lane": sum(1 for line in total if CROSS_LANE.search(line)),
        "waits": sum(1 for m in mnemonics if m == "s_waitcnt"),
        "lds": sum(1 for m in mnemonics if m.startswith("ds_") and m not in EXCHANGES),
        "barriers": sum(1 for m in mnemonics if m == "s_barrier"),
        "loops": loops,
    }


def candidates(cols: int) -> list[tuple[int, int]]:
    """norms.candidates(cols), and a single wave holding 8 to 64 values of
    whole rows per lane (at most norms.MAX_BLOCK_ROWS rows)."""
    one_wave = [(values * WAVE // cols, WAVE) for values in (8, 16, 32, 64)
                if (values * WAVE) % cols == 0 and 1 <= values * WAVE // cols <= norms_bench.MAX_BLOCK_ROWS]
    return one_wave + norms_bench.candidates(cols)


def per_element(counts: dict, elements_per_lane: float) -> float | None:
    return None if counts["loops"] else round(counts["instructions"] / elements_per_lane, 2)


# --------------------------------------------------------------------------
# Triton's side (runs in build/triton-venv)
# --------------------------------------------------------------------------

def triton_kernels() -> dict:
    """The textbook one-row-per-program kernels, by op."""
    import triton
    import triton.language as tl

    @triton.jit
    def softmax(X, Y, stride, N: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, N)
        x = tl.load(X + row * stride + cols).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(Y + row * stride + cols, (e / tl.sum(e, axis=0)).to(Y.dtype.element_ty))

    @triton.jit
    def layernorm(X, W, B, Y, stride, N: tl.constexpr, EPS: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, N)
        x = tl.load(X + row * stride + cols).to(tl.float32)
        d = x - tl.sum(x, axis=0) / N
        rstd = 1 / tl.sqrt(tl.sum(d * d, axis=0) / N + EPS)
        w = tl.load(W + cols).to(tl.float32)
        b = tl.load(B + cols).to(tl.float32)
        tl.store(Y + row * stride + cols, (d * rstd * w + b).to(Y.dtype.element_ty))

    @triton.jit
    def rmsnorm(X, W, Y, stride, N: tl.constexpr, EPS: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, N)
        x = tl.load(X + row * stride + cols).to(tl.float32)
        rstd = 1 / tl.sqrt(tl.sum(x * x, axis=0) / N + EPS)
        w = tl.load(W + cols).to(tl.float32)
        tl.store(Y + row * stride + cols, (x * rstd * w).to(Y.dtype.element_ty))

    return {"softmax": softmax, "layernorm": layernorm, "rmsnorm": rmsnorm}


def triton_compile(kernels: dict, case: Case, warps: int) -> str:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    element = "*" + TRITON_TYPES[case.dtype]
    pointers = {"softmax": ("X", "Y"), "layernorm": ("X", "W", "B", "Y"), "rmsnorm": ("X", "W", "Y")}[case.op]
    signature = {name: element for name in pointers} | {"stride": "i32", "N": "constexpr"}
    constants = {"N": case.cols}
    if case.op != "softmax":
        signature["EPS"] = "constexpr"
        constants["EPS"] = norms_bench.EPS[case.op]
    names = list(signature)
    # What the launcher specialises for aligned tensors: pointers and the row stride divisible by 16.
    attrs = {(names.index(name),): [["tt.divisibility", 16]] for name in (*pointers, "stride")}
    source = ASTSource(kernels[case.op], signature, constexprs=constants, attrs=attrs)
    kernel = triton.compile(source, target=GPUTarget("hip", case.chip, WAVE), options={"num_warps": warps})
    return kernel.asm["amdgcn"]


def triton_worker(jobs_file: Path, out: Path) -> None:
    kernels = triton_kernels()
    results = {}
    for job in json.loads(jobs_file.read_text()):
        case, warps = Case(**job["case"]), job["warps"]
        key = f"{case.name}_w{warps}"
        try:
            isa = triton_compile(kernels, case, warps)
        except Exception as error:  # noqa: BLE001 - any failure is a table cell
            results[key] = {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"}
            continue
        (out / f"{key}.triton.s").write_text(isa)
        results[key] = {"isa": f"{key}.triton.s"}
    (out / "triton.json").write_text(json.dumps(results, indent=1))


def run_triton(cases: list[Case], out: Path) -> dict:
    jobs_file = out / "triton_jobs.json"
    jobs_file.write_text(json.dumps([{"case": asdict(case), "warps": warps}
                                     for case in cases for warps in TRITON_WARPS]))
    return gemm_bench.run_triton_worker(__file__, jobs_file, out)


def theirs(case: Case, warps: int, compiled: dict, out: Path) -> dict:
    from tilemlir.backends.amdgpu.report import build_report
    from tilemlir.targets import get_target

    if "error" in compiled:
        return {"config": f"{warps} waves", **compiled}
    isa = (out / compiled["isa"]).read_text()
    report = build_report(isa, get_target(f"amdgpu:{case.chip}"), mca=False)
    counts = instruction_counts(isa)
    return {"config": f"1 row, {warps} wave{'s' if warps > 1 else ''}",
            "spills": sum(kernel["spills"] for kernel in report["kernels"]), **counts,
            "per_element": per_element(counts, case.cols / (warps * WAVE))}


# --------------------------------------------------------------------------
# Our side
# --------------------------------------------------------------------------

def ours(case: Case, block_rows: int, threads: int, out: Path) -> dict:
    import tilemlir
    from tilemlir.diagnostics import UserError

    text = norms_bench.kernel_text(case.op, case.dtype, ROWS, case.cols, block_rows, threads).replace(
        f'tile.target = "{norms_bench.TARGET}"', f'tile.target = "amdgpu:{case.chip}"')
    waves = threads // WAVE
    config = f"{block_rows} row{'s' if block_rows > 1 else ''}, {waves} wave{'s' if waves > 1 else ''}"
    try:
        result = tilemlir.compile(text, target=f"amdgpu:{case.chip}", emit="isa", options={"report": True},
                                  remarks="none")
    except UserError as error:
        return {"config": config, "error": str(error).strip().splitlines()[0][:160]}
    (out / f"{case.name}_{block_rows}x{threads}.tilemlir.s").write_text(result.artifact)
    counts = instruction_counts(result.artifact)
    return {"config": config, "spills": sum(kernel["spills"] for kernel in result.report["kernels"]), **counts,
            "per_element": per_element(counts, block_rows * case.cols / threads)}


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------

def best(entries: list[dict]) -> dict | None:
    counted = [e for e in entries if "error" not in e and e["per_element"] is not None and e["spills"] == 0]
    return min(counted, key=lambda e: e["per_element"], default=None)


def cells(entry: dict | None) -> str:
    if entry is None:
        return "n/a | | | | "
    return (f"{entry['config']} | {entry['per_element']:.2f} | {entry['cross_lane']} | {entry['waits']} "
            f"| {entry['lds']} + {entry['barriers']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "build" / "amd_norms_vs_triton")
    parser.add_argument("--chip", default="gfx942")
    args = gemm_bench.parse_or_work(parser, triton_worker)
    if args is None:
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    cases = [Case(op, dtype, cols, args.chip) for op in OPS for dtype in DTYPES for cols in COLS]
    compiled = run_triton(cases, args.out)
    results, lines = {}, []
    for case in cases:
        mine = [ours(case, rows, threads, args.out) for rows, threads in candidates(case.cols)]
        their = [theirs(case, warps, compiled[f"{case.name}_w{warps}"], args.out) for warps in TRITON_WARPS]
        results[case.name] = {"tilemlir": mine, "triton": their}
        a, b = best(mine), best(their)
        verdict = "n/a" if a is None or b is None else ("yes" if a["per_element"] <= b["per_element"] else "NO")
        lines.append(f"| {case.op} {case.dtype} {ROWS}x{case.cols} | {cells(a)} | {cells(b)} | {verdict} |")
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(f"amdgpu:{args.chip}, Triton {gemm_bench.TRITON_VERSION}: instructions a wave issues per element of a "
          "lane (module docstring); cross-lane operations, s_waitcnt, LDS accesses + barriers per kernel.")
    print("| case | ours: config | instr/elem | cross-lane | waits | LDS + barriers | Triton: config | instr/elem "
          "| cross-lane | waits | LDS + barriers | ours <= Triton |")
    print("|---|---|---:|---:|---:|---|---|---:|---:|---:|---|---|")
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
