"""GEMM on the H200: tilemlir's nvidia backend against cuBLAS and Triton, in one run.

Two steps, because the device machine has the GPU but not our MLIR wheels:

    .venv/bin/python bench/gemm.py --prepare build/nvbench     # here: PTX for every case
    python3 bench/gemm.py --run build/nvbench [--out DIR]      # there: check, time, table

(`--tests-only` on both: the correctness cases alone.)

`--prepare` compiles, for every shape in SHAPES and dtype in DTYPES, a small
candidate set of block sizes derived from the sm_90a descriptor (register and
shared-memory budgets decide which fit), plus the correctness cases of
TEST_CASES (shapes that are and are not multiples of the block, the cp.async
and the fallback copy paths). `--run` needs torch and Triton only: for every
case it draws fresh random inputs (uniform in [-1, 1], rounded to the dtype),
poisons the output with NaN, runs the kernel and checks every element of a
sample of rows against a float64 reference with a tolerance derived from the
dtypes; then it times each variant (CUDA events, warm-up, the median of
REPEATS runs), re-times the FINALISTS fastest of each path and Triton's best
interleaved with cuBLAS (ROUNDS rounds), keeps each path's best there, and
prints TFLOP/s and the ratio to cuBLAS. Ours is the best candidate of each path:
mma.sync (fed by cp.async or by TMA) and wgmma; cuBLAS is torch.matmul (f16, bf16) or torch._scaled_mm (fp8 e4m3,
unit scales, f16 out); Triton is a plain blocked tl.dot kernel. Layouts: A is
M x K row-major; B is K x N row-major for f16/bf16 and N x K row-major for fp8
(the layout cuBLAS's fp8 GEMM requires; all three use it).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench folder's shared helpers
from bench_device import RunLog, load_launcher

SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192), (16, 8192, 8192),
          (4096, 4096, 1024)]
DTYPES = ["f16", "bf16", "fp8"]
MLIR_TYPES = {"f16": "f16", "bf16": "bf16", "fp8": "f8E4M3FN"}
TARGET = "nvidia:sm_90a"
WARMUP, REPEATS = 10, 30
MAX_STAGES = 8  # candidates: 4 stages and the deepest pipeline up to this that fits
SAMPLE_ROWS = 256

# The two nvidia paths: warp-level mma.sync (ldmatrix, cp.async) and Hopper's
# warpgroup wgmma (TMA, mbarriers), chosen with tile-select-mma{prefer=wgmma}.
MMA_SYNC, WGMMA = "mma.sync", "wgmma"
# mma.sync with its operands brought in by TMA (tile-lower-to-gpu{tma-copies})
# instead of cp.async: the same instructions, another feed.
MMA_SYNC_TMA = "mma.sync+tma"
# wgmma with the kernel's own threads issuing the TMA loads too (no producer
# warpgroup: tile-lower-to-gpu{warp-specialize=false}).
WGMMA_ONE_ROLE = "wgmma-one-role"
PATH_OPTIONS = {MMA_SYNC: ("", ""), WGMMA: ("prefer=wgmma", ""),
                MMA_SYNC_TMA: ("", "tile-lower-to-gpu{tma-copies=true}"),
                WGMMA_ONE_ROLE: ("prefer=wgmma", "tile-lower-to-gpu{warp-specialize=false}")}

# (M, N, K, dtype, transpose_b, block, threads, stages, path): correctness on the GPU.
TEST_CASES = [
    (256, 256, 256, "f16", False, (128, 128, 32), 128, 3, MMA_SYNC),   # multiple of the block, cp.async
    (200, 328, 136, "f16", False, (128, 128, 32), 128, 3, MMA_SYNC),   # not a multiple, cp.async zero fill
    (200, 328, 100, "f16", False, (128, 128, 32), 128, 3, MMA_SYNC),   # K*2 bytes not 16-aligned: plain copies
    (256, 256, 256, "bf16", False, (128, 128, 32), 128, 3, MMA_SYNC),
    (136, 200, 264, "bf16", True, (64, 128, 32), 128, 2, MMA_SYNC),    # B as N x K (ldmatrix without .trans)
    (256, 256, 256, "fp8", True, (128, 128, 64), 128, 3, MMA_SYNC),
    (200, 328, 160, "fp8", True, (128, 128, 64), 128, 3, MMA_SYNC),    # not a multiple of the block
    (200, 328, 160, "fp8", False, (128, 128, 64), 128, 3, MMA_SYNC),   # B as K x N: byte-wise B loads
    # Operands in rows of whole 128-byte lines are stored as swizzled boxes
    # (nvidia/matrix.py `boxable`): cp.async writes and ldmatrix reads box_index's places.
    (16, 1024, 1024, "f16", False, (32, 64, 128), 128, 4, MMA_SYNC),   # A and B boxed, A's rows 16-31 zero
    (16, 1024, 1024, "fp8", True, (32, 64, 256), 128, 4, MMA_SYNC),    # 8-bit boxes read by ldmatrix as bytes
    (200, 328, 264, "bf16", False, (64, 128, 64), 128, 3, MMA_SYNC),   # boxes with zero fill at ragged edges
    (256, 256, 256, "f16", False, (128, 128, 64), 256, 3, WGMMA),      # B N-major (K x N) through TMA
    (200, 328, 136, "f16", False, (128, 128, 64), 256, 3, WGMMA),      # TMA zero fill past the edges
    (256, 512, 320, "f16", False, (128, 256, 64), 256, 4, WGMMA),      # m64n256, 5 K steps over 4 slots
    (136, 200, 264, "bf16", True, (64, 128, 64), 128, 2, WGMMA),       # B K-major (N x K), one warpgroup
    (256, 256, 256, "fp8", True, (128, 128, 128), 256, 3, WGMMA),      # e4m3, K-major both
    (200, 328, 160, "fp8", True, (128, 256, 128), 256, 2, WGMMA),      # not a multiple of the block
    (200, 328, 136, "f16", False, (128, 128, 32), 128, 3, WGMMA),      # a band of two m64 per warpgroup; A 64-byte swizzle
    (256, 256, 256, "bf16", True, (128, 128, 32), 128, 4, WGMMA),      # both K-major with the 64-byte swizzle
    (256, 512, 320, "f16", False, (256, 128, 64), 256, 3, WGMMA),      # two warpgroups, bands of two
    (200, 328, 160, "fp8", True, (128, 128, 64), 128, 3, WGMMA),       # fp8 rows of 64 bytes, a band of two
    (200, 328, 528, "fp8", True, (128, 128, 128), 256, 3, WGMMA),      # 5 iterations, K not a multiple of the block
    (200, 328, 136, "f16", False, (128, 128, 64), 256, 3, WGMMA_ONE_ROLE),  # thread 0 loads too
    (200, 328, 528, "fp8", True, (128, 128, 128), 256, 3, WGMMA_ONE_ROLE),
    (256, 512, 1088, "f16", False, (128, 256, 64), 256, 4, WGMMA),    # 17 iterations: every slot reused 4 times
    (1000, 1000, 1000, "bf16", False, (128, 128, 64), 128, 2, WGMMA), # 2 slots, many blocks, ragged edges
    # Persistent (more tiles than the SMs hold): workgroups loop over tiles,
    # the slots' phases carried from one tile to the next.
    (2560, 2048, 320, "f16", False, (128, 256, 64), 256, 4, WGMMA),   # 160 tiles on 132 workgroups, 5 over 4 slots
    (5000, 1000, 200, "bf16", False, (128, 128, 64), 128, 2, WGMMA),  # 320 tiles, ragged M, N and K
    (2048, 2304, 384, "fp8", True, (128, 128, 128), 256, 3, WGMMA),   # 288 tiles, 8-bit partial sums
    (256, 256, 256, "f16", False, (128, 128, 64), 128, 3, MMA_SYNC_TMA),  # ldmatrix on swizzled boxes
    (200, 328, 136, "f16", False, (128, 128, 64), 128, 3, MMA_SYNC_TMA),  # TMA zero fill
    (136, 200, 264, "bf16", True, (64, 128, 64), 128, 2, MMA_SYNC_TMA),   # B N x K, no .trans
    (128, 256, 64, "f16", False, (128, 128, 64), 128, 4, MMA_SYNC_TMA),   # one K step, 4 slots
    (256, 256, 256, "fp8", True, (128, 128, 128), 128, 3, MMA_SYNC_TMA),  # 8-bit, K-major both
]


def case_name(dtype, m, n, k, transpose_b, block, threads, stages, path=MMA_SYNC) -> str:
    layout = "nt" if transpose_b else "nn"
    suffix = {MMA_SYNC: "", WGMMA: "_wgmma", MMA_SYNC_TMA: "_tma", WGMMA_ONE_ROLE: "_wgmma1"}[path]
    return (f"{dtype}_{m}x{n}x{k}_{layout}_b{block[0]}x{block[1]}x{block[2]}_t{threads}_s{stages}"
            f"{suffix}")


# --------------------------------------------------------------------------
# --prepare (needs tilemlir and MLIR)
# --------------------------------------------------------------------------

def gemm_text(m: int, n: int, k: int, dtype: str, transpose_b: bool, c_type: str = "f16") -> str:
    t = MLIR_TYPES[dtype]
    b_shape = f"{n}x{k}" if transpose_b else f"{k}x{n}"
    types = f"(memref<{m}x{k}x{t}>, memref<{b_shape}x{t}>, memref<{m}x{n}x{c_type}>)"
    return f"""module attributes {{tile.target = "{TARGET}"}} {{
  func.func @gemm(%A: memref<{m}x{k}x{t}>, %B: memref<{b_shape}x{t}>, %C: memref<{m}x{n}x{c_type}>) {{
    %zero = arith.constant 0.0 : {c_type}
    "tile.fill"(%C, %zero) : (memref<{m}x{n}x{c_type}>, {c_type}) -> ()
    "tile.gemm"(%A, %B, %C) {{accum_dtype = f32, transpose_a = false, transpose_b = {str(transpose_b).lower()}}} : {types} -> ()
    return
  }}
}}
"""


def candidates(m: int, n: int, dtype: str) -> list[tuple]:
    """Block sizes, threads, stages and path from the descriptor: accumulators
    within the register budget, 4 stages and the deepest pipeline (at most MAX_STAGES) that fit the
    shared memory (mma.sync: rows padded by 16 bytes; wgmma: 128-byte swizzled
    rows, so 128 bytes of K per row), warp tiles of whole m16n8 instructions or
    warpgroups of m64 x block-N wgmma instructions. TMA-fed mma.sync blocks of
    128 threads also get the stages that let two blocks share an SM."""
    from tilemlir.cost.facts import model_facts
    from tilemlir.passes.gemm_configs import accumulator_register_budget
    from tilemlir.targets import get_target

    target = get_target(TARGET)
    element = 1 if dtype == "fp8" else 2
    block_k = 64 // element  # 64 bytes of K per row (tile-tiling's rule)
    budget, _ = accumulator_register_budget(model_facts(target))
    shared_limit = target.require("memory.shared_bytes_per_workgroup")
    shared_per_sm = target.require("memory.shared_bytes_per_cu")  # less 1 KiB per block for the system
    shapes = [(128, 128, 128, block_k), (128, 256, 256, block_k), (256, 128, 256, block_k),
              (128, 256, 256, 2 * block_k), (128, 128, 128, 2 * block_k)]
    if m <= 64:  # skinny: many blocks over N, deeper K tiles to stream B
        shapes = [(16, 64, 128, 2 * block_k), (32, 64, 128, 2 * block_k), (16, 128, 128, 2 * block_k)]
    found = []
    for bm, bn, threads, block_k in shapes:
        if 4 * bm * bn / (4 * threads) > budget:
            continue
        row = lambda cols: cols * element + 16
        b_tile = bn * row(block_k) if dtype == "fp8" else block_k * row(bn)  # fp8: B is N x K
        per_stage = bm * row(block_k) + b_tile
        deepest = min(MAX_STAGES, shared_limit // per_stage)
        for stages in sorted({min(4, deepest), deepest}):
            if stages >= 2:
                found.append(((bm, bn, block_k), threads, stages, MMA_SYNC))
        wide_k = 128 // element  # TMA boxes of 128-byte rows (wgmma.py)
        tma_stage = (bm + bn) * wide_k * element
        tma_stages = {min(4, (shared_limit - 1024) // tma_stage)}
        if threads <= 128:  # two blocks per SM: 2 x 128 threads x 255 registers fit 64K
            tma_stages.add(min(4, (shared_per_sm // 2 - 2048) // tma_stage))
        if m > 64 and block_k == wide_k:  # fp8 B is N x K: ldmatrix reads both
            found.extend(((bm, bn, wide_k), threads, s, MMA_SYNC_TMA) for s in sorted(tma_stages) if s >= 2)
    if m > 64:  # warpgroups of 64 rows: a skinny M would leave most of each idle
        wide_k = 128 // element
        # fp8 sums each block K in a second accumulator (wgmma.py): 128x256
        # would need 256 accumulator registers per thread.
        for bm, bn in ((128, 128),) if dtype == "fp8" else ((128, 256), (128, 128)):
            per_stage = (bm + bn) * wide_k * element
            stages = min(4, (shared_limit - 1024) // per_stage)
            if stages >= 2:
                found.append(((bm, bn, wide_k), 128 * (bm // 64), stages, WGMMA))
    return found


def compile_case(out: Path, m, n, k, dtype, transpose_b, block, threads, stages, path) -> dict:
    from mlir import ir

    from tilemlir.backends.nvidia.toolchain import compile_to_ptx
    from tilemlir.dialects import tile
    from tilemlir.targets import get_target

    name = case_name(dtype, m, n, k, transpose_b, block, threads, stages, path)
    context = tile.make_context()
    module = ir.Module.parse(gemm_text(m, n, k, dtype, transpose_b), context)
    tiling = f"block={block[0]},{block[1]},{block[2]} threads={threads} stages={stages}"
    select, passes = PATH_OPTIONS[path]
    kernel = compile_to_ptx(module.operation, get_target(TARGET), tiling, select, passes)
    kernel.save(out / name)
    ptx = kernel.ptx
    return {"name": name, "json": f"{name}.json", "m": m, "n": n, "k": k, "dtype": dtype,
            "transpose_b": transpose_b, "block": list(block), "threads": threads, "stages": stages,
            "path": path, "mma_sync": ptx.count("mma.sync"), "wgmma": ptx.count("wgmma.mma_async"),
            "ldmatrix": ptx.count("ldmatrix"), "cp_async": ptx.count("cp.async.cg"),
            "tma": ptx.count("cp.async.bulk.tensor"),
            "compile_seconds": round(sum(kernel.seconds.values()), 3)}


def prepare(out: Path, tests_only: bool = False) -> None:
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"target": TARGET, "bench": [], "tests": []}
    for m, n, k, dtype, transpose_b, block, threads, stages, path in TEST_CASES:
        entry = compile_case(out, m, n, k, dtype, transpose_b, block, threads, stages, path)
        manifest["tests"].append(entry)
        print(f"test  {entry['name']}: {entry['compile_seconds']} s")
    for dtype in DTYPES if not tests_only else []:
        for m, n, k in SHAPES:
            for block, threads, stages, path in candidates(m, n, dtype):
                entry = compile_case(out, m, n, k, dtype, dtype == "fp8", block, threads, stages, path)
                manifest["bench"].append(entry)
                print(f"bench {entry['name']}: {entry['compile_seconds']} s, "
                      f"{entry['mma_sync']} mma.sync, {entry['cp_async']} cp.async, "
                      f"{entry['wgmma']} wgmma, {entry['tma']} TMA")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------
# --run (needs torch and Triton, not MLIR)
# --------------------------------------------------------------------------

def torch_dtype(dtype: str):
    import torch

    return {"f16": torch.float16, "bf16": torch.bfloat16, "fp8": torch.float8_e4m3fn}[dtype]


def make_inputs(m, n, k, dtype, transpose_b, seed):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    a = (torch.rand(m, k, device="cuda", generator=g) * 2 - 1).to(torch_dtype(dtype))
    b_shape = (n, k) if transpose_b else (k, n)
    b = (torch.rand(*b_shape, device="cuda", generator=g) * 2 - 1).to(torch_dtype(dtype))
    return a, b


# Hopper's fp8 wgmma does not sum in f32 inside the tensor core: "limited to
# retaining around 14 bits" (DeepSeek-V3 Technical Report, arXiv:2412.19437,
# sec. 3.3.2, on H800), an accumulator of 13 mantissa bits (SageAttention2,
# arXiv:2411.10958, sec. 1, "FP22"). Seen here: up to 1.9x the f32 bound at
# K=256, and 1.09x the bound with 2^-14 at K=160. Results of fp8 wgmma (ours,
# and cuBLAS's and Triton's, which use it on sm_90) are checked with
# 2^-13 * (|A| |B|) added to the tolerance.
FP8_WGMMA_SUM_BITS = 13


def check(c, a, b, transpose_b, seed, sum_bits: int | None = None) -> tuple[bool, float, float]:
    """Every element of sampled rows against float64: |c - ref| <= half an f16
    ulp of |ref| (the output rounding) + K * 2^-22 * (|A| |B|) (f32 summation,
    with margin) [+ 2^-sum_bits * (|A| |B|) for sums the hardware keeps to
    fewer bits] + the smallest f16 subnormal. Returns (ok, worst err/tol, rel norm)."""
    import torch

    m, k = a.shape
    g = torch.Generator(device="cpu").manual_seed(seed + 1)
    rows = torch.randperm(m, generator=g)[:SAMPLE_ROWS].to("cuda")
    a64 = a[rows].to(torch.float64)
    b64 = (b.t() if transpose_b else b).to(torch.float64)
    ref = a64 @ b64
    bound = a64.abs() @ b64.abs()
    got = c[rows].to(torch.float64)
    tol = 2.0 ** -11 * ref.abs() + k * 2.0 ** -22 * bound + 2.0 ** -24
    if sum_bits is not None:
        tol = tol + 2.0 ** -sum_bits * bound
    err = (got - ref).abs()
    ok = bool(torch.isfinite(got).all()) and bool((err <= tol).all())
    worst = float((err / tol).max()) if torch.isfinite(got).all() else math.inf
    rel = float((got - ref).norm() / ref.norm())
    return ok, worst, rel


def sum_bits_of(dtype: str, entry: dict | None = None) -> int | None:
    """FP8_WGMMA_SUM_BITS for fp8 results of wgmma: ours on that path, and the
    peers' (entry None); None (f32 summation) otherwise."""
    uses_wgmma = entry is None or entry.get("path") in (WGMMA, WGMMA_ONE_ROLE)
    return FP8_WGMMA_SUM_BITS if dtype == "fp8" and uses_wgmma else None


