"""The tuning database: the best configuration tile-tune found per (target, op signature).

One plain text file, diffable and merge-friendly: a JSON document whose header
says what it is, with one entry per line, entries sorted by their key and each
entry's keys sorted:

    {"format": "tilemlir-tuning-db", "version": 2, "entries": [
    {"candidates": 8, "complete": true, "config": {...}, "default": {...}, "default_seconds": 4.5e-06,
     "key": {"op": {...}, "processor": "gfx942", "target": "amdgpu:gfx942", "target_hash": "..."},
     "measure": "model", "seconds": 3.1e-06, "tilemlir": "0.1.0", "when": "2026-12-05T10:00:00Z"}
    ]}

An entry's key is what determines the configuration, and nothing else: the
problem (`OpSignature`: M, N, K, the types of A, B, C and the sum, the
transposes, whether C is read, and A's, B's and C's memory layouts where they
are not the contiguous row-major one) and the hardware (the target's
processor and `target_hash`, a hash of its descriptor's facts: every field
but its names and citations). Symbol and SSA names and locations are no part
of it: renaming the function still finds the entry. `target` names the target
for people (`family:name`) and is not compared. When a lookup misses, the
entries that differ from the key in one respect only (one extent, one type,
one transpose, the layouts, or the target) are its near matches
(`TuningDatabase.near_matches`), which tile-compile names in a remark.

Version 1 keyed entries by the target's printed name and a hash of the
module's whole tile IR, function names included. Such a file is still read:
an entry for a packaged target (`family:name`) gets that target's processor
and hash; an entry for a descriptor file of the user's cannot (its facts were
not recorded), and is left out with a warning. The next entry tile-tune
records writes the file as version 2.

Its value is the chosen configuration (tile-tiling's block, threads, stages,
tile-select-mma's options, and the instruction and split-K they gave), its
seconds, the default's (tile-compile's own choice, always among the
candidates) under the same measure ("model": the cost model fed with each
compiled kernel's figures; "device": the median of launches on the GPU),
how many candidates were ranked, whether the run finished, and when.

The file is data, read against a schema: any file a user's environment names
reaches the compiler, so nothing in it is trusted. Only a regular file of at
most MAX_DATABASE_BYTES is read (`files.read_regular_file`, as descriptors
are: a FIFO or a device is refused unread), strict JSON (no NaN, no integer
of more than 19 digits, no member given twice), objects with exactly their
known fields, every number an int or a float of its range and every string of
its grammar: a configuration (`TunedConfig`) is valid by construction, and
tile-compile renders the passes' options from its typed values. Two entries
for one key that disagree are refused. Anything else is a `TuningDatabaseError`
naming the file and the line and column (the entry's line for a malformed
entry, with its number and field).

Writes are atomic (a temporary file renamed over the database) and made under
a lock (`PATH.lock`), re-reading the file first, so two tuners never lose each
other's entries and an interrupted run leaves the last entry it wrote; a
process ending on a signal waits for its write in progress (`stop_writing`),
so no temporary file is left beside the database.

Where tile-compile looks (`database_path`): `--tuning-db PATH`, else the
environment's `TILEMLIR_TUNING_DB`, else `$XDG_CACHE_HOME/tilemlir/tuning.json`
(`~/.cache/...` without it) when that file exists. tile-tune writes to the
same place unless given `--db`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import math
import os
import re
import stat
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tilemlir.cost.model import GemmShape
from tilemlir.diagnostics import Diag, ToolWarning, UserError, format_diag
from tilemlir.files import UnreadableFile, read_regular_file
from tilemlir.targets.descriptor import ROW_SYMBOL, TARGET_NAME
from tilemlir.targets.model import Target
from tilemlir.targets.toml_writer import descriptor_data

FORMAT = "tilemlir-tuning-db"
VERSION = 2
ENVIRONMENT_VARIABLE = "TILEMLIR_TUNING_DB"
MEASURES = ("model", "device")
HEADER = f'{{"format": "{FORMAT}", "version": {VERSION}, "entries": ['


class TuningDatabaseError(UserError):
    """A tuning database that cannot be read or written; printed as
    `PATH:LINE:COL: error: message` (the position when known)."""

    def __init__(self, path: str | Path, message: str, line: int = 0, col: int = 0):
        self.diag = Diag("error", message, str(path), line, col)
        super().__init__(format_diag(self.diag).rstrip("\n"))


# --------------------------------------------------------------------------
# Keys and values
# --------------------------------------------------------------------------

# Ranges of a configuration's numbers: far beyond what any target takes (the
# passes check the target's real limits), so a hand-edited number is refused
# here rather than handed to a pass to compute with.
MAX_BLOCK_EXTENT = 4096
MAX_THREADS = 4096
MAX_STAGES = 64
MAX_SPLIT_K = 4096
PREFER = "prefer="
# tile-select-mma's `prefer` and an instruction's name: the grammar instruction
# names have in every descriptor.
NAME = ROW_SYMBOL
TYPE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")  # an MLIR element type: f16, bf16, f8E4M3FNUZ, i8
IR_HASH = re.compile(r"[0-9a-f]{1,64}")  # version 1's hash of the module's IR
TARGET_HASH = re.compile(r"[0-9a-f]{16}")
# A memory layout other than the contiguous row-major one, as `memory_layout` spells it.
LAYOUT = re.compile(r"strided<\[(\d+|\?), (\d+|\?)\], offset: (\d+|\?)>")
MAX_TEXT = 256  # characters of a name or a free-text field (a target with its file, a time, a version)


class Malformed(Exception):
    """A field of the wrong form (the reader adds where)."""


def _shown(value, limit: int = 60) -> str:
    """`value` as JSON, cut to `limit` characters (a message stays one short line)."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _in_range(value, limit: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= limit


