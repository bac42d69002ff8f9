"""MetaX matrix instructions in the emulator: `func.call @__builtin_mxc_mma_*`.

The MetaX lowering (tilemlir/backends/metax/matrix.py) emits each 16x16 wave64
MMA as a call to a declared function named like the MACA built-in. This
module gives those calls their meaning, written from MetaX's public sources
rather than from the lowering:

[TL-MX]    tile-ai/tilelang-metax, tilelang/maca/intrinsics/layout/mma_layout.py:
           `thread_id_shared_access_64x4_to_16x16_layout_A` (row = lane % 16,
           k = 4*(lane // 16) + item) and `..._layout_B` (k = 4*(lane // 16) +
           item, column = lane % 16), their 64x8 (K = 32) forms with 8 items;
           `thread_id_shared_access_64x4_to_16x16_layout_C_m_n` for the
           instruction's own result (row = 4*(lane // 16) + item, column = lane % 16).
[MCTRITON] MetaX-MACA/mcTriton MMAMACA.cpp: all MMAs are 16x16; 4 results per
           lane; 4 A/B values per lane for f16/bf16/i8 K=16, 8 for i8 K=32 and
           fp8/bf8 K=32, 8-bit values packed into i32 words (low byte first);
           f32 accumulation for float types, i32 for int8.

Semantics, per wave of 64 lanes (g = lane // 16, r = lane % 16, kpl = K/4):

    X[r][g*kpl + i] = first operand, item i     (16 x K)
    Y[g*kpl + i][r] = second operand, item i    (K x 16)
    C[4*g + j][r]   = accumulator, item j       (16 x 16)
    D = X @ Y + C;  result item j of lane = D[4*g + j][r]

Arithmetic (the model mfma_layouts states for AMD, here an assumption: MetaX
documents none): exact products, each output's sum formed in float64 and
rounded once to f32; int8 sums exact, wrapped to 32 bits.

Which built-ins exist is the target descriptor's table (its `builtin` keys):
a call the chip does not have is an error, e.g. 16x16x32i8 on xcore1000.
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np
from mlir import ir

from tilemlir.dialects.element_types import dtype_of
from tilemlir.runtime.dtypes import convert
from tilemlir.runtime.emu_core import (
    EmulatorError,
    UnsupportedOp,
    handles,
    require_whole_waves,
    value_type,
)

WAVE = 64
TILE = 16
CHIPS = ("xcore1000", "xcore1500")

_BUILTIN = re.compile(r"__builtin_mxc_mma_16x16x(\d+)(f16|bf16|i8|f8|bf8)$")
# Operand element types behind each suffix ([MCTRITON] getMmaType).
_ELEMENTS = {suffix: dtype_of(mlir) for suffix, mlir in
             {"f16": "f16", "bf16": "bf16", "i8": "i8", "f8": "f8E4M3FN", "bf8": "f8E5M2"}.items()}


def wave_mma(x: np.ndarray, y: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """One wave's instruction: x, y are (64, K/4) items, c is (64, 4); returns (64, 4)."""
    per_lane = k // (WAVE // TILE)
    lanes = np.arange(WAVE)
    group, index = lanes // TILE, lanes % TILE
    integer = c.dtype.kind == "i"
    work = np.int64 if integer else np.float64
    x_matrix = np.zeros((TILE, k), work)
    y_matrix = np.zeros((k, TILE), work)
    c_matrix = np.zeros((TILE, TILE), work)
    for item in range(per_lane):
        x_matrix[index, group * per_lane + item] = x[:, item].astype(work)
        y_matrix[group * per_lane + item, index] = y[:, item].astype(work)
    for item in range(4):
        c_matrix[4 * group + item, index] = c[:, item].astype(work)
    d_matrix = x_matrix @ y_matrix + c_matrix
    out = np.empty((WAVE, 4), c.dtype)
    for item in range(4):
        column = d_matrix[4 * group + item, index]
        if integer:
            out[:, item] = ((column + 2**31) % 2**32 - 2**31).astype(c.dtype)
        else:
            out[:, item] = column.astype(c.dtype)
    return out


def _items(value: np.ndarray, threads: int, element: np.dtype, per_lane: int) -> np.ndarray:
    """A (threads, per_lane) array of operand items from a call operand value."""
    lanes = np.ascontiguousarray(np.broadcast_to(value, (threads,) + value.shape[1:]))
    if lanes.dtype == np.int32:  # packed 8-bit values, low byte first
        lanes = lanes.view(np.uint8).reshape(threads, -1).view(element)
    lanes = lanes.reshape(threads, per_lane)
    return lanes if lanes.dtype == element else convert(lanes, element)


@handles("func.call")
def _builtin_call(compiler, op):
    callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
    match = _BUILTIN.match(callee)
    if match is None:
        raise UnsupportedOp(f"func.call @{callee} (only the MetaX MMA built-ins are executed)", op)
    if compiler.chip in CHIPS and callee not in _descriptor_builtins(compiler.chip):
        raise EmulatorError(f"{callee} is not a matrix instruction of metax:{compiler.chip}", op)
    k, kind = int(match.group(1)), match.group(2)
    element = _ELEMENTS[kind]
    per_lane = k // (WAVE // TILE)
    if len(op.operands) != 3 or len(op.results) != 1:
        raise EmulatorError(f"{callee} takes (B, A, C) and returns D", op)
    c_dtype, c_shape = value_type(op.operands[2].type, op)
    expected = np.dtype(np.int32) if kind == "i8" else np.dtype(np.float32)
    if c_dtype != expected or c_shape != (4,):
        raise EmulatorError(f"{callee} accumulates in vector<4x{'i32' if kind == 'i8' else 'f32'}>, "
                            f"not {op.operands[2].type}", op)
    x_slot, y_slot, c_slot = compiler.slots_of(op.operands)
    out = compiler.slot(op.results[0])

    def step(frame):
        wg, vals = frame.wg, frame.vals
        require_whole_waves(frame, op, callee, WAVE)
        threads = wg.threads
        x = _items(vals[x_slot], threads, element, per_lane)
        y = _items(vals[y_slot], threads, element, per_lane)
        c = np.broadcast_to(vals[c_slot], (threads, 4)).astype(c_dtype)
        d = np.empty((threads, 4), c_dtype)
        for start in range(0, threads, WAVE):
            d[start:start + WAVE] = wave_mma(x[start:start + WAVE], y[start:start + WAVE],
                                             c[start:start + WAVE], k)
        vals[out] = d
    return step


@cache
def _descriptor_builtins(chip: str) -> frozenset[str]:
    from tilemlir.targets import get_target

    return frozenset(row.key("builtin") for row in get_target(f"metax:{chip}").matrix.instructions)
