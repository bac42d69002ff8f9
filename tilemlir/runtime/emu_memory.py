"""Memory for the SIMT emulator: buffers, memref views, checked accesses, the
LDS sanitizer, and the memref/vector ops that touch memory.

A `Buffer` is one allocation (a host array, a workgroup attribution or
`memref.alloc` in workgroup memory, or a `memref.alloca` holding one private
copy per lane) kept as raw bytes. A `MemRef` is a strided view of a buffer
(element dtype, byte offset of its typed view, element offset, sizes,
strides) that `subview`, `view`, `reinterpret_cast`, `expand_shape`, ... derive.

Every access goes through `access`, which for the active lanes checks each
index against its memref dimension and the flat address against the
allocation, and reports the op's location, the workgroup and the first
offending lane (never wraps). With `sanitize=True` workgroup memory also keeps
byte-granular shadows: initialized or not, the last writer lane since the
last `gpu.barrier`, and the lanes that read it since then (one lane, or
"several"). A read of an uninitialized byte, a write to a byte that another
lane wrote or read, and a read of a byte another lane wrote, with no barrier
in between, are errors, except a write of the value the byte already holds or
that the other lanes of the op write with it (every GPU keeps that value;
TileLang's per-thread code has all threads stage the same data so). Accesses by lanes of the same wave count too: the
LLVM memory model gives two threads' unsynchronized conflicting accesses no
order, whatever the hardware's lockstep.

Global memory gets the same race check inside a launch (as compute-sanitizer's
racecheck): two lanes of one workgroup writing the same byte, or one writing
and another reading it, with no `gpu.barrier` between; and any write of a
byte that another workgroup of the same launch wrote or read, or a read of
a byte another workgroup wrote (lanes of one workgroup writing the same value
are not reported, as in LDS): workgroups of one launch are not ordered
(the emulator runs them one after another, the hardware does not). A lane
re-writing or re-reading its own bytes, and reads nobody conflicts with, are
fine; launches are ordered. Atomics (`memref.atomic_rmw` add, max, min) are
applied lane by lane and not race-checked: the hardware orders them among
themselves (a plain access racing an atomic one goes unreported). The state (`GlobalRaces`) is a few stamps per unit of
the buffer (its element size until an access needs bytes), compared with
the run's `RaceClock` epochs, so nothing is reset at barriers or workgroups.

Direct global -> LDS loads (`amdgpu.gather_to_lds`, buffer_load ... lds) land
as the hardware lets them: not when issued, but when the issuing wave next
waits for its vector memory operations to reach 0 (`amdgpu.memory_counter_wait`
whose vmcnt is 0: `load(0)`, and on GFX9, where one counter counts loads and
stores, `load` plus `store` 0); a barrier does not wait for them, and a wait
for N > 0 is not counted here, so it lands none. Until then the LDS bytes keep
their old values, and with the sanitizer any access to them (an atomic too) is
an error naming the load and the missing wait: reads do not wait for them in
the code llc emits (amdgpu-order-lds-dma), and lanes of the issuing wave
writing bytes other lanes loaded would race anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from mlir import ir

from tilemlir.dialects.attributes import ATOMIC_RMW_KINDS
from tilemlir.runtime.dtypes import atomic_update, convert, is_narrow_float
from tilemlir.runtime.emu_core import (
    DYNAMIC,
    INDEX,
    Compiler,
    EmulatorError,
    Frame,
    SanitizerError,
    UnsupportedOp,
    attr_ints,
    lane_axis,
    require_whole_waves,
    scalar_dtype,
)
from tilemlir.runtime.emu_core import position as op_position
from tilemlir.runtime.mfma_layouts import WAVE

# --------------------------------------------------------------------------
# Buffers and views
# --------------------------------------------------------------------------

class LdsShadow:
    """Per-byte state of one workgroup buffer for the sanitizer; `in_flight`:
    how many direct-to-LDS loads not yet waited for write the byte."""

    def __init__(self, nbytes: int):
        self.initialized = np.zeros(nbytes, dtype=bool)
        self.writer = np.full(nbytes, -1, dtype=np.int64)
        self.reader = np.full(nbytes, -1, dtype=np.int64)
        self.many_readers = np.zeros(nbytes, dtype=bool)
        self.in_flight = np.zeros(nbytes, dtype=np.int32)
        # Scratch for one access: which of its elements a scatter keeps for
        # a byte listed more than once, to find bytes that several of its
        # lanes write without sorting them (`_track`).
        self.scratch_index = np.empty(nbytes, dtype=np.int64)

    def barrier(self) -> None:
        self.writer.fill(-1)
        self.reader.fill(-1)
        self.many_readers.fill(False)


_LANE_BITS = 32  # a stamp is epoch << 32 | lane
_LANE_MASK = (1 << _LANE_BITS) - 1
_NONE = -1  # no access yet: an epoch before every other


class GlobalRaces:
    """Race-check state of one global buffer, per unit of `granule` bytes:
    the last writer and the last reader (epoch << 32 | lane), the epoch in
    which several lanes read it, and the first epochs (workgroup ids) of the
    last two different workgroups that read it. Two are enough: when the
    running workgroup is the last reader, the other is the one to report."""

    def __init__(self, nbytes: int, granule: int):
        self.granule = granule
        units = nbytes // granule
        self.writer = np.full(units, _NONE, dtype=np.int64)
        self.reader = np.full(units, _NONE, dtype=np.int64)
        self.several_readers = np.full(units, _NONE, dtype=np.int64)
        self.reader_group = np.full(units, _NONE, dtype=np.int64)
        self.other_reader_group = np.full(units, _NONE, dtype=np.int64)

    def to_bytes(self) -> None:
        """Byte granularity, for an access smaller than (or not aligned to) a unit."""
        for name in ("writer", "reader", "several_readers", "reader_group", "other_reader_group"):
            setattr(self, name, np.repeat(getattr(self, name), self.granule))
        self.granule = 1


class Buffer:
    """One allocation as raw bytes; `space` is global, workgroup or private."""

    def __init__(self, raw: np.ndarray, space: str, name: str, shadow: bool = False):
        self.raw = raw
        self.space = space
        self.name = name
        self.shadow = LdsShadow(raw.size) if shadow else None
        self.races: GlobalRaces | None = None  # global memory, made at the first checked access
        self._views: dict[tuple, np.ndarray] = {}

    def typed(self, dtype: np.dtype, byte_shift: int) -> np.ndarray:
        key = (dtype, byte_shift)
        view = self._views.get(key)
        if view is None:
            count = (self.raw.size - byte_shift) // dtype.itemsize
            view = self.raw[byte_shift:byte_shift + count * dtype.itemsize].view(dtype)
            self._views[key] = view
        return view


@dataclass
class MemRef:
    """A strided view: element (i_0..i_n) is typed[offset + sum(i_d * strides[d])]
    (+ lane * per_lane for private buffers, one copy per lane)."""

    buffer: Buffer
    dtype: np.dtype
    byte_shift: int
    offset: object  # int, or index array (1|T,) for lane-dependent offsets
    sizes: tuple  # ints or index arrays
    strides: tuple  # ints
    per_lane: int = 0

    @property
    def typed(self) -> np.ndarray:
        return self.buffer.typed(self.dtype, self.byte_shift)

    def with_layout(self, offset, sizes, strides) -> MemRef:
        return MemRef(self.buffer, self.dtype, self.byte_shift, offset, tuple(sizes),
                      tuple(strides), self.per_lane)


def memref_space(t: ir.MemRefType) -> str:
    space = str(t.memory_space) if t.memory_space is not None else ""
    if "workgroup" in space or space == "3":
        return "workgroup"
    if "private" in space or space == "5":
        return "private"
    return "global"


def contiguous_strides(sizes) -> tuple[int, ...]:
    strides, running = [], 1
    for size in reversed(sizes):
        strides.append(running)
        running = running * size
    return tuple(reversed(strides))


def host_memref(array: np.ndarray, name: str) -> MemRef:
    """A global buffer aliasing a C-contiguous host array (writes land in it)."""
    flat = array.reshape(-1)
    buffer = Buffer(flat.view(np.uint8), "global", name)
    buffer._views[(array.dtype, 0)] = flat
    return MemRef(buffer, array.dtype, 0, 0, tuple(array.shape), contiguous_strides(array.shape))


def allocate(t: ir.MemRefType, frame: Frame, name: str, op: ir.Operation | None,
             dynamic_sizes=()) -> MemRef:
    """A fresh buffer for a memref type (identity layout): workgroup memory gets
    a sanitizer shadow; private memory one copy per lane."""
    dtype = scalar_dtype(t.element_type, op)
    dynamic = iter(dynamic_sizes)
    sizes = tuple(int(next(dynamic)) if s == DYNAMIC else s for s in t.shape)
    count = int(np.prod(sizes, dtype=np.int64))
    space = memref_space(t)
    lanes = frame.wg.threads if space == "private" else 1
    # Uninitialized memory reads back as all-ones bytes (NaN / -1) when not sanitized.
    raw = np.full(count * dtype.itemsize * lanes, 0xFF, dtype=np.uint8)
    buffer = Buffer(raw, space, name, shadow=(space == "workgroup" and frame.wg.sanitize))
    if space == "workgroup":
        frame.wg.shared.append(buffer)
    return MemRef(buffer, dtype, 0, 0, sizes, contiguous_strides(sizes),
                  count if space == "private" else 0)


# --------------------------------------------------------------------------
# Checked access
# --------------------------------------------------------------------------

def _active(frame: Frame, shape: tuple[int, ...], element_mask) -> np.ndarray | None:
    """The mask of active elements for an access of `shape` (None: all)."""
    mask = None
    if frame.mask is not None:
        mask = np.broadcast_to(lane_axis(frame.mask, len(shape)), shape)
    if element_mask is not None:
        element_mask = np.broadcast_to(element_mask, shape)
        mask = element_mask if mask is None else mask & element_mask
    return mask


def _first(bad: np.ndarray, frame: Frame) -> tuple[tuple, int]:
    """(position, lane) of the first True in a (L, ...) array; for a lane-uniform
    access (L == 1) the lane is the first active one."""
    position = tuple(int(x) for x in np.argwhere(bad)[0])
    lane = position[0]
    if bad.shape[0] == 1 and frame.mask is not None and frame.mask.any():
        lane = int(np.argmax(frame.mask))
    return position, lane


def _space_name(memref: MemRef) -> str:
    return {"global": "global memory", "workgroup": "LDS", "private": "private memory"}[
        memref.buffer.space]


def access(frame: Frame, op: ir.Operation, memref: MemRef, indices: list, kind: str,
           values=None, element_mask=None):
    """Loads (values None) or stores `values` at the per-dimension index arrays
    `indices` (broadcastable to (L, ...)); only active lanes and elements touch
    memory. Returns the loaded array (inactive elements 0)."""
    arrays = [np.asarray(i) for i in indices] or [np.zeros((1,), INDEX)]
    if values is not None:
        arrays.append(np.asarray(values))
    shape = np.broadcast_shapes(*[a.shape for a in arrays])
    if memref.per_lane or memref.buffer.shadow is not None or (
            frame.mask is not None and frame.mask.size > 1):
        shape = (frame.wg.threads,) + shape[1:]
    mask = _active(frame, shape, element_mask)
    flat = np.broadcast_to(np.asarray(memref.offset, dtype=INDEX).reshape(
        (-1,) + (1,) * (len(shape) - 1)), shape).astype(INDEX)
    for dim, (index, size, stride) in enumerate(zip(indices, memref.sizes, memref.strides)):
        index = np.asarray(index)
        size = np.asarray(size).reshape((-1,) + (1,) * (len(shape) - 1)) if np.ndim(size) else size
        bad = (index < 0) | (index >= size)
        if mask is not None:
            bad = bad & mask
        if bad.any():
            position, lane = _first(np.broadcast_to(bad, shape), frame)
            at = [int(np.broadcast_to(i, shape)[position]) for i in indices]
            limit = int(np.broadcast_to(size, shape)[position])
            raise SanitizerError(
                f"out-of-bounds {kind} of {_space_name(memref)} ({memref.buffer.name}) at index "
                f"[{', '.join(map(str, at))}]: dimension {dim} has size {limit}, in "
                f"{frame.wg.describe_lane(lane)}", op)
        flat = flat + index * stride
    if memref.per_lane:
        flat = flat + lane_axis(frame.wg.lanes, len(shape)) * memref.per_lane
    typed = memref.typed
    bad = (flat < 0) | (flat >= typed.size)
    if mask is not None:
        bad = bad & mask
    if bad.any():
        position, lane = _first(np.broadcast_to(bad, shape), frame)
        raise SanitizerError(
            f"out-of-bounds {kind} of {_space_name(memref)} ({memref.buffer.name}): element "
            f"{int(np.broadcast_to(flat, shape)[position])} of an allocation of {typed.size}, "
            f"in {frame.wg.describe_lane(lane)}", op)
    if mask is not None:
        flat = np.where(mask, flat, 0)
    if kind.startswith("atomic "):
        # Not race-checked: atomics are ordered by the hardware; lanes updating
        # one element all count (ufunc.at), in lane order.
        if memref.buffer.shadow is not None and frame.wg.in_flight_lds:
            _check_in_flight(frame, op, memref, *_lds_bytes(frame, memref, flat, mask), kind)
        update = atomic_update(kind.removeprefix("atomic "), memref.dtype.kind == "f")
        loaded = typed[flat]
        values = np.broadcast_to(np.asarray(values, dtype=memref.dtype), shape)
        if mask is None:
            update.at(typed, flat.reshape(-1), values.reshape(-1))
        else:
            update.at(typed, flat[mask], values[mask])
            loaded = np.where(mask, loaded, np.zeros((), loaded.dtype))
        return loaded
    if values is not None:
        values = np.asarray(values)
        if values.dtype != memref.dtype and is_narrow_float(memref.dtype):
            values = convert(values, memref.dtype)  # rounds as every other conversion does
        values = np.broadcast_to(np.asarray(values, dtype=memref.dtype), shape)
    if memref.buffer.shadow is not None:
        _track(frame, op, memref, flat, mask, kind, values)
    elif frame.wg.clock is not None and memref.buffer.space == "global":
        _track_global(frame, op, memref, flat, mask, kind, values)
    if kind == ISSUED:
        return None
    if values is None:
        loaded = typed[flat]
        if mask is not None:
            loaded = np.where(mask, loaded, np.zeros((), loaded.dtype))
        return loaded
    if mask is None:
        typed[flat] = values
    else:
        typed[flat[mask]] = values[mask]
    return None


def _accessed(flat: np.ndarray, lanes: np.ndarray, mask) -> tuple[np.ndarray, np.ndarray]:
    """The flat element indices an access touches and the lane of each, as 1-D
    arrays (the masked-off ones left out)."""
    if mask is not None:
        return flat[mask], lanes[mask]
    return flat.reshape(-1), lanes.reshape(-1)


def _track(frame: Frame, op, memref: MemRef, flat: np.ndarray, mask, kind: str,
           values: np.ndarray | None = None) -> None:
    """Sanitizer bookkeeping for one LDS access (see the module docstring).
    Lanes writing the value a byte already holds, or that another lane of the
    same op writes, are not reported: every GPU leaves that value (TileLang's
    per-thread code has every thread store what they all computed)."""
    shadow = memref.buffer.shadow
    data = None
    if values is not None:
        data = np.ascontiguousarray(values if mask is None else values[mask]).reshape(-1).view(np.uint8)
    byte, lane = _lds_bytes(frame, memref, flat, mask)
    if byte.size == 0:
        return
    where = f"LDS ({memref.buffer.name})"
    if kind != LANDED and frame.wg.in_flight_lds:
        _check_in_flight(frame, op, memref, byte, lane, kind)

    def fail(message: str, index: int) -> None:
        raise SanitizerError(f"{message} at byte {int(byte[index])} of {where}, in "
                             f"{frame.wg.describe_lane(int(lane[index]))}", op)

    if kind == "load":
        uninitialized = ~shadow.initialized[byte]
        if uninitialized.any():
            fail("read of uninitialized memory", int(np.argmax(uninitialized)))
        writer = shadow.writer[byte]
        race = (writer >= 0) & (writer != lane)
        if race.any():
            i = int(np.argmax(race))
            fail(f"data race: lane {int(writer[i])} wrote and another lane reads with no "
                 f"gpu.barrier between (read)", i)
        # Bytes several lanes read: the lane a scatter keeps for a byte differs
        # from another of its readers, whichever it keeps. Scattered in
        # reverse, NumPy keeps the lowest (its last assignment wins; `_lds_bytes`
        # lists lanes in order), the reader recorded (only its message names it).
        previous = shadow.reader[byte]
        shadow.reader[byte[::-1]] = lane[::-1]
        kept = shadow.reader[byte]
        several = (kept != lane) | ((previous >= 0) & (previous != lane))
        shadow.many_readers[byte[several]] = True
        shadow.reader[byte] = np.where(previous >= 0, previous, kept)
        return
    # Two lanes of this op writing one byte different values: each element
    # against the one a scatter of positions keeps for its byte (lane and
    # value of one element, whichever is kept); sorted by byte, then lane,
    # for the message only.
    shadow.scratch_index[byte] = np.arange(byte.size)
    kept = shadow.scratch_index[byte]
    same = lane[kept] != lane
    if data is not None:
        same &= data[kept] != data
    if same.any():
        order = np.lexsort((lane, byte))
        sorted_bytes, sorted_lanes = byte[order], lane[order]
        same = (sorted_bytes[1:] == sorted_bytes[:-1]) & (sorted_lanes[1:] != sorted_lanes[:-1])
        if data is not None:
            sorted_data = data[order]
            same &= sorted_data[1:] != sorted_data[:-1]
        if same.any():
            i = int(np.argmax(same))
            raise SanitizerError(
                f"data race: lanes {int(sorted_lanes[i])} and {int(sorted_lanes[i + 1])} write the "
                f"same byte {int(sorted_bytes[i])} of {where} in one op, in "
                f"{frame.wg.describe_lane(int(sorted_lanes[i + 1]))}", op)
    writer = shadow.writer[byte]
    race = (writer >= 0) & (writer != lane)
    if data is not None:
        race &= memref.buffer.raw[byte] != data
    if race.any():
        i = int(np.argmax(race))
        fail(f"data race: lane {int(writer[i])} wrote the same byte with no gpu.barrier between "
             f"(write-write)", i)
    reader = shadow.reader[byte]
    race = shadow.many_readers[byte] | ((reader >= 0) & (reader != lane))
    if race.any():
        i = int(np.argmax(race))
        who = f"lane {int(reader[i])}" if int(reader[i]) != int(lane[i]) else "several lanes"
        fail(f"data race: {who} read and another lane writes with no gpu.barrier "
             f"between (write after read)", i)
    if kind != ISSUED:
        shadow.writer[byte] = lane
        shadow.initialized[byte] = True


def _lds_bytes(frame: Frame, memref: MemRef, flat: np.ndarray, mask) -> tuple[np.ndarray, np.ndarray]:
    """The LDS bytes an access touches and the lane of each, as 1-D arrays,
    lanes in increasing order (`_track` relies on it)."""
    itemsize = memref.dtype.itemsize
    lanes = np.broadcast_to(lane_axis(frame.wg.lanes, flat.ndim), flat.shape)
    flat, lanes = _accessed(flat, lanes, mask)
    byte = ((memref.byte_shift + flat * itemsize)[:, None] + np.arange(itemsize)).reshape(-1)
    return byte, np.repeat(lanes, itemsize)


def _check_in_flight(frame: Frame, op, memref: MemRef, byte: np.ndarray, lane: np.ndarray, kind: str) -> None:
    """An access to LDS bytes a direct-to-LDS load has not landed in is an
    error naming that load (see the module docstring)."""
    in_flight = memref.buffer.shadow.in_flight[byte] > 0
    if not in_flight.any():
        return
    i = int(np.argmax(in_flight))
    wg = frame.wg
    for load in wg.in_flight_lds:  # the oldest load of the byte, and its lane
        loading = load.lanes & (load.bytes == byte[i]).any(axis=1)
        if load.memref.buffer is memref.buffer and loading.any():
            break
    file, line, col = op_position(load.op)
    raise SanitizerError(
        f"{'read of' if kind == 'load' else 'write to'} byte {int(byte[i])} of LDS ({memref.buffer.name}), "
        f"which the amdgpu.gather_to_lds at {file}:{line}:{col} is still loading for wave "
        f"{int(np.argmax(loading)) // wg.wave_size}: that wave has not waited for it "
        f"(amdgpu.memory_counter_wait load(0)), in {wg.describe_lane(int(lane[i]))}", op)


def _track_global(frame: Frame, op, memref: MemRef, flat: np.ndarray, mask, kind: str,
                  values: np.ndarray | None = None) -> None:
    """Race-check bookkeeping for one global access (see the module docstring).
    `flat` is (1, ...) when every lane accesses the same elements. Lanes
    of a workgroup writing the value an element already holds, or that
    another lane of the same op writes, are not reported (as in LDS)."""
    wg, buffer, itemsize = frame.wg, memref.buffer, memref.dtype.itemsize
    if values is not None:
        if flat.shape[0] == 1 and np.ndim(values) and np.shape(values)[0] > 1:
            flat = np.broadcast_to(flat, np.broadcast_shapes(flat.shape, np.shape(values)))  # lane by lane
        values = np.broadcast_to(values, flat.shape)
    clock = wg.clock
    races = buffer.races
    if races is None:
        aligned = memref.byte_shift % itemsize == 0 and buffer.raw.size % itemsize == 0
        races = buffer.races = GlobalRaces(buffer.raw.size, itemsize if aligned else 1)
    if itemsize % races.granule or memref.byte_shift % races.granule:
        races.to_bytes()
    every_lane = flat.shape[0] == 1 and wg.threads > 1  # lane-uniform: all lanes, same place
    lanes = np.broadcast_to(INDEX.type(0) if flat.shape[0] == 1 else
                            lane_axis(wg.lanes, flat.ndim), flat.shape)
    flat, lanes = _accessed(flat, lanes, mask)
    if flat.size == 0:
        return
    per_element = itemsize // races.granule
    first = (memref.byte_shift + flat * itemsize) // races.granule
    if per_element == 1:
        units, lane = first, lanes
    else:
        units = (first[:, None] + np.arange(per_element)).reshape(-1)
        lane = np.repeat(lanes, per_element)
    new_data = old_data = None
    if values is not None:  # each unit's bytes, written and held (rows)
        written = np.ascontiguousarray(values if mask is None else values[mask]).reshape(-1)
        new_data = written.view(np.uint8).reshape(-1, races.granule)
        byte = ((memref.byte_shift + flat * itemsize)[:, None] + np.arange(itemsize)).reshape(-1)
        old_data = buffer.raw[byte].reshape(-1, races.granule)
    epoch = clock.epoch
    stamp = (epoch << _LANE_BITS) | lane
    other_groups = (clock.launch_first, wg.first_epoch)  # [low, high): earlier workgroups

    def fail(message: str, i: int) -> None:
        element = int(flat[i // per_element])
        raise SanitizerError(
            f"data race: {message} at element {element} (byte {int(units[i]) * races.granule}) "
            f"of global memory ({buffer.name}), in {wg.describe_lane(int(lane[i]))}", op)

    def in_other_group(epochs: np.ndarray) -> np.ndarray:
        return (epochs >= other_groups[0]) & (epochs < other_groups[1])

    between = f"in one launch of {clock.kernel} (workgroups are not ordered)"
    writer = races.writer[units]
    same_interval = (writer >> _LANE_BITS) == epoch
    race = same_interval & ((writer & _LANE_MASK) != lane)
    if every_lane and kind == "load" and mask is None:  # all lanes read it: some lane is not the writer
        race = same_interval & (writer >= 0)
    if new_data is not None:
        race &= (new_data != old_data).any(axis=1)
    if race.any():
        i = int(np.argmax(race))
        fail(f"lane {int(writer[i]) & _LANE_MASK} wrote and another lane "
             f"{'reads' if kind == 'load' else 'writes'} with no gpu.barrier between "
             f"({'read after write' if kind == 'load' else 'write-write'})", i)
    race = in_other_group(writer >> _LANE_BITS)
    if race.any():
        i = int(np.argmax(race))
        fail(f"workgroup {clock.workgroup_at(int(writer[i]) >> _LANE_BITS)} wrote and workgroup "
             f"{_group(wg)} {'reads' if kind == 'load' else 'writes'} {between}", i)
    if kind == "load":
        reader = races.reader[units]
        several = ((reader >> _LANE_BITS) == epoch) & ((reader & _LANE_MASK) != lane)
        races.reader[units] = stamp
        several |= races.reader[units] != stamp  # two lanes of this access
        if every_lane:
            several[:] = True
        races.several_readers[units[several]] = epoch
        group = races.reader_group[units]
        new = group != wg.first_epoch
        races.other_reader_group[units[new]] = group[new]
        races.reader_group[units[new]] = wg.first_epoch
        return
    reader = races.reader[units]
    race = ((reader >> _LANE_BITS) == epoch) & (
        ((reader & _LANE_MASK) != lane) | (races.several_readers[units] == epoch))
    if race.any():
        i = int(np.argmax(race))
        who = int(reader[i]) & _LANE_MASK
        fail(f"{f'lane {who}' if who != int(lane[i]) else 'several lanes'} read and another lane "
             "writes with no gpu.barrier between (write after read)", i)
    for groups in (races.reader_group[units], races.other_reader_group[units]):
        race = in_other_group(groups)
        if race.any():
            i = int(np.argmax(race))
            fail(f"workgroup {clock.workgroup_at(int(groups[i]))} read and workgroup {_group(wg)} "
                 f"writes {between}", i)
    if new_data is not None:  # lanes of this op that write one unit the same bytes
        order = np.lexsort(new_data.T[::-1].tolist() + [units]) if new_data.size else np.arange(0)
        same_unit = units[order][1:] == units[order][:-1]
        differ = same_unit & (new_data[order][1:] != new_data[order][:-1]).any(axis=1)
        if differ.any():
            j = int(np.argmax(differ))
            first, second = int(order[j]), int(order[j + 1])
            fail(f"lanes {int(lane[first])} and {int(lane[second])} write different values in one op", first)
        if every_lane:
            every_lane = False
            lane = np.zeros_like(lane)
        units, keep = np.unique(units, return_index=True)
        lane = lane[keep]
        stamp = (epoch << _LANE_BITS) | lane
    if every_lane:
        fail("lanes 0 and 1 both write in one op", 0)
    races.writer[units] = stamp
    written = races.writer[units]
    twice = written != stamp  # two lanes of this access, the later one's stamp kept
    if twice.any():
        i = int(np.argmax(twice))
        fail(f"lanes {int(lane[i])} and {int(written[i]) & _LANE_MASK} both write in one op", i)


def _group(wg) -> str:
    return f"({wg.block_id[0]}, {wg.block_id[1]}, {wg.block_id[2]})"


# --------------------------------------------------------------------------
# memref ops
# --------------------------------------------------------------------------

from tilemlir.runtime.emu_core import handles


def _uniform_int(value, what: str, op) -> int:
    array = np.asarray(value).reshape(-1)
    if array.size > 1 and not (array == array[0]).all():
        raise UnsupportedOp(f"lane-dependent {what}", op)
    return int(array[0])


def _mixed(compiler: Compiler, op, static_name: str, operands) -> list:
    """Static values with DYNAMIC replaced by slots: ints and ('slot', n)."""
    dynamic = iter(compiler.slots_of(operands))
    return [("slot", next(dynamic)) if v == DYNAMIC else v for v in attr_ints(op, static_name)]


def _resolve(frame: Frame, mixed: list) -> list:
    return [frame.vals[v[1]] if isinstance(v, tuple) else v for v in mixed]


def _segments(op) -> list[list[ir.Value]]:
    sizes = attr_ints(op, "operandSegmentSizes")
    operands, out, start = list(op.operands), [], 0
    for size in sizes:
        out.append(operands[start:start + size])
        start += size
    return out


@handles("memref.load")
def _load(compiler, op):
    source, *indices = compiler.slots_of(op.operands)
    out = compiler.slot(op.results[0])

    def step(frame):
        vals = frame.vals
        vals[out] = access(frame, op, vals[source], [vals[i] for i in indices], "load")
    return step


@handles("memref.store")
def _store(compiler, op):
    value, target, *indices = compiler.slots_of(op.operands)

    def step(frame):
        vals = frame.vals
        access(frame, op, vals[target], [vals[i] for i in indices], "store", values=vals[value])
    return step


@handles("memref.atomic_rmw")
def _atomic_rmw(compiler, op):
    kind = ATOMIC_RMW_KINDS.get(ir.IntegerAttr(op.attributes["kind"]).value)
    if kind is None:
        raise UnsupportedOp(f"memref.atomic_rmw of kind {op.attributes['kind']} (only add, max and min)", op)
    value, target, *indices = compiler.slots_of(op.operands)
    out = compiler.slot(op.results[0])

    def step(frame):
        vals = frame.vals
        vals[out] = access(frame, op, vals[target], [vals[i] for i in indices], f"atomic {kind}",
                           values=vals[value])
    return step


@handles("gpu.memset")
def _memset(compiler, op):
    """The host's synchronous `gpu.memset %dst, %value`: every element of dst."""
    if len(op.operands) != 2 or len(op.results):
        raise UnsupportedOp("gpu.memset with async tokens", op)
    target, value = compiler.slots_of(op.operands)

    def step(frame):
        vals = frame.vals
        memref = vals[target]
        sizes = [_uniform_int(size, "size", op) for size in memref.sizes]
        grids = np.meshgrid(*[np.arange(n, dtype=INDEX) for n in sizes], indexing="ij")
        access(frame, op, memref, [g.reshape((1, -1)) for g in grids], "store",
               values=np.asarray(vals[value]).reshape(-1)[:1])
    return step