def _is_name(text: str) -> bool:
    return len(text) <= MAX_TEXT and NAME.fullmatch(text) is not None


@dataclass(frozen=True)
class OpSignature(GemmShape):
    """What identifies a whole-problem gemm: its extents, types (as MLIR
    spells them), transposes, whether it reads C, and the memory layouts of
    A, B and C (`memory_layout`: "" for contiguous rows)."""

    reads_c: bool = False
    layouts: tuple[str, str, str] = ("", "", "")

    def __str__(self) -> str:
        layout = ("t" if self.transpose_a else "n") + ("t" if self.transpose_b else "n")
        strided = "".join(f", {name} {text}" for name, text in zip("ABC", self.layouts) if text)
        return (f"{self.m}x{self.n}x{self.k} {self.a} x {self.b} -> {self.c} (sum in {self.accum}, "
                f"{layout}{', C read' if self.reads_c else ''}{strided})")


def memory_layout(strides: list[int], offset: int, shape: list[int]) -> str:
    """A 2-D memref's layout as a key holds it: "" for contiguous rows at
    offset 0, else `strided<[S0, S1], offset: O>` (`?` where dynamic)."""
    if offset == 0 and strides == [shape[1], 1]:
        return ""
    shown = ["?" if value < 0 else str(value) for value in (*strides, offset)]
    return f"strided<[{shown[0]}, {shown[1]}], offset: {shown[2]}>"


# Fields of a descriptor that name or cite, and decide nothing a pass chooses.
UNHASHED_FIELDS = ("name", "describes", "products", "sources")