def median_ms(fn) -> float:
    import torch

    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


ROUNDS = 6  # interleaved rounds of the final timing, REPEATS // ROUNDS runs each
FINALISTS = 2  # of each of our paths, re-timed in the final rounds


def interleaved_medians_ms(fns: dict) -> dict:
    """Median milliseconds of each variant over REPEATS timed runs, taken in
    ROUNDS rounds that visit every variant in turn (after WARMUP runs each)."""
    import torch

    for fn in fns.values():
        for _ in range(WARMUP):
            fn()
    torch.cuda.synchronize()
    times = {name: [] for name in fns}
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            for _ in range(REPEATS // ROUNDS):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                times[name].append(start.elapsed_time(end))
    return {name: sorted(t)[len(t) // 2] for name, t in times.items()}


def triton_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
        pid = tl.program_id(0)
        blocks_m, blocks_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        per_group = GROUP * blocks_n
        first_m = (pid // per_group) * GROUP
        group_m = min(blocks_m - first_m, GROUP)
        pid_m = first_m + (pid % per_group) % group_m
        pid_n = (pid % per_group) // group_m
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :] * sak
        b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kk in range(tl.cdiv(K, BK)):
            mask_k = rk < K - kk * BK
            a = tl.load(a_ptrs, mask=(rm[:, None] < M) & mask_k[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=mask_k[:, None] & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BK * sak
            b_ptrs += BK * sbk
        c_ptrs = c_ptr + rm[:, None] * scm + rn[None, :] * scn
        tl.store(c_ptrs, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))

    def run(a, b_kn, c, config):
        bm, bn, bk, warps, stages = config
        m, k = a.shape
        n = b_kn.shape[1]
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
        matmul[grid](a, b_kn, c, m, n, k, a.stride(0), a.stride(1), b_kn.stride(0), b_kn.stride(1),
                     c.stride(0), c.stride(1), BM=bm, BN=bn, BK=bk, GROUP=8,
                     num_warps=warps, num_stages=stages)

    return run


def triton_configs(m: int, dtype: str, wide: bool = False) -> list[tuple]:
    """(BM, BN, BK, warps, stages) of the Triton kernel: the two this bench
    always timed, or with `wide` eight (tune_model.py's Triton column: the peer
    tuned over at least six, as a Triton user's autotune list would be)."""
    bk = 128 if dtype == "fp8" else 64
    if m <= 64:
        few = [(16, 64, bk * 2, 4, 4), (16, 128, bk, 4, 4)]
        more = [(16, 128, bk * 2, 4, 3), (32, 64, bk * 2, 4, 4), (16, 256, bk, 4, 4), (32, 128, bk, 4, 4),
                (16, 64, bk, 4, 6), (32, 256, bk, 8, 3)]
    else:
        few = [(128, 256, bk, 8, 3), (128, 128, bk, 4, 4)]
        more = [(128, 128, bk, 8, 3), (256, 128, bk, 8, 3), (64, 128, bk, 4, 4), (128, 64, bk, 4, 4),
                (128, 256, bk, 8, 4), (64, 256, bk, 4, 3)]
    return few + more if wide else few


def run(directory: Path, out: Path | None, tests_only: bool = False) -> int:
    import torch

    launcher = load_launcher()
    manifest = json.loads((directory / "manifest.json").read_text())
    failures = 0
    say = RunLog(out, "bench_log.txt")

    props = torch.cuda.get_device_properties(0)
    say(f"device: {props.name}, {props.multi_processor_count} SMs; torch {torch.__version__}")
    # -- correctness cases
    for entry in manifest["tests"]:
        module = launcher.CudaModule.load(directory / entry["json"])
        a, b = make_inputs(entry["m"], entry["n"], entry["k"], entry["dtype"], entry["transpose_b"], 7)
        c = torch.full((entry["m"], entry["n"]), float("nan"), device="cuda", dtype=torch.float16)
        module.launch("gemm", [a, b, c])
        torch.cuda.synchronize()
        ok, worst, rel = check(c, a, b, entry["transpose_b"], 7, sum_bits_of(entry["dtype"], entry))
        failures += not ok
        say(f"test {entry['name']}: {'PASS' if ok else 'FAIL'} (worst err/tol {worst:.3f}, "
            f"rel norm err {rel:.2e})")
    if tests_only:
        say(f"{failures} failed check(s)")
        say.close()
        return 1 if failures else 0
    # -- benchmark
    triton_run = triton_kernel()
    rows = []
    results = []
    for dtype in DTYPES:
        for m, n, k in SHAPES:
            entries = [e for e in manifest["bench"]
                       if (e["m"], e["n"], e["k"], e["dtype"]) == (m, n, k, dtype)]
            transpose_b = dtype == "fp8"
            a, b = make_inputs(m, n, k, dtype, transpose_b, 11)
            flops = 2.0 * m * n * k
            c = torch.empty(m, n, device="cuda", dtype=torch.float16)
            # cuBLAS
            if dtype == "fp8":
                one = torch.ones((), device="cuda", dtype=torch.float32)

                def cublas(a=a, b=b, one=one):
                    return torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one,
                                            out_dtype=torch.float16)
            else:
                def cublas(a=a, b=b):
                    return torch.matmul(a, b)
            ok, worst, _ = check(cublas(), a, b, transpose_b, 11, sum_bits_of(dtype))
            cublas_ms = median_ms(cublas)
            record = {"dtype": dtype, "shape": [m, n, k], "cublas_ms": cublas_ms, "cublas_ok": ok}
            # ours: every candidate of each path (mma.sync: either feed), timed
            timed = {MMA_SYNC: [], WGMMA: []}
            for entry in entries:
                module = launcher.CudaModule.load(directory / entry["json"])
                c.fill_(float("nan"))
                module.launch("gemm", [a, b, c])
                torch.cuda.synchronize()
                ok, worst, rel = check(c, a, b, transpose_b, 11, sum_bits_of(dtype, entry))
                if not ok:
                    failures += 1
                    say(f"  ours {entry['name']}: WRONG (worst err/tol {worst:.3f}); not timed")
                    continue
                ms = median_ms(lambda module=module, a=a, b=b, c=c: module.launch("gemm", [a, b, c]))
                say(f"  ours {entry['name']}: {flops / ms / 1e9:.1f} TFLOP/s (checked, worst {worst:.3f})")
                record.setdefault("ours_candidates", {})[entry["name"]] = ms
                path = WGMMA if entry.get("path") == WGMMA else MMA_SYNC
                timed[path].append((ms, entry["name"]))
            # Triton
            b_kn = b.t() if transpose_b else b
            tri_best = None
            for config in triton_configs(m, dtype):
                try:
                    c.fill_(float("nan"))
                    triton_run(a, b_kn, c, config)
                    torch.cuda.synchronize()
                    ok, worst, _ = check(c, a, b, transpose_b, 11, sum_bits_of(dtype))
                    if not ok:
                        say(f"  triton {config}: WRONG (worst err/tol {worst:.3f})")
                        continue
                    ms = median_ms(lambda config=config, a=a, b_kn=b_kn, c=c: triton_run(a, b_kn, c, config))
                except Exception as error:  # noqa: BLE001 - a config Triton cannot build here
                    say(f"  triton {config}: {type(error).__name__}: {str(error)[:200]}")
                    continue
                if tri_best is None or ms < tri_best[0]:
                    tri_best = (ms, config)
            # The FINALISTS fastest of each path and Triton's best again, interleaved
            # round by round with cuBLAS, so that clock and temperature drift over
            # the run hits every variant alike; each path's result is its best there.
            finalists = {"cublas": cublas}
            for path in (MMA_SYNC, WGMMA):
                for ms, name in sorted(timed[path])[:FINALISTS]:
                    module = launcher.CudaModule.load(directory / f"{name}.json")
                    finalists[(path, name)] = (lambda module=module, a=a, b=b, c=c:
                                               module.launch("gemm", [a, b, c]))
            if tri_best is not None:
                finalists["triton"] = (lambda config=tri_best[1], a=a, b_kn=b_kn, c=c:
                                       triton_run(a, b_kn, c, config))
            final = interleaved_medians_ms(finalists)
            cublas_ms = final["cublas"]
            best = {path: min(((ms, key[1]) for key, ms in final.items()
                               if isinstance(key, tuple) and key[0] == path), default=None)
                    for path in (MMA_SYNC, WGMMA)}
            if tri_best is not None:
                tri_best = (final["triton"], tri_best[1])
            record["cublas_ms"] = cublas_ms
            record["ours"] = best
            record["triton"] = tri_best
            results.append(record)

            def tf(ms, flops=flops):
                return flops / ms / 1e9 if ms else float("nan")
            sync_tf, wg_tf = (tf(best[p][0]) if best[p] else float("nan") for p in (MMA_SYNC, WGMMA))
            tri_tf = tf(tri_best[0]) if tri_best else float("nan")
            cub_tf = tf(cublas_ms)
            rows.append((dtype, f"{m}x{n}x{k}", cub_tf, sync_tf, sync_tf / cub_tf, wg_tf,
                         wg_tf / cub_tf, tri_tf, tri_tf / cub_tf,
                         " / ".join(best[p][1] if best[p] else "-" for p in (MMA_SYNC, WGMMA))))
            say(f"{dtype} {m}x{n}x{k}: cuBLAS {cub_tf:.1f}, ours mma.sync {sync_tf:.1f}, "
                f"ours wgmma {wg_tf:.1f}, Triton {tri_tf:.1f} TFLOP/s")
    header = (f"{'dtype':5} {'M x N x K':>16} {'cuBLAS':>8} {'mma.sync':>9} {'ratio':>6} "
              f"{'wgmma':>8} {'ratio':>6} {'Triton':>8} {'ratio':>6}  best ours (mma.sync / wgmma)")
    say("")
    say(f"TFLOP/s, median of {REPEATS} timed runs after {WARMUP} warm-up runs (CUDA events), "
        f"the {FINALISTS} fastest candidates of each path, Triton's best and cuBLAS re-timed "
        f"interleaved in {ROUNDS} rounds (each path: its best there); "
        "every result checked against float64 first; ratio = to cuBLAS")
    say(header)
    for dtype, shape, cub, sync, r1, wg, r2, tri, r3, names in rows:
        say(f"{dtype:5} {shape:>16} {cub:8.1f} {sync:9.1f} {r1:6.2f} {wg:8.1f} {r2:6.2f} "
            f"{tri:8.1f} {r3:6.2f}  {names}")
    say(f"{failures} failed check(s)")
    if out is not None:
        (out / "bench_results.json").write_text(json.dumps(results, indent=2) + "\n")
        say.close()
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--prepare", metavar="DIR", help="compile PTX for every case into DIR")
    group.add_argument("--run", metavar="DIR", help="check and time the cases prepared in DIR")
    parser.add_argument("--out", metavar="DIR", help="with --run: write the log and JSON here")
    parser.add_argument("--tests-only", action="store_true",
                        help="with --prepare: compile TEST_CASES only; with --run: run the correctness cases only")
    options = parser.parse_args(argv)
    if options.prepare:
        start = time.perf_counter()
        prepare(Path(options.prepare), options.tests_only)
        print(f"prepared in {time.perf_counter() - start:.1f} s")
        return 0
    return run(Path(options.run), Path(options.out) if options.out else None, options.tests_only)


if __name__ == "__main__":
    sys.exit(main())
