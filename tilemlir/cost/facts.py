"""The descriptor facts the cost model and tile-tiling read, with unknown ones assumed.

`model_facts(target)` gathers, per logical device, what `tilemlir.cost.model`
needs: CUs, SIMDs per CU, clock, occupancy ceilings (waves per SIMD, threads
per workgroup, registers per lane, LDS per CU), LDS bandwidth (banks x bank
width per clock), device-memory bandwidth, latency (idle and under load) and
the L2 size, and each matrix instruction's rate.

A descriptor may write a fact `unknown` (MetaX publishes few). Unknown facts
must not stop a compile, so each fact the model reads has a rule for the
value it assumes in its place (`RULES`): the *least favourable* value that a
descriptor shipped with tilemlir states for it, among chips of the target's
`segment` (datacenter or client) where one of those states it (fewest CUs, SIMDs and
registers, lowest clock and bandwidth, longest latency, smallest LDS and
L2, most logical devices per package). No number is invented: the assumption names the
descriptors it comes from, and under it a configuration fits whatever the
shipped chips offer and its predicted time errs on the slow side. Every assumption made is returned
(`ModelFacts.assumed`), so the caller can say so in a remark; a descriptor of
the user's (`--target-desc`) that states the fact replaces the assumption.

Matrix rates (`instruction_rate`), in FLOP per SIMD per clock, come from:
1. the row's `cycles` (flops / cycles);
2. else the published peak for its operand class (`peak_dense_tflops`) over
   the package's CUs x SIMDs x clock, when those are all stated (NVIDIA
   publishes peaks, not cycles);
3. else the slowest rate of a shipped row of the same operand class with
   stated cycles (else of the same operand width), an assumption like the others.

Facts the model needs and cannot assume stay errors (`UnknownFactError`): the
wave size and the LDS a workgroup may hold, without which nothing is lowered.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

from tilemlir.mma_layouts import replicates_operands
from tilemlir.targets.model import (
    ELEMENT_BITS,
    UNKNOWN,
    MmaInstr,
    Target,
    UnknownFactError,
    is_stated,
    is_unknown,
    peak_key,
)


@dataclass(frozen=True)
class Assumption:
    """A value assumed for a fact `target`'s descriptor leaves unknown, and its basis."""

    target: str
    field: str  # the descriptor field, e.g. "registers.vgprs_per_lane"
    value: int | float
    basis: str  # why this value, naming the descriptors it comes from

    def message(self) -> str:
        """One remark's text: the field, the value assumed, and why."""
        value = int(self.value) if float(self.value).is_integer() else self.value
        return (f"'{self.field}' is not publicly known for {self.target}: assumed {value}, {self.basis} "
                f"(a descriptor stating it, --target-desc=FILE, replaces the assumption)")


@dataclass(frozen=True)
class Rule:
    """How an unknown fact is assumed: the least favourable stated value, i.e.
    the smallest (`least="min"`) or the largest (`least="max"`)."""

    field: str
    least: Literal["min", "max"]
    meaning: str  # what the least favourable value is, in words


RULES: tuple[Rule, ...] = (
    Rule("compute.compute_units", "min", "the fewest CUs"),
    Rule("compute.logical_devices", "max", "the most logical devices per package"),
    Rule("compute.simds_per_cu", "min", "the fewest SIMDs per CU"),
    Rule("compute.clock_mhz", "min", "the lowest clock"),
    Rule("compute.max_waves_per_simd", "min", "the fewest waves per SIMD"),
    Rule("compute.max_threads_per_workgroup", "min", "the smallest workgroup limit"),
    Rule("registers.vgprs_per_lane", "min", "the fewest registers per lane"),
    Rule("memory.shared_bytes_per_cu", "min", "the least LDS per CU"),
    Rule("memory.shared_banks", "min", "the fewest LDS banks"),
    Rule("memory.shared_bank_bytes", "min", "the narrowest LDS bank"),
    Rule("memory.hbm_bandwidth_gbps", "min", "the lowest device-memory bandwidth"),
    Rule("memory.latency_clocks", "max", "the longest device-memory latency"),
    Rule("memory.loaded_latency_clocks", "max", "the longest device-memory latency under load"),
    Rule("memory.l2_mib", "min", "the smallest L2"),
)
RULE_BY_FIELD = {rule.field: rule for rule in RULES}


