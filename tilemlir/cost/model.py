"""The cost model: predicted time of a GEMM kernel configuration on a target.

`predict(problem, config, target)` estimates how long one launch takes, from
the target's descriptor (`tilemlir.cost.facts`, unknown facts assumed) and the
kernel's static figures (`kernel_figures`). It is a roofline per compute unit
with wave quantisation, in clocks of the descriptor's `compute.clock_mhz`:

Figures of one workgroup (block bm x bn x bk, `waves` waves, `stages` buffers):

    workgroups   W = ceil(M/bm) * ceil(N/bn) * split_k
    iterations   I = ceil(ceil(K/split_k) / bk)
    matrix       C = 2*bm*bn*bk / (waves * rate)       clocks of one wave's matrix
                 instructions per iteration; rate = FLOP per SIMD-clock of the
                 instruction (its `cycles`, else the published peak, else
                 assumed: tilemlir.cost.facts)
    global       G = bm*bk*|A| + bk*bn*|B|             bytes per iteration, as stored
    shared       S = stages * (bm*bk + bk*bn) elements LDS the workgroup holds
    LDS traffic  L = the tiles written, plus each wave's (each instruction
                 group's) panels of A and B read          bytes per iteration
    registers    the accumulator + one iteration's A/B panels + the staged tile
                 (where copies pass through registers) + the family's address
                 registers (Backend.address_registers), per lane

Occupancy: workgroups resident per CU, r = min(waves: floor(max_waves_per_simd
* simds / waves), LDS: floor(shared_bytes_per_cu / S), registers:
floor(register file per SIMD lane / registers) * simds / waves). A K loop of
the family's producer instructions (Backend.producer_prefix, 2 stages or
more: NVIDIA's warp-specialized wgmma) adds the producer's waves, at their own
register count (Backend.producer_registers), the consumers' rounded up to 8. A tuner that compiled the
kernel passes its own r (`resident`: what the compiled registers and LDS allow).

Wave quantisation: the busiest CU runs q = ceil(W / CUs) workgroups, in rounds
of r at once. A round of b workgroups takes

    I * T + fill + epilogue, with, per iteration,
    T = max(matrix: ceil(b*waves / simds) * C + sync, the SIMDs' matrix units
            (sync: a producer-fed loop's per-iteration synchronization,
            Backend.producer_loop_sync_clocks),
            shared: b * L / (banks * bank bytes),      the CU's LDS bandwidth
            memory: b * G / (bandwidth / active CUs),  the CU's share of device memory
            chain)                                      one workgroup's own iteration
    without a measured busy ratio, a wave's C is C + the family's issue
    clocks (Backend.loop_issue_clocks: its loads, LDS accesses, waits and
    barrier, measured on its compiled loops; by the matrix instruction's
    rows where measured apart, Backend.loop_issue_clocks_by_rows: a 16-row
    instruction's operands are read for less matrix work than a 32-row
    one's), in the matrix term too (the waves sharing a SIMD issue theirs
    one after another) and in the chain;
    chain = max(C / busy, L / lds, G / share, latency / in flight) with
            stages >= 2 buffers, max(C / busy + L / lds, G / share,
            latency) with one: its global loads still overlap the gemm
            (tile-pipeline prefetches through registers) but its LDS stores
            wait for every wave's reads; where the backend pipelines no
            loop of one stage (nvidia), C / busy + L / lds + latency;
    in flight = max(1, stages - 1) tiles a workgroup has requested and not
            yet used: a load issued that many iterations ahead hides that
            many iterations' worth of latency; where the L2's bandwidth is
            known (memory.l2_bandwidth_gbps), the latency a tile waits out
            includes its transfer, b * G bytes at one CU's share of that
            bandwidth;
    fill = max(1, stages - 1) tiles loaded before the loop plus one latency
    (and one tile's transfer, where the L2's bandwidth is known), in the
    first round only where a producer feeds the loop (it loads the next
    tile's slots while the consumers finish the last),
    epilogue = the C tile written (and read when C accumulates) at the memory
    share; active CUs = min(CUs, W), `busy` = the llvm-mca busy ratio when
    given, else 1.

Latency under load: the launch is costed first at the idle latency
(`memory.latency_clocks`), giving a time t; the device memory is then busy a
fraction u = min(1, D / (t * bandwidth)) of it, where D is what the launch
moves through device memory (A, B and C once when together they fit in the L2,
`memory.l2_mib`: the other workgroups' re-reads hit it; else every
workgroup's tiles as requested); the launch is costed again at latency
idle + u * (loaded - idle) (`memory.loaded_latency_clocks`: measured on the
H200 while the other SMs stream device memory, 3x the idle latency). This is
what makes deep pipelines win on large GEMMs (measured: bench/results/
tune-model-h200.md), while a small GEMM whose operands sit in the L2 is
still spread over the chip.

Not modelled (no descriptor fact gives them): the L2's bandwidth as a bound
of its own (it only lengthens a tile's arrival, above) and the latency of L2
hits under load (device-memory bandwidth is the bound, so operands re-read by
many workgroups count each time: an upper bound), launch
overhead, barriers, operand-load instructions beside the matrix ones
(mma.sync's ldmatrix) other than as the one measured figure per chip of
Backend.loop_issue_clocks, and register allocation granules. That figure
holds waits and the barrier too, which another wave of the SIMD could fill;
the matrix term charges it to every wave all the same, so that the model
never counts on a second wave per SIMD to hide what one wave's loop does
not (the busy ratio per wave of bench/amd_vs_triton.py, which llvm-mca
measures for one wave).

split_k > 1 divides K among workgroups whose partial sums are added into C
atomically (C is in the accumulator type: read and written once per
workgroup); where C starts at zero, the launch is preceded by clearing C
(M*N elements written at the device's bandwidth, plus one latency).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tilemlir.cost.facts import Assumption, ModelFacts, model_facts
from tilemlir.targets.model import ELEMENT_BITS, MmaInstr, Target


def element_bytes(type_name: str) -> int:
    """Bytes of one element of an operand type (MLIR spelling or xf32/tf32)."""
    return max(1, ELEMENT_BITS.get(type_name, 32) // 8)


@dataclass(frozen=True)
class GemmShape:
    """M, N, K of a GEMM and its operand types (MLIR spellings); the tile
    passes read one off a tile.gemm (`passes.gemm_facts.gemm_shape`)."""

    m: int
    n: int
    k: int
    a: str
    b: str
    c: str
    accum: str
    transpose_a: bool = False
    transpose_b: bool = False


@dataclass(frozen=True)
class GemmProblem(GemmShape):
    """What the model costs: C (m x n) = A (m x k) * B (k x n), plus C when
    `reads_c`. `a`, `b`, `c` are the types in global memory;
    `compute_a`/`compute_b` the types the matrix unit reads, which the shared
    tiles hold (default: as stored; f16 where tile-legalize-precision computes
    fp8 exactly in f16)."""

    reads_c: bool = False
    compute_a: str = ""
    compute_b: str = ""

    @property
    def shared_a(self) -> str:
        return self.compute_a or self.a

    @property
    def shared_b(self) -> str:
        return self.compute_b or self.b

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k} {self.a} x {self.b} -> {self.c} (sum in {self.accum})"


@dataclass(frozen=True)
class KernelConfig:
    """One way to run a GEMM: the block tile, threads per workgroup, pipeline
    stages, the matrix instruction and its wave split (`warp_grid`, waves along
    M and N; `waves_per_instruction` > 1 for instructions a group of waves
    issues together, split along M), how many workgroups share K, and the
    instruction preference tile-select-mma needs to choose it."""

    block: tuple[int, int, int]
    threads: int
    stages: int
    instruction: MmaInstr
    warp_grid: tuple[int, int]
    waves_per_instruction: int = 1
    split_k: int = 1
    # tile-select-mma's preference that gives this instruction ("wgmma": a
    # family it takes only when preferred); empty for its own choice.
    prefer: str = ""

    def describe(self, wave_size: int) -> str:
        bm, bn, bk = self.block
        wm, wn = self.warp_grid
        waves = self.threads // wave_size
        return (f"block {bm}x{bn}x{bk}, {self.threads} threads ({waves} wave{'s' if waves > 1 else ''} as "
                f"{wm}x{wn}), {self.stages} stage{'s' if self.stages > 1 else ''}, {self.instruction.name}, "
                f"split-K {self.split_k}")


@dataclass(frozen=True)
class KernelFigures:
    """The static figures of one configuration (see the module docstring)."""

    workgroups: int
    iterations: int  # K-loop iterations of one workgroup
    waves: int
    matrix_clocks: float  # one wave's matrix instructions per iteration
    matrix_instructions: float  # per wave per iteration
    global_bytes: int  # A and B tiles per iteration, as stored
    shared_bytes: int  # LDS held: every stage's A and B tiles (no padding)
    shared_traffic: int  # LDS bytes written and read per iteration
    epilogue_bytes: int  # C tile written (and read), or partial sums, once per workgroup
    registers: int  # per lane, estimated
    accumulator_registers: int  # per lane
    # A producer warpgroup's waves and their registers per lane
    # (Backend.producer_prefix: NVIDIA's warp-specialized wgmma loops); 0: none.
    producer_waves: int = 0
    producer_registers: int = 0
    # Per lane, one instruction's accumulator and the address registers: what
    # a warp-specialized kernel's count at launch must hold (0: no producer).
    instruction_registers: int = 0
    # Bytes of one K step's row of the narrower operand as stored (block K x
    # its shared element size): what an XOR swizzle of its rows can spread.
    k_row_bytes: int = 0


def kernel_figures(problem: GemmProblem, config: KernelConfig, facts: ModelFacts) -> KernelFigures:
    """The figures `predict` reads, from the problem and configuration alone."""
    bm, bn, bk = config.block
    waves = config.threads // facts.wave_size
    wm, wn = config.warp_grid
    group = config.waves_per_instruction
    rate, _ = facts.instruction_rate(config.instruction)
    a, b = element_bytes(problem.a), element_bytes(problem.b)
    sa, sb = element_bytes(problem.shared_a), element_bytes(problem.shared_b)
    tiles = math.ceil(problem.m / bm) * math.ceil(problem.n / bn)
    iterations = math.ceil(math.ceil(problem.k / config.split_k) / bk)
    wave_flops = 2 * bm * bn * bk / waves
    tile_writes = bm * bk * sa + bk * bn * sb
    # Every wave reads its rows of A; B is read once per instruction group
    # (a group's waves split M and share the whole of B's columns). A band of
    # several instructions reads B once per instruction; counting that ranked
    # the H200's measured candidates worse (bench/tune_model.py --analyse:
    # the 4096^3 default fell from 0.86 to 0.67 of the best), so the model
    # keeps one read per group until its other terms describe the band.
    panel_a = (bm // wm) * bk * sa
    panel_b = bk * (bn // wn) * sb
    reads = waves * panel_a + (waves // group) * panel_b
    if config.split_k == 1:
        epilogue = bm * bn * element_bytes(problem.c) * (2 if problem.reads_c else 1)
    else:
        epilogue = 2 * bm * bn * element_bytes(problem.accum)
    accumulator = math.ceil(bm * bn * element_bytes(problem.accum) / (4 * config.threads))
    # 8-bit gemms of the family's partial-sum instructions hold a second
    # accumulator (Backend.partial_sums_prefix: NVIDIA's wgmma).
    partial = facts.partial_sums_prefix and config.instruction.name.startswith(facts.partial_sums_prefix)
    copies = 2 if partial and sa == 1 else 1
    producer = (facts.producer_prefix and config.instruction.name.startswith(facts.producer_prefix)
                and config.stages >= 2)
    operands = math.ceil(facts.operand_copies * (panel_a + panel_b) / (4 * facts.wave_size)) if group == 1 else 0
    staged = math.ceil((bm * bk * a + bk * bn * b) / (4 * config.threads)) if facts.copies_through_registers else 0
    return KernelFigures(
        workgroups=tiles * config.split_k,
        iterations=iterations,
        waves=waves,
        matrix_clocks=wave_flops / rate,
        matrix_instructions=wave_flops * group / config.instruction.flops,
        global_bytes=bm * bk * a + bk * bn * b,
        shared_bytes=config.stages * tile_writes,
        shared_traffic=tile_writes + reads,
        epilogue_bytes=epilogue,
        registers=accumulator * copies + operands + staged + facts.address_registers,
        accumulator_registers=accumulator,
        producer_waves=facts.producer_threads // facts.wave_size if producer else 0,
        producer_registers=facts.producer_registers if producer else 0,
        instruction_registers=(math.ceil(config.instruction.m * config.instruction.n * element_bytes(problem.accum)
                                         / (4 * facts.wave_size * group)) + facts.address_registers
                               if producer else 0),
        k_row_bytes=bk * min(sa, sb),
    )


@dataclass(frozen=True)
class Prediction:
    """The model's estimate for one configuration, with its reasons."""

    seconds: float
    workgroups: int
    compute_units: int  # of the logical device
    resident: int  # workgroups one CU can hold at once
    occupancy_limits: tuple[tuple[str, int], ...]
    rounds: int  # rounds of `resident` workgroups on the busiest CU
    iteration_clocks: float  # one iteration of a full round
    bound: str  # what sets the iteration time: matrix, shared memory, device memory, ...
    figures: KernelFigures
    assumed: tuple[Assumption, ...] = field(default=())
    # The kernel's own warps load their matrix operands (ldmatrix and address
    # work the model does not cost), on a target whose family has a producer
    # warpgroup for some instructions (Backend.producer_prefix), whichever
    # instruction was asked for; a ranking weighs such predictions
    # (passes/tiling.py: rank_key). The model assumes the lowering's
    # defaults: tile-lower-to-gpu{warp-specialize=true}.
    own_operand_loads: bool = False

    def describe(self) -> str:
        return (f"{self.workgroups} workgroups on {self.compute_units} CUs, up to {self.resident} at once "
                f"per CU, {self.rounds} round{'s' if self.rounds > 1 else ''}; predicted "
                f"{format_seconds(self.seconds)} ({self.bound}-bound)")


