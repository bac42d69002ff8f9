"""Reading a target descriptor (TOML) into a validated, frozen `Target`.

The file mirrors the dataclasses of `model.py` one to one: top-level keys are the
fields of `Target`, `[compute]`, `[registers]`, `[memory]`, `[matrix]` are its
nested dataclasses, `[sources]` and `[peak_dense_tflops]` are small tables, and
`matrix.instructions` is an array of inline tables, one per instruction, in the
order selection should prefer them. A fact nobody has published is written
`"unknown"`, never left out and never guessed; a thing the chip does not have
is written `"none"` where the field allows it. A family's own facts are a
table named after the family (`[amdgpu]`), read as its manifest's
`target_facts`; a row's own keys (`intrinsic`, `builtin`) are the family's
`mma_row_keys`, and no other row key is read.

Every problem is a `DescriptorError` (a `UserError`, so tools print `error: ...`
and exit 1) naming the file, the field and what was expected:

    gfx9xx.toml: field 'compute.wave_size': expected a positive integer or "unknown",
    got the string 'sixty-four'

A descriptor may build on another one and say only what differs:

    base = "amdgpu:gfx942"          # a packaged target, by name
    # base = "gfx942_fast.toml"     # or (a --target-desc file only) a file, relative to this one
    name = "gfx942-lite"            # may be left out: every field not given is the base's
    [compute]
    clock_mhz = 1900                # replaces the base's compute.clock_mhz, keeps the rest of [compute]

`name` is what people and `--target family:name` call the target; `processor`
is what the toolchain is told (llc's -mcpu, ROCDL's chipset, NVPTX's sm_NN,
mxcc's --offload-arch). Left out, the processor is the base's (a chip variant
named `gfx942-lite` still compiles for gfx942), or for a file without a base
its name. The family checks the processor (`Backend.check_target`): amdgpu
and nvidia against the processors LLVM 22 knows, metax against the MetaX
architectures mxcc is known to take; its problems are located at the line
that wrote the field (`FILE:LINE:COL: field 'processor': ...`).

The file is laid over its base key by key: a table (`[compute]`, `[sources]`,
`[peak_dense_tflops]`, ...) merges with the base's table, a key at a time; any
other value replaces the base's, and an **array replaces the base's array
entirely** -- `matrix.instructions` given in the derived file is the whole
instruction table, never appended to the base's rows (so no row can be
inherited by accident, and the order stays the one written). The result is
then checked as a whole, like any descriptor. Facts keep their sources: the
base's `[sources]` keys stay defined for the facts it gave, and
`Target.file_of(field)` names the file that wrote a fact (an `unknown` one is
reported there). A base is a whole, valid target of the same family; a base
chain that comes back to a file, or a base no registry or file has, is an
error naming the file that asked for it.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import operator
import os
import re
import threading
import tomllib
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tilemlir.files import UnreadableFile, read_regular_file
from tilemlir.targets.model import (
    FP8_KIND,
    NONE,
    NONE_SPELLING,
    PEAK_KEYS,
    SEGMENTS,
    UNKNOWN,
    UNKNOWN_SPELLING,
    Backend,
    MmaInstr,
    NotPresent,
    Target,
    TargetError,
    Unknown,
    is_stated,
    is_unknown,
)
from tilemlir.targets.toml_writer import descriptor_data

# A dataclass's field types, resolved once: every table of every descriptor
# asks (some 200 times a target; resolving them anew was a fifth of a load).
_type_hints = functools.cache(typing.get_type_hints)

SCHEMA_VERSION = 1
# A target name reaches command lines, pass pipelines and file names, and a
# processor command lines and pass pipelines: a token.
TARGET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# Matrix instruction names, intrinsics and built-ins reach emitted code.
ROW_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
# The packaged descriptors are under 16 KiB; a larger file is not a descriptor.
MAX_DESCRIPTOR_BYTES = 1 << 20


class DescriptorError(TargetError):
    """A descriptor file that cannot be read or does not validate."""


class DescriptorCycleError(DescriptorError):
    """Descriptors whose `base` chain comes back to one of them."""


def _describe_value(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return repr(value)


# Fields that left the neutral tables for a family's own (`Backend.target_facts`).
MOVED = {"registers.acc_offset_granule": "amdgpu.acc_offset_granule",
         "memory.buffer_load_lds": "amdgpu.buffer_load_lds"}


def _public_field_names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls) if not f.metadata.get("internal")}


def _split_unknown(hint: Any) -> tuple[Any, bool]:
    """(`T`, True) for `T | Unknown` (and `T | Unknown | NotPresent`), (`T`, False) for `T`."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not Unknown and a is not NotPresent]
        allows_unknown = len(args) < len(typing.get_args(hint))
        return functools.reduce(operator.or_, args), allows_unknown
    return hint, False