def _shipped(segment: object = UNKNOWN) -> tuple[Target, ...]:
    """The shipped descriptors, those of `segment` where it is stated (a
    target's unknown facts are assumed from chips made for the same market:
    a datacenter part's from datacenter parts, not from a desktop card's)."""
    from tilemlir.targets.registry import shipped_targets

    shipped = shipped_targets()
    if is_unknown(segment):
        return shipped
    return tuple(t for t in shipped if t.segment == segment)


def _field(target: Target, path: str):
    value = target
    for part in path.split("."):
        value = getattr(value, part)
    return value


def least_favourable(field: str, shipped: tuple[Target, ...] | None = None,
                     segment: object = UNKNOWN) -> tuple[int | float, str] | None:
    """The least favourable value the shipped descriptors (of `segment`, where
    any of those states it) state for `field` (its `Rule`), and which
    descriptors state it; None when none does."""
    rule = RULE_BY_FIELD[field]
    pools = [shipped] if shipped is not None else [_shipped(segment), _shipped()]
    stated = []
    for pool in pools:
        stated = [(_field(t, field), t.qualified_name) for t in pool if is_stated(_field(t, field))]
        if stated:
            break
    if not stated:
        return None
    pick = min if rule.least == "min" else max
    value = pick(v for v, _ in stated)
    names = sorted({name for v, name in stated if v == value})
    return value, f"{rule.meaning} of the shipped descriptors ({', '.join(names)})"


@dataclass(frozen=True)
class ModelFacts:
    """What the model reads of one target, per logical device, unknown facts
    assumed (`assumed` lists each assumption)."""

    target: Target
    compute_units: int  # per logical device: the package's CUs / logical_devices
    simds_per_cu: int
    clock_mhz: float
    wave_size: int
    max_waves_per_simd: int
    max_threads_per_workgroup: int
    vgprs_per_lane: int
    register_limit: int  # registers one lane may hold: arch_vgprs_max, else vgprs_per_lane
    register_file: int  # per SIMD lane, shared by its resident waves: file_per_lane, else vgprs_per_lane
    has_accumulation_file: bool  # acc_vgprs_max is stated, not unknown or none (AMD CDNA's AGPRs)
    shared_bytes_per_workgroup: int
    shared_bytes_per_cu: int  # at least one workgroup's
    shared_bytes_per_clock: int  # LDS bandwidth of a CU: banks x bank width
    memory_bytes_per_second: float  # device memory, per logical device
    l2_bytes_per_second: float  # the L2 to the CUs: memory.l2_bandwidth_gbps, else device memory's
    memory_latency_clocks: float  # one dependent load from device memory
    loaded_latency_clocks: float  # the same while device memory is busy (at least the idle latency)
    l2_bytes: float  # of the logical device
    single_stage_prefetch: bool  # a loop of one stage still loads ahead (the backend's manifest)
    copies_through_registers: bool  # the loop's global -> shared tiles are staged in registers (the manifest)
    address_registers: int  # per lane, besides the tiles (the manifest)
    # Copies of a wave's matrix operands its lanes hold: 2 where the lane
    # layout repeats A and B in both halves of the wave (RDNA3's WMMAs,
    # mma_layouts.replicates_operands of the descriptor's architecture), else 1.
    operand_copies: int
    partial_sums_prefix: str  # instructions whose 8-bit gemms keep a second accumulator (the manifest)
    producer_prefix: str  # instructions whose K loops get a producer warpgroup (the manifest)
    producer_threads: int  # the threads it adds (the manifest)
    producer_registers: int  # per lane, after it gives the rest back (the manifest)
    producer_loop_sync_clocks: int  # per iteration of such a loop, the matrix units idle (the manifest)
    loop_issue_clocks: int  # per iteration, a wave's work besides its matrix instructions (the manifest's, by chip)
    # The same by the matrix instruction's rows where the manifest measured
    # them apart ((rows, clocks) pairs; `issue_clocks`), which take precedence:
    # a model without issue clocks clears both.
    issue_clocks_by_rows: tuple[tuple[int, int], ...]
    skinny_block: int  # block extent also tried for problem extents this small (the manifest)
    stream_bytes_in_flight: int  # per CU, for a launch of fewer tiles than CUs; 0: not measured
    assumed: tuple[Assumption, ...]

    @property
    def memory_bytes_per_clock(self) -> float:
        return self.memory_bytes_per_second / (self.clock_mhz * 1e6)

    def issue_clocks(self, row: MmaInstr) -> int:
        """A wave's issue clocks per loop iteration around `row`'s matrix
        instructions: the figure measured for instructions of its rows, else
        the chip's."""
        return dict(self.issue_clocks_by_rows).get(row.m, self.loop_issue_clocks)

    def instruction_rate(self, row: MmaInstr) -> tuple[float, Assumption | None]:
        """FLOP per SIMD per clock of `row` (see the module docstring), and the
        assumption behind it when the descriptor gives neither cycles nor a peak."""
        rates = _RATES.setdefault(id(self), (self, {}))[1]
        if row not in rates:
            rates[row] = _instruction_rate(self.target, row)
        return rates[row]


