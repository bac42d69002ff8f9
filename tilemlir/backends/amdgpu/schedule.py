"""llc's two instruction schedules for a kernel's main loop, the faster kept.

llc-22 schedules AMDGPU code with GCNMaxOccupancySchedStrategy by default:
it first keeps registers free for the most waves the kernel could run, then
hides latency. Its GCNMaxILPSchedStrategy ("amdgpu-sched-strategy"="max-ilp")
schedules for latency first. Which gives the faster matrix loop depends on
the loop, not on a rule this compiler could state, so the isa stage tries
both for every kernel tile-lower-to-gpu marks (tile.schedule_trial: a
pipelined loop that issues matrix instructions, sched-hints on). llc's flag
is the module's (a kernel whose function attribute names a strategy keeps
it), so the latency schedule is kept for the module only where

  * no kernel spills more or runs fewer waves per SIMD (report.occupancy),
  * no kernel's main loop takes more of llvm-mca's clocks (report.
    main_loop_cycles), and
  * the marked kernels' main loops together take at least MIN_GAIN fewer.

Otherwise the default schedule stays, and so does a module whose loops
llvm-mca cannot measure, that spills with the default schedule (it falls back
to another configuration or is refused either way; the second compile is
not run) or whose second compile fails (the entry says why).
Measured with bench/amd_vs_triton.py's harness (mfma_busy_ratio per wave,
default -> latency schedule, no spills either way): f16 4096^3 in 256x256x64
blocks of 8 waves on gfx942 0.720 -> 0.924 (208 -> 212 VGPRs, 2 waves per
SIMD both), fp8 256x256x64 0.648 -> 0.749, f16 1024^3 128x128x128 on gfx950
0.677 -> 0.715, fp8 200x96x136 on gfx942 0.225 -> 0.302; but f16 1024^3
64x128x64 on gfx942 (960 -> 1,216 clocks) and f16 128x128x64 on gfx90a keep
the default.

Each marked kernel's report entry says what was chosen (`schedule`).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.backends.amdgpu import report, toolchain
from tilemlir.targets.model import Target

# llc's latency-first strategy: the function attribute (name, value) and the
# module-wide flag of the same meaning.
LATENCY_STRATEGY = ("amdgpu-sched-strategy", "max-ilp")
LATENCY_FLAG = f"-{LATENCY_STRATEGY[0]}={LATENCY_STRATEGY[1]}"
# The fewest of llvm-mca's clocks the marked loops must save together: below
# it the two schedules are within what llvm-mca's model can tell apart.
MIN_GAIN = 0.02
# The second compile is a trial: past this it is dropped, not waited for.
TRIAL_TIMEOUT_SECONDS = 120


@dataclass(frozen=True)
class KernelCost:
    """What the trial compares of one kernel: spills, waves per SIMD (None
    where the report cannot tell) and its main loop's llvm-mca clocks (None
    without a measurable loop)."""

    spills: int
    waves: int | None
    loop_clocks: float | None


def kernel_costs(isa: str, target: Target, usages: list | None = None) -> dict[str, KernelCost]:
    """Each kernel's cost in `isa` (its `report.kernel_usage`, where already read)."""
    sections = report.function_sections(isa)
    costs = {}
    for usage in report.kernel_usage(isa) if usages is None else usages:
        waves, _ = report.occupancy(usage, target)
        try:
            cycles = report.main_loop_cycles(sections.get(usage.name, ""), target)
        except toolchain.ToolchainError:
            cycles = None
        costs[usage.name] = KernelCost(usage.vgpr_spills + usage.sgpr_spills, waves,
                                       cycles["llvm_mca"] if cycles else None)
    return costs


def no_worse(latency: KernelCost, default: KernelCost) -> bool:
    if latency.spills > default.spills:
        return False
    if default.waves is not None and (latency.waves is None or latency.waves < default.waves):
        return False
    if default.loop_clocks is not None:
        return latency.loop_clocks is not None and latency.loop_clocks <= default.loop_clocks
    return True


def prefers_latency(default: dict[str, KernelCost], latency: dict[str, KernelCost], marked: list[str]) -> bool:
    """Whether the module keeps llc's latency schedule (the module docstring's rule)."""
    if set(default) != set(latency) or not all(no_worse(latency[name], default[name]) for name in default):
        return False
    clocks = [(default[name].loop_clocks, latency[name].loop_clocks) for name in marked if name in default]
    if not clocks or any(before is None for before, _ in clocks):
        return False
    before, after = sum(pair[0] for pair in clocks), sum(pair[1] for pair in clocks)
    return before > 0 and after <= before * (1 - MIN_GAIN)


def scheduled(llvm_ir: str, isa: str, target: Target, marked: list[str]) -> tuple[str, dict[str, dict]]:
    """The ISA to keep for `llvm_ir` (compiled to `isa` with llc's default
    schedule) and, for each marked kernel, its report entry's `schedule`:
    {"strategy": "default" or "max-ilp", "main_loop_clocks": {"default": ...,
    "max-ilp": ...}}, with "not_tried" where the second compile did not run
    (a module that spills falls back to another configuration or is refused,
    whatever its schedule) or failed."""
    if not marked:
        return isa, {}

    def untried(why: str, clocks: dict[str, KernelCost] | None = None) -> dict[str, dict]:
        before = {name: cost.loop_clocks for name, cost in (clocks or {}).items()}
        return {name: {"strategy": "default", "main_loop_clocks": {"default": before.get(name), "max-ilp": None},
                       "not_tried": why} for name in marked}

    usages = report.kernel_usage(isa)
    if any(usage.vgpr_spills + usage.sgpr_spills for usage in usages):
        return isa, untried("the default schedule spills")
    default = kernel_costs(isa, target, usages)
    try:
        latency_isa = toolchain.llc_to_isa(llvm_ir, target.processor, extra=(LATENCY_FLAG,),
                                           timeout=TRIAL_TIMEOUT_SECONDS)
    except toolchain.ToolchainError as error:
        return isa, untried(str(error).strip().splitlines()[0], default)
    latency = kernel_costs(latency_isa, target)
    keep_latency = prefers_latency(default, latency, marked)
    entries = {name: {"strategy": "max-ilp" if keep_latency else "default",
                      "main_loop_clocks": {"default": default[name].loop_clocks,
                                           "max-ilp": latency[name].loop_clocks if name in latency else None}}
               for name in marked if name in default}
    return (latency_isa if keep_latency else isa), entries