@handles("memref.alloca", "memref.alloc")
def _alloc(compiler, op):
    t = op.results[0].type
    sizes = compiler.slots_of(_segments(op)[0]) if "operandSegmentSizes" in op.attributes \
        else compiler.slots_of(op.operands)
    out = compiler.slot(op.results[0])
    name = op.name.split(".")[1]

    def step(frame):
        frame.vals[out] = allocate(t, frame, name, op,
                                   [_uniform_int(frame.vals[s], "size", op) for s in sizes])
    return step


@handles("memref.dealloc")
def _dealloc(compiler, op):
    return None


@handles("memref.cast", "memref.assume_alignment", "memref.memory_space_cast",
         "amdgpu.fat_raw_buffer_cast")
def _same_view(compiler, op):
    """The same memory, seen another way. A buffer resource
    (amdgpu.fat_raw_buffer_cast) reads 0 past its end on the hardware; here such
    an access stays an out-of-bounds error (stricter: tilemlir only reads
    in-bounds through buffers)."""
    source = compiler.slot(op.operands[0])
    out = compiler.slot(op.results[0])

    def step(frame):
        frame.vals[out] = frame.vals[source]
    return step


@handles("memref.dim")
def _dim(compiler, op):
    source, index = compiler.slots_of(op.operands)
    out = compiler.slot(op.results[0])

    def step(frame):
        memref = frame.vals[source]
        d = _uniform_int(frame.vals[index], "dimension", op)
        frame.vals[out] = np.asarray(memref.sizes[d], dtype=INDEX).reshape(-1)
    return step


