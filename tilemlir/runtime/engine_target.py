"""The target an engine (emulator, device) runs a module for."""

from __future__ import annotations

from mlir import ir


def resolve_engine_target(module: ir.Operation, target=None):
    """The Target an engine runs for: `target` itself when it is one (a
    descriptor loaded from a file included), else the name or the module's
    tile.target resolved."""
    from tilemlir.target import Target, resolve_target

    if isinstance(target, Target):
        return target
    return resolve_target(module, str(target) if target is not None else None)
