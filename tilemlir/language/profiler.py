"""`tilelang.profiler`: timing calls (`do_bench`) and a compiled kernel's
profiler (`JITKernel.get_profiler()`: inputs made from its parameters,
`do_bench`, `assert_allclose` against a reference program).

Times are milliseconds per call, as TileLang's. With torch and a CUDA GPU
they are measured with CUDA events around the calls; otherwise they are
the wall-clock time of the calls (`time.perf_counter`), which for a kernel
running in the emulator or the reference engine is the simulation's time,
not the GPU's.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from tilemlir.language.api import TileLangError
from tilemlir.language.tensor_utils import TensorSupplyType, map_torch_type, torch_assert_close

# Counts are capped so that a slow call (the emulator's) runs a few times, not thousands.
_MAX_WARMUP_CALLS, _MAX_TIMED_CALLS = 100, 1000


# NumPy dtypes torch.from_numpy takes; the narrow floats (bf16, fp8: ml_dtypes) go through f32.
_TORCH_READS = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32,
                                           np.int64, np.uint8, np.uint32, np.bool_))


def _cuda_torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def do_bench(fn: Callable, warmup: float = 25, rep: float = 100, _n_warmup: int = 0, _n_repeat: int = 0,
             quantiles=None, return_mode: str = "mean", *, on_gpu: bool | None = None, **_ignored) -> float:
    """Milliseconds per call of `fn()`: one untimed call (a first call may
    compile or load), `warmup` ms of calls untimed, then `rep` ms of calls
    timed (counts from three calls' time, or `_n_warmup`/`_n_repeat` when
    given). `return_mode`: mean, median, min or max over the calls;
    `quantiles`: a list of those quantiles instead. `on_gpu`: time with CUDA
    events (default: when torch sees a CUDA GPU), else with the host clock
    (a kernel in the emulator or the reference engine runs on the host)."""
    if return_mode not in ("mean", "median", "min", "max"):
        raise TileLangError(f"do_bench: return_mode {return_mode!r} is not one of mean, median, min, max")
    torch = _cuda_torch()
    if on_gpu is False:
        torch = None
    fn()
    if torch is not None:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(3):
        fn()
    if torch is not None:
        torch.cuda.synchronize()
    estimate_ms = max((time.perf_counter() - start) * 1e3 / 3, 1e-6)
    n_warmup = _n_warmup or min(_MAX_WARMUP_CALLS, max(1, int(warmup / estimate_ms)))
    n_repeat = _n_repeat or min(_MAX_TIMED_CALLS, max(1, int(rep / estimate_ms)))
    for _ in range(n_warmup):
        fn()
    times = []
    if torch is not None:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(n_repeat)]
        for begin, end in events:
            begin.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        times = [begin.elapsed_time(end) for begin, end in events]
    else:
        for _ in range(n_repeat):
            begin = time.perf_counter()
            fn()
            times.append((time.perf_counter() - begin) * 1e3)
    samples = np.asarray(times, dtype=np.float64)
    if quantiles is not None:
        values = [float(v) for v in np.quantile(samples, quantiles)]
        return values[0] if len(values) == 1 else values
    return float(getattr(np, return_mode)(samples))


class Profiler:
    """A compiled kernel's profiler (`kernel.get_profiler()`): makes inputs from
    the kernel's parameter shapes and dtypes, times it and checks it against a
    reference program."""

    def __init__(self, kernel, tensor_supply_type: TensorSupplyType = TensorSupplyType.Auto, seed: int = 0):
        self.kernel = kernel
        self.supply = tensor_supply_type
        self.rng = np.random.default_rng(seed)

    def _inputs(self) -> list:
        """Inputs for the kernel's input parameters, in order: uniform in
        [-1, 1] for floats, in [-2, 2] for integers (Auto); torch CUDA tensors
        when the kernel runs on the device, else NumPy arrays."""
        params = self.kernel.built.params
        values = []
        inputs = self.kernel.input_positions()
        for position, p in enumerate(params):
            if position not in inputs:
                continue
            if p.kind == "scalar":
                raise TileLangError(f"the profiler cannot make scalar argument '{p.name}': pass input_tensors=")
            values.append(self._tensor(tuple(p.shape), p.dtype.numpy))
        if self.kernel.engine == "device" and _cuda_torch() is not None:
            import torch

            values = [torch.from_numpy(v if v.dtype in _TORCH_READS else v.astype(np.float32))
                      .to(map_torch_type(params[i].dtype)).cuda() for v, i in zip(values, inputs)]
        return values

    def _tensor(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        kind = self.supply
        integer = np.dtype(dtype).kind in "iu"
        if kind in (TensorSupplyType.Zero, TensorSupplyType.One):
            return np.full(shape, 0 if kind is TensorSupplyType.Zero else 1).astype(dtype)
        if np.dtype(dtype) == np.bool_:  # masks: both values
            return self.rng.integers(0, 2, shape).astype(dtype)
        if np.dtype(dtype) in (np.uint8, np.uint32):  # packed bits: every value
            return self.rng.integers(0, np.iinfo(dtype).max, shape, endpoint=True).astype(dtype)
        if kind in (TensorSupplyType.Normal, TensorSupplyType.Randn) and not integer:
            return self.rng.standard_normal(shape).astype(dtype)
        if integer or kind is TensorSupplyType.Integer:
            return self.rng.integers(-2, 3, shape).astype(dtype)
        return self.rng.uniform(-1.0, 1.0, shape).astype(dtype)

    def run_once(self, input_tensors=None):
        return self.kernel(*(input_tensors if input_tensors is not None else self._inputs()))

    def do_bench(self, func: Callable | None = None, warmup: float = 25, rep: float = 100, n_warmup: int = 0,
                 n_repeat: int = 0, input_tensors=None, **kwargs) -> float:
        """Milliseconds per call of the kernel (or of `func`) on the profiler's inputs."""
        inputs = list(input_tensors) if input_tensors is not None else self._inputs()
        target = func if func is not None else self.kernel
        kwargs.setdefault("on_gpu", self.kernel.engine == "device")
        return do_bench(lambda: target(*inputs), warmup=warmup, rep=rep, _n_warmup=n_warmup,
                        _n_repeat=n_repeat, **kwargs)

    def assert_allclose(self, reference_program: Callable, input_tensors=None, atol: float = 1e-2,
                        rtol: float = 1e-2, max_mismatched_ratio: float = 0.01) -> None:
        """Runs the kernel and `reference_program` on the same inputs and raises
        AssertionError where their outputs differ (tilemlir.language.tensor_utils.torch_assert_close)."""
        inputs = list(input_tensors) if input_tensors is not None else self._inputs()
        got = self.kernel(*inputs)
        want = reference_program(*inputs)
        got_list = list(got) if isinstance(got, (tuple, list)) else [got]
        want_list = list(want) if isinstance(want, (tuple, list)) else [want]
        if len(got_list) != len(want_list):
            raise AssertionError(f"the kernel returns {len(got_list)} outputs, the reference {len(want_list)}")
        for got_one, want_one in zip(got_list, want_list):
            torch_assert_close(got_one, want_one, rtol=rtol, atol=atol, max_mismatched_ratio=max_mismatched_ratio)
