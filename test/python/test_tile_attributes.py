"""The `tile.*` attributes passes hand each other are defined once, in
tilemlir/dialects/attributes.py: no other module spells one, every row says
who writes and who reads it, tile-verify checks every row, and the typed
helpers read back what they write."""

from __future__ import annotations

import ast
import re

import pytest
from conftest import REPO, run_tool
from mlir import ir

from tilemlir.dialects import attributes, make_context

PACKAGE = REPO / "tilemlir"
ATTRIBUTE_MODULE = PACKAGE / "dialects" / "attributes.py"
SPELLING = re.compile(r"tile\.([A-Za-z_][A-Za-z0-9_]*)")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (prose may name an attribute)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _spelled_attributes(path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            for match in SPELLING.finditer(node.value):
                if f"tile.{match.group(1)}" in attributes.BY_NAME:
                    found.append((node.lineno, match.group(0)))
    return found


def test_no_other_module_spells_an_attribute_name():
    offenders = [f"{path.relative_to(REPO)}:{line}: {name}"
                 for path in sorted(PACKAGE.rglob("*.py")) if path != ATTRIBUTE_MODULE
                 for line, name in _spelled_attributes(path)]
    assert offenders == [], "use tilemlir.dialects.attributes instead of spelling:\n" + "\n".join(offenders)


def test_the_scan_finds_a_spelling():
    """The check above cannot pass vacuously: it sees the table's own strings."""
    assert {name for _, name in _spelled_attributes(ATTRIBUTE_MODULE)} == set(attributes.BY_NAME)


def test_every_row_says_where_it_sits_who_writes_and_who_reads_it():
    assert len(attributes.BY_NAME) == len(attributes.ALL)
    for row in attributes.ALL:
        assert row.name.startswith("tile.") and row.on and row.producer and row.consumers and row.form, row


def test_tile_verify_checks_every_row_where_it_sits():
    """tile-verify reads the same table: every row on an op it does not belong on is refused."""
    text = "func.func @f() {\n" + "".join(
        f"  %{i} = arith.constant {{{row.name} = 1 : i64}} 0 : index\n" for i, row in enumerate(attributes.ALL)
    ) + "  return\n}\n"
    result = run_tool("tile-opt", "-", "-p", "tile-verify", stdin=text)
    assert result.returncode == 1
    for i, row in enumerate(attributes.ALL):
        assert (f"<stdin>:{i + 2}:{len(str(i)) + 7}: error: {row.name} belongs on {' or '.join(row.on)}, "
                "not on arith.constant") in result.stderr


@pytest.mark.parametrize("row", attributes.ALL, ids=lambda row: row.name)
def test_tile_verify_refuses_a_row_of_the_wrong_form(row):
    """Every row's check refuses something: here a string where none is
    wanted, or an integer where a string is."""
    wrong = "1 : i64" if isinstance(row, attributes.StringAttribute) else '"wrong"'
    with make_context():
        assert row.check(ir.Attribute.parse(wrong)) is not None


def test_typed_helpers_round_trip():
    with make_context() as context, ir.Location.unknown():
        context.allow_unregistered_dialects = True
        op = ir.Operation.create("test.op")
        attributes.IN_BOUNDS.mark(op)
        attributes.NUM_STAGES.write(op, 3)
        attributes.WARP_GRID.write(op, [2, 2])
        attributes.TARGET.write(op, "amdgpu:gfx942")
        attributes.KERNEL_ARGUMENTS.write(op, ['{"position": 3}'])
        attributes.SMEM_LAYOUT.write(op, {"pad": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 8),
                                          "transposed": ir.BoolAttr.get(False)})
        assert attributes.IN_BOUNDS.is_on(op) and not attributes.PREFETCH.is_on(op)
        assert attributes.NUM_STAGES.read(op) == 3 and attributes.PIPELINED.read(op) is None
        assert attributes.WARP_GRID.read(op) == (2, 2)
        assert attributes.TARGET.read(op) == "amdgpu:gfx942"
        assert attributes.KERNEL_ARGUMENTS.read(op) == ['{"position": 3}']
        assert ir.IntegerAttr(attributes.SMEM_LAYOUT.read(op)["pad"]).value == 8
        assert str(op) == ('"test.op"() {tile.in_bounds, tile.kernel_arguments = ["{\\22position\\22: 3}"], '
                           'tile.num_stages = 3 : i64, tile.smem_layout = {pad = 8 : i64, transposed = false}, '
                           'tile.target = "amdgpu:gfx942", tile.warp_grid = array<i64: 2, 2>} : () -> ()\n')
        attributes.IN_BOUNDS.remove(op)
        attributes.IN_BOUNDS.remove(op)  # removing an absent one is no error
        assert not attributes.IN_BOUNDS.is_on(op)
        for row in (attributes.NUM_STAGES, attributes.WARP_GRID, attributes.TARGET,
                    attributes.KERNEL_ARGUMENTS, attributes.SMEM_LAYOUT):
            assert row.check(row.get(op)) is None, row.name
