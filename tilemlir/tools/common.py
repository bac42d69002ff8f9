"""What every tilemlir command shares: no Python traceback ever reaches the user."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path


def guarded_main(prog: str, run: Callable[[list[str]], int], argv: list[str]) -> int:
    """Runs `run(argv)`; user errors print `prog: error: ...` and give 1."""
    from tilemlir.diagnostics import UserError

    try:
        return run(argv)
    except UserError as error:
        sys.stderr.write(f"{prog}: error: {error}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); silence the flush at exit too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except SystemExit as exit_:
        return int(exit_.code or 0) if isinstance(exit_.code, int) else 1
    except Exception as error:  # noqa: BLE001 - a bug in tilemlir; still no traceback for the user
        sys.stderr.write(
            f"{prog}: error: internal error: {type(error).__name__}: {error}\n"
            f"{prog}: note: this is a bug in tilemlir; please report it with the input\n"
        )
        return 1


def read_input(path: str):
    """The input file (or stdin for '-') as a SourceBuffer; unreadable or
    non-UTF-8 input is a UserError naming it."""
    from tilemlir.diagnostics import SourceBuffer, UserError

    try:
        if path == "-":
            data = sys.stdin.buffer.read()
            name = "<stdin>"
        else:
            data = Path(path).read_bytes()
            name = path
    except OSError as error:
        raise UserError(f"could not open input file '{path}': {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserError(f"input file '{name}' is not UTF-8 text ({error.reason} at byte {error.start})") from None
    return SourceBuffer(name, text)


def write_output(path: str, data: str | bytes) -> None:
    """Writes text or bytes atomically: a temporary file in the same directory
    renamed over the target, so a failure never leaves a partial file."""
    from tilemlir.diagnostics import UserError

    binary = isinstance(data, bytes)
    if path == "-":
        if binary:
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        sys.stdout.flush()
        return
    target = Path(path)
    if target.exists() and not target.is_file():
        # A device or pipe (e.g. /dev/null): renaming over it would replace it.
        try:
            with open(target, "wb" if binary else "w", **_text_mode(binary)) as handle:
                handle.write(data)
        except OSError as error:
            raise UserError(f"cannot write output file '{path}': {error.strerror or error}") from None
        return
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
    except OSError as error:
        raise UserError(f"cannot open output file '{path}': {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "wb" if binary else "w", **_text_mode(binary)) as handle:
            handle.write(data)
        os.replace(temporary, target)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise UserError(f"cannot write output file '{path}': {error.strerror or error}") from None


def _text_mode(binary: bool) -> dict:
    return {} if binary else {"encoding": "utf-8"}