def _offsets_sizes_strides(compiler: Compiler, op) -> tuple[int, list, list, list]:
    """(source slot, offsets, sizes, strides) of subview/reinterpret_cast (see _mixed)."""
    source_value, offsets, sizes, strides = _segments(op)
    return (compiler.slot(source_value[0]),
            _mixed(compiler, op, "static_offsets", offsets),
            _mixed(compiler, op, "static_sizes", sizes),
            _mixed(compiler, op, "static_strides", strides))


@handles("memref.subview")
def _subview(compiler, op):
    source, offsets, sizes, strides = _offsets_sizes_strides(compiler, op)
    result_shape = list(op.results[0].type.shape)
    out = compiler.slot(op.results[0])

    def step(frame):
        memref = frame.vals[source]
        offs, szs, strs = _resolve(frame, offsets), _resolve(frame, sizes), _resolve(frame, strides)
        offset = memref.offset
        new_sizes, new_strides = [], []
        for d, (o, s, st) in enumerate(zip(offs, szs, strs)):
            if frame.wg.sanitize:
                last = np.asarray(o) + (np.asarray(s) - 1) * np.asarray(st)
                bad = (np.asarray(o) < 0) | ((np.asarray(s) > 0) & (last >= memref.sizes[d]))
                if np.any(bad):
                    raise SanitizerError(
                        f"memref.subview out of bounds: dimension {d} offset "
                        f"{np.asarray(o).reshape(-1)[0]} size {np.asarray(s).reshape(-1)[0]} of "
                        f"{memref.sizes[d]}, in {frame.wg.describe_lane(0)}", op)
            offset = offset + np.asarray(o) * memref.strides[d] if np.ndim(o) else \
                offset + o * memref.strides[d]
            new_sizes.append(s)
            new_strides.append(_uniform_int(st, "stride", op) * memref.strides[d])
        drop = len(new_sizes) - len(result_shape)
        if drop:
            keep_sizes, keep_strides = [], []
            for d, (s, st) in enumerate(zip(new_sizes, new_strides)):
                remaining = len(new_sizes) - d
                needed = len(result_shape) - len(keep_sizes)
                if drop and np.ndim(s) == 0 and s == 1 and remaining > needed:
                    drop -= 1
                    continue
                keep_sizes.append(s)
                keep_strides.append(st)
            new_sizes, new_strides = keep_sizes, keep_strides
        frame.vals[out] = memref.with_layout(offset, new_sizes, new_strides)
    return step


