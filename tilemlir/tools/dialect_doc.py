"""Writes docs/dialect.md, the tile dialect's reference, from the dialect's definition.

    python -m tilemlir.tools.dialect_doc > docs/dialect.md
    python -m tilemlir.tools.dialect_doc -o docs/dialect.md

Nothing in the document is written by hand: each op's summary, operands,
results, attributes and regions come from the table IRDL is built from
(`OPS` in tilemlir/dialects/tile.py, printed as tile.irdl.mlir), its rules
from the docstrings of tile-verify's checks (`RULES` in
tilemlir/passes/verify.py), the `tile.*` attributes from their table
(tilemlir/dialects/attributes.py), and the examples from the files in
`EXAMPLES`, which the test suite parses. test/python/test_docs_dialect.py
fails while docs/dialect.md differs from this output.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

PROG = "dialect_doc"
REPO = Path(__file__).resolve().parents[2]
COMMAND = "python -m tilemlir.tools.dialect_doc > docs/dialect.md"


class DocError(Exception):
    """The definition cannot be documented as it stands (a missing example, a check without rules)."""


@dataclass(frozen=True)
class Example:
    """A complete example: a file of the repository, or one function of it
    (its `// -----` chunk, without RUN and CHECK lines)."""

    path: str
    function: str | None
    title: str
    note: str


EXAMPLES: tuple[Example, ...] = (
    Example("examples/gemm_whole_problem.mlir", None, "the whole-problem form",
            "No kernel and no tiles: the compiler chooses them (tile-tiling)."),
    Example("test/Dialect/tile/ops.mlir", "kernel_ops", "a kernel",
            "Every op that lives inside a `tile.kernel`, written with its own tiles."),
)

# How IRDL's base constraints read in words; any other is shown as IRDL spells it.
BASE_WORDS = {
    "!builtin.memref": "a memref",
    "#builtin.type": "a type",
    "#builtin.integer": "an integer attribute",
    "#builtin.dense_array": "a dense array attribute",
}


# --------------------------------------------------------------------------
# Reading the sources
# --------------------------------------------------------------------------

def rules_of(check: Callable) -> list[str]:
    """The `- ` items of a check's docstring, each joined into one line."""
    doc = inspect.getdoc(check) or ""
    rules: list[str] = []
    for line in doc.splitlines():
        if line.startswith("- "):
            rules.append(line[2:].strip())
        elif rules and line.startswith("  ") and line.strip():
            rules[-1] += " " + line.strip()
        elif rules and line.strip():
            raise DocError(f"{check.__qualname__}: the rule list must end the docstring, "
                           f"but it goes on with {line.strip()!r}")
    if not rules:
        raise DocError(f"{check.__qualname__} has no rules: list them in its docstring as `- ` items")
    return rules


def example_text(example: Example, repo: Path = REPO) -> str:
    """The example's source, as the reader sees it."""
    path = repo / example.path
    try:
        text = path.read_text()
    except OSError as error:
        raise DocError(f"cannot read example {example.path}: {error.strerror or error} "
                       "(run from a source checkout of tilemlir)") from None
    if example.function is None:
        return text.strip("\n") + "\n"
    header = f"func.func @{example.function}("
    chunks = [chunk for chunk in text.split("\n// -----\n") if header in chunk]
    if len(chunks) != 1:
        raise DocError(f"{example.path}: expected one `// -----` chunk with {header.rstrip('(')}, "
                       f"found {len(chunks)}")
    kept = [line for line in chunks[0].splitlines()
            if not line.lstrip().startswith(("// CHECK", "// RUN"))]
    return "\n".join(kept).strip("\n") + "\n"


