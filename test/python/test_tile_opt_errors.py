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
    "unknown pass": ([SMALL, "-p", "tile-verfy"], None, "did you mean 'tile-verify'"),
    "unknown pass flag": ([SMALL, "--tile-verfy"], None,
                          "unknown flag '--tile-verfy'; did you mean '--tile-verify'?"),
    "unknown flag": ([SMALL, "--mlir-timng"], None, "unknown flag '--mlir-timng'; did you mean '--mlir-timing'?"),
    "unknown single-dash flag": ([SMALL, "-pass-pipelin=cse"], None,
                                 "unknown flag '-pass-pipelin'; did you mean '--pass-pipeline'"),
    "flag that is no pass": ([SMALL, "--no-such-thing-at-all"], None, "unknown flag '--no-such-thing-at-all' (flags"),
    "malformed tile option": ([SMALL, "-p", "tile-verify{x=1}"], None, "unknown option 'x'"),
    "malformed upstream option": ([SMALL, "-p", "cse{x=1}"], None, "invalid options for pass 'cse'"),
    "malformed pipeline": ([SMALL, "-p", "builtin.module(cse"], None, "invalid pass pipeline"),
    "missing input": ([str(INPUTS / "nope.mlir")], None, "could not open input file"),
    "directory input": ([str(INPUTS)], None, "Is a directory"),
    "binary input": ([str(INPUTS / "not-utf8.mlir")], None, "is not UTF-8 text"),
    "unwritable output": ([SMALL, "-o", "/nonexistent-dir/x.mlir"], None, "cannot open output file"),
    "bad flag value": ([SMALL, "-p"], None, "expected one argument"),
}


# These two go through the installed script in a fresh process (its exit status
# itself); the others call the same main() in this one (conftest.run_in_process).
THROUGH_THE_SCRIPT = ("malformed MLIR", "bad flag value")
assert set(THROUGH_THE_SCRIPT) <= set(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_error_exits_one_without_traceback(case, run_in_process):
    args, stdin, message = CASES[case]
    runner = run_tool if case in THROUGH_THE_SCRIPT else run_in_process
    result = runner("tile-opt", *args, stdin=stdin)
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


def _run_with_umask(mask: int, *args: str):
    import os
    import subprocess

    from conftest import BIN

    return subprocess.run([str(BIN / "tile-opt"), *args], capture_output=True, text=True, timeout=120,
                          check=False, preexec_fn=lambda: os.umask(mask))


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664), (0o000, 0o666)])
def test_new_output_file_mode_follows_the_umask(tmp_path: Path, mask, mode):
    out = tmp_path / "out.mlir"
    result = _run_with_umask(mask, SMALL, "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert out.stat().st_mode & 0o777 == mode


def test_replaced_output_file_keeps_its_mode(tmp_path: Path):
    out = tmp_path / "out.mlir"
    out.write_text("old\n")
    out.chmod(0o640)
    result = _run_with_umask(0o077, SMALL, "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert out.stat().st_mode & 0o777 == 0o640
    assert '"tile.gemm"' in out.read_text()


def test_read_only_output_file_is_refused(tmp_path: Path):
    out = tmp_path / "out.mlir"
    out.write_text("keep me\n")
    out.chmod(0o444)
    result = run_tool("tile-opt", SMALL, "-o", str(out))
    assert result.returncode == 1
    assert f"tile-opt: error: output file '{out}' is read-only; refusing to replace it" in result.stderr
    assert out.read_text() == "keep me\n" and out.stat().st_mode & 0o777 == 0o444
    assert [p.name for p in tmp_path.iterdir()] == ["out.mlir"]


@pytest.mark.parametrize("tool,args", [
    ("tile-opt", [SMALL]),
    ("tile-compile", [str(REPO / "examples" / "seed_fp8_gemm.mlir"), "--emit", "gpu"]),
])
def test_symlink_at_the_output_path_is_refused(tmp_path: Path, tool, args):
    target = tmp_path / "target.mlir"
    target.write_text("keep me\n")
    link = tmp_path / "link.mlir"
    link.symlink_to(target)
    result = run_tool(tool, *args, "-o", str(link))
    assert result.returncode == 1
    assert f"{tool}: error: output file '{link}' is a symbolic link; refusing to replace it" in result.stderr
    assert link.is_symlink() and target.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.mlir", "target.mlir"]


def test_output_to_dev_stdout_and_a_pipe(tmp_path: Path):
    import os
    import subprocess
    import threading

    result = run_tool("tile-opt", SMALL, "-o", "/dev/stdout")
    assert result.returncode == 0, result.stderr
    assert '"tile.gemm"' in result.stdout
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    result = run_tool("tile-opt", SMALL, "-o", str(fifo))
    reader.join(timeout=60)
    assert result.returncode == 0, result.stderr
    assert b'"tile.gemm"' in received[0]
    assert subprocess.run(["test", "-p", str(fifo)], check=False).returncode == 0


def test_output_into_a_directory_is_refused(tmp_path: Path):
    result = run_tool("tile-opt", SMALL, "-o", str(tmp_path))
    assert result.returncode == 1
    assert "Is a directory" in result.stderr
    assert list(tmp_path.iterdir()) == []
