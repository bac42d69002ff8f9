"""docs/testing.md's out-of-tree lit recipe works as printed: lit runs
examples/lit (its lit.cfg.py and one test) from a temporary copy, finding the
tools through TILEMLIR_BIN, and stops with a message naming the tools it cannot
find."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from conftest import BIN, REPO

RECIPE = REPO / "examples" / "lit"


def lit(folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "lit"), "-v", str(folder)], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


def copy_of_recipe(tmp_path: Path) -> Path:
    folder = tmp_path / "my-tests"
    shutil.copytree(RECIPE, folder, ignore=shutil.ignore_patterns("Output", "__pycache__"))
    return folder


def test_the_recipe_runs_from_a_copy(tmp_path):
    env = {"PATH": "/usr/bin:/bin:/usr/lib/llvm-22/bin", "TILEMLIR_BIN": str(BIN),
           "HOME": os.environ.get("HOME", str(tmp_path))}
    result = lit(copy_of_recipe(tmp_path), env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS: tile-kernels :: gemm.mlir" in result.stdout


def test_missing_tools_are_named(tmp_path):
    # No tilemlir tools on PATH and no TILEMLIR_BIN: lit stops before any test.
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", str(tmp_path))}
    result = lit(copy_of_recipe(tmp_path), env)
    assert result.returncode != 0
    assert ("fatal: cannot find tile-compile, tile-opt, tile-run on PATH or in TILEMLIR_BIN"
            in result.stderr), result.stderr
