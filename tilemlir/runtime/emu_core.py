"""The SIMT emulator's machinery: errors, value types, the op compiler, frames.

Execution model (see `tilemlir.runtime.emulator` for the whole contract):
every SSA value inside a kernel is a NumPy array whose leading axis is the
lane axis, of length 1 (the value is the same in every lane: constants,
block ids, loop counters with uniform bounds) or T (threads per workgroup),
followed by the vector shape. NumPy broadcasting then gives lane-uniform and
per-lane values the same code. Memref values are `MemRef` objects
(emu_memory). Each op is compiled once into a Python closure over slot
numbers; a region is a list of closures run in order with a per-lane mask.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from mlir import ir

from tilemlir.diagnostics import Diag, UserError, file_position, format_diag
from tilemlir.dialects.element_types import ELEMENT_TYPES, NARROW_FLOAT_TYPES

# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------

class EmulatorError(UserError):
    """An error in the emulated program, printed `file:line:col: error: emulator: ...`.

    `diag` holds the same as a `Diag` (message without the position) for
    tools that print diagnostics themselves."""

    def __init__(self, message: str, op: ir.Operation | None = None):
        file, line, col = position(op) if op is not None else ("", 0, 0)
        self.diag = Diag("error", f"emulator: {message}", file, line, col)
        super().__init__(format_diag(self.diag).rstrip("\n"))


class UnsupportedOp(EmulatorError):
    """An op (or a form of it) the emulator does not execute."""


class SanitizerError(EmulatorError):
    """A memory-safety violation found while running: out of bounds, uninitialized
    LDS read, data race on LDS or global memory, barrier in divergent code."""


def position(op: ir.Operation) -> tuple[str, int, int]:
    try:
        return file_position(op.location)
    except Exception:  # noqa: BLE001 - a location we cannot read is just unknown
        return "", 0, 0


# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------

_SCALAR_DTYPES = {name: row.dtype for name, row in ELEMENT_TYPES.items()}
_NARROW = frozenset(_SCALAR_DTYPES[name] for name in NARROW_FLOAT_TYPES)
INDEX = np.dtype(np.int64)


def scalar_dtype(t: ir.Type, op: ir.Operation | None = None) -> np.dtype:
    dtype = _SCALAR_DTYPES.get(str(t))
    if dtype is None:
        raise UnsupportedOp(f"unsupported element type '{t}'", op)
    return dtype


def value_type(t: ir.Type, op: ir.Operation | None = None) -> tuple[np.dtype, tuple[int, ...]]:
    """(element dtype, vector shape) of a scalar or vector type."""
    if isinstance(t, ir.VectorType):
        return scalar_dtype(t.element_type, op), tuple(t.shape)
    return scalar_dtype(t, op), ()


def is_narrow_float(dtype: np.dtype) -> bool:
    return dtype in _NARROW


def is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype in _NARROW


def unsigned(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"u{dtype.itemsize}") if dtype != np.bool_ else dtype


def attr_int(op: ir.Operation, name: str) -> int:
    return int(ir.IntegerAttr(op.attributes[name]).value)


def attr_ints(op: ir.Operation, name: str) -> list[int]:
    return [int(x) for x in op.attributes[name]]


def has_attr(op: ir.Operation, name: str) -> bool:
    return name in op.attributes


DYNAMIC = -9223372036854775808  # ShapedType::kDynamic


# --------------------------------------------------------------------------
# Runtime state
# --------------------------------------------------------------------------

class RaceClock:
    """Orders one `emulate` run's global-memory accesses for the race check.

    Epochs are numbered in execution order over the whole run: each workgroup
    starts a new one, and so does each `gpu.barrier` inside it. An access
    stamped with epoch e is then, seen from the running workgroup: in the
    same interval between barriers (e == epoch), ordered before it by a
    barrier of the same workgroup (first_epoch <= e < epoch), in another
    workgroup of the same launch, with no order at all (launch_first <= e <
    first_epoch), or in an earlier launch, ordered (e < launch_first)."""

    def __init__(self) -> None:
        self.epoch = 0
        self.launch_first = 1
        self.kernel = ""
        self._starts: list[int] = []  # first epoch of each workgroup of the launch
        self._ids: list[tuple[int, int, int]] = []

    def start_launch(self, kernel: str) -> None:
        self.launch_first = self.epoch + 1
        self.kernel = kernel
        self._starts, self._ids = [], []

    def start_workgroup(self, block_id: tuple[int, int, int]) -> int:
        self.epoch += 1
        self._starts.append(self.epoch)
        self._ids.append(block_id)
        return self.epoch

    def barrier(self) -> None:
        self.epoch += 1

    def workgroup_at(self, epoch: int) -> str:
        """'(x, y, z)' of the workgroup of this launch that ran in `epoch`."""
        from bisect import bisect_right

        x, y, z = self._ids[bisect_right(self._starts, epoch) - 1]
        return f"({x}, {y}, {z})"


@dataclass
class Workgroup:
    """What one workgroup's run knows: ids, sizes, its shared buffers and,
    when sanitizing inside a launch, the run's race clock."""

    block_id: tuple[int, int, int]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    wave_size: int
    chip: str
    sanitize: bool
    threads: int = field(init=False)
    lanes: np.ndarray = field(init=False)
    shared: list = field(default_factory=list)  # Buffers with LDS shadows
    clock: RaceClock | None = None  # None: no global race check (host code, sanitize off)
    first_epoch: int = 0  # the clock's epoch when this workgroup started
    in_flight_lds: list = field(default_factory=list)  # emu_memory.InFlightLds, oldest first

    def __post_init__(self) -> None:
        self.threads = self.block[0] * self.block[1] * self.block[2]
        self.lanes = np.arange(self.threads, dtype=INDEX)

    def describe_lane(self, lane: int) -> str:
        bx, by = self.block[0], self.block[1]
        tid = (lane % bx, (lane // bx) % by, lane // (bx * by))
        return (f"workgroup ({self.block_id[0]}, {self.block_id[1]}, {self.block_id[2]}), "
                f"lane {lane} (thread ({tid[0]}, {tid[1]}, {tid[2]}), wave {lane // self.wave_size})")


class Frame:
    """Slots of one run of a compiled function, the active-lane mask, the
    values a region's terminator yielded."""

    __slots__ = ("mask", "vals", "wg", "yielded")

    def __init__(self, size: int, wg: Workgroup):
        self.vals: list = [None] * size
        self.mask: np.ndarray | None = None  # (T,) bool; None = every lane active
        self.wg = wg
        self.yielded: list = []


def require_whole_waves(frame: Frame, op: ir.Operation, what: str, wave: int) -> None:
    """A wave-level matrix instruction needs every lane of its waves: whole
    waves of `wave` lanes, none of them partly inactive (divergent control flow)."""
    wg = frame.wg
    if wg.wave_size != wave or wg.threads % wave:
        raise EmulatorError(f"{what} needs whole waves of {wave} lanes (wave size {wg.wave_size}, "
                            f"{wg.threads} threads per workgroup)", op)
    if frame.mask is None:
        return
    per_wave = frame.mask.reshape(-1, wave)
    partial = per_wave.any(axis=1) & ~per_wave.all(axis=1)
    if partial.any():
        w = int(np.argmax(partial))
        lane = w * wave + int(np.argmin(per_wave[w]))
        raise SanitizerError(f"{what} in divergent control flow: inactive "
                             f"{wg.describe_lane(lane)}", op)


def lane_axis(mask: np.ndarray, ndim: int) -> np.ndarray:
    """A (T,) mask shaped to broadcast against an array of `ndim` dims."""
    return mask.reshape(mask.shape + (1,) * (ndim - 1))


def merge(mask: np.ndarray | None, new, old):
    """`new` in the lanes of `mask`, `old` elsewhere (memrefs must agree)."""
    if mask is None or new is old:
        return new
    if not isinstance(new, np.ndarray):
        if new is old or old is None:
            return new
        raise UnsupportedOp("a memref value that differs between lanes of divergent control flow")
    if old is None:
        return new
    ndim = max(new.ndim, old.ndim)
    return np.where(lane_axis(mask, ndim), new, old)


# --------------------------------------------------------------------------
# Compiler
# --------------------------------------------------------------------------

Step = Callable[[Frame], None]
Handler = Callable[["Compiler", ir.Operation], Step | None]
HANDLERS: dict[str, Handler] = {}


def handles(*names: str):
    """Registers a compile function for the named ops."""
    def register(fn: Handler) -> Handler:
        for name in names:
            HANDLERS[name] = fn
        return fn
    return register


class Compiler:
    """Turns the ops of one function into closures over frame slots."""

    def __init__(self, chip: str, wave_size: int, sanitize: bool, module: ir.Operation,
                 clock: RaceClock | None = None):
        self.chip = chip
        self.wave_size = wave_size
        self.sanitize = sanitize
        self.module = module
        self.clock = clock  # the run's, shared by the kernels it launches
        self.slots: dict[ir.Value, int] = {}

    def slot(self, value: ir.Value) -> int:
        index = self.slots.get(value)
        if index is None:
            index = self.slots[value] = len(self.slots)
        return index

    def slots_of(self, values) -> list[int]:
        return [self.slot(v) for v in values]

    def compile_block(self, block: ir.Block) -> Callable[[Frame], None]:
        ops = [op.operation for op in block.operations]
        steps = []
        for op in ops:
            handler = HANDLERS.get(op.name)
            if handler is None:
                raise UnsupportedOp(f"unsupported op '{op.name}'", op)
            steps.append(handler(self, op))
        pairs = [(step, op) for step, op in zip(steps, ops) if step is not None]
        run_steps = [step for step, _ in pairs]
        run_ops = [op for _, op in pairs]

        def run(frame: Frame) -> None:
            index = 0
            try:
                for index, step in enumerate(run_steps):
                    step(frame)
            except EmulatorError as error:
                if error.diag.file or error.diag.line:
                    raise
                # raised where no op was at hand (e.g. merging divergent memrefs): locate it
                message = error.diag.message.removeprefix("emulator: ")
                raise type(error)(message, run_ops[index]) from None
            except Exception as error:  # a bug or an unchecked case: still located
                raise EmulatorError(
                    f"internal error while executing '{run_ops[index].name}': "
                    f"{type(error).__name__}: {error}", run_ops[index]) from error

        return run

    def compile_region(self, region: ir.Region) -> tuple[list[int], Callable[[Frame], None]]:
        """(slots of the entry block's arguments, runner of its body)."""
        block = region.blocks[0]
        if len(region.blocks) != 1:
            branch = list(block.operations)[-1].operation
            raise UnsupportedOp(f"unsupported op '{branch.name}' (unstructured control flow)",
                                branch)
        return self.slots_of(block.arguments), self.compile_block(block)
