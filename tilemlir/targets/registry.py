"""Backend discovery and target lookup.

Backends register under the entry-point group `tilemlir.backends`: the entry
point's name is the family, its value `module:OBJECT` names a `Backend` (or a
callable returning one). tilemlir's own families (the packages under
tilemlir/backends/) are registered the same way in pyproject.toml, and are found
as those packages when the package's metadata is missing (a source checkout on
`sys.path`); this module imports none of them until it is asked for it.

A family is resolved once per process into one `ResolvedBackend`
(`resolve_backend`): its registration, its manifest (or why that failed to
load), and each part the manifest names as "module:OBJECT" (its stages,
matrix core, lowering hooks, native-math table, passes, GPU probe), imported
on first use and kept, with why any of them failed to load. Everything that
reaches into a family goes through it.

A family whose entry point cannot be loaded (a missing module, an import
error, an object that is no Backend, a `stages` string naming nothing) does
not break the others: whatever walks every family (`usable_families`: target
lists, `--emit` choices, passes and their options) reports it once per process
as a `BrokenBackendWarning` naming the family, its entry point and why, and
skips it; asking for one of its targets is an error saying the same.

Targets are named `family:name` (`amdgpu:gfx942`); a bare name is accepted when
only one family has it. A descriptor file is read only where the command line
(or a Python caller) names it: `--target-desc`, `--target FILE.toml`, a pass's
`target=` option (so a target from `--target-desc` can travel through a pass
pipeline as plain text), `get_target(path)`. The input IR never makes the
compiler read a file: a `tile.target` attribute is a target *name*, and
anything path-like there is an error (`target_from_attribute`).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import importlib.util
import os
import pkgutil
import threading
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from tilemlir.diagnostics import ToolWarning
from tilemlir.dialects import attributes
from tilemlir.targets.descriptor import load_descriptor
from tilemlir.targets.model import Backend, Target, TargetError

ENTRY_POINT_GROUP = "tilemlir.backends"

# The families that ship inside the package: every subpackage of this package
# with a `BACKEND` manifest. Found without metadata too, so a plain source
# checkout works; looked up by name, so this layer imports no family.
_SHIPPED_FAMILIES_PACKAGE = "tilemlir.backends"


def _shipped_families() -> dict[str, str]:
    """family -> "module:BACKEND" for the packages under tilemlir/backends/."""
    spec = importlib.util.find_spec(_SHIPPED_FAMILIES_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return {}
    return {
        module.name: f"{_SHIPPED_FAMILIES_PACKAGE}.{module.name}:BACKEND"
        for module in pkgutil.iter_modules(spec.submodule_search_locations)
        if module.ispkg
    }


@dataclass(frozen=True)
class _Registration:
    family: str
    value: str  # "module:OBJECT"
    provider: str  # the distribution that registered it, for messages


@functools.cache
def _registrations() -> dict[str, _Registration]:
    found: dict[str, _Registration] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        provider = f"{dist.name} {dist.version}" if dist is not None else "unknown distribution"
        previous = found.get(ep.name)
        if previous is not None and previous.value != ep.value:
            raise TargetError(
                f"backend family '{ep.name}' is registered twice: by {previous.provider} "
                f"({previous.value}) and by {provider} ({ep.value})"
            )
        found.setdefault(ep.name, _Registration(ep.name, ep.value, provider))
    for family, value in _shipped_families().items():
        found.setdefault(family, _Registration(family, value, "tilemlir (built in)"))
    return dict(sorted(found.items()))


def families() -> tuple[str, ...]:
    return tuple(_registrations())


def provider(family: str) -> str:
    return _registrations()[family].provider


class BrokenBackendWarning(ToolWarning):
    """A registered backend family failed to load and is skipped."""


_reported_lock = threading.Lock()
_reported: set[str] = set()


def report_broken_family(family: str, why: object) -> None:
    """Reports once per process (a `BrokenBackendWarning`; the tools print it
    as `PROG: warning: ...`) that `family` failed to load, `why`, and is skipped."""
    with _reported_lock:
        if family in _reported:
            return
        _reported.add(family)
    warnings.warn(BrokenBackendWarning(f"{why}; the {family} family is skipped"), stacklevel=2)


def usable_families() -> tuple[str, ...]:
    """The registered families whose manifest loads, in name order; each
    broken one is reported (`report_broken_family`) and left out."""
    usable = []
    for family in families():
        try:
            backend(family)
        except TargetError as error:
            report_broken_family(family, error)
            continue
        usable.append(family)
    return tuple(usable)


# The manifest fields that name a part of the family as "module:OBJECT"
# (`passes`: a dict of them, by pass name).
PART_FIELDS = ("stages", "matrix_core", "lowering_hooks", "native_math", "detect_gpu", "passes")


@dataclass
class ResolvedBackend:
    """A family's backend, resolved once (`resolve_backend`): where it was
    registered, its manifest or why that failed to load (`manifest`,
    `error`), and the parts the manifest names (`part`), each imported on
    first use and kept, or its load error kept (`errors`)."""

    family: str
    entry_point: str  # "module:OBJECT"
    provider: str  # the distribution that registered it
    manifest: Backend | None = None
    error: TargetError | None = None  # why the manifest failed to load
    _parts: dict[tuple[str, str], object] = field(default_factory=dict, repr=False)
    _errors: dict[tuple[str, str], TargetError] = field(default_factory=dict, repr=False)

    def require(self) -> Backend:
        """The manifest; its load error when it has none."""
        if self.manifest is None:
            raise self.error.with_traceback(None)
        return self.manifest

    def part(self, name: str, key: str = "") -> object | None:
        """The object the manifest's field `name` (one of PART_FIELDS; for
        `passes`, its entry `key`) names, imported on first use; None when
        the field is empty. A part that fails to load is a TargetError
        naming the family, the field, what it names and why, the same on
        every call."""
        if name not in PART_FIELDS:
            raise ValueError(f"'{name}' is not a manifest field naming a part ({', '.join(PART_FIELDS)})")
        where = getattr(self.require(), name)
        where = where.get(key, "") if isinstance(where, dict) else where
        if not where:
            return None
        slot = (name, key)
        if slot in self._errors:
            raise self._errors[slot].with_traceback(None)
        if slot not in self._parts:
            module_name, _, attribute = where.partition(":")
            try:
                self._parts[slot] = getattr(importlib.import_module(module_name), attribute)
            except Exception as error:  # noqa: BLE001 - a broken plug-in must not crash the tools
                what = f"{name} '{key}'" if key else name
                self._errors[slot] = TargetError(
                    f"the {self.family} backend's {what} '{where}' (from {self.provider}) "
                    f"failed to load: {type(error).__name__}: {error}")
                raise self._errors[slot] from None
        return self._parts[slot]

    @property
    def errors(self) -> dict[str, TargetError]:
        """What failed to load so far: "manifest", or a part's field name
        ("passes.NAME" for a pass)."""
        found = {"manifest": self.error} if self.error is not None else {}
        found.update({f"{name}.{key}" if key else name: error
                      for (name, key), error in self._errors.items()})
        return found


@functools.cache
def resolve_backend(family: str) -> ResolvedBackend:
    """`family` resolved: its manifest imported (or why not, kept), once per
    process. Only an unregistered family raises (a TargetError)."""
    registration = _registrations().get(family)
    if registration is None:
        known = ", ".join(families())
        raise TargetError(f"no backend family '{family}' (known families: {known})")
    resolved = ResolvedBackend(family, registration.value, registration.provider)
    try:
        resolved.manifest = _load_manifest(registration)
    except TargetError as error:
        resolved.error = error
    return resolved


def _load_manifest(registration: _Registration) -> Backend:
    family = registration.family
    module_name, _, attribute = registration.value.partition(":")
    try:
        obj = importlib.import_module(module_name)
        for part in attribute.split(".") if attribute else ():
            obj = getattr(obj, part)
        if callable(obj) and not isinstance(obj, Backend):
            obj = obj()
    except Exception as error:  # noqa: BLE001 - a broken plug-in must not crash the tools
        raise TargetError(
            f"backend '{family}' ({registration.value}, from {registration.provider}) "
            f"failed to load: {type(error).__name__}: {error}"
        ) from None
    if not isinstance(obj, Backend) or obj.family != family:
        what = (f"a Backend for family '{obj.family}'" if isinstance(obj, Backend)
                else f"a {type(obj).__name__}")
        raise TargetError(
            f"backend '{family}' ({registration.value}, from {registration.provider}) "
            f"failed to load: the entry point names {what}, not a tilemlir Backend for "
            f"family '{family}'"
        )
    return obj


def backend(family: str) -> Backend:
    """The `Backend` manifest of `family`, imported on first use
    (`resolve_backend(family).require()`)."""
    return resolve_backend(family).require()


@functools.cache
def _load_cached(path: str, mtime_ns: int, family: str | None, name: str | None) -> Target:
    """A descriptor read once per (path, mtime). A family's own files
    (`family` and `name` given) are its packaged targets."""
    target = load_descriptor(path, backend, expected_family=family, expected_name=name,
                             packaged_target=packaged_target)
    if family is None and Path(path) not in _packaged_files(target.family):
        return target
    return dataclasses.replace(target, packaged=True)


def _packaged_files(family: str) -> frozenset[Path]:
    return frozenset(file.resolve() for file in backend(family).target_files())


def load_target_file(path: str | Path) -> Target:
    """A descriptor from anywhere (`--target-desc FILE`); its family picks the
    backend whose rules validate it. One of a family's own files read this way
    is that packaged target."""
    resolved = Path(path).resolve()
    try:
        mtime = resolved.stat().st_mtime_ns
    except OSError as error:
        raise TargetError(
            f"cannot read target descriptor '{path}': {error.strerror or error}"
        ) from None
    target = _load_cached(str(resolved), mtime, None, None)
    return target


def family_targets(family: str) -> tuple[Target, ...]:
    """The targets a backend ships, in file-name order."""
    be = backend(family)
    targets = []
    for file in be.target_files():
        targets.append(_load_packaged(family, file))
    return tuple(targets)


def _load_packaged(family: str, file: Path) -> Target:
    return _load_cached(str(file), file.stat().st_mtime_ns, family, file.stem)


def packaged_target(spec: str) -> Target:
    """The packaged target `family:name`, reading only its own file (a
    descriptor's `base`, looked up while other files of the family may still
    be loading)."""
    family, _, name = spec.partition(":")
    if family not in families():
        raise _unknown_target(spec)
    file = Path(backend(family).targets_dir) / f"{name}.toml"
    if file not in backend(family).target_files():
        raise _unknown_target(spec)
    return _load_packaged(family, file)


def all_targets() -> tuple[Target, ...]:
    """The targets of every family that loads (a broken one is reported and skipped)."""
    targets: list[Target] = []
    for family in usable_families():
        try:
            targets.extend(family_targets(family))
        except TargetError as error:
            report_broken_family(family, error)
    return tuple(targets)


def shipped_targets() -> tuple[Target, ...]:
    """The targets of the families built into tilemlir (its own
    tilemlir/backends/ packages), not of plug-ins: the descriptors whose facts
    this project sourced (the cost model's assumptions are drawn from them)."""
    shipped = _shipped_families()
    return tuple(t for family in usable_families()
                 if _registrations()[family].value == shipped.get(family)
                 for t in family_targets(family))


def target_names() -> tuple[str, ...]:
    return tuple(str(t) for t in all_targets())


def _looks_like_path(spec: str) -> bool:
    return spec.endswith(".toml") or "/" in spec or "\\" in spec


def get_target(spec: str) -> Target:
    """`family:name`, a bare `name` known to one family, or a descriptor path
    (the command line's or a Python caller's; never one from the input IR)."""
    spec = spec.strip()
    if _looks_like_path(spec):
        return load_target_file(spec)
    return target_by_name(spec)


def target_by_name(spec: str) -> Target:
    """`family:name` or a bare `name` known to one family; reads no file."""
    spec = spec.strip()
    if not spec:
        raise TargetError("empty target name; expected family:name, e.g. amdgpu:gfx942")
    if spec.endswith(")") and " (from " in spec:
        raise TargetError(
            f"'{spec}' is how a target read from a descriptor file prints; "
            "name the file itself (its path, or --target-desc=FILE)"
        )
    family, colon, name = spec.rpartition(":")
    if colon:
        if family not in families():
            raise _unknown_target(spec)
        for target in family_targets(family):
            if target.name == name:
                return target
        raise _unknown_target(spec)
    matches = [t for t in all_targets() if t.name == spec]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise TargetError(
            f"target '{spec}' is ambiguous; say which: {', '.join(str(t) for t in matches)}"
        )
    raise _unknown_target(spec)


def _closest(spec: str, candidates: list[str]) -> str | None:
    """The most similar candidate (ties go to the longer common prefix:
    'xcore100' means xcore1000 rather than xcore1500), or None."""

    def score(candidate: str) -> tuple[float, int]:
        ratio = difflib.SequenceMatcher(None, spec, candidate).ratio()
        return ratio, len(os.path.commonprefix([spec, candidate]))

    best = max(candidates, key=score, default=None)
    return best if best is not None and score(best)[0] >= 0.5 else None


def _unknown_target(spec: str) -> TargetError:
    family = spec.rpartition(":")[0]
    if family and family not in families():
        return TargetError(
            f"unknown target '{spec}': no backend family '{family}' "
            f"(known families: {', '.join(families())}; known targets: {', '.join(target_names())})"
        )
    names = list(target_names())
    near = _closest(spec, names + [n.split(":", 1)[1] for n in names])
    hint = ""
    if near:
        full = next(n for n in names if n == near or n.endswith(":" + near))
        hint = f"; did you mean '{full}'?"
    return TargetError(
        f"unknown target '{spec}'{hint} (known targets: {', '.join(names)}; "
        "or give a descriptor with --target-desc=FILE)"
    )


def resolve_target(op, option_value: str | None = None) -> Target:
    """The target a target-dependent pass works for: its `target` option (the
    `--target` flag arrives there) wins over the `tile.target` string attribute
    of `op` or of the nearest enclosing op that has one."""
    if option_value:
        return get_target(option_value)
    from tilemlir.irutil import parent_ops

    operation = op.operation
    for candidate in (operation, *parent_ops(operation)):
        attribute = attributes.TARGET.get(candidate)
        if attribute is not None:
            return target_from_attribute(attribute)
    raise TargetError(
        f"no target: pass --target=FAMILY:NAME (or the pass's target option), or set "
        f'{attributes.TARGET.name} = "amdgpu:gfx942" on the module'
    )


def target_from_attribute(attribute) -> Target:
    """The target a `tile.target` attribute names. Only a name: a descriptor
    file comes from the command line, so input IR cannot make the compiler
    open a path (a FIFO that blocks, /dev/zero, or a probe for whether a file
    exists)."""
    value = getattr(attribute, "value", None)
    if not isinstance(value, str):
        raise TargetError(
            f"'{attributes.TARGET.name}' must be a string such as \"amdgpu:gfx942\", got {attribute}"
        )
    if _looks_like_path(value.strip()):
        raise TargetError(
            f"'{attributes.TARGET.name}' must name a target (family:name, e.g. \"amdgpu:gfx942\"), "
            f"not a file ({attribute}); give a descriptor file with --target-desc=FILE"
        )
    return target_by_name(value)
