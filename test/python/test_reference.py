"""Semantics of the reference engine (tilemlir.runtime.reference), op by op, on
small programs. Expected values come from scalar loops or closed forms written
here, independent of the engine's vectorized code."""

import math

import ml_dtypes
import numpy as np
import pytest

from tilemlir import runtime
from tilemlir.runtime.arguments import ArgumentError
from tilemlir.runtime.dtypes import convert
from tilemlir.runtime.reference import Program, RunError, gemm_update, reduce_along

F8 = ml_dtypes.float8_e4m3fnuz
SHARED = "#gpu.address_space<workgroup>"
FRAG = "#gpu.address_space<private>"


def run(text, entry, *args, **options):
    return runtime.run(text, entry, list(args), **options)


def run_both_ways(text, entry, make_args):
    """Runs with scf.parallel vectorized and as loops; both must agree bit for bit."""
    results = []
    for vectorize in (True, False):
        module, source = runtime.load_module(text)
        args = make_args()
        Program(module, source=source, vectorize=vectorize).call(entry, args)
        results.append(args)
    for fast, slow in zip(*results):
        assert np.array_equal(fast, slow, equal_nan=True)
    return results[0]


# ---------------------------------------------------------------------------
# tile.gemm
# ---------------------------------------------------------------------------

def sequential_gemm(a, b, c, accum=np.float32):
    """Element by element, k in order, every product and sum rounded to `accum`."""
    out = np.empty(c.shape, np.float64)
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            acc = accum(c[i, j])
            for k in range(a.shape[1]):
                acc = accum(acc + accum(accum(a[i, k]) * accum(b[k, j])))
            out[i, j] = acc
    return out


def test_gemm_sums_in_order_in_the_accumulator_type():
    rng = np.random.default_rng(1)
    # Magnitudes spread over 2**-20 .. 2**20 so that the order of the f32 sums matters.
    a = (rng.standard_normal((3, 37)) * 2.0 ** rng.integers(-20, 20, (3, 37))).astype(np.float32)
    b = rng.standard_normal((37, 4)).astype(np.float32)
    c = rng.standard_normal((3, 4)).astype(np.float32)
    got = gemm_update(a, b, c, np.float32)
    assert np.array_equal(got, sequential_gemm(a, b, c).astype(np.float32))
    assert not np.array_equal(got, (c.astype(np.float64) + a.astype(np.float64) @ b).astype(np.float32))


def test_gemm_fp8_products_are_exact_and_c_keeps_its_type():
    rng = np.random.default_rng(2)
    a = convert(rng.uniform(-1, 1, (4, 50)), F8)
    b = convert(rng.uniform(-1, 1, (50, 3)), F8)
    c = convert(rng.uniform(-4, 4, (4, 3)), np.float16)
    got = gemm_update(a, b, c, np.float32)  # whole-problem form: f16 C, f32 sums
    want = convert(sequential_gemm(a.astype(np.float32), b.astype(np.float32), c), np.float16)
    assert got.dtype == np.float16 and np.array_equal(got, want)


def test_gemm_narrow_accumulator_rounds_every_step():
    a = np.full((1, 4), 1.0, np.float16)
    b = np.array([[2048.0], [1.0], [1.0], [1.0]], np.float16)
    c = np.zeros((1, 1), np.float16)
    # In f16, 2048 + 1 rounds back to 2048 (ties to even) at every step.
    assert gemm_update(a, b, c, np.float16)[0, 0] == 2048.0
    assert gemm_update(a, b, c.astype(np.float32), np.float32)[0, 0] == 2051.0


def test_integer_gemm_is_exact_and_wraps():
    a = np.array([[2**20, 3]], np.int32)
    b = np.array([[2**12], [5]], np.int32)
    c = np.array([[7]], np.int32)
    want = ((2**32 + 15 + 7 + 2**31) % 2**32) - 2**31
    assert gemm_update(a, b, c, np.int32)[0, 0] == want
    rng = np.random.default_rng(3)
    a8 = rng.integers(-128, 128, (5, 70)).astype(np.int8)
    b8 = rng.integers(-128, 128, (70, 6)).astype(np.int8)
    c32 = np.zeros((5, 6), np.int32)
    assert np.array_equal(gemm_update(a8, b8, c32, np.int32), a8.astype(np.int64) @ b8.astype(np.int64))


