"""What LLVM 22 accepts as a processor, asked of LLVM itself.

A descriptor's `name` becomes a processor (`-mcpu=NAME`) of some LLVM backend;
a name LLVM does not know makes llc abort, or takes an in-process backend down
with it ("LLVM ERROR"). A family's `check_target` therefore asks, for its own
LLVM architecture:

    llvm_processors("amdgcn")      # frozenset({"gfx900", ..., "gfx942", ...}) or None
    processor_problem("gfx9999", "amdgcn", re.compile(r"gfx[0-9a-f]+"))
    # "'gfx9999' is not a processor LLVM 22 knows (known: gfx1010, ...)"

The lists come from `llc-22 -march=ARCH -mcpu=help`, run once per process per
architecture. Without llc the check falls back to the shape of the family's
names (the `fallback` pattern the family gives). `run_llc` is there for a
family's own probes (e.g. nvidia's, for a fatal error of NVPTX).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path

LLVM_MAJOR = 22
LLVM_BIN_DIR = Path(f"/usr/lib/llvm-{LLVM_MAJOR}/bin")
_TIMEOUT_SECONDS = 60


def find_llc() -> str | None:
    candidate = LLVM_BIN_DIR / "llc"
    if candidate.is_file():
        return str(candidate)
    return shutil.which(f"llc-{LLVM_MAJOR}")


def run_llc(args: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess | None:
    """llc-22 run with `args` on `stdin`; None without llc or when it cannot run."""
    llc = find_llc()
    if llc is None:
        return None
    try:
        return subprocess.run([llc, *args], input=stdin, capture_output=True,
                              timeout=_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


@functools.cache
def llvm_processors(march: str) -> frozenset[str] | None:
    """The processors llc-22 lists for `-march=march`; None without llc."""
    done = run_llc([f"-march={march}", "-mcpu=help"])
    if done is None:
        return None
    text = (done.stdout + done.stderr).decode("utf-8", errors="replace")
    names, listing = set(), False
    for line in text.splitlines():
        if line.startswith("Available CPUs"):
            listing = True
        elif line.startswith("Available features"):
            break
        elif listing and " - " in line:
            names.add(line.split(" - ", 1)[0].strip())
    return frozenset(names) or None


def processor_problem(name: str, march: str, fallback: re.Pattern) -> str | None:
    """Why `name` is not a processor of `march` LLVM 22 knows, or None.
    Without llc, `fallback` (the shape of the family's processor names) decides."""
    known = llvm_processors(march)
    if known is None:
        if fallback.fullmatch(name):
            return None
        return (f"'{name}' is not a processor name of LLVM {LLVM_MAJOR} (expected "
                f"{fallback.pattern}; llc-{LLVM_MAJOR}, which lists them, was not found)")
    if name in known:
        return None
    return (f"'{name}' is not a processor LLVM {LLVM_MAJOR} knows "
            f"(known: {', '.join(sorted(known))})")
