"""AMD MFMA instructions as data: which exist per chip, where each lane keeps
its A, B, C/D elements, and the arithmetic the emulator gives them.

Everything here is derived from AMD's public documentation, not from any
lowering code in this repository:

[CALC]  ROCm/amd_matrix_instruction_calculator, matrix_calculator.py (the gfx9
        class: `_coord_to_lane_eqn`, `_coord_to_output_reg_eqn`,
        `_coord_to_input_reg_eqn`); the same mapping the calculator prints
        with `--register-layout` and that the CDNA3 ISA guide section 7
        ("Matrix Arithmetic Instructions") tabulates.
[BLOG]  ROCm blog "Matrix Core Programming on AMD CDNA3 and CDNA4"
        (https://rocm.blogs.amd.com/software-tools-optimization/matrix-cores-cdna/README.html):
        the gfx942/gfx950 instructions with doubled K (fp8/bf8, i8 x32/x64,
        gfx950 f16/bf16 x32/x16, f8f6f4) keep the calculator's scheme, each
        lane holding K*M*blocks/64 consecutive k values; FNUZ fp8 on gfx942,
        OCP fp8 on gfx950.
[TABLE] shared/reference/mfma_table.csv (instruction list per chip, taken
        from the calculator and LLVM's VOP3PInstructions.td).

Layouts (i = row of A/C/D, j = column of B/C/D, k = reduction index,
b = block; "item" = position in the lane's operand vector, i.e. the
register/sub-register order, low half first):

  A[b][i][k]: lane = i + M*b + M*blocks*(k // kpl), item = k % kpl     [CALC]
  B[b][k][j]: lane = j + N*b + N*blocks*(k // kpl), item = k % kpl     [CALC]
      with kpl = M*K*blocks/64 values of A (and of B) per lane.
  C/D (32-bit results) [CALC `_coord_to_output_reg_eqn`/`_coord_to_lane_eqn`]:
      32x32: lane = j + 32*((i//4) % 2),  item = 16*b + 4*(i//8) + i%4
      16x16: lane = j + 16*(i//4),        item = 4*b + i%4
      4x4:   lane = j + 4*b,              item = i
  C/D (f64 results) [CALC, fp64 branch]:
      16x16x4:     lane = j + 16*(i%4),        item = i//4
      4x4x4 (4b):  lane = j + 4*b + 16*(i%4),  item = 0

Arithmetic model (documented, checked by the tests against float64 NumPy):
  * float inputs are widened exactly; every product a*b is exact (in float64,
    which holds any product of two <= 24-bit significands);
  * D = round_to_f32(C + sum_k a*b): the sum of the K products of one output
    element and C is formed in float64 (sum order unspecified, relative error
    <= K * 2**-53) and rounded once, to nearest even, to f32. Hardware
    accumulates in f32 in an unspecified internal order; the difference is
    within the usual accumulation bound K * 2**-24 * sum|a*b| + |C| * 2**-24;
  * f64 MFMA: float64 products and sums (each rounded to f64), order unspecified;
  * i8 -> i32: exact integer sum, wrapped to 32 bits (two's complement);
  * xf32 (gfx942, `reducePrecision`): inputs are rounded to nearest even to 10
    explicit significand bits (the TF32 precision) before the f32 rule above.
    AMD does not document the xf32 rounding; this is our assumption;
  * negateA/B/C (gfx942+) negate the operand before the product/sum;
  * cbsz/abid: block b takes A from block (b >> cbsz << cbsz) + abid [CALC
    `_get_cbsz_abid_transformed_block`]; blgp (B lane group pattern) per
    the CDNA3 ISA guide: 0 none, 1 lanes 0-31 broadcast to 32-63, 2 lanes
    32-63 broadcast to 0-31, 3 rotate by 16 (lane l reads l+16 mod 64),
    4-7 lanes 16*(p-4)..+15 broadcast to all four groups.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from tilemlir.dialects.element_types import dtype_of

WAVE = 64

# Operand kinds. fp8/bf8 are E4M3/E5M2: FNUZ on gfx942, OCP on gfx950 [BLOG].
_FP8_TYPES = {
    "gfx942": {"fp8": dtype_of("f8E4M3FNUZ"), "bf8": dtype_of("f8E5M2FNUZ")},
    "gfx950": {"fp8": dtype_of("f8E4M3FN"), "bf8": dtype_of("f8E5M2")},
}


@dataclass(frozen=True)
class Mfma:
    """One dense MFMA instruction: shape, operand kinds, accumulator kind."""

    name: str
    m: int
    n: int
    k: int
    blocks: int
    a: str  # f32 | xf32 | f16 | bf16 | i8 | f64 | fp8 | bf8
    b: str
    acc: str  # f32 | i32 | f64

    @property
    def per_lane(self) -> int:
        """A (and B) values per lane: M*K*blocks/64."""
        return self.m * self.k * self.blocks // WAVE

    @property
    def results_per_lane(self) -> int:
        return self.m * self.n * self.blocks // WAVE


def _rows(chip_rows: list[tuple]) -> tuple[Mfma, ...]:
    return tuple(Mfma(*row) for row in chip_rows)


def _fp8_rows(shapes, suffix_kinds=("fp8", "bf8")) -> list[tuple]:
    rows = []
    for m, n, k in shapes:
        for a in suffix_kinds:
            for b in suffix_kinds:
                rows.append((f"v_mfma_f32_{m}x{n}x{k}_{a}_{b}", m, n, k, 1, a, b, "f32"))
    return rows


_COMMON_F32_F16 = [
    # name, m, n, k, blocks, a, b, acc                                  [TABLE]
    ("v_mfma_f32_32x32x1_2b_f32", 32, 32, 1, 2, "f32", "f32", "f32"),
    ("v_mfma_f32_16x16x1_4b_f32", 16, 16, 1, 4, "f32", "f32", "f32"),
    ("v_mfma_f32_4x4x1_16b_f32", 4, 4, 1, 16, "f32", "f32", "f32"),
    ("v_mfma_f32_32x32x2_f32", 32, 32, 2, 1, "f32", "f32", "f32"),
    ("v_mfma_f32_16x16x4_f32", 16, 16, 4, 1, "f32", "f32", "f32"),
    ("v_mfma_f32_32x32x4_2b_f16", 32, 32, 4, 2, "f16", "f16", "f32"),
    ("v_mfma_f32_16x16x4_4b_f16", 16, 16, 4, 4, "f16", "f16", "f32"),
    ("v_mfma_f32_4x4x4_16b_f16", 4, 4, 4, 16, "f16", "f16", "f32"),
    ("v_mfma_f32_32x32x8_f16", 32, 32, 8, 1, "f16", "f16", "f32"),
    ("v_mfma_f32_16x16x16_f16", 16, 16, 16, 1, "f16", "f16", "f32"),
    ("v_mfma_i32_32x32x4_2b_i8", 32, 32, 4, 2, "i8", "i8", "i32"),
    ("v_mfma_i32_16x16x4_4b_i8", 16, 16, 4, 4, "i8", "i8", "i32"),
    ("v_mfma_i32_4x4x4_16b_i8", 4, 4, 4, 16, "i8", "i8", "i32"),
    # bf16 "_1k" forms (gfx90a names; the only bf16 forms on gfx942/gfx950)
    ("v_mfma_f32_32x32x4_2b_bf16", 32, 32, 4, 2, "bf16", "bf16", "f32"),
    ("v_mfma_f32_16x16x4_4b_bf16", 16, 16, 4, 4, "bf16", "bf16", "f32"),
    ("v_mfma_f32_4x4x4_16b_bf16", 4, 4, 4, 16, "bf16", "bf16", "f32"),
    ("v_mfma_f32_32x32x8_bf16", 32, 32, 8, 1, "bf16", "bf16", "f32"),
    ("v_mfma_f32_16x16x16_bf16", 16, 16, 16, 1, "bf16", "bf16", "f32"),
    ("v_mfma_f64_16x16x4_f64", 16, 16, 4, 1, "f64", "f64", "f64"),
    ("v_mfma_f64_4x4x4_4b_f64", 4, 4, 4, 4, "f64", "f64", "f64"),
]

INSTRUCTIONS: dict[str, tuple[Mfma, ...]] = {
    "gfx90a": _rows(_COMMON_F32_F16 + [
        ("v_mfma_i32_32x32x8i8", 32, 32, 8, 1, "i8", "i8", "i32"),
        ("v_mfma_i32_16x16x16i8", 16, 16, 16, 1, "i8", "i8", "i32"),
        # pre-"_1k" bf16 forms: two bf16 per lane
        ("v_mfma_f32_32x32x2bf16", 32, 32, 2, 2, "bf16", "bf16", "f32"),
        ("v_mfma_f32_16x16x2bf16", 16, 16, 2, 4, "bf16", "bf16", "f32"),
        ("v_mfma_f32_4x4x2bf16", 4, 4, 2, 16, "bf16", "bf16", "f32"),
        ("v_mfma_f32_32x32x4bf16", 32, 32, 4, 1, "bf16", "bf16", "f32"),
        ("v_mfma_f32_16x16x8bf16", 16, 16, 8, 1, "bf16", "bf16", "f32"),
    ]),
    "gfx942": _rows(_COMMON_F32_F16 + [
        ("v_mfma_f32_16x16x8_xf32", 16, 16, 8, 1, "xf32", "xf32", "f32"),
        ("v_mfma_f32_32x32x4_xf32", 32, 32, 4, 1, "xf32", "xf32", "f32"),
        ("v_mfma_i32_32x32x16_i8", 32, 32, 16, 1, "i8", "i8", "i32"),
        ("v_mfma_i32_16x16x32_i8", 16, 16, 32, 1, "i8", "i8", "i32"),
    ] + _fp8_rows([(16, 16, 32), (32, 32, 16)])),
    "gfx950": _rows(_COMMON_F32_F16 + [
        ("v_mfma_i32_32x32x16_i8", 32, 32, 16, 1, "i8", "i8", "i32"),
        ("v_mfma_i32_16x16x32_i8", 16, 16, 32, 1, "i8", "i8", "i32"),
        ("v_mfma_f32_16x16x32_f16", 16, 16, 32, 1, "f16", "f16", "f32"),
        ("v_mfma_f32_32x32x16_f16", 32, 32, 16, 1, "f16", "f16", "f32"),
        ("v_mfma_f32_16x16x32_bf16", 16, 16, 32, 1, "bf16", "bf16", "f32"),
        ("v_mfma_f32_32x32x16_bf16", 32, 32, 16, 1, "bf16", "bf16", "f32"),
        ("v_mfma_i32_16x16x64_i8", 16, 16, 64, 1, "i8", "i8", "i32"),
        ("v_mfma_i32_32x32x32_i8", 32, 32, 32, 1, "i8", "i8", "i32"),
    ] + _fp8_rows([(16, 16, 32), (32, 32, 16)]) + [
        # f8f6f4 with fp8/bf8 operands (cbsz/blgp format codes 0/1) [TABLE]
        (f"v_mfma_f32_{m}x{n}x{k}_f8f6f4", m, n, k, 1, a, b, "f32")
        for m, n, k in ((16, 16, 128), (32, 32, 64))
        for a in ("fp8", "bf8") for b in ("fp8", "bf8")
    ]),
}


def operand_kind(dtype: np.dtype, chip: str, reduce_precision: bool = False) -> str | None:
    """The MFMA operand kind of an element dtype on `chip` (None: no MFMA takes it)."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return "xf32" if reduce_precision and chip == "gfx942" else "f32"
    simple = {dtype_of(name): name for name in ("f16", "bf16", "i8", "f64")}
    if dtype in simple:
        return simple[dtype]
    for kind, fp8 in _FP8_TYPES.get(chip, {}).items():
        if dtype == fp8:
            return kind
    return None


