"""docs/dialect.md is the dialect's definition, current, and its examples parse.

It is generated (`python -m tilemlir.tools.dialect_doc`) from the IRDL table,
tile-verify's rule docstrings and the `tile.*` attribute table; these tests
fail while the checked-in copy differs, and run every complete example in it
through tile-opt (parse, MLIR's verifier, tile-verify).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import REPO, run_tool

from tilemlir.dialects import tile
from tilemlir.passes import verify
from tilemlir.tools import dialect_doc

DOC = REPO / "docs" / "dialect.md"
UPDATE = ".venv/bin/python -m tilemlir.tools.dialect_doc -o docs/dialect.md"


def blocks(text: str) -> list[str]:
    return re.findall(r"^```mlir\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def test_the_document_is_current():
    assert DOC.read_text() == dialect_doc.render(), f"docs/dialect.md is stale: run `{UPDATE}`"


def test_every_op_has_a_section_rules_and_an_example():
    text = DOC.read_text()
    assert set(verify.RULES) == {f"tile.{spec.name}" for spec in tile.OPS}
    for spec in tile.OPS:
        section = text.split(f"\n## tile.{spec.name}\n", 1)[1].split("\n## ", 1)[0]
        assert "tile-verify checks:\n\n- " in section, spec.name
        assert f'"tile.{spec.name}"(' in "".join(blocks(section)), spec.name


def test_examples_parse_and_verify():
    """The complete examples pass through tile-opt; every excerpt in an op's
    section is lines of one of them."""
    text = DOC.read_text()
    complete = blocks(text.split("\n## Examples\n", 1)[1])
    assert len(complete) == len(dialect_doc.EXAMPLES)
    result = run_tool("tile-opt", "--split-input-file", "-", stdin="\n// -----\n".join(complete))
    assert result.returncode == 0, result.stderr
    example_lines = {line.strip() for example in complete for line in example.splitlines()}
    for excerpt in blocks(text.split("\n## Examples\n", 1)[0]):
        for line in excerpt.splitlines():
            assert line.strip() == "..." or line.strip() in example_lines, line


def test_rules_are_the_items_ending_a_docstring():
    def documented():
        """Intro.

        - one rule,
          over two lines;
        - another.
        """

    assert dialect_doc.rules_of(documented) == ["one rule, over two lines;", "another."]


@pytest.mark.parametrize("doc, problem", [
    ("No list here.", "has no rules: list them in its docstring as `- ` items"),
    ("Rules:\n\n- a rule.\n\nThen prose.", ("the rule list must end the docstring, but it goes on "
                                            "with 'Then prose.'")),
])
def test_a_check_without_a_rule_list_is_refused(doc, problem):
    def check():
        pass

    check.__doc__ = doc
    with pytest.raises(dialect_doc.DocError, match=re.escape(problem)):
        dialect_doc.rules_of(check)


def test_a_missing_example_is_refused(tmp_path):
    missing = dialect_doc.Example("examples/none.mlir", None, "none", "None.")
    with pytest.raises(dialect_doc.DocError, match=r"cannot read example examples/none.mlir: .*"
                                                   r"\(run from a source checkout of tilemlir\)"):
        dialect_doc.example_text(missing, tmp_path)
    (tmp_path / "ops.mlir").write_text("func.func @a() {\n  return\n}\n")
    absent = dialect_doc.Example("ops.mlir", "kernel_ops", "a kernel", "Ops.")
    with pytest.raises(dialect_doc.DocError, match="expected one `// -----` chunk with "
                                                   "func.func @kernel_ops, found 0"):
        dialect_doc.example_text(absent, tmp_path)


def test_the_command_reports_errors_the_tools_way(tmp_path):
    result = subprocess.run([sys.executable, "-m", "tilemlir.tools.dialect_doc", "-o",
                             str(tmp_path / "no" / "dialect.md")],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith("dialect_doc: error: cannot open output file"), result.stderr
    assert "Traceback" not in result.stderr
