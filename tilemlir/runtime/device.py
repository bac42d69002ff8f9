"""The "device" engine: compile tile IR here to PTX, run it on an NVIDIA GPU.

    runtime.run(text, "gemm", [a, b, c], engine="device", target="nvidia:sm_90a")

The module goes through the nvidia backend (`compile_to_ptx`), the PTX is
loaded by the CUDA driver (`cuda_launch`), NumPy arguments are copied to the
GPU, every launch of the entry function runs in order, and every argument is
copied back (so outputs are written in place, as with the other engines).
Without a GPU and its driver this is an error that says so, before anything
is compiled.
"""

from __future__ import annotations

from mlir import ir

from tilemlir.diagnostics import UserError


def run_device(module: ir.Operation, entry: str, args, target=None) -> list:
    from tilemlir.backends.nvidia.toolchain import compile_to_ptx
    from tilemlir.runtime import cuda_launch
    from tilemlir.target import resolve_target

    try:
        cuda_launch.driver()
    except cuda_launch.CudaError as error:
        raise UserError(f"engine 'device' needs an NVIDIA GPU: {error}") from None
    resolved = resolve_target(module, str(target) if target is not None else None)
    if resolved.family != "nvidia":
        raise UserError(f"engine 'device' runs the nvidia backend's PTX; {resolved} is not an "
                        "nvidia target (give --target nvidia:sm_90a)")
    lowered = module.clone()  # compile_to_ptx rewrites its input in place
    kernel = compile_to_ptx(lowered.operation, resolved)
    try:
        loaded = cuda_launch.CudaModule(kernel.ptx, kernel.metadata)
        buffers = [cuda_launch.DeviceArray(a) for a in args]
        try:
            loaded.launch(entry, buffers, stream=0)
            for buffer in buffers:
                buffer.copy_back()
        finally:
            for buffer in buffers:
                buffer.free()
    except cuda_launch.CudaError as error:
        raise UserError(f"engine 'device': {error}") from None
    return []
