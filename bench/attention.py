"""FlashAttention forward on the H200: tilemlir's nvidia backend against torch SDPA
(FlashAttention-2, cuDNN) and a Triton flash-attention kernel, in one run.

Two steps, because the device machine has the GPU but not our MLIR wheels:

    .venv/bin/python bench/attention.py --prepare build/attnbench     # here: PTX for every case
    python3 bench/attention.py --run build/attnbench [--out DIR]      # there: check, time, table

`--prepare` writes, for every (batch, heads, seq, dim) in SHAPES, dtype in DTYPES
and causal in (False, True), the tile-dialect kernel of
test/python/attention_cases.py (TileLang's example_mha_fwd, [B, S, H, D]
tensors, multi-head: kv_heads = heads) for every candidate of CANDIDATES
(block_m, block_n, threads, stages, instruction), compiles it for sm_90a (the
compiler's own instruction choice, and mma.sync by `tile-select-mma{prefer=
mma.sync}`, the "_mmasync" candidates) and records what the
PTX (global access widths, mma.sync, cp.async, barriers) and, where a ptxas is
on the PATH, ptxas -v (registers, spills) say. A candidate whose PTX is
byte-identical to another's is recorded as the same kernel and not saved
twice; a candidate that spills is recorded and not timed; a candidate the
compiler refuses is listed with its message. Each case also gets the
**default**, "_default": the kernel `torch.compile(backend="tilemlir")` makes
for `scaled_dot_product_attention` of Q, K and V given as transposed views of
[B, S, H, D] tensors (`torch_backend_attention`: traced on torch's meta device;
the first of codegen.attention_tilings the compiler accepts, its own
instruction choice, exp2 on the hardware's unit), which writes O as
[B, H, S, D] or [B, S, H, D] as the backend chooses ("o_layout"), and the
same kernel at each of BACKEND_BLOCKS ("_backend_m64n128": what the default
would be with other blocks; like the default, always re-timed with the peers).

`--run` needs torch and Triton only (tilemlir/runtime/cuda_launch.py loaded by
path). For every case it draws random inputs on the GPU as attention_cases.inputs
does (Q, K uniform in [-2, 2], V in [-1, 1], rounded to the dtype), in
enough sets to rotate over more than the L2; poisons the output with NaN, runs
each variant once and checks a sample of (batch, head) pairs and rows against a
float64 reference computed with torch on the GPU, within the bound of
attention_cases.model (derived from the dtypes); then times each checked
variant (CUDA events around a few launches that rotate over the sets, after
warm-up; medians), and re-times the default and our FINALISTS fastest candidates
with every peer interleaved in ROUNDS rounds. Peers: torch SDPA restricted to its
FlashAttention-2 backend and to its cuDNN backend, each given both layouts of
the same data (transposed [B, H, S, D] views of our [B, S, H, D] tensors, and
contiguous [B, H, S, D] copies made before timing; the faster counts), and
`flash_forward` below (a textbook blocked online-softmax Triton kernel over
[B, S, H, D] tensors, a few block configurations, the fastest counts). Only
kernels are timed: no copies, no allocation of ours.

TFLOP/s = Attention.flops (4 B H S^2 D, halved for causal) / median time.
`--launch-once DIR --only NAMES` launches the named kernels of ours and the two
SDPA backends once each, checked, for a profiler (ncu -k regex:...).
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

REPO = Path(__file__).resolve().parents[1]
TARGET = "nvidia:sm_90a"
SHAPES = [(4, 32, 4096, 128), (8, 16, 2048, 64), (1, 32, 16384, 128), (16, 16, 1024, 128)]
DTYPES = ("f16", "bf16")
CAUSAL = (False, True)
# (block_m, block_n, threads, stages, instruction preference): the issue's
# candidate space, with the compiler's own choice of matrix instruction ("")
# and mma.sync (where that choice is wgmma, for the comparison).
PREFERENCES = ("", "mma.sync")
CANDIDATES = [(bm, bn, threads, stages, prefer) for bm in (64, 128) for bn in (64, 128)
              for threads in (128, 256) for stages in (2, 1) for prefer in PREFERENCES]

# Timing
WARMUP, SCREEN_SAMPLES = 2, 5  # every checked candidate
FINALISTS, ROUNDS, SAMPLES_PER_ROUND = 2, 5, 3  # ours' fastest and every peer, interleaved
SAMPLE_SECONDS_AT = (2e-3, 500e12)  # launches per sample: ~2 ms at 500 TFLOP/s
MAX_LAUNCHES_PER_SAMPLE = 16
ROTATION_BYTES = 256 << 20  # input/output sets rotated over: more than the 60 MB L2
MAX_SETS = 4
# Checking
SAMPLE_PAIRS, SAMPLE_ROWS = 2, 128

# Triton block configurations (BLOCK_M, BLOCK_N, num_warps, num_stages) by head dim.
TRITON_CONFIGS = {64: [(128, 64, 4, 3), (128, 128, 8, 3)], 128: [(128, 64, 4, 2), (128, 128, 8, 2)]}


def case_key(batch, heads, seq, dim, dtype, causal) -> str:
    return f"{'causal' if causal else 'full'}_b{batch}h{heads}s{seq}d{dim}_{dtype}"


def candidate_name(key: str, block_m, block_n, threads, stages, prefer="") -> str:
    return f"{key}_m{block_m}n{block_n}t{threads}s{stages}" + (f"_{prefer.replace('.', '')}" if prefer else "")


DEFAULT = "default"  # the torch backend's kernel, in place of a candidate tuple
# The torch backend's kernel at other blocks than its default's ("_backend_mMnN"
# candidates, ("backend", M, N)), for choosing codegen's defaults.
BACKEND_BLOCKS = [("backend", 64, 64), ("backend", 64, 128)]


def job_name(key: str, candidate) -> str:
    if candidate == DEFAULT:
        return f"{key}_{DEFAULT}"
    if candidate[0] == "backend":
        return f"{key}_backend_m{candidate[1]}n{candidate[2]}"
    return candidate_name(key, *candidate)


def matches(name: str, only: str | None) -> bool:
    return only is None or any(fnmatch.fnmatch(name, pattern) for pattern in only.split(","))


# --------------------------------------------------------------------------
# --prepare (needs tilemlir and MLIR)
# --------------------------------------------------------------------------

def attention_cases():
    sys.path.insert(0, str(REPO / "test" / "python"))
    import attention_cases as cases

    return cases


def ptx_facts(ptx: str) -> dict:
    """Global accesses by width, the matrix instructions, cp.async and barriers."""
    accesses: dict[str, int] = {}
    for kind in re.findall(r"\b((?:ld|st)\.global(?:\.\w+)*?\.(?:v[248]\.)?[bfsu]\d+)\b", ptx):
        accesses[kind] = accesses.get(kind, 0) + 1
    return {"global_accesses": accesses, "mma_sync": ptx.count("mma.sync.aligned"),
            "wgmma": ptx.count("wgmma.mma_async"), "cp_async": ptx.count("cp.async.cg"),
            "ldmatrix": ptx.count("ldmatrix.sync"), "bar_sync": len(re.findall(r"\bbar\.sync\b", ptx)),
            "ex2": ptx.count("ex2.approx")}


def ptxas_facts(ptx_path: Path) -> dict:
    """Registers, spills and stack from `ptxas -v`, where a ptxas is on the PATH
    (the driver's JIT compiles the same PTX on the device machine)."""
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


def torch_backend_attention(batch, heads, seq, dim, dtype: str, causal: bool, target: str, bshd: bool = False):
    """(group kernel, operand specs) of the attention group that
    `torch.compile(backend="tilemlir")` makes for `scaled_dot_product_attention`
    of [B, H, S, D] Q, K and V (with `bshd`, transposed views of [B, S, H, D]
    tensors), traced on torch's meta device for `target`: the kernel's
    `attention_candidates(specs)` are the tilings the backend tries, in its
    order, and `compiled(source, name, fast_math=True)` compiles one as it does."""
    import torch
    import torch.nn.functional as F
    from torch._dynamo.backends.common import aot_autograd

    from tilemlir.torch_backend import dynamo, partition
    from tilemlir.torch_backend.codegen import TensorSpec

    groups = []

    def capture(module, inputs):
        groups.extend(group for group in partition.partition(module.graph)[0] if group.kind == "attention")
        return module

    def backend(module, inputs):
        dynamo.keep_attention_whole(module, inputs)
        return aot_autograd(fw_compiler=capture, decompositions=dynamo.decompositions())(module, inputs)

    shape = (batch, seq, heads, dim) if bshd else (batch, heads, seq, dim)
    q, k, v = (torch.empty(shape, dtype=torch_dtype(dtype), device="meta") for _ in range(3))
    if bshd:
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    torch._dynamo.reset()
    torch.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                  backend=backend)(q, k, v)
    (group,) = groups
    kernel = dynamo.GroupKernel(group, "attention", target=target, engine="reference")
    return kernel, [TensorSpec.of(node.meta["val"]) for node in group.inputs]