# Per ModelFacts (kept alive by the entry, so its id stays its own): rates by row.
_RATES: dict[int, tuple[ModelFacts, dict[MmaInstr, tuple[float, Assumption | None]]]] = {}


def _known(target: Target, path: str) -> bool:
    return not is_unknown(_field(target, path))


def _instruction_rate(target: Target, row: MmaInstr) -> tuple[float, Assumption | None]:
    if not is_unknown(row.cycles):
        return row.flops / row.cycles, None
    key = peak_key(row.a)
    peak = dict(target.peak_dense_tflops).get(key)
    package = ("compute.compute_units", "compute.simds_per_cu", "compute.clock_mhz")
    if peak is not None and not is_unknown(peak) and peak_key(row.b) == key \
            and all(_known(target, path) for path in package):
        compute = target.compute
        return peak * 1e12 / (compute.compute_units * compute.simds_per_cu * compute.clock_mhz * 1e6), None
    rate, basis = _slowest_shipped_rate(row, target.segment)
    cycles = row.flops / rate
    assumption = Assumption(str(target), f"matrix.instructions[{row.name}].cycles", round(cycles, 2),
                            f"the slowest rate ({rate:g} FLOP per SIMD per clock) {basis}")
    return rate, assumption


@functools.cache
def _slowest_shipped_rate(row: MmaInstr, segment: object = UNKNOWN) -> tuple[float, str]:
    """The slowest FLOP per SIMD-clock of a shipped row (of `segment`'s chips
    where they have one) with stated cycles, of the same operand class as
    `row`, else of the same operand width."""
    key, bits = peak_key(row.a), ELEMENT_BITS[row.a]
    for pool in (_shipped(segment), _shipped()):
        rows = [(r.flops / r.cycles, t.qualified_name, r.name, r) for t in pool for r in t.mma
                if not is_unknown(r.cycles)]
        for group, words in (([r for r in rows if peak_key(r[3].a) == key], f"{key} operands"),
                             ([r for r in rows if ELEMENT_BITS[r[3].a] == bits], f"{bits}-bit operands")):
            if group:
                rate, chip, name, _ = min(group, key=lambda r: r[:3])
                return rate, f"of the shipped rows with {words} ({chip}'s {name})"
    raise UnknownFactError(row.name, "cycles", "the matrix rate, and no shipped row states cycles")


# Per Target (kept alive by the entry): its facts. Keyed by identity, since
# hashing a whole descriptor costs more than the model itself.
_FACTS: dict[int, tuple[Target, ModelFacts]] = {}


def loop_issue_clocks(target: Target) -> int:
    """The family's measured issue clocks per loop iteration for this chip's
    processor (Backend.loop_issue_clocks), its figure for other chips where
    the processor has none, 0 where the family measured none."""
    from tilemlir.targets.registry import backend

    table = dict(backend(target.family).loop_issue_clocks)
    return table.get(target.processor, table.get("", 0))


def issue_clocks_by_rows(target: Target) -> tuple[tuple[int, int], ...]:
    """(instruction rows, clocks) the family measured apart for this chip's
    processor (Backend.loop_issue_clocks_by_rows); for a processor with a
    figure of its own but none apart, none (its figure holds for every
    instruction); for one with neither, the family's other chips' ("")."""
    from tilemlir.targets.registry import backend

    family = backend(target.family)
    apart = {processor for processor, _, _ in family.loop_issue_clocks_by_rows}
    if target.processor in apart:
        chip = target.processor
    elif target.processor in dict(family.loop_issue_clocks):
        return ()
    else:
        chip = ""
    return tuple((rows, clocks) for processor, rows, clocks in family.loop_issue_clocks_by_rows if processor == chip)


