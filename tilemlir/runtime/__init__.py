"""Running tile IR: `run(module_or_text, entry, args, engine="reference")`.

    import numpy as np, ml_dtypes
    from tilemlir import runtime
    a = np.ones((64, 32), ml_dtypes.float8_e4m3fnuz); ...
    runtime.run(open("gemm.mlir").read(), "gemm", [a, b, c])   # c is written in place

Engines (DESIGN.md section 7):

* "reference": a NumPy interpreter of tile-level IR, the ground truth every
  later stage is checked against (`tilemlir.runtime.reference` states its
  semantics);
* "emulator": compiles tile IR through the AMD path down to GPU-level IR
  (`tilemlir.compile(..., emit="gpu")`) and executes that in the SIMT
  emulator (`tilemlir.runtime.emulator`), every workgroup's threads in
  lockstep, `amdgpu.mfma` by AMD's documented lane layouts, with the
  memory-safety checks on (bounds, LDS and global-memory races). GPU-level
  IR written by hand (a host function launching a `gpu.func`) runs as is;
  it is the only engine that does (the reference engine says so). Needs an
  amdgpu `target` (or the module's `tile.target`).
* "device": compiles tile IR through the nvidia backend to PTX and runs it
  on an NVIDIA GPU through the CUDA driver (`tilemlir.runtime.device`);
  without a GPU it is an error saying so. Needs an nvidia `target`.
"""

from __future__ import annotations

import os
from pathlib import Path

from mlir import ir

from tilemlir.diagnostics import UserError

ENGINES = ("reference", "emulator", "device")


def check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise UserError(f"unknown engine '{engine}' (engines: {', '.join(ENGINES)})")


def load_module(module_or_text, *, verify: bool = True):
    """(module op, SourceBuffer or None) from MLIR text, a path, an ir.Module
    or a builtin.module op. Text and files are parsed in a fresh context with
    the tile dialect and checked by tile-verify."""
    from tilemlir.diagnostics import SourceBuffer

    if isinstance(module_or_text, ir.Module):
        return module_or_text.operation, None
    if isinstance(module_or_text, (ir.Operation, ir.OpView)):
        return module_or_text.operation, None
    if isinstance(module_or_text, os.PathLike):
        path = Path(module_or_text)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or error
            raise UserError(f"could not read '{path}': {reason}") from None
        return parse_source(SourceBuffer(str(path), text), verify=verify)
    if isinstance(module_or_text, str):
        return parse_source(SourceBuffer("<string>", module_or_text), verify=verify)
    raise UserError(f"expected MLIR text, a path or an MLIR module, got {type(module_or_text).__name__}")


def parse_source(source, *, verify: bool = True):
    """Parses a SourceBuffer (locations keep the file's line:col) and runs tile-verify."""
    from tilemlir.diagnostics import (
        Chunk,
        ParseFailure,
        collect_diagnostics,
        mlir_error_diags,
        parse_chunk,
    )
    from tilemlir.dialects import tile
    from tilemlir.passes import build_pipeline
    from tilemlir.runtime.reference import RunError

    context = tile.make_context()
    try:
        module = parse_chunk(Chunk(source, source.text, 1), context)
    except ParseFailure as failure:
        raise RunError(failure.diags, source) from None
    if verify:
        diags: list = []
        with context, collect_diagnostics(context, diags, source):
            try:
                build_pipeline("tile-verify", context=context).run(module)
            except ir.MLIRError as error:
                diags.extend(mlir_error_diags(error, source))
        errors = [d for d in diags if d.severity == "error"]
        if errors:
            raise RunError(errors, source)
    return module, source


def run(module_or_text, entry: str, args, engine: str = "reference", target=None, *,
        precision: str = "exact"):
    """Runs function `entry` on `args` (NumPy arrays, ml_dtypes for fp8/bf16,
    bound to its memref arguments and written in place). Returns the
    function's results as a list. `target` ("amdgpu:gfx942", ...) is what the
    emulator or the device compiles for (None: tile-compile's rule, with the
    emulator's own chip in place of this machine's GPU; `engine_target`); the
    reference semantics do not depend on it."""
    from tilemlir.runtime.arguments import bind, parameters
    from tilemlir.runtime.reference import Program

    check_engine(engine)
    module, source = load_module(module_or_text)
    if engine == "emulator":
        return run_emulator(module, entry, args, target)
    if engine == "device":
        from tilemlir.runtime.device import run_device

        return run_device(module, entry, args, target)
    require_tile_level(module)
    program = Program(module, source=source, precision=precision)
    function = program.function(entry)
    params = parameters(function.op, program.dtype_of, source)
    return program.call(entry, bind(params, args, entry))


def is_gpu_level(module: ir.Operation) -> bool:
    """GPU-level IR: gpu.module kernels launched by a host function, no tile ops."""
    from tilemlir.compiler import has_gpu_module, has_tile_ops

    return has_gpu_module(module) and not has_tile_ops(module)


def require_tile_level(module: ir.Operation) -> None:
    """The reference engine interprets tile-level IR; for GPU-level IR it says so up front."""
    if is_gpu_level(module):
        raise UserError("the reference engine runs tile-level IR; this module is GPU-level IR "
                        "(gpu.launch_func of gpu.module kernels, no tile ops), which the "
                        "emulator runs: use engine 'emulator' with an amdgpu target")


def lower_for_emulator(module: ir.Operation, target=None, options=None):
    """(GPU-level module op, chip): tile IR compiled down through the AMD path
    for `target` (None: `resolve_engine_target`'s rule for the emulator) with
    `options` (CompileOptions); GPU-level IR as it is."""
    from tilemlir.compiler import has_tile_ops
    from tilemlir.runtime.emulator import CHIPS
    from tilemlir.runtime.engine_target import resolve_engine_target

    resolved = resolve_engine_target(module, target, "emulator")
    if resolved.processor not in CHIPS:
        raise UserError(f"the emulator executes the GPU-level IR of the chips it models "
                        f"({', '.join(CHIPS)}); {resolved} is not one of them")
    if not has_tile_ops(module):
        return module, resolved.processor
    from tilemlir.compiler import compile_module

    lowered = module.clone()  # compile_module rewrites its input in place
    compile_module(lowered, resolved, emit="gpu", options=options)
    return lowered, resolved.processor


def run_emulator(module: ir.Operation, entry: str, args, target=None, options=None):
    """Compiles tile IR for `target` with `options` (CompileOptions) and runs
    the GPU-level IR in the SIMT emulator."""
    from tilemlir.runtime.emulator import emulate

    lowered, chip = lower_for_emulator(module, target, options)
    return emulate(lowered, entry, list(args), chip=chip)


__all__ = ["ENGINES", "check_engine", "is_gpu_level", "load_module", "lower_for_emulator",
           "require_tile_level", "run"]
