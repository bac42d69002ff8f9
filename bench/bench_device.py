"""What the GPU-side halves of the bench scripts share (`--run` of gemm.py,
norms.py, attention.py and device_check.py). They run where `import
tilemlir` would pull in MLIR, which the device machine does not have, so
nothing here imports tilemlir: the CUDA launcher is loaded by its path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def load_launcher():
    """tilemlir/runtime/cuda_launch.py, imported by path."""
    path = REPO / "tilemlir" / "runtime" / "cuda_launch.py"
    spec = importlib.util.spec_from_file_location("cuda_launch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class RunLog:
    """`say(text)`: prints a line and, with `out`, writes it to out/name as
    it goes (a run cut off by its time limit keeps its lines)."""

    def __init__(self, out: Path | None, name: str):
        self.file = None
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            self.file = (out / name).open("w", encoding="utf-8")

    def __call__(self, text: str) -> None:
        print(text, flush=True)
        if self.file is not None:
            self.file.write(text + "\n")
            self.file.flush()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