@handles("memref.reinterpret_cast")
def _reinterpret_cast(compiler, op):
    source, offsets, sizes, strides = _offsets_sizes_strides(compiler, op)
    out = compiler.slot(op.results[0])

    def step(frame):
        memref = frame.vals[source]
        (offset,) = _resolve(frame, offsets)
        strs = [_uniform_int(s, "stride", op) for s in _resolve(frame, strides)]
        frame.vals[out] = memref.with_layout(offset, _resolve(frame, sizes), strs)
    return step


@handles("memref.view")
def _view(compiler, op):
    source, shift, *dynamic_sizes = compiler.slots_of(op.operands)
    t = op.results[0].type
    dtype = scalar_dtype(t.element_type, op)
    out = compiler.slot(op.results[0])

    def step(frame):
        memref = frame.vals[source]
        dynamic = iter(dynamic_sizes)
        sizes = [_uniform_int(frame.vals[next(dynamic)], "size", op) if s == DYNAMIC else s
                 for s in t.shape]
        byte_shift = memref.byte_shift + _uniform_int(memref.offset, "offset", op) + \
            _uniform_int(frame.vals[shift], "byte shift", op)
        count = int(np.prod(sizes, dtype=np.int64))
        if byte_shift < 0 or byte_shift + count * dtype.itemsize > memref.buffer.raw.size // max(
                1, frame.wg.threads if memref.per_lane else 1):
            raise SanitizerError(
                f"memref.view of {count * dtype.itemsize} bytes at byte {byte_shift} exceeds "
                f"the {memref.buffer.raw.size} bytes of {memref.buffer.name}", op)
        frame.vals[out] = MemRef(memref.buffer, dtype, byte_shift, 0, tuple(sizes),
                                 contiguous_strides(sizes), memref.per_lane)
    return step