def compile_default(entry: dict, blocks: tuple[int, int] | None = None) -> dict:
    """The default's manifest entry: `entry` (the case's fields) with the
    tiling, O's layout and the PTX (under "ptx"), or "refused"; with `blocks`
    (block_m, block_n), the backend's kernel at those blocks instead."""
    from tilemlir.diagnostics import UserError
    from tilemlir.runtime.device import compile_ptx

    kernel, specs = torch_backend_attention(*(entry[k] for k in ("batch", "heads", "seq", "dim", "dtype", "causal")),
                                            TARGET, bshd=True)
    from tilemlir.torch_backend.codegen import AttentionTiling

    refused = "no tiling"
    tilings = None if blocks is None else [AttentionTiling(*blocks)]
    for tiling, source, loaded, layouts in kernel.attention_candidates(specs, tilings):
        start = time.perf_counter()
        try:
            jit = kernel.compiled(source, kernel.kernel_name, fast_math=True)
            ptx, metadata = compile_ptx(jit.built.module.operation, jit.target, jit.options)
        except UserError as error:
            refused = str(error).strip().splitlines()[-1][:300]
            continue
        if loaded or layouts[:3] != ("bshd",) * 3:
            return {**entry, "refused": f"the default reads Q, K, V as {layouts[:3]} (offsets {loaded}), "
                                        "not the bench's [B, S, H, D] tensors"}
        (function,) = metadata["functions"]
        return {**entry, "entry": function["entry"], "block_m": tiling.block_m, "block_n": tiling.block_n,
                "threads": tiling.threads, "stages": tiling.stages, "prefer": "", "o_layout": layouts[3],
                "compile_seconds": round(time.perf_counter() - start, 2), "ptx": ptx, "metadata": metadata}
    return {**entry, "refused": refused}


