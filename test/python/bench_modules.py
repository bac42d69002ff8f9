"""The bench scripts (bench/*.py) as modules for their tests: loaded by path
under the name bench_<name>, with bench/ importable while they load (some
import their neighbours)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load(name: str):
    """bench/<name>.py, executed afresh and registered as sys.modules['bench_<name>']."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module
