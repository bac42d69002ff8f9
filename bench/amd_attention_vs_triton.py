"""FlashAttention forward compiled offline by tilemlir and by Triton for AMD chips, side by side.

    .venv/bin/python bench/amd_attention_vs_triton.py [--out build/amd_attention_vs_triton] [--ours-only]

No GPU is needed: both compilers stop at the ISA. The sibling of
bench/amd_vs_triton.py (GEMM), whose Triton venv (build/triton-venv, Triton
TRITON_VERSION, made on first use), report rows and table this script reuses.

For every case of CASES ([B, S, H, D] f16 and bf16 tensors, multi-head,
causal or not, on gfx942 and gfx950): ours is the tile-dialect kernel of
test/python/attention_cases.py (TileLang's example_mha_fwd) compiled with
`tilemlir.compile(..., target="amdgpu:CHIP", emit="isa", options={"report": True})`
for every tiling of OUR_TILINGS (block_m, block_n, threads, stages); the
compiler refuses those whose LDS does not fit, and of the rest the one with
the highest mfma_busy_ratio and no spills is shown (the others are in
results.json). The default row is the kernel a user gets with no options:
what `torch.compile(backend="tilemlir")` makes for
`scaled_dot_product_attention` of [B, H, S, D] tensors of the same sizes
(`torch_default`: codegen.attention_tilings' first tiling the compiler
accepts, exp2 on the hardware unit). Triton's is bench/attention.py's `flash_forward` (the textbook
blocked online-softmax kernel timed on the H200) compiled with
`triton.compile(..., target=GPUTarget("hip", CHIP, 64))`, once with the same
tiling as ours' shown row (BLOCK_M, BLOCK_N = block_m, block_n; num_warps =
threads / 64; num_stages = stages) and once with TRITON_OWN (a fixed
128 x 64, 4-wave, 1-stage configuration, whatever ours picked), its
arguments specialised as Triton's launcher would for 16-byte-aligned tensors.

Every number but LDS and compile time comes from
tilemlir/backends/amdgpu/report.py applied to each compiler's ISA (as in
amd_vs_triton.py): spills, VGPR+AGPR, MFMAs per main-loop iteration (per
wave; `main_loop` takes the innermost loop with the most matrix instructions:
for Triton's causal kernel that is one of its two key loops, which hold the same
MFMAs) and mfma_busy_ratio (the descriptor's MFMA cycles over llvm-mca-22's
estimate of one main-loop iteration). LDS: ours from the ISA, Triton's from
its `metadata.shared`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WAVE = 64


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


gemm_bench = _load("amd_vs_triton")  # the Triton venv, report rows and table
attention_bench = _load("attention")  # flash_forward


@dataclass(frozen=True)
class Case:
    chip: str
    dim: int
    causal: bool
    batch: int = 1
    heads: int = 32
    seq: int = 4096
    dtype: str = "f16"

    @property
    def name(self) -> str:
        kind = "causal" if self.causal else "full"
        return f"{kind}_b{self.batch}h{self.heads}s{self.seq}d{self.dim}_{self.dtype}_{self.chip}"


CASES = [Case(chip, dim, causal, dtype=dtype) for dtype in ("f16", "bf16") for chip in ("gfx942", "gfx950")
         for dim in (128, 64) for causal in (False, True)]
# (block_m, block_n, threads, stages)
OUR_TILINGS = [(64, 64, 256, 1), (64, 64, 256, 2), (128, 64, 256, 1), (128, 64, 256, 2),
               (128, 32, 256, 2), (64, 32, 256, 2), (256, 64, 512, 1), (256, 64, 512, 2),
               (128, 128, 256, 2)]  # TileLang's own MHA configuration
TRITON_OWN = (128, 64, 256, 1)
TRITON_TYPES = {"f16": "fp16", "bf16": "bf16"}


def tiling_text(tiling: tuple) -> str:
    block_m, block_n, threads, stages = tiling
    return f"{block_m}x{block_n} w{threads // WAVE} s{stages}"


# --------------------------------------------------------------------------
# Triton's side (runs in build/triton-venv)
# --------------------------------------------------------------------------

def triton_compile(case: Case, tiling: tuple) -> tuple[str, int, float]:
    """(AMDGCN ISA, LDS bytes, seconds) of flash_forward for `case` and `tiling`."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    block_m, block_n, threads, stages = tiling
    element = "*" + TRITON_TYPES[case.dtype]
    strides = [f"stride_{t}{s}" for t in "qkvo" for s in "bsh"]
    signature = {"Q": element, "K": element, "V": element, "O": element, "seq": "i32", "heads": "i32",
                 "scale_log2": "fp32", **{name: "i32" for name in strides},
                 "DIM": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "CAUSAL": "constexpr"}
    names = list(signature)
    # What the launcher specialises for aligned [B, S, H, D] tensors: pointers and
    # integers divisible by 16 (seq, heads and every stride here are).
    divisible = ["Q", "K", "V", "O", "seq", "heads", *strides]
    attrs = {(names.index(name),): [["tt.divisibility", 16]] for name in divisible}
    constants = {"DIM": case.dim, "BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": case.causal}
    source = ASTSource(attention_bench.flash_kernel(), signature, constexprs=constants, attrs=attrs)
    start = time.perf_counter()
    kernel = triton.compile(source, target=GPUTarget("hip", case.chip, WAVE),
                            options={"num_warps": threads // WAVE, "num_stages": stages})
    seconds = time.perf_counter() - start
    return kernel.asm["amdgcn"], int(kernel.metadata.shared), seconds


def triton_worker(jobs_file: Path, out: Path) -> None:
    jobs = json.loads(jobs_file.read_text())
    triton_compile(Case("gfx942", 64, False), (64, 64, 256, 1))  # one-time loading, untimed
    results = {}
    for job in jobs:
        case, tiling = Case(**job["case"]), tuple(job["tiling"])
        key = f"{case.name}_{tiling_text(tiling).replace(' ', '_')}"
        try:
            isa, lds, seconds = triton_compile(case, tiling)
        except Exception as error:  # noqa: BLE001 - any failure is a table cell
            results[key] = {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"}
            continue
        (out / f"{key}.triton.s").write_text(isa)
        results[key] = {"isa": f"{key}.triton.s", "lds_bytes": lds, "seconds": seconds}
    (out / "triton.json").write_text(json.dumps(results, indent=1))


def run_triton(jobs: list[tuple[Case, tuple]], out: Path) -> dict:
    jobs_file = out / "triton_jobs.json"
    jobs_file.write_text(json.dumps([{"case": asdict(case), "tiling": list(tiling)} for case, tiling in jobs]))
    return gemm_bench.run_triton_worker(__file__, jobs_file, out)


# --------------------------------------------------------------------------
# Our side
# --------------------------------------------------------------------------

def ours(case: Case, tiling: tuple, out: Path) -> dict:
    import tilemlir
    from tilemlir.diagnostics import UserError

    sys.path.insert(0, str(REPO / "test" / "python"))
    import attention_cases

    block_m, block_n, threads, stages = tiling
    a = attention_cases.Attention(batch=case.batch, heads=case.heads, kv_heads=case.heads, seq=case.seq,
                                  dim=case.dim, dtype=case.dtype, causal=case.causal, block_m=block_m,
                                  block_n=block_n, threads=threads, stages=stages)
    try:
        result = tilemlir.compile(attention_cases.kernel_text(a), target=f"amdgpu:{case.chip}", emit="isa",
                                  options={"report": True})
    except UserError as error:
        return {"error": str(error).strip().splitlines()[0][:300]}
    return compiled_row(result, out / f"{case.name}_{tiling_text(tiling).replace(' ', '_')}.tilemlir.s")


def compiled_row(result, isa: Path) -> dict:
    """The table row of a CompileResult with its report (its ISA written to `isa`)."""
    isa.write_text(result.artifact)
    (kernel,) = result.report["kernels"]
    entry = gemm_bench.row(result.report, kernel["shared_bytes"],
                           result.seconds["total"] - result.seconds.get("report", 0.0))
    entry["occupancy"] = kernel["occupancy"]
    return entry


def torch_default(case: Case, out: Path) -> tuple[tuple | None, dict]:
    """(tiling, row) of the kernel `torch.compile(backend="tilemlir")` makes
    for scaled_dot_product_attention of `case` ([B, H, S, D] tensors, traced
    on torch's meta device): the first of codegen.attention_tilings the
    compiler accepts (dynamo.GroupKernel.build), exp2 on the hardware unit."""
    from tilemlir.diagnostics import UserError

    kernel, specs = attention_bench.torch_backend_attention(case.batch, case.heads, case.seq, case.dim, case.dtype,
                                                            case.causal, f"amdgpu:{case.chip}")
    error = "no tiling"
    for tiling, source, _, _ in kernel.attention_candidates(specs):
        try:
            result = kernel.compiled(source, kernel.kernel_name, fast_math=True).compile("isa", report=True)
        except UserError as refused:
            error = str(refused).strip().splitlines()[0][:300]
            continue
        tiling = (tiling.block_m, tiling.block_n, tiling.threads, tiling.stages)
        return tiling, compiled_row(result, out / f"{case.name}_{tiling_text(tiling).replace(' ', '_')}.default.s")
    return None, {"error": error}


def theirs(case: Case, compiled: dict, out: Path) -> dict:
    from tilemlir.backends.amdgpu.report import build_report
    from tilemlir.targets import get_target

    if "error" in compiled:
        return compiled
    report = build_report((out / compiled["isa"]).read_text(), get_target(f"amdgpu:{case.chip}"))
    entry = gemm_bench.row(report, compiled["lds_bytes"], compiled["seconds"])
    entry["occupancy"] = report["kernels"][0]["occupancy"]
    return entry


def best_of(found: dict) -> tuple | None:
    """The tiling with the highest mfma_busy_ratio among those compiled without spills."""
    fine = [(entry["mfma_busy_ratio"] or 0.0, tiling) for tiling, entry in found.items()
            if "error" not in entry and entry["spills"] == 0]
    return max(fine)[1] if fine else None


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------

COLUMNS = ("case", "compiler", "tiling", "spills", "VGPR+AGPR", "LDS bytes", "waves/SIMD", "MFMA/iter",
           "mfma_busy_ratio", "compile s", "MFMA")


def cells(case: Case, compiler: str, tiling: tuple | None, entry: dict) -> list[str]:
    label = tiling_text(tiling) if tiling else "-"
    if "error" in entry:
        return [case.name, compiler, label, f"error: {entry['error'][:100]}"] + [""] * (len(COLUMNS) - 4)
    busy = entry["mfma_busy_ratio"]
    return [case.name, compiler, label, str(entry["spills"]), f"{entry['vgpr']}+{entry['agpr']}",
            str(entry["lds_bytes"]), str(entry.get("occupancy")), str(entry["mfma_per_iteration"]),
            "n/a" if busy is None else f"{busy:.3f}", f"{entry['compile_seconds']:.2f}", entry["mfma"]]


def print_table(rows: list[list[str]]) -> None:
    widths = [max(len(COLUMNS[i]), *(len(r[i]) for r in rows)) for i in range(len(COLUMNS))]
    print("| " + " | ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "build" / "amd_attention_vs_triton",
                        help="where the ISAs and results.json go")
    parser.add_argument("--ours-only", action="store_true",
                        help="compile and measure tilemlir's side only (no Triton venv needed)")
    args = gemm_bench.parse_or_work(parser, triton_worker)
    if args is None:
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    results, chosen, defaults = {}, {}, {}
    for case in CASES:
        found = {tiling: ours(case, tiling, args.out) for tiling in OUR_TILINGS}
        chosen[case] = best_of(found)
        results[case.name] = {"tilemlir": {tiling_text(t): e for t, e in found.items()},
                              "tilemlir_chosen": tiling_text(chosen[case]) if chosen[case] else None}
        defaults[case], entry = torch_default(case, args.out)
        results[case.name]["tilemlir default"] = {**entry, "tiling": tiling_text(defaults[case])
                                                  if defaults[case] else None}
        print(f"{case.name}: ours {tiling_text(chosen[case]) if chosen[case] else 'none compiled'}", flush=True)
    jobs = []
    for case in CASES:
        for tiling in dict.fromkeys(t for t in (chosen[case], TRITON_OWN) if t and not args.ours_only):
            jobs.append((case, tiling))
    triton_results = run_triton(jobs, args.out) if jobs else {}
    rows = []
    for case in CASES:
        tiling = chosen[case]
        mine = results[case.name]["tilemlir"][tiling_text(tiling)] if tiling else {"error": "no tiling compiled"}
        rows.append(cells(case, "tilemlir", tiling, mine))
        rows.append(cells(case, "tilemlir default", defaults[case], results[case.name]["tilemlir default"]))
        for other in dict.fromkeys(t for t in (tiling, TRITON_OWN) if t and not args.ours_only):
            key = f"{case.name}_{tiling_text(other).replace(' ', '_')}"
            entry = theirs(case, triton_results[key], args.out)
            results[case.name][f"triton {tiling_text(other)}"] = entry
            rows.append(cells(case, f"triton {gemm_bench.TRITON_VERSION}", other, entry))
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(f"FlashAttention forward, [B, S, H, D] f16 and bf16, B = 1, H = 32, S = 4096; tiling: block_m x block_n, "
          f"w = waves, s = stages; tilemlir default: torch.compile(backend='tilemlir')'s kernel for "
          f"scaled_dot_product_attention; tilemlir: the best mfma_busy_ratio without spills of {len(OUR_TILINGS)} "
          + ("tilings (ours only)" if args.ours_only else
             f"tilings; Triton {gemm_bench.TRITON_VERSION}: flash_forward with ours' tiling and with "
             f"{tiling_text(TRITON_OWN)}"))
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