def compile_one(job: tuple) -> dict:
    """One candidate: (out, shape, dtype, causal, candidate) -> its manifest entry
    (the PTX text under "ptx" for the caller to compare and save); the
    candidate DEFAULT is the torch backend's kernel (`compile_default`)."""
    _, (batch, heads, seq, dim), dtype, causal, candidate = job
    key = case_key(batch, heads, seq, dim, dtype, causal)
    if candidate == DEFAULT or candidate[0] == "backend":
        full = 4.0 * batch * heads * seq * seq * dim
        fields = {"name": job_name(key, candidate), "case": key, "batch": batch, "heads": heads, "seq": seq,
                  "dim": dim, "dtype": dtype, "causal": causal, "flops": full / 2 if causal else full}
        if candidate == DEFAULT:
            entry = compile_default({**fields, "default": True})
        else:
            entry = compile_default({**fields, "backend": True}, candidate[1:])
        if "ptx" in entry:
            entry.update(ptx_facts(entry["ptx"]))
            (launch,) = entry["metadata"]["functions"][0]["launches"]
            entry["dynamic_shared_bytes"] = launch["dynamic_shared_bytes"]
        return entry
    block_m, block_n, threads, stages, prefer = candidate
    from mlir import ir

    from tilemlir.backends.nvidia.toolchain import compile_to_ptx
    from tilemlir.diagnostics import UserError
    from tilemlir.dialects import tile
    from tilemlir.targets import get_target

    cases = attention_cases()
    a = cases.Attention(batch=batch, heads=heads, kv_heads=heads, seq=seq, dim=dim, dtype=dtype,
                        causal=causal, block_m=block_m, block_n=block_n, threads=threads, stages=stages)
    name = candidate_name(key, block_m, block_n, threads, stages, prefer)
    entry = {"name": name, "case": key, "entry": a.name, "batch": batch, "heads": heads, "seq": seq,
             "dim": dim, "dtype": dtype, "causal": causal, "block_m": block_m, "block_n": block_n,
             "threads": threads, "stages": stages, "prefer": prefer, "flops": a.flops}
    start = time.perf_counter()
    try:
        module = ir.Module.parse(cases.kernel_text(a), tile.make_context())
        kernel = compile_to_ptx(module.operation, get_target(TARGET), select=f"prefer={prefer}" if prefer else "")
    except (UserError, ir.MLIRError) as error:
        entry["refused"] = str(error).strip().splitlines()[-1][:300]
        return entry
    entry["compile_seconds"] = round(time.perf_counter() - start, 2)
    entry["ptx"] = kernel.ptx
    entry["metadata"] = kernel.metadata
    entry.update(ptx_facts(kernel.ptx))
    (launch,) = kernel.metadata["functions"][0]["launches"]
    entry["dynamic_shared_bytes"] = launch["dynamic_shared_bytes"]
    return entry


