"""What every tilemlir command shares: no Python traceback ever reaches the user,
deep input does not overflow a stack, and output files appear whole or not at all."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

# MLIR's parser, verifier and printer recurse once per nesting level, on the
# calling thread's stack; so do our Python walks. The tools run on a thread
# with this much stack (reserved, touched only as used) and this recursion
# limit, which together hold diagnostics.MAX_NESTING_DEPTH levels in every stage;
# deeper input is refused before parsing. Measured: 10000 nested regions parse,
# verify and print in under 32 MiB; a Python frame resumed through C costs
# about 600 bytes, so 100000 of them fit too.
_STACK_BYTES = 512 << 20
_RECURSION_LIMIT = 100_000


def guarded_main(prog: str, run: Callable[[list[str]], int], argv: list[str]) -> int:
    """Runs `run(argv)` on a thread with a large stack; user errors print
    `prog: error: ...` and give 1, and nothing escapes as a traceback."""
    outcome: list[int] = []

    def body() -> None:
        outcome.append(_guarded(prog, run, argv))

    try:
        previous = threading.stack_size(_STACK_BYTES)
    except (ValueError, RuntimeError):  # a platform without settable stacks
        return _guarded(prog, run, argv)
    try:
        worker = threading.Thread(target=body, name=prog, daemon=True)
        worker.start()
    except RuntimeError:  # no memory for the stack: run on this thread
        return _guarded(prog, run, argv)
    finally:
        threading.stack_size(previous)
    try:
        worker.join()
    except KeyboardInterrupt:
        return 130
    return outcome[0] if outcome else 1


def _guarded(prog: str, run: Callable[[list[str]], int], argv: list[str]) -> int:
    from tilemlir.diagnostics import ToolWarning, UserError

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, ToolWarning):  # no Python file:line for these
            sys.stderr.write(f"{prog}: warning: {message}\n")
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
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
    except RecursionError:
        sys.stderr.write(f"{prog}: error: the input nests too deeply to process\n")
        return 1
    except BaseException as error:  # noqa: BLE001 - a bug in tilemlir; still no traceback for the user
        sys.stderr.write(
            f"{prog}: error: internal error: {type(error).__name__}: {error}\n"
            f"{prog}: note: this is a bug in tilemlir; please report it with the input\n"
        )
        return 1
    finally:
        sys.setrecursionlimit(limit)
        warnings.showwarning = shown


def raise_user_errors(parser):
    """Makes `parser` raise a UserError for a bad command line (printed the
    tools' way) instead of printing usage and exiting."""
    from tilemlir.diagnostics import UserError

    def error(message: str):
        raise UserError(message)

    parser.error = error
    return parser


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
    """Writes text or bytes to `path` ('-' is stdout).

    A regular file is written atomically: a temporary file in the same
    directory, renamed over the target, so a failure never leaves a partial
    file. Its mode is an existing file's, else 0666 less the umask, as any
    compiler's output. A read-only file or a symbolic link at `path` is
    refused, not replaced. Devices and pipes (/dev/null, /dev/stdout, a FIFO)
    are written in place."""
    from tilemlir.diagnostics import UserError

    binary = isinstance(data, bytes)
    if path == "-":
        if binary:
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        sys.stdout.flush()
        return
    if not path:
        raise UserError("the output file name is empty")
    try:
        existing = os.lstat(path)
    except FileNotFoundError:
        existing = None
    except OSError as error:
        raise UserError(f"cannot open output file '{path}': {error.strerror or error}") from None
    if existing is not None and not _replaceable(path, existing):
        _write_in_place(path, data)
        return
    mode = stat.S_IMODE(existing.st_mode) if existing is not None else 0o666 & ~_umask()
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
    except OSError as error:
        raise UserError(f"cannot open output file '{path}': {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "wb" if binary else "w", **_text_mode(binary)) as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
        os.replace(temporary, target)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise UserError(f"cannot write output file '{path}': {error.strerror or error}") from None


def _replaceable(path: str, existing: os.stat_result) -> bool:
    """True for a writable regular file (renamed over); False for a device or
    pipe (written in place); a UserError for anything that must stay as it is."""
    from tilemlir.diagnostics import UserError

    if stat.S_ISLNK(existing.st_mode):
        # /dev/stdout and /dev/fd/N are links to open descriptors: write through them.
        if os.path.abspath(path).startswith(("/dev/", "/proc/")):
            return False
        raise UserError(f"output file '{path}' is a symbolic link; refusing to replace it")
    if stat.S_ISDIR(existing.st_mode):
        raise UserError(f"cannot write output file '{path}': Is a directory")
    if not stat.S_ISREG(existing.st_mode):
        return False
    if not existing.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise UserError(f"output file '{path}' is read-only; refusing to replace it")
    return True


def _write_in_place(path: str, data: str | bytes) -> None:
    from tilemlir.diagnostics import UserError

    binary = isinstance(data, bytes)
    try:
        with open(path, "wb" if binary else "w", **_text_mode(binary)) as handle:
            handle.write(data)
    except OSError as error:
        raise UserError(f"cannot write output file '{path}': {error.strerror or error}") from None


def _umask() -> int:
    try:  # Linux shows it; reading it is free of races with other threads
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere the only way to read it is to set it
    os.umask(mask)
    return mask


def _text_mode(binary: bool) -> dict:
    return {} if binary else {"encoding": "utf-8"}
