"""gpu-check-input: what every backend refuses in GPU-level IR before emitting code.

GPU-level input (a hand-written gpu.module, or what tile-lower-to-gpu made)
reaches emitted text and LLVM's code generators. Each check closes a way for
the input to change what the compiler writes, which files it reads, or to
crash it:

  - every symbol of a gpu.module (the gpu.module itself, its gpu.funcs, globals
    and declarations) is an identifier (`symbols.IDENTIFIER`): these names are
    pasted into C++, `.amdhsa_kernel NAME` and PTX, and NVPTX aborts on others.
    Names tile-lower-to-gpu creates are identifiers already (`kernel_symbol`);
  - no gpu.module carries a `targets` attribute: the target comes from
    `--target`/`--target-desc`, and a target attribute's `link = [...]` list
    names files that serialization would read (its chip or features could also
    make LLVM abort);
  - `known_block_size` and `known_grid_size` of a gpu.func, and the NVVM
    launch bounds (`nvvm.reqntid`, `nvvm.maxntid`, `nvvm.maxnreg`,
    `nvvm.minctasm`) are positive (a negative one trips an APInt assertion in
    the AMDGPU lowering; zero would print `__launch_bounds__(0)`), and a block
    holds at most the target's threads per workgroup when the pass knows the
    target (`target` option);
  - a `section` attribute (on llvm.func or llvm.mlir.global) is a plain
    section name: LLVM prints it into the assembly as it is, so a newline in
    it would add directives.

Input invariant: a builtin.module. Output: unchanged IR; errors fail the pass,
each at the op concerned.

    gpu.module @k [#nvvm.target<link = ["/etc/passwd"]>] { ... }
    // error: gpu.module 'k' carries a target attribute ...
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass
from tilemlir.passes.symbols import is_emitted_symbol, is_identifier, is_library_name, kernel_symbol
from tilemlir.targets.model import is_unknown
from tilemlir.targets.registry import resolve_target

# Ops whose names become C++ function names (MetaX) or kernel symbols.
_KERNEL_OPS = ("gpu.module", "gpu.func")
# Sizes printed into launch bounds; the block-shaped ones count threads.
_SIZE_ATTRIBUTES = ("known_block_size", "known_grid_size", "nvvm.reqntid", "nvvm.maxntid",
                    "nvvm.maxnreg", "nvvm.minctasm")
_BLOCK_ATTRIBUTES = ("known_block_size", "nvvm.reqntid", "nvvm.maxntid")
# ELF section names as assemblers take them unquoted.
SECTION_NAME = re.compile(r"[A-Za-z0-9_.$]+\Z")


def _sizes(attribute: ir.Attribute) -> list[int] | None:
    for array in (ir.DenseI32ArrayAttr, ir.DenseI64ArrayAttr):
        if isinstance(attribute, array):
            return [int(x) for x in array(attribute)]
    if isinstance(attribute, ir.IntegerAttr):
        return [ir.IntegerAttr(attribute).value]
    return None


def _symbol_name(op: ir.Operation) -> str | None:
    if "sym_name" not in op.attributes:
        return None
    attribute = op.attributes["sym_name"]
    return ir.StringAttr(attribute).value if isinstance(attribute, ir.StringAttr) else None


def _shown(name: str | None) -> str:
    """A name as MLIR prints it (`@"my kernel"`), escapes included."""
    return "@" + str(ir.StringAttr.get(name or "")) if name is None or not is_identifier(name) \
        else f"@{name}"


def gpu_input_problems(module: ir.Operation,
                       thread_limit: int | None = None) -> list[tuple[ir.Operation, str]]:
    """(op, message) for every construct of `module` the backends refuse;
    `thread_limit`: the target's threads per workgroup, when known."""
    problems: list[tuple[ir.Operation, str]] = []
    for gpu_module in walk(module):
        if gpu_module.name != "gpu.module":
            continue
        if "targets" in gpu_module.attributes:
            problems.append((gpu_module, (
                f"gpu.module {_shown(_symbol_name(gpu_module))} carries a target attribute "
                f"({gpu_module.attributes['targets']}); the target comes from --target or "
                "--target-desc, so remove the gpu.module's targets list")))
        for op in walk(gpu_module):
            name = _symbol_name(op)
            if name is not None and not is_identifier(name):
                problems.append((op, (
                    f"{op.name} {_shown(name)}: the name is not an identifier "
                    "([A-Za-z][A-Za-z0-9_]* or _[A-Za-z0-9_]+), so it cannot be written into "
                    f"assembly, PTX or C++; rename it (e.g. @{kernel_symbol(name)})")))
            elif name is not None and op.name in _KERNEL_OPS and not is_emitted_symbol(name) \
                    and not is_library_name(name):  # printf, main: the MetaX emitter refuses those
                problems.append((op, (
                    f"{op.name} {_shown(name)}: a kernel or kernel module may not be named like "
                    "a C++ keyword, a reserved name, a macro (capitals only, or a C library "
                    "macro) or a name of the generated code's own (tm_...), since MetaX emits it "
                    f"as a C++ function; rename it (e.g. @{kernel_symbol(name)})")))
            if "section" in op.attributes:
                section = op.attributes["section"]
                text = ir.StringAttr(section).value if isinstance(section, ir.StringAttr) else None
                if text is None or not SECTION_NAME.match(text):
                    problems.append((op, (
                        f"{op.name} {_shown(name)}: section {section} is not a plain section name "
                        "([A-Za-z0-9_.$]+); it is written into the assembly as it is")))
            for attribute in _SIZE_ATTRIBUTES:
                if op.name not in ("gpu.func", "llvm.func") or attribute not in op.attributes:
                    continue
                sizes = _sizes(op.attributes[attribute])
                if sizes is None or any(size <= 0 for size in sizes):
                    problems.append((op, (
                        f"{op.name} {_shown(name)}: {attribute} must be positive in every "
                        f"dimension, got {sizes if sizes is not None else op.attributes[attribute]}")))
                elif attribute in _BLOCK_ATTRIBUTES and thread_limit is not None \
                        and math.prod(sizes) > thread_limit:
                    problems.append((op, (
                        f"{op.name} {_shown(name)}: {attribute} asks for {math.prod(sizes)} threads "
                        f"per block, the target allows {thread_limit}")))
    return problems


@dataclass(frozen=True)
class GpuCheckInput(TilePass):
    """Refuses GPU-level IR whose names, target attributes or sizes would reach
    emitted code unchecked (module docstring)."""

    name: ClassVar[str] = "gpu-check-input"
    # The target whose threads per workgroup bound the block sizes ("" = no bound).
    target: str = ""
    summary: ClassVar[str] = ("check that gpu.module symbols are identifiers, carry no target "
                              "attribute, and gpu.func sizes are positive")

    def run(self, module: ir.Operation, state: PassState) -> None:
        limit = None
        if self.target:
            limit = resolve_target(module, self.target).compute.max_threads_per_workgroup
            limit = None if is_unknown(limit) else limit
        for op, message in gpu_input_problems(module, limit):
            state.error(op, message)