GEMM_KERNEL = f"""
func.func @k(%A: memref<40x24xbf16>, %B: memref<32x24xbf16>, %C: memref<40x32xf32>) {{
  "tile.kernel"() ({{
  ^bb0(%bx: index, %by: index):
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0.0 : f32
    %a = "tile.alloc_shared"() : () -> memref<16x24xbf16, {SHARED}>
    %b = "tile.alloc_shared"() : () -> memref<16x24xbf16, {SHARED}>
    %acc = "tile.alloc_fragment"() : () -> memref<16x16xf32, {FRAG}>
    "tile.fill"(%acc, %zero) : (memref<16x16xf32, {FRAG}>, f32) -> ()
    %row = arith.muli %by, %c16 : index
    %col = arith.muli %bx, %c16 : index
    %c0 = arith.constant 0 : index
    "tile.copy"(%A, %a, %row, %c0) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}} : (memref<40x24xbf16>, memref<16x24xbf16, {SHARED}>, index, index) -> ()
    "tile.copy"(%B, %b, %col, %c0) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}} : (memref<32x24xbf16>, memref<16x24xbf16, {SHARED}>, index, index) -> ()
    "tile.gemm"(%a, %b, %acc) {{accum_dtype = f32, transpose_a = false, transpose_b = true}} : (memref<16x24xbf16, {SHARED}>, memref<16x24xbf16, {SHARED}>, memref<16x16xf32, {FRAG}>) -> ()
    "tile.copy"(%acc, %C, %row, %col) {{operandSegmentSizes = array<i32: 1, 1, 0, 2>}} : (memref<16x16xf32, {FRAG}>, memref<40x32xf32>, index, index) -> ()
    gpu.yield
  }}) {{grid = array<i64: 2, 3>, threads = 64 : i64}} : () -> ()
  return
}}
"""


def test_gemm_kernel_with_transposed_b_and_edge_blocks():
    rng = np.random.default_rng(4)
    a = convert(rng.uniform(-1, 1, (40, 24)), ml_dtypes.bfloat16)
    b = convert(rng.uniform(-1, 1, (32, 24)), ml_dtypes.bfloat16)
    c = np.full((40, 32), 99.0, np.float32)
    run(GEMM_KERNEL, "k", a, b, c)
    assert np.array_equal(c, sequential_gemm(a, b.T, np.zeros((40, 32))).astype(np.float32))


# ---------------------------------------------------------------------------
# tile.copy, tile.fill, allocation, the grid
# ---------------------------------------------------------------------------

COPY_KERNEL = f"""
func.func @copy(%src: memref<5x7xf32>, %dst: memref<6x6xf8E4M3FNUZ>, %i: index, %j: index, %p: index, %q: index) {{
  "tile.kernel"() ({{
  ^bb0(%bx: index):
    %t = "tile.alloc_fragment"() : () -> memref<4x4xf32, {FRAG}>
    "tile.copy"(%src, %t, %i, %j) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}} : (memref<5x7xf32>, memref<4x4xf32, {FRAG}>, index, index) -> ()
    "tile.copy"(%t, %dst, %p, %q) {{operandSegmentSizes = array<i32: 1, 1, 0, 2>}} : (memref<4x4xf32, {FRAG}>, memref<6x6xf8E4M3FNUZ>, index, index) -> ()
    gpu.yield
  }}) {{grid = array<i64: 1>, threads = 64 : i64}} : () -> ()
  return
}}
"""


