"""AMD RDNA WMMA instructions as data: which exist per chip, where each lane
keeps its A, B, C/D elements in wave32, and the emulator's arithmetic for them.

Derived from AMD's public documentation, not from the lowering's own layout
code (tilemlir/mma_layouts.py), so that the emulator checks the lowering:

[RDNA3]  AMD "RDNA3" Instruction Set Architecture reference guide, section
         7.9 "Wave Matrix Multiply Accumulate (WMMA)" and its register-layout
         figures; GPUOpen, "How to accelerate AI applications on RDNA 3 using
         WMMA" (A and B are replicated in lanes 0-15 and 16-31; C/D rows of
         the two lane halves interleave).
[RDNA4]  AMD "RDNA4" Instruction Set Architecture reference guide, section 7.9
         (WMMA): the halves of A and B along K are spread over the two lane
         halves, C/D rows 8 apart.
[CALC]   ROCm/amd_matrix_instruction_calculator (`rdna3`, `rdna4`): the
         instruction list and the same register layouts.

Layouts of the wave32 16x16x16 WMMAs (i = row, j = column, k = reduction
index; "item" = position in the lane's operand vector):

  RDNA3 (gfx11):  A[i][k]: lanes i and i + 16, item k (both halves hold it)
                  B[k][j]: lanes j and j + 16, item k
                  C/D[i][j]: lane j + 16 * (i % 2), item i // 2
  RDNA4 (gfx12):  A[i][k]: lane i + 16 * (k // 8), item k % 8
                  B[k][j]: lane j + 16 * (k // 8), item k % 8
                  C/D[i][j]: lane j + 16 * (i // 8), item i % 8

On RDNA3 the hardware requires the replication; a wave whose upper lanes
hold other values than its lower ones is reported (`SanitizerError` from the
handler), since what the instruction then computes is not documented.

Arithmetic: as mfma_layouts states it (exact products, one rounding to f32;
i8 x i8 -> i32 wrapped, signed operands unless the op says unsigned).
fp8/bf8 operands (RDNA4 only) are OCP E4M3 / E5M2.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from tilemlir.dialects.element_types import dtype_of

WAVE = 32
GENERATIONS = {"gfx1100": "gfx11", "gfx1101": "gfx11", "gfx1102": "gfx11",
               "gfx1200": "gfx12", "gfx1201": "gfx12"}
CHIPS = tuple(GENERATIONS)

# Operand kinds each generation's 16x16x16 WMMAs take, with f32 or i32 results [CALC].
KINDS = {
    "gfx11": {("f16", "f16"), ("bf16", "bf16"), ("i8", "i8")},
    "gfx12": {("f16", "f16"), ("bf16", "bf16"), ("i8", "i8")}
    | {(a, b) for a in ("fp8", "bf8") for b in ("fp8", "bf8")},
}
_FP8 = {"fp8": dtype_of("f8E4M3FN"), "bf8": dtype_of("f8E5M2")}


@dataclass(frozen=True)
class Wmma:
    chip: str
    a: str
    b: str

    @property
    def generation(self) -> str:
        return GENERATIONS[self.chip]

    @property
    def per_lane(self) -> int:
        """A (and B) values per lane: all 16 of K on gfx11, half of them on gfx12."""
        return 16 if self.generation == "gfx11" else 8

    @property
    def acc(self) -> str:
        return "i32" if self.a == "i8" else "f32"


def operand_kind(dtype: np.dtype, chip: str) -> str | None:
    dtype = np.dtype(dtype)
    for name in ("f16", "bf16", "i8"):
        if dtype == dtype_of(name):
            return name
    if GENERATIONS.get(chip) == "gfx12":
        for kind, fp8 in _FP8.items():
            if dtype == fp8:
                return kind
    return None


def find_instruction(chip: str, m: int, n: int, k: int, a: str, b: str) -> Wmma | None:
    generation = GENERATIONS.get(chip)
    if generation is None or (m, n, k) != (16, 16, 16) or (a, b) not in KINDS[generation]:
        return None
    return Wmma(chip, a, b)


@cache
def input_layout(generation: str) -> tuple[np.ndarray, np.ndarray]:
    """(lane, item) arrays of shape (16, 16) for A[i][k] (or B^T[j][k]) as the
    lower lane half reads them; on gfx11 the upper half holds a copy."""
    r, kk = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    if generation == "gfx11":
        return r, kk
    return r + 16 * (kk // 8), kk % 8


@cache
def output_layout(generation: str) -> tuple[np.ndarray, np.ndarray]:
    """(lane, item) arrays of shape (16, 16) for C/D[i][j]."""
    i, j = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    if generation == "gfx11":
        return j + 16 * (i % 2), i // 2
    return j + 16 * (i // 8), i % 8


def unreplicated_wave(instr: Wmma, a: np.ndarray, b: np.ndarray) -> int | None:
    """On gfx11, the first wave whose lanes 16-31 do not repeat lanes 0-15 in
    A or B (compared as bits); None when every wave does, or on gfx12."""
    if instr.generation != "gfx11":
        return None
    for operand in (a, b):
        bits = np.ascontiguousarray(operand).view(np.uint8).reshape(-1, WAVE, operand.shape[-1] * operand.itemsize)
        differs = (bits[:, :16] != bits[:, 16:]).any(axis=(1, 2))
        if differs.any():
            return int(np.argmax(differs))
    return None


def _widen(values: np.ndarray, kind: str, unsigned: bool) -> np.ndarray:
    if kind == "i8":
        return values.view(np.uint8).astype(np.int64) if unsigned else values.astype(np.int64)
    return values.astype(np.float32).astype(np.float64)


def execute(instr: Wmma, a: np.ndarray, b: np.ndarray, c: np.ndarray,
            unsigned: tuple[bool, bool] = (False, False)) -> np.ndarray:
    """D for every wave: a, b of shape (W*32, per_lane), c of shape (W*32, 8)."""
    waves = a.shape[0] // WAVE
    lane, item = input_layout(instr.generation)
    a_mat = _widen(a.reshape(waves, WAVE, instr.per_lane), instr.a, unsigned[0])[:, lane, item]
    bt_mat = _widen(b.reshape(waves, WAVE, instr.per_lane), instr.b, unsigned[1])[:, lane, item]
    lane_d, item_d = output_layout(instr.generation)
    c_mat = c.reshape(waves, WAVE, 8)[:, lane_d, item_d]
    if instr.acc == "i32":
        acc = c_mat.astype(np.int64) + np.einsum("wik,wjk->wij", a_mat, bt_mat)
        d_mat = (acc & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    else:
        d_mat = (c_mat.astype(np.float64) + np.matmul(a_mat, np.swapaxes(bt_mat, -1, -2))).astype(c.dtype)
    out = np.empty((waves, WAVE, 8), dtype=c.dtype)
    out[:, lane_d, item_d] = d_mat
    return out.reshape(c.shape)