def target_hash(target: Target) -> str:
    """A hash of the facts of `target`'s descriptor (every field of its
    resolved descriptor but UNHASHED_FIELDS): two descriptors with the same
    facts share tuned entries whatever they are called."""
    import hashlib

    facts = {k: v for k, v in descriptor_data(target).items() if k not in UNHASHED_FIELDS}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class TuningKey:
    """What a configuration is tuned for: the problem (`op`) on a processor
    whose descriptor's facts hash to `target_hash`. `target` (family:name)
    says which target that was, for people; it is not compared."""

    target: str = dataclasses.field(compare=False)
    processor: str
    target_hash: str
    op: OpSignature

    @classmethod
    def of(cls, target: Target, op: OpSignature) -> TuningKey:
        return cls(target.qualified_name, target.processor, target_hash(target), op)

    def sort_key(self) -> tuple:
        return (self.processor, self.target_hash, *dataclasses.astuple(self.op), self.target)

    def differences(self, other: TuningKey) -> list[str]:
        """How `other`'s key differs from this one, one phrase per respect
        (an extent, a type, a transpose, whether C is read, the layouts, the
        target), each saying what `other` has and what this one has."""
        said = []
        for name, what in (("m", "M"), ("n", "N"), ("k", "K"), ("a", "A's type"), ("b", "B's type"),
                           ("c", "C's type"), ("accum", "the sum's type")):
            theirs, ours = getattr(other.op, name), getattr(self.op, name)
            if theirs != ours:
                said.append(f"{what} is {theirs} there, {ours} here")
        for name, what in (("transpose_a", "A"), ("transpose_b", "B")):
            if getattr(other.op, name) != getattr(self.op, name):
                said.append(f"{what} is {'' if getattr(other.op, name) else 'not '}transposed there")
        if other.op.reads_c != self.op.reads_c:
            said.append(f"C is {'' if other.op.reads_c else 'not '}read there")
        if other.op.layouts != self.op.layouts:
            said.append("the operands' memory layouts differ")
        if other.processor != self.processor:
            said.append(f"it was tuned for {other.target} (processor {other.processor}), "
                        f"this is {self.target} ({self.processor})")
        elif other.target_hash != self.target_hash:
            said.append(f"it was tuned for {other.target}, whose descriptor's facts differ from "
                        f"{self.target}'s")
        return said


@dataclass(frozen=True)
class TunedConfig:
    """A configuration as tile-compile applies it: tile-tiling's options and
    tile-select-mma's; `instruction` and `split_k` are what they gave.

    A valid value by construction (`Malformed` otherwise): every number an int
    in its range, `select` empty or `prefer=NAME` and `instruction` empty or a
    NAME, a NAME being an instruction name's grammar. tile-compile renders
    the passes' options from these values (`tiling_options`,
    `select_options`), so nothing read from a file reaches a pipeline as text."""

    block: tuple[int, int, int]
    threads: int
    stages: int
    select: str = ""
    instruction: str = ""
    split_k: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.block, tuple) or len(self.block) != 3 or \
                not all(_in_range(b, MAX_BLOCK_EXTENT) for b in self.block):
            raise Malformed(f"'block' must be three integers from 1 to {MAX_BLOCK_EXTENT}, "
                            f"got {_shown(list(self.block) if isinstance(self.block, tuple) else self.block)}")
        for name, limit in (("threads", MAX_THREADS), ("stages", MAX_STAGES), ("split_k", MAX_SPLIT_K)):
            if not _in_range(getattr(self, name), limit):
                raise Malformed(f"'{name}' must be an integer from 1 to {limit}, "
                                f"got {_shown(getattr(self, name))}")
        if not isinstance(self.select, str) or \
                (self.select and not (self.select.startswith(PREFER) and _is_name(self.select[len(PREFER):]))):
            raise Malformed(f"'select' must be \"\" or \"{PREFER}NAME\" (NAME: letters, digits, '_' and '.', "
                            f"as instruction names are spelled), got {_shown(self.select)}")
        if not isinstance(self.instruction, str) or (self.instruction and not _is_name(self.instruction)):
            raise Malformed(f"'instruction' must be \"\" or an instruction name (letters, digits, '_' and '.'), "
                            f"got {_shown(self.instruction)}")

    @property
    def prefer(self) -> str:
        """tile-select-mma's `prefer` option ("" for its own choice)."""
        return self.select[len(PREFER):]

    def tiling_options(self) -> str:
        """tile-tiling's options, rendered from the validated numbers."""
        text = f"block={','.join(str(int(b)) for b in self.block)} threads={int(self.threads)} " \
               f"stages={int(self.stages)}"
        return text + (f" split-k={int(self.split_k)}" if self.split_k > 1 else "")

    def select_options(self) -> str:
        """tile-select-mma's options, rendered from the validated name."""
        return f"{PREFER}{self.prefer}" if self.prefer else ""

    def describe(self) -> str:
        text = (f"block {'x'.join(map(str, self.block))}, {self.threads} threads, {self.stages} "
                f"stage{'s' if self.stages > 1 else ''}")
        if self.instruction:
            text += f", {self.instruction}"
        if self.split_k > 1:
            text += f", split-K {self.split_k}"
        return text + (f" ({self.select})" if self.select else "")


