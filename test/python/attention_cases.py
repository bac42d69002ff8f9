"""FlashAttention forward kernels in the tile dialect, written as TileLang's
example_mha_fwd (and its GQA sibling) writes them, for any shape: the
variants of issue 18 (causal or not, head dims 64 and 128, f16 and bf16,
sequence lengths that are not multiples of the block, multi-head and
grouped-query attention over 4-D [batch, seq, heads, dim] tensors), and a
float64 NumPy model of each with a dtype-derived bound. Used by
test_attention.py and bench/device_check.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilemlir.runtime.dtypes import convert

U32, U16, U_BF16 = 2.0 ** -24, 2.0 ** -11, 2.0 ** -8
LOG2E = 1.4426950408889634
NUMPY = {"f16": "float16", "bf16": "bfloat16", "f8E4M3FN": "float8_e4m3fn", "f8E4M3FNUZ": "float8_e4m3fnuz"}
# Unit roundoff of each type (half an ulp at 1): 2^-(mantissa bits + 1).
UNIT = {"f16": U16, "bf16": U_BF16, "f8E4M3FN": 2.0 ** -4, "f8E4M3FNUZ": 2.0 ** -4}


@dataclass(frozen=True)
class Attention:
    batch: int = 1
    heads: int = 1
    kv_heads: int = 1  # grouped-query: heads // kv_heads query heads share one K/V head
    seq: int = 256
    dim: int = 64
    dtype: str = "f16"
    causal: bool = False
    block_m: int = 64
    block_n: int = 64
    threads: int = 128
    stages: int = 2

    @property
    def name(self) -> str:
        kind = "causal" if self.causal else "full"
        dtype = self.dtype.lower().replace("f8e4m3", "fp8_e4m3")
        blocks = "" if (self.block_m, self.block_n) == (64, 64) else f"_m{self.block_m}n{self.block_n}"
        return f"attn_{kind}_b{self.batch}h{self.heads}kv{self.kv_heads}s{self.seq}d{self.dim}_{dtype}{blocks}"

    @property
    def flops(self) -> float:
        """4 B H S^2 D, halved for causal (what attention benchmarks count)."""
        total = 4.0 * self.batch * self.heads * self.seq * self.seq * self.dim
        return total / 2 if self.causal else total


def ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def kernel_text(a: Attention) -> str:
    """One workgroup per (query block, head, batch); the loop over key blocks
    stops at the diagonal when causal; keys past the sequence's end (and,
    when causal, after the query) are masked to -inf before the row max."""
    t = a.dtype
    out = t if t in ("f16", "bf16") else "f16"  # fp8 attention writes f16
    qkv = f"memref<{a.batch}x{a.seq}x{a.heads}x{a.dim}x{t}>"
    o_type = f"memref<{a.batch}x{a.seq}x{a.heads}x{a.dim}x{out}>"
    kv = f"memref<{a.batch}x{a.seq}x{a.kv_heads}x{a.dim}x{t}>"
    shared = "#gpu.address_space<workgroup>"
    private = "#gpu.address_space<private>"
    q_tile = f"memref<{a.block_m}x{a.dim}x{t}, {shared}>"
    kv_tile = f"memref<{a.block_n}x{a.dim}x{t}, {shared}>"
    acc_s = f"memref<{a.block_m}x{a.block_n}xf32, {private}>"
    p = f"memref<{a.block_m}x{a.block_n}x{t}, {private}>"
    acc_o = f"memref<{a.block_m}x{a.dim}xf32, {private}>"
    rows = f"memref<{a.block_m}xf32, {private}>"
    group = a.heads // a.kv_heads
    scale = LOG2E / np.sqrt(a.dim)
    blocks = ceildiv(a.seq, a.block_n)
    window = "{operandSegmentSizes = array<i32: 1, 1, 4, 0>, tile.window = array<i64: 1, 3>}"
    store_window = "{operandSegmentSizes = array<i32: 1, 1, 0, 4>, tile.window = array<i64: 1, 3>}"
    if a.causal:
        # Key blocks up to the one holding this query block's last row.
        upper = ["    %last_row = arith.addi %row0, %bm_minus_1 : index",
                 "    %last_block = arith.divui %last_row, %bn : index",
                 "    %upper_diag = arith.addi %last_block, %c1 : index",
                 "    %upper = arith.minui %upper_diag, %blocks : index"]
    else:
        upper = ["    %upper = arith.addi %blocks, %c0 : index"]
    mask = []
    if a.causal or a.seq % a.block_n:
        conditions = []
        if a.seq % a.block_n:
            conditions.append("        %past_end = arith.cmpi uge, %kj, %seq : index")
        if a.causal:
            conditions.append("        %future = arith.cmpi ugt, %kj, %qi : index")
        names = [c.split("=")[0].strip() for c in conditions]
        combine = []
        if len(names) == 2:
            combine.append(f"        %masked_out = arith.ori {names[0]}, {names[1]} : i1")
            flag = "%masked_out"
        else:
            flag = names[0]
        mask = [
            "      scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %bn) step (%c1, %c1) {",
            f"        %s = memref.load %acc_s[%i, %j] : {acc_s}",
            "        %qi = arith.addi %row0, %i : index",
            "        %kj = arith.addi %k0, %j : index",
            *conditions, *combine,
            f"        %masked = arith.select {flag}, %minus_inf, %s : f32",
            f"        memref.store %masked, %acc_s[%i, %j] : {acc_s}",
            "        scf.reduce",
            "      }",
        ]
    lines = [
        f"func.func @{a.name}(%Q: {qkv}, %K: {kv}, %V: {kv}, %O: {o_type}) {{",
        '  "tile.kernel"() ({',
        "  ^bb0(%bx: index, %head: index, %b: index):",
        "    %c0 = arith.constant 0 : index",
        "    %c1 = arith.constant 1 : index",
        f"    %bm = arith.constant {a.block_m} : index",
        f"    %bm_minus_1 = arith.constant {a.block_m - 1} : index",
        f"    %bn = arith.constant {a.block_n} : index",
        f"    %d = arith.constant {a.dim} : index",
        f"    %seq = arith.constant {a.seq} : index",
        f"    %blocks = arith.constant {blocks} : index",
        f"    %group = arith.constant {group} : index",
        "    %zero = arith.constant 0.0 : f32",
        "    %minus_inf = arith.constant 0xFF800000 : f32",
        f"    %scale = arith.constant {scale:.9e} : f32",
        f'    %q_s = "tile.alloc_shared"() : () -> {q_tile}',
        f'    %k_s = "tile.alloc_shared"() : () -> {kv_tile}',
        f'    %v_s = "tile.alloc_shared"() : () -> {kv_tile}',
        f'    %acc_s = "tile.alloc_fragment"() : () -> {acc_s}',
        f'    %acc_s_cast = "tile.alloc_fragment"() : () -> {p}',
        f'    %acc_o = "tile.alloc_fragment"() : () -> {acc_o}',
        f'    %m = "tile.alloc_fragment"() : () -> {rows}',
        f'    %m_prev = "tile.alloc_fragment"() : () -> {rows}',
        f'    %rescale = "tile.alloc_fragment"() : () -> {rows}',
        f'    %row_sum = "tile.alloc_fragment"() : () -> {rows}',
        f'    %l = "tile.alloc_fragment"() : () -> {rows}',
        "    %row0 = arith.muli %bx, %bm : index",
        "    %kv_head = arith.divui %head, %group : index",
        f'    "tile.copy"(%Q, %q_s, %b, %row0, %head, %c0) {window} : ({qkv}, {q_tile}, index, index, index, index) -> ()',
        f'    "tile.fill"(%acc_o, %zero) : ({acc_o}, f32) -> ()',
        f'    "tile.fill"(%l, %zero) : ({rows}, f32) -> ()',
        f'    "tile.fill"(%m, %minus_inf) : ({rows}, f32) -> ()',
        *upper,
        "    scf.for %kb = %c0 to %upper step %c1 {",
        "      %k0 = arith.muli %kb, %bn : index",
        f'      "tile.copy"(%K, %k_s, %b, %k0, %kv_head, %c0) {window} : ({kv}, {kv_tile}, index, index, index, index) -> ()',
        f'      "tile.fill"(%acc_s, %zero) : ({acc_s}, f32) -> ()',
        f'      "tile.gemm"(%q_s, %k_s, %acc_s) {{accum_dtype = f32, transpose_a = false, transpose_b = true}} : ({q_tile}, {kv_tile}, {acc_s}) -> ()',
        *mask,
        f'      "tile.copy"(%m, %m_prev) {{operandSegmentSizes = array<i32: 1, 1, 0, 0>}} : ({rows}, {rows}) -> ()',
        f'      "tile.reduce"(%acc_s, %m) {{clear = false, dim = 1 : i64, kind = "max"}} : ({acc_s}, {rows}) -> ()',
        "      scf.parallel (%i) = (%c0) to (%bm) step (%c1) {",
        f"        %old = memref.load %m_prev[%i] : {rows}",
        f"        %new = memref.load %m[%i] : {rows}",
        "        %x = arith.mulf %old, %scale : f32",
        "        %y = arith.mulf %new, %scale : f32",
        "        %diff = arith.subf %x, %y : f32",
        "        %r = math.exp2 %diff fastmath<afn> : f32",
        f"        memref.store %r, %rescale[%i] : {rows}",
        "        scf.reduce",
        "      }",
        "      scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %bn) step (%c1, %c1) {",
        f"        %s = memref.load %acc_s[%i, %j] : {acc_s}",
        f"        %mi = memref.load %m[%i] : {rows}",
        "        %x = arith.mulf %s, %scale : f32",
        "        %y = arith.mulf %mi, %scale : f32",
        "        %diff = arith.subf %x, %y : f32",
        "        %e = math.exp2 %diff fastmath<afn> : f32",
        f"        memref.store %e, %acc_s[%i, %j] : {acc_s}",
        "        scf.reduce",
        "      }",
        f'      "tile.reduce"(%acc_s, %row_sum) {{clear = true, dim = 1 : i64, kind = "sum"}} : ({acc_s}, {rows}) -> ()',
        "      scf.parallel (%i) = (%c0) to (%bm) step (%c1) {",
        f"        %li = memref.load %l[%i] : {rows}",
        f"        %r = memref.load %rescale[%i] : {rows}",
        f"        %s = memref.load %row_sum[%i] : {rows}",
        "        %scaled = arith.mulf %li, %r : f32",
        "        %next = arith.addf %scaled, %s : f32",
        f"        memref.store %next, %l[%i] : {rows}",
        "        scf.reduce",
        "      }",
        f'      "tile.copy"(%acc_s, %acc_s_cast) {{operandSegmentSizes = array<i32: 1, 1, 0, 0>}} : ({acc_s}, {p}) -> ()',
        "      scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %d) step (%c1, %c1) {",
        f"        %o = memref.load %acc_o[%i, %j] : {acc_o}",
        f"        %r = memref.load %rescale[%i] : {rows}",
        "        %scaled = arith.mulf %o, %r : f32",
        f"        memref.store %scaled, %acc_o[%i, %j] : {acc_o}",
        "        scf.reduce",
        "      }",
        f'      "tile.copy"(%V, %v_s, %b, %k0, %kv_head, %c0) {window} : ({kv}, {kv_tile}, index, index, index, index) -> ()',
        f'      "tile.gemm"(%acc_s_cast, %v_s, %acc_o) {{accum_dtype = f32, transpose_a = false, transpose_b = false}} : ({p}, {kv_tile}, {acc_o}) -> ()',
        f"    }} {{tile.num_stages = {a.stages} : i64}}",
        "    scf.parallel (%i, %j) = (%c0, %c0) to (%bm, %d) step (%c1, %c1) {",
        f"      %o = memref.load %acc_o[%i, %j] : {acc_o}",
        f"      %li = memref.load %l[%i] : {rows}",
        "      %y = arith.divf %o, %li : f32",
        f"      memref.store %y, %acc_o[%i, %j] : {acc_o}",
        "      scf.reduce",
        "    }",
        f'    "tile.copy"(%acc_o, %O, %b, %row0, %head, %c0) {store_window} : ({acc_o}, {o_type}, index, index, index, index) -> ()',
        "    gpu.yield",
        f"  }}) {{grid = array<i64: {ceildiv(a.seq, a.block_m)}, {a.heads}, {a.batch}>, threads = {a.threads} : i64}} : () -> ()",
        "  return",
        "}",
    ]
    return "\n".join(lines) + "\n"


def inputs(a: Attention, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    dtype = NUMPY[a.dtype]

    def uniform(shape, low, high):
        return convert(rng.uniform(low, high, shape), dtype)

    spread = 2 if a.dtype in ("f16", "bf16") else 1  # fp8 scores stay in a sane range
    q = uniform((a.batch, a.seq, a.heads, a.dim), -spread, spread)
    k = uniform((a.batch, a.seq, a.kv_heads, a.dim), -spread, spread)
    v = uniform((a.batch, a.seq, a.kv_heads, a.dim), -1, 1)
    out_dtype = dtype if a.dtype in ("f16", "bf16") else "float16"
    o = convert(np.full((a.batch, a.seq, a.heads, a.dim), np.nan), out_dtype)
    return [q, k, v, o]


def model(a: Attention, args: list[np.ndarray]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """{3: (O in float64, the bound around it)}."""
    q, k, v = (convert(x, np.float64) for x in args[:3])
    group = a.heads // a.kv_heads
    k = np.repeat(k, group, axis=2)
    v = np.repeat(v, group, axis=2)
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(a.dim)
    if a.causal:
        future = np.triu(np.ones((a.seq, a.seq), bool), 1)
        scores = np.where(future, -np.inf, scores)
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    out = np.einsum("bhqk,bkhd->bqhd", p / p.sum(axis=-1, keepdims=True), v)
    unit = UNIT[a.dtype]
    out_unit = unit if a.dtype in ("f16", "bf16") else U16
    # P rounded to the input type before P V (each weight within one unit, the weights
    # summing to 1, twice for the normalisation by the f32 row sum), the f32 sums of the
    # scores and of P V, then the output rounding (fp8 kernels write f16).
    spread = np.abs(v).max()
    bound = out_unit * np.abs(out) + (2 * unit + (a.dim + a.seq + 16) * U32) * spread + 2.0 ** -24
    return {3: (out, bound)}


# The variants checked in the emulator (test_attention.py) and on the H200
# (bench/device_check.py): full and causal, head dims 64 and 128, f16 and bf16,
# a sequence that is not a multiple of the block, grouped-query 4-D tensors.
VARIANTS = (
    Attention(),
    Attention(causal=True),
    Attention(seq=200),
    Attention(seq=200, causal=True, dtype="bf16"),
    Attention(batch=2, heads=4, kv_heads=2, seq=128, dim=128, threads=256, stages=1),
)
# NVIDIA reads P from registers here (4 warps of 32 rows each).
REGISTER_P = Attention(seq=256, block_m=128, causal=True)
DEVICE_VARIANTS = VARIANTS + (
    REGISTER_P,
    Attention(batch=2, heads=4, kv_heads=2, seq=500, dim=128, causal=True, dtype="bf16", threads=256,
              stages=1),
    Attention(batch=1, heads=4, kv_heads=4, seq=1024, dim=64, stages=2),
    # 48 rows a warp (three m16 tiles): P from registers on NVIDIA since 32 rows a
    # wave suffice (select_mma.MIN_WAVE_ROWS), not run on the H200 yet.
    Attention(seq=384, block_m=192, causal=True),
    # wgmma on sm_90a (backends/nvidia/wgmma_threads.py): two warpgroups of 64
    # rows, a ragged causal sequence; one warpgroup of two m64 bands, 128 keys.
    Attention(batch=2, heads=4, kv_heads=2, seq=500, dim=128, causal=True, dtype="bf16", block_m=128,
              block_n=128, threads=256),
    Attention(batch=1, heads=2, seq=320, dim=64, block_m=128, block_n=128),
)
