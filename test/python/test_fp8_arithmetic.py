"""Arithmetic on 8-bit float fragments (a tile.reduce of fp8 values,
element-wise math over them): tile-lower-to-gpu computes each op in f32 and
rounds its result back to the fragment's type (lower_to_gpu.api.widen_fp8_arithmetic),
converting in hardware where the chip converts that format and in software
elsewhere; lane exchanges move fp8 as its bits. The SIMT emulator on the
lowered IR agrees with NumPy (max/min exactly) and with the reference engine,
and the AMD kernels compile to ISA; NVIDIA, whose code generator encodes no
fp8, refuses with a located error."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from kernel_text import reduce_kernel

import tilemlir
from tilemlir.diagnostics import UserError
from tilemlir.runtime import run

ROWS, COLS = 8, 128
NUMPY = {"max": np.fmax, "min": np.fmin}
# (target, fp8 type): the chip's own format (converted in hardware) and the other (in software).
TARGETS = [("amdgpu:gfx942", "f8E4M3FNUZ"), ("amdgpu:gfx942", "f8E4M3FN"), ("amdgpu:gfx950", "f8E4M3FN"),
           ("amdgpu:gfx950", "f8E5M2"), ("amdgpu:gfx90a", "f8E4M3FNUZ"), ("amdgpu:gfx1100", "f8E5M2FNUZ"),
           ("metax:xcore1000", "f8E4M3FN")]
ML = {"f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz, "f8E4M3FN": ml_dtypes.float8_e4m3fn,
      "f8E5M2": ml_dtypes.float8_e5m2, "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz}


def row_kernel(kind: str, t: str) -> str:
    """Y[i] <- kind over X[i, :], rows spread over two waves of 64 lanes."""
    return reduce_kernel(kind, ROWS, COLS, 1, t).replace("@reduce(", "@row(")


def elementwise_kernel(t: str, name: str = "ew", body: str = "") -> str:
    """@name: X's fp8 fragment rewritten element by element by `body` (from
    %v, the element, to %r, stored back; default Y = X * X - X / 2, each op
    rounded to the type), then stored to Y."""
    body = body or f"""%half = arith.constant 0.5 : {t}
      %s = arith.mulf %v, %v : {t}
      %h = arith.mulf %v, %half : {t}
      %r = arith.subf %s, %h : {t}"""
    x, fx = f"memref<{ROWS}x{COLS}x{t}>", f"memref<{ROWS}x{COLS}x{t}, #F>"
    return f"""#F = #gpu.address_space<private>
