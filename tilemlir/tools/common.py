"""What every tilemlir command shares: one command line (`ToolParser`: mlir-opt's
flag spellings, did-you-mean, `--version`, `--remarks`), no Python traceback ever
reaching the user, deep input not overflowing a stack, and output files that
appear whole or not at all.

Nothing here imports MLIR at module level: `--version` answers before anything
heavy is loaded (`guarded_main`)."""

from __future__ import annotations

import argparse
import errno
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
    `prog: error: ...` and give 1, and nothing escapes as a traceback.
    `--version` is answered here, before `run` imports anything heavy."""
    if asks_version(argv):
        sys.stdout.write(version_text(prog))
        return 0
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


# Writing the output failed for a reason outside tilemlir: a full disk, an
# I/O error, a descriptor the caller closed.
_OUTPUT_ERRNOS = (errno.ENOSPC, errno.EIO, errno.EBADF, errno.EDQUOT, errno.EFBIG)


class _Closed:
    """sys.stdin or sys.stdout when the caller closed it: any use is the
    error that says so."""

    def __init__(self, what: str):
        self.what = what

    def flush(self) -> None:  # the interpreter's at exit: nothing was written
        return None

    def close(self) -> None:
        return None

    def __getattr__(self, name):
        from tilemlir.diagnostics import UserError

        raise UserError(f"{self.what} is closed")


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
    for name, what in (("stdin", "standard input"), ("stdout", "standard output")):
        if getattr(sys, name) is None:  # a descriptor the caller closed (`>&-`)
            setattr(sys, name, _Closed(what))
    try:
        return run(argv)
    except UserError as error:
        sys.stderr.write(f"{prog}: error: {error}\n")
        return 1
    except MemoryError as error:
        detail = f" ({error})" if str(error) else ""
        sys.stderr.write(f"{prog}: error: out of memory{detail}: the input needs more memory than this "
                         f"machine gives the process\n")
        return 1
    except OSError as error:
        if error.errno not in _OUTPUT_ERRNOS:
            raise
        sys.stderr.write(f"{prog}: error: cannot write the output: {error.strerror}\n")
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


# --------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------

def version_text(prog: str) -> str:
    """What `--version` prints, as mlir-opt and clang do: the tool and
    tilemlir's version, then what it was built on. Reads package metadata
    only; MLIR itself is not imported."""
    from importlib import metadata

    from tilemlir import version
    from tilemlir.version import MLIR_BINDINGS_DISTRIBUTION

    try:
        bindings = metadata.version(MLIR_BINDINGS_DISTRIBUTION)
        llvm = ".".join(bindings.split(".")[:3])
        built_on = f"MLIR Python bindings {bindings} (LLVM {llvm})"
    except metadata.PackageNotFoundError:
        built_on = f"MLIR Python bindings of unknown version (no {MLIR_BINDINGS_DISTRIBUTION} installed)"
    python = ".".join(map(str, sys.version_info[:3]))
    return (f"{prog} (tilemlir) version {version.__version__}\n"
            f"  {built_on}\n"
            f"  Python {python}; tilemlir at {Path(version.__file__).parent}\n")


def asks_version(argv: list[str]) -> bool:
    """Whether the command line says `--version` (or `-version`) before any `--`."""
    for arg in argv:
        if arg == "--":
            return False
        if arg in ("--version", "-version"):
            return True
    return False


class _VersionAction(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(version_text(parser.prog))
        parser.exit()


class ToolParser(argparse.ArgumentParser):
    """The command line every tilemlir tool reads, spelled as mlir-opt's:

    - a long flag takes one dash or two: `-emit=isa` is `--emit=isa`, `-target x`
      is `--target x`; a one-letter flag takes its value as `-o FILE` or `-o=FILE`;
    - a value follows `=` or comes as the next argument (`--emit=isa`, `--emit isa`),
      except for a flag whose value is optional (`--save-temps[=DIR]`,
      `--describe-target[=T]`), which takes one only after `=`;
    - an unknown flag is refused with the flags it might have meant;
    - errors are UserErrors: `guarded_main` prints them as `prog: error: ...`, exit 1;
    - every tool has `--version` and `--remarks=SPEC` (which remarks to print,
      `tilemlir.diagnostics.configure_remarks`).

    `parse_command_line` is the entry; a tool may claim flags that are not its
    own (tile-opt's per-pass flags) with `claim`. The epilog may be a function,
    called only when the help is printed."""

    def __init__(self, prog: str, *, flags_hint: str | None = None, **kwargs):
        from tilemlir.diagnostics import REMARK_SPEC_HELP

        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(prog=prog, allow_abbrev=False, **kwargs)
        self.flags_hint = flags_hint or f"flags: {prog} --help"
        self.add_argument("--version", action=_VersionAction,
                          help="print the versions of the tool, tilemlir and MLIR, and exit")
        self.add_argument("--remarks", metavar="SPEC",
                          help=f"which remarks to print, as clang's -Rpass=: {REMARK_SPEC_HELP}")

    def format_help(self) -> str:
        if callable(self.epilog):  # built only when help is asked for
            self.epilog = self.epilog()
        return super().format_help()

    def error(self, message: str):
        from tilemlir.diagnostics import UserError

        raise UserError(message)

    def parse_command_line(
        self,
        argv: list[str],
        *,
        claim: Callable[[str, str | None], bool] | None = None,
        more_flags: Callable[[], list[str]] | None = None,
    ) -> argparse.Namespace:
        """Parses `argv`; `claim(name, value)` may take a flag that is not the
        parser's (returning True), `more_flags()` names such flags for the
        suggestions. `--remarks` is applied here and left out of the result."""
        namespace = self.parse_args(self._spelled_as_argparse(argv, claim, more_flags))
        from tilemlir.diagnostics import configure_remarks

        configure_remarks(namespace.remarks)
        del namespace.remarks
        return namespace

    def _spelled_as_argparse(self, argv, claim, more_flags) -> list[str]:
        """`argv` with every flag in the one spelling argparse reads."""
        flags = {s: a for a in self._actions for s in a.option_strings}
        spelled: list[str] = []
        remaining = list(argv)
        while remaining:
            arg = remaining.pop(0)
            if arg == "--":
                spelled += [arg, *remaining]
                break
            if not arg.startswith("-") or arg == "-":
                spelled.append(arg)
                continue
            name, eq, value = arg.lstrip("-").partition("=")
            flag = f"-{name}" if len(name) == 1 and not arg.startswith("--") else f"--{name}"
            action = flags.get(flag)
            if action is None:
                if claim is not None and claim(name, value if eq else None):
                    continue
                raise self._unknown_flag(arg, more_flags)
            # A value joined to its flag: argparse then never reads one that
            # starts with '-' (`-o -x.s`) as a flag, as clang and mlir-opt do not.
            if eq:
                spelled.append(f"{flag}={value}")
            elif action.nargs == "?":  # an optional value comes only after '='
                spelled.append(flag if action.const is None else f"{flag}={action.const}")
            elif action.nargs is None and remaining:  # `--flag VALUE`
                spelled.append(f"{flag}={remaining.pop(0)}")
            else:
                spelled.append(flag)
        return spelled

    def _unknown_flag(self, arg: str, more_flags):
        import difflib

        from tilemlir.diagnostics import UserError

        flag = arg.partition("=")[0]
        candidates = sorted(s for a in self._actions if a.help != argparse.SUPPRESS
                            for s in a.option_strings if s.startswith("--"))
        candidates += [f"--{name}" for name in (more_flags() if more_flags else [])]
        close = difflib.get_close_matches("--" + flag.lstrip("-"), candidates, n=3, cutoff=0.75)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        return UserError(f"unknown flag '{flag}'{hint} ({self.flags_hint})")


# The largest input read (an endless one, `/dev/zero`, would fill memory).
MAX_INPUT_BYTES = 1 << 30


def read_input(path: str):
    """The input file (or stdin for '-') as a SourceBuffer; unreadable,
    larger than MAX_INPUT_BYTES or non-UTF-8 input is a UserError naming it."""
    from tilemlir.diagnostics import SourceBuffer, UserError

    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
            name = "<stdin>"
        else:
            with open(path, "rb") as file:
                data = file.read(MAX_INPUT_BYTES + 1)
            name = path
    except OSError as error:
        raise UserError(f"could not open input file '{path}': {error.strerror or error}") from None
    if len(data) > MAX_INPUT_BYTES:
        shown = "<stdin>" if path == "-" else path
        raise UserError(f"input file '{shown}' is larger than {MAX_INPUT_BYTES >> 30} GiB, the most the tools read")
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
