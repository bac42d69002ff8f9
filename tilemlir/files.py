"""Reading the data files a user names (target descriptors, tuning databases).

    data = read_regular_file(path, limit=1 << 20)   # bytes, or UnreadableFile(reason)

A path from the command line or the environment may name anything: a FIFO
(opening it for reading waits for a writer, forever), a device such as
/dev/zero (reading never ends), a folder, a file larger than any real one.
The file is opened without blocking and checked before it is read: only a
regular file of at most `limit` bytes is read, so every caller gets its bytes
or a reason it can put in its own located message.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class UnreadableFile(Exception):
    """Why a file could not be read (`reason`, one line); `missing` when it
    does not exist."""

    def __init__(self, reason: str, missing: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.missing = missing


def read_regular_file(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file `path`, of at most `limit` bytes; an
    UnreadableFile for anything else (not a regular file, larger, an OS error)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as error:
        raise UnreadableFile(error.strerror or str(error), missing=True) from None
    except OSError as error:
        raise UnreadableFile(error.strerror or str(error)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnreadableFile("not a regular file")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise UnreadableFile(f"larger than {limit} bytes")
        return b"".join(chunks)
    except OSError as error:
        raise UnreadableFile(error.strerror or str(error)) from None
    finally:
        os.close(fd)