@pytest.mark.parametrize("i, j, p, q", [(0, 0, 0, 0), (3, 5, 4, 3), (-2, -1, -1, 4), (9, 9, 1, 1), (1, 2, 7, 0)])
def test_copy_windows_read_zero_and_drop_writes_out_of_bounds(i, j, p, q):
    src = (np.arange(35, dtype=np.float32).reshape(5, 7) + 0.3) / 4
    dst = np.full((6, 6), np.nan, np.float32).astype(F8)
    run(COPY_KERNEL, "copy", src, dst, i, j, p, q)
    window = np.zeros((4, 4))
    for r in range(4):
        for s in range(4):
            if 0 <= i + r < 5 and 0 <= j + s < 7:
                window[r, s] = src[i + r, j + s]
    want = np.full((6, 6), np.nan)
    for r in range(4):
        for s in range(4):
            if 0 <= p + r < 6 and 0 <= q + s < 6:
                want[p + r, q + s] = float(convert(np.array([window[r, s]]), F8)[0])
    assert np.array_equal(dst.astype(np.float64), want, equal_nan=True)


GRID_KERNEL = f"""
func.func @grid(%out: memref<3x4xi32>, %poison: memref<3x4xf32>) {{
  "tile.kernel"() ({{
  ^bb0(%bx: index, %by: index):
    %c10 = arith.constant 10 : index
    %t = arith.muli %by, %c10 : index
    %v = arith.addi %t, %bx : index
    %v32 = arith.index_cast %v : index to i32
    memref.store %v32, %out[%by, %bx] : memref<3x4xi32>
    %f = "tile.alloc_fragment"() : () -> memref<2xf32, {FRAG}>
    %c0 = arith.constant 0 : index
    %x = memref.load %f[%c0] : memref<2xf32, {FRAG}>
    memref.store %x, %poison[%by, %bx] : memref<3x4xf32>
    %one = arith.constant 1.0 : f32
    "tile.fill"(%f, %one) : (memref<2xf32, {FRAG}>, f32) -> ()
    gpu.yield
  }}) {{grid = array<i64: 4, 3>, threads = 64 : i64}} : () -> ()
  return
}}
"""


def test_every_block_runs_with_x_first_and_fresh_allocations():
    out = np.full((3, 4), -1, np.int32)
    poison = np.zeros((3, 4), np.float32)
    run(GRID_KERNEL, "grid", out, poison)
    assert out.tolist() == [[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23]]
    # Each block's fragment is new (filled with the NaN poison), even after an earlier block filled its own.
    assert np.isnan(poison).all()


# ---------------------------------------------------------------------------
# tile.reduce
# ---------------------------------------------------------------------------

def test_reduce_sum_is_sequential_in_the_element_type():
    x = np.array([[2048, 1, 1, 1, 1, 4]], np.float16)
    assert reduce_along(x, 1, "sum", None)[0] == 2052.0  # 2048+1 rounds to 2048 each time; +4
    x32 = np.array([[1e8, 1, -1e8, 1]], np.float32).T
    assert reduce_along(x32, 0, "sum", None)[0] == 1.0
    assert reduce_along(x32, 0, "sum", np.array([3.0], np.float32))[0] == 1.0  # 3 + 1e8 loses the 3


def test_reduce_max_min_nan_semantics_and_fold_destination():
    # max/min: a NaN loses to a number (maxNum); maximum/minimum propagate it.
    x = np.array([[1.0, np.nan, 3.0], [4.0, -2.0, 0.5]], np.float32)
    assert reduce_along(x, 1, "max", None).tolist() == [3.0, 4.0]
    assert reduce_along(x, 1, "min", None).tolist() == [1.0, -2.0]
    assert np.isnan(reduce_along(x, 1, "maximum", None)[0]) and reduce_along(x, 1, "maximum", None)[1] == 4.0
    assert np.isnan(reduce_along(x, 1, "minimum", None)[0]) and reduce_along(x, 1, "minimum", None)[1] == -2.0
    assert reduce_along(x, 0, "max", np.array([np.nan, 0.0, np.nan], np.float32)).tolist() == [4.0, 0.0, 3.0]
    assert reduce_along(x, 0, "max", np.array([9.0, 0.0, 0.0], np.float32)).tolist()[0] == 9.0
    ints = np.array([[100, 100], [100, 100]], np.int8)
    assert reduce_along(ints, 0, "sum", None).tolist() == [-56, -56]  # 200 wraps in i8


