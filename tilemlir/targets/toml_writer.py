"""A `Target` written back as a descriptor file: the inverse of `descriptor.py`.

    text = descriptor_toml(get_target("amdgpu:gfx942"))
    load_descriptor(path_holding(text), backend) == get_target("amdgpu:gfx942")

`tile-opt --describe-target=T --format toml` prints this. The file is the
*resolved* target: a descriptor built on a `base` comes out whole, with every
field its bases gave it. What tomllib does not keep is lost: the comments (the
per-fact citations); `[sources]` still says what each citation key stands for.

`descriptor_data` is the same as plain TOML data (dicts, lists, strings,
numbers; unknown facts as "unknown"); descriptor.py merges a derived file onto
it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tilemlir.targets.model import (
    NONE_SPELLING,
    UNKNOWN_SPELLING,
    MmaInstr,
    Target,
    is_none,
    is_unknown,
)

# TOML's bare keys (toml.io, "Keys"); anything else is written quoted.
_BARE_KEY_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _fields(cls: type) -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(cls) if not f.metadata.get("internal")]


def _plain(value: Any, f: dataclasses.Field | None = None) -> Any:
    """`value` as TOML data: unknown -> "unknown", tuples -> lists, the
    `mapping` fields (pairs) -> tables, dataclasses -> tables."""
    if is_unknown(value):
        return UNKNOWN_SPELLING
    if is_none(value):
        return NONE_SPELLING
    if f is not None and f.metadata.get("mapping"):
        return {key: _plain(item) for key, item in value}
    if isinstance(value, MmaInstr):
        return _row_data(value)
    if dataclasses.is_dataclass(value):
        return {g.name: _plain(getattr(value, g.name), g) for g in _fields(type(value))}
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def _row_data(row: MmaInstr) -> dict:
    """A matrix-instruction row in the order the packaged files write it: the
    name, the per-row keys a family needs, then shape, types and cycles. Row
    keys left empty are left out (the file leaves them out)."""
    data: dict[str, Any] = {"name": row.name, **{key: _plain(value) for key, value in row.keys}}
    for f in _fields(MmaInstr):
        if f.name not in ("name", "keys"):
            data[f.name] = _plain(getattr(row, f.name))
    return data


def descriptor_data(target: Target) -> dict:
    """The target as the TOML data of a descriptor file that loads back to it
    (the processor written out, next to the name)."""
    data = {f.name: _plain(getattr(target, f.name), f) for f in _fields(Target)}
    if target.family_facts is not None:
        data[target.family] = _plain(target.family_facts)
    ordered = {}
    for key, value in data.items():
        if key != "processor":
            ordered[key] = value
        if key == "name":
            ordered["processor"] = data["processor"]
    return ordered


# --------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------


def _key(key: str) -> str:
    return key if key and set(key) <= _BARE_KEY_CHARACTERS else _string(key)


def _string(text: str) -> str:
    """A TOML basic string: quote and backslash escaped, every character that
    is not printable written as \\uXXXX (TOML forbids raw control characters)."""
    out = []
    for character in text:
        if character in '"\\':
            out.append("\\" + character)
        elif character.isprintable():
            out.append(character)
        else:
            out.append(f"\\u{ord(character):04X}" if ord(character) <= 0xFFFF
                       else f"\\U{ord(character):08X}")
    return '"' + "".join(out) + '"'


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)  # shortest text that reads back to the same float
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML spelling for {value!r}")  # pragma: no cover - data is plain


def _assignment(key: str, value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        # An array of rows: one inline table per line, as the packaged files have it.
        rows = "".join(f"  {_value(item)},\n" for item in value)
        return f"{_key(key)} = [\n{rows}]"
    return f"{_key(key)} = {_value(value)}"


def descriptor_toml(target: Target) -> str:
    """The descriptor file of `target` (see the module docstring)."""
    data = descriptor_data(target)
    lines = [
        f"# {target}: the resolved target descriptor (tile-opt --describe-target --format toml).",
        "# Comments of the file it was read from are not kept; [sources] names each citation key.",
    ]
    if target.bases:
        lines.append(f"# Built on {', itself built on '.join(target.bases)}; every field is written out here.")
    lines.append("")
    tables = {key: value for key, value in data.items() if isinstance(value, dict)}
    lines.extend(_assignment(key, value) for key, value in data.items() if key not in tables)
    for key, table in tables.items():
        lines.append("")
        lines.append(f"[{_key(key)}]")
        lines.extend(_assignment(k, v) for k, v in table.items())
    return "\n".join(lines) + "\n"
