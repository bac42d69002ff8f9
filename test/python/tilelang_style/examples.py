"""Loads examples/python/*.py as modules (the examples are scripts, not a package)."""

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "python"


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"tilemlir_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