@dataclass(frozen=True)
class TuningEntry:
    key: TuningKey
    config: TunedConfig
    seconds: float
    default: TunedConfig
    default_seconds: float | None
    measure: str  # one of MEASURES
    candidates: int  # ranked (compiled, and measured where measured)
    complete: bool  # False when the run was interrupted before its budget was done
    when: str  # UTC, ISO 8601
    tilemlir: str  # the version that tuned it


# --------------------------------------------------------------------------
# JSON form
# --------------------------------------------------------------------------

def config_json(config: TunedConfig) -> dict:
    value = dataclasses.asdict(config)
    value["block"] = list(config.block)
    return value


def key_json(key: TuningKey) -> dict:
    op = dataclasses.asdict(key.op)
    op["layouts"] = list(key.op.layouts)
    return {"target": key.target, "processor": key.processor, "target_hash": key.target_hash, "op": op}


def entry_json(entry: TuningEntry) -> dict:
    return {
        "key": key_json(entry.key),
        "config": config_json(entry.config),
        "seconds": entry.seconds,
        "default": config_json(entry.default),
        "default_seconds": entry.default_seconds,
        "measure": entry.measure,
        "candidates": entry.candidates,
        "complete": entry.complete,
        "when": entry.when,
        "tilemlir": entry.tilemlir,
    }


# The fields of each object of an entry: nothing else is read, or accepted.
ENTRY_FIELDS = ("key", "config", "seconds", "default", "default_seconds", "measure", "candidates",
                "complete", "when", "tilemlir")
KEY_FIELDS = ("target", "processor", "target_hash", "op")
OP_FIELDS = ("m", "n", "k", "a", "b", "c", "accum", "transpose_a", "transpose_b", "reads_c", "layouts")
# Version 1's key: the target's printed name, the op without layouts, the IR's hash.
KEY_FIELDS_V1 = ("target", "op", "ir_hash")
OP_FIELDS_V1 = OP_FIELDS[:-1]
CONFIG_FIELDS = ("block", "threads", "stages", "select", "instruction", "split_k")


def _object(record, what: str, fields: tuple[str, ...]) -> Mapping:
    """`record` when it is an object with only `fields`, each given once."""
    if not isinstance(record, dict):
        raise Malformed(f"{what} must be an object, got {_shown(record)}")
    duplicated = getattr(record, "duplicated", ())
    if duplicated:
        raise Malformed(f"{_shown(duplicated[0])} is given twice")
    unknown = [name for name in record if name not in fields]
    if unknown:
        raise Malformed(f"unknown field {_shown(unknown[0])} (fields: {', '.join(fields)})")
    return record


def _field(record: Mapping, name: str, kinds: type | tuple[type, ...], what: str):
    if not isinstance(record, Mapping) or name not in record:
        raise Malformed(f"missing '{name}' ({what})")
    value = record[name]
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise Malformed(f"'{name}' must be {what}, got {_shown(value)}")
    if not isinstance(value, kinds):
        raise Malformed(f"'{name}' must be {what}, got {_shown(value)}")
    return value


def _positive(record: Mapping, name: str) -> int:
    value = _field(record, name, int, "a positive integer")
    if value < 1:
        raise Malformed(f"'{name}' must be a positive integer, got {value}")
    return value


def _text(record: Mapping, name: str, what: str, grammar: re.Pattern | None = None) -> str:
    """A string field: one printable line of 1 to MAX_TEXT characters, and
    of `grammar` when given."""
    value = _field(record, name, str, what)
    if grammar is not None and grammar.fullmatch(value) is None or \
            not value or not value.isprintable() or len(value) > MAX_TEXT:
        raise Malformed(f"'{name}' must be {what}, got {_shown(value)}")
    return value


