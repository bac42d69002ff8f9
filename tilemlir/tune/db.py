"""The tuning database: the best configuration tile-tune found per (target, op signature).

One plain text file, diffable and merge-friendly: a JSON document whose header
says what it is, with one entry per line, entries sorted by their key and each
entry's keys sorted:

    {"format": "tilemlir-tuning-db", "version": 1, "entries": [
    {"candidates": 8, "complete": true, "config": {...}, "default": {...}, "default_seconds": 4.5e-06,
     "key": {"ir_hash": "...", "op": {...}, "target": "amdgpu:gfx942"}, "measure": "model",
     "seconds": 3.1e-06, "tilemlir": "0.1.0", "when": "2026-12-05T10:00:00Z"}
    ]}

An entry's key is the target (`family:name`, or the descriptor file's name for
a descriptor of the user's), the gemm's signature (M, N, K, the types of A, B,
C and the sum, the transposes, whether C is read) and a hash of the module's
tile IR (generic form, no locations, no `tile.target`): editing the program
misses the entry rather than applying a configuration tuned for another one.
Its value is the chosen configuration (tile-tiling's block, threads, stages,
tile-select-mma's options, and the instruction and split-K they gave), its
seconds, the default's (tile-compile's own choice, always among the
candidates) under the same measure ("model": the cost model fed with each
compiled kernel's figures; "device": the median of launches on the GPU),
how many candidates were ranked, whether the run finished, and when.

Writes are atomic (a temporary file renamed over the database) and made under
a lock (`PATH.lock`), re-reading the file first, so two tuners never lose each
other's entries and an interrupted run leaves the last entry it wrote. A file
that is not JSON, not a tuning database, of a newer format version, or with a
malformed entry is a `TuningDatabaseError` naming the file, line and column.

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
import stat
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tilemlir.diagnostics import Diag, UserError, format_diag
from tilemlir.tune.model import GemmShape

FORMAT = "tilemlir-tuning-db"
VERSION = 1
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

@dataclass(frozen=True)
class OpSignature(GemmShape):
    """What identifies a whole-problem gemm apart from its IR: its extents,
    types (as MLIR spells them), transposes, and whether it reads C."""

    reads_c: bool = False

    def __str__(self) -> str:
        layout = ("t" if self.transpose_a else "n") + ("t" if self.transpose_b else "n")
        return (f"{self.m}x{self.n}x{self.k} {self.a} x {self.b} -> {self.c} (sum in {self.accum}, "
                f"{layout}{', C read' if self.reads_c else ''})")


@dataclass(frozen=True)
class TuningKey:
    target: str
    op: OpSignature
    ir_hash: str

    def sort_key(self) -> tuple:
        return (self.target, *dataclasses.astuple(self.op), self.ir_hash)


@dataclass(frozen=True)
class TunedConfig:
    """A configuration as tile-compile applies it: tile-tiling's options and
    tile-select-mma's; `instruction` and `split_k` are what they gave."""

    block: tuple[int, int, int]
    threads: int
    stages: int
    select: str = ""
    instruction: str = ""
    split_k: int = 1

    def tiling_options(self) -> str:
        text = f"block={','.join(map(str, self.block))} threads={self.threads} stages={self.stages}"
        return text + (f" split-k={self.split_k}" if self.split_k > 1 else "")

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
    return {"target": key.target, "op": dataclasses.asdict(key.op), "ir_hash": key.ir_hash}


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


class Malformed(Exception):
    """A field of the wrong form (the reader adds where)."""


def _field(record: Mapping, name: str, kinds: type | tuple[type, ...], what: str):
    if not isinstance(record, Mapping) or name not in record:
        raise Malformed(f"missing '{name}' ({what})")
    value = record[name]
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise Malformed(f"'{name}' must be {what}, got {json.dumps(value)}")
    if not isinstance(value, kinds):
        raise Malformed(f"'{name}' must be {what}, got {json.dumps(value)}")
    return value


def _positive(record: Mapping, name: str) -> int:
    value = _field(record, name, int, "a positive integer")
    if value < 1:
        raise Malformed(f"'{name}' must be a positive integer, got {value}")
    return value


def _seconds(record: Mapping, name: str, optional: bool = False) -> float | None:
    kinds = (int, float, type(None)) if optional else (int, float)
    value = _field(record, name, kinds, "seconds (a positive number)" + (" or null" if optional else ""))
    if value is None:
        return None
    if not math.isfinite(value) or value <= 0:
        raise Malformed(f"'{name}' must be a positive number of seconds, got {json.dumps(value)}")
    return float(value)


def config_from(record: Mapping, name: str) -> TunedConfig:
    value = _field(record, name, dict, "a configuration object")
    try:
        block = _field(value, "block", list, "[M, N, K]")
        if len(block) != 3 or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block):
            raise Malformed(f"'block' must be three positive integers, got {json.dumps(block)}")
        return TunedConfig(tuple(block), _positive(value, "threads"), _positive(value, "stages"),
                           _field(value, "select", str, "a string"),
                           _field(value, "instruction", str, "a string"), _positive(value, "split_k"))
    except Malformed as error:
        raise Malformed(f"'{name}': {error}") from None


