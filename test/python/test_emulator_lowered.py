"""GEMMs compiled by the AMD path (`tilemlir.compile(..., emit="gpu")`) and
executed by the emulator, against float64 NumPy: the emulator as the judge of
what `tile-lower-to-gpu` produces (DESIGN section 7)."""

from __future__ import annotations

import numpy as np
import pytest
from emulator_kernels import NUMPY, random_values
from mlir import ir

import tilemlir
from tilemlir.dialects.tile import make_context
from tilemlir.runtime.dtypes import info
from tilemlir.runtime.emulator import emulate


def whole_problem_gemm(m: int, n: int, k: int, ab: str, c: str, acc: str, chip: str) -> str:
    zero = "0" if c == "i32" else "0.0"
    a_t, b_t, c_t = f"memref<{m}x{k}x{ab}>", f"memref<{k}x{n}x{ab}>", f"memref<{m}x{n}x{c}>"
    return f"""module attributes {{tile.target = "amdgpu:{chip}"}} {{
  func.func @gemm(%A: {a_t}, %B: {b_t}, %C: {c_t}) {{
    %zero = arith.constant {zero} : {c}
    "tile.fill"(%C, %zero) : ({c_t}, {c}) -> ()
    "tile.gemm"(%A, %B, %C) {{accum_dtype = {acc}, transpose_a = false, transpose_b = false}}
        : ({a_t}, {b_t}, {c_t}) -> ()
    return
  }}
}}
"""


CASES = [
    # chip, m, n, k, A/B type, C type, accumulator
    ("gfx942", 256, 256, 256, "f16", "f32", "f32"),  # the performance shape
    ("gfx942", 200, 136, 72, "f16", "f32", "f32"),  # not multiples of the tiles
    ("gfx942", 128, 128, 128, "bf16", "f32", "f32"),
    ("gfx942", 128, 128, 128, "f8E4M3FNUZ", "f16", "f32"),  # the seed's types, smaller
    ("gfx950", 128, 128, 256, "f8E4M3FN", "f16", "f32"),
    ("gfx90a", 128, 128, 64, "f16", "f32", "f32"),
    ("gfx942", 128, 128, 64, "i8", "i32", "i32"),
    ("gfx942", 64, 64, 32, "f32", "f32", "f32"),
    ("gfx942", 64, 64, 32, "f64", "f64", "f64"),
    # The transposed accumulator's vector stores (4 f16 or f32 of a row per
    # lane) at shapes that cut the runs at the edge, for each operand type and C
    # type and chip.
    ("gfx942", 200, 136, 72, "bf16", "bf16", "f32"),
    ("gfx942", 100, 72, 96, "f8E4M3FNUZ", "f32", "f32"),
    ("gfx950", 200, 136, 72, "f16", "f16", "f32"),
    ("gfx950", 100, 72, 128, "f8E4M3FN", "f32", "f32"),
    ("gfx90a", 200, 138, 72, "f16", "f16", "f32"),
    # Edge copies loaded in pieces with no branch (emitter.load_pieces_or_zeros):
    # fp8 rows of 136 (8-byte pieces), f16 rows of 138 and 137 (2 and 1
    # elements), at the defaults of the small shapes of bench/amd_vs_triton.py.
    ("gfx942", 200, 96, 136, "f8E4M3FNUZ", "f16", "f32"),
    ("gfx950", 200, 96, 136, "f8E4M3FN", "f16", "f32"),
    ("gfx942", 72, 137, 138, "f16", "f32", "f32"),
    ("gfx90a", 256, 256, 256, "f16", "f16", "f32"),
    # gfx950's defaults whose B rows take a skewed XOR swizzle (lds_banks.swizzled_byte).
    ("gfx950", 256, 256, 256, "f16", "f16", "f32"),
    ("gfx950", 200, 96, 136, "f16", "f16", "f32"),
]


@pytest.mark.parametrize("chip,m,n,k,ab,c_type,acc", CASES)
def test_lowered_gemm_matches_numpy(chip, m, n, k, ab, c_type, acc):
    text = whole_problem_gemm(m, n, k, ab, c_type, acc, chip)
    gpu = tilemlir.compile(text, emit="gpu").artifacts["gpu"]
    rng = np.random.default_rng(m * n + k)
    a, b = random_values((m, k), ab, rng), random_values((k, n), ab, rng)
    c = np.full((m, n), 3, NUMPY[c_type])  # the fill must overwrite it
    with make_context():
        emulate(ir.Operation.parse(gpu, source_name="gemm.gpu.mlir"), "gemm", [a, b, c], chip=chip)
    if c_type == "i32":
        np.testing.assert_array_equal(c, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32))
        return
    exact = a.astype(np.float64) @ b.astype(np.float64)
    magnitude = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    unit = 2.0**-53 if acc == "f64" else 2.0**-24
    out = info(c.dtype)
    bound = (k + 1) * unit * magnitude + out.unit_roundoff * np.abs(exact) * 1.01 + \
        out.smallest_subnormal
    error = np.abs(c.astype(np.float64) - exact)
    assert (error <= bound).all(), f"max error {error.max()} (bound there {bound.flat[error.argmax()]})"