def _expectation(hint: Any) -> str:
    base, allows_unknown = _split_unknown(hint)
    origin = typing.get_origin(base)
    if base is int:
        text = "a positive integer"
    elif base is float:
        text = "a positive number"
    elif base is str:
        text = "a non-empty string"
    elif dataclasses.is_dataclass(base):
        text = "a table"
    elif origin is tuple:
        item = typing.get_args(base)[0]
        if dataclasses.is_dataclass(item):
            text = "a list of tables"
        elif typing.get_origin(item) is tuple:
            text = "a table"
        elif item is int:
            text = "a list of positive integers"
        else:
            text = "a list of strings"
    else:  # pragma: no cover - a field type the reader does not know
        text = str(base)
    if allows_unknown and NotPresent in typing.get_args(hint):
        return f'{text}, "{NONE_SPELLING}" or "{UNKNOWN_SPELLING}"'
    return f'{text} or "{UNKNOWN_SPELLING}"' if allows_unknown else text


class _Reader:
    """Walks the parsed TOML along the dataclass fields, remembering where it is."""

    def __init__(self, file: str, text: str = ""):
        self.file = file
        self.text = text  # the file's own text, to locate a field it writes
        self.row = ""  # the instruction row being read, for messages
        # Where the target's processor came from: its own field, the name
        # (left out, no base) or the base's.
        self.processor_from = "processor"
        # The family's own keys of a matrix-instruction row (Backend.mma_row_keys),
        # known once the file's family is.
        self.row_keys: tuple[str, ...] = ()

    def fail(self, where: str, message: str) -> DescriptorError:
        row = (
            f" (row '{self.row}')" if self.row and where.startswith("matrix.instructions[") else ""
        )
        subject = f"field '{where}'{row}: " if where else ""
        return DescriptorError(f"{self.file}: {subject}{message}")

    def fail_located(self, where: str, message: str) -> DescriptorError:
        """`fail`, at `FILE:LINE:COL` when this file writes `where` (a
        top-level key or `table.key`) on a line of its own."""
        position = _key_position(self.text, where)
        if position is None:
            return self.fail(where, message)
        return DescriptorError(f"{self.file}:{position[0]}:{position[1]}: field '{where}': {message}")

    def table(self, cls: type, raw: Any, where: str) -> Any:
        if not isinstance(raw, dict):
            raise self.fail(where, f"expected a table, got {_describe_value(raw)}")
        hints = _type_hints(cls)
        fields = [f for f in dataclasses.fields(cls)
                  if not f.metadata.get("internal") and not f.metadata.get("row_keys")]
        row_keys = self.row_keys if cls is MmaInstr else ()
        known = [f.name for f in fields] + list(row_keys)
        for key in raw:
            if key not in known:
                near = difflib.get_close_matches(key, known, n=1)
                hint = f"; did you mean '{_join(where, near[0])}'?" if near else ""
                moved = MOVED.get(_join(where, key))
                if moved:
                    hint = f"; it moved to '{moved}' (the family's own table)"
                raise DescriptorError(
                    f"{self.file}: unknown field '{_join(where, key)}'{hint} "
                    f"(expected one of: {', '.join(known)})"
                )
        values = {}
        for f in fields:
            path = _join(where, f.name)
            if f.name not in raw:
                if f.default is not dataclasses.MISSING:
                    continue
                doc = f.metadata.get("doc", "")
                raise self.fail(
                    "", f"missing field '{path}' ({doc}): expected {_expectation(hints[f.name])}"
                )
            values[f.name] = self.value(f, hints[f.name], raw[f.name], path)
        if row_keys:
            key_field = next(f for f in dataclasses.fields(cls) if f.name == "keys")
            values["keys"] = tuple((key, self.value(key_field, str | Unknown, raw[key], _join(where, key)))
                                   for key in row_keys if key in raw)
        return cls(**values)

    def value(self, f: dataclasses.Field, hint: Any, raw: Any, where: str) -> Any:
        base, allows_unknown = _split_unknown(hint)
        if allows_unknown and raw == UNKNOWN_SPELLING:
            return UNKNOWN
        if raw == NONE_SPELLING:
            if not f.metadata.get("none"):
                raise self.fail(where, f'expected {_expectation(hint)}, got "{NONE_SPELLING}" '
                                       "(only a field that a chip may lack takes it)")
            return NONE
        mapping = f.metadata.get("mapping")
        if mapping:
            return self.mapping(raw, where, mapping)
        if dataclasses.is_dataclass(base):
            return self.table(base, raw, where)
        if typing.get_origin(base) is tuple:
            return self.sequence(typing.get_args(base)[0], raw, where, hint)
        return self.scalar(base, raw, where, hint)

    def scalar(self, base: type, raw: Any, where: str, hint: Any) -> Any:
        expected = _expectation(hint)
        if base is str:
            if not isinstance(raw, str) or not raw:
                raise self.fail(where, f"expected {expected}, got {_describe_value(raw)}")
            _require_one_line(self, where, raw)
            return raw
        numeric = (int,) if base is int else (int, float)
        if isinstance(raw, bool) or not isinstance(raw, numeric):
            raise self.fail(where, f"expected {expected}, got {_describe_value(raw)}")
        # TOML spells nan and +-inf; a fact is a finite number (nan passes `<= 0`).
        if isinstance(raw, float) and not math.isfinite(raw):
            raise self.fail(where, f"expected {expected}, got {raw} (not a finite number)")
        if raw <= 0:
            why = "sizes and counts cannot be negative" if raw < 0 else "zero is not a size"
            raise self.fail(where, f"expected {expected}, got {raw} ({why})")
        return raw

    def sequence(self, item: Any, raw: Any, where: str, hint: Any) -> tuple:
        if not isinstance(raw, list):
            raise self.fail(where, f"expected {_expectation(hint)}, got {_describe_value(raw)}")
        if dataclasses.is_dataclass(item):
            rows = []
            for index, entry in enumerate(raw):
                self.row = entry.get("name", "") if isinstance(entry, dict) else ""
                if not isinstance(self.row, str):
                    self.row = ""
                rows.append(self.table(item, entry, f"{where}[{index}]"))
            self.row = ""
            return tuple(rows)
        if item is int:
            return tuple(self.scalar(int, entry, f"{where}[{index}]", int) for index, entry in enumerate(raw))
        for index, entry in enumerate(raw):
            if not isinstance(entry, str) or not entry:
                raise self.fail(
                    f"{where}[{index}]",
                    f"expected a non-empty string, got {_describe_value(entry)}",
                )
            _require_one_line(self, f"{where}[{index}]", entry)
        return tuple(raw)

    def mapping(self, raw: Any, where: str, kind: str) -> tuple:
        if not isinstance(raw, dict):
            raise self.fail(where, f"expected a table, got {_describe_value(raw)}")
        pairs = []
        for key, value in raw.items():
            path = _join(where, key)
            if kind == "str":
                pairs.append((key, self.scalar(str, value, path, str)))
            elif value == UNKNOWN_SPELLING:
                pairs.append((key, UNKNOWN))
            else:
                pairs.append((key, self.scalar(float, value, path, float | Unknown)))
        return tuple(pairs)