def key_from(record: Mapping, name: str) -> TuningKey:
    key = _field(record, name, dict, "an object")
    op = _field(key, "op", dict, "an object")
    try:
        signature = OpSignature(
            *(_positive(op, name) for name in ("m", "n", "k")),
            *(_field(op, name, str, "a type name") for name in ("a", "b", "c", "accum")),
            *(_field(op, name, bool, "true or false") for name in ("transpose_a", "transpose_b", "reads_c")))
    except Malformed as error:
        raise Malformed(f"'{name}.op': {error}") from None
    return TuningKey(_field(key, "target", str, "a target name"), signature, _field(key, "ir_hash", str, "a string"))


def entry_from_json(record) -> TuningEntry:
    """The entry a JSON object holds; raises Malformed saying what is wrong."""
    if not isinstance(record, dict):
        raise Malformed(f"an entry must be an object, got {json.dumps(record)[:60]}")
    measure = _field(record, "measure", str, "a string")
    if measure not in MEASURES:
        raise Malformed(f"'measure' must be {' or '.join(MEASURES)}, got {json.dumps(measure)}")
    return TuningEntry(
        key=key_from(record, "key"),
        config=config_from(record, "config"),
        seconds=_seconds(record, "seconds"),
        default=config_from(record, "default"),
        default_seconds=_seconds(record, "default_seconds", optional=True),
        measure=measure,
        candidates=_positive(record, "candidates"),
        complete=_field(record, "complete", bool, "true or false"),
        when=_field(record, "when", str, "a time"),
        tilemlir=_field(record, "tilemlir", str, "a version"),
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

    def with_entry(self, entry: TuningEntry) -> TuningDatabase:
        return TuningDatabase(self.path, {**self.entries, entry.key: entry})

    def text(self) -> str:
        lines = [json.dumps(entry_json(e), sort_keys=True)
                 for e in sorted(self.entries.values(), key=lambda e: e.key.sort_key())]
        return HEADER + "\n" + ",\n".join(lines) + ("\n" if lines else "") + "]}\n"


def _entry_line(text: str, record) -> int:
    """The line holding `record` in `text` (the writer puts one per line); 0
    when it is spread over several (a file formatted by hand)."""
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip().rstrip(",")
        if line.startswith("{"):
            try:
                if json.loads(line) == record:
                    return number
            except ValueError:
                continue
    return 0


def parse_database(text: str, path: str) -> TuningDatabase:
    """The database `text` (read from `path`, which messages name)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise TuningDatabaseError(path, f"not a tuning database: invalid JSON ({error.msg})",
                                  error.lineno, error.colno) from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise TuningDatabaseError(path, f'not a tuning database: the file has no "format": "{FORMAT}" '
                                        f"(tile-tune writes tuning databases)", 1, 1)
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TuningDatabaseError(path, f"tuning database version must be a positive integer, "
                                        f"got {json.dumps(version)}", 1, 1)
    if version > VERSION:
        raise TuningDatabaseError(path, f"tuning database version {version} is newer than this tilemlir "
                                        f"reads ({VERSION}); upgrade tilemlir or give another database", 1, 1)
    records = document.get("entries")
    if not isinstance(records, list):
        raise TuningDatabaseError(path, 'tuning database has no "entries" list', 1, 1)
    entries: dict[TuningKey, TuningEntry] = {}
    for index, record in enumerate(records):
        try:
            entry = entry_from_json(record)
        except Malformed as error:
            line = _entry_line(text, record)
            raise TuningDatabaseError(path, f"tuning database entry {index + 1}: {error}",
                                      line, 1 if line else 0) from None
        entries[entry.key] = entry
    return TuningDatabase(path, entries)


def load_database(path: str | Path, missing_ok: bool = False) -> TuningDatabase:
    """The database at `path`; an empty one when it does not exist and
    `missing_ok`, else a TuningDatabaseError, as for any unreadable file."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        if missing_ok:
            return TuningDatabase(str(path))
        raise TuningDatabaseError(path, "tuning database does not exist") from None
    except OSError as error:
        raise TuningDatabaseError(path, f"cannot read the tuning database: {error.strerror or error}") from None
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
        handle = open(lock, "a")  # noqa: SIM115 - held for the block
    except OSError as error:
        raise TuningDatabaseError(path, f"cannot lock the tuning database ({lock}): "
                                        f"{error.strerror or error}") from None
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def record_entry(path: str | Path, entry: TuningEntry) -> TuningDatabase:
    """Adds (or replaces) `entry` in the database at `path`, creating it and
    its folder when missing: under the lock, re-read, then written atomically."""
    path = Path(path)
    with _locked(path):
        database = load_database(path, missing_ok=True).with_entry(entry)
        _write_atomically(path, database.text())
    return database


def _write_atomically(path: Path, text: str) -> None:
    """A temporary file beside `path`, renamed over it: readers see the old
    file or the new one, never a part (an existing file keeps its mode)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644  # a cache file: readable by all, written by its owner
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as error:
        raise TuningDatabaseError(path, f"cannot write the tuning database: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise TuningDatabaseError(path, f"cannot write the tuning database: {error.strerror or error}") from None


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
