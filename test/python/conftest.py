"""Shared helpers for the Python tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


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