def _require_one_line(reader: _Reader, where: str, text: str) -> None:
    """Descriptor strings are printed into comments and reports: one line,
    no control characters."""
    bad = next((c for c in text if not c.isprintable()), None)
    if bad is not None:
        raise reader.fail(where, f"expected a single-line string, got one containing {bad!r}")


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _processor_field(reader: _Reader) -> str:
    """The field a problem of the processor is reported at: `name` when
    the file gave no processor and no base, so that its name is the processor."""
    return "name" if reader.processor_from == "name" else "processor"


_TABLE_HEADER = re.compile(r"\s*\[\s*([A-Za-z0-9_.-]+)\s*\]\s*(#.*)?")


def _key_position(text: str, where: str) -> tuple[int, int] | None:
    """(line, column) of the line that assigns `where` (`key`, or
    `table.key` under a `[table]` header) in descriptor text laid out one key
    a line, as descriptors are; None when no such line is found."""
    table, _, key = where.rpartition(".")
    assignment = re.compile(rf"(\s*)({re.escape(key)}|\"{re.escape(key)}\")\s*=")
    current = ""
    for number, line in enumerate(text.splitlines(), 1):
        header = _TABLE_HEADER.fullmatch(line)
        if header:
            current = header[1]
            continue
        found = assignment.match(line)
        if found and current == table:
            return number, len(found[1]) + 1
    return None