REDUCE_KERNEL = f"""
func.func @reduce(%x: memref<4x6xbf16>, %rows: memref<4xbf16>, %cols: memref<6xbf16>) {{
  "tile.kernel"() ({{
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %t = "tile.alloc_fragment"() : () -> memref<4x6xbf16, {FRAG}>
    %r = "tile.alloc_fragment"() : () -> memref<4xbf16, {FRAG}>
    %c = "tile.alloc_fragment"() : () -> memref<6xbf16, {FRAG}>
    "tile.copy"(%x, %t) {{operandSegmentSizes = array<i32: 1, 1, 0, 0>}} : (memref<4x6xbf16>, memref<4x6xbf16, {FRAG}>) -> ()
    "tile.copy"(%rows, %r) {{operandSegmentSizes = array<i32: 1, 1, 0, 0>}} : (memref<4xbf16>, memref<4xbf16, {FRAG}>) -> ()
    "tile.reduce"(%t, %r) {{clear = false, dim = 1 : i64, kind = "sum"}} : (memref<4x6xbf16, {FRAG}>, memref<4xbf16, {FRAG}>) -> ()
    "tile.reduce"(%t, %c) {{clear = true, dim = 0 : i64, kind = "max"}} : (memref<4x6xbf16, {FRAG}>, memref<6xbf16, {FRAG}>) -> ()
    "tile.copy"(%r, %rows) {{operandSegmentSizes = array<i32: 1, 1, 0, 0>}} : (memref<4xbf16, {FRAG}>, memref<4xbf16>) -> ()
    "tile.copy"(%c, %cols) {{operandSegmentSizes = array<i32: 1, 1, 0, 0>}} : (memref<6xbf16, {FRAG}>, memref<6xbf16>) -> ()
    gpu.yield
  }}) {{grid = array<i64: 1>, threads = 64 : i64}} : () -> ()
  return
}}
"""


def test_reduce_in_a_kernel():
    rng = np.random.default_rng(5)
    x = convert(rng.uniform(-8, 8, (4, 6)), ml_dtypes.bfloat16)
    rows = convert(rng.uniform(-8, 8, 4), ml_dtypes.bfloat16)
    cols = np.zeros(6, ml_dtypes.bfloat16)
    want_rows = []
    for i in range(4):
        acc = float(rows[i])
        for j in range(6):
            acc = float(convert(np.array([acc + float(x[i, j])]), ml_dtypes.bfloat16)[0])
        want_rows.append(acc)
    run(REDUCE_KERNEL, "reduce", x, rows, cols)
    assert rows.astype(np.float64).tolist() == want_rows
    assert np.array_equal(cols.astype(np.float32), x.astype(np.float32).max(axis=0))


# ---------------------------------------------------------------------------
# scf.parallel (vectorized and as a loop), scf.for, scf.if, scf.while, func.call
# ---------------------------------------------------------------------------

PARALLEL = """
func.func @p(%x: memref<8x8xf16>, %y: memref<8x8xf16>, %total: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f16
  %sum = scf.parallel (%i, %j) = (%c0, %c1) to (%c8, %c8) step (%c1, %c2) init (%zero) -> f32 {
    %v = memref.load %x[%i, %j] : memref<8x8xf16>
    %pos = arith.cmpf ogt, %v, %half : f16
    %r = scf.if %pos -> (f16) {
      %sq = arith.mulf %v, %v : f16
      memref.store %sq, %y[%i, %j] : memref<8x8xf16>
      scf.yield %sq : f16
    } else {
      %n = arith.negf %v : f16
      scf.yield %n : f16
    }
    %acc = scf.for %k = %c0 to %c3 step %c1 iter_args(%a = %r) -> (f16) {
      %a2 = arith.addf %a, %half : f16
      scf.yield %a2 : f16
    }
    %w = arith.extf %acc : f16 to f32
    scf.reduce(%w : f32) {
    ^bb0(%l: f32, %rr: f32):
      %s = arith.addf %l, %rr : f32
      scf.reduce.return %s : f32
    }
  }
  memref.store %sum, %total[%c0] : memref<1xf32>
  return
}
"""


