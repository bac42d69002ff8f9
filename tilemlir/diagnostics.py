"""Diagnostics the way mlir-opt prints them, and the source handling behind them.

Every tool funnels MLIR diagnostics (from the parser, the verifier, upstream
passes and our Python passes) into `Diag` values, prints them as
`file:line:col: error: message` with the source line and a caret, and can check
them against `// expected-error@below {{...}}` comments (`--verify-diagnostics`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from mlir import ir

SPLIT_MARKER = "// -----"


class UserError(Exception):
    """An error caused by the user's input or flags: printed as `error: ...`, exit 1."""


class ToolWarning(UserWarning):
    """A warning about the installation or the input that the tools print as
    `PROG: warning: MESSAGE` (a Python caller sees an ordinary warning)."""


@dataclass(frozen=True)
class Diag:
    """One diagnostic with a resolved position (line/col are 0 when unknown)."""

    severity: str  # "error" | "warning" | "remark" | "note"
    message: str
    file: str = ""
    line: int = 0
    col: int = 0
    notes: tuple[Diag, ...] = ()
    # A remark's origin: the pass or stage that made it (`tile-select-mma`) and
    # its kind (`REMARK_KINDS`); empty for MLIR's own diagnostics.
    origin: str = ""
    kind: str = ""
    # Collected but not printed: a remark `--remarks` hides, or one an error
    # superseded (--verify-diagnostics still checks it).
    quiet: bool = False
    # An assumed fact's (target, field): by default one remark per target
    # says them all (`shown_as`, printed in place of `message`, which
    # --verify-diagnostics and the API keep).
    fact: tuple[str, str] | None = None
    shown_as: str = ""

    def position(self) -> str:
        if self.file and self.line:
            return f"{self.file}:{self.line}:{self.col}: "
        if self.file:
            return f"{self.file}: "
        return ""


def file_position(location: ir.Location) -> tuple[str, int, int]:
    """The first file:line:col inside a (possibly nested) location."""
    try:
        if location.is_a_file():
            return location.filename, location.start_line, location.start_col
        if location.is_a_name():
            return file_position(location.child_loc)
        if location.is_a_callsite():
            return file_position(location.callee)
        if location.is_a_fused():
            for child in location.locations:
                found = file_position(child)
                if found[1]:
                    return found
    except (AttributeError, ValueError, RuntimeError):
        pass
    return "", 0, 0


_SEVERITY = {"ERROR": "error", "WARNING": "warning", "NOTE": "note", "REMARK": "remark"}


def diag_from_mlir(d, source: SourceBuffer | None = None) -> Diag:
    """Converts an `ir.Diagnostic` or `ir.DiagnosticInfo` into a `Diag`."""
    file, line, col = file_position(d.location)
    if source is not None:
        file, line, col = source.map_position(file, line, col)
    severity = _SEVERITY.get(str(d.severity).rsplit(".", 1)[-1], "error")
    notes = tuple(diag_from_mlir(n, source) for n in d.notes)
    message = str(d.message)
    if message.startswith(_NO_TERMINATOR):
        notes = (Diag("note", _NO_TERMINATOR_HINT, file, line, col), *notes)
    return Diag(severity, message, file, line, col, notes)


# MLIR's words when a region's block does not end in its terminator, and what to add.
_NO_TERMINATOR = "block with no terminator"
_NO_TERMINATOR_HINT = ("end the block with its terminator: `gpu.yield` for a tile.kernel body, "
                       "`return` for a func.func, `scf.yield` for an scf.for or scf.if, "
                       "`scf.reduce` for an scf.parallel")


@dataclass
class SourceBuffer:
    """A whole input file (or stdin) and the text of its lines, for snippets."""

    name: str
    text: str
    lines: list[str] = field(init=False)
    # Line (1-based) whose columns are shifted by the implicit-module prefix.
    shifted_line: int = 0
    shift: int = 0

    def __post_init__(self) -> None:
        self.lines = self.text.split("\n")

    def map_position(self, file: str, line: int, col: int) -> tuple[str, int, int]:
        if file == self.name and line == self.shifted_line and col > self.shift:
            col -= self.shift
        return file, line, col

    def snippet(self, line: int, col: int) -> str:
        if not (1 <= line <= len(self.lines)):
            return ""
        text = self.lines[line - 1]
        caret = " " * max(col - 1, 0) + "^"
        return f"{text}\n{caret}\n"


