"""tile-lower-to-gpu's interface to backends (passes/lower_to_gpu/api.py) is
what backends use: they import the API module only, touch the kernel being
lowered only through `KernelLowering`, and the lowering names no family."""

from __future__ import annotations

import ast
import dataclasses
import types
from pathlib import Path

import pytest

import tilemlir
from tilemlir.passes.lower_to_gpu import api

PACKAGE = Path(tilemlir.__file__).parent
BACKEND_SOURCES = sorted((PACKAGE / "backends").rglob("*.py"))
LOWERING_SOURCES = sorted((PACKAGE / "passes" / "lower_to_gpu").glob("*.py"))
FAMILIES = ("amdgpu", "nvidia", "metax")


def protocol_members() -> set[str]:
    return {name for name in vars(api.KernelLowering) if not name.startswith("_")}


def imports_of(path: Path) -> list[tuple[str, list[str]]]:
    """(module, imported names) of every import statement in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
    return found


@pytest.mark.parametrize("path", BACKEND_SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_backends_import_only_the_lowering_api(path):
    for module, names in imports_of(path):
        if module.startswith("tilemlir.passes.lower_to_gpu"):
            assert module == "tilemlir.passes.lower_to_gpu.api", f"{path.name} imports {module}"
        if module.startswith("tilemlir.passes"):
            private = [n for n in names if n.startswith("_")]
            assert not private, f"{path.name} imports private names {private} from {module}"
    assert "KernelEmitter" not in path.read_text()


@pytest.mark.parametrize("path", BACKEND_SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_backends_reach_the_kernel_through_the_protocol_only(path):
    """Every attribute a backend reads of `lowering` (a parameter) or
    `self.lowering` is a member of KernelLowering."""
    members = protocol_members()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        is_lowering = isinstance(base, ast.Name) and base.id == "lowering" or (
            isinstance(base, ast.Attribute) and base.attr == "lowering"
            and isinstance(base.value, ast.Name) and base.value.id == "self")
        if is_lowering:
            assert node.attr in members, f"{path.name}:{node.lineno}: lowering.{node.attr}"


def test_the_emitter_implements_the_protocol():
    from tilemlir.passes.lower_to_gpu.emitter import KernelEmitter

    missing = [name for name in protocol_members() if not hasattr(KernelEmitter, name)]
    assert not missing


@pytest.mark.parametrize("path", LOWERING_SOURCES, ids=lambda p: p.name)
def test_the_lowering_names_no_family(path):
    """No import of a backend package and no family name in the code (the
    docstrings may cite one as an example)."""
    tree = ast.parse(path.read_text())
    for module, _ in imports_of(path):
        assert not any(module.startswith(f"tilemlir.backends.{f}") for f in FAMILIES), module
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            assert not any(f in node.value for f in FAMILIES), f"{path.name}:{node.lineno}: {node.value!r}"


def test_passes_import_no_backend_package():
    for path in sorted((PACKAGE / "passes").rglob("*.py")):
        for module, _ in imports_of(path):
            assert not any(module.startswith(f"tilemlir.backends.{f}") for f in FAMILIES), \
                f"{path.relative_to(PACKAGE)} imports {module}"


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_names_its_core_and_hooks(family):
    core = api.matrix_core_for(types.SimpleNamespace(family=family))
    assert isinstance(core, api.MatrixCore) and core.target.family == family
    assert issubclass(api.lowering_hooks_for(family), api.LoweringHooks)


def test_a_family_without_a_matrix_core_is_refused(monkeypatch):
    from tilemlir.targets import registry

    manifest = dataclasses.replace(registry.backend("metax"), matrix_core="")
    monkeypatch.setattr(registry, "resolve_backend",
                        lambda family: registry.ResolvedBackend(family, "test:BACKEND", "test", manifest))
    with pytest.raises(tilemlir.diagnostics.UserError, match="has no lane-level matrix lowering"):
        api.matrix_core_for(types.SimpleNamespace(family="metax"))


def test_backend_options_are_pass_options_marked_with_their_families():
    from tilemlir.passes import pass_class

    cls = pass_class("tile-lower-to-gpu")
    read_by = {f.name: f.metadata.get("families") for f in dataclasses.fields(cls)}
    assert read_by == {"target": None, "direct_lds_loads": ("amdgpu",), "sched_hints": ("amdgpu",),
                       "tma_copies": ("nvidia",), "warp_specialize": ("nvidia",),
                       "persistent": ("nvidia",)}
    parsed = cls.from_option_text("sched-hints=false tma-copies")
    assert str(parsed) == "tile-lower-to-gpu{sched-hints=false tma-copies=true}"


def test_families_declaring_one_option_differently_are_refused(monkeypatch):
    from tilemlir.passes.lower_to_gpu import lowering_pass

    class Hooks(api.LoweringHooks):
        options = (api.LoweringOption("shared_switch", bool, False),)

    class OtherHooks(api.LoweringHooks):
        options = (api.LoweringOption("shared_switch", bool, True),)

    hooks = {"one": Hooks, "two": Hooks, "three": OtherHooks}
    monkeypatch.setattr(lowering_pass, "lowering_hooks_for", hooks.__getitem__)
    monkeypatch.setattr(lowering_pass, "usable_families", lambda: ("one", "two"))
    [(option, readers)] = lowering_pass.backend_options()
    assert (option.name, readers) == ("shared_switch", ("one", "two"))
    monkeypatch.setattr(lowering_pass, "usable_families", lambda: ("one", "three"))
    with pytest.raises(TypeError, match="declared differently by one and three"):
        lowering_pass.backend_options()


def test_list_passes_says_which_family_reads_a_backend_option():
    from tilemlir.tools.tile_opt import _list_passes

    listing = _list_passes()
    assert "tma-copies=bool     default false  (read by nvidia)" in listing
    assert "direct-lds-loads=auto|true|false default auto  (read by amdgpu)" in listing
