"""Small helpers over the MLIR Python bindings used across passes and tools."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator

from mlir import ir


def walk(op: ir.Operation | ir.OpView) -> Iterator[ir.Operation]:
    """Pre-order walk of `op` and every op nested in it (a generator, so the
    caller may stop early). Do not erase ops while walking."""
    # An explicit stack: recursion would cost depth x ops and Python's stack.
    stack = [op.operation]
    while stack:
        current = stack.pop()
        yield current
        children = [inner.operation for region in current.regions for block in region.blocks
                     for inner in block.operations]
        stack.extend(reversed(children))


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


class CapturedText:
    def __init__(self) -> None:
        self._text = ""

    def text(self) -> str:
        return self._text


def approximate_function(op: ir.Operation | ir.OpView) -> bool:
    """Whether a math op carries `fastmath<afn>` (approximate functions), alone
    or with other flags, or `fast` (all of them): the tile dialect's way of
    asking for the hardware's function unit (docs/kernels.md, the `math` ops)."""
    if "fastmath" not in op.attributes:
        return False
    text = str(op.attributes["fastmath"])  # #arith.fastmath<afn>, <contract,afn>, <fast>, <none>
    flags = text[text.index("<") + 1:text.rindex(">")].split(",")
    return "afn" in flags or "fast" in flags


@contextlib.contextmanager
def capture_native_stderr() -> Iterator[CapturedText]:
    """Captures what native code (LLVM's errs()) writes to file descriptor 2,
    so it can be turned into a proper diagnostic instead of leaking out."""
    captured = CapturedText()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            captured._text = sink.read().decode("utf-8", errors="replace")