@handles("memref.collapse_shape", "memref.expand_shape")
def _reshape(compiler, op):
    source = compiler.slot(op.operands[0])
    groups = [[int(ir.IntegerAttr(x).value) for x in group]
              for group in ir.ArrayAttr(op.attributes["reassociation"])]
    expand = op.name == "memref.expand_shape"
    result_shape = list(op.results[0].type.shape)
    dynamic_slots = compiler.slots_of(list(op.operands)[1:])
    out = compiler.slot(op.results[0])

    def step(frame):
        memref = frame.vals[source]
        sizes, strides = [], []
        if expand:
            dynamic = iter(dynamic_slots)
            shape = [_uniform_int(frame.vals[next(dynamic)], "size", op) if s == DYNAMIC else s
                     for s in result_shape]
            for d, group in enumerate(groups):
                inner = memref.strides[d]
                for r in reversed(group):
                    strides.append(inner)
                    inner *= shape[r]
                strides[len(strides) - len(group):] = reversed(strides[len(strides) - len(group):])
                sizes.extend(shape[r] for r in group)
        else:
            for group in groups:
                size = 1
                for d in group:
                    size = size * memref.sizes[d]
                for a, b in pairwise(group):
                    if memref.sizes[b] != 1 and memref.strides[a] != memref.strides[b] * \
                            memref.sizes[b] and memref.sizes[a] != 1:
                        raise UnsupportedOp("memref.collapse_shape of non-contiguous dims", op)
                sizes.append(size)
                strides.append(memref.strides[group[-1]])
        frame.vals[out] = memref.with_layout(memref.offset, sizes, strides)
    return step


