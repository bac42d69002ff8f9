"""What every tile pass shares: options as frozen dataclass fields, the bridge
into MLIR's PassManager, and error handling at the pass boundary.

A pass is a frozen dataclass subclassing `TilePass`:

    @dataclass(frozen=True)
    class TileVerify(TilePass):
        name: ClassVar[str] = "tile-verify"
        summary: ClassVar[str] = "..."
        allow_narrow_accumulator: bool = False      # option allow-narrow-accumulator

        def run(self, module: ir.Operation, state: PassState) -> None:
            state.error(op, "...")                  # located diagnostic; the pass fails

Options are written the MLIR way, `tile-verify{allow-narrow-accumulator=true}`;
tuples of ints as `block=128,128,32`.
"""

from __future__ import annotations

import dataclasses
import difflib
import shlex
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.diagnostics import UserError
from tilemlir.irutil import walk


class PassOptionError(UserError):
    pass


class PassState:
    """Per-run state handed to `TilePass.run`: collects located errors."""

    def __init__(self, pass_name: str):
        self.pass_name = pass_name
        self.failed = False

    def error(self, where: ir.Operation | ir.OpView | ir.Location, message: str) -> None:
        location = where if isinstance(where, ir.Location) else where.location
        location.emit_error(message)
        self.failed = True

    def remark(self, where: ir.Operation | ir.OpView | ir.Location, message: str, *, kind: str,
               fact: tuple[str, str] | None = None) -> None:
        """A decision worth telling the user, made by this pass; `kind` is one
        of `diagnostics.REMARK_KINDS` (what costs speed or precision is printed
        by default; `diagnostics.emit_remark`), `fact` an assumed fact's
        (target, field)."""
        from tilemlir.diagnostics import emit_remark

        emit_remark(where if isinstance(where, ir.Location) else where.location, message,
                    origin=self.pass_name, kind=kind, fact=fact)


def option_name(field_name: str) -> str:
    return field_name.replace("_", "-")


# A switch the compiler may also decide itself: "auto" (its rule, documented
# with the option), "true" or "false".
Switch = typing.Literal["auto", "true", "false"]


def resolve_switch(value: str | bool, automatic: bool) -> bool:
    """A Switch option's value (or a plain bool), `automatic` standing for "auto"."""
    if isinstance(value, bool):
        return value
    return automatic if value == "auto" else value == "true"


def _convert(text: str, annotation: type, pass_name: str, key: str):
    """The option value `text` as the field's type (bool, int, tuple[int, ...] or str)."""
    def bad(expected: str) -> PassOptionError:
        return PassOptionError(f"{pass_name}: option '{key}' expects {expected}, got '{text}'")

    if annotation is bool:
        lowered = text.lower()
        if lowered in ("true", "1", "on"):
            return True
        if lowered in ("false", "0", "off"):
            return False
        raise bad("true or false")
    if annotation is int:
        try:
            return int(text, 0)
        except ValueError:
            raise bad("an integer") from None
    if typing.get_origin(annotation) is typing.Literal:
        choices = typing.get_args(annotation)
        lowered = {"1": "true", "on": "true", "0": "false", "off": "false"}.get(text.lower(), text.lower())
        if lowered in choices:
            return lowered
        raise bad(", ".join(choices[:-1]) + " or " + choices[-1])
    if typing.get_origin(annotation) is tuple:
        try:
            return tuple(int(part, 0) for part in text.split(",") if part.strip())
        except ValueError:
            raise bad("a comma-separated list of integers") from None
    return text


@dataclass(frozen=True)
class TilePass(ABC):
    """Base of the Python passes; subclasses are frozen dataclasses whose fields are options."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    # A pass that adds ops beside the module's functions (gpu.module, launches)
    # runs on the module itself, not nested in one of its ops.
    on_module: ClassVar[bool] = False

    @abstractmethod
    def run(self, module: ir.Operation, state: PassState) -> None:
        """Transforms or checks `module`; errors go through `state.error`."""

    # -- options -----------------------------------------------------------

    @classmethod
    def options(cls) -> list[dataclasses.Field]:
        return list(dataclasses.fields(cls))

    @classmethod
    def from_option_text(cls, text: str | None) -> TilePass:
        """Parses `key=value key2=v1,v2` (the inside of `name{...}`)."""
        if not text or not text.strip():
            return cls()
        hints = typing.get_type_hints(cls)
        by_option = {option_name(f.name): f for f in cls.options()}
        values = {}
        try:
            words = shlex.split(text)
        except ValueError as error:
            raise PassOptionError(f"{cls.name}: malformed options '{text}': {error}") from None
        for word in words:
            key, eq, value = word.partition("=")
            if key not in by_option:
                known = ", ".join(sorted(by_option)) or "none"
                hint = difflib.get_close_matches(key, list(by_option), n=1)
                maybe = f"; did you mean '{hint[0]}'?" if hint else ""
                raise PassOptionError(
                    f"{cls.name}: unknown option '{key}'{maybe} (options: {known})"
                )
            field = by_option[key]
            annotation = hints[field.name]
            if not eq:
                if annotation not in (bool, Switch):
                    raise PassOptionError(f"{cls.name}: option '{key}' needs a value ({key}=...)")
                value = "true"
            values[field.name] = _convert(value, annotation, cls.name, key)
        return cls(**values)

    def option_text(self) -> str:
        parts = []
        for f in self.options():
            value = getattr(self, f.name)
            if value == f.default:
                continue
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, tuple):
                text = ",".join(str(v) for v in value)
            else:
                text = str(value)
                # Quoted the way from_option_text splits (shlex), so the text parses back.
                if not text or any(c.isspace() or c in "'\"" for c in text):
                    text = shlex.quote(text)
            parts.append(f"{option_name(f.name)}={text}")
        return " ".join(parts)

    def __str__(self) -> str:
        options = self.option_text()
        return f"{self.name}{{{options}}}" if options else self.name

    # -- the bridge into MLIR ----------------------------------------------

    def as_mlir_callable(self, anchor: str | None = None) -> Callable:
        """A callable for `PassManager.add`. With `anchor` (e.g. "func.func"),
        the pass runs on every nested op of that name, as it would inside an
        anchored sub-pipeline."""
        tile_pass = self

        def run(op: ir.Operation, external_pass) -> None:
            state = PassState(tile_pass.name)
            try:
                if anchor is None:
                    targets = [op]
                else:
                    targets = [inner for inner in walk(op) if inner.name == anchor]
                for target in targets:
                    if tile_pass.on_module and target.name != "builtin.module":
                        state.error(target, f"{tile_pass.name} runs on a module (builtin.module("
                                            f"{tile_pass.name})), not nested in {target.name}")
                        break
                    # A default location for builders the pass does not locate itself.
                    with target.location:
                        tile_pass.run(target, state)
            except UserError as error:
                state.error(op, f"{tile_pass.name}: {error}")
            except RecursionError:
                state.error(op, f"{tile_pass.name}: the IR is nested too deeply for this pass")
            except Exception as error:  # noqa: BLE001 - never let a traceback escape a pass
                state.error(
                    op, f"internal error in pass {tile_pass.name}: {type(error).__name__}: {error}"
                )
            if state.failed:
                external_pass.signal_pass_failure()

        run.__name__ = self.name.replace("-", "_")
        return run
