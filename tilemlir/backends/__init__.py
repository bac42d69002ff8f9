"""Hardware description: targets as validated data, backends as plug-ins.

    from tilemlir.backends import get_target, resolve_target
    target = get_target("amdgpu:gfx942")             # or a descriptor path
    target.mma_candidates("f8E4M3FNUZ", "f8E4M3FNUZ", "f32")
    target = resolve_target(module_op, pass_option)  # option wins over tile.target

See base.py for the data model, descriptor.py for the file format and its
checks, registry.py for the `tilemlir.backends` entry-point group.
"""

from tilemlir.backends.base import (
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
from tilemlir.backends.descriptor import DescriptorError, load_descriptor
from tilemlir.backends.registry import (
    ENTRY_POINT_GROUP,
    TARGET_ATTRIBUTE,
    all_targets,
    backend,
    families,
    family_targets,
    get_target,
    load_target_file,
    resolve_target,
    target_names,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "TARGET_ATTRIBUTE",
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
    "target_names",
]
