"""View ops in host functions, in the reference engine: memref.subview,
cast, collapse_shape, expand_shape and reinterpret_cast of function arguments
before a tile.kernel or tile.gemm uses them. A view aliases the argument:
writes through it land in the caller's array. Expected values come from NumPy
indexing written here."""

import numpy as np
import pytest

from tilemlir import runtime
from tilemlir.runtime.dtypes import convert
from tilemlir.runtime.reference import RunError, gemm_update
from tilemlir.tools.tile_run import NOT_CHECKED, main

SHARED = "#gpu.address_space<workgroup>"

# A [batch, rows, K] activation times a shared [K, N] weight, as one 2-D GEMM
# on collapsed views: the result lands in the caller's 3-D C.
COLLAPSED_GEMM = """
func.func @collapsed(%X: memref<3x5x8xf16>, %W: memref<8x6xf16>, %Y: memref<3x5x6xf32>) {
  %x = memref.collapse_shape %X [[0, 1], [2]] : memref<3x5x8xf16> into memref<15x8xf16>
  %y = memref.collapse_shape %Y [[0, 1], [2]] : memref<3x5x6xf32> into memref<15x6xf32>
  %zero = arith.constant 0.0 : f32
  "tile.fill"(%y, %zero) : (memref<15x6xf32>, f32) -> ()
  "tile.gemm"(%x, %W, %y) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<15x8xf16>, memref<8x6xf16>, memref<15x6xf32>) -> ()
  return
}
"""


def test_collapse_shape_views_alias_the_arguments():
    rng = np.random.default_rng(3)
    x = convert(rng.uniform(-1, 1, (3, 5, 8)), np.float16)
    w = convert(rng.uniform(-1, 1, (8, 6)), np.float16)
    y = np.full((3, 5, 6), np.nan, np.float32)
    runtime.run(COLLAPSED_GEMM, "collapsed", [x, w, y])
    want = gemm_update(x.reshape(15, 8), w, np.zeros((15, 6), np.float32), np.float32)
    assert np.array_equal(y, want.reshape(3, 5, 6))


# A flat [rows, K] argument (rows dynamic) seen as [batch, rows/batch, K] through expand_shape
# (batch dynamic), each block copying its batch's first rows into the output
# through a rank-reducing tile.copy; then a subview (through a cast) of the
# output is filled with 7, which must land in the caller's array.
EXPANDED = f"""
func.func @expanded(%A: memref<?x4xf32>, %O: memref<3x2x4xf32>, %batch: index) {{
  %a = memref.expand_shape %A [[0, 1], [2]] output_shape [%batch, 4, 4] : memref<?x4xf32> into memref<?x4x4xf32>
  "tile.kernel"() ({{
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %t = "tile.alloc_shared"() : () -> memref<2x4xf32, {SHARED}>
    "tile.copy"(%a, %t, %b, %c0, %c0) {{operandSegmentSizes = array<i32: 1, 1, 3, 0>}} : (memref<?x4x4xf32>, memref<2x4xf32, {SHARED}>, index, index, index) -> ()
    "tile.copy"(%t, %O, %b, %c0, %c0) {{operandSegmentSizes = array<i32: 1, 1, 0, 3>}} : (memref<2x4xf32, {SHARED}>, memref<3x2x4xf32>, index, index, index) -> ()
    gpu.yield
  }}) {{grid = array<i64: 3>, threads = 64 : i64}} : () -> ()
  %cast = memref.cast %O : memref<3x2x4xf32> to memref<?x2x4xf32>
  %corner = memref.subview %cast[1, 0, 2] [2, 1, 2] [1, 1, 1] : memref<?x2x4xf32> to memref<2x2xf32, strided<[8, 1], offset: 10>>
  %seven = arith.constant 7.0 : f32
  "tile.fill"(%corner, %seven) : (memref<2x2xf32, strided<[8, 1], offset: 10>>, f32) -> ()
  return
}}
"""


def test_expand_shape_cast_and_subview_alias_the_arguments():
    a = np.arange(48, dtype=np.float32).reshape(12, 4)
    o = np.full((3, 2, 4), np.nan, np.float32)
    runtime.run(EXPANDED, "expanded", [a, o, 3])
    want = a.reshape(3, 4, 4)[:, :2, :].copy()
    want[1:3, 0, 2:4] = 7.0
    assert np.array_equal(o, want)


