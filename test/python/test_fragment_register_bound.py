"""A fragment one thread cannot hold in its registers is refused by
tile-infer-layout with the numbers, before any code is generated (the
lowering unrolls a thread's elements, and llc's time grows faster than their
count: add + GELU over a 64x64 f32 fragment in one thread ran for minutes and
gigabytes). A fragment at the bound still compiles to correct code."""

from __future__ import annotations

import time

import numpy as np
from conftest import run_tool

from tilemlir import runtime


def add_gelu_one_thread(rows: int, cols: int) -> str:
    """Y = GELU(A + B) (tanh form) over a rows x cols f32 fragment that one
    thread holds, A staged through the fragment, B read from global memory."""
    g = f"memref<{rows}x{cols}xf32>"
    f = f"memref<{rows}x{cols}xf32, #gpu.address_space<private>>"
    return f"""func.func @add_gelu(%A: {g}, %B: {g}, %Y: {g}) {{
  "tile.kernel"() ({{
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %m = arith.constant {rows} : index
    %n = arith.constant {cols} : index
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %k0 = arith.constant 0.7978845608 : f32
    %k1 = arith.constant 0.044715 : f32
    %a = "tile.alloc_fragment"() : () -> {f}
    "tile.copy"(%A, %a, %c0, %c0) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}} : ({g}, {f}, index, index) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%m, %n) step (%c1, %c1) {{
      %x0 = memref.load %a[%i, %j] : {f}
      %y0 = memref.load %B[%i, %j] : {g}
      %x = arith.addf %x0, %y0 : f32
      %x2 = arith.mulf %x, %x : f32
      %x3 = arith.mulf %x2, %x : f32
      %t0 = arith.mulf %x3, %k1 : f32
      %t1 = arith.addf %x, %t0 : f32
      %t2 = arith.mulf %t1, %k0 : f32
      %th = math.tanh %t2 : f32
      %t3 = arith.addf %th, %one : f32
      %t4 = arith.mulf %x, %t3 : f32
      %y = arith.mulf %t4, %half : f32
      memref.store %y, %a[%i, %j] : {f}
      scf.reduce
    }}
    "tile.copy"(%a, %Y, %c0, %c0) {{operandSegmentSizes = array<i32: 1, 1, 0, 2>}} : ({f}, {g}, index, index) -> ()
    gpu.yield
  }}) {{grid = array<i64: 1>, threads = 1 : i64}} : () -> ()
  return
}}
"""


def test_fragment_beyond_registers_is_refused_quickly(tmp_path):
    out = tmp_path / "add_gelu.s"
    start = time.monotonic()
    result = run_tool("tile-compile", "-", "--target", "amdgpu:gfx942", "--emit", "isa", "-o", str(out),
                      stdin=add_gelu_one_thread(64, 64))
    seconds = time.monotonic() - start
    assert result.returncode == 1, result.stderr[-2000:]
    assert result.stderr.startswith(
        "<stdin>:12:10: error: tile-infer-layout: this fragment (64x64xf32) needs 4096 registers per thread "
        "(4096 of its 4096 elements in each of 1 thread, blocked layout); amdgpu:gfx942 has 512 registers "
        "per lane (registers.vgprs_per_lane)"), result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()
    assert seconds < 60, f"refused after {seconds:.1f} s"  # it ran past 6 minutes


def test_fragment_at_the_bound_runs_correctly():
    """512 f32 in one thread, gfx942's 512 registers per lane: accepted, and
    the emulator's result is GELU(A + B)."""
    rng = np.random.default_rng(27)
    a = rng.uniform(-3, 3, (16, 32)).astype(np.float32)
    b = rng.uniform(-3, 3, (16, 32)).astype(np.float32)
    y = np.full((16, 32), np.nan, np.float32)
    runtime.run(add_gelu_one_thread(16, 32), "add_gelu", [a, b, y], engine="emulator", target="amdgpu:gfx942")
    x = a.astype(np.float64) + b
    expected = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
    # f32 arithmetic over ~10 dependent operations, |y| <= 6: a few ulps of 6.
    np.testing.assert_allclose(y, expected, rtol=0, atol=1e-5)
