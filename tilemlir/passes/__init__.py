"""The tile passes: the API for embedding them in another compiler's
PassManager, over the registry by name (registry.py, lazy imports) and the
pipeline-text parser (pipeline_text.py).

    from tilemlir import passes
    pm = PassManager("builtin.module")
    passes.add_pipeline(pm, "tile-verify,func.func(canonicalize)")  # tile and upstream passes
    pm.run(module.operation)

    pm = passes.build_pipeline("builtin.module(tile-verify,cse)")
    passes.print_pipeline("tile-tiling{stages=3},cse")  # text that reproduces it
"""

from __future__ import annotations

from mlir import ir, passmanager

from tilemlir.dialects import tile
from tilemlir.passes.base import PassOptionError, PassState, TilePass
from tilemlir.passes.pipeline_text import (
    PipelineError,
    add_elements,
    parse_pipeline,
    print_elements,
)
from tilemlir.passes.registry import is_tile_pass, make_pass, pass_class, pass_family, pass_names


def add_pipeline(
    pm: passmanager.PassManager,
    pipeline: str,
    *,
    context: ir.Context | None = None,
    overrides: dict | None = None,
) -> passmanager.PassManager:
    """Parses `pipeline` and appends its passes to the caller's `pm`; returns `pm`.

    The textual form is MLIR's (`mlir-opt --pass-pipeline`), with tile passes
    allowed wherever a pass may stand:

        pipeline := element (',' element)*
        element  := PASS ('{' options '}')? | OP_NAME '(' pipeline? ')'

    e.g. `builtin.module(tile-verify,func.func(canonicalize,tile-verify),
    tile-tiling{block=128,128,32 stages=3},cse)`; the `builtin.module(...)`
    around the whole list is optional. Upstream elements go to MLIR's own
    parser unchanged; tile passes (`pass_names()`) take the options
    `tile-opt --list-passes` lists, and may stand inside one anchor such as
    `func.func(...)`, where they run on every op of that name. `print_pipeline`
    prints the same pipeline back in a form this function accepts.

    Contract with the caller:
    - `pm` is anchored on `builtin.module` (PipelineError otherwise);
    - the context (`context`, else the current one) has the tile dialect
      registered (`tilemlir.dialects.register_dialect`) when `pipeline` names a
      tile pass (PipelineError otherwise);
    - the context's multithreading is turned off, for good: nested pipelines
      would otherwise run on MLIR's worker threads and call Python (tile passes,
      diagnostic handlers) without the GIL;
    - `overrides` maps option fields to values set on every tile pass that has
      such a field (e.g. {"target": "amdgpu:gfx942"}, how `--target` works).
    Errors in the text raise PipelineError or PassOptionError (UserErrors)
    before anything is added; a tile pass that fails at run time emits located
    diagnostics and fails `pm.run` with an `ir.MLIRError`, as an upstream pass does.
    """
    context = context or ir.Context.current
    anchor = str(pm).partition("(")[0]
    if anchor != "builtin.module":
        raise PipelineError(f"tile passes are added to a PassManager anchored on 'builtin.module', "
                            f"not on '{anchor}'")
    elements = parse_pipeline(pipeline)
    if _names_tile_pass(elements) and not context.is_registered_operation(tile.OP_NAMES[0]):
        raise PipelineError("the context has no tile dialect; call "
                            "tilemlir.dialects.register_dialect(context) before adding tile passes")
    # Nested pipelines run on MLIR's worker threads and would call Python (tile
    # passes, diagnostic handlers) without the GIL: keep the context single-threaded.
    context.enable_multithreading(False)
    add_elements(pm, elements, context=context, overrides=overrides)
    return pm


# The name this function had first; kept for callers that use it.
add_to = add_pipeline


def _names_tile_pass(elements) -> bool:
    return any(_names_tile_pass(e.children) if e.children is not None else is_tile_pass(e.name)
               for e in elements)


def print_pipeline(
    pipeline: str, *, context: ir.Context | None = None, overrides: dict | None = None
) -> str:
    """`pipeline` as `builtin.module(...)` text that `add_pipeline` (and
    `tile-opt -p`) reads back to the same passes: upstream passes as MLIR
    prints them, every option spelled out; tile passes with the options they
    run with (`overrides` applied; defaults left out); anchors kept. Printing
    the printed text again gives the same text."""
    context = context or ir.Context.current
    return print_elements(parse_pipeline(pipeline), context=context, overrides=overrides)


def build_pipeline(
    pipeline: str, *, context: ir.Context | None = None, overrides: dict | None = None
) -> passmanager.PassManager:
    """A new builtin.module PassManager running `pipeline`."""
    context = context or ir.Context.current
    pm = passmanager.PassManager("builtin.module", context=context)
    return add_pipeline(pm, pipeline, context=context, overrides=overrides)


__all__ = [
    "PassOptionError",
    "PassState",
    "PipelineError",
    "TilePass",
    "add_pipeline",
    "add_to",
    "build_pipeline",
    "is_tile_pass",
    "make_pass",
    "pass_class",
    "pass_family",
    "pass_names",
    "print_pipeline",
]