def _seconds(record: Mapping, name: str, optional: bool = False) -> float | None:
    kinds = (int, float, type(None)) if optional else (int, float)
    value = _field(record, name, kinds, "seconds (a positive number)" + (" or null" if optional else ""))
    if value is None:
        return None
    if not math.isfinite(value) or value <= 0:
        raise Malformed(f"'{name}' must be a positive number of seconds, got {_shown(value)}")
    return float(value)


def config_from(record: Mapping, name: str) -> TunedConfig:
    """The configuration `record[name]` holds; Malformed saying what is wrong."""
    try:
        value = _object(_field(record, name, dict, "a configuration object"), "a configuration", CONFIG_FIELDS)
        block = _field(value, "block", list, f"three integers from 1 to {MAX_BLOCK_EXTENT}")
        return TunedConfig(tuple(block), _field(value, "threads", int, "an integer"),
                           _field(value, "stages", int, "an integer"), _field(value, "select", str, "a string"),
                           _field(value, "instruction", str, "a string"), _field(value, "split_k", int, "an integer"))
    except Malformed as error:
        raise Malformed(f"'{name}': {error}") from None


def _signature(op: Mapping, layouts: tuple[str, str, str]) -> OpSignature:
    return OpSignature(
        *(_positive(op, field) for field in ("m", "n", "k")),
        *(_text(op, field, "an element type name", TYPE_NAME) for field in ("a", "b", "c", "accum")),
        *(_field(op, field, bool, "true or false") for field in ("transpose_a", "transpose_b", "reads_c")),
        layouts)


def _layouts(op: Mapping) -> tuple[str, str, str]:
    what = 'three layouts of A, B and C ("" or strided<[S0, S1], offset: O>)'
    value = _field(op, "layouts", list, what)
    if len(value) != 3 or not all(isinstance(text, str) and (not text or LAYOUT.fullmatch(text))
                                  for text in value):
        raise Malformed(f"'layouts' must be {what}, got {_shown(value)}")
    return tuple(value)


def key_from(record: Mapping, name: str) -> TuningKey:
    """The key `record[name]` holds; Malformed saying what is wrong."""
    try:
        key = _object(_field(record, name, dict, "an object"), "a key", KEY_FIELDS)
        op = _object(_field(key, "op", dict, "an object"), "'op'", OP_FIELDS)
        signature = _signature(op, _layouts(op))
        return TuningKey(_text(key, "target", "a target name"),
                         _text(key, "processor", "a processor name", TARGET_NAME),
                         _text(key, "target_hash", "a hash (16 hexadecimal digits)", TARGET_HASH), signature)
    except Malformed as error:
        raise Malformed(f"'{name}': {error}") from None


def _v1_key_from(record: Mapping, name: str) -> tuple[str, OpSignature]:
    """The target and op of a version 1 key (its IR hash, checked, is dropped)."""
    try:
        key = _object(_field(record, name, dict, "an object"), "a key", KEY_FIELDS_V1)
        op = _object(_field(key, "op", dict, "an object"), "'op'", OP_FIELDS_V1)
        _text(key, "ir_hash", "a hash (hexadecimal digits)", IR_HASH)
        return _text(key, "target", "a target name"), _signature(op, ("", "", ""))
    except Malformed as error:
        raise Malformed(f"'{name}': {error}") from None


def entry_from_json(record, key_of=key_from) -> TuningEntry:
    """The entry a JSON object holds; raises Malformed saying what is wrong.
    `key_of(record, "key")` reads its key (a version 1 file's: `_v1_key_of`)."""
    record = _object(record, "an entry", ENTRY_FIELDS)
    measure = _field(record, "measure", str, "a string")
    if measure not in MEASURES:
        raise Malformed(f"'measure' must be {' or '.join(MEASURES)}, got {_shown(measure)}")
    return TuningEntry(
        key=key_of(record, "key"),
        config=config_from(record, "config"),
        seconds=_seconds(record, "seconds"),
        default=config_from(record, "default"),
        default_seconds=_seconds(record, "default_seconds", optional=True),
        measure=measure,
        candidates=_positive(record, "candidates"),
        complete=_field(record, "complete", bool, "true or false"),
        when=_text(record, "when", "a time"),
        tilemlir=_text(record, "tilemlir", "a version"),
    )