# --------------------------------------------------------------------------
# Checks across fields (the schema alone cannot express these)
# --------------------------------------------------------------------------


def _check(target: Target, backend: Backend, reader: _Reader, expected_name: str | None) -> None:
    fail = reader.fail
    if target.schema != SCHEMA_VERSION:
        raise fail("schema", f"expected {SCHEMA_VERSION}, got {target.schema}")
    if expected_name is not None and target.name != expected_name:
        raise fail("name", f"expected '{expected_name}' (the file's name), got '{target.name}'")
    if ":" in target.name or ":" in target.family:
        raise fail("name", "a target or family name cannot contain ':'")
    if not TARGET_NAME.fullmatch(target.name):
        raise fail("name", f"expected a target name ({TARGET_NAME.pattern}), got {target.name!r}")
    if not TARGET_NAME.fullmatch(target.processor):
        raise reader.fail_located(_processor_field(reader), f"expected a processor name ({TARGET_NAME.pattern}), "
                                                            f"got {target.processor!r}")
    if not is_unknown(target.segment) and target.segment not in SEGMENTS:
        raise fail("segment", f"expected one of {', '.join(SEGMENTS)} (or \"{UNKNOWN_SPELLING}\"), "
                              f"got {target.segment!r}")
    if target.describes not in target.products:
        raise fail(
            "describes", f"'{target.describes}' is not one of products {list(target.products)}"
        )
    for key, _ in target.peak_dense_tflops:
        if key not in PEAK_KEYS:
            raise fail(
                f"peak_dense_tflops.{key}",
                f"unknown dtype class; expected one of {', '.join(PEAK_KEYS)}",
            )

    grid = target.compute.max_grid
    if not is_unknown(grid) and len(grid) != 3:
        raise fail("compute.max_grid", f"expected 3 extents (x, y, z), got {len(grid)}")

    regs = target.registers
    register_counts = (regs.vgprs_per_lane, regs.arch_vgprs_max, regs.acc_vgprs_max)
    if (
        all(is_stated(v) for v in register_counts)
        and regs.arch_vgprs_max + regs.acc_vgprs_max > regs.vgprs_per_lane
    ):
        raise fail(
            "registers.acc_vgprs_max",
            f"arch_vgprs_max + acc_vgprs_max = {regs.arch_vgprs_max + regs.acc_vgprs_max} "
            f"exceeds vgprs_per_lane = {regs.vgprs_per_lane}",
        )
    mem = target.memory
    if (
        not is_unknown(mem.shared_bytes_per_workgroup)
        and not is_unknown(mem.shared_bytes_per_cu)
        and mem.shared_bytes_per_workgroup > mem.shared_bytes_per_cu
    ):
        raise fail(
            "memory.shared_bytes_per_workgroup",
            f"{mem.shared_bytes_per_workgroup} exceeds "
            f"shared_bytes_per_cu = {mem.shared_bytes_per_cu}",
        )

    family = backend.family
    formats = target.matrix.fp8_formats
    if not is_unknown(formats):
        for index, fmt in enumerate(formats):
            if fmt not in FP8_KIND or fmt not in backend.mma_operand_types:
                allowed = sorted(t for t in backend.mma_operand_types if t in FP8_KIND)
                raise fail(
                    f"matrix.fp8_formats[{index}]",
                    f"{family} cannot take '{fmt}' (its fp8 types: {', '.join(allowed) or 'none'})",
                )
    seen: set[tuple[str, str, str, str]] = set()
    wave = target.compute.wave_size
    for index, row in enumerate(target.mma):
        reader.row = row.name
        where = f"matrix.instructions[{index}]"
        _check_row(row, where, target, backend, reader)
        key = (row.name, *row.types)
        if key in seen:
            raise fail(where, f"appears twice with types {row.a} x {row.b} -> {row.c}")
        seen.add(key)
        if not is_unknown(wave) and (row.m * row.n * row.blocks) % wave:
            raise fail(
                where,
                f"m*n*blocks = {row.m * row.n * row.blocks} "
                f"does not spread over a wave of {wave} lanes",
            )
    reader.row = ""
    if backend.check_target is not None:
        problem = backend.check_target(target)
        if problem is not None:
            where, message = problem
            if where == "processor":  # at the line that wrote it: one edit away from a fix
                raise reader.fail_located(_processor_field(reader), message)
            raise fail(where, message)
    # Last, on a chip the family knows: rows its lowering could not emit.
    if backend.check_mma_row is not None:
        for index, row in enumerate(target.mma):
            problem = backend.check_mma_row(row, target)
            if problem is not None:
                reader.row = row.name
                raise fail(f"matrix.instructions[{index}]", problem)