func.func @{name}(%X: {x}, %Y: {x}) {{
  "tile.kernel"() ({{
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = arith.constant {ROWS} : index
    %cols = arith.constant {COLS} : index
    %x = "tile.alloc_fragment"() : () -> {fx}
    "tile.copy"(%X, %x, %c0, %c0) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}} : ({x}, {fx}, index, index) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%rows, %cols) step (%c1, %c1) {{
      %v = memref.load %x[%i, %j] : {fx}
      {body}
      memref.store %r, %x[%i, %j] : {fx}
      scf.reduce
    }}
    "tile.copy"(%x, %Y, %c0, %c0) {{operandSegmentSizes = array<i32: 1, 1, 0, 2>}} : ({fx}, {x}, index, index) -> ()
    gpu.yield
  }}) {{grid = array<i64: 1>, threads = 128 : i64}} : () -> ()
  return
}}
"""


def values(t: str, shape) -> np.ndarray:
    return np.random.default_rng(8).uniform(-6, 6, shape).astype(ML[t])


@pytest.mark.parametrize("kind", sorted(NUMPY))
@pytest.mark.parametrize("target, t", TARGETS)
def test_fp8_reductions_match_numpy(kind, target, t):
    x = values(t, (ROWS, COLS))
    got = np.zeros(ROWS, ML[t])
    run(row_kernel(kind, t), "row", [x, got], engine="emulator", target=target)
    want = NUMPY[kind].reduce(x.astype(np.float32), axis=1).astype(ML[t])
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    if target.startswith("amdgpu"):
        assert "v_" in tilemlir.compile(row_kernel(kind, t), target=target, emit="isa").artifact


def exact_rows(t: str) -> np.ndarray:
    """Rows of three nonzero values (+-1, +-2, +-4 at random columns), whose
    sums every fp8 format holds exactly in any order: a wrong lane, a lost
    or doubled element changes the sum."""
    rng = np.random.default_rng(81)
    x = np.zeros((ROWS, COLS), np.float32)
    for row in x:
        row[rng.choice(COLS, 3, replace=False)] = rng.choice([-1, 1], 3) * np.array([1.0, 2.0, 4.0])
    return x.astype(ML[t])


@pytest.mark.parametrize("target, t", TARGETS)
def test_fp8_sums_and_element_wise_math_match(target, t):
    x = exact_rows(t)
    got = np.zeros(ROWS, ML[t])
    run(row_kernel("sum", t), "row", [x, got], engine="emulator", target=target)
    np.testing.assert_array_equal(got.view(np.uint8), x.astype(np.float32).sum(axis=1).astype(ML[t]).view(np.uint8))
    x = values(t, (ROWS, COLS)) * ML[t](0.25)
    reference, emulated = np.zeros_like(x), np.zeros_like(x)
    run(elementwise_kernel(t), "ew", [x, reference], engine="reference")
    run(elementwise_kernel(t), "ew", [x, emulated], engine="emulator", target=target)
    # Each op rounded to the type, in the same order: bit for bit.
    np.testing.assert_array_equal(emulated.view(np.uint8), reference.view(np.uint8))
    if target.startswith("amdgpu"):
        tilemlir.compile(row_kernel("sum", t), target=target, emit="isa")
        tilemlir.compile(elementwise_kernel(t), target=target, emit="isa")


def conversions_kernel(t: str) -> str:
    """Y = float(int(X) * 3) + X as fp8 through f32 and i32: fp8 -> f32
    (extf), -> i32 (fptosi), i32 -> fp8 (sitofp), f32 -> fp8 (truncf)."""
    return elementwise_kernel(t, "cv", f"""%three = arith.constant 3 : i32
      %w = arith.extf %v : {t} to f32
      %n = arith.fptosi %v : {t} to i32
      %m = arith.muli %n, %three : i32
      %f = arith.sitofp %m : i32 to {t}
      %g = arith.extf %f : {t} to f32
      %s = arith.addf %g, %w : f32
      %r = arith.truncf %s : f32 to {t}""")


@pytest.mark.parametrize("target, t", TARGETS)
def test_fp8_conversions_in_element_wise_math_match_the_reference(target, t):
    """extf, truncf, fptosi and sitofp of an fp8 format the chip does not
    convert were refused at the ISA stage on AMD: now `convert`'s software
    conversions, bit for bit with the reference engine."""
    x = values(t, (ROWS, COLS))
    reference, emulated = np.zeros_like(x), np.zeros_like(x)
    run(conversions_kernel(t), "cv", [x, reference], engine="reference")
    run(conversions_kernel(t), "cv", [x, emulated], engine="emulator", target=target)
    np.testing.assert_array_equal(emulated.view(np.uint8), reference.view(np.uint8))
    if target.startswith("amdgpu"):
        tilemlir.compile(conversions_kernel(t), target=target, emit="isa")


def test_nvidia_refuses_fp8_arithmetic_with_a_located_error():
    """At the tile.reduce (line 9 of the kernel), naming the op and the type."""
    with pytest.raises(UserError, match=r"<input>:9:5: error: arith.maxnumf computes f8E4M3FN values: the "
                                        r"target's code generator encodes no fp8 format in a kernel"):
        tilemlir.compile(row_kernel("max", "f8E4M3FN"), target="nvidia:sm_90a", emit="ptx")


def test_maca_cpp_of_fp8_reductions_agrees_with_numpy(tmp_path):
    """The MACA C++ for xcore1500 (fp8 converted in hardware) and xcore1000
    (in software), compiled with g++ and run on the CPU."""
    from maca_programs import build
    from maca_programs import run as run_maca

    t = "f8E4M3FN"
    sources = {f"{kind}_{chip}": tilemlir.compile(row_kernel(kind, t).replace("@row(", f"@{kind}_{chip}("),
                                                  target=f"metax:{chip}", emit="maca").artifact
               for kind in NUMPY for chip in ("xcore1000", "xcore1500")}
    binary = build(sources, tmp_path, flags=("-O0",))
    x = values(t, (ROWS, COLS))
    for name in sources:
        got = np.zeros(ROWS, ML[t])
        run_maca(binary, name, [x, got], tmp_path)
        want = NUMPY[name.split("_")[0]].reduce(x.astype(np.float32), axis=1).astype(ML[t])
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=name)
