"""tile.reduce's NaN semantics (issue 29): on floats `max`/`min` are IEEE
754-2008 maxNum/minNum, as TileLang's T.reduce_max and Triton's tl.max are by
default (a NaN operand loses to a number; NaN only when every operand is NaN:
NumPy's fmax/fmin), and `maximum`/`minimum` propagate NaN (np.maximum/minimum).
The reference engine, the SIMT emulator on the lowered IR of an AMD and a
MetaX chip, and the MetaX MACA C++ run on the CPU all agree with NumPy, bit
for bit, on rows holding NaNs in every position a reduction step can meet
them (within a thread, across lanes, across waves, in the folded old value)."""

from __future__ import annotations

import numpy as np
import pytest
from maca_programs import build
from maca_programs import run as run_maca

import tilemlir
from tilemlir.runtime import run

# (rows, cols) over 128 threads: 64x64 keeps each row in one wave (in-thread
# and shuffle steps); 8x512 spreads a row over both waves (and the scratch).
SHAPES = [(64, 64), (8, 512)]
NUMPY = {"max": np.fmax, "min": np.fmin, "maximum": np.maximum, "minimum": np.minimum}


def kernel(kind: str, rows: int, cols: int) -> str:
    """Y[i] <- kind(Y0[i], X[i, 0], ..., X[i, cols-1]): a fragment over two
    waves, reduced along its rows with clear = false."""
    x, y = f"memref<{rows}x{cols}xf32>", f"memref<{rows}xf32>"
    fx, fy = f"memref<{rows}x{cols}xf32, #F>", f"memref<{rows}xf32, #F>"
    return f"""#F = #gpu.address_space<private>
func.func @row_{kind}(%X: {x}, %Y0: {y}, %Y: {y}) {{
  "tile.kernel"() ({{
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %x = "tile.alloc_fragment"() : () -> {fx}
    %y = "tile.alloc_fragment"() : () -> {fy}
    "tile.copy"(%X, %x, %c0, %c0) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}} : ({x}, {fx}, index, index) -> ()
    "tile.copy"(%Y0, %y, %c0) {{operandSegmentSizes = array<i32: 1, 1, 1, 0>}} : ({y}, {fy}, index) -> ()
    "tile.reduce"(%x, %y) {{clear = false, dim = 1 : i64, kind = "{kind}"}} : ({fx}, {fy}) -> ()
    "tile.copy"(%y, %Y, %c0) {{operandSegmentSizes = array<i32: 1, 1, 0, 1>}} : ({fy}, {y}, index) -> ()
    gpu.yield
  }}) {{grid = array<i64: 1>, threads = 128 : i64}} : () -> ()
  return
}}
"""


def inputs(rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of numbers with NaNs: none, one at spread columns (with 64x64,
    row c + 1 has its NaN in column c, so every in-thread and shuffle step
    meets one), every column NaN (folded into a number, and into a NaN), and
    scattered; old values NaN on every third row but the first."""
    rng = np.random.default_rng(29)
    x = rng.uniform(-4, 4, (rows, cols)).astype(np.float32)
    for r in range(rows - 4):
        x[r + 1, r * cols // (rows - 4)] = np.nan
    x[rows - 3] = np.nan
    x[rows - 2] = np.nan
    x[rows - 1, rng.choice(cols, 9, replace=False)] = np.nan
    y = rng.uniform(-4, 4, rows).astype(np.float32)
    y[3::3] = np.nan  # row 0 is free of NaN
    y[rows - 2] = np.nan  # a row of NaNs folded into a NaN
    return x, y


def expected(kind: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return NUMPY[kind].reduce(np.concatenate([y[:, None], x], axis=1), axis=1)


def check(kind: str, got: np.ndarray, x: np.ndarray, y: np.ndarray, what: str) -> None:
    want = expected(kind, x, y)
    np.testing.assert_array_equal(got, want, err_msg=f"{what}: kind = {kind}")


@pytest.mark.parametrize("rows, cols", SHAPES)
def test_inputs_tell_the_kinds_apart(rows, cols):
    # Not vacuous: most rows differ between the NaN-ignoring and the
    # NaN-propagating kinds, and one row is NaN even under maxNum.
    x, y = inputs(rows, cols)
    ignoring, propagating = expected("max", x, y), expected("maximum", x, y)
    assert rows // 2 < np.isnan(propagating).sum() < rows and np.isnan(ignoring).sum() == 1
    assert np.isnan(expected("min", x, y)).sum() == np.isnan(ignoring).sum()


@pytest.mark.parametrize("kind", sorted(NUMPY))
@pytest.mark.parametrize("rows, cols", SHAPES)
# gfx942 and gfx950 lower the cross-lane steps differently (DPP and row_bcast +
# readlane; DPP and permlane swaps: backends/amdgpu/cross_lane.py).
@pytest.mark.parametrize("engine, target", [("reference", None), ("emulator", "amdgpu:gfx942"),
                                            ("emulator", "amdgpu:gfx950"), ("emulator", "metax:xcore1000")])
def test_engines_agree_with_numpy(kind, rows, cols, engine, target):
    x, y = inputs(rows, cols)
    got = np.zeros_like(y)
    run(kernel(kind, rows, cols), f"row_{kind}", [x, y, got], engine=engine, target=target)
    check(kind, got, x, y, f"{engine} {target or ''}")


def test_maca_cpp_agrees_with_numpy(tmp_path):
    """The MACA C++ for xcore1000 (fmax/fmin, NaN-propagating helpers),
    compiled with g++ and run on the CPU."""
    rows, cols = SHAPES[1]
    sources = {kind: tilemlir.compile(kernel(kind, rows, cols), target="metax:xcore1000", emit="maca").artifact
               for kind in NUMPY}
    binary = build(sources, tmp_path, flags=("-O0",))
    x, y = inputs(rows, cols)
    for kind in NUMPY:
        got = np.zeros_like(y)
        run_maca(binary, kind, [x, y.copy(), got], tmp_path)
        check(kind, got, x, y, "MACA C++ on the CPU")
