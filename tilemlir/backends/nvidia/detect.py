"""The NVIDIA GPUs of this machine, as nvidia-smi lists them (`Backend.detect_gpu`).

    present_chips()          # ("sm_90a",) on an H100/H200 host; () without nvidia-smi
    chip_for("9.0")          # "sm_90a"

One `nvidia-smi --query-gpu=compute_cap --format=csv,noheader` (a line per
GPU, e.g. `9.0`), with a time limit; no nvidia-smi, a failing one or output
that is no capability all mean no GPU. Standard library only.
"""

from __future__ import annotations

import re
import shutil
import subprocess

QUERY = ("--query-gpu=compute_cap", "--format=csv,noheader")
TIME_LIMIT_SECONDS = 10
CAPABILITY = re.compile(r"(\d+)\.(\d)")


def present_chips() -> tuple[str, ...]:
    """The chip names of this machine's NVIDIA GPUs, each once; () when none is found."""
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return ()
    try:
        done = subprocess.run([tool, *QUERY], capture_output=True, text=True,
                              timeout=TIME_LIMIT_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    if done.returncode != 0:
        return ()
    chips = (chip_for(line) for line in done.stdout.splitlines())
    return tuple(dict.fromkeys(chip for chip in chips if chip is not None))


def chip_for(compute_capability: str) -> str | None:
    """The target name of a GPU of this compute capability: from 9.0 on the
    architecture-specific one (`sm_90a`), which this GPU runs and which opens
    its own instructions (wgmma, TMA; PTX ISA, "Target ISA notes"); before,
    the plain one (`sm_80`). None for text that is no capability."""
    matched = CAPABILITY.fullmatch(compute_capability.strip())
    if matched is None:
        return None
    major, minor = int(matched[1]), int(matched[2])
    return f"sm_{major}{minor}{'a' if major >= 9 else ''}"