def prepare(out: Path, only: str | None = None, shapes=SHAPES, candidates=CANDIDATES + [DEFAULT] + BACKEND_BLOCKS,
            jobs: int = 2) -> dict:
    """Compiles every case and candidate (whose name matches `only`) into `out`;
    returns the manifest (also written as out/manifest.json)."""
    from concurrent.futures import ProcessPoolExecutor

    from tilemlir.backends.nvidia.toolchain import PtxKernel

    cases = attention_cases()
    out.mkdir(parents=True, exist_ok=True)
    work = [(out, shape, dtype, causal, candidate)
            for shape in shapes for dtype in DTYPES for causal in CAUSAL for candidate in candidates
            if matches(job_name(case_key(*shape, dtype, causal), candidate), only)]
    manifest = {"target": TARGET, "bench": [], "refused": [],
                # attention_cases.model's bound: unit of the dtype, f32 sums
                "bound": {"unit": cases.UNIT, "u32": cases.U32}}
    seen: dict[tuple[str, str], str] = {}  # (case, PTX) -> the first candidate with it
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        for entry in pool.map(compile_one, work):
            if "refused" in entry:
                manifest["refused"].append(entry)
                print(f"refused {entry['name']}: {entry['refused']}", flush=True)
                continue
            ptx, metadata = entry.pop("ptx"), entry.pop("metadata")
            twin = None if entry.get("default") else seen.get((entry["case"], ptx))
            if twin is not None:
                entry["identical_to"] = twin  # the same kernel: not saved, not timed again
                manifest["bench"].append(entry)
                print(f"same  {entry['name']}: PTX identical to {twin}", flush=True)
                continue
            seen[(entry["case"], ptx)] = entry["name"]
            ptx_path, _ = PtxKernel(ptx, metadata).save(out / entry["name"])
            entry["json"] = f"{entry['name']}.json"
            entry.update(ptxas_facts(ptx_path))
            if entry.get("spill_store_bytes", 0) or entry.get("stack_bytes", 0):
                entry["skip"] = (f"spills ({entry.get('spill_store_bytes', 0)} bytes of spill stores, "
                                 f"{entry.get('registers')} registers)")
            manifest["bench"].append(entry)
            facts = entry["global_accesses"]
            print(f"bench {entry['name']}: {entry['compile_seconds']} s, {entry.get('registers')} regs, "
                  f"{entry['dynamic_shared_bytes']} B shared, {entry['mma_sync']} mma.sync, "
                  f"{entry['cp_async']} cp.async, global {facts}{'  SKIP ' + entry['skip'] if 'skip' in entry else ''}",
                  flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


# --------------------------------------------------------------------------
# The Triton kernel (torch-free: bench/amd_attention_vs_triton.py compiles it
# offline for AMD in a venv that has Triton alone)
# --------------------------------------------------------------------------

_FLASH = None


def flash_kernel():
    """`flash_forward`, the Triton flash-attention forward kernel, jitted on first use.

    One program per (query block, batch x head): Q's block stays in registers;
    for each key block, S = Q K^T (tl.dot, f32), the running row max m, P =
    2^(S scale log2(e) - m), the running row sum l and O = O 2^(m_old - m) + P V
    (P rounded to the input type, as FlashAttention does); O / l at the end.
    Key blocks wholly left of the query block's diagonal (all of them when not
    causal) need no mask; the rest (the diagonal ones, and a last partial block)
    are masked in a second loop. Tensors are [B, S, H, D] with unit stride in D.
    """
    global _FLASH
    if _FLASH is not None:
        return _FLASH
    import triton
    import triton.language as tl

    @triton.jit
    def flash_forward(Q, K, V, O, seq, heads, scale_log2, stride_qb, stride_qs, stride_qh,
                      stride_kb, stride_ks, stride_kh, stride_vb, stride_vs, stride_vh,
                      stride_ob, stride_os, stride_oh,
                      DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
        block = tl.program_id(0)
        batch = tl.program_id(1) // heads
        head = tl.program_id(1) % heads
        rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
        dims = tl.arange(0, DIM)
        q_tile = Q + batch * stride_qb + head * stride_qh + rows[:, None] * stride_qs + dims[None, :]
        q = tl.load(q_tile, mask=rows[:, None] < seq, other=0.0)
        k_head = K + batch * stride_kb + head * stride_kh
        v_head = V + batch * stride_vb + head * stride_vh
        row_max = tl.full((BLOCK_M,), float("-inf"), tl.float32)
        row_sum = tl.zeros((BLOCK_M,), tl.float32)
        out = tl.zeros((BLOCK_M, DIM), tl.float32)
        if CAUSAL:
            unmasked_end = block * BLOCK_M  # BLOCK_M is a multiple of BLOCK_N
            end = tl.minimum((block + 1) * BLOCK_M, seq)
        else:
            unmasked_end = seq // BLOCK_N * BLOCK_N
            end = seq
        for first in range(0, unmasked_end, BLOCK_N):
            keys = first + tl.arange(0, BLOCK_N)
            k = tl.load(k_head + keys[:, None] * stride_ks + dims[None, :])
            scores = tl.dot(q, tl.trans(k)) * scale_log2
            new_max = tl.maximum(row_max, tl.max(scores, 1))
            p = tl.exp2(scores - new_max[:, None])
            rescale = tl.exp2(row_max - new_max)
            row_sum = row_sum * rescale + tl.sum(p, 1)
            v = tl.load(v_head + keys[:, None] * stride_vs + dims[None, :])
            out = tl.dot(p.to(v.dtype), v, out * rescale[:, None])
            row_max = new_max
        for first in range(unmasked_end, end, BLOCK_N):
            keys = first + tl.arange(0, BLOCK_N)
            inside = keys < seq
            k = tl.load(k_head + keys[:, None] * stride_ks + dims[None, :], mask=inside[:, None], other=0.0)
            keep = inside[None, :]
            if CAUSAL:
                keep = keep & (keys[None, :] <= rows[:, None])
            scores = tl.where(keep, tl.dot(q, tl.trans(k)) * scale_log2, float("-inf"))
            new_max = tl.maximum(row_max, tl.max(scores, 1))
            p = tl.exp2(scores - new_max[:, None])
            rescale = tl.exp2(row_max - new_max)
            row_sum = row_sum * rescale + tl.sum(p, 1)
            v = tl.load(v_head + keys[:, None] * stride_vs + dims[None, :], mask=inside[:, None], other=0.0)
            out = tl.dot(p.to(v.dtype), v, out * rescale[:, None])
            row_max = new_max
        out = out / row_sum[:, None]
        o_tile = O + batch * stride_ob + head * stride_oh + rows[:, None] * stride_os + dims[None, :]
        tl.store(o_tile, out.to(O.dtype.element_ty), mask=rows[:, None] < seq)

    _FLASH = flash_forward
    return _FLASH


LOG2E = 1.4426950408889634


def triton_flash(q, k, v, o, causal: bool, config: tuple) -> None:
    """Runs flash_forward on [B, S, H, D] torch tensors with `config` =
    (BLOCK_M, BLOCK_N, num_warps, num_stages)."""
    import triton

    block_m, block_n, warps, stages = config
    batch, seq, heads, dim = q.shape
    grid = (triton.cdiv(seq, block_m), batch * heads)
    flash_kernel()[grid](q, k, v, o, seq, heads, LOG2E / math.sqrt(dim),
                         q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                         v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2),
                         DIM=dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
                         num_warps=warps, num_stages=stages)


# --------------------------------------------------------------------------
# --run (needs torch and Triton, not MLIR)
# --------------------------------------------------------------------------

def torch_dtype(dtype: str):
    import torch

    return {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]


class Case:
    """One (shape, dtype, causal): input sets on the GPU, the sampled float64
    reference of each set, and checking."""

    def __init__(self, entry: dict, bound: dict, seed: int):
        import torch

        self.batch, self.heads, self.seq, self.dim = (entry[k] for k in ("batch", "heads", "seq", "dim"))
        self.dtype, self.causal, self.flops = entry["dtype"], entry["causal"], entry["flops"]
        shape = (self.batch, self.seq, self.heads, self.dim)
        tensor_bytes = math.prod(shape) * 2
        self.sets = min(MAX_SETS, max(1, math.ceil(ROTATION_BYTES / (4 * tensor_bytes))))
        g = torch.Generator(device="cuda").manual_seed(1000 + seed)
        kind = torch_dtype(self.dtype)

        def uniform(low, high):  # as attention_cases.inputs: uniform, rounded to the dtype
            return (torch.rand(shape, device="cuda", generator=g, dtype=torch.float32)
                    * (high - low) + low).to(kind)
        self.q = [uniform(-2, 2) for _ in range(self.sets)]
        self.k = [uniform(-2, 2) for _ in range(self.sets)]
        self.v = [uniform(-1, 1) for _ in range(self.sets)]
        self.o = [torch.full(shape, float("nan"), device="cuda", dtype=kind) for _ in range(self.sets)]
        self.o_bhsd = None  # made on first use (`outputs`)
        self.unit, self.u32 = bound["unit"][self.dtype], bound["u32"]
        cpu = torch.Generator().manual_seed(seed)
        pairs = {(0, 0), (self.batch - 1, self.heads - 1)}
        while len(pairs) < min(SAMPLE_PAIRS, self.batch * self.heads):
            pairs.add((int(torch.randint(self.batch, (1,), generator=cpu)),
                       int(torch.randint(self.heads, (1,), generator=cpu))))
        rows = set(torch.randperm(self.seq, generator=cpu)[:SAMPLE_ROWS - 2].tolist()) | {0, self.seq - 1}
        self.pairs = sorted(pairs)
        self.rows = torch.tensor(sorted(rows), device="cuda")
        self.references = [self.reference(i) for i in range(self.sets)]
        self.counter = 0

    def reference(self, i: int) -> list:
        """[(float64 O rows, bound)] per sampled (batch, head) of set i, the bound
        as attention_cases.model: unit |O| + (2 unit + (D + S + 16) u32) max|V| + 2^-24."""
        import torch

        spread = float(self.v[i].abs().max())
        found = []
        for b, h in self.pairs:
            q = self.q[i][b, :, h, :].index_select(0, self.rows).to(torch.float64)
            k = self.k[i][b, :, h, :].to(torch.float64)
            v = self.v[i][b, :, h, :].to(torch.float64)
            scores = q @ k.T / math.sqrt(self.dim)
            if self.causal:
                future = torch.arange(self.seq, device="cuda")[None, :] > self.rows[:, None]
                scores = scores.masked_fill(future, float("-inf"))
            p = torch.softmax(scores, dim=-1)
            out = p @ v
            bound = self.unit * out.abs() + (2 * self.unit + (self.dim + self.seq + 16) * self.u32) * spread + 2.0 ** -24
            found.append((out, bound))
        return found

    def outputs(self, layout: str) -> list:
        """The output tensor of each set in `layout`: "bshd" ([B, S, H, D],
        `o`) or "bhsd" ([B, H, S, D])."""
        import torch

        if layout == "bshd":
            return self.o
        if layout != "bhsd":
            raise ValueError(f"output layout {layout!r}")
        if self.o_bhsd is None:
            self.o_bhsd = [torch.empty_like(o.transpose(1, 2).contiguous()) for o in self.o]
        return self.o_bhsd

    def check(self, o_bshd, i: int) -> dict:
        """o_bshd: an output of set i as [B, S, H, D] (a view is fine)."""
        import torch

        worst, ok, num, den = 0.0, True, 0.0, 0.0
        for (b, h), (want, bound) in zip(self.pairs, self.references[i]):
            got = o_bshd[b, :, h, :].index_select(0, self.rows).to(torch.float64)
            if not bool(torch.isfinite(got).all()):
                return {"ok": False, "worst": math.inf, "rel": math.inf}
            error = (got - want).abs()
            ok &= bool((error <= bound).all())
            worst = max(worst, float((error / bound).max()))
            num += float(((got - want) ** 2).sum())
            den += float((want ** 2).sum())
        return {"ok": ok, "worst": worst, "rel": math.sqrt(num / den)}

    def launches_per_sample(self) -> int:
        seconds, rate = SAMPLE_SECONDS_AT
        return max(1, min(MAX_LAUNCHES_PER_SAMPLE, math.ceil(seconds * rate / self.flops)))

    def next_set(self) -> int:
        self.counter += 1
        return self.counter % self.sets


def sample_ms(case: Case, fn, samples: int, per_sample: int) -> list[float]:
    """`samples` times: per_sample launches of fn(set) between two CUDA events,
    rotating over the sets; milliseconds per launch."""
    import torch

    times = []
    for _ in range(samples):
        sets = [case.next_set() for _ in range(per_sample)]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in sets:
            fn(i)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / per_sample)
    return times


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def sdpa_variants(case: Case) -> dict:
    """name -> (fn(set) -> output as [B, S, H, D], description): SDPA's
    FlashAttention-2 and cuDNN backends on transposed views of our tensors and
    on contiguous [B, H, S, D] copies (made here, before any timing)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    views = [tuple(t[i].transpose(1, 2) for t in (case.q, case.k, case.v)) for i in range(case.sets)]
    contiguous = [tuple(t.contiguous() for t in triple) for triple in views]
    variants = {}
    for backend, label in ((SDPBackend.FLASH_ATTENTION, "fa2"), (SDPBackend.CUDNN_ATTENTION, "cudnn")):
        for layout, inputs in (("bhsd-view", views), ("bhsd-contiguous", contiguous)):
            def fn(i, backend=backend, inputs=inputs):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(*inputs[i], is_causal=case.causal).transpose(1, 2)
            variants[(label, layout)] = fn
    return variants


def measure_case(launcher, directory: Path, entries: list[dict], bound: dict, seed: int, say) -> tuple[dict, int]:
    import torch

    case = Case(entries[0], bound, seed)
    per_sample = case.launches_per_sample()
    record = {"case": entries[0]["case"], "batch": case.batch, "heads": case.heads, "seq": case.seq,
              "dim": case.dim, "dtype": case.dtype, "causal": case.causal, "flops": case.flops,
              "sets": case.sets, "launches_per_sample": per_sample, "ours": {}, "peers": {}}
    failures = 0
    screened = []  # (ms, name, fn)
    for entry in entries:
        name = entry["name"]
        if "identical_to" in entry or "skip" in entry:
            record["ours"][name] = {"not_timed": entry.get("skip") or f"identical to {entry['identical_to']}"}
            continue
        module = launcher.CudaModule.load(directory / entry["json"])
        outputs = case.outputs(entry.get("o_layout", "bshd"))

        def ours(i, module=module, function=entry["entry"], outputs=outputs):
            module.launch(function, [case.q[i], case.k[i], case.v[i], outputs[i]])
            return outputs[i] if outputs is case.o else outputs[i].transpose(1, 2)
        verdicts = []
        for i in sorted({0, case.sets - 1}):
            outputs[i].fill_(float("nan"))
            got = ours(i)
            torch.cuda.synchronize()
            verdicts.append(case.check(got, i))
        verdict = max(verdicts, key=lambda v: v["worst"])
        verdict["ok"] = all(v["ok"] for v in verdicts)
        mine = record["ours"][name] = {"check": verdict, "registers": entry.get("registers")}
        if entry.get("default"):
            record["default"] = name
        if not verdict["ok"]:
            failures += 1
            say(f"  ours {name}: WRONG (worst err/bound {verdict['worst']:.3g}, rel {verdict['rel']:.2e}); not timed")
            continue
        sample_ms(case, ours, WARMUP, per_sample)
        ms = median(sample_ms(case, ours, SCREEN_SAMPLES, per_sample))
        mine["screen_ms"] = ms
        screened.append((ms, name, ours))
        say(f"  ours {name}: {case.flops / ms / 1e9:.1f} TFLOP/s (screen; err/bound {verdict['worst']:.3f}, "
            f"{entry.get('registers')} regs)")
    peers = {}
    for key, fn in sdpa_variants(case).items():
        label = f"{key[0]} {key[1]}"
        try:
            verdict = case.check(fn(0), 0)
            torch.cuda.synchronize()
        except Exception as error:  # noqa: BLE001 - a backend that refuses this case is a table cell
            record["peers"][label] = {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"}
            say(f"  {label}: {record['peers'][label]['error']}")
            continue
        record["peers"][label] = {"check": verdict}
        peers[label] = fn
    triton_best = None
    for config in TRITON_CONFIGS[case.dim]:
        label = f"triton m{config[0]}n{config[1]}w{config[2]}s{config[3]}"

        def tri(i, config=config):
            triton_flash(case.q[i], case.k[i], case.v[i], case.o[i], case.causal, config)
            return case.o[i]
        try:
            case.o[0].fill_(float("nan"))
            tri(0)
            torch.cuda.synchronize()
            verdict = case.check(case.o[0], 0)
            sample_ms(case, tri, WARMUP, per_sample)
            ms = median(sample_ms(case, tri, SCREEN_SAMPLES, per_sample))
        except Exception as error:  # noqa: BLE001 - a config Triton cannot build here
            record["peers"][label] = {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"}
            say(f"  {label}: {record['peers'][label]['error']}")
            continue
        record["peers"][label] = {"check": verdict, "screen_ms": ms}
        say(f"  {label}: {case.flops / ms / 1e9:.1f} TFLOP/s (screen; err/bound {verdict['worst']:.3f})")
        if triton_best is None or ms < triton_best[0]:
            triton_best = (ms, label, tri)
    if triton_best is not None:
        peers[triton_best[1]] = triton_best[2]
    # Final: the default, our fastest and every peer, interleaved round by round.
    ranked = sorted(screened, key=lambda s: s[0])
    finalists = {name: fn for _, name, fn in ranked[:FINALISTS]}
    finalists.update({name: fn for _, name, fn in ranked
                      if name == record.get("default") or "_backend_" in name})
    finalists.update(peers)
    for fn in finalists.values():
        sample_ms(case, fn, WARMUP, per_sample)
    times: dict[str, list[float]] = {name: [] for name in finalists}
    for _ in range(ROUNDS):
        for name, fn in finalists.items():
            times[name] += sample_ms(case, fn, SAMPLES_PER_ROUND, per_sample)
    for name, samples in times.items():
        slot = record["ours"][name] if name in record["ours"] else record["peers"][name]
        slot["ms"] = median(samples)
        slot["spread"] = (min(samples), max(samples))
    timed = {n: m for n, m in record["ours"].items() if "ms" in m}
    record["best"] = min(timed, key=lambda n: timed[n]["ms"], default=None)
    for label in ("fa2", "cudnn"):
        options = {n: p for n, p in record["peers"].items() if n.startswith(label + " ") and "ms" in p}
        record[label] = min(options, key=lambda n: options[n]["ms"], default=None)
    record["triton"] = triton_best[1] if triton_best else None
    torch.cuda.synchronize()
    return record, failures


def tflops(record: dict, slot: dict | None) -> float:
    if not slot or "ms" not in slot:
        return math.nan
    return record["flops"] / slot["ms"] / 1e9


TABLE_HEADER = ("| B | H | S | D | dtype | causal | default | best | FA2 | cuDNN | Triton | default/FA2 | "
                "default/Triton | best/FA2 | best/Triton | best/cuDNN | default; best: block_m x block_n, threads, "
                "stages, instruction (regs) | err/bound default, best, FA2, cuDNN, Triton |\n"
                "|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")


def config_label(name: str | None, manifest_entries: dict) -> str:
    """block_m x block_n, threads, stages (with those of byte-identical
    candidates), instruction and registers of our kernel `name`."""
    if not name:
        return "-"
    e = manifest_entries[name]
    twins = [n for n, m in manifest_entries.items() if m.get("identical_to") == name]
    stages = "/".join(sorted({str(e["stages"])} | {str(manifest_entries[t]["stages"]) for t in twins}))
    instruction = "wgmma" if e.get("wgmma") else "mma.sync"
    return f"{e['block_m']}x{e['block_n']}, {e['threads']}, s{stages}, {instruction} ({e.get('registers')})"


def table_row(record: dict, manifest_entries: dict) -> str:
    def slot(names: dict, key: str):
        return names.get(record.get(key)) if record.get(key) else None
    default, best = slot(record["ours"], "default"), slot(record["ours"], "best")
    fa2, cudnn, tri = (slot(record["peers"], key) for key in ("fa2", "cudnn", "triton"))
    t_default, t_best, t_fa2, t_cudnn, t_tri = (tflops(record, s) for s in (default, best, fa2, cudnn, tri))

    def err(slot):
        return f"{slot['check']['worst']:.2f}" if slot and "check" in slot else "-"
    labels = f"{config_label(record.get('default'), manifest_entries)}; {config_label(record['best'], manifest_entries)}"
    return (f"| {record['batch']} | {record['heads']} | {record['seq']} | {record['dim']} | {record['dtype']} | "
            f"{'yes' if record['causal'] else 'no'} | {t_default:.1f} | {t_best:.1f} | {t_fa2:.1f} | {t_cudnn:.1f} | "
            f"{t_tri:.1f} | {t_default / t_fa2:.2f} | {t_default / t_tri:.2f} | {t_best / t_fa2:.2f} | "
            f"{t_best / t_tri:.2f} | {t_best / t_cudnn:.2f} | {labels} | "
            f"{err(default)}, {err(best)}, {err(fa2)}, {err(cudnn)}, {err(tri)} |")


def run(directory: Path, out: Path | None, only: str | None) -> int:
    import torch

    launcher = load_launcher()
    manifest = json.loads((directory / "manifest.json").read_text())
    say = RunLog(out, "attention_log.txt")

    import triton

    props = torch.cuda.get_device_properties(0)
    say(f"device: {props.name}, {props.multi_processor_count} SMs, L2 {props.L2_cache_size >> 20} MiB; "
        f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, Triton {triton.__version__}")
    for refused in manifest["refused"]:
        say(f"refused at --prepare: {refused['name']}: {refused['refused']}")
    entries = {e["name"]: e for e in manifest["bench"]}
    cases: dict[str, list[dict]] = {}
    for entry in manifest["bench"]:
        if matches(entry["case"], only):
            cases.setdefault(entry["case"], []).append(entry)
    failures, results = 0, []
    for seed, key in enumerate(cases):
        started = time.perf_counter()
        try:
            record, failed = measure_case(launcher, directory, cases[key], manifest["bound"], seed, say)
        except Exception as error:  # noqa: BLE001 - one case's failure (memory, a driver error) is logged
            import traceback

            say(f"{key}: FAILED {type(error).__name__}: {error}\n{traceback.format_exc()[-1500:]}")
            failures += 1
            torch.cuda.empty_cache()
            continue
        failures += failed
        results.append(record)
        say(f"{key}: {table_row(record, entries)}  ({time.perf_counter() - started:.1f} s)")
        torch.cuda.empty_cache()
        if out is not None:
            (out / "attention_results.json").write_text(json.dumps(results, indent=1) + "\n")
    say("")
    say(f"TFLOP/s = 4 B H S^2 D (halved for causal) / median time per launch; CUDA events around "
        f"{MAX_LAUNCHES_PER_SAMPLE} or fewer launches (~2 ms of work at 500 TFLOP/s) rotating over input sets of "
        f"{ROTATION_BYTES >> 20}+ MiB; the default (the torch backend's kernel) and our {FINALISTS} fastest "
        f"candidates (of {SCREEN_SAMPLES} screening samples each; best: the fastest of them) and every peer re-timed "
        f"interleaved in {ROUNDS} rounds x {SAMPLES_PER_ROUND} samples after warm-up. "
        "FA2 / cuDNN: torch SDPA restricted to that backend, the faster of transposed views of our [B, S, H, D] "
        "tensors and contiguous [B, H, S, D] copies; Triton: flash_forward, the faster of its configs. Every "
        f"result checked first against float64 ({SAMPLE_PAIRS} (batch, head) pairs x {SAMPLE_ROWS} rows; err/bound "
        "= worst |err| / attention_cases.model's bound).")
    say("")
    say(TABLE_HEADER)
    for record in results:
        say(table_row(record, entries))
    say("")
    say("The torch backend's kernel by blocks (TFLOP/s, re-timed with the peers; * = the default; blocks the same as the default's are not timed twice):")
    for record in results:
        names = [n for n in record["ours"] if n == record.get("default") or "_backend_" in n]
        cells = [f"{entries[n]['block_m']}x{entries[n]['block_n']}{'*' if n == record.get('default') else ''} "
                 f"{tflops(record, record['ours'][n]):.1f}" for n in names if "ms" in record["ours"][n]]
        say(f"  {record['case']}: {', '.join(cells) or '-'}")
    say(f"{failures} failed check(s) of ours")
    if out is not None:
        say.close()
    return 1 if failures else 0


def launch_once(directory: Path, only: str) -> int:
    """For a profiler: each prepared kernel of ours whose name matches `only`,
    then SDPA's FlashAttention-2 and cuDNN backends on the same inputs
    (transposed views), each launched once and checked; nothing timed."""
    import torch

    launcher = load_launcher()
    manifest = json.loads((directory / "manifest.json").read_text())
    failures = 0
    for seed, entry in enumerate(e for e in manifest["bench"] if "json" in e and matches(e["name"], only)):
        case = Case(entry, manifest["bound"], seed)
        module = launcher.CudaModule.load(directory / entry["json"])
        output = case.outputs(entry.get("o_layout", "bshd"))[0]
        module.launch(entry["entry"], [case.q[0], case.k[0], case.v[0], output])
        torch.cuda.synchronize()
        verdict = case.check(output if output is case.o[0] else output.transpose(1, 2), 0)
        failures += not verdict["ok"]
        peers = []
        for key, fn in sdpa_variants(case).items():
            if key[1] == "bhsd-view":
                peers.append(f"{key[0]} {'ok' if case.check(fn(0), 0)['ok'] else 'out of bound'}")
        torch.cuda.synchronize()
        print(f"{entry['name']}: {'ok' if verdict['ok'] else 'WRONG'} ({verdict['worst']:.3f} of the bound); "
              f"then {', '.join(peers)}", flush=True)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--prepare", metavar="DIR", help="compile PTX for every case into DIR")
    group.add_argument("--run", metavar="DIR", help="check and time the cases prepared in DIR")
    group.add_argument("--launch-once", metavar="DIR", help="launch each kernel of DIR that --only names "
                       "once, then SDPA's FA2 and cuDNN backends, and check them (for a profiler)")
    parser.add_argument("--out", metavar="DIR", help="with --run: write the log and JSON here")
    parser.add_argument("--only", metavar="GLOBS", help="cases or candidates whose name matches one of these "
                        "comma-separated globs (full_b4h32s4096d128_f16[_m128n64t256s2])")
    parser.add_argument("--jobs", type=int, default=2, help="with --prepare: parallel compiles")
    options = parser.parse_args(argv)
    if options.prepare:
        start = time.perf_counter()
        manifest = prepare(Path(options.prepare), options.only, jobs=options.jobs)
        print(f"prepared {sum('json' in e for e in manifest['bench'])} kernels "
              f"({len(manifest['bench'])} candidates, {len(manifest['refused'])} refused) "
              f"in {time.perf_counter() - start:.1f} s")
        return 0
    if options.launch_once:
        if not options.only:
            parser.error("--launch-once needs --only")
        return launch_once(Path(options.launch_once), options.only)
    return run(Path(options.run), Path(options.out) if options.out else None, options.only)


if __name__ == "__main__":
    sys.exit(main())
