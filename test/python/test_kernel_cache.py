"""The disk cache of compiled `@tilemlir.jit` kernels (tilemlir.runtime.cache),
and calls on torch CUDA tensors, which reach the kernel without copies."""

from __future__ import annotations

import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from tilemlir import runtime
from tilemlir.language import kernel as kernel_module

pytestmark = pytest.mark.filterwarnings("ignore::tilemlir.language.TileLangWarning")


def scale_kernel(n: int, factor: float, target: str = "amdgpu:gfx942", pass_configs=None):
    """A fresh jit function each time (its own in-memory cache), so only the disk cache is shared."""
    def scale(N, factor):
        @T.prim_func
        def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
                for i in T.Parallel(64):
                    Y[bx * 64 + i] = X[bx * 64 + i] * factor + 1.0

        return main

    jitted = tilemlir.jit(scale, out_idx=[1], target=target, engine="emulator", pass_configs=pass_configs)
    return jitted(n, factor)


def folders(root):
    return sorted(p.name for p in root.glob("*/*") if p.is_dir())


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    root = tmp_path / "kernels"
    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(root))
    monkeypatch.delenv("TILEMLIR_CACHE", raising=False)
    return root


def check(kernel, n, factor):
    x = np.linspace(-2, 2, n, dtype=np.float32)
    product = x.astype(np.float64) * factor
    # Two f32 roundings (or one, fused): each within half an ulp of what it rounds.
    bound = 2.0 ** -24 * (np.abs(product) + np.abs(product + 1.0))
    assert np.all(np.abs(kernel(x) - (product + 1.0)) <= bound)


def test_a_second_process_reuses_the_compiled_kernel(cache_root, monkeypatch):
    check(scale_kernel(128, 3.0), 128, 3.0)
    assert len(folders(cache_root)) == 1

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled again although the kernel is in the disk cache")

    monkeypatch.setattr(runtime, "lower_for_emulator", no_compile)
    check(scale_kernel(128, 3.0), 128, 3.0)


def test_what_decides_the_code_is_in_the_key(cache_root):
    check(scale_kernel(128, 3.0), 128, 3.0)
    check(scale_kernel(192, 3.0), 192, 3.0)        # shapes
    check(scale_kernel(128, 5.0), 128, 5.0)        # a constant in the body
    check(scale_kernel(128, 3.0, "amdgpu:gfx950"), 128, 3.0)
    check(scale_kernel(128, 3.0, pass_configs={"tile-legalize-precision.fp8-fallback": "error"}), 128, 3.0)
    assert len(folders(cache_root)) == 5
    check(scale_kernel(128, 5.0), 128, 5.0)
    assert len(folders(cache_root)) == 5


def test_an_unreadable_entry_is_compiled_again(cache_root):
    check(scale_kernel(128, 3.0), 128, 3.0)
    (entry,) = cache_root.glob("*/*/kernel.gpu.mlir")
    good = entry.read_text()
    entry.write_text("this is not MLIR")
    check(scale_kernel(128, 3.0), 128, 3.0)
    (entry,) = cache_root.glob("*/*/kernel.gpu.mlir")
    assert entry.read_text() == good  # replaced by the recompiled kernel
    entry.unlink()
    check(scale_kernel(128, 3.0), 128, 3.0)
    assert sorted(p.name for p in cache_root.glob("*/*/*")) == ["chip", "kernel.gpu.mlir"]
    assert not list(cache_root.glob("*/.*"))  # no staging or set-aside folder left


def test_the_cache_can_be_turned_off_and_an_unwritable_one_is_skipped(cache_root, monkeypatch, tmp_path):
    monkeypatch.setenv("TILEMLIR_CACHE", "0")
    check(scale_kernel(128, 3.0), 128, 3.0)
    assert not cache_root.exists()
    monkeypatch.delenv("TILEMLIR_CACHE")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(blocker / "kernels"))
    check(scale_kernel(128, 3.0), 128, 3.0)


def test_the_default_folder_follows_xdg(monkeypatch, tmp_path):
    from tilemlir.runtime import cache

    monkeypatch.delenv("TILEMLIR_CACHE_DIR", raising=False)
    monkeypatch.delenv("TILEMLIR_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "tilemlir" / "kernels"


def test_cpu_tensors_take_the_copying_path():
    torch = pytest.importorskip("torch")
    params = scale_kernel(128, 3.0).built.params
    assert kernel_module._cuda_device([torch.zeros(128), None], params) is None
    assert kernel_module._cuda_device([np.zeros(128, np.float32), None], params) is None


def _gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from tilemlir.runtime import cuda_launch

    if not cuda_launch.gpu_available():
        pytest.skip("no CUDA driver")
    return torch


def test_cuda_tensors_reach_the_kernel_and_come_back_as_cuda_tensors(cache_root):
    torch = _gpu()

    def scale(N):
        @T.prim_func
        def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
                for i in T.Parallel(128):
                    Y[bx * 128 + i] = X[bx * 128 + i] * 3.0 + 1.0

        return main

    kernel = tilemlir.jit(scale, out_idx=[1], target="nvidia:sm_90a", engine="device")(1024)
    x = torch.linspace(-2, 2, 1024, device="cuda")
    y = kernel(x)
    assert y.is_cuda and y.dtype == torch.float32 and y.shape == (1024,)
    torch.testing.assert_close(y.double().cpu(), x.double().cpu() * 3 + 1, rtol=0, atol=2.0 ** -20)
    strided = torch.linspace(-2, 2, 2048, device="cuda")[::2]
    torch.testing.assert_close(kernel(strided).cpu(), strided.cpu() * 3 + 1)


def test_a_gpu_this_process_cannot_use_leaves_the_jit_on_the_emulator(monkeypatch):
    """Nothing names a target: a GPU the probe sees but the CUDA driver does not
    give this process, or one no shipped descriptor describes, is no reason to
    fail; the kernel runs in the emulator. A target the user names is kept."""
    from tilemlir.runtime import cuda_launch

    monkeypatch.delenv("TILEMLIR_TARGET", raising=False)
    monkeypatch.delenv("TILEMLIR_ENGINE", raising=False)
    monkeypatch.setattr(cuda_launch, "gpu_available", lambda: False)
    monkeypatch.setenv("TILEMLIR_GPU", "nvidia:sm_90a")
    assert str(kernel_module.resolve_target(None)) == "amdgpu:gfx942"
    assert str(kernel_module.resolve_target("nvidia:sm_90a")) == "nvidia:sm_90a"
    monkeypatch.setattr("tilemlir.targets.selection.probed_gpus", lambda: (("nvidia", "sm_80"),))
    monkeypatch.delenv("TILEMLIR_GPU")
    assert str(kernel_module.resolve_target(None)) == "amdgpu:gfx942"
    with pytest.raises(Exception, match="sm_80"):
        kernel_module.resolve_target(None, engine="device")