def _check_row(
    row: MmaInstr, where: str, target: Target, backend: Backend, reader: _Reader
) -> None:
    fail = reader.fail
    family = backend.family
    for operand in ("a", "b"):
        element = getattr(row, operand)
        if element not in backend.mma_operand_types:
            raise fail(
                f"{where}.{operand}",
                f"{family} matrix instructions cannot take '{element}' "
                f"(operand types: {', '.join(sorted(backend.mma_operand_types))})",
            )
        if element in FP8_KIND:
            formats = target.matrix.fp8_formats
            if is_unknown(formats):
                raise fail(
                    f"{where}.{operand}",
                    f"'{element}' is an fp8 type but matrix.fp8_formats is unknown; "
                    "list no fp8 rows while the chip's fp8 support is unknown",
                )
            if element not in formats:
                raise fail(
                    f"{where}.{operand}",
                    f"'{element}' is not one of this target's fp8 formats "
                    f"(matrix.fp8_formats = [{', '.join(formats)}])",
                )
    if row.c not in backend.mma_accumulator_types:
        raise fail(
            f"{where}.c",
            f"{family} matrix instructions cannot accumulate in '{row.c}' "
            f"(accumulator types: {', '.join(sorted(backend.mma_accumulator_types))})",
        )
    for key, value in (("name", row.name), *row.keys):
        if isinstance(value, str) and value and not ROW_SYMBOL.fullmatch(value):
            raise fail(f"{where}.{key}", f"expected a symbol ({ROW_SYMBOL.pattern}), got {value!r}")
    for key in backend.mma_row_keys:
        if row.key(key) == "":
            raise fail(
                "",
                f"missing field '{where}.{key}' ({family} rows need it): "
                "expected a non-empty string",
            )


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------


def _read_regular_file(path: Path, file: str) -> bytes:
    """The bytes of a regular file of at most MAX_DESCRIPTOR_BYTES (a FIFO
    would block, a device such as /dev/zero would never end: `files`)."""
    try:
        return read_regular_file(path, MAX_DESCRIPTOR_BYTES)
    except UnreadableFile as error:
        raise DescriptorError(f"cannot read target descriptor '{file}': {error.reason}") from None


# Files being loaded by this thread, outermost first: a base chain that comes
# back to one of them is a cycle.
_loading = threading.local()


def load_descriptor(
    path: str | Path,
    backend_for: Callable[[str], Backend],
    *,
    expected_family: str | None = None,
    expected_name: str | None = None,
    packaged_target: Callable[[str], Target] | None = None,
) -> Target:
    """Reads and validates one descriptor. `backend_for(family)` supplies the
    family's manifest (its type rules); `expected_*` pin the family and name of
    a backend's packaged targets to the directory and file they live in (and
    allow a `base` only by name). `packaged_target("family:name")` looks up a
    `base` given by name; without it only file bases can be read."""
    path = Path(path)
    file = str(path)
    key = os.path.realpath(file)
    if not hasattr(_loading, "files"):
        _loading.files = []
    loading: list[tuple[str, str]] = _loading.files
    if any(seen == key for seen, _ in loading):
        chain = " -> ".join(shown for _, shown in loading) + f" -> {file}"
        raise DescriptorCycleError(
            f"{loading[0][1]}: field 'base': its bases come back to {file} ({chain})")
    loading.append((key, file))
    try:
        return _load(path, file, backend_for, expected_family, expected_name, packaged_target)
    finally:
        loading.pop()


