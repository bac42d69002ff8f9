"""--verify-diagnostics matching for every severity. Our passes only emit
errors (the bindings expose Location.emit_error alone), so warnings, remarks
and notes are exercised here with diagnostics built directly."""

from __future__ import annotations

from tilemlir.diagnostics import Chunk, Diag, SourceBuffer, parse_expectations, verify_expectations

TEXT = """\
op1 // expected-warning {{careful}}
// expected-remark@below {{fyi}}
op3
op4
// expected-note@-1 {{attached}}
// expected-error@+2 {{boom}}

op8
"""


def chunk() -> Chunk:
    return Chunk(SourceBuffer("t.mlir", TEXT), TEXT, 1)


def test_expectation_lines():
    found = [(e.severity, e.line, e.message) for e in parse_expectations(chunk())]
    assert found == [
        ("warning", 1, "careful"),
        ("remark", 3, "fyi"),
        ("note", 4, "attached"),
        ("error", 8, "boom"),
    ]


def test_all_severities_match():
    diags = [
        Diag("warning", "be careful here", "t.mlir", 1, 1),
        Diag("remark", "fyi: something", "t.mlir", 3, 1),
        Diag("error", "boom!", "t.mlir", 8, 1, notes=(Diag("note", "attached note", "t.mlir", 4, 1),)),
    ]
    assert verify_expectations(chunk(), diags) == []


def test_severity_must_match():
    diags = [
        Diag("error", "be careful here", "t.mlir", 1, 1),
        Diag("remark", "fyi", "t.mlir", 3, 1),
        Diag("error", "boom", "t.mlir", 8, 1, notes=(Diag("note", "attached", "t.mlir", 4, 1),)),
    ]
    failures = [d.message for d in verify_expectations(chunk(), diags)]
    assert failures == ["unexpected error: be careful here", 'expected warning "careful" was not produced']


def test_op_dump_note_is_ignored():
    """MLIR's 'see current operation' note is not an expectation (mlir-opt
    disables it under --verify-diagnostics)."""
    dump = Diag("note", 'see current operation: "op"()', "t.mlir", 8, 1)
    diags = [
        Diag("warning", "careful", "t.mlir", 1, 1),
        Diag("remark", "fyi", "t.mlir", 3, 1),
        Diag("error", "boom", "t.mlir", 8, 1, notes=(dump, Diag("note", "attached", "t.mlir", 4, 1))),
    ]
    assert verify_expectations(chunk(), diags) == []
