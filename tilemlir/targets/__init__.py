"""The hardware model: targets as validated data, backend families as plug-ins.

    from tilemlir.targets import get_target, resolve_target
    target = get_target("amdgpu:gfx942")             # or a descriptor path
    target.mma_candidates("f8E4M3FNUZ", "f8E4M3FNUZ", "f32")
    target = resolve_target(module_op, pass_option)  # option wins over tile.target
    target = select_target(given, module_op)         # the tools' and the API's rule (selection.py)

This layer sits below the passes and names no family: model.py is the data
model (Target, MmaInstr, UNKNOWN, the Backend manifest a family registers),
descriptor.py the TOML format and its checks (a file may build on a `base`),
toml_writer.py its inverse, registry.py the `tilemlir.backends` entry-point
group, selection.py which target a compile is for when none is named, cli.py
the target flags every tool shares, llvm_processors.py which processors LLVM
knows (for the families' own checks).
"""

from tilemlir.targets.descriptor import DescriptorError, load_descriptor
from tilemlir.targets.model import (
    UNKNOWN,
    Backend,
    Compute,
    Matrix,
    Memory,
    MmaInstr,
    Registers,
    Target,
    TargetError,
    Unknown,
    UnknownFactError,
    is_unknown,
)
from tilemlir.targets.registry import (
    ENTRY_POINT_GROUP,
    all_targets,
    backend,
    families,
    family_targets,
    get_target,
    load_target_file,
    resolve_target,
    shipped_targets,
    target_names,
)
from tilemlir.targets.selection import select_target

__all__ = [
    "ENTRY_POINT_GROUP",
    "UNKNOWN",
    "Backend",
    "Compute",
    "DescriptorError",
    "Matrix",
    "Memory",
    "MmaInstr",
    "Registers",
    "Target",
    "TargetError",
    "Unknown",
    "UnknownFactError",
    "all_targets",
    "backend",
    "families",
    "family_targets",
    "get_target",
    "is_unknown",
    "load_descriptor",
    "load_target_file",
    "resolve_target",
    "select_target",
    "shipped_targets",
    "target_names",
]