def _load(
    path: Path,
    file: str,
    backend_for: Callable[[str], Backend],
    expected_family: str | None,
    expected_name: str | None,
    packaged_target: Callable[[str], Target] | None,
) -> Target:
    try:
        text = _read_regular_file(path, file).decode("utf-8")
    except UnicodeDecodeError as error:
        raise DescriptorError(
            f"{file}: not UTF-8 text ({error.reason} at byte {error.start})"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise DescriptorError(f"{file}: not valid TOML: {error}") from None

    reader = _Reader(file, text)
    writes_processor = "processor" in data
    base: Target | None = None
    if "base" in data:
        base = _read_base(data.pop("base"), path, reader, expected_family is not None,
                          backend_for, packaged_target)
        if "family" in data and data["family"] != base.family:
            raise reader.fail("family", f"'{data['family']}' is not the family of its base "
                                        f"{base} ('{base.family}'); a base is a target of the same family")
        data = _merged(descriptor_data(base), data)
    family = data.get("family")
    if family is None:
        raise reader.fail(
            "", "missing field 'family' (backend family, e.g. amdgpu): expected a non-empty string"
        )
    if not isinstance(family, str) or not family:
        raise reader.fail("family", f"expected a non-empty string, got {_describe_value(family)}")
    if expected_family is not None and family != expected_family:
        raise reader.fail(
            "family", f"expected '{expected_family}' (the backend it ships with), got '{family}'"
        )
    try:
        backend = backend_for(family)
    except TargetError as error:
        raise reader.fail("family", str(error)) from None
    reader.row_keys = backend.mma_row_keys
    if backend.target_facts is not None and family in _public_field_names(Target):
        raise reader.fail("family", f"the {family} family declares facts of its own, whose table would be "
                                    f"named like the neutral '{family}'; a family needs another name")
    own = data.pop(family, None) if family not in _public_field_names(Target) else None
    target = reader.table(Target, data, "")
    if backend.target_facts is not None:
        target = dataclasses.replace(target, family_facts=reader.table(
            backend.target_facts, {} if own is None else own, family))
    elif own is not None:
        raise reader.fail(family, f"the {family} family has no facts of its own "
                                  "(its Backend declares no target_facts)")
    if not target.processor:  # left out, and no base to take it from
        target = dataclasses.replace(target, processor=target.name)
    reader.processor_from = "processor" if writes_processor else "name" if base is None else "base"
    _check(target, backend, reader, expected_name)
    if base is None:
        return dataclasses.replace(target, path=file)
    return dataclasses.replace(
        target,
        path=file,
        bases=(base.qualified_name if base.packaged else base.path, *base.bases),
        fact_files=_inherited_files(base, tomllib.loads(text)),
    )


def _read_base(
    spec: Any,
    path: Path,
    reader: _Reader,
    packaged: bool,
    backend_for: Callable[[str], Backend],
    packaged_target: Callable[[str], Target] | None,
) -> Target:
    """The target a descriptor's `base` names: `family:name`, or for a file
    of the user's a path relative to that file."""
    expected = "a target name (family:name, e.g. \"amdgpu:gfx942\") or a path to a .toml file"
    if not isinstance(spec, str) or not spec.strip():
        raise reader.fail("base", f"expected {expected}, got {_describe_value(spec)}")
    _require_one_line(reader, "base", spec)
    if spec.endswith(".toml") or "/" in spec or "\\" in spec:
        if packaged:
            raise reader.fail("base", f"a packaged target names its base as family:name, not a file ('{spec}')")
        base_path = path.parent / spec
        try:
            return load_descriptor(base_path, backend_for, packaged_target=packaged_target)
        except DescriptorCycleError:
            raise
        except DescriptorError as error:
            raise reader.fail("base", f"its base '{spec}' cannot be used: {error}") from None
    family, colon, name = spec.partition(":")
    if not colon or not family or not TARGET_NAME.fullmatch(name):
        raise reader.fail("base", f"expected {expected}, got {spec!r}")
    if packaged_target is None:  # a caller reading files without the registry
        raise reader.fail("base", f"'{spec}' names a packaged target, and no registry was given "
                                  "to look it up in")
    try:
        return packaged_target(spec)
    except DescriptorCycleError:
        raise
    except DescriptorError as error:
        raise reader.fail("base", f"its base '{spec}' cannot be used: {error}") from None
    except TargetError as error:
        raise reader.fail("base", str(error)) from None


def _merged(base: dict, override: dict) -> dict:
    """`override` laid over `base`: tables merge key by key, every other value
    (arrays included) replaces the base's."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _inherited_files(base: Target, written: dict) -> tuple[tuple[str, str], ...]:
    """(field path, file) for every fact of `base` the derived file (whose own
    data is `written`) leaves as it is."""
    out: list[tuple[str, str]] = []

    def walk(data: dict, mine: dict | None, prefix: str) -> None:
        for key, value in data.items():
            where = _join(prefix, key)
            overridden = mine is not None and key in mine
            if isinstance(value, dict) and (not overridden or isinstance(mine[key], dict)):
                walk(value, mine.get(key) if overridden else None, where)
            elif not overridden:
                out.append((where, base.file_of(where)))

    walk(descriptor_data(base), {k: v for k, v in written.items() if k != "base"}, "")
    return tuple(out)
