"""Small helpers over the MLIR Python bindings used across passes and tools."""

from __future__ import annotations

from collections.abc import Iterator

from mlir import ir


def walk(op: ir.Operation | ir.OpView) -> Iterator[ir.Operation]:
    """Pre-order walk of `op` and every op nested in it (a generator, so the
    caller may stop early). Do not erase ops while walking."""
    op = op.operation
    yield op
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield from walk(inner)


def parent_ops(op: ir.Operation | ir.OpView) -> Iterator[ir.Operation]:
    """The ops enclosing `op`, innermost first."""
    current = op.operation
    while True:
        try:
            parent = current.parent
        except (ValueError, RuntimeError):
            return
        if parent is None:
            return
        current = parent.operation
        yield current


def enclosing(op: ir.Operation | ir.OpView, name: str) -> ir.Operation | None:
    return next((p for p in parent_ops(op) if p.name == name), None)


def type_str(t: ir.Type) -> str:
    return str(t)