# --------------------------------------------------------------------------
# The file
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class TuningDatabase:
    """The entries of one database file, by key."""

    path: str
    entries: Mapping[TuningKey, TuningEntry] = dataclasses.field(default_factory=dict)

    def lookup(self, key: TuningKey) -> TuningEntry | None:
        return self.entries.get(key)

    def near_matches(self, key: TuningKey) -> list[tuple[TuningEntry, list[str]]]:
        """The entries whose key differs from `key` in one respect only
        (`TuningKey.differences`), each with what differs, in key order."""
        found = []
        for entry in sorted(self.entries.values(), key=lambda e: e.key.sort_key()):
            differences = key.differences(entry.key)
            if len(differences) == 1:
                found.append((entry, differences))
        return found

    def with_entry(self, entry: TuningEntry) -> TuningDatabase:
        return TuningDatabase(self.path, {**self.entries, entry.key: entry})

    def text(self) -> str:
        lines = [json.dumps(entry_json(e), sort_keys=True)
                 for e in sorted(self.entries.values(), key=lambda e: e.key.sort_key())]
        return HEADER + "\n" + ",\n".join(lines) + ("\n" if lines else "") + "]}\n"


def _entry_positions(text: str) -> list[tuple[int, int]]:
    """(line, column) where each element of the top-level "entries" array
    starts in `text` (a text `_decode` has accepted), however the file is laid
    out; [] when they cannot be found."""
    entries = re.search(r'"entries"\s*:\s*\[', text)
    if entries is None:
        return []
    decoder = json.JSONDecoder(object_pairs_hook=_object_pairs, parse_int=_integer,
                               parse_constant=_constant)
    separators = re.compile(r"[\s,]*")
    positions, at = [], entries.end()
    try:
        while True:
            at = separators.match(text, at).end()
            if at >= len(text) or text[at] == "]":
                return positions
            line = text.count("\n", 0, at) + 1
            positions.append((line, at - (text.rfind("\n", 0, at) + 1) + 1))
            _, at = decoder.raw_decode(text, at)
    except (ValueError, RecursionError, _NotJson):
        return []


# The largest database read: some 20,000 entries of the writer's (about 800
# bytes each); anything larger is not a tuning database.
MAX_DATABASE_BYTES = 16 << 20
# The longest integer a field holds (a GEMM extent is at most 2**63).
MAX_INTEGER_DIGITS = 19


class _NotJson(Exception):
    """Text Python's JSON reader accepts but JSON is not (NaN, Infinity), or
    an integer too long for any field: `pattern` finds it in the file."""

    def __init__(self, message: str, pattern: str):
        super().__init__(message)
        self.message, self.pattern = message, pattern


class _Object(dict):
    """A JSON object; `duplicated` names its members given more than once
    (the last one counts, as for any JSON reader, but the schema refuses them)."""

    duplicated: tuple[str, ...] = ()


def _object_pairs(pairs: list[tuple[str, object]]) -> _Object:
    record = _Object(pairs)
    if len(record) != len(pairs):
        seen: set[str] = set()
        record.duplicated = tuple(dict.fromkeys(name for name, _ in pairs if name in seen or seen.add(name)))
    return record


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _NotJson(f"an integer of {len(text.lstrip('-'))} digits (no field holds more than "
                       f"{MAX_INTEGER_DIGITS})", rf"-?\d{{{MAX_INTEGER_DIGITS + 1},}}")
    return int(text)


def _constant(text: str):
    raise _NotJson(f"{text} is not a JSON value", re.escape(text))


def _decode(text: str):
    return json.loads(text, object_pairs_hook=_object_pairs, parse_int=_integer, parse_constant=_constant)


def _position(text: str, pattern: str) -> tuple[int, int]:
    """The line and column of the first match of `pattern` in `text` (1, 1 when none)."""
    found = re.search(pattern, text)
    if found is None:
        return 1, 1
    line = text.count("\n", 0, found.start()) + 1
    return line, found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1


