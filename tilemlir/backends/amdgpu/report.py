"""What a compiled kernel uses, read from llc's ISA, and whether the target has it.

`build_report(isa, target)` gives the JSON of `tile-compile --report`
(docs/report.md): per kernel the common fields (`registers` is the unified
VGPR + AGPR count per lane the occupancy uses, `shared_bytes` the static LDS,
`occupancy` waves per SIMD, `matrix_instructions` the MFMAs) and the amdgpu
section:

    vgpr, agpr, sgpr       registers per lane (VGPR: architected, AGPR: accumulation)
                           and per wave (SGPR, LLVM's total incl. VCC/flat scratch)
    vgpr_spills, sgpr_spills   what `spills` adds up
    occupancy_limits       the bound each resource sets (see `occupancy`);
                           `occupancy_llc` what llc itself computed
    mfma_busy_ratio        the main loop's MFMA cycles (the descriptor's `cycles`)
                           over llvm-mca's cycles for one iteration; see
                           `mfma_busy_ratio`. `main_loop_cycles` gives both numbers
    global_load_bits, lds_read_bits (and the store/write widths)
                           the widest single access: global_load_dwordx4 = 128,
                           ds_read_b64 = 64 (ds_read2_b64 is two 64-bit accesses)
    lds_bank_conflicts_per_iteration   the lowering's bank model (the isa stage adds it)

Sources: register, LDS and wave numbers come from the AMDHSA metadata llc writes
into the .s (`.vgpr_count`, `.agpr_count`, `.sgpr_count`, `.*_spill_count`,
`.private_segment_fixed_size`, `.group_segment_fixed_size`,
`.max_flat_workgroup_size`) and its `.set <kernel>.num_vgpr/num_agpr` symbols;
limits come from the target descriptor only.

`check_resources(report, target)` is the backstop after llc: usage above the
descriptor's limits is a `ResourceError` with the numbers.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from tilemlir.backends.amdgpu.toolchain import ToolchainError, parse_amdhsa_metadata, run_tool
from tilemlir.backends.report_schema import kernel_entry, module_report
from tilemlir.diagnostics import UserError
from tilemlir.passes.shared_memory import waves_by_lds
from tilemlir.targets.model import Target, is_stated, is_unknown


class ResourceError(UserError):
    """A kernel needs more than the target has."""


# --------------------------------------------------------------------------
# Per-kernel usage from the ISA
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelUsage:
    name: str
    vgpr: int
    agpr: int
    sgpr: int
    scratch_bytes: int
    vgpr_spills: int
    sgpr_spills: int
    lds_bytes: int
    workgroup_size: int
    occupancy_llc: int | None


def function_sections(isa: str) -> dict[str, str]:
    """Each function's text, from its `.type NAME,@function` to the next one
    (so llc's "; Kernel info:" comment block after the body is included)."""
    marks = list(re.finditer(r"^\s*\.type\s+([\w.$]+),\s*@function", isa, flags=re.MULTILINE))
    sections = {}
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(isa)
        sections[mark.group(1)] = isa[mark.start():end]
    return sections


def _set_symbol(section: str, kernel: str, symbol: str) -> int | None:
    match = re.search(
        rf"^\s*\.set\s+{re.escape(kernel)}\.{symbol},\s*(\d+)\s*$", section, flags=re.MULTILINE
    )
    return int(match.group(1)) if match else None


def kernel_usage(isa: str) -> list[KernelUsage]:
    """The kernels of an llc-produced .s and what each uses."""
    metadata = parse_amdhsa_metadata(isa)
    sections = function_sections(isa)
    found = []
    for entry in metadata.get("amdhsa.kernels") or []:
        name = entry[".name"]
        section = sections.get(name, "")
        agpr = int(entry.get(".agpr_count", 0))
        # .vgpr_count is the unified count (architected aligned, plus AGPRs);
        # the architected count alone is llc's num_vgpr symbol.
        vgpr = _set_symbol(section, name, "num_vgpr")
        if vgpr is None:
            vgpr = int(entry.get(".vgpr_count", 0)) - agpr
        required = entry.get(".reqd_workgroup_size")
        if isinstance(required, list) and required:
            workgroup_size = math.prod(int(v) for v in required)
        else:
            workgroup_size = int(entry.get(".max_flat_workgroup_size", 0))
        occupancy = re.search(r"^; Occupancy: (\d+)", section, flags=re.MULTILINE)
        found.append(
            KernelUsage(
                name=name,
                vgpr=vgpr,
                agpr=agpr,
                sgpr=int(entry.get(".sgpr_count", 0)),
                scratch_bytes=int(entry.get(".private_segment_fixed_size", 0)),
                vgpr_spills=int(entry.get(".vgpr_spill_count", 0)),
                sgpr_spills=int(entry.get(".sgpr_spill_count", 0)),
                lds_bytes=int(entry.get(".group_segment_fixed_size", 0)),
                workgroup_size=workgroup_size,
                occupancy_llc=int(occupancy.group(1)) if occupancy else None,
            )
        )
    return found


# --------------------------------------------------------------------------
# Occupancy
# --------------------------------------------------------------------------


def unified_vgprs(usage: KernelUsage, target: Target) -> int:
    """Registers per lane one wave takes from the unified file (gfx90a+): the
    AGPR block starts at the architected count rounded up to the accum_offset
    granule. Source: LLVM AMDGPU getTotalNumVGPRs; the granule is the descriptor's."""
    if usage.agpr == 0:
        return usage.vgpr
    granule = target.family_facts.acc_offset_granule
    granule = granule if is_stated(granule) else 1
    return _round_up(usage.vgpr, granule) + usage.agpr


def _round_up(value: int, granule: int) -> int:
    return -(-value // granule) * granule


def occupancy(usage: KernelUsage, target: Target) -> tuple[int | None, dict[str, int | None]]:
    """Waves per SIMD, and the bound each resource sets (None where the
    descriptor leaves a fact unknown; "lds" only when the kernel uses LDS).

        waves = min(max_waves_per_simd, by VGPRs, by LDS)
        by VGPRs = floor(file / round_up(unified VGPRs, vgpr_alloc_granule))
        by LDS   = ceil(floor(shared_bytes_per_cu / lds_bytes) * waves_per_workgroup / simds_per_cu)
        waves_per_workgroup = ceil(workgroup_size / wave_size)

    The file is `file_per_lane` (the SIMD's register file per lane, which RDNA's
    waves share: 1536 wave32 registers on gfx1100 against 256 one wave may
    address), else `vgprs_per_lane`, which is the per-SIMD file on CDNA (512
    KiB of VGPRs per CU = 4 SIMDs x 512 registers x 64 lanes x 4 B, AMD's GPU
    specs table). The LDS bound spreads a CU's resident waves over its
    SIMDs rounding up, as LLVM's getOccupancyWithWorkGroupSizes does. Not
    modelled: the SGPR bound (on gfx9 it only bites above 100 SGPRs, LLVM
    getOccupancyWithNumSGPRs) and the 16-workgroups-per-CU barrier limit; llc's
    own figure is reported next to ours as `occupancy_llc`.
    """
    compute, registers = target.compute, target.registers
    limits: dict[str, int | None] = {"waves": None, "vgpr": None}
    if not is_unknown(compute.max_waves_per_simd):
        limits["waves"] = compute.max_waves_per_simd
    file = registers.vgprs_per_lane if is_unknown(registers.file_per_lane) else registers.file_per_lane
    if not (is_unknown(file) or is_unknown(registers.vgpr_alloc_granule)):
        allocated = _round_up(max(unified_vgprs(usage, target), 1), registers.vgpr_alloc_granule)
        limits["vgpr"] = file // allocated
    if usage.lds_bytes:
        limits["lds"] = waves_by_lds(usage.lds_bytes, usage.workgroup_size, target)
    if None in limits.values():
        return None, limits
    return min(limits.values()), limits


# --------------------------------------------------------------------------
# Instructions
# --------------------------------------------------------------------------

_INSTRUCTION = re.compile(r"^\s+([a-z_][a-z0-9_]*)\b")
_LABEL = re.compile(r"^([.\w$]+):")
_BRANCH = re.compile(r"^\s+s_(?:cbranch_\w+|branch)\s+([.\w$]+)")
_MATRIX = re.compile(r"^v_s?(?:mfma|wmma)")


def _mnemonics(lines: list[str]) -> list[str | None]:
    """The mnemonic of each line (None for labels, directives, comments)."""
    out = []
    for line in lines:
        match = _INSTRUCTION.match(line)
        out.append(match.group(1) if match and not line.lstrip().startswith(".") else None)
    return out


def main_loop(lines: list[str]) -> tuple[int, int] | None:
    """The line span [first, last] of the kernel's main loop, or None.

    Heuristic: every branch to a label above it closes a loop spanning from
    that label to the branch. Of the loops containing matrix instructions,
    the innermost (containing no other such loop) wins; of several innermost
    ones, the one with the most matrix instructions. It assumes llc lays a
    loop's blocks out contiguously, which it does for the single-entry loops
    our lowering produces."""
    labels = {}
    for index, line in enumerate(lines):
        match = _LABEL.match(line)
        if match:
            labels[match.group(1)] = index
    mnemonics = _mnemonics(lines)
    loops = []
    for index, line in enumerate(lines):
        match = _BRANCH.match(line)
        if match and labels.get(match.group(1), index + 1) <= index:
            start = labels[match.group(1)]
            count = sum(1 for m in mnemonics[start:index + 1] if m and _MATRIX.match(m))
            if count:
                loops.append((start, index, count))
    innermost = [
        loop for loop in loops
        if not any(o is not loop and loop[0] <= o[0] and o[1] <= loop[1] for o in loops)
    ]
    if not innermost:
        return None
    start, end, _ = max(innermost, key=lambda loop: loop[2])
    return start, end


def matrix_instructions(section: str) -> dict[str, dict[str, int]]:
    """MFMA name -> {"main_loop": n, "total": n} for one function's ISA."""
    lines = section.splitlines()
    mnemonics = _mnemonics(lines)
    span = main_loop(lines)
    counts: dict[str, dict[str, int]] = {}
    for index, mnemonic in enumerate(mnemonics):
        if not mnemonic or not _MATRIX.match(mnemonic):
            continue
        entry = counts.setdefault(mnemonic, {"main_loop": 0, "total": 0})
        entry["total"] += 1
        if span and span[0] <= index <= span[1]:
            entry["main_loop"] += 1
    return dict(sorted(counts.items()))


def main_loop_instructions(section: str) -> list[str]:
    """The instructions of one function's main loop (see `main_loop`), one per
    line, without labels, directives or comments; [] when there is no main loop."""
    lines = section.splitlines()
    span = main_loop(lines)
    if span is None:
        return []
    mnemonics = _mnemonics(lines)
    return [
        "\t" + lines[index].split(";", 1)[0].strip()
        for index in range(span[0], span[1] + 1)
        if mnemonics[index]
    ]


# --------------------------------------------------------------------------
# MFMA busy ratio (llvm-mca)
# --------------------------------------------------------------------------

# llvm-mca's cycles on AMDGPU are the scheduling model's: one per issue of a
# wave64 instruction, i.e. a pass of 4 clocks; SISchedule.td holds an MFMA's
# XDL pipe for its passes (Write8PassMAI ...), the descriptor's `cycles` are
# passes x 4. test_report_mca checks every descriptor row against llvm-mca-22.
CLOCKS_PER_MCA_CYCLE = 4


def clocks_per_mca_cycle(target: Target) -> int:
    """Clocks of one llvm-mca cycle on `target`: a wave64 instruction's pass
    on CDNA's 16-lane SIMDs (CLOCKS_PER_MCA_CYCLE), a wave32 instruction's
    single issue on RDNA's 32-lane SIMDs (1). llvm-mca-22 models RDNA's WMMAs
    as one-cycle VALU instructions; the WMMA shares the SIMD's VALU, so
    `matched_to_descriptor` repeats it for its descriptor cycles like an
    MFMA that llvm-mca holds for too few passes."""
    return CLOCKS_PER_MCA_CYCLE if target.compute.wave_size == 64 else 1
# Iterations simulated; the estimate is the difference between 2N and N
# iterations over N, so the pipeline's fill and drain cancel out. llvm-mca's
# in-order simulation of a loop settles into one period within a few
# iterations: N = 10, 20 and 50 gave the same clocks on each of 21 main loops
# (bench/amd_vs_triton.py's defaults and the torch backend's attention
# kernels on gfx90a, gfx942 and gfx950; 2026-12-06); 16 keeps a margin at a
# third of 50's time (the isa stage's schedule trial runs it on every GEMM).
MCA_ITERATIONS = 16

_MCA_TOTAL = re.compile(r"^Total Cycles:\s+(\d+)", flags=re.MULTILINE)
# Instruction Info rows: "[#uOps] [Latency] [RThroughput] ... mnemonic operands".
_MCA_INFO_ROW = re.compile(r"^\s*\d+\s+\d+\s+([\d.]+)\s.*?\b(v_s?(?:mfma|wmma)\w*)\b")


# llvm-mca takes well under a second on any loop here; past this it is hung.
MCA_TIMEOUT_SECONDS = 20

# VALU adds and subtracts with a carry out (and in): D, carry-out, X, Y[, carry-in]
# (GFX9 v_addc_co_u32, GFX10+ v_add_co_ci_u32 for the carry-in forms).
_CARRY_OP = re.compile(r"^\s*v_(?:add|sub|subrev|addc|subb|subbrev)_co(?:_ci)?_u32(_e32|_e64)?"
                       r"\s+([^,]+),\s*[^,]+,\s*([^,]+),\s*([^,\s]+)")


def without_carries(instructions: list[str]) -> list[str]:
    """The loop as llvm-mca-22 can run it: it never finishes when two
    carry-writing VALU ops follow each other while an MFMA waits on an LDS read
    (a reduced case is in test_report_mca). Each carry op is fed as a plain
    v_add_u32 of the same destination and sources: the same VALU issue, minus
    the carry dependency, which in-order issue already serialises. Without an
    encoding suffix the assembler picks the form its operands need (an SGPR
    second source takes VOP3), as it did for the carry op (GFX10+ spells the
    plain add v_add_nc_u32, which takes v_add_u32 as its alias)."""
    out = []
    for line in instructions:
        match = _CARRY_OP.match(line)
        if match:
            encoding, dest, first, second = match.groups()
            line = f"\tv_add_u32{encoding or ''} {dest.strip()}, {first.strip()}, {second.strip()}"
        out.append(line)
    return out


def _llvm_mca(instructions: list[str], chip: str, iterations: int, info: bool = False) -> str:
    """What this module reads of llvm-mca's output for `instructions`: its
    "Total Cycles" line, or with `info` its MFMA/WMMA instruction-info rows.
    A failure raises ToolchainError, also when it is remembered."""
    output, error = _llvm_mca_lines("\n".join(without_carries(instructions)) + "\n", chip, iterations, info)
    if error is not None:
        raise ToolchainError(error)
    return output


@functools.lru_cache(maxsize=256)
def _llvm_mca_lines(text: str, chip: str, iterations: int, info: bool) -> tuple[str, str | None]:
    """(the lines `_llvm_mca` returns, None) or ("", the error), remembered
    by everything llvm-mca reads: the isa stage's schedule trial and the
    report ask it of the same loop, and a loop that hangs llvm-mca costs its
    timeout once per process."""
    args = ["-mtriple=amdgcn-amd-amdhsa", f"-mcpu={chip}", f"-iterations={iterations}",
            "-resource-pressure=false", f"-instruction-info={'true' if info else 'false'}"]
    try:
        output = run_tool("llvm-mca", args, text.encode(), timeout=MCA_TIMEOUT_SECONDS).decode()
    except ToolchainError as error:
        return "", str(error)
    wanted = _MCA_INFO_ROW.match if info else _MCA_TOTAL.match
    return "\n".join(line for line in output.splitlines() if wanted(line)), None


def _total_cycles(mca_output: str) -> int:
    match = _MCA_TOTAL.search(mca_output)
    if match is None:
        raise ToolchainError("llvm-mca printed no 'Total Cycles' line")
    return int(match.group(1))


def mfma_cycles(mnemonic: str, target: Target) -> int | None:
    """The descriptor's cycles for an MFMA mnemonic (None when the chip's table
    has no such row or leaves its cycles unknown). Rows sharing a mnemonic
    (gfx950's f8f6f4 for each operand type) take the largest."""
    known = [row.cycles for row in target.mma if row.name == mnemonic and not is_unknown(row.cycles)]
    return max(known) if known else None


def matched_to_descriptor(instructions: list[str], target: Target) -> list[str]:
    """`instructions` with every MFMA that llvm-mca holds for fewer passes than
    the descriptor says repeated until the two agree (gfx950's f8f6f4 with fp8
    operands: llvm-mca-22 models 4/8 passes, the chip takes 8/16, CDNA4's
    fp8 peak). A repeat has the same operands, so it adds only pipe time.
    RDNA's WMMAs, which llvm-mca-22 models as one-cycle VALU instructions, are
    followed by v_nops up to their cycles instead."""
    info = _llvm_mca(instructions, target.processor, 1, info=True)
    held = [(match.group(2), float(match.group(1)))
            for match in map(_MCA_INFO_ROW.match, info.splitlines()) if match]
    out, next_mfma = [], iter(held)
    for line in instructions:
        mnemonic = line.split()[0]
        copies = 1
        if _MATRIX.match(mnemonic):
            modelled, passes = next(next_mfma, (mnemonic, 0.0))
            cycles = mfma_cycles(mnemonic, target)
            if modelled == mnemonic and passes > 0 and cycles:
                copies = max(1, round(cycles / (clocks_per_mca_cycle(target) * passes)))
        if mnemonic.startswith("v_wmma"):
            # A WMMA holds the SIMD's VALU for its cycles: one issue, then
            # v_nops, which occupy the VALU and depend on nothing (a repeated
            # WMMA would chain on its own accumulator at VALU latency).
            out.extend([line] + ["\tv_nop"] * (copies - 1))
        else:
            out.extend([line] * copies)
    return out


def mca_cycles_per_iteration(instructions: list[str], chip: str,
                             iterations: int = MCA_ITERATIONS) -> float:
    """llvm-mca's steady-state cycles (its own unit) for one pass through
    `instructions`, run as a loop: (cycles of 2N iterations - cycles of N) / N."""
    once = _total_cycles(_llvm_mca(instructions, chip, iterations))
    twice = _total_cycles(_llvm_mca(instructions, chip, 2 * iterations))
    return (twice - once) / iterations


def main_loop_cycles(section: str, target: Target) -> dict | None:
    """{"mfma": MFMA clocks of one main-loop iteration from the descriptor,
    "llvm_mca": llvm-mca's clocks for that iteration}, or None when the
    function has no main loop or an MFMA of it has no cycles in the descriptor."""
    instructions = main_loop_instructions(section)
    mfmas = [line.split()[0] for line in instructions if _MATRIX.match(line.split()[0])]
    cycles = [mfma_cycles(name, target) for name in mfmas]
    if not mfmas or None in cycles:
        return None
    estimate = mca_cycles_per_iteration(matched_to_descriptor(instructions, target), target.processor)
    return {"mfma": sum(cycles), "llvm_mca": round(estimate * clocks_per_mca_cycle(target), 1)}


def mfma_busy_ratio(section: str, target: Target) -> float | None:
    """The fraction of one main-loop iteration the matrix core is busy:

        sum over the loop's MFMAs of the descriptor's cycles
        / (clocks_per_mca_cycle x llvm-mca-22 -mcpu=<chip> cycles per iteration)

    The loop is `main_loop`'s span (label to back branch), fed to llvm-mca as
    straight-line code: every block of it counted once per iteration, branches
    as plain instructions, labels, directives and comments dropped. llvm-mca
    runs it as a loop of N and of 2N iterations; the difference over N is one
    steady-state iteration. Where llvm-mca's model of an MFMA is shorter than
    the descriptor's, the MFMA is repeated (`matched_to_descriptor`) so both
    sides of the ratio count the same matrix-core time. Used alike for any
    compiler's ISA (bench/amd_vs_triton.py). None without a main loop."""
    cycles = main_loop_cycles(section, target)
    if cycles is None or cycles["llvm_mca"] <= 0:
        return None
    return round(cycles["mfma"] / cycles["llvm_mca"], 3)


_BYTE_WIDTHS = {"dword": 32, "dwordx2": 64, "dwordx3": 96, "dwordx4": 128,
                "byte": 8, "ubyte": 8, "sbyte": 8, "short": 16, "ushort": 16, "sshort": 16}
_WIDTH = r"(dwordx[234]|dword|[us]?byte|[us]?short|[biu]\d+)"
ACCESS_KINDS = {
    "global_load_bits": re.compile(rf"^(?:global|buffer|flat)_load_(?:lds_)?{_WIDTH}"),
    "global_store_bits": re.compile(rf"^(?:global|buffer|flat)_store_{_WIDTH}"),
    "lds_read_bits": re.compile(rf"^ds_(?:read|load)(?:2st64|2)?_{_WIDTH}"),
    "lds_write_bits": re.compile(rf"^ds_(?:write|store)(?:2st64|2)?_{_WIDTH}"),
}


def _width_bits(suffix: str) -> int:
    return _BYTE_WIDTHS.get(suffix) or int(suffix[1:])


def access_widths(section: str) -> dict[str, int]:
    """The widest single access of each kind, in bits (0 when none)."""
    widths = dict.fromkeys(ACCESS_KINDS, 0)
    for mnemonic in _mnemonics(section.splitlines()):
        if not mnemonic:
            continue
        for kind, pattern in ACCESS_KINDS.items():
            match = pattern.match(mnemonic)
            if match:
                widths[kind] = max(widths[kind], _width_bits(match.group(1)))
    return widths


# --------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------


def _busy(section: str, target: Target) -> tuple[float | None, dict | None]:
    """mfma_busy_ratio and main_loop_cycles; an llvm-mca failure leaves the
    ratio out (null) and says why, rather than failing the compile."""
    try:
        cycles = main_loop_cycles(section, target)
    except ToolchainError as error:
        return None, {"llvm_mca_error": str(error).splitlines()[0]}
    if not cycles or cycles["llvm_mca"] <= 0:
        return None, cycles
    return round(cycles["mfma"] / cycles["llvm_mca"], 3), cycles


def kernel_report(usage: KernelUsage, section: str, target: Target, mca: bool = True) -> dict:
    """One kernel's entry of the report (report_schema.kernel_entry): the
    common fields, and the amdgpu section (the module docstring lists it)."""
    waves, limits = occupancy(usage, target)
    busy, cycles = _busy(section, target) if mca else (None, None)
    family_fields = {
        "vgpr": usage.vgpr,
        "agpr": usage.agpr,
        "sgpr": usage.sgpr,
        "vgpr_spills": usage.vgpr_spills,
        "sgpr_spills": usage.sgpr_spills,
        "occupancy_limits": limits,
        "occupancy_llc": usage.occupancy_llc,
        "mfma_busy_ratio": busy,
        "main_loop_cycles": cycles,
        **access_widths(section),
        "lds_bank_conflicts_per_iteration": None,  # the isa stage's, from the lowering's bank model
        "schedule": None,  # the isa stage's, where it tried llc's two schedules (schedule.py)
    }
    return kernel_entry(usage.name, target.family, threads=usage.workgroup_size,
                        registers=unified_vgprs(usage, target), shared_bytes=usage.lds_bytes,
                        scratch_bytes=usage.scratch_bytes, spills=usage.vgpr_spills + usage.sgpr_spills,
                        occupancy=waves, matrix_instructions=matrix_instructions(section),
                        family_fields=family_fields)


def build_report(isa: str, target: Target, *, mca: bool = True) -> dict:
    """The --report JSON (docs/report.md) for an llc-produced .s, one entry
    per kernel. `mca=False` skips llvm-mca (mfma_busy_ratio and
    main_loop_cycles null)."""
    sections = function_sections(isa)
    kernels = [kernel_report(u, sections.get(u.name, ""), target, mca) for u in kernel_usage(isa)]
    return module_report(target, kernels)


# --------------------------------------------------------------------------
# The backstop
# --------------------------------------------------------------------------


def _excess(kernel: dict, target: Target, allow_spills: bool) -> list[str]:
    name, chip, own = kernel["name"], target.name, kernel[target.family]
    registers, memory, compute = target.registers, target.memory, target.compute
    # llc keeps registers within the chip by spilling, so those rows only catch
    # a descriptor that disagrees with llc; LDS and workgroup size are real limits.
    checks = [
        (kernel["shared_bytes"], memory.shared_bytes_per_workgroup, "bytes of LDS"),
        (own["vgpr"], registers.arch_vgprs_max, "VGPRs"),
        (own["agpr"], registers.acc_vgprs_max, "AGPRs"),
        (kernel["registers"], registers.vgprs_per_lane, "VGPRs and AGPRs together"),
        (kernel["threads"], compute.max_threads_per_workgroup, "threads per workgroup"),
    ]
    problems = [
        f"kernel '{name}' needs {used} {what}, {chip} " + (f"allows {limit}" if limit else "has none")
        for used, limit, what in checks
        if not is_unknown(limit) and used > (limit or 0)
    ]
    if kernel["spills"] and not allow_spills:
        problems.append(
            f"kernel '{name}' spills {own['vgpr_spills']} VGPRs and {own['sgpr_spills']} SGPRs "
            f"to scratch ({kernel['scratch_bytes']} bytes per lane); reduce the tile sizes, or pass --allow-spills"
        )
    return problems


def check_resources(report: dict, target: Target, *, allow_spills: bool = False) -> None:
    """Raises ResourceError naming every limit a kernel of `report` exceeds,
    e.g. "kernel 'k' needs 98304 bytes of LDS, gfx942 allows 65536". Spilling
    registers to scratch is one of them unless `allow_spills`."""
    problems = [p for kernel in report["kernels"] for p in _excess(kernel, target, allow_spills)]
    if problems:
        raise ResourceError("\n".join(problems))
