"""What every tilemlir command shares: no Python traceback ever reaches the user."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


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
