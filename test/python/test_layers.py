"""The package's import graph, computed from the source: layers import one way
(DESIGN.md section 2), no module imports itself back through others, and no
module outside backends/<family>/ names a family — so a family is a package
plus an entry point, and nothing else changes when one is added."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tilemlir"
FAMILIES = tuple(sorted(p.name for p in (PACKAGE / "backends").iterdir()
                        if (p / "__init__.py").exists()))

# Lowest first; a module imports only from its own layer or below. `tilemlir`
# (the package's lazy API) sits on top.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("tilemlir.version", "tilemlir.diagnostics", "tilemlir.files", "tilemlir.irutil", "tilemlir.mma_layouts",
     "tilemlir.lds_banks"),
    ("tilemlir.dialects",),
    ("tilemlir.targets",),
    # The cost model reads only targets, and tile-tiling consults it (tilemlir/cost/__init__.py).
    ("tilemlir.cost",),
    ("tilemlir.passes",),
    ("tilemlir.backends",),
    tuple(f"tilemlir.backends.{family}" for family in FAMILIES),
    ("tilemlir.compiler",),
    # The tuner and its database: it compiles candidates through the driver.
    ("tilemlir.tune",),
    ("tilemlir.runtime",),
    # The frontend builds tile IR (dialects), compiles it (compiler) and runs it
    # (runtime's engines): above them all, beside the tools.
    ("tilemlir.language",),
    # TileLang's module paths (`tilelang.autotuner`, `.profiler`, `.utils`) over the frontend.
    ("tilemlir.autotuner", "tilemlir.profiler", "tilemlir.utils"),
    ("tilemlir.tools",),
    ("tilemlir",),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported_modules(name: str) -> set[str]:
    """Every tilemlir module `name` imports, at the top or inside a function."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target.startswith("tilemlir") and target != name:
                found.add(target)
    return found


GRAPH = {name: imported_modules(name) for name in MODULES}


def layer_of(name: str) -> int:
    best = max((prefix for layer in LAYERS for prefix in layer
                if name == prefix or name.startswith(prefix + ".")), key=len)
    return next(i for i, layer in enumerate(LAYERS) if best in layer)


def test_every_module_has_a_layer():
    for name in MODULES:
        layer_of(name)


def test_layers_import_one_way():
    upward = sorted(f"{name} imports {target}" for name, targets in GRAPH.items()
                    for target in targets if layer_of(target) > layer_of(name))
    assert upward == []


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one module (iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root, successors in graph.items():
        if root in index:
            continue
        work = [(root, iter(sorted(successors)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def test_no_import_cycle():
    assert strongly_connected(GRAPH) == []


def folder_of(name: str) -> str:
    """The folder `name` lives in, as a node of the folder graph: its
    subpackage of tilemlir (`tilemlir.passes` for every module under
    tilemlir/passes/), or, for a module of tilemlir/ itself, that module
    (the root holds modules of every layer, from irutil to compiler)."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 and (PACKAGE / parts[1] / "__init__.py").exists() else name


def folder_graph(graph: dict[str, set[str]], folder=folder_of) -> dict[str, set[str]]:
    """`graph` with every module replaced by its folder (`folder`)."""
    folders: dict[str, set[str]] = {folder(name): set() for name in graph}
    for name, targets in graph.items():
        folders[folder(name)] |= {folder(t) for t in targets} - {folder(name)}
    return folders


def test_no_folder_level_import_cycle():
    """No two subpackages import each other, through any chain of modules,
    top-level or function-local imports alike: each folder is one layer."""
    assert strongly_connected(folder_graph(GRAPH)) == []


def test_the_folder_graph_sees_a_cycle_through_function_local_imports():
    # passes/tiling.py imports tune/model.py at the top; tune/search.py imports
    # passes/ inside a function: the cycle tune/ <-> passes/ of issue 33.
    graph = {"tilemlir.passes.tiling": {"tilemlir.tune.model"}, "tilemlir.tune.model": set(),
             "tilemlir.tune.search": {"tilemlir.passes.tiling"}}
    assert strongly_connected(folder_graph(graph)) == [["tilemlir.passes", "tilemlir.tune"]]


# Folders inside a subpackage that still import each other: the tile passes
# ask a family's matrix core through passes/lower_to_gpu/api.py, which imports
# passes/ (gemm_facts, shared_memory, fragment_layout). Moving the interface
# out of lower_to_gpu/ ends it; until then this test names the one cycle, so
# a new one, or its end, changes the list.
KNOWN_NESTED_FOLDER_CYCLES = [["tilemlir.passes", "tilemlir.passes.lower_to_gpu"]]


def test_nested_folder_cycles_are_the_known_one():
    def package_of(name: str) -> str:
        return name if MODULES[name].name == "__init__.py" or name.count(".") == 1 \
            else name.rpartition(".")[0]

    assert strongly_connected(folder_graph(GRAPH, package_of)) == KNOWN_NESTED_FOLDER_CYCLES


def test_the_cycle_finder_finds_cycles():
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", [n for n in MODULES
                                  if not any(n.startswith(f"tilemlir.backends.{f}") for f in FAMILIES)])
def test_only_a_family_names_itself(name):
    tree = ast.parse(MODULES[name].read_text())
    named = sorted({node.value for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and node.value in FAMILIES})
    imported = sorted(t for t in GRAPH[name] if any(t.startswith(f"tilemlir.backends.{f}") for f in FAMILIES))
    assert named == [] and imported == [], (named, imported)
