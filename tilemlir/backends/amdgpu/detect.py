"""The AMD GPUs of this machine, as the KFD driver lists them (`Backend.detect_gpu`).

    present_chips()                      # ("gfx942",) on an MI300X host; () without /dev/kfd
    chips_in_topology(Path("nodes"))     # the same, from a topology folder given

Only files are read, no tool is run: /dev/kfd says the driver is there, and
every node of its topology whose `gfx_target_version` is not 0 is a GPU (CPU
nodes say 0). LLVM's amdgpu-arch (AMDGPUArchByKFD.cpp) reads the same field.
Standard library only, so it runs anywhere.
"""

from __future__ import annotations

from pathlib import Path

KFD_DEVICE = Path("/dev/kfd")
KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")


def present_chips() -> tuple[str, ...]:
    """The gfx names of this machine's AMD GPUs, each once; () without the driver."""
    if not KFD_DEVICE.exists():
        return ()
    return chips_in_topology(KFD_NODES)


def chips_in_topology(nodes: Path) -> tuple[str, ...]:
    """The gfx names of the GPU nodes under `nodes` (each `N/properties`)."""
    chips = []
    for properties in sorted(nodes.glob("*/properties")):
        try:
            text = properties.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "gfx_target_version" and value.strip().isdigit():
                chip = gfx_name(int(value))
                if chip is not None:
                    chips.append(chip)
    return tuple(dict.fromkeys(chips))


def gfx_name(version: int) -> str | None:
    """`gfx_target_version` (major * 10000 + minor * 100 + stepping) as
    LLVM names the processor: 90402 -> gfx942, 90010 -> gfx90a, 110501 ->
    gfx1151 (minor and stepping one hex digit each); 0 (a CPU) -> None."""
    major, minor, stepping = version // 10000, version // 100 % 100, version % 100
    if major == 0 or minor > 15 or stepping > 15:
        return None
    return f"gfx{major}{minor:x}{stepping:x}"