# reinterpret_cast: a [rows, 8] argument seen as its odd rows (stride 16) from
# element 8, then the first 4 columns of those rows doubled through a kernel.
REINTERPRETED = """
func.func @odd_rows(%A: memref<6x8xf32>, %off: index) {
  %odd = memref.reinterpret_cast %A to offset: [%off], sizes: [3, 4], strides: [16, 1] : memref<6x8xf32> to memref<3x4xf32, strided<[16, 1], offset: ?>>
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    scf.parallel (%i, %j) = (%c0, %c0) to (%c3, %c4) step (%c1, %c1) {
      %x = memref.load %odd[%i, %j] : memref<3x4xf32, strided<[16, 1], offset: ?>>
      %y = arith.addf %x, %x : f32
      memref.store %y, %odd[%i, %j] : memref<3x4xf32, strided<[16, 1], offset: ?>>
      scf.reduce
    }
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}
"""


@pytest.mark.parametrize("offset", [8, 12])
def test_reinterpret_cast_views_the_argument_memory(offset):
    a = np.arange(48, dtype=np.float32).reshape(6, 8)
    runtime.run(REINTERPRETED, "odd_rows", [a, offset])
    want = np.arange(48, dtype=np.float32)
    for i in range(3):
        for j in range(4):
            want[offset + 16 * i + j] *= 2
    assert np.array_equal(a.reshape(-1), want)


def test_a_reinterpret_cast_past_the_buffer_is_a_located_error():
    a = np.zeros((6, 8), np.float32)
    with pytest.raises(RunError, match=r"<string>:3:10: error: memref\.reinterpret_cast: offset 16, sizes "
                                       r"\[3, 4\], strides \[16, 1\] reach element 51 of a base buffer of 48 elements"):
        runtime.run(REINTERPRETED, "odd_rows", [a, 16])


def test_collapsing_dims_that_are_not_contiguous_is_a_located_error():
    """A collapse of a column slice would need a copy, so it would not alias.
    (With static strides MLIR's verifier refuses it; a dynamic stride reaches the engine.)"""
    text = """
func.func @f(%A: memref<4x8xf32>, %step: index) {
  %s = memref.subview %A[0, 0] [4, 4] [1, %step] : memref<4x8xf32> to memref<4x4xf32, strided<[8, ?]>>
  %c = memref.collapse_shape %s [[0, 1]] : memref<4x4xf32, strided<[8, ?]>> into memref<16xf32, strided<[?]>>
  return
}
"""
    with pytest.raises(RunError, match=r"<string>:4:8: error: memref\.collapse_shape: the dims it merges or "
                                       r"splits are not contiguous in this 4x4 view \(strides \[8, 1\]\)"):
        runtime.run(text, "f", [np.zeros((4, 8), np.float32), 1])
    runtime.run(text, "f", [np.zeros((4, 8), np.float32), 2])  # every other column: strides [8, 2], fine


def test_a_reinterpret_cast_of_a_buffer_with_no_known_base_is_refused():
    """The source comes from a call: which buffer its offset counts from is unknown."""
    text = """
func.func @id(%A: memref<4x8xf32>) -> memref<4x8xf32> {
  return %A : memref<4x8xf32>
}
func.func @f(%A: memref<4x8xf32>) {
  %a = func.call @id(%A) : (memref<4x8xf32>) -> memref<4x8xf32>
  %r = memref.reinterpret_cast %a to offset: [0], sizes: [32], strides: [1] : memref<4x8xf32> to memref<32xf32>
  return
}
"""
    with pytest.raises(RunError, match=r"<string>:7:8: error: memref\.reinterpret_cast: the reference engine "
                                       r"knows the base buffer of function arguments and allocations \(and views "
                                       r"of them\); this source comes from func\.call"):
        runtime.run(text, "f", [np.zeros((4, 8), np.float32)])


def test_an_unsupported_view_op_is_refused_where_it_is():
    text = """
func.func @f(%A: memref<4x8xf32>) {
  %t = memref.transpose %A (i, j) -> (j, i) : memref<4x8xf32> to memref<8x4xf32, strided<[1, 8]>>
  return
}
"""
    with pytest.raises(RunError, match=r"<string>:3:8: error: 'memref\.transpose' is not supported by the "
                                       r"reference engine"):
        runtime.run(text, "f", [np.zeros((4, 8), np.float32)])


def test_tile_run_finds_outputs_written_through_views(tmp_path, monkeypatch, capsys):
    """%Y is written only through a collapsed view: tile-run sees it as an
    output and, with no oracle for a GEMM on views, says NOT CHECKED."""
    path = tmp_path / "collapsed.mlir"
    path.write_text(COLLAPSED_GEMM)
    assert main([str(path)]) == NOT_CHECKED
    out = capsys.readouterr().out
    assert "argument 2 %Y: memref<3x5x6xf32> (output)" in out
    assert "NOT CHECKED: no float64 oracle for %Y" in out and "PASS" not in out
