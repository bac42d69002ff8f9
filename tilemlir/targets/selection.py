"""Which target to compile for: one rule for every entry point.

    from tilemlir.targets.selection import select_target
    select_target("gfx942")                  # amdgpu:gfx942: a chip only one family ships
    select_target(None, module)              # tile.target, else $TILEMLIR_TARGET, else this machine's GPU
    select_target(None, module, engine_default="amdgpu:gfx942")   # an engine that runs on no GPU

tile-compile, tile-run, tile-tune, `tilemlir.compile`, `tilemlir.runtime.run`
and `@tilemlir.jit` all call `select_target`, which takes the first of

  1. the target the caller names (`--target`, `--target-desc`, `target=`);
  2. the input's `tile.target` attribute (a name, never a file);
  3. the environment variable TILEMLIR_TARGET;
  4. this machine's GPU, as the families' probes find it (`Backend.detect_gpu`:
     amdgpu reads the KFD topology, nvidia asks nvidia-smi; a missing driver
     or tool is "no GPU", never an error). An engine that runs on no GPU (the
     SIMT emulator) names its own chip instead (`engine_default`) and nothing
     is probed;
  5. else an error saying how to name a target, with the shipped targets.

A name (steps 1 and 3) is `family:chip`, a chip exactly one family ships
(`gfx942`; an ambiguous or unknown one is an error naming the candidates), a
descriptor file (`.toml`), or a family, in its own name or TileLang's (`cuda`,
`hip`, `rocm`, `maca`): that family's chip from TILEMLIR_TARGET, else from this
machine's GPU, else the chip the family's manifest names (`default_chip`).
TileLang's `auto` names nothing (the next step decides). TILEMLIR_GPU set by
hand replaces the probes: `none`, or the target names of the GPUs present
(for tests, and for machines where probing is unwanted).

tile-opt is not an entry point of this rule: it transforms IR as written, so
its target is `--target` (`registry.get_target`: no family names, whose chip
could come from the environment) or the IR's `tile.target` only, and a RUN
line replays the same on any machine. README.md ("Which target, which artefact") is where
users read the rule; this module is where it is decided.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping

from tilemlir.dialects.attributes import TARGET as TARGET_ATTRIBUTE
from tilemlir.targets.model import Target, TargetError
from tilemlir.targets.registry import (
    backend,
    family_targets,
    get_target,
    resolve_backend,
    target_by_name,
    target_from_attribute,
    target_names,
    usable_families,
)

TARGET_ENVIRONMENT = "TILEMLIR_TARGET"
GPU_ENVIRONMENT = "TILEMLIR_GPU"
NO_GPU = "none"
# TileLang's word for "whatever this machine has": no name at all.
AUTO = "auto"


class NoTargetError(TargetError):
    """Nothing names a target and no GPU is here to compile for (step 5)."""


# What every tool's --target help says (the rule itself: README.md).
TARGET_HELP = ("FAMILY:CHIP (amdgpu:gfx942), a chip one family ships (gfx942), a family (cuda, hip) "
               f"or a descriptor FILE.toml; default: the input's {TARGET_ATTRIBUTE.name}, else $TILEMLIR_TARGET, "
               "else this machine's GPU (README.md, 'Which target, which artefact')")


def select_target(given: str | Target | None = None, module=None, *,
                  environ: Mapping[str, str] | None = None,
                  engine_default: str | None = None) -> Target:
    """The target to compile `module` for, by the rule above: `given` (a name,
    a file or a Target), else the module's tile.target, else $TILEMLIR_TARGET,
    else this machine's GPU (or `engine_default`, for an engine that runs on
    no GPU), else a TargetError saying how to name one."""
    environ = os.environ if environ is None else environ
    if isinstance(given, Target):
        return given
    if given is not None and given.strip() != AUTO:
        return named_target(given, environ)
    if module is not None:
        from tilemlir.dialects import attributes

        attribute = attributes.TARGET.get(module.operation)
        if attribute is not None:
            return target_from_attribute(attribute)
    from_environment = environ.get(TARGET_ENVIRONMENT, "").strip()
    if from_environment and from_environment != AUTO:
        try:
            return named_target(from_environment, environ)
        except TargetError as error:
            raise TargetError(f"${TARGET_ENVIRONMENT}: {error}") from None
    if engine_default is not None:
        return get_target(engine_default)
    present = present_gpu_targets(environ)
    if len(present) == 1:
        return present[0]
    if present:
        raise TargetError(
            f"this machine has GPUs of {len(present)} targets ({', '.join(str(t) for t in present)}); "
            f"say which with --target FAMILY:CHIP (Python: target=) or ${TARGET_ENVIRONMENT}"
        )
    raise NoTargetError(
        f"no target: name one with --target FAMILY:CHIP (Python: target=) or ${TARGET_ENVIRONMENT}, "
        f"or set {TARGET_ATTRIBUTE.name} on the module; no GPU was found on this machine to compile for "
        f"(known targets: {', '.join(target_names())})"
    )


def named_target(text: str, environ: Mapping[str, str] | None = None) -> Target:
    """The target `text` names: `family:chip`, a chip one family ships, a
    descriptor path (`registry.get_target`), or a family (its name or
    TileLang's), whose chip comes from $TILEMLIR_TARGET, this machine's GPU,
    or else the family's `default_chip`."""
    environ = os.environ if environ is None else environ
    family = family_named(text.strip())
    if family is None:
        return get_target(text)
    from_environment = environ.get(TARGET_ENVIRONMENT, "").strip()
    if from_environment and family_named(from_environment) is None:
        try:
            chosen = get_target(from_environment)
        except TargetError:
            chosen = None  # a bad TILEMLIR_TARGET is reported where it is the target, not here
        if chosen is not None and chosen.family == family:
            return chosen
    present = [t for t in present_gpu_targets(environ, strict=False) if t.family == family]
    if len(present) == 1:
        return present[0]
    default_chip = backend(family).default_chip
    if default_chip:
        return target_by_name(f"{family}:{default_chip}")
    shipped = family_targets(family)
    if len(shipped) == 1:
        return shipped[0]
    raise TargetError(f"'{text}' names the {family} family, which ships several targets; "
                      f"say which: {', '.join(str(t) for t in shipped)}")


def family_named(text: str) -> str | None:
    """The family `text` names, in its own name or TileLang's, or None."""
    for family in usable_families():
        if text == family or text in backend(family).tilelang_names:
            return family
    return None


def present_gpu_targets(environ: Mapping[str, str] | None = None, *, strict: bool = True) -> list[Target]:
    """The targets of the GPUs on this machine, each once: $TILEMLIR_GPU when
    set (`none`, or target names separated by commas), else what the families'
    probes find. A GPU no shipped target describes is an error when `strict`,
    else left out."""
    environ = os.environ if environ is None else environ
    stubbed = environ.get(GPU_ENVIRONMENT)
    if stubbed is not None:
        names = [n.strip() for n in stubbed.split(",") if n.strip() and n.strip() != NO_GPU]
        try:
            return _unique([target_by_name(name) for name in names])
        except TargetError as error:
            raise TargetError(f"${GPU_ENVIRONMENT}: {error}") from None
    found = []
    for family, chip in probed_gpus():
        try:
            found.append(target_by_name(f"{family}:{chip}"))
        except TargetError:
            if strict:
                raise TargetError(
                    f"this machine's GPU is {family} {chip}, which no known target describes; "
                    f"name a target with --target FAMILY:CHIP (Python: target=) or ${TARGET_ENVIRONMENT}, "
                    f"or describe the chip with --target-desc FILE (known targets: {', '.join(target_names())})"
                ) from None
    return _unique(found)


def _unique(targets: list[Target]) -> list[Target]:
    return list(dict.fromkeys(targets))


@functools.cache
def probed_gpus() -> tuple[tuple[str, str], ...]:
    """(family, chip) of every GPU the families' probes find, once per
    process. A probe that fails in any way found nothing."""
    found: list[tuple[str, str]] = []
    for family in usable_families():
        if not backend(family).detect_gpu:
            continue
        try:
            chips = tuple(resolve_backend(family).part("detect_gpu")())
        except Exception:  # noqa: BLE001 - no driver, no tool, odd output: no GPU of this family
            chips = ()
        found.extend((family, chip) for chip in dict.fromkeys(chips))
    return tuple(found)
