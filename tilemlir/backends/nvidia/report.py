"""The nvidia --report (docs/report.md), read from the PTX and the launch metadata.

Per kernel (`.entry`): `threads` from its `.reqntid` or `.maxntid` (else its
launches' block), `shared_bytes` its static `.shared` arrays plus the dynamic
shared memory it is launched with, `matrix_instructions` its mma.sync and
wgmma.mma_async by full PTX name (`main_loop` null: the PTX is not split into
loops here). Registers, spills, scratch and occupancy are ptxas's to decide,
and ptxas does not run here: null. The nvidia section:

    ptx_instructions       COUNTED_INSTRUCTIONS, how often each occurs in the kernel
    dynamic_shared_bytes   what its launches pass (the largest, 0 when not launched)

The module's `functions` are the launch metadata (toolchain.launch_metadata).
"""

from __future__ import annotations

import math
import re

from tilemlir.backends.report_schema import kernel_entry, module_report
from tilemlir.targets.model import Target

# PTX instructions counted in the report.
COUNTED_INSTRUCTIONS = ("mma.sync", "ldmatrix", "cp.async.cg", "cp.async.wait_group", "bar.sync",
                        "wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait")

_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$]+)", flags=re.MULTILINE)
_THREADS = re.compile(r"^\s*\.(?:reqntid|maxntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", flags=re.MULTILINE)
# A sized .shared array: ".shared .align 8 .b8 __mbarrier[32];" (the dynamic one has no size).
_SHARED = re.compile(r"^\s*\.shared\s+(?:\.align\s+\d+\s+)?\.(?:b|u|s|f)(\d+)\s+([\w$]+)\[(\d+)\]",
                     flags=re.MULTILINE)
_MATRIX = re.compile(r"^\s*(?:@!?%\w+\s+)?((?:wgmma\.mma_async|mma\.sync)\.[\w.]+)", flags=re.MULTILINE)


def entry_sections(ptx: str) -> tuple[str, dict[str, str]]:
    """The module's text before the first `.entry`, and each entry's text up to the next."""
    marks = list(_ENTRY.finditer(ptx))
    header = ptx[:marks[0].start()] if marks else ptx
    sections = {}
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(ptx)
        sections[mark.group(1)] = ptx[mark.start():end]
    return header, sections


def _shared_bytes(declarations: str) -> dict[str, int]:
    return {match.group(2): int(match.group(1)) // 8 * int(match.group(3))
            for match in _SHARED.finditer(declarations)}


def _launches(metadata: dict, kernel: str) -> list[dict]:
    return [launch for function in metadata.get("functions") or []
            for launch in function["launches"] if launch.get("kernel") == kernel]


def _threads(section: str, launches: list[dict]) -> int | None:
    match = _THREADS.search(section)
    if match:
        return math.prod(int(extent) for extent in match.groups() if extent)
    blocks = {math.prod(launch["block"]) for launch in launches if None not in launch["block"]}
    return blocks.pop() if len(blocks) == 1 else None


def kernel_report(name: str, section: str, module_shared: dict[str, int], metadata: dict,
                  target: Target) -> dict:
    """One `.entry`'s report entry (report_schema.kernel_entry)."""
    launches = _launches(metadata, name)
    dynamic = max((launch["dynamic_shared_bytes"] for launch in launches), default=0)
    static = sum(_shared_bytes(section).values())
    static += sum(size for array, size in module_shared.items() if re.search(rf"\b{re.escape(array)}\b", section))
    matrix: dict[str, dict[str, int | None]] = {}
    for match in _MATRIX.finditer(section):
        entry = matrix.setdefault(match.group(1), {"main_loop": None, "total": 0})
        entry["total"] += 1
    return kernel_entry(name, target.family, threads=_threads(section, launches),
                        shared_bytes=static + dynamic, matrix_instructions=matrix,
                        family_fields={"ptx_instructions": {i: section.count(i) for i in COUNTED_INSTRUCTIONS},
                                       "dynamic_shared_bytes": dynamic})


def build_report(ptx: str, metadata: dict, target: Target) -> dict:
    """The report of one PTX module launched as `metadata` says."""
    header, sections = entry_sections(ptx)
    module_shared = _shared_bytes(header)
    kernels = [kernel_report(name, section, module_shared, metadata, target) for name, section in sections.items()]
    return module_report(target, kernels, metadata["functions"])