def test_parallel_vectorized_equals_loop_and_masks_stores():
    rng = np.random.default_rng(6)
    x = convert(rng.uniform(-2, 2, (8, 8)), np.float16)

    def make():
        return [x.copy(), np.zeros((8, 8), np.float16), np.zeros(1, np.float32)]

    _, y, total = run_both_ways(PARALLEL, "p", make)
    want_y = np.zeros((8, 8), np.float16)
    want_total = 0.0
    for i in range(8):
        for j in range(1, 8, 2):
            v = x[i, j]
            r = np.float16(v * v) if v > 0.5 else -v
            if v > 0.5:
                want_y[i, j] = r
            for _ in range(3):
                r = np.float16(r + np.float16(0.5))
            want_total += float(r)
    assert np.array_equal(y, want_y)
    assert total[0] == pytest.approx(want_total, rel=1e-6)


CONTROL = """
func.func private @twice(%v: i32) -> i32 {
  %r = arith.addi %v, %v : i32
  return %r : i32
}
func.func @control(%n: index) -> (i32, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %one) -> (i32) {
    %d = func.call @twice(%a) : (i32) -> i32
    scf.yield %d : i32
  }
  %w = scf.while (%x = %c1) : (index) -> index {
    %small = arith.cmpi ult, %x, %n : index
    scf.condition(%small) %x : index
  } do {
  ^bb0(%y: index):
    %y3 = arith.muli %y, %c1 : index
    %y4 = arith.addi %y3, %y : index
    scf.yield %y4 : index
  }
  return %r, %w : i32, index
}
"""


@pytest.mark.parametrize("n, power, doubled", [(3, 8, 4), (31, -(2**31), 32), (32, 0, 32), (0, 1, 1)])
def test_for_while_call_and_integer_wraparound(n, power, doubled):
    assert run(CONTROL, "control", n) == [power, doubled]


# ---------------------------------------------------------------------------
# arith and math
# ---------------------------------------------------------------------------

INT_OPS = """
func.func @ints(%a: i8, %b: i8) -> (i8, i8, i8, i8, i8, i8, i8, i8, i1, i1, i32, i32, i8) {
  %add = arith.addi %a, %b : i8
  %mul = arith.muli %a, %b : i8
  %div = arith.divsi %a, %b : i8
  %rem = arith.remsi %a, %b : i8
  %fdiv = arith.floordivsi %a, %b : i8
  %cdiv = arith.ceildivsi %a, %b : i8
  %udiv = arith.divui %a, %b : i8
  %shr = arith.shrui %a, %b : i8
  %slt = arith.cmpi slt, %a, %b : i8
  %ult = arith.cmpi ult, %a, %b : i8
  %sext = arith.extsi %a : i8 to i32
  %zext = arith.extui %a : i8 to i32
  %max = arith.maxui %a, %b : i8
  return %add, %mul, %div, %rem, %fdiv, %cdiv, %udiv, %shr, %slt, %ult, %sext, %zext, %max : i8, i8, i8, i8, i8, i8, i8, i8, i1, i1, i32, i32, i8
}
"""


def test_integer_ops_follow_llvm_semantics():
    got = run(INT_OPS, "ints", -7, 2)
    # -7+2, -14, trunc(-3.5), rem sign of dividend, floor, ceil, 249/2, 249>>2, signed <, unsigned <
    assert got == [-5, -14, -3, -1, -4, -3, 124, 62, True, False, -7, 249, -7]
    assert run(INT_OPS, "ints", 100, 100)[:2] == [-56, 16]  # 200 and 10000 wrap in i8