def find_instruction(chip: str, m: int, n: int, k: int, blocks: int, a: str, b: str) -> Mfma | None:
    for instr in INSTRUCTIONS.get(chip, ()):
        if (instr.m, instr.n, instr.k, instr.blocks, instr.a, instr.b) == (m, n, k, blocks, a, b):
            return instr
    return None


# --------------------------------------------------------------------------
# Layouts: index arrays, computed once per shape.
# --------------------------------------------------------------------------

@cache
def input_layout(rows: int, k: int, blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """(lane, item) arrays of shape (blocks, rows, k) for A[b][i][k] (rows = M)
    or for B[b][k][j] read as B^T[b][j][k] (rows = N).            [CALC]"""
    per_lane = rows * k * blocks // WAVE
    b, r, kk = np.meshgrid(np.arange(blocks), np.arange(rows), np.arange(k), indexing="ij")
    lane = r + rows * b + rows * blocks * (kk // per_lane)
    return lane, kk % per_lane


@cache
def output_layout(m: int, n: int, blocks: int, f64: bool) -> tuple[np.ndarray, np.ndarray]:
    """(lane, item) arrays of shape (blocks, m, n) for C/D[b][i][j].   [CALC]"""
    b, i, j = np.meshgrid(np.arange(blocks), np.arange(m), np.arange(n), indexing="ij")
    if f64:
        if (m, n) == (16, 16):
            return j + 16 * (i % 4), i // 4
        if (m, n) == (4, 4):
            return j + 4 * b + 16 * (i % 4), np.zeros_like(i)
    elif (m, n) == (32, 32):
        return j + 32 * ((i // 4) % 2), 16 * b + 4 * (i // 8) + i % 4
    elif (m, n) == (16, 16):
        return j + 16 * (i // 4), 4 * b + i % 4
    elif (m, n) == (4, 4):
        return j + 4 * b, i
    raise ValueError(f"no documented C/D layout for {m}x{n} (f64={f64})")


def blgp_source_lanes(blgp: int) -> np.ndarray:
    """For each lane, the lane whose B value it uses under BLGP (CDNA3 ISA section 7)."""
    lanes = np.arange(WAVE)
    if blgp == 0:
        return lanes
    if blgp == 1:
        return lanes % 32
    if blgp == 2:
        return lanes % 32 + 32
    if blgp == 3:
        return (lanes + 16) % WAVE
    if 4 <= blgp <= 7:
        return lanes % 16 + 16 * (blgp - 4)
    raise ValueError(f"blgp must be 0..7, got {blgp}")


# --------------------------------------------------------------------------
# Arithmetic, over all waves of a workgroup at once.
# --------------------------------------------------------------------------

def _round_to_xf32(x: np.ndarray) -> np.ndarray:
    """float32 rounded to nearest even at 10 explicit significand bits (see docstring)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    drop = 13
    half = np.uint64(1 << (drop - 1))
    lsb = (bits >> np.uint64(drop)) & np.uint64(1)
    rounded = (bits + half - np.uint64(1) + lsb) & ~np.uint64((1 << drop) - 1)
    finite = np.isfinite(x)
    out = np.where(finite, rounded, bits).astype(np.uint32).view(np.float32)
    return out


def _widen(values: np.ndarray, kind: str) -> np.ndarray:
    if kind == "i8":
        return values.astype(np.int64)
    if kind == "xf32":
        return _round_to_xf32(values).astype(np.float64)
    return values.astype(np.float32).astype(np.float64) if values.dtype != np.float64 else values


def execute(instr: Mfma, a: np.ndarray, b: np.ndarray, c: np.ndarray, *, cbsz: int = 0,
            abid: int = 0, blgp: int = 0, negate: tuple[bool, bool, bool] = (False, False, False)
            ) -> np.ndarray:
    """D for every wave: a, b of shape (W*64, per_lane), c of shape (W*64, results_per_lane)
    (element dtypes as the operands); returns D with c's shape and dtype."""
    waves = a.shape[0] // WAVE
    a = _widen(a.reshape(waves, WAVE, instr.per_lane), instr.a)
    b = _widen(b.reshape(waves, WAVE, instr.per_lane), instr.b)
    if blgp:
        b = b[:, blgp_source_lanes(blgp), :]
    lane_a, item_a = input_layout(instr.m, instr.k, instr.blocks)
    if cbsz:
        group = (np.arange(instr.blocks) >> cbsz) << cbsz
        source_block = group + abid
        lane_a, item_a = lane_a[source_block], item_a[source_block]
    lane_b, item_b = input_layout(instr.n, instr.k, instr.blocks)
    a_mat = a[:, lane_a, item_a]  # (W, blocks, M, K)
    bt_mat = b[:, lane_b, item_b]  # (W, blocks, N, K)
    lane_d, item_d = output_layout(instr.m, instr.n, instr.blocks, instr.acc == "f64")
    c_wide = c.reshape(waves, WAVE, instr.results_per_lane)
    c_mat = c_wide[:, lane_d, item_d]
    if negate[0]:
        a_mat = -a_mat
    if negate[1]:
        bt_mat = -bt_mat
    if instr.acc == "i32":
        acc = c_mat.astype(np.int64) + np.einsum("wbik,wbjk->wbij", a_mat, bt_mat)
        if negate[2]:
            acc = acc - 2 * c_mat.astype(np.int64)
        d_mat = (acc & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    else:
        c64 = c_mat.astype(np.float64)
        if negate[2]:
            c64 = -c64
        acc = c64 + np.matmul(a_mat, np.swapaxes(bt_mat, -1, -2))
        d_mat = acc.astype(c.dtype)
    out = np.empty((waves, WAVE, instr.results_per_lane), dtype=c.dtype)
    out[:, lane_d, item_d] = d_mat
    return out.reshape(c.shape)
