"""Stores in a T.Parallel made one vector store a run (fragment_ops.
contiguous_accesses, guarded_store) only where that keeps their meaning:
under a condition, where it is the row's alone and the branch is safe to
compute whatever it says; with or without one, where nothing after the store
in the body touches its buffer. Each kernel runs in the gfx942
emulator against the reference engine (tile-run)."""

from __future__ import annotations

import re

import pytest
from conftest import run_tool

import tilemlir


def kernel(name: str, element: str, constants: str, body: str) -> str:
    """@name: a 16 x 256 tile of X (64 x 256 `element`) in a fragment, then a
    T.Parallel over it whose body (`body`, indented as written) stores to Y."""
    memref, fragment = f"memref<64x256x{element}>", f"memref<16x256x{element}, #F>"
    return f"""
#F = #gpu.address_space<private>
func.func @{name}(%X: {memref}, %Y: {memref}) {{
  "tile.kernel"() ({{
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c10 = arith.constant 10 : index
    %c16 = arith.constant 16 : index
    %c256 = arith.constant 256 : index
{constants}
    %x = "tile.alloc_fragment"() : () -> {fragment}
    "tile.copy"(%X, %x, %c0, %c0) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}} : ({memref}, {fragment}, index, index) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c256) step (%c1, %c1) {{
{body}
      scf.reduce
    }}
    gpu.yield
  }}) {{grid = array<i64: 1>, threads = 128 : i64}} : () -> ()
  return
}}
"""


# A division in the branch, by the value the condition keeps from being 0.
DIVIDED = kernel("divguard", "i32", "    %z = arith.constant 0 : i32", """\
      %ii = arith.index_cast %i : index to i32
      %keep = arith.cmpi ne, %ii, %z : i32
      scf.if %keep {
        %v = memref.load %x[%i, %j] : memref<16x256xi32, #F>
        %d = arith.divsi %v, %ii : i32
        memref.store %d, %Y[%i, %j] : memref<64x256xi32>
      }""")

# A condition that depends on the column through an scf.if's result.
COLUMN_THROUGH_A_YIELD = kernel("yieldcond", "f32", "    %true = arith.constant true", """\
      %ci = arith.cmpi ult, %i, %c10 : index
      %keep = scf.if %ci -> (i1) {
        %t = arith.cmpi ult, %j, %c10 : index
        scf.yield %t : i1
      } else {
        scf.yield %true : i1
      }
      scf.if %keep {
        %v = memref.load %x[%i, %j] : memref<16x256xf32, #F>
        memref.store %v, %Y[%i, %j] : memref<64x256xf32>
      }""")

ATOMIC = "      %o = memref.atomic_rmw addf %one, %Y[%i, %j] : (f32, memref<64x256xf32>) -> f32"

# The stored buffer is also updated atomically after the store.
ATOMIC_AFTER = kernel("atomic", "f32", "    %one = arith.constant 1.0 : f32", """\
      %keep = arith.cmpi ult, %i, %c10 : index
      scf.if %keep {
        %v = memref.load %x[%i, %j] : memref<16x256xf32, #F>
        memref.store %v, %Y[%i, %j] : memref<64x256xf32>
      }
""" + ATOMIC)

# The same with no condition: a store that an atomic of its buffer follows.
ATOMIC_AFTER_A_STORE = kernel("atomic_after_a_store", "f32", "    %one = arith.constant 1.0 : f32", """\
      %v = memref.load %x[%i, %j] : memref<16x256xf32, #F>
      memref.store %v, %Y[%i, %j] : memref<64x256xf32>
""" + ATOMIC)


@pytest.mark.parametrize("text", [DIVIDED, COLUMN_THROUGH_A_YIELD, ATOMIC_AFTER, ATOMIC_AFTER_A_STORE],
                         ids=["division", "column-through-a-yield", "atomic-after", "atomic-after-a-store"])
def test_element_stores_where_one_vector_store_would_be_wrong(tmp_path, text):
    gpu = tilemlir.compile(text, target="amdgpu:gfx942", emit="gpu").artifacts["gpu"]
    assert not re.search(r"vector\.store %\S+, %arg1", gpu)
    source = tmp_path / "kernel.mlir"
    source.write_text(text)
    result = run_tool("tile-run", "--engine", "emulator", "--target", "amdgpu:gfx942", str(source))
    assert result.returncode == 0 and "PASS" in result.stdout, result.stdout + result.stderr


# Rows of a remapped image (a producer writing the padded rows a shifted
# convolution reads): row (i // 3) * 4 + i % 3 + 1, by constants.
REMAPPED_ROWS = kernel("remapped", "f32", "    %c3 = arith.constant 3 : index\n    %c4 = arith.constant 4 : index", """\
      %keep = arith.cmpi ult, %i, %c10 : index
      scf.if %keep {
        %q = arith.divsi %i, %c3 : index
        %r = arith.remsi %i, %c3 : index
        %s = arith.muli %q, %c4 : index
        %t = arith.addi %s, %r : index
        %row = arith.addi %t, %c1 : index
        %v = memref.load %x[%i, %j] : memref<16x256xf32, #F>
        memref.store %v, %Y[%row, %j] : memref<64x256xf32>
      }""")


def test_a_branch_dividing_by_constants_is_one_vector_store_a_run(tmp_path):
    """A division by a constant other than 0 and -1 is defined for every
    dividend (fragment_ops.safe_division), so computing it whatever the
    condition says is safe: the row's store is one vector store."""
    gpu = tilemlir.compile(REMAPPED_ROWS, target="amdgpu:gfx942", emit="gpu").artifacts["gpu"]
    assert re.search(r"vector\.store %\S+, %arg1", gpu)
    for divisor in ("0", "-1"):  # a divisor that may be undefined keeps element stores
        text = REMAPPED_ROWS.replace("%c3 = arith.constant 3", f"%c3 = arith.constant {divisor}")
        assert not re.search(r"vector\.store %\S+, %arg1",
                             tilemlir.compile(text, target="amdgpu:gfx942", emit="gpu").artifacts["gpu"])
    source = tmp_path / "kernel.mlir"
    source.write_text(REMAPPED_ROWS)
    result = run_tool("tile-run", "--engine", "emulator", "--target", "amdgpu:gfx942", str(source))
    assert result.returncode == 0 and "PASS" in result.stdout, result.stdout + result.stderr