# --------------------------------------------------------------------------
# vector memory ops
# --------------------------------------------------------------------------

def spread(bases: list, shape: tuple[int, ...], mapping: dict[int, int]) -> list:
    """Per-memref-dim index arrays of shape (L, *shape): base + position along the
    vector dim that `mapping` (memref dim -> vector dim) assigns to it."""
    rank = len(shape)
    out = []
    for d, base in enumerate(bases):
        base = np.asarray(base, dtype=INDEX).reshape((-1,) + (1,) * rank)
        v = mapping.get(d)
        if v is None:
            out.append(base)
        else:
            steps = np.arange(shape[v], dtype=INDEX).reshape(
                (1,) + tuple(shape[v] if a == v else 1 for a in range(rank)))
            out.append(base + steps)
    return out


def _minor_mapping(memref_rank: int, vector_rank: int) -> dict[int, int]:
    return {memref_rank - vector_rank + v: v for v in range(vector_rank)}


@handles("vector.load", "vector.store")
def _vector_load_store(compiler, op):
    is_load = op.name == "vector.load"
    slots = compiler.slots_of(op.operands)
    value_slot = None if is_load else slots.pop(0)
    source, *indices = slots
    vtype = op.results[0].type if is_load else op.operands[0].type
    shape = tuple(vtype.shape)
    mapping = _minor_mapping(len(indices), len(shape))
    out = compiler.slot(op.results[0]) if is_load else None

    def step(frame):
        vals = frame.vals
        idx = spread([vals[i] for i in indices], shape, mapping)
        if is_load:
            vals[out] = access(frame, op, vals[source], idx, "load")
        else:
            access(frame, op, vals[source], idx, "store", values=vals[value_slot])
    return step


