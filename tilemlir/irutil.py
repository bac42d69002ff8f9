"""Small helpers over the MLIR Python bindings used across passes and tools."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator

from mlir import ir


def walk(op: ir.Operation | ir.OpView) -> list[ir.Operation]:
    """`op` and every op nested in it, in pre-order, as a list: MLIR's own
    walk (C++), which visits a GPU-level kernel of 11,000 ops in 8 ms where
    the bindings' region, block and op lists took 45 (December 2026; a
    compile walks its module some 15 times). An op erased after the walk
    leaves the ops nested in it in the list: collect, then erase."""
    found: list[ir.Operation] = []

    def visit(inner: ir.Operation) -> ir.WalkResult:
        found.append(inner)
        return ir.WalkResult.ADVANCE

    op.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def erase_unused(root: ir.Operation | ir.OpView, removable: Callable[[ir.Operation], bool]) -> None:
    """Erases the ops nested in `root` that `removable` accepts and whose
    results nothing uses, innermost and last first, until none is left (an
    erased op's operands may leave their producers unused in turn)."""
    changed = True
    while changed:
        changed = False
        for op in reversed(walk(root)[1:]):
            if removable(op) and all(not list(result.uses) for result in op.results):
                op.erase()
                changed = True


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


def constant_int(value: ir.Value) -> int | None:
    """The integer of an `arith.constant`, or of an integer `llvm.mlir.constant`
    (the LLVM dialect's), None for any other value."""
    owner = value.owner
    if isinstance(owner, ir.OpView | ir.Operation) and owner.name == "arith.constant":
        return ir.IntegerAttr(owner.attributes["value"]).value
    if isinstance(owner, ir.OpView | ir.Operation) and owner.name == "llvm.mlir.constant" \
            and isinstance(owner.attributes["value"], ir.IntegerAttr):
        return ir.IntegerAttr(owner.attributes["value"]).value
    return None


def enclosing(op: ir.Operation | ir.OpView, name: str) -> ir.Operation | None:
    return next((p for p in parent_ops(op) if p.name == name), None)


class CapturedText:
    def __init__(self) -> None:
        self._text = ""

    def text(self) -> str:
        return self._text


def element_of(type_: ir.Type) -> ir.Type:
    """A vector type's element type; any other type itself."""
    return ir.VectorType(type_).element_type if isinstance(type_, ir.VectorType) else type_


def shaped_like(type_: ir.Type, element: ir.Type) -> ir.Type:
    """`element`, or a vector of it shaped as `type_` where that is a vector."""
    return ir.VectorType.get(ir.VectorType(type_).shape, element) if isinstance(type_, ir.VectorType) else element


def llvm_constant(value: int, type_: ir.Type) -> ir.Value:
    """An `llvm.mlir.constant` of the integer `value` in `type_` (an integer
    type, or a vector of one: the value in every element), at the current
    insertion point."""
    attribute = ir.IntegerAttr.get(element_of(type_), value)
    if isinstance(type_, ir.VectorType):
        attribute = ir.DenseElementsAttr.get_splat(type_, attribute)
    return ir.Operation.create("llvm.mlir.constant", results=[type_], attributes={"value": attribute}).result


def fastmath_flags(op: ir.Operation | ir.OpView, name: str = "fastmath") -> set[str]:
    """The fast-math flags in the op's attribute `name` (arith and math:
    `fastmath`; the LLVM dialect: `fastmathFlags`), e.g. {"contract", "afn"};
    empty without the attribute or for <none>."""
    if name not in op.attributes:
        return set()
    text = str(op.attributes[name])  # #arith.fastmath<afn>, <contract,afn>, <fast>, <none>
    return {flag.strip() for flag in text[text.index("<") + 1:text.rindex(">")].split(",")} - {"none"}


def approximate_function(op: ir.Operation | ir.OpView) -> bool:
    """Whether a math op carries `fastmath<afn>` (approximate functions), alone
    or with other flags, or `fast` (all of them): the tile dialect's way of
    asking for the hardware's function unit (docs/kernels.md, the `math` ops)."""
    flags = fastmath_flags(op)
    return "afn" in flags or "fast" in flags


# While any capture is active, file descriptor 2 is its file; the process's
# own stderr is kept here (a duplicate) for what must reach the user then
# (another thread's line, e.g. tile-tune's "interrupted").
_CAPTURES = {"depth": 0, "stderr": -1}
_CAPTURES_LOCK = threading.Lock()


@contextlib.contextmanager
def capture_native_stderr() -> Iterator[CapturedText]:
    """Captures what native code (LLVM's errs()) writes to file descriptor 2,
    so it can be turned into a proper diagnostic instead of leaking out.
    Descriptor 2 is the process's: a line another thread must show the user
    meanwhile goes through `write_user_stderr`."""
    captured = CapturedText()
    sys.stderr.flush()
    with tempfile.TemporaryFile(mode="w+b") as sink:
        with _CAPTURES_LOCK:
            saved = os.dup(2)
            if _CAPTURES["depth"] == 0:
                _CAPTURES["stderr"] = os.dup(2)
            _CAPTURES["depth"] += 1
            os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            with _CAPTURES_LOCK:
                os.dup2(saved, 2)
                os.close(saved)
                _CAPTURES["depth"] -= 1
                if _CAPTURES["depth"] == 0:
                    os.close(_CAPTURES["stderr"])
                    _CAPTURES["stderr"] = -1
            sink.seek(0)
            captured._text = sink.read().decode("utf-8", errors="replace")


def write_user_stderr(text: str) -> None:
    """Writes `text` to the process's stderr even while a thread captures
    descriptor 2 (`capture_native_stderr`)."""
    sys.stderr.flush()
    data = text.encode("utf-8", errors="replace")
    with _CAPTURES_LOCK:
        fd = _CAPTURES["stderr"] if _CAPTURES["depth"] else 2
        while data:
            data = data[os.write(fd, data):]