def model_facts(target: Target) -> ModelFacts:
    """The facts of `target` the model reads, unknown ones assumed by `RULES`.
    Raises UnknownFactError for a fact no rule covers (wave size, LDS per
    workgroup) or that no shipped descriptor states."""
    cached = _FACTS.get(id(target))
    if cached is None:
        cached = _FACTS[id(target)] = (target, _model_facts(target))
    return cached[1]


def _model_facts(target: Target) -> ModelFacts:
    from tilemlir.targets.registry import backend

    wave = target.require("compute.wave_size", "choosing the thread count")
    shared_per_workgroup = target.require("memory.shared_bytes_per_workgroup", "the LDS budget")
    assumed: list[Assumption] = []

    def fact(path: str, needed_for: str):
        value = _field(target, path)
        if not is_unknown(value):
            return value
        found = least_favourable(path, segment=target.segment)
        if found is None:
            raise UnknownFactError(str(target), path, needed_for, target.file_of(path))
        assumed.append(Assumption(str(target), path, found[0], found[1]))
        return found[0]

    compute_units = fact("compute.compute_units", "the cost model")
    logical_devices = fact("compute.logical_devices", "the cost model")
    vgprs = fact("registers.vgprs_per_lane", "the register budget")
    arch = target.registers.arch_vgprs_max
    shared_per_cu = fact("memory.shared_bytes_per_cu", "occupancy")
    banks = fact("memory.shared_banks", "the LDS bandwidth")
    bank_bytes = fact("memory.shared_bank_bytes", "the LDS bandwidth")
    latency = fact("memory.latency_clocks", "the cost model")
    hbm = fact("memory.hbm_bandwidth_gbps", "the cost model")  # read once: an assumption is recorded once
    l2_bandwidth = target.memory.l2_bandwidth_gbps
    return ModelFacts(
        target=target,
        compute_units=max(1, compute_units // logical_devices),
        simds_per_cu=fact("compute.simds_per_cu", "the cost model"),
        clock_mhz=fact("compute.clock_mhz", "the cost model"),
        wave_size=wave,
        max_waves_per_simd=fact("compute.max_waves_per_simd", "occupancy"),
        max_threads_per_workgroup=fact("compute.max_threads_per_workgroup", "the thread count"),
        vgprs_per_lane=vgprs,
        register_limit=vgprs if is_unknown(arch) else min(arch, vgprs),
        register_file=vgprs if is_unknown(target.registers.file_per_lane) else target.registers.file_per_lane,
        has_accumulation_file=is_stated(target.registers.acc_vgprs_max),
        shared_bytes_per_workgroup=shared_per_workgroup,
        # A CU holds at least one workgroup of the largest size the chip allows.
        shared_bytes_per_cu=max(shared_per_cu, shared_per_workgroup),
        shared_bytes_per_clock=banks * bank_bytes,
        memory_bytes_per_second=hbm * 1e9 / logical_devices,
        l2_bytes_per_second=(hbm if is_unknown(l2_bandwidth) else l2_bandwidth) * 1e9 / logical_devices,
        memory_latency_clocks=latency,
        loaded_latency_clocks=max(latency, fact("memory.loaded_latency_clocks", "the cost model")),
        l2_bytes=fact("memory.l2_mib", "the cost model") * 2 ** 20 / logical_devices,
        single_stage_prefetch=backend(target.family).prefetches_single_stage,
        copies_through_registers=backend(target.family).copies_through_registers,
        address_registers=backend(target.family).address_registers,
        operand_copies=2 if replicates_operands(target.architecture) else 1,
        partial_sums_prefix=backend(target.family).partial_sums_prefix,
        producer_prefix=backend(target.family).producer_prefix,
        producer_threads=backend(target.family).producer_threads,
        producer_registers=backend(target.family).producer_registers,
        producer_loop_sync_clocks=backend(target.family).producer_loop_sync_clocks,
        loop_issue_clocks=loop_issue_clocks(target),
        issue_clocks_by_rows=issue_clocks_by_rows(target),
        skinny_block=backend(target.family).skinny_block,
        stream_bytes_in_flight=backend(target.family).stream_bytes_in_flight,
        assumed=tuple(assumed),
    )