# An op printed into a diagnostic ("see current operation: ...") may be a whole
# module of thousands of lines; the head says which op it is.
OP_DUMP_LINES = 12


def _shown_message(d: Diag) -> str:
    if d.shown_as:
        return d.shown_as
    lines = d.message.split("\n")
    if d.severity != "note" or not d.message.startswith(_OP_DUMP_NOTE) or len(lines) <= OP_DUMP_LINES:
        return d.message
    rest = len(lines) - OP_DUMP_LINES
    return "\n".join(lines[:OP_DUMP_LINES] + [f"... ({rest} more lines of this op not shown)"])


def format_diag(d: Diag, source: SourceBuffer | None = None) -> str:
    """`file:line:col: severity: message`, the source line and caret, and the
    notes; "" for a quiet diagnostic (`Diag.quiet`)."""
    if d.quiet:
        return ""
    out = f"{d.position()}{d.severity}: {_shown_message(d)}\n"
    if source is not None and d.file == source.name and d.line:
        out += source.snippet(d.line, d.col)
    for note in d.notes:
        out += format_diag(note, source)
    return out


@dataclass
class Chunk:
    """A piece of the input (the whole file, or one `// -----` split)."""

    source: SourceBuffer
    text: str
    first_line: int  # 1-based line of the chunk's first line in the file


def split_input(source: SourceBuffer, split: bool) -> list[Chunk]:
    if not split:
        return [Chunk(source, source.text, 1)]
    chunks, current, start = [], [], 1
    for number, line in enumerate(source.lines, start=1):
        if line.strip() == SPLIT_MARKER:
            chunks.append(Chunk(source, "\n".join(current), start))
            current, start = [], number + 1
        else:
            current.append(line)
    chunks.append(Chunk(source, "\n".join(current), start))
    return chunks


# --------------------------------------------------------------------------
# MLIR tokens, for the checks that must happen before MLIR's parser sees the text
# --------------------------------------------------------------------------

# Deeper bracket nesting than this is refused before parsing: MLIR's parser and
# printer recurse once per level (stock mlir-opt-22 dies of a stack overflow
# near 10000), and so do our Python walks. The tools run on a 512 MiB stack
# (tools/common.py), with room for this depth in every stage.
MAX_NESTING_DEPTH = 8192

