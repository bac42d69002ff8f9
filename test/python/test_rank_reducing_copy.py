"""Rank-reducing tile.copy in the reference engine: a tile cut from (or
stored into) a higher-rank tensor, the window spanning its last dims or the
dims `tile.window` names, extent 1 elsewhere. Expected values come from NumPy
slicing and products written here."""

import numpy as np
import pytest

from tilemlir import runtime
from tilemlir.runtime.dtypes import convert
from tilemlir.runtime.reference import gemm_update

INPUTS = "test/Runtime/Inputs"
SHARED = "#gpu.address_space<workgroup>"
FRAG = "#gpu.address_space<private>"


def test_batched_gemm_on_3d_tensors_matches_numpy(repo):
    rng = np.random.default_rng(7)
    a = convert(rng.uniform(-1, 1, (3, 96, 72)), np.float16)
    b = convert(rng.uniform(-1, 1, (3, 72, 80)), np.float16)
    c = np.full((3, 96, 80), np.nan, np.float16)
    runtime.run(repo / INPUTS / "batched_gemm.mlir", "batched_gemm", [a, b, c])
    # Tiling K in increasing order is bit-identical to one in-order f32 sum per batch.
    for batch in range(3):
        want = gemm_update(a[batch], b[batch], np.zeros((96, 80), np.float32), np.float32)
        assert np.array_equal(c[batch], convert(want, np.float16)), batch
    # And within f16 rounding plus f32 summation of float64 NumPy's batched product.
    exact = np.einsum("bmk,bkn->bmn", a.astype(np.float64), b.astype(np.float64))
    magnitude = np.einsum("bmk,bkn->bmn", np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    bound = 2.0**-11 * np.abs(exact) + 73 * 2.0**-24 * magnitude + 2.0**-25
    assert (np.abs(c.astype(np.float64) - exact) <= bound).all()


# Q[b, rows, h, :] of a [batch, seq, heads, dim] tensor into shared memory
# (tile.window = 1, 3), then through a fragment to O[b, h, rows, :] of a
# [batch, heads, seq, dim] tensor (its last two dims, the default): a
# transpose of Q's middle dims, 4 rows from %r0, rows past either end read
# as 0 and dropped when written.
WINDOW_KERNEL = f"""
func.func @heads(%Q: memref<2x10x3x8xf32>, %O: memref<2x3x10x8xf16>, %r0: index) {{
  "tile.kernel"() ({{
  ^bb0(%h: index, %b: index):
    %c0 = arith.constant 0 : index
    %q = "tile.alloc_shared"() : () -> memref<4x8xf32, {SHARED}>
    %o = "tile.alloc_fragment"() : () -> memref<4x8xf32, {FRAG}>
    "tile.copy"(%Q, %q, %b, %r0, %h, %c0) {{operandSegmentSizes = array<i32: 1, 1, 4, 0>, tile.window = array<i64: 1, 3>}} : (memref<2x10x3x8xf32>, memref<4x8xf32, {SHARED}>, index, index, index, index) -> ()
    "tile.copy"(%q, %o) {{operandSegmentSizes = array<i32: 1, 1, 0, 0>}} : (memref<4x8xf32, {SHARED}>, memref<4x8xf32, {FRAG}>) -> ()
    "tile.copy"(%o, %O, %b, %h, %r0, %c0) {{operandSegmentSizes = array<i32: 1, 1, 0, 4>}} : (memref<4x8xf32, {FRAG}>, memref<2x3x10x8xf16>, index, index, index, index) -> ()
    gpu.yield
  }}) {{grid = array<i64: 3, 2>, threads = 64 : i64}} : () -> ()
  return
}}
"""


@pytest.mark.parametrize("r0", [0, 3, 8, -2, 10])
def test_window_attribute_selects_the_spanned_dims(r0):
    rng = np.random.default_rng(r0 + 5)
    q = rng.uniform(-4, 4, (2, 10, 3, 8)).astype(np.float32)
    o = np.full((2, 3, 10, 8), np.nan, np.float16)
    runtime.run(WINDOW_KERNEL, "heads", [q, o, r0])
    want = np.full((2, 3, 10, 8), np.nan)
    for b in range(2):
        for h in range(3):
            for r in range(4):
                row = r0 + r
                if 0 <= row < 10:  # in bounds of both Q (read) and O (written)
                    want[b, h, row, :] = convert(q[b, row, h, :], np.float16)
    assert np.array_equal(o.astype(np.float64), want, equal_nan=True)


def test_out_of_bounds_rows_of_a_rank_reducing_read_are_zero():
    """A tile cut at rows 8..11 of a 10-row tensor: rows 10 and 11 read 0."""
    text = f"""
func.func @edge(%A: memref<2x10x8xf32>, %T: memref<4x8xf32>) {{
  "tile.kernel"() ({{
  ^bb0(%x: index):
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c0 = arith.constant 0 : index
    %s = "tile.alloc_shared"() : () -> memref<4x8xf32, {SHARED}>
    "tile.copy"(%A, %s, %c1, %c8, %c0) {{operandSegmentSizes = array<i32: 1, 1, 3, 0>}} : (memref<2x10x8xf32>, memref<4x8xf32, {SHARED}>, index, index, index) -> ()
    "tile.copy"(%s, %T, %c0, %c0) {{operandSegmentSizes = array<i32: 1, 1, 0, 2>}} : (memref<4x8xf32, {SHARED}>, memref<4x8xf32>, index, index) -> ()
    gpu.yield
  }}) {{grid = array<i64: 1>, threads = 64 : i64}} : () -> ()
  return
}}
"""
    a = np.arange(160, dtype=np.float32).reshape(2, 10, 8)
    t = np.full((4, 8), np.nan, np.float32)
    runtime.run(text, "edge", [a, t])
    assert np.array_equal(t[:2], a[1, 8:10]) and (t[2:] == 0).all()