def format_seconds(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} us"


class DoesNotFit(ValueError):
    """A configuration no CU can hold even once."""


def occupancy(figures: KernelFigures, facts: ModelFacts) -> dict[str, int]:
    """Workgroups one CU holds at once, as bounded by each resource."""
    waves, simds = figures.waves, facts.simds_per_cu
    if figures.producer_waves:
        # The producer's waves keep their own (smaller) register count, the
        # consumers' counts are whole allocation units of 8 (setmaxnreg).
        # Every thread's count at launch must also hold one instruction's
        # operands (ptxas checks each instruction against it, whatever
        # setmaxnreg raises later: backends/nvidia/warp_specialize.py).
        per_workgroup = waves * -(-figures.registers // 8) * 8 + figures.producer_waves * figures.producer_registers
        at_launch = (waves + figures.producer_waves) * -(-figures.instruction_registers // 8) * 8
        return {
            "waves": facts.max_waves_per_simd * simds // (waves + figures.producer_waves),
            "lds": facts.shared_bytes_per_cu // max(1, figures.shared_bytes),
            "registers": facts.register_file * simds // max(per_workgroup, at_launch),
        }
    return {
        "waves": facts.max_waves_per_simd * simds // waves,
        "lds": facts.shared_bytes_per_cu // max(1, figures.shared_bytes),
        "registers": facts.register_file // max(1, figures.registers) * simds // waves,
    }


def device_memory_bytes(problem: GemmProblem, figures: KernelFigures, facts: ModelFacts) -> float:
    """What one launch asks of the memory system, for its latency under load:
    A, B and C once when they fit in the L2 together, else every workgroup's
    tiles and C tile as requested, L2 hits included (measured on the H200:
    the latency of L2-resident data rises under load too, bench/results/
    tune-model-h200.md)."""
    footprint = (problem.m * problem.k * element_bytes(problem.a) + problem.k * problem.n * element_bytes(problem.b)
                 + problem.m * problem.n * element_bytes(problem.c) * (2 if problem.reads_c else 1))
    if footprint <= facts.l2_bytes:
        return footprint
    return figures.workgroups * (figures.iterations * figures.global_bytes + figures.epilogue_bytes)


def device_reach(problem: GemmProblem, config: KernelConfig, figures: KernelFigures, facts: ModelFacts,
                 resident: int) -> float:
    """The share of the A and B tiles workgroups request that device memory
    serves, the rest coming from the L2. When A and B fit in the L2 together,
    each byte comes once. Else the workgroups running at once, P = the CUs x
    `resident` consecutive ones in launch order (x, the fastest, walks N:
    tile-tiling's grid), cover ceil(P / blocks along N) block rows by
    min(P, blocks along N) block columns; per K step they read those rows'
    A tiles and those columns' B tiles from device memory once, and every
    other request of the same tiles hits the L2 (it holds the few K steps in
    flight many times over). Split-K slices (grid z, the slowest) read
    disjoint K ranges: a set larger than one slice's workgroups covers whole
    slices."""
    bm, bn, bk = config.block
    a_tile, b_tile = bm * bk * element_bytes(problem.a), bk * bn * element_bytes(problem.b)
    requested = figures.workgroups * figures.iterations * (a_tile + b_tile)
    operands = problem.m * problem.k * element_bytes(problem.a) + problem.k * problem.n * element_bytes(problem.b)
    if operands <= facts.l2_bytes:
        return min(1.0, operands / requested)
    blocks_n, blocks_m = math.ceil(problem.n / bn), math.ceil(problem.m / bm)
    running = max(1, min(figures.workgroups, facts.compute_units * resident))
    per_slice = blocks_m * blocks_n
    if running >= per_slice:
        unique = running / per_slice * (blocks_m * a_tile + blocks_n * b_tile)
    else:
        unique = min(blocks_m, math.ceil(running / blocks_n)) * a_tile + min(running, blocks_n) * b_tile
    return min(1.0, unique / (running * (a_tile + b_tile)))


def predict(problem: GemmProblem, config: KernelConfig, target: Target | ModelFacts, *,
            busy_ratio: float | None = None, resident: int | None = None) -> Prediction:
    """Predicted seconds of one launch of `config` on `target` (see the
    module docstring for the formula). `busy_ratio`: the fraction of one
    main-loop iteration the matrix unit is busy, as llvm-mca gives it
    (`tile-compile --report`'s amdgpu mfma_busy_ratio); without it a wave's iteration
    is its matrix instructions and the family's issue clocks for the chip and
    the instruction's rows (ModelFacts.issue_clocks: none where the family
    measured none). `resident`: the workgroups one CU holds at once as the
    compiled kernel's registers and shared memory allow
    (a tuner reads them off the compiled kernel); without it the estimate of
    `occupancy`. Raises DoesNotFit when a CU cannot hold one workgroup,
    ValueError for an empty problem or a zero extent."""
    if min(problem.m, problem.n, problem.k, *config.block, config.threads, config.stages, config.split_k) < 1:
        raise ValueError(f"the model costs non-empty problems and positive configurations, "
                         f"not {problem} in {config.block} blocks of {config.threads} threads")
    facts = target if isinstance(target, ModelFacts) else model_facts(target)
    figures = kernel_figures(problem, config, facts)
    limits = occupancy(figures, facts)
    if resident is not None:
        limits = {"compiled": resident}
    resident = min(limits.values())
    if resident < 1:
        worst = min(limits, key=limits.get)
        raise DoesNotFit(f"{config.describe(facts.wave_size)} does not fit a CU of {facts.target} "
                         f"(its {worst} bound is 0)")
    cus = facts.compute_units
    busiest = math.ceil(figures.workgroups / cus)
    rounds = [resident] * (busiest // resident) + ([busiest % resident] if busiest % resident else [])
    share = facts.memory_bytes_per_clock / min(cus, figures.workgroups)  # bytes per clock per CU
    # A wave's iteration: its matrix work over the measured busy ratio, or
    # without one, its matrix work and the family's measured issue clocks,
    # which the waves sharing a SIMD do not overlap.
    issue = 0 if busy_ratio else facts.issue_clocks(config.instruction)
    one_wave = figures.matrix_clocks / busy_ratio if busy_ratio else figures.matrix_clocks + issue
    lds = figures.shared_traffic / facts.shared_bytes_per_clock
    # Device memory serves the share `reach` of the tiles; the re-reads the L2
    # holds cost it nothing where the L2 is known to be faster than device
    # memory (memory.l2_bandwidth_gbps: on sm_90a at least 2x, measured), and
    # are charged to it as before where the L2's bandwidth is not known.
    reach = device_reach(problem, config, figures, facts, resident) \
        if facts.l2_bytes_per_second > facts.memory_bytes_per_second else 1.0
    memory = figures.global_bytes * reach / share
    idle, loaded = facts.memory_latency_clocks, facts.loaded_latency_clocks
    in_flight = max(1, config.stages - 1)
    # Where the L2's bandwidth is known, a tile arrives its latency plus its
    # bytes' transfer at one CU's share of it (a CU's own port: idle CUs do
    # not lend theirs) after it is requested: a
    # pipeline must hold that much in flight (measured on the H200 with
    # warp-specialized wgmma kernels, bench/results/gemm-defaults-h200.md:
    # 2 stages of 128x256x64 reach 0.61 of the 4-stage kernel's speed, which
    # the latency alone, 891 clocks under load against 1024 of matrix work,
    # does not explain; the 48 KiB at 40 B per clock do).
    l2_share = facts.l2_bytes_per_second / (facts.clock_mhz * 1e6) / cus
    transfer = figures.global_bytes / l2_share \
        if facts.l2_bytes_per_second > facts.memory_bytes_per_second else 0.0
    # A producer-fed loop's consumers synchronize once per iteration, and the
    # matrix units wait that long (Backend.producer_loop_sync_clocks).
    sync = facts.producer_loop_sync_clocks if figures.producer_waves else 0

    def iteration_terms(size: int, latency: float) -> dict[str, float]:
        terms = {
            "matrix": math.ceil(size * figures.waves / facts.simds_per_cu) * (figures.matrix_clocks + issue) + sync,
            "shared memory": size * lds,
            "device memory": size * memory,
        }
        # One workgroup's own iteration: with one buffer, its LDS stores
        # wait for the reads of the gemm (tile-pipeline, N = 1); its loads
        # wait out the latency the tiles in flight do not cover.
        arrival = latency + size * transfer  # a tile's, from its request
        if config.stages >= 2:
            terms["issue"] = one_wave
            terms["latency"] = arrival / in_flight
        elif facts.single_stage_prefetch:
            terms["single-buffer"] = one_wave + lds
            terms["latency"] = arrival
        else:
            terms["unpipelined"] = one_wave + lds + arrival
        return terms

    def total(latency: float) -> tuple[float, tuple[float, str]]:
        clocks, first = 0.0, None
        for index, size in enumerate(rounds):
            terms = iteration_terms(size, latency)
            bound = max(terms, key=terms.get)  # on a tie, the first: matrix
            iteration = terms[bound]
            fill = in_flight * size * memory + latency + size * transfer
            if index and figures.producer_waves and config.split_k == 1:
                # A producer loads the next tile's first slots while the
                # consumers finish this one (persistent workgroups,
                # backends/nvidia/warp_specialize.py): only the first round fills.
                fill = 0.0
            epilogue = size * figures.epilogue_bytes / share
            clocks += figures.iterations * iteration + fill + epilogue
            first = first or (iteration, bound)
        return clocks, first

    # The latency grows with the device memory's load: first costed at the
    # idle latency, then at the latency for the share of that time the
    # kernel's device-memory traffic keeps it busy.
    clocks, first = total(idle)
    if loaded > idle:
        busy_memory = min(1.0, device_memory_bytes(problem, figures, facts) / (clocks * facts.memory_bytes_per_clock))
        clocks, first = total(idle + busy_memory * (loaded - idle))
    if config.split_k > 1 and not problem.reads_c:  # the memset clearing C first
        clocks += (problem.m * problem.n * element_bytes(problem.c) / facts.memory_bytes_per_clock
                   + facts.memory_latency_clocks)
    return Prediction(
        seconds=clocks / (facts.clock_mhz * 1e6),
        workgroups=figures.workgroups,
        compute_units=cus,
        resident=resident,
        occupancy_limits=tuple(limits.items()),
        rounds=len(rounds),
        iteration_clocks=first[0],
        bound=first[1],
        figures=figures,
        assumed=facts.assumed + tuple(a for a in (facts.instruction_rate(config.instruction)[1],) if a),
        own_operand_loads=bool(facts.producer_prefix) and not figures.producer_waves,
    )