def excerpt(text: str, op_name: str) -> list[str]:
    """The lines of every `op_name` in `text`; an op with a region shows its
    first line, the block's label, `...` and its last two lines."""
    lines = text.splitlines()
    shown: list[str] = []
    for i, line in enumerate(lines):
        if f'"{op_name}"(' not in line:
            continue
        if not line.rstrip().endswith("({"):
            shown.append(line.strip())
            continue
        indent = line[:len(line) - len(line.lstrip())]
        close = next((j for j in range(i + 1, len(lines))
                      if lines[j].startswith(indent + "})")), None)
        if close is None:
            raise DocError(f"{op_name}: its region does not close in the example")
        region = [line, lines[i + 1], indent + "  ...", lines[close - 1], lines[close]]
        shown += [text.removeprefix(indent) for text in region]
    return shown


# --------------------------------------------------------------------------
# Writing markdown
# --------------------------------------------------------------------------

def _cell(text: str) -> str:
    """Text for a table cell: `|` would end the cell, `<` could open an HTML tag."""
    return text.replace("|", "\\|").replace("<", "\\<")


def _pipe(code: str) -> str:
    """Code for a table cell: only `|` needs escaping inside backticks."""
    return code.replace("|", "\\|")


def _bullets(rules: Sequence[str]) -> list[str]:
    """One item per rule, each but the last ending in `;`."""
    items = [rule.rstrip(";.") for rule in rules]
    return [f"- {item}{';' if i < len(items) - 1 else '.'}" for i, item in enumerate(items)]


def _constraint(c) -> tuple[str, str]:
    """(in words, as IRDL spells it) for a tile.Constraint."""
    if c.anything:
        return "anything", "irdl.any"
    if c.base is not None:
        return BASE_WORDS.get(c.base, f"`{c.base}`"), f'irdl.base "{c.base}"'
    words = " or ".join(f"`{choice}`" for choice in c.one_of)
    irdl = ", ".join(f"irdl.is {choice}" for choice in c.one_of)
    return words, irdl if len(c.one_of) == 1 else f"irdl.any_of({irdl})"


def _value_table(heading: str, values) -> list[str]:
    rows = [f"| {heading} | type | IRDL |", "|---|---|---|"]
    for value in values:
        words, irdl = _constraint(value.constraint)
        if value.variadic:
            words = f"any number of {words.removeprefix('a ').removeprefix('an ')}"
            irdl = f"variadic {irdl}"
        rows.append(f"| `{value.name}` | {_cell(words)} | `{_pipe(irdl)}` |")
    return rows + [""]


def _op_section(spec, rules: Sequence[str], examples: Sequence[tuple[int, Example, str]]) -> list[str]:
    name = f"tile.{spec.name}"
    out = [f"## {name}", "", f"{spec.summary[0].upper()}{spec.summary[1:]}.", ""]
    if spec.operands:
        out += _value_table("operand", spec.operands)
        if any(value.variadic for value in spec.operands):
            order = ", ".join(value.name for value in spec.operands)
            out += [("In the generic form it carries `operandSegmentSizes = array<i32: ...>`: "
                    f"how many values each operand takes, in order ({order})."), ""]
    if spec.results:
        out += _value_table("result", spec.results)
    if spec.attributes:
        out += ["| attribute | value | IRDL |", "|---|---|---|"]
        for attribute, constraint in spec.attributes:
            words, irdl = _constraint(constraint)
            out.append(f"| `{attribute}` | {_cell(words)} | `{_pipe(irdl)}` |")
        out.append("")
    if spec.regions:
        out += ["Regions: " + ", ".join(f"`{region}`" for region in spec.regions)
                + " (its block's arguments are free to IRDL; tile-verify checks them).", ""]
    out += ["tile-verify checks:", ""] + _bullets(rules) + [""]
    for number, example, text in examples:
        lines = excerpt(text, name)
        if lines:
            out += [f"From example {number}, {example.title}:", "", "```mlir", *lines, "```", ""]
    return out


def _attribute_table(rows: Iterable) -> list[str]:
    out = ["| attribute | on | form | recorded by | read by |", "|---|---|---|---|---|"]
    for row in rows:
        on = ", ".join(f"`{op}`" for op in row.on)
        out.append(f"| `{row.name}` | {on} | {_cell(row.form)} | {_cell(row.producer)} | "
                   f"{_cell('; '.join(row.consumers))} |")
    return out + [""]


