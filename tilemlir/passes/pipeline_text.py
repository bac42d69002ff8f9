"""Textual pass pipelines mixing tile passes and upstream MLIR passes.

Python passes cannot be named in `PassManager.parse`, so tilemlir owns the
parser. The grammar is MLIR's:

    pipeline := element (',' element)*
    element  := NAME ('{' options '}')? | OP_NAME '(' pipeline? ')'

`builtin.module(...)` around the whole list is optional. Each element becomes a
`PassManager.add` call: tile passes as Python callables, everything else as
text handed to MLIR's own parser unchanged. A tile pass inside an anchored
sub-pipeline such as `func.func(canonicalize,tile-verify)` runs on every op of
that name, in order with the upstream passes around it.

MLIR prints a PassManager's Python passes by name only, and flattens the
anchors of tile passes. `print_elements` prints what was parsed instead:
upstream passes as MLIR prints them (every option spelled out), tile passes
with the options they run with, anchors kept. Its output parses back to the
same passes and prints the same again.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mlir import ir, passmanager

from tilemlir.diagnostics import UserError
from tilemlir.irutil import capture_native_stderr
from tilemlir.passes.registry import is_tile_pass, make_pass, pass_names


class PipelineError(UserError):
    pass


@dataclass(frozen=True)
class Element:
    name: str
    options: str | None = None
    children: tuple[Element, ...] | None = None  # set for an anchored sub-pipeline

    def text(self) -> str:
        if self.children is not None:
            return f"{self.name}({','.join(c.text() for c in self.children)})"
        return f"{self.name}{{{self.options}}}" if self.options is not None else self.name


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def fail(self, message: str) -> PipelineError:
        caret = " " * self.pos + "^"
        return PipelineError(f"invalid pass pipeline: {message}\n  {self.text}\n  {caret}")

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def name(self) -> str:
        self.skip_space()
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] in "_.-"):
            self.pos += 1
        if start == self.pos:
            found = repr(self.text[self.pos]) if self.pos < len(self.text) else "end of pipeline"
            raise self.fail(f"expected a pass or operation name, found {found}")
        return self.text[start:self.pos]

    def options(self) -> str:
        # Called with pos at '{'; options may nest braces (e.g. dictionary values).
        depth, start = 0, self.pos + 1
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    self.pos += 1
                    return self.text[start:self.pos - 1]
            self.pos += 1
        raise self.fail("unterminated '{' in pass options")

    def element(self) -> Element:
        name = self.name()
        char = self.peek()
        if char == "{":
            return Element(name, options=self.options())
        if char == "(":
            self.pos += 1
            children = () if self.peek() == ")" else self.elements()
            if self.peek() != ")":
                raise self.fail("expected ')' to close the anchored pipeline")
            self.pos += 1
            return Element(name, children=tuple(children))
        return Element(name)

    def elements(self) -> list[Element]:
        found = [self.element()]
        while self.peek() == ",":
            self.pos += 1
            found.append(self.element())
        return found


def parse_pipeline(text: str) -> list[Element]:
    """Parses a pipeline string into elements (without the builtin.module anchor)."""
    parser = _Parser(text)
    if not parser.peek():
        return []
    elements = parser.elements()
    if parser.peek():
        raise parser.fail(f"unexpected {parser.peek()!r}")
    if len(elements) == 1 and elements[0].children is not None and elements[0].name == "builtin.module":
        return list(elements[0].children)
    for element in elements:
        if element.children is not None and element.name == "builtin.module":
            raise PipelineError("invalid pass pipeline: builtin.module(...) must wrap the whole pipeline")
    return elements


@functools.cache
def upstream_pass_names() -> tuple[str, ...]:
    """Names of the upstream passes, read from the pinned mlir-opt's --help
    (only needed to suggest a spelling for an unknown pass)."""
    spec = importlib.util.find_spec("mlir")
    roots = list(spec.submodule_search_locations or []) if spec else []
    candidates = [Path(root) / "bin" / "mlir-opt" for root in roots] + [Path("/usr/bin/mlir-opt-22")]
    for binary in candidates:
        if not binary.exists():
            continue
        try:
            help_text = subprocess.run(
                [str(binary), "--help"], capture_output=True, text=True, timeout=30, check=False
            ).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        # Pass entries have their description after "-   "; pass options after "- ".
        names = re.findall(r"^\s+--([\w.-]+)\s+-   ", help_text, flags=re.MULTILINE)
        return tuple(names)
    return ()


def _unknown_pass(name: str) -> PipelineError:
    candidates = list(pass_names()) + list(upstream_pass_names())
    close = difflib.get_close_matches(name, list(dict.fromkeys(candidates)), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return PipelineError(f"'{name}' does not refer to a registered pass or pass pipeline{hint}")


def _check_upstream(text: str, name: str, anchor: str, context: ir.Context) -> None:
    """Raises a PipelineError saying why MLIR refuses the upstream element `text`
    (an unknown pass, with suggestions, or MLIR's own option error)."""
    scratch = passmanager.PassManager(anchor, context=context)
    with capture_native_stderr() as captured:
        try:
            scratch.add(text)
            error = None
        except ValueError as raised:
            error = raised
    if error is None:
        return
    message = str(error)
    if "does not refer to a registered pass" in message:
        raise _unknown_pass(name) from None
    # MLIR's option parser reports the precise problem on the C++ stderr.
    detail = captured.text().strip().lstrip(":").strip() or message.split("error:", 1)[-1].strip()
    raise PipelineError(f"invalid options for pass '{name}': {detail.splitlines()[0]}") from None


def add_elements(
    pm: passmanager.PassManager,
    elements: list[Element],
    *,
    context: ir.Context,
    overrides: dict | None = None,
    anchor: str | None = None,
) -> None:
    """Adds parsed elements to `pm` (anchored on builtin.module or 'any')."""
    for element in elements:
        if element.children is not None:
            # Deeper nesting with tile passes inside is not supported (upstream-only
            # nesting is handed to MLIR as text and keeps working).
            if anchor is not None and any(is_tile_pass(c.name) for c in element.children):
                raise PipelineError(
                    f"tile passes may be nested at most one level deep (inside '{anchor}')"
                )
            if not any(is_tile_pass(c.name) for c in element.children):
                _add_upstream(pm, _nest(anchor, element.text()),
                              lambda element=element: _check_nested(element, context))
                continue
            for child in element.children:
                add_elements(pm, [child], context=context, overrides=overrides, anchor=element.name)
        elif is_tile_pass(element.name):
            tile_pass = make_pass(element.name, element.options, overrides)
            pm.add(
                tile_pass.as_mlir_callable(anchor),
                name=element.name,
                argument=element.name,
                description=tile_pass.summary,
            )
        else:
            _add_upstream(pm, _nest(anchor, element.text()), lambda element=element: _check_upstream(
                element.text(), element.name, anchor or "builtin.module", context))


def _add_upstream(pm: passmanager.PassManager, text: str, diagnose) -> None:
    """Hands `text` to MLIR's pipeline parser; when it refuses, `diagnose()`
    finds the element at fault and raises a PipelineError naming it."""
    with capture_native_stderr():  # MLIR's parser also writes its complaint to stderr
        try:
            pm.add(text)
            return
        except ValueError as error:
            refused = error
    diagnose()
    raise PipelineError(f"invalid pass pipeline '{text}': {refused}")


def _nest(anchor: str | None, text: str) -> str:
    return f"{anchor}({text})" if anchor else text


def _check_nested(element: Element, context: ir.Context) -> None:
    for child in element.children or ():
        if child.children is None:
            _check_upstream(child.text(), child.name, element.name, context)
        else:
            _check_nested(child, context)


def print_elements(
    elements: list[Element],
    *,
    context: ir.Context,
    overrides: dict | None = None,
    anchor: str | None = None,
) -> str:
    """The elements as `builtin.module(...)` text that reproduces them (see the
    module docstring); inside an anchor (`anchor` set), without the wrapper."""
    printed = []
    for element in elements:
        if element.children is not None and any(is_tile_pass(c.name) for c in element.children):
            inner = print_elements(list(element.children), context=context, overrides=overrides,
                                   anchor=element.name)
            printed.append(f"{element.name}({inner})")
        elif element.children is None and is_tile_pass(element.name):
            printed.append(str(make_pass(element.name, element.options, overrides)))
        else:
            printed.append(_upstream_text(element.text(), anchor or "builtin.module", context))
    body = ",".join(printed)
    return body if anchor is not None else f"builtin.module({body})"


def _upstream_text(text: str, anchor: str, context: ir.Context) -> str:
    """An upstream element as MLIR prints it (defaults of its options spelled out)."""
    scratch = passmanager.PassManager(anchor, context=context)
    with capture_native_stderr():
        scratch.add(text)
    printed = str(scratch)
    return printed[len(anchor) + 1:-1]


@functools.cache
def is_upstream_pass(name: str) -> bool:
    """Whether MLIR has a pass or pass pipeline registered as `name`."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
        return False
    with ir.Context() as context, capture_native_stderr():
        try:
            passmanager.PassManager("any", context=context).add(name)
        except ValueError as error:
            return "does not refer to a registered pass" not in str(error)
    return True