BOOL_OPS = """
func.func @bools(%a: i1, %b: i1) -> (i1, i1, i1, i1, i1, i1) {
  %sgt = arith.cmpi sgt, %a, %b : i1
  %ugt = arith.cmpi ugt, %a, %b : i1
  %maxs = arith.maxsi %a, %b : i1
  %maxu = arith.maxui %a, %b : i1
  %mins = arith.minsi %a, %b : i1
  %minu = arith.minui %a, %b : i1
  return %sgt, %ugt, %maxs, %maxu, %mins, %minu : i1, i1, i1, i1, i1, i1
}
"""


def test_i1_is_minus_one_signed():
    """LLVM's i1: true is 1 unsigned and -1 signed, so signed, true < false."""
    assert run(BOOL_OPS, "bools", True, False) == [False, True, False, True, True, False]
    assert run(BOOL_OPS, "bools", False, True) == [True, False, False, True, True, False]


def test_division_by_zero_is_a_located_error(tmp_path):
    path = tmp_path / "div.mlir"
    path.write_text(INT_OPS)
    with pytest.raises(RunError, match=r"div\.mlir:5:10: error: arith\.divsi: division by zero"):
        runtime.run(path, "ints", [1, 0])


FLOAT_OPS = """
func.func @floats(%a: f32, %b: f32, %c: f32, %h: bf16) -> (f16, bf16, f32, i8, i1, i1, f32, f32, bf16, f32) {
  %t = arith.truncf %a : f32 to f16
  %hb = arith.addf %h, %h : bf16
  %fma = math.fma %a, %b, %c : f32
  %i = arith.fptosi %c : f32 to i8
  %uno = arith.cmpf uno, %a, %c : f32
  %ueq = arith.cmpf one, %a, %a : f32
  %mx = arith.maximumf %a, %b : f32
  %mn = arith.maxnumf %a, %c : f32
  %e = math.exp %h : bf16
  %s = arith.select %uno, %a, %b : f32
  return %t, %hb, %fma, %i, %uno, %ueq, %mx, %mn, %e, %s : f16, bf16, f32, i8, i1, i1, f32, f32, bf16, f32
}
"""


def test_float_ops_round_once_per_op():
    a = b = 1.0 + 2.0**-12  # below half an f16 ulp above 1
    c = -(1.0 + 2.0**-11)
    h = float(ml_dtypes.bfloat16(1.5))
    t, hb, fma, i, uno, one, mx, mn, e, s = run(FLOAT_OPS, "floats", a, b, c, h)
    assert float(t) == 1.0
    assert float(hb) == 3.0 and isinstance(hb, ml_dtypes.bfloat16)
    # a*b + c = 1 + 2**-11 + 2**-24 - 1 - 2**-11 = 2**-24 exactly; unfused f32 would give 0.
    assert float(fma) == 2.0**-24
    assert i == -1  # trunc(-1.0005) toward zero
    assert uno is False and one is False
    assert float(mx) == b and float(mn) == a
    assert float(e) == float(ml_dtypes.bfloat16(math.exp(1.5)))
    assert float(s) == b


def test_nan_comparisons_and_saturating_fptosi():
    _, _, _, i, uno, one, mx, mn, _, _ = run(FLOAT_OPS, "floats", math.nan, 1.0, 1000.0, 1.0)
    assert uno is True and one is False
    assert i == 127  # 1000 saturates (MLIR leaves it undefined)
    assert math.isnan(float(mx))  # maximumf propagates NaN
    assert float(mn) == 1000.0  # maxnumf ignores it


# ---------------------------------------------------------------------------
# memref
# ---------------------------------------------------------------------------

MEMREF_OPS = """
func.func @views(%m: memref<6x8xi32>, %r: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = memref.subview %m[%r, 1] [1, 4] [1, 2] : memref<6x8xi32> to memref<4xi32, strided<[2], offset: ?>>
  %seven = arith.constant 7 : i32
  memref.store %seven, %v[%c1] : memref<4xi32, strided<[2], offset: ?>>
  %tmp = memref.alloca() : memref<4xi32>
  memref.copy %v, %tmp : memref<4xi32, strided<[2], offset: ?>> to memref<4xi32>
  %x = memref.load %tmp[%c0] : memref<4xi32>
  %y = arith.addi %x, %seven : i32
  memref.store %y, %m[%c0, %c0] : memref<6x8xi32>
  %d = memref.dim %v, %c0 : memref<4xi32, strided<[2], offset: ?>>
  return %d : index
}
"""


