"""Which chips LLVM 22's NVPTX backend compiles our kernels for.

NVPTX runs in process (gpu-module-to-binary), and a chip it cannot target with
the PTX version the pipeline asks for ends the whole compiler ("LLVM ERROR").
So a descriptor's chip is tried out of process when the file is loaded:

    nvptx_fatal_error("sm_100a", "+ptx85")
    # "PTX version 8.5 does not support target 'sm_100a'. ..."

Without llc the probe falls back to a table of the chips PTX 8.5 can target.
"""

from __future__ import annotations

import functools
import re

from tilemlir.targets.llvm_processors import run_llc

LLVM_ARCH = "nvptx64"
NVPTX_NAME = re.compile(r"sm_[0-9]+a?")
# Chips PTX 8.5 can target (PTX ISA, "Release Notes": sm_90a since 8.0; sm_100 needs 8.6).
NVPTX_PTX85_CHIPS = frozenset({
    "sm_20", "sm_21", "sm_30", "sm_32", "sm_35", "sm_37", "sm_50", "sm_52", "sm_53", "sm_60",
    "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90",
    "sm_90a"
})

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
    done = run_llc([f"-mcpu={chip}", f"-mattr={features}", "-o", "/dev/null", "-"],
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