def parse_database(text: str, path: str) -> TuningDatabase:
    """The database `text` (read from `path`, which messages name)."""
    try:
        document = _decode(text)
    except json.JSONDecodeError as error:
        raise TuningDatabaseError(path, f"not a tuning database: invalid JSON ({error.msg})",
                                  error.lineno, error.colno) from None
    except _NotJson as error:
        raise TuningDatabaseError(path, f"not a tuning database: {error.message}",
                                  *_position(text, error.pattern)) from None
    except RecursionError:
        raise TuningDatabaseError(path, "not a tuning database: JSON nested too deeply", 1, 1) from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise TuningDatabaseError(path, f'not a tuning database: the file has no "format": "{FORMAT}" '
                                        f"(tile-tune writes tuning databases)", 1, 1)
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TuningDatabaseError(path, f"tuning database version must be a positive integer, "
                                        f"got {_shown(version)}", 1, 1)
    if version > VERSION:
        raise TuningDatabaseError(path, f"tuning database version {version} is newer than this tilemlir "
                                        f"reads ({VERSION}); upgrade tilemlir or give another database", 1, 1)
    try:
        _object(document, "a tuning database", ("format", "version", "entries"))
    except Malformed as error:
        raise TuningDatabaseError(path, f"tuning database: {error}", 1, 1) from None
    records = document.get("entries")
    if not isinstance(records, list):
        raise TuningDatabaseError(path, 'tuning database has no "entries" list', 1, 1)
    entries: dict[TuningKey, TuningEntry] = {}
    first: dict[TuningKey, int] = {}
    positions = _entry_positions(text)

    def at(index: int) -> tuple[int, int]:
        return positions[index] if len(positions) == len(records) else (0, 0)

    converting = version < VERSION
    left_out: list[str] = []
    for index, record in enumerate(records):
        try:
            entry = entry_from_json(record, _v1_key_of if converting else key_from)
        except _Unconvertible as error:
            left_out.append(error.target)
            continue
        except Malformed as error:
            raise TuningDatabaseError(path, f"tuning database entry {index + 1}: {error}",
                                      *at(index)) from None
        if converting and entry.key in entries:
            # Version 1 told programs apart that version 2 does not: a measurement on
            # the device beats the model's ranking, then the latest tuning stands.
            def standing(e: TuningEntry) -> tuple[bool, str]:
                return e.measure == "device", e.when

            if standing(entry) >= standing(entries[entry.key]):
                entries[entry.key] = entry
            continue
        if entry.key in entries and entries[entry.key] != entry:
            # Two answers for one program: neither is the database's.
            other = entries[entry.key]
            said = (f"configuration ({other.config.describe()}, not {entry.config.describe()})"
                    if other.config != entry.config else "record (the same configuration, other figures)")
            raise TuningDatabaseError(path, f"tuning database entry {index + 1}: the same key as entry "
                                            f"{first[entry.key] + 1} with another {said}; keep one",
                                      *at(index))
        entries[entry.key] = entry
        first.setdefault(entry.key, index)
    if left_out:
        import warnings

        names = ", ".join(sorted(set(left_out)))
        warnings.warn(ToolWarning(
            f"{path}: {len(left_out)} version {version} entr{'y' if len(left_out) == 1 else 'ies'} for {names} "
            f"left out: version {version} did not record a descriptor file's facts, which version {VERSION} "
            f"keys entries by; run tile-tune again for them"), stacklevel=2)
    return TuningDatabase(path, entries)


class _Unconvertible(Exception):
    """A version 1 entry for a target that is not a packaged one."""

    def __init__(self, target: str):
        super().__init__(target)
        self.target = target


def _v1_key_of(record: Mapping, name: str) -> TuningKey:
    """A version 1 key as version 2 keys it: its packaged target's processor
    and facts (_Unconvertible for a descriptor file's target)."""
    from tilemlir.targets.model import TargetError
    from tilemlir.targets.registry import packaged_target

    target_name, op = _v1_key_from(record, name)
    try:
        target = packaged_target(target_name)
    except TargetError:
        raise _Unconvertible(target_name) from None
    return TuningKey.of(target, op)


