"""The target an engine (emulator, device) runs a module for."""

from __future__ import annotations

from mlir import ir


def resolve_engine_target(module: ir.Operation, target=None, engine: str = "device"):
    """The Target `engine` runs `module` for: `target` itself when it is one
    (a descriptor loaded from a file included), else `select_target`'s rule
    (the name, else tile.target, else TILEMLIR_TARGET, else this machine's
    GPU), where the emulator, which runs on no GPU, takes its own target
    (`emulator_target()`) in place of the GPU."""
    from tilemlir.runtime.emulator import emulator_target
    from tilemlir.targets import Target
    from tilemlir.targets.selection import select_target

    if isinstance(target, Target):
        return target
    engine_default = emulator_target() if engine == "emulator" else None
    return select_target(str(target) if target is not None else None, module, engine_default=engine_default)
