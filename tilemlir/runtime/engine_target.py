"""The target an engine (emulator, device) runs a module for."""

from __future__ import annotations

from mlir import ir

# The emulator's own chip (runtime/emulator.py's docstring says why it has one):
# what a kernel is compiled for when it runs in the emulator and nothing names a
# target. One of emulator.CHIPS, the one its MFMA layouts were first checked on.
EMULATOR_TARGET = "amdgpu:gfx942"


def resolve_engine_target(module: ir.Operation, target=None, engine: str = "device"):
    """The Target `engine` runs `module` for: `target` itself when it is one
    (a descriptor loaded from a file included), else `select_target`'s rule
    (the name, else tile.target, else TILEMLIR_TARGET, else this machine's
    GPU), where the emulator, which runs on no GPU, takes its own chip
    (EMULATOR_TARGET) in place of the GPU."""
    from tilemlir.target import Target
    from tilemlir.target.selection import select_target

    if isinstance(target, Target):
        return target
    engine_default = EMULATOR_TARGET if engine == "emulator" else None
    return select_target(str(target) if target is not None else None, module, engine_default=engine_default)
