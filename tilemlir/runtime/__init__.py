"""Running tile IR: `run(module_or_text, entry, args, engine="reference")`.

    import numpy as np, ml_dtypes
    from tilemlir import runtime
    a = np.ones((64, 32), ml_dtypes.float8_e4m3fnuz); ...
    runtime.run(open("gemm.mlir").read(), "gemm", [a, b, c])   # c is written in place

Engines (DESIGN.md section 7):

* "reference": a NumPy interpreter of tile-level IR, the ground truth every
  later stage is checked against (`tilemlir.runtime.reference` states its
  semantics);
* "emulator" and "device" are not behind `run` yet; asking for them is an
  error. The SIMT emulator itself exists for GPU-level IR
  (`tilemlir.runtime.emulator.emulate`); `run` and `tile-run` do not yet
  compile tile IR down to it.
"""

from __future__ import annotations

import os
from pathlib import Path

from mlir import ir

from tilemlir.diagnostics import UserError

ENGINES = ("reference",)
PLANNED_ENGINES = {
    "emulator": ("run() and tile-run do not drive the SIMT emulator yet; it runs GPU-level IR "
                 "(tilemlir.runtime.emulator.emulate on the output of tile-lower-to-gpu)"),
    "device": "running on a device is not built yet",
}


def check_engine(engine: str) -> None:
    if engine in ENGINES:
        return
    if engine in PLANNED_ENGINES:
        raise UserError(f"engine '{engine}' is not available: {PLANNED_ENGINES[engine]} "
                        f"(available: {', '.join(ENGINES)})")
    known = ", ".join([*ENGINES, *PLANNED_ENGINES])
    raise UserError(f"unknown engine '{engine}' (engines: {known})")


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
    function's results as a list. `target` is accepted for the engines that
    need one; the reference semantics do not depend on it."""
    from tilemlir.runtime.arguments import bind, parameters
    from tilemlir.runtime.reference import Program

    del target  # the reference engine is target-independent
    check_engine(engine)
    module, source = load_module(module_or_text)
    program = Program(module, source=source, precision=precision)
    function = program.function(entry)
    params = parameters(function.op, program.dtype_of, source)
    return program.call(entry, bind(params, args, entry))


__all__ = ["ENGINES", "check_engine", "load_module", "run"]