def render(repo: Path = REPO) -> str:
    """docs/dialect.md as it should be."""
    from tilemlir.dialects import attributes, tile
    from tilemlir.passes import verify

    examples = [(i, example, example_text(example, repo)) for i, example in enumerate(EXAMPLES, 1)]
    missing = [f"tile.{spec.name}" for spec in tile.OPS if f"tile.{spec.name}" not in verify.RULES]
    if missing:
        raise DocError(f"no entry in tilemlir/passes/verify.py RULES for {', '.join(missing)}")
    out = [
        "# The tile dialect",
        "",
        (f"<!-- Generated by `{COMMAND}` from tilemlir/dialects/tile.py, "
        "tilemlir/passes/verify.py and tilemlir/dialects/attributes.py; do not edit. -->"),
        "",
        "The ops kernels are written in, what each takes, what `tile-verify` checks and where the",
        "passes record their decisions. tile-opt, tile-compile and tile-run verify every input",
        "against these rules (MLIR's verifier with the IRDL definition, then `tile-verify`).",
        "",
        "Tile ops have no custom syntax: they are written and printed in MLIR's generic form,",
        "`\"tile.gemm\"(%a, %b, %c) {accum_dtype = f32, ...} : (...) -> ()`. Stock tools read",
        "them through the checked-in IRDL:",
        "`mlir-opt-22 --irdl-file=tilemlir/dialects/tile.irdl.mlir FILE`.",
        "",
        "Buffers are builtin memrefs; the memory space says where the buffer lives:",
        "",
        "| memory space | level |",
        "|---|---|",
        f"| none | {tile.GLOBAL} memory (the kernel's arguments) |",
        f"| `#gpu.address_space<workgroup>` | {tile.SHARED} memory (LDS), one buffer per block |",
        (f"| `#gpu.address_space<private>` | a {tile.FRAGMENT}: registers, spread over the block's "
        "threads |"),
        "",
        "Element types a tile buffer may hold: " + ", ".join(f"`{t}`" for t in tile.ELEMENT_TYPES)
        + ".",
        "",
        "Ops: " + ", ".join(f"[tile.{spec.name}](#tile{spec.name})"
                            for spec in tile.OPS) + ".",
        "",
        "## Rules for every op",
        "",
    ]
    out += _bullets([rule for check in verify.EVERY_OP_RULES for rule in rules_of(check)]) + [""]
    for spec in tile.OPS:
        rules = [rule for check in verify.RULES[f"tile.{spec.name}"] for rule in rules_of(check)]
        out += _op_section(spec, rules, examples)
    out += [
        "## The `tile.*` attributes",
        "",
        "Discardable attributes, so upstream passes keep them. Most are recorded by one tile pass",
        "for the next; a hand-written one must have the form below (tile-verify checks it).",
        "",
    ]
    out += _attribute_table(attributes.ALL)
    out += ["## Examples", "", "Each parses and verifies as printed (test/python/test_docs_dialect.py).", ""]
    for number, example, text in examples:
        where = f"`{example.path}`" + ("" if example.function is None else f", `@{example.function}`")
        out += [f"### Example {number}: {example.title}", "", f"{example.note} From {where}:", "",
                "```mlir", text.rstrip("\n"), "```", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def run(argv: list[str]) -> int:
    from tilemlir.diagnostics import UserError
    from tilemlir.tools.common import ToolParser, write_output

    parser = ToolParser(PROG, description="Prints docs/dialect.md, the tile dialect's reference, "
                                          "from the dialect's definition.")
    parser.add_argument("-o", dest="output", default="-", metavar="FILE",
                        help="write here instead of stdout")
    options = parser.parse_command_line(argv)
    try:
        text = render()
    except DocError as error:
        raise UserError(str(error)) from None
    write_output(options.output, text)
    return 0


def main(argv: list[str] | None = None) -> int:
    from tilemlir.tools.common import guarded_main

    return guarded_main(PROG, run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