def load_database(path: str | Path, missing_ok: bool = False) -> TuningDatabase:
    """The database at `path`; an empty one when it does not exist and
    `missing_ok`, else a TuningDatabaseError, as for any unreadable file (read
    as descriptors are: a regular file of at most MAX_DATABASE_BYTES)."""
    try:
        data = read_regular_file(path, MAX_DATABASE_BYTES)
    except UnreadableFile as error:
        if error.missing and missing_ok:
            return TuningDatabase(str(path))
        if error.missing:
            raise TuningDatabaseError(path, "tuning database does not exist") from None
        raise TuningDatabaseError(path, f"cannot read the tuning database: {error.reason}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TuningDatabaseError(path, f"not a tuning database: not UTF-8 text ({error.reason} at byte "
                                        f"{error.start})") from None
    return parse_database(text, str(path))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    lock = path.with_name(path.name + ".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Without blocking: a FIFO in the lock's place would wait for a reader.
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise TuningDatabaseError(path, f"cannot lock the tuning database ({lock}): "
                                        f"{error.strerror or error}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TuningDatabaseError(path, f"cannot lock the tuning database ({lock}): not a regular file")
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def record_entry(path: str | Path, entry: TuningEntry) -> TuningDatabase:
    """Adds (or replaces) `entry` in the database at `path`, creating it and
    its folder when missing: under the lock, re-read, then written atomically."""
    path = Path(path)
    try:  # written only as it reads back: a key or figure the reader refuses would spoil the file
        entry_from_json(json.loads(json.dumps(entry_json(entry))))
    except Malformed as error:
        raise TuningDatabaseError(path, f"cannot record this entry: {error}") from None
    with _WRITING, _locked(path):
        database = load_database(path, missing_ok=True).with_entry(entry)
        _write_atomically(path, database.text())
    return database


# Held while this process reads, changes and writes a database (the whole of
# `record_entry`), so a process ending on an interrupt (tile-tune) can wait
# for the update in progress, on whichever thread, and block later ones
# (`stop_writing`) before it exits. Re-entrant: `writing()` lets a caller
# hold it over an update and what it says of it.
_WRITING = threading.RLock()


def writing() -> threading.RLock:
    """The lock `stop_writing` waits for: `with writing(): ...` makes a
    database update and what follows it one step for an interrupt."""
    return _WRITING


def stop_writing(timeout: float = 30.0) -> bool:
    """For a process about to end: waits until no update of this process is
    in progress (at most `timeout` seconds; False if it took longer) and
    blocks every later one, so no database is left unwritten after being read
    and no temporary file is left beside one."""
    return _WRITING.acquire(timeout=timeout)


def _write_atomically(path: Path, text: str) -> None:
    """A temporary file beside `path`, renamed over it: readers see the old
    file or the new one, never a part (an existing file keeps its mode). The
    temporary file is removed whatever stops the write (an error, Ctrl-C)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644  # a cache file: readable by all, written by its owner
    except OSError as error:
        raise TuningDatabaseError(path, f"cannot write the tuning database: {error.strerror or error}") from None
    with _WRITING:
        temporary = None
        try:
            fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                os.fchmod(handle.fileno(), mode)
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
        except BaseException as error:
            if temporary is not None:
                Path(temporary).unlink(missing_ok=True)
            if isinstance(error, OSError):
                raise TuningDatabaseError(path, f"cannot write the tuning database: "
                                                f"{error.strerror or error}") from None
            raise


# --------------------------------------------------------------------------
# Where it is
# --------------------------------------------------------------------------

def cache_path(environ: Mapping[str, str]) -> Path:
    """`$XDG_CACHE_HOME/tilemlir/tuning.json`, or `~/.cache/tilemlir/tuning.json`."""
    base = environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path(environ.get("HOME") or Path.home()) / ".cache"
    return root / "tilemlir" / "tuning.json"


def database_path(given: str | None, environ: Mapping[str, str], *, for_writing: bool = False) -> Path | None:
    """The database to use: `given` (a flag), else `TILEMLIR_TUNING_DB`, else
    the cache file, which when reading counts only if it exists (None then)."""
    if given:
        return Path(given)
    if environ.get(ENVIRONMENT_VARIABLE):
        return Path(environ[ENVIRONMENT_VARIABLE])
    path = cache_path(environ)
    return path if for_writing or path.exists() else None
