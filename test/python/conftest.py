"""Shared helpers for the Python tests."""

from __future__ import annotations

import functools
import importlib
import io
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# One BLAS thread, as the tools take (tilemlir/tools/__init__.py): the tests'
# arrays are small, and two workers share two cores; set before any test
# imports NumPy, and inherited by every process the tests start.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
# tile-compile reads the user's tuning database (tile-tune's) from the cache
# folder or $TILEMLIR_TUNING_DB: the tests, and the tools they run, see none
# unless they give one.
os.environ["XDG_CACHE_HOME"] = str(REPO / "test" / "Output" / "no-cache")
os.environ.pop("TILEMLIR_TUNING_DB", None)
# Which target a compile is for when none is named (tilemlir.targets.selection):
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


TOOL_MODULES = {"tile-opt": "tilemlir.tools.tile_opt", "tile-compile": "tilemlir.tools.tile_compile",
                "tile-run": "tilemlir.tools.tile_run", "tile-tune": "tilemlir.tools.tile_tune"}


@pytest.fixture
def run_in_process(capfd, monkeypatch):
    """run_tool's twin that calls the console script's `main(argv)` in this
    process (no interpreter and MLIR start-up: about 0.5 s less a call): the
    same arguments, stdin and cwd; a CompletedProcess with the status main
    returns (the one the script exits with) and what reached file descriptors
    1 and 2 (native output too). Keep one real subprocess test per tool and
    per kind of exit (run_tool): they are what the installed scripts do."""
    def run(tool: str, *args: str, stdin: str | None = None, cwd: Path | None = None):
        main = importlib.import_module(TOOL_MODULES[tool]).main
        capfd.readouterr()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((stdin or "").encode())))
        with monkeypatch.context() as where:
            if cwd is not None:
                where.chdir(cwd)
            status = main(list(args))
        sys.stdout.flush()
        sys.stderr.flush()
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess([tool, *args], status, out, err)

    return run


SHARED_FIXTURE = re.compile(r"@pytest\.fixture\(scope=[\"'](?:module|package|session)[\"']")


@functools.cache
def _defines_a_shared_fixture(module: str) -> bool:
    path = REPO / module
    return path.suffix == ".py" and path.is_file() and bool(SHARED_FIXTURE.search(path.read_text()))


def xdist_scope(nodeid: str) -> str:
    """A test's unit of work for the workers of `pytest -n 2 --dist loadgroup`
    (make test): its whole module where the module defines a module-scoped
    fixture (a C++ program built with g++, a tuning run: built once, on one
    worker, not once per worker), else the test alone."""
    module = nodeid.split("::", 1)[0]
    return module if _defines_a_shared_fixture(module) else nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` schedules by xdist_scope. (xdist 3.8's own loadgroup
    renames items through `item._nodeid`, which pytest 9 no longer reads, so
    its xdist_group marks group nothing.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByModuleWhereShared(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    return ByModuleWhereShared(config, log)


@pytest.fixture
def repo() -> Path:
    return REPO
