"""The registry of tile passes: each name maps to its class, imported on
first use. The core passes are listed here; every registered backend adds the
passes its manifest declares (`Backend.passes`).

The pipeline parser (pipeline_text.py) and the package's embedding API
(`tilemlir.passes`) both look passes up here.
"""

from __future__ import annotations

import importlib

from tilemlir.passes.base import TilePass

# name -> "module:Class"; modules are imported on first use.
_REGISTRY: dict[str, str] = {
    "tile-verify": "tilemlir.passes.verify:TileVerify",
    "tile-tiling": "tilemlir.passes.tiling:TileTiling",
    "tile-prove-bounds": "tilemlir.passes.prove_bounds:TileProveBounds",
    "tile-split-loops": "tilemlir.passes.split_loops:TileSplitLoops",
    "tile-legalize-precision": "tilemlir.passes.legalize_precision:TileLegalizePrecision",
    "tile-select-mma": "tilemlir.passes.select_mma:TileSelectMma",
    "tile-stage-operands": "tilemlir.passes.stage_operands:TileStageOperands",
    "tile-infer-layout": "tilemlir.passes.infer_layout:TileInferLayout",
    "tile-pipeline": "tilemlir.passes.software_pipeline:TilePipeline",
    "tile-insert-barriers": "tilemlir.passes.insert_barriers:TileInsertBarriers",
    "tile-lower-to-gpu": "tilemlir.passes.lower_to_gpu.lowering_pass:TileLowerToGpu",
    "gpu-check-input": "tilemlir.passes.check_gpu_input:GpuCheckInput",
    "tile-expand-math": "tilemlir.passes.expand_math:TileExpandMath",
}


def _backend_passes() -> dict[str, tuple[str, str]]:
    """name -> (family, "module:Class") of the passes the registered backends
    declare (`Backend.passes`); a backend that fails to load contributes none."""
    from tilemlir.targets.registry import backend, usable_families

    found: dict[str, tuple[str, str]] = {}
    for family in usable_families():  # a broken one is reported there and skipped
        for name, where in backend(family).passes.items():
            found.setdefault(name, (family, where))
    return found


def pass_names() -> tuple[str, ...]:
    return tuple(_REGISTRY) + tuple(name for name in _backend_passes() if name not in _REGISTRY)


def is_tile_pass(name: str) -> bool:
    """Whether `name` is one of ours (a tile pass or a backend's), run in Python."""
    return name in _REGISTRY or name in _backend_passes()


def pass_family(name: str) -> str | None:
    """The backend family that declares pass `name`; None for the core passes."""
    return None if name in _REGISTRY else _backend_passes()[name][0]


def pass_class(name: str) -> type[TilePass]:
    """The class of pass `name`: a core pass's, or the one a family's resolved
    backend imported (`resolve_backend(family).part("passes", name)`)."""
    if name not in _REGISTRY:
        from tilemlir.targets.registry import resolve_backend

        return resolve_backend(_backend_passes()[name][0]).part("passes", name)
    module_name, _, class_name = _REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def make_pass(name: str, options: str | None = None, overrides: dict | None = None) -> TilePass:
    """Instantiates a tile pass from its option text. `overrides` maps field
    names to values applied to every pass that has such a field (how the
    `--target` flag reaches target-dependent passes)."""
    cls = pass_class(name)
    instance = cls.from_option_text(options)
    if overrides:
        fields = {f.name for f in cls.options()}
        applicable = {k: v for k, v in overrides.items() if k in fields and v is not None}
        if applicable:
            import dataclasses

            instance = dataclasses.replace(instance, **applicable)
    return instance