@handles("amdgpu.transpose_load")
def _transpose_load(compiler, op):
    """gfx950's LDS transpose read (ds_read_b64_tr_b16/b8): every lane reads
    64 bits (E elements) at its own address; then, in each group of 16 lanes,
    lane i receives element j = in[j * 16/E + i // E][i % E]. The whole wave
    must be active and each address 8-byte aligned (sources: the gfx950
    descriptor's memory.shared_transpose_reads)."""
    source, *indices = compiler.slots_of(op.operands)
    shape = tuple(op.results[0].type.shape)
    per_lane = shape[0]
    if shape != (per_lane,) or per_lane * ir.VectorType(op.results[0].type).element_type.width != 64:
        raise UnsupportedOp("amdgpu.transpose_load of other than 64 bits per lane", op)
    group, per_row = 16, 16 // per_lane
    out_lane = np.arange(group).reshape(group, 1)
    out_element = np.arange(per_lane).reshape(1, per_lane)
    from_lane = (out_element * per_row + out_lane // per_lane).reshape(-1)
    from_element = np.broadcast_to(out_lane % per_lane, (group, per_lane)).reshape(-1)
    mapping = _minor_mapping(len(indices), 1)
    out = compiler.slot(op.results[0])

    def step(frame):
        require_whole_waves(frame, op, "amdgpu.transpose_load", WAVE)
        vals = frame.vals
        memref = vals[source]
        starts = [np.asarray(vals[i]) for i in indices]
        first = memref.offset + sum(i * stride for i, stride in zip(starts, memref.strides))
        misaligned = np.broadcast_to(np.asarray(first) % per_lane != 0, (frame.wg.threads,))
        if misaligned.any():
            lane = int(np.argmax(misaligned))
            raise SanitizerError(f"amdgpu.transpose_load address not 8-byte aligned in "
                                 f"{frame.wg.describe_lane(lane)}", op)
        loaded = access(frame, op, memref, spread(starts, shape, mapping), "load")
        loaded = np.broadcast_to(loaded, (frame.wg.threads, per_lane))
        groups = loaded.reshape(-1, group * per_lane)
        picked = groups[:, from_lane * per_lane + from_element]
        vals[out] = picked.reshape(frame.wg.threads, per_lane)
    return step


# The kinds of `access` of a direct-to-LDS load's store (InFlightLds): when
# issued, checked (bounds, races with what came before) and not written; when
# it lands, written (its bytes are no longer in flight).
ISSUED, LANDED = "direct-to-LDS store", "landing direct-to-LDS store"


@dataclass
class InFlightLds:
    """An amdgpu.gather_to_lds issued and not yet waited for: what it writes
    where, for the lanes in `lanes` (those of waves that have not waited)."""

    op: ir.Operation
    memref: MemRef
    indices: list
    values: np.ndarray
    lanes: np.ndarray  # (T,) bool
    bytes: np.ndarray | None  # (T, width * itemsize) LDS bytes, with the sanitizer


def _land(frame: Frame, load: InFlightLds, lanes: np.ndarray) -> None:
    """Writes `load`'s values of `lanes` to LDS, as a store by those lanes."""
    shadow = load.memref.buffer.shadow
    if shadow is not None:
        np.subtract.at(shadow.in_flight, load.bytes[lanes].reshape(-1), 1)
    active = frame.mask
    frame.mask = lanes
    try:
        access(frame, load.op, load.memref, load.indices, LANDED, values=load.values)
    finally:
        frame.mask = active
    load.lanes = load.lanes & ~lanes


@handles("amdgpu.gather_to_lds")
def _gather_to_lds(compiler, op):
    """buffer_load ... lds: every active lane loads one transfer-type value at its
    own source indices; the wave writes them to LDS in lane order, lane i at
    element i * width after dst[dstIndices] (the wave's base, which must be
    the same on all its active lanes), the LDS view's rows being contiguous.
    Global memory is read at once; LDS is written when the wave waits for its
    loads (`_memory_counter_wait`; amdgpu.buffer_load_lds in the descriptors
    has the sources)."""
    slots = compiler.slots_of(op.operands)
    src_rank = len(ir.MemRefType(op.operands[0].type).shape)
    source, src_idx = slots[0], slots[1:1 + src_rank]
    dest, dst_idx = slots[1 + src_rank], slots[2 + src_rank:]
    transfer = ir.TypeAttr(op.attributes["transferType"]).value
    width = ir.VectorType(transfer).shape[0] if isinstance(transfer, ir.VectorType) else 1
    mapping = _minor_mapping(src_rank, 1)

    def step(frame):
        vals, wg = frame.vals, frame.wg
        loaded = access(frame, op, vals[source], spread([vals[i] for i in src_idx], (width,), mapping),
                        "load")
        memref = vals[dest]
        sizes, strides = list(memref.sizes), list(memref.strides)
        if len(sizes) != 2 or strides[1] != 1 or strides[0] != sizes[1]:
            raise UnsupportedOp("amdgpu.gather_to_lds into LDS rows that are not contiguous", op)
        active = np.ones(wg.threads, dtype=bool) if frame.mask is None else frame.mask
        starts = [np.broadcast_to(np.asarray(vals[i]), (wg.threads,)) for i in dst_idx]
        linear = starts[0] * sizes[1] + starts[1]
        per_wave = linear.reshape(-1, wg.wave_size)
        first = per_wave[np.arange(per_wave.shape[0]), np.argmax(active.reshape(-1, wg.wave_size), axis=1)]
        uneven = active & (linear != np.repeat(first, wg.wave_size))
        if uneven.any():
            raise SanitizerError("amdgpu.gather_to_lds destination is not the same on every lane "
                                 f"of the wave, in {wg.describe_lane(int(np.argmax(uneven)))}", op)
        position = (np.repeat(first, wg.wave_size) + (wg.lanes % wg.wave_size) * width).reshape(-1, 1) \
            + np.arange(width).reshape(1, -1)
        load = InFlightLds(op, memref, [position // sizes[1], position % sizes[1]],
                           np.broadcast_to(loaded, (wg.threads, width)), active.copy(), None)
        # Bounds, and races with the accesses since the last barrier: the
        # bytes may change from now on.
        access(frame, op, memref, load.indices, ISSUED, values=load.values)
        shadow = memref.buffer.shadow
        if shadow is not None:  # rows contiguous: element `position` of the view
            flat = np.asarray(memref.offset, dtype=INDEX).reshape(-1, 1) + position
            load.bytes = _lds_bytes(frame, memref, flat, None)[0].reshape(wg.threads, -1)
            np.add.at(shadow.in_flight, load.bytes[active].reshape(-1), 1)
        wg.in_flight_lds.append(load)
    return step


@handles("amdgpu.memory_counter_wait")
def _memory_counter_wait(compiler, op):
    """s_waitcnt: every other memory operation completes at once in the
    emulator; a wait whose vmcnt is 0 lands the waiting waves' direct-to-LDS
    loads (amdgpu.gather_to_lds). vmcnt is `load`, plus `store` on GFX9 (one
    counter for both there, as the op's lowering to ROCDL sums them)."""
    counts = {name: ir.IntegerAttr(op.attributes[name]).value
              for name in ("load", "store") if op.attributes.get(name) is not None}
    if not compiler.chip.startswith("gfx9"):
        counts.pop("store", None)
    if not counts or sum(counts.values()) != 0:
        return lambda frame: None

    def step(frame):
        wg = frame.wg
        if not wg.in_flight_lds:
            return
        waiting = np.ones(wg.threads, dtype=bool) if frame.mask is None else frame.mask
        waves = np.repeat(waiting.reshape(-1, wg.wave_size).any(axis=1), wg.wave_size)
        for load in wg.in_flight_lds:
            lanes = load.lanes & waves
            if lanes.any():
                _land(frame, load, lanes)
        wg.in_flight_lds = [load for load in wg.in_flight_lds if load.lanes.any()]
    return step


@handles("rocdl.sched.group.barrier", "rocdl.sched.barrier")
def _sched_group_barrier(compiler, op):
    """A hint to llc's instruction scheduler: nothing happens at run time."""
    return lambda frame: None


@handles("vector.maskedload", "vector.maskedstore")
def _vector_masked(compiler, op):
    is_load = op.name == "vector.maskedload"
    slots = compiler.slots_of(op.operands)
    if is_load:
        source, *indices, mask, passthru = slots
        shape = tuple(op.results[0].type.shape)
        out = compiler.slot(op.results[0])
    else:
        source, *indices, mask, value = slots
        shape = tuple(op.operands[len(slots) - 1].type.shape)
    mapping = _minor_mapping(len(indices), len(shape))

    def step(frame):
        vals = frame.vals
        idx = spread([vals[i] for i in indices], shape, mapping)
        if is_load:
            loaded = access(frame, op, vals[source], idx, "load", element_mask=vals[mask])
            vals[out] = np.where(vals[mask], loaded, vals[passthru])
        else:
            access(frame, op, vals[source], idx, "store", values=vals[value],
                   element_mask=vals[mask])
    return step


def _transfer_mapping(op, memref_rank: int) -> tuple[dict[int, int], list[int]]:
    """(memref dim -> vector dim, vector dims that broadcast) of a permutation map."""
    amap = ir.AffineMapAttr(op.attributes["permutation_map"]).value
    mapping, broadcast = {}, []
    for v, expr in enumerate(amap.results):
        if isinstance(expr, ir.AffineDimExpr):
            mapping[expr.position] = v
        elif isinstance(expr, ir.AffineConstantExpr) and expr.value == 0:
            broadcast.append(v)
        else:
            raise UnsupportedOp(f"transfer permutation map {amap}", op)
    return mapping, broadcast


def _transfer_mask(mask: np.ndarray, mapping: dict[int, int], shape) -> np.ndarray:
    """The transfer mask laid out on the vector: its axes follow the transferred
    memref dims in order (before permutation and broadcast, as MLIR defines it)."""
    vector_dims = [mapping[d] for d in sorted(mapping)]
    by_vector_dim = np.argsort(vector_dims)
    laid_out = np.transpose(mask, [0] + [1 + int(a) for a in by_vector_dim])
    full = [shape[v] if v in vector_dims else 1 for v in range(len(shape))]
    return laid_out.reshape((laid_out.shape[0],) + tuple(full))


@handles("vector.transfer_read", "vector.transfer_write")
def _transfer(compiler, op):
    is_read = op.name == "vector.transfer_read"
    segments = _segments(op)
    if is_read:
        (source_v,), index_v, (padding_v,), mask_v = segments
        vtype = op.results[0].type
        padding = compiler.slot(padding_v)
        out = compiler.slot(op.results[0])
    else:
        (value_v,), (source_v,), index_v, mask_v = segments
        vtype = value_v.type
        value = compiler.slot(value_v)
    source = compiler.slot(source_v)
    if not isinstance(source_v.type, ir.MemRefType):
        raise UnsupportedOp(f"{op.name} on tensors", op)
    indices = compiler.slots_of(index_v)
    mask = compiler.slot(mask_v[0]) if mask_v else None
    shape = tuple(vtype.shape)
    mapping, broadcast = _transfer_mapping(op, len(indices))
    if broadcast and not is_read:
        raise UnsupportedOp("vector.transfer_write with a broadcast dimension", op)
    in_bounds = [bool(ir.BoolAttr(x).value) for x in ir.ArrayAttr(op.attributes["in_bounds"])] \
        if "in_bounds" in op.attributes else [False] * len(shape)
    checked_dims = [d for d, v in mapping.items() if not in_bounds[v]]

    def step(frame):
        vals = frame.vals
        memref = vals[source]
        idx = spread([vals[i] for i in indices], shape, mapping)
        element_mask = None
        if mask is not None:
            element_mask = _transfer_mask(vals[mask], mapping, shape)
        for d in checked_dims:  # out-of-bounds positions of these dims are padding / dropped
            size = memref.sizes[d]
            size = np.asarray(size).reshape((-1,) + (1,) * len(shape)) if np.ndim(size) else size
            inside = (idx[d] >= 0) & (idx[d] < size)
            element_mask = inside if element_mask is None else element_mask & inside
        if is_read:
            loaded = access(frame, op, memref, idx, "load", element_mask=element_mask)
            if element_mask is not None:
                pad = vals[padding].reshape((-1,) + (1,) * len(shape))
                loaded = np.where(element_mask, loaded, pad)
            vals[out] = np.broadcast_to(loaded, loaded.shape[:1] + shape) if broadcast else loaded
        else:
            access(frame, op, memref, idx, "store", values=vals[value], element_mask=element_mask)
    return step


__all__ = ["Buffer", "EmulatorError", "MemRef", "access", "allocate", "host_memref", "spread"]
