"""What LLVM 22 accepts as a processor, asked of LLVM itself.

A descriptor's `name` becomes `-mcpu=NAME` for llc (amdgpu) and the chip of
the in-process NVPTX backend (nvidia). A name LLVM does not know makes llc
abort, and in process NVPTX takes the whole compiler down ("LLVM ERROR"), so
descriptors are checked when they are loaded:

    llvm_processors("nvptx64")        # frozenset({"sm_20", ..., "sm_90a", ...}) or None
    processor_problem("sm_999", "nvptx64", NVPTX_NAME)
    # "'sm_999' is not a processor LLVM 22 knows (known: sm_100, ...)"
    nvptx_fatal_error("sm_100a", "+ptx85")
    # "PTX version 8.5 does not support target 'sm_100a'. ..."

The lists come from `llc-22 -march=... -mcpu=help`, run once per process.
Without llc the check falls back to the names' shape (`gfx[0-9a-f]+`,
`sm_[0-9]+a?`), and the NVPTX probe to a table of chips PTX 8.5 can target.
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

AMDGPU_NAME = re.compile(r"gfx[0-9a-f]+")
NVPTX_NAME = re.compile(r"sm_[0-9]+a?")
# Chips PTX 8.5 can target (PTX ISA, "Release Notes": sm_90a since 8.0; sm_100 needs 8.6).
NVPTX_PTX85_CHIPS = frozenset({
    "sm_20", "sm_21", "sm_30", "sm_32", "sm_35", "sm_37", "sm_50", "sm_52", "sm_53", "sm_60",
    "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90",
    "sm_90a"
})


def find_llc() -> str | None:
    candidate = LLVM_BIN_DIR / "llc"
    if candidate.is_file():
        return str(candidate)
    return shutil.which(f"llc-{LLVM_MAJOR}")


def _run_llc(args: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess | None:
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
    done = _run_llc([f"-march={march}", "-mcpu=help"])
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
    """Why `name` is not a processor of `march` LLVM 22 knows, or None."""
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


_PROBE_KERNEL = b"""target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @probe() {
  ret void
}
"""


@functools.cache
def nvptx_fatal_error(chip: str, features: str) -> str | None:
    """The fatal error NVPTX reports for `chip` with `features` (a PTX version
    too old for the chip), found by compiling an empty kernel out of process;
    None when there is none."""
    done = _run_llc([f"-mcpu={chip}", f"-mattr={features}", "-o", "/dev/null", "-"],
                    _PROBE_KERNEL)
    if done is None:
        if features == "+ptx85" and chip not in NVPTX_PTX85_CHIPS:
            return f"PTX 8.5 cannot target '{chip}' (it targets {', '.join(sorted(NVPTX_PTX85_CHIPS))})"
        return None
    if done.returncode == 0:
        return None
    text = done.stderr.decode("utf-8", errors="replace").strip()
    for line in text.splitlines():
        if line.startswith("LLVM ERROR:"):
            return line.removeprefix("LLVM ERROR:").strip()
    return text.splitlines()[0] if text else f"llc exited with status {done.returncode}"
