"""The "device" engine: compile tile IR here to PTX, run it on an NVIDIA GPU.

    runtime.run(text, "gemm", [a, b, c], engine="device", target="nvidia:sm_90a")

The module goes through the nvidia backend (`compile_to_ptx`), the PTX is
loaded by the CUDA driver (`cuda_launch`), NumPy arguments are copied to the
GPU (scalars are passed by value), every launch of the entry function runs in
order, and every array is copied back (so outputs are written in place, as with
the other engines). Torch CUDA tensors skip the copies (`launch_tensors`).
Without a GPU and its driver this is an error that says so, before anything
is compiled.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
from mlir import ir

from tilemlir.diagnostics import UserError


def run_device(module: ir.Operation, entry: str, args, target=None, options=None) -> list:
    loaded = load(module, target, options)
    launch(loaded, entry, args)
    return []


def load(module: ir.Operation, target=None, options=None, cache_key: str | None = None):
    """The module compiled to PTX for `target` (with `options`, CompileOptions)
    and loaded by the CUDA driver, ready for `launch` any number of times.
    With `cache_key` (tilemlir.runtime.cache), the PTX and its metadata come
    from the disk cache when they are there, and go there when compiled."""
    from tilemlir.runtime import cache, cuda_launch

    try:
        cuda_launch.driver()
    except cuda_launch.CudaError as error:
        raise UserError(f"engine 'device' needs an NVIDIA GPU: {error}") from None
    cached = cache.load(cache_key, ("kernel.ptx", "kernel.json")) if cache_key else None
    try:
        metadata = json.loads(cached["kernel.json"]) if cached else None
    except ValueError:
        cached = None
    if cached is None:
        ptx, metadata = compile_ptx(module, target, options)
        if cache_key:
            cache.store(cache_key, {"kernel.ptx": ptx, "kernel.json": json.dumps(metadata)})
    else:
        ptx = cached["kernel.ptx"]
    try:
        return cuda_launch.CudaModule(ptx, metadata)
    except cuda_launch.CudaError as error:
        raise UserError(f"engine 'device': {error}") from None


def compile_ptx(module: ir.Operation, target=None, options=None) -> tuple[str, dict]:
    """(PTX, launch metadata) of the module compiled for an NVIDIA `target`."""
    from tilemlir.backends.driver import backend_stages
    from tilemlir.compiler import CompileOptions, compile_module
    from tilemlir.runtime.engine_target import resolve_engine_target

    resolved = resolve_engine_target(module, target)
    if "ptx" not in [stage.name for stage in backend_stages(resolved.family)]:
        raise UserError(f"engine 'device' runs PTX through the CUDA driver; the {resolved.family} "
                        f"backend of {resolved} emits no PTX (give --target nvidia:sm_90a)")
    lowered = module.clone()  # the driver rewrites its input in place
    options = dataclasses.replace(options or CompileOptions(), report=True)
    result = compile_module(lowered.operation, resolved, emit="ptx", options=options)
    metadata = {key: result.report[key] for key in ("target", "functions")}
    return result.artifacts["ptx"], metadata


def launch(loaded, entry: str, args) -> None:
    """Runs `entry` of a loaded module on `args`: arrays are copied to the GPU
    and back (written in place), scalars passed by value."""
    from tilemlir.runtime import cuda_launch

    try:
        buffers = [cuda_launch.DeviceArray(a) for a in args if isinstance(a, np.ndarray)]
        device_args, next_buffer = [], iter(buffers)
        for a in args:
            device_args.append(next(next_buffer) if isinstance(a, np.ndarray) else a)
        try:
            loaded.launch(entry, device_args, stream=0)
            for buffer in buffers:
                buffer.copy_back()
        finally:
            for buffer in buffers:
                buffer.free()
    except cuda_launch.CudaError as error:
        raise UserError(f"engine 'device': {error}") from None


def launch_tensors(loaded, entry: str, args, stream: int | None = None) -> None:
    """Runs `entry` of a loaded module on torch CUDA tensors (and scalars) as
    they are, on `stream` (default: torch's current stream), without waiting."""
    from tilemlir.runtime import cuda_launch

    try:
        launcher = loaded.tensor_launcher(entry)
        if launcher is None:
            loaded.launch(entry, args, stream=stream)
        else:
            launcher(args, cuda_launch.torch_stream() if stream is None else stream)
    except cuda_launch.CudaError as error:
        raise UserError(f"engine 'device': {error}") from None
