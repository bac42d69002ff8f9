"""Bad input never produces a traceback: exact exit status 1, an `error:` line,
and no output file left behind (nor an existing one clobbered)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO, run_tool

INPUTS = REPO / "test" / "Tools" / "tile-opt" / "Inputs"
SMALL = str(INPUTS / "small.mlir")

NARROW = """func.func @f(%A: memref<8x8xf16>, %C: memref<8x8xf16>) {
  "tile.gemm"(%A, %A, %C) {accum_dtype = f16, transpose_a = false, transpose_b = false} : (memref<8x8xf16>, memref<8x8xf16>, memref<8x8xf16>) -> ()
  return
}
"""

CASES = {
    "malformed MLIR": (["-"], "func.func @f( {\n", "<stdin>:1:14: error: expected non-function type"),
    "unknown tile op": (["-"], 'func.func @f() {\n  "tile.bogus"() : () -> ()\n  return\n}\n',
                        "<stdin>:2:3: error: unregistered operation 'tile.bogus'"),
    "IRDL violation": (["-"], ('func.func @f(%A: memref<4xf16>) {\n  "tile.fill"(%A) : (memref<4xf16>) -> ()\n'
                               "  return\n}\n"), "<stdin>:2:3: error: op expects exactly 2 operands"),
    "tile-verify failure": (["-"], NARROW, "<stdin>:2:3: error: tile.gemm: accum_dtype f16 is too narrow"),
    "unknown pass": ([SMALL, "--tile-verfy"], None, "did you mean 'tile-verify'"),
    "malformed tile option": ([SMALL, "-p", "tile-verify{x=1}"], None, "unknown option 'x'"),
    "malformed upstream option": ([SMALL, "-p", "cse{x=1}"], None, "invalid options for pass 'cse'"),
    "malformed pipeline": ([SMALL, "-p", "builtin.module(cse"], None, "invalid pass pipeline"),
    "missing input": ([str(INPUTS / "nope.mlir")], None, "could not open input file"),
    "directory input": ([str(INPUTS)], None, "Is a directory"),
    "binary input": ([str(INPUTS / "not-utf8.mlir")], None, "is not UTF-8 text"),
    "unwritable output": ([SMALL, "-o", "/nonexistent-dir/x.mlir"], None, "cannot open output file"),
    "bad flag value": ([SMALL, "-p"], None, "expected one argument"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_error_exits_one_without_traceback(case):
    args, stdin, message = CASES[case]
    result = run_tool("tile-opt", *args, stdin=stdin)
    assert result.returncode == 1, result.stderr
    assert message in result.stderr
    assert "error:" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout == ""


def test_failed_run_leaves_no_output_file(tmp_path: Path):
    out = tmp_path / "out.mlir"
    result = run_tool("tile-opt", "-", "-o", str(out), stdin=NARROW)
    assert result.returncode == 1
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary left either


def test_failed_run_keeps_existing_output(tmp_path: Path):
    out = tmp_path / "out.mlir"
    out.write_text("previous contents\n")
    result = run_tool("tile-opt", "-", "-o", str(out), stdin=NARROW)
    assert result.returncode == 1
    assert out.read_text() == "previous contents\n"


def test_successful_run_writes_output(tmp_path: Path):
    out = tmp_path / "out.mlir"
    result = run_tool("tile-opt", SMALL, "--canonicalize", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert '"tile.gemm"' in out.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["out.mlir"]


@pytest.mark.parametrize("tool,args", [
    ("tile-opt", [SMALL]),
    ("tile-compile", [str(REPO / "examples" / "seed_fp8_gemm.mlir"), "--emit", "hsaco"]),
])
def test_output_to_a_device_keeps_the_device(tool, args):
    """-o /dev/null writes into the device instead of renaming a file over it."""
    import stat

    result = run_tool(tool, *args, "-o", "/dev/null")
    assert result.returncode == 0, result.stderr
    assert stat.S_ISCHR(Path("/dev/null").stat().st_mode)
