"""The nvidia backend: the sm_90a descriptor, instruction choice, PTX, and (where
a GPU exists) results on the device against float64.

The GPU tests skip cleanly without a GPU or without prepared PTX: the device
machine has no MLIR, so `bench/gemm.py --prepare DIR` compiles the cases here
and `TILEMLIR_NVIDIA_PTX=DIR pytest test/python/test_nvidia.py` runs them there.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PREPARED = os.environ.get("TILEMLIR_NVIDIA_PTX", "")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _gpu() -> bool:
    launcher = _load(REPO / "tilemlir" / "runtime" / "cuda_launch.py", "cuda_launch")
    return launcher.gpu_available()


def _has_mlir() -> bool:
    return importlib.util.find_spec("mlir") is not None


needs_mlir = pytest.mark.skipif(not _has_mlir(), reason="needs the MLIR bindings")
needs_gpu = pytest.mark.skipif(not _gpu() or not PREPARED,
                               reason="needs an NVIDIA GPU and TILEMLIR_NVIDIA_PTX (bench/gemm.py --prepare)")


@needs_mlir
def test_descriptor_facts():
    from tilemlir.backends import get_target

    target = get_target("nvidia:sm_90a")
    assert (target.compute.wave_size, target.compute.compute_units) == (32, 132)
    assert target.memory.shared_bytes_per_workgroup == 232448
    assert target.peak_tflops("f16") == 989.4 and target.peak_tflops("f8E4M3FN") == 1978.9
    first = target.mma_candidates("f8E4M3FN", "f8E4M3FN", "f32")[0]
    assert (first.m, first.n, first.k) == (16, 8, 32)


@needs_mlir
def test_select_mma_skips_unlowered_wgmma():
    from tilemlir.backends import get_target
    from tilemlir.passes.common import GemmShape
    from tilemlir.passes.select_mma import choose

    shape = GemmShape(128, 128, 32, "f16", "f16", "f32", "f32", False, False)
    choice, split = choose(get_target("nvidia:sm_90a"), shape, 128)
    assert (choice.m, choice.n, choice.k) == (16, 8, 16) and split == (2, 2)


@needs_mlir
def test_compile_ptx_and_metadata():
    import tilemlir

    text = (REPO / "test" / "Backends" / "nvidia" / "mma-sync-f16.mlir").read_text()
    result = tilemlir.compile(text, target="nvidia:sm_90a", emit="ptx", options={"report": True})
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in result.artifact
    (launch,) = result.report["functions"][0]["launches"]
    assert launch["grid"] == [2, 2, 1] and launch["block"] == [128, 1, 1]
    assert launch["arguments"] == [0, 1, 2] and launch["dynamic_shared_bytes"] > 0


def test_device_engine_without_gpu_is_a_clear_error():
    if _gpu() or not _has_mlir():
        pytest.skip("a GPU is present (or no MLIR)")
    from tilemlir import runtime
    from tilemlir.diagnostics import UserError

    text = (REPO / "test" / "Backends" / "nvidia" / "mma-sync-f16.mlir").read_text()
    with pytest.raises(UserError, match="needs an NVIDIA GPU"):
        runtime.run(text, "gemm", [], engine="device")


def _cases():
    if not PREPARED:
        return []
    manifest = json.loads((Path(PREPARED) / "manifest.json").read_text())
    return manifest["tests"]


@needs_gpu
@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["name"])
def test_gemm_on_the_gpu(case):
    import torch

    bench = _load(REPO / "bench" / "gemm.py", "bench_gemm")
    launcher = bench.load_launcher()
    module = launcher.CudaModule.load(Path(PREPARED) / case["json"])
    for seed in (1, 2):  # fresh inputs each time; output poisoned with NaN
        a, b = bench.make_inputs(case["m"], case["n"], case["k"], case["dtype"], case["transpose_b"], seed)
        c = torch.full((case["m"], case["n"]), float("nan"), device="cuda", dtype=torch.float16)
        module.launch("gemm", [a, b, c])
        torch.cuda.synchronize()
        ok, worst, _ = bench.check(c, a, b, case["transpose_b"], seed)
        assert ok, f"worst err/tolerance {worst:.3f}"
