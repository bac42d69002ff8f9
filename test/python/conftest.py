"""Shared helpers for the Python tests."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# tile-compile reads the user's tuning database (tile-tune's) from the cache
# folder or $TILEMLIR_TUNING_DB: the tests, and the tools they run, see none
# unless they give one.
os.environ["XDG_CACHE_HOME"] = str(REPO / "test" / "Output" / "no-cache")
os.environ.pop("TILEMLIR_TUNING_DB", None)
# Which target a compile is for when none is named (tilemlir.target.selection):
# the tests see no GPU and no TILEMLIR_TARGET unless they set them.
os.environ["TILEMLIR_GPU"] = "none"
os.environ.pop("TILEMLIR_TARGET", None)
# @tilemlir.jit kernels are kept in a disk cache (tilemlir.runtime.cache): each
# test process has its own, empty at its start, so no run sees another's kernels.
os.environ["TILEMLIR_CACHE_DIR"] = tempfile.mkdtemp(prefix="tilemlir-kernels-")
os.environ.pop("TILEMLIR_CACHE", None)


def run_tool(tool: str, *args: str, stdin: str | None = None, cwd: Path | None = None):
    """Runs one of our console scripts; returns the CompletedProcess."""
    return subprocess.run(
        [str(BIN / tool), *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


@pytest.fixture
def repo() -> Path:
    return REPO