_TOKEN = re.compile(
    r"""
      (?P<space>\s+)
    | (?P<comment>//[^\n]*)
    | (?P<string>"(?:[^"\\\n\v\f]|\\[^\n\v\f])*")
    | (?P<badstring>"[^\n\v\f]*)
    | (?P<value>%(?:\d+|[A-Za-z_$.-][\w$.-]*))
    | (?P<block>\^(?:\d+|[A-Za-z_$.-][\w$.-]*))
    | (?P<symbol>@(?:[A-Za-z_][\w$.]*|"(?:[^"\\\n]|\\.)*"))
    | (?P<hash>\#(?:\d+|[A-Za-z_$.-][\w$.-]*))
    | (?P<bang>!(?:\d+|[A-Za-z_$.-][\w$.-]*))
    | (?P<number>0x[0-9A-Fa-f]+|\d+(?:\.\d*(?:[eE][+-]?\d+)?)?)
    | (?P<bare>[A-Za-z_][\w$.]*)
    | (?P<punct>\{-\#|\#-\}|->|\.\.\.|[()\[\]{}<>,:=?*+|\-])
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_OPENERS = {"(": ")", "[": "]", "{": "}", "<": ">", "{-#": "#-}"}
_CLOSERS = frozenset(_OPENERS.values())


class Token(NamedTuple):
    """One MLIR token: `kind` is the group name of `_TOKEN` (`string`, `bare`,
    `value`, `punct`, ...; `space` and `comment` only with `keep_trivia`).
    A tuple: a generated kernel is some 10,000 tokens, lexed before every parse."""

    kind: str
    text: str
    offset: int


def tokenize(text: str, *, keep_trivia: bool = False) -> Iterator[Token]:
    """MLIR's lexical structure, closely enough to find strings, brackets and
    op names; text MLIR's lexer rejects comes out as `badstring`/`other`."""
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "other"
        if keep_trivia or kind not in ("space", "comment"):
            yield Token(kind, match.group(), match.start())


def string_value(literal: str) -> bytes | None:
    """The bytes a string literal stands for, decoded as MLIR's lexer does
    (`\\"`, `\\\\`, `\\n`, `\\t`, two hex digits); None if an escape is invalid."""
    body, out, i = literal[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out += char.encode("utf-8", errors="surrogatepass")
            i += 1
            continue
        escape = body[i + 1 : i + 3]
        if escape[:1] in ('"', "\\"):
            out += escape[:1].encode()
        elif escape[:1] == "n":
            out += b"\n"
        elif escape[:1] == "t":
            out += b"\t"
        elif len(escape) == 2 and all(c in "0123456789abcdefABCDEF" for c in escape):
            out.append(int(escape, 16))
            i += 1
        else:
            return None
        i += 2
    return bytes(out)


def _position(chunk: Chunk, offset: int) -> tuple[int, int]:
    """File line and column (1-based) of a character offset into the chunk."""
    line_start = chunk.text.rfind("\n", 0, offset) + 1
    return chunk.first_line + chunk.text.count("\n", 0, offset), offset - line_start + 1


# Ops whose verifier, in the bindings' MLIR (built with assertions), aborts on
# a value type the LLVM dialect does not know (`index`, a tensor, ...) instead
# of reporting it: LLVMTypes.cpp's isScalableVectorType asserts.
_ABORTING_LLVM_OPS = frozenset({"llvm.atomicrmw"})
_NON_LLVM_TYPE_WORDS = frozenset({"index", "tensor", "memref", "none", "complex", "tuple", "tf32"})
# Builtin types with no LLVM counterpart: signed and unsigned integers (si32,
# ui8) and the small floats (f8E5M2, f4E2M1FN, ...).
_NON_LLVM_TYPE_PATTERN = re.compile(r"(?:[su]i\d+|f\d+E\d+M\d+\w*)")


def _non_llvm_type_after(tokens: list[Token], start: int, text: str) -> Token | None:
    """The first type of the op (from token `start` to the end of the line
    holding its type signature's `:`) that is not an LLVM type written out: a
    builtin word of `_NON_LLVM_TYPE_WORDS`, or a `!alias` (which may hide one)."""
    end = text.find("\n", tokens[start].offset)
    end = len(text) if end < 0 else end
    typed, depth = False, 0
    for token in tokens[start + 1:]:
        if token.offset >= end:
            if typed:
                return None
            end = text.find("\n", token.offset)  # the signature is on a later line
            end = len(text) if end < 0 else end
        if token.kind == "punct":
            depth += (token.text in _OPENERS) - (token.text in _CLOSERS)
            typed = typed or (token.text == ":" and depth <= 0)
        if (token.kind == "bare" and (token.text in _NON_LLVM_TYPE_WORDS
                                      or _NON_LLVM_TYPE_PATTERN.fullmatch(token.text))) or (
                token.kind == "bang" and not token.text.startswith("!llvm.")):
            return token
    return None


def refusal_before_parsing(chunk: Chunk, tokens: list[Token] | None = None) -> Diag | None:
    """A located error for input that would crash MLIR's parser rather than be
    rejected by it: brackets nested deeper than MAX_NESTING_DEPTH (a stack
    overflow), a dense array of `index` elements (`array<index: 1>`, also
    through a type alias), which fails an assertion in the bindings' MLIR, and
    an `llvm.atomicrmw` whose line names a type the LLVM dialect does not know
    (`_ABORTING_LLVM_OPS`). `tokens`: the chunk's, if already lexed."""
    if tokens is None:
        tokens = list(tokenize(chunk.text))
    aliases = {tokens[i].text: tokens[i + 2].text for i in range(len(tokens) - 2)
               if tokens[i].kind == "bang" and tokens[i + 1].text == "="}
    depth = 0
    for i, token in enumerate(tokens):
        message = None
        if token.kind == "punct" and token.text in _OPENERS:
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                message = f"nesting deeper than {MAX_NESTING_DEPTH} levels is not supported"
        elif token.kind == "punct" and token.text in _CLOSERS:
            depth = max(depth - 1, 0)
        elif token.text == "array" and i + 2 < len(tokens) and tokens[i + 1].text == "<":
            element, seen = tokens[i + 2].text, set()
            while element in aliases and element not in seen:
                seen.add(element)
                element = aliases[element]
            if element == "index":
                token = tokens[i + 2]
                message = "a dense array of 'index' elements is not supported; use i64"
        elif (token.kind == "bare" and token.text in _ABORTING_LLVM_OPS) or (
                token.kind == "string" and (string_value(token.text) or b"").decode("utf-8", "replace")
                in _ABORTING_LLVM_OPS):
            found = _non_llvm_type_after(tokens, i, chunk.text)
            if found is not None:
                token = found
                message = (f"llvm.atomicrmw of '{found.text}' is not supported: its value type must be an "
                           "LLVM type written out (an integer, float, vector or !llvm.ptr)")
        if message is not None:
            line, col = _position(chunk, token.offset)
            return Diag("error", message, chunk.source.name, line, col)
    return None


def region_nesting_error(op: ir.Operation, limit: int, source: SourceBuffer | None) -> Diag | None:
    """A located error at the first op (in pre-order) inside more than `limit`
    nested regions; iterative, so any depth the parser accepted is fine here."""
    pending = [(op.operation, 0)]
    while pending:
        current, depth = pending.pop()
        if depth > limit:
            file, line, col = file_position(current.location)
            if source is not None:
                file, line, col = source.map_position(file, line, col)
            return Diag("error", f"'{current.name}' is nested in more than {limit} regions, "
                                 "which code generation does not support", file, line, col)
        inner = [child.operation for region in current.regions for block in region.blocks
                 for child in block.operations]
        pending.extend((child, depth + 1) for child in reversed(inner))
    return None


_DIALECT_NAMESPACE = re.compile(rb"[A-Za-z_][\w$]*")


def names_a_dialect_alone(value: bytes, context: ir.Context) -> bool:
    """True for `"arith"` or `"arith."`: a generic op of that name has no
    dialect, yet MLIR's parser accepts it (the namespace is loaded), and the
    bindings' MLIR, built with assertions, aborts the process creating it."""
    namespace, _, rest = value.partition(b".")
    if rest or not _DIALECT_NAMESPACE.fullmatch(namespace):
        return False
    try:
        context.dialects[namespace.decode()]
    except (IndexError, KeyError, ValueError, RuntimeError):
        return False
    return True


def _mentions_a_dialect_alone(tokens: list[Token], context: ir.Context) -> bool:
    """Whether any string literal could be an op name that `names_a_dialect_alone`.
    Every string counts (not only those in op position): a false alarm costs
    only a second parse."""
    seen: set[bytes] = set()
    for token in tokens:
        if token.kind != "string":
            continue
        value = string_value(token.text)
        if value is None or value in seen:
            continue
        seen.add(value)
        if names_a_dialect_alone(value, context):
            return True
    return False


_CODE_LINE = re.compile(r"^\s*(?!//)\S")
_ALIAS_LINE = re.compile(r"^\s*[#!][A-Za-z_][\w.$-]*\s*=")


class ParseFailure(Exception):
    def __init__(self, diags: list[Diag]):
        super().__init__("\n".join(d.message for d in diags))
        self.diags = diags


def parse_chunk(chunk: Chunk, context: ir.Context) -> ir.Operation:
    """Parses a chunk into a `builtin.module` op whose locations point into the
    original file (same line and column numbers as in the file).

    Like mlir-opt, top-level ops that are not a single module are wrapped in an
    implicit `builtin.module`. The binding's named parser has no implicit
    module, so the wrapper is written into the text where it moves nothing: on
    a padding line before the chunk or on a leading comment line. Only when the
    very first line of the file is code do its columns shift, and diagnostics
    on that line are shifted back.
    """
    lines = chunk.text.split("\n")
    padding = ["" for _ in range(chunk.first_line - 1)]
    prefix = "module {"
    source = chunk.source
    # Attribute/type alias definitions must stay outside the module: open it
    # at the end of the last alias line that precedes the first operation.
    last_alias = None
    for i, line in enumerate(lines):
        if _ALIAS_LINE.match(line):
            last_alias = i
        elif _CODE_LINE.match(line):
            break
    if last_alias is not None:
        line = lines[last_alias]
        cut = line.find("//")
        cut = len(line) if cut < 0 else cut
        lines[last_alias] = f"{line[:cut]} {prefix} {line[cut:]}"
    elif padding:
        padding[0] = prefix
    else:
        first_code = next((i for i, text in enumerate(lines) if _CODE_LINE.match(text)), None)
        if first_code == 0:
            source.shifted_line, source.shift = chunk.first_line, len(prefix)
        lines = [prefix + lines[0], *lines[1:]]
    # Alias definitions after the last operation (e.g. `#loc = loc(...)` from
    # debug-info printing) must follow the module's closing brace.
    closing = len(lines)
    while closing > 0 and (_ALIAS_LINE.match(lines[closing - 1]) or not _CODE_LINE.match(lines[closing - 1])):
        closing -= 1
    if any(_ALIAS_LINE.match(line) for line in lines[closing:]) and closing > 0:
        line = lines[closing - 1]
        cut = line.find("//")
        cut = len(line) if cut < 0 else cut
        lines[closing - 1] = f"{line[:cut]} }} {line[cut:]}"
        text = "\n".join(padding + lines) + "\n"
    else:
        text = "\n".join(padding + lines) + "\n}\n"
    tokens = list(tokenize(chunk.text))
    refusal = refusal_before_parsing(chunk, tokens)
    if refusal is not None:
        raise ParseFailure([refusal])
    with context:
        if not context.allow_unregistered_dialects and _mentions_a_dialect_alone(tokens, context):
            _refuse_ops_without_dialect(text, source, context)
        wrapper = _parse(text, source)
    body = wrapper.regions[0].blocks[0]
    ops = list(body.operations)
    if len(ops) == 1 and ops[0].name == "builtin.module":
        inner = ops[0].operation
        inner.detach_from_parent()
        return inner
    return wrapper.operation


def _parse(text: str, source: SourceBuffer) -> ir.Operation:
    try:
        return ir.Operation.parse(text, source_name=source.name)
    except ir.MLIRError as error:
        diags = [diag_from_mlir(d, source) for d in error.error_diagnostics]
        raise ParseFailure(diags or [Diag("error", error.message, source.name)]) from None
    except RuntimeError as error:
        # A diagnostic quoting a string whose bytes are not UTF-8 (e.g. an
        # attribute named "\ff") cannot become a Python str in the bindings.
        if "conversion error" not in str(error):
            raise
        raise ParseFailure(_diags_without_non_utf8_strings(text, source)) from None


def _diags_without_non_utf8_strings(text: str, source: SourceBuffer) -> list[Diag]:
    """The parser's errors for `text` with every non-UTF-8 string literal
    blanked to `"???"` of the same length (so every position stays), or an
    error at the first such string when only the bytes themselves failed."""
    first = None
    pieces, end = [], 0
    for token in tokenize(text):
        value = string_value(token.text) if token.kind == "string" else None
        if value is None:
            continue
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            first = token if first is None else first
            pieces += [text[end:token.offset], '"' + "?" * (len(token.text) - 2) + '"']
            end = token.offset + len(token.text)
    try:
        ir.Operation.parse("".join(pieces) + text[end:], source_name=source.name)
    except ir.MLIRError as error:
        return mlir_error_diags(error, source)
    except RuntimeError:
        pass
    line, col = 1, 1
    if first is not None:
        line = text.count("\n", 0, first.offset) + 1
        col = first.offset - (text.rfind("\n", 0, first.offset) + 1) + 1
    _, line, col = source.map_position(source.name, line, col)
    return [Diag("error", "a string whose bytes are not UTF-8 is not supported here", source.name, line, col)]


def _refuse_ops_without_dialect(text: str, source: SourceBuffer, context: ir.Context) -> None:
    """Parses with unregistered dialects allowed, where creating an op named
    like `"arith"` is safe, then verifies with them disallowed again: the
    verifier reports such ops as stock mlir-opt does ("created with
    unregistered dialect"). When there are none, the caller's ordinary parse
    creates only ops this one did, so it cannot abort either."""
    context.allow_unregistered_dialects = True
    try:
        probe = _parse(text, source)
    finally:
        context.allow_unregistered_dialects = False
    try:
        probe.verify()
    except ir.MLIRError as error:
        raise ParseFailure(mlir_error_diags(error, source)) from None


# --------------------------------------------------------------------------
# Remarks, and which are printed (`--remarks=SPEC`, like clang's -Rpass=)
# --------------------------------------------------------------------------

# What a remark tells the user. What a decision cost them is printed by
# default; the rest with --remarks=all or a regex naming the remark's pass.
REMARK_KINDS = {
    "speed": "a decision that costs run time (a slower path taken, an option given up)",
    "precision": "a decision that costs accuracy (a narrower type computed in)",
    "assumption": "a fact about the target that is not known and is assumed (said once per compile)",
    "info": "what the compiler chose, and why",
}
DEFAULT_REMARK_KINDS = frozenset({"speed", "precision", "assumption"})
REMARK_SPEC_HELP = ("none, all, default (what costs speed or precision, and a target's assumed facts in one) "
                    "or a Python regular expression searched in the remark's pass name "
                    "(e.g. 'tile-infer-layout|tile-tiling')")


@dataclass(frozen=True)
class RemarkFilter:
    """Which remarks are printed: `default`, `all`, `none`, or those whose
    pass (`Diag.origin`) a regular expression matches (re.search)."""

    spec: str = "default"
    pattern: re.Pattern | None = None

    @classmethod
    def parse(cls, spec: str | None) -> RemarkFilter:
        if spec is None or spec in ("default", "all", "none"):
            return cls(spec or "default")
        if not spec:
            raise UserError(f"--remarks needs a value: {REMARK_SPEC_HELP}")
        try:
            return cls(spec, re.compile(spec))
        except re.error as error:
            raise UserError(f"--remarks: '{spec}' is not a valid regular expression ({error}); "
                            f"expected {REMARK_SPEC_HELP}") from None

    def shows(self, origin: str, kind: str) -> bool:
        if self.pattern is not None:
            return self.pattern.search(origin) is not None
        return self.spec == "all" or (self.spec == "default" and kind in DEFAULT_REMARK_KINDS)


_remark_filter = RemarkFilter()


def configure_remarks(spec: str | None) -> None:
    """Sets which remarks the tools print and the API returns (`--remarks=SPEC`,
    `RemarkFilter`); None is "default". A bad regular expression is a UserError."""
    global _remark_filter
    _remark_filter = RemarkFilter.parse(spec)


@contextlib.contextmanager
def remarks_configured(spec: str | None) -> Iterator[None]:
    """`configure_remarks(spec)` for the duration of a block (the API's
    `remarks=` argument); the setting before comes back after."""
    global _remark_filter
    before = _remark_filter
    _remark_filter = RemarkFilter.parse(spec) if spec is not None else before
    try:
        yield
    finally:
        _remark_filter = before


@dataclass
class _RemarkSession:
    """An active `collect_diagnostics`: where its diagnostics go, and the
    assumed facts already said in it."""

    sink: list[Diag]
    source: SourceBuffer | None
    said: set[str] = field(default_factory=set)


# Where `emit_remark` sends remarks: the active `collect_diagnostics`, outermost first.
_REMARK_SINKS: list[_RemarkSession] = []


def emit_remark(location: ir.Location, message: str, *, origin: str, kind: str,
                fact: tuple[str, str] | None = None) -> None:
    """A remark about what a pass decided (e.g. a layout conversion it adds),
    located like MLIR's diagnostics; `origin` names the pass or stage that made
    it, `kind` is one of `REMARK_KINDS`. The Python bindings cannot emit
    remarks through MLIR's engine, so passes call this: it reaches the
    outermost `collect_diagnostics` (the tools print it as
    `file:line:col: remark: ...`, and --verify-diagnostics checks every remark
    against `expected-remark`); without one it is dropped. A remark
    `--remarks` hides is kept quiet (`Diag.quiet`); an assumed fact is said
    once per collector (the text names the target and the fact), not per op,
    and with `fact=(target, field)` the default prints one remark per target
    for all of its assumed facts (`fold_assumed_facts`)."""
    if kind not in REMARK_KINDS:
        raise ValueError(f"remark kind '{kind}' is not one of {', '.join(REMARK_KINDS)}")
    if not _REMARK_SINKS:
        return
    # The outermost collector: a tool's, which prints what it collects (an
    # inner one, a compile job's, keeps only errors).
    session = _REMARK_SINKS[0]
    file, line, col = file_position(location)
    if session.source is not None:
        file, line, col = session.source.map_position(file, line, col)
    if kind == "assumption":
        if message in session.said:
            return
        session.said.add(message)
    quiet = not _remark_filter.shows(origin, kind)
    session.sink.append(Diag("remark", message, file, line, col, origin=origin, kind=kind, quiet=quiet,
                             fact=fact))


def shown_remarks(diags: list[Diag]) -> list[Diag]:
    """The remarks among `diags` that are printed (not `quiet`), as printed."""
    return [dataclasses.replace(d, message=d.shown_as) if d.shown_as else d
            for d in diags if d.severity == "remark" and not d.quiet]


def remark_mark() -> int | None:
    """Where the outermost collector's diagnostics end now (None without one):
    `withdraw_remarks` takes back the remarks received after it."""
    return len(_REMARK_SINKS[0].sink) if _REMARK_SINKS else None


def remarks_since(mark: int | None) -> list[Diag]:
    """The remarks the outermost collector received after `mark`
    (`remark_mark`), left where they are."""
    if mark is None or not _REMARK_SINKS:
        return []
    return [d for d in _REMARK_SINKS[0].sink[mark:] if d.severity == "remark"]


def withdraw_remarks(mark: int | None) -> list[Diag]:
    """Removes from the outermost collector the remarks it received after
    `mark` (`remark_mark`), and returns them (e.g. those of a compile attempt
    the driver replaces by another, whose assumed facts may be said again)."""
    if mark is None or not _REMARK_SINKS:
        return []
    session = _REMARK_SINKS[0]
    later = session.sink[mark:]
    session.sink[mark:] = [d for d in later if d.severity != "remark"]
    withdrawn = [d for d in later if d.severity == "remark"]
    session.said -= {d.message for d in withdrawn if d.kind == "assumption"}
    return withdrawn


def restore_remarks(remarks: list[Diag]) -> None:
    """Gives the outermost collector back remarks `withdraw_remarks` took."""
    if _REMARK_SINKS:
        session = _REMARK_SINKS[0]
        session.sink.extend(remarks)
        session.said |= {d.message for d in remarks if d.kind == "assumption"}


def fold_assumed_facts(sink: list[Diag]) -> None:
    """With the default `--remarks`, a target's assumed facts are said in one
    remark, at the first of them; `--remarks=all` (or a regex naming the
    pass) says each, with what it assumes and why. A single fact keeps its
    own words."""
    if _remark_filter.spec != "default" or _remark_filter.pattern is not None:
        return
    by_target: dict[str, list[int]] = {}
    for index, d in enumerate(sink):
        if d.severity == "remark" and d.fact is not None and not d.quiet:
            by_target.setdefault(d.fact[0], []).append(index)
    for target, indices in by_target.items():
        if len(indices) < 2:
            continue
        fields = ", ".join(dict.fromkeys(sink[i].fact[1] for i in indices))
        first = sink[indices[0]]
        origins = "/".join(dict.fromkeys(sink[i].origin for i in indices if sink[i].origin))
        sink[indices[0]] = dataclasses.replace(first, shown_as=(
            f"{origins + ': ' if origins else ''}{len(indices)} facts of {target} are not publicly known and are assumed at their least "
            f"favourable stated values: {fields} (--remarks=all says each and why; a descriptor stating "
            f"them, --target-desc=FILE, replaces the assumptions)"))
        for i in indices[1:]:
            sink[i] = dataclasses.replace(sink[i], quiet=True)


def _quiet_superseded_remarks(sink: list[Diag]) -> None:
    """An error is what the user must act on: the remarks before it (a
    padding dropped, a layout converted) are moot, and kept quiet."""
    if any(d.severity == "error" for d in sink):
        sink[:] = [dataclasses.replace(d, quiet=True) if d.severity == "remark" else d for d in sink]


@contextlib.contextmanager
def collect_diagnostics(context: ir.Context, sink: list[Diag], source: SourceBuffer | None):
    """Routes every diagnostic emitted in `context` into `sink`, and the
    remarks passes make with `emit_remark`. When the block ends with an error
    in `sink`, its remarks become quiet (`Diag.quiet`)."""

    def handler(d) -> bool:
        sink.append(diag_from_mlir(d, source))
        return True

    handle = context.attach_diagnostic_handler(handler)
    _REMARK_SINKS.append(_RemarkSession(sink, source))
    try:
        yield sink
    finally:
        _REMARK_SINKS.pop()
        handle.detach()
        _quiet_superseded_remarks(sink)
        fold_assumed_facts(sink)


def mlir_error_diags(error: ir.MLIRError, source: SourceBuffer | None) -> list[Diag]:
    diags = [diag_from_mlir(d, source) for d in error.error_diagnostics]
    return diags or [Diag("error", error.message)]


# --------------------------------------------------------------------------
# --verify-diagnostics
# --------------------------------------------------------------------------

_EXPECTED = re.compile(
    r"expected-(?P<kind>error|warning|remark|note)"
    r"(?:@(?P<where>above|below|[+-]\d+))?"
    r"\s*\{\{(?P<message>.*?)\}\}"
)


@dataclass
class Expectation:
    severity: str
    message: str
    line: int  # the line the diagnostic must be reported on
    comment_line: int
    comment_col: int
    matched: bool = False


def parse_expectations(chunk: Chunk) -> list[Expectation]:
    """MLIR's expected-* comments: `@below`, `@above`, `@+N`, `@-N`, `{{substring}}`."""
    found = []
    for offset, text in enumerate(chunk.text.split("\n")):
        line = chunk.first_line + offset
        for match in _EXPECTED.finditer(text):
            where = match.group("where")
            if where is None:
                target = line
            elif where == "below":
                target = line + 1
            elif where == "above":
                target = line - 1
            else:
                target = line + int(where)
            found.append(
                Expectation(match.group("kind"), match.group("message"), target, line, match.start() + 1)
            )
    return found


# MLIR attaches this note to verifier errors; mlir-opt turns it off under
# --verify-diagnostics (printOpOnDiagnostic), so expectations never mention it.
_OP_DUMP_NOTE = "see current operation:"


def _flatten(diags: list[Diag]) -> Iterator[Diag]:
    for d in diags:
        if d.severity == "note" and d.message.startswith(_OP_DUMP_NOTE):
            continue
        yield d
        yield from _flatten(list(d.notes))


def verify_expectations(chunk: Chunk, diags: list[Diag]) -> list[Diag]:
    """Matches produced diagnostics against the chunk's expectations; returns
    the failures (unexpected diagnostics, expectations never produced)."""
    expectations = parse_expectations(chunk)
    failures = []
    for d in _flatten(diags):
        match = next(
            (
                e
                for e in expectations
                if not e.matched
                and e.severity == d.severity
                and e.line == d.line
                and d.file == chunk.source.name
                and e.message in d.message
            ),
            None,
        )
        if match is not None:
            match.matched = True
        else:
            failures.append(Diag("error", f"unexpected {d.severity}: {d.message}", d.file, d.line, d.col))
    for e in expectations:
        if not e.matched:
            failures.append(
                Diag(
                    "error",
                    f'expected {e.severity} "{e.message}" was not produced',
                    chunk.source.name,
                    e.comment_line,
                    e.comment_col,
                )
            )
    return failures