def test_subview_writes_through_and_dim():
    m = np.arange(48, dtype=np.int32).reshape(6, 8)
    assert run(MEMREF_OPS, "views", m, 3) == [4]
    assert m[3, 3] == 7
    assert m[0, 0] == 3 * 8 + 1 + 7


def test_out_of_bounds_index_is_a_located_error():
    m = np.zeros((6, 8), np.int32)
    with pytest.raises(RunError, match=r"<string>:7:3: error: memref\.store: index 4 is out of bounds "
                                       r"for dimension 0 of size 4"):
        runtime.run(MEMREF_OPS.replace("%v[%c1]", "%v[%r]"), "views", [m, 4])


# ---------------------------------------------------------------------------
# float64 re-execution
# ---------------------------------------------------------------------------

def test_float64_precision_widens_every_float_type():
    text = """
func.func @round(%x: memref<2xf32>, %y: memref<2xf8E4M3FN>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<2xf32>
  %t = arith.truncf %v : f32 to f8E4M3FN
  memref.store %t, %y[%c0] : memref<2xf8E4M3FN>
  return
}
"""
    module, _ = runtime.load_module(text)
    x = np.array([1.1, 0.0])
    y = np.zeros(2)
    Program(module, precision="float64").call("round", [x, y])
    assert y[0] == 1.1
    x8, y8 = x.astype(np.float32), np.zeros(2, ml_dtypes.float8_e4m3fn)
    Program(module).call("round", [x8, y8])
    assert float(y8[0]) == 1.125


# ---------------------------------------------------------------------------
# Scalar arguments and dynamic shapes
# ---------------------------------------------------------------------------

SCALE_ROWS = """
func.func @scale_rows(%X: memref<?x4xf32>, %Y: memref<?x4xf16>, %k: i32, %s: f32, %first: index) {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %rows = memref.dim %X, %c0 : memref<?x4xf32>
    %kf = arith.sitofp %k : i32 to f32
    %factor = arith.mulf %kf, %s : f32
    scf.for %i = %first to %rows step %c1 {
      scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
        %x = memref.load %X[%i, %j] : memref<?x4xf32>
        %y = arith.mulf %x, %factor : f32
        %h = arith.truncf %y : f32 to f16
        memref.store %h, %Y[%i, %j] : memref<?x4xf16>
        scf.reduce
      }
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}
"""


@pytest.mark.parametrize("rows, k, s, first", [(5, 3, np.float32(0.75), 1), (1, -2, 1.5, 0), (7, 0, 2.0, 7)])
def test_scalar_arguments_and_dynamic_extents(rows, k, s, first):
    x = (np.arange(rows * 4, dtype=np.float32).reshape(rows, 4) - 6) / 3
    y = np.full((rows, 4), np.nan, np.float16)
    run(SCALE_ROWS, "scale_rows", x, y, k, s, first)
    factor = np.float32(np.float32(k) * np.float32(s))
    for i in range(rows):
        for j in range(4):
            want = np.float16(np.float32(x[i, j]) * factor) if i >= first else np.nan
            assert np.array_equal(y[i, j], want, equal_nan=True), (i, j)


def test_scalar_arguments_are_checked_against_their_type():
    x, y = np.zeros((2, 4), np.float32), np.zeros((2, 4), np.float16)
    with pytest.raises(ArgumentError, match=r"argument 2 \(%k\): expected i32 \(a scalar\), got float 1.5"):
        run(SCALE_ROWS, "scale_rows", x, y, 1.5, 1.0, 0)
    with pytest.raises(ArgumentError, match=r"argument 1 \(%Y\): expected memref<\?x4xf16> \(float16 array of "
                                        r"shape \(\?, 4\)\), got float16 array of shape \(2, 5\)"):
        run(SCALE_ROWS, "scale_rows", x, np.zeros((2, 5), np.float16), 1, 1.0, 0)
