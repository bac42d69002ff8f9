"""tile-tiling: whole-problem GEMMs become tile kernels, tiled as the cost model predicts fastest.

A `tile.gemm` on global memrefs outside any kernel (C += op(A) * op(B), C in
its own type, the sum in accum_dtype) becomes one `tile.kernel` over a grid of
block tiles, written exactly as a TileLang user would write it:

    shared A tile (block_M x block_K), shared B tile (block_K x block_N),
    an accumulator fragment (block_M x block_N, accum_dtype);
    accumulator <- 0 if a zero `tile.fill` of C precedes the gemm, else C's tile;
    for ko in [0, ceil(K / block_K)) {tile.num_stages = stages}:
        copy A's and B's windows into shared memory; tile.gemm;
    copy the accumulator back to C's window (rounded to C's type).

Out-of-bounds reads of the copies give 0 and out-of-bounds writes are dropped,
so shapes that are not multiples of the block are handled. Where the block
divides the dimensions a copy's windows move along, the copy is marked
`tile.in_bounds` (a promise the lowering uses to drop its edge checks). A zero fill of C
directly before the gemm becomes the cleared accumulator (no pass over memory).

Choosing the configuration (block M, N, K; threads; stages):
* every configuration that fits the target (`gemm_configs.candidate_configs`:
  block extents 32 to 256, 1 to 8 waves, 1 to 4 stages, within the LDS, the
  register budgets, the launch limits, with an instruction tile-select-mma can
  split the block with) is costed by `tilemlir.cost.model.predict`; the
  fastest wins (`rank_key` breaks ties), except that on families without
  producer-fed kernels the configurations predicted within NEAR (10%) of it
  count as equal and the one whose waves hold the most of the block wins,
  never a single wave where a wider workgroup fits (the fastest of those
  where none is that close: at most 1.3x the fastest's predicted time over
  300 random shapes per shipped chip, where 19 of them moved, all tiny;
  `rank_configs`: the model costs a wave's loads and address work as one
  figure per chip and instruction height); the default leaves the LDS room
  to pad its tiles' rows in where any configuration does (unpadded reads
  conflict). So a small problem
  is spread over the chip's CUs in full waves and a large one takes large
  tiles. The instruction and wave split are tile-select-mma's rule for that
  block, which the model evaluates (it does not override it).
* a launch of fewer workgroups than CUs whose fastest configuration is bound
  by device memory yet holds less in flight per CU than the family measured
  such a launch needs (Backend.stream_bytes_in_flight, `starved`: skinny
  GEMMs, each CU streaming one tile's operands) is searched again with
  deeper pipelines (6 and 8 stages) and 4x the block K, and the fastest
  configuration within NEAR that holds that much, with the most workgroups,
  wins (`ranked_candidates`).
* split-K, where the C tiles are fewer than the CUs and C holds the
  accumulator type (f32, i32): the grid gains a z extent of S slices, slice z
  runs K blocks [z * I, (z + 1) * I) (I = K blocks / S; only S that divide
  them evenly), starts from a cleared accumulator and adds it into C's
  window with `tile.atomic_add`. A zero fill of C before the gemm becomes a
  host `gpu.memset` of C before the kernel (the slices add onto zero);
  without one they add onto C. With a C of another type (f16 C of an f32
  sum) split-K is not offered: each addition would round the partial sums
  to C's type; a remark says so when the chosen grid leaves CUs idle.
* options given (`block`, `threads`, `stages`, `split-k`) fix their part;
  the model chooses the rest, or nothing when block, threads and stages are
  all given (split-K is then the option's, else 1). If no configuration
  passes the model's checks, the rule it replaced decides (block_K: the largest
  instruction K, at least 64 bytes of A per row; block M and N: 128, or the
  smallest power of two >= 32 covering the problem; 4 waves, doubled while the
  accumulator overflows its budget; 2 stages, fewer while the LDS overflows),
  and its checks report the numbers: stages * (block_M + block_N) * block_K
  element bytes within the workgroup's LDS, the accumulator's registers per
  lane within half the register file (the file minus 64 where accumulators
  share it), the grid within the launch limits.
* facts the descriptor leaves unknown (MetaX's registers, cycles, ...) are
  assumed as `tilemlir.cost.facts` documents (the least favourable value a
  shipped descriptor states), one remark per fact naming it and the value.
  Whether fp8 computes in fp8 or f16 is tile-legalize-precision's decision
  (and its remark); the model costs what it will decide.

Remarks: the chosen configuration with its prediction (workgroups, rounds,
what bounds it) and the runner-up's, when the model chose; each assumed fact;
why split-K was not considered when the grid leaves CUs idle.

Input invariant: tile-verify holds. Output invariant: no tile.gemm outside a
tile.kernel; whole-problem tile.fill only where it was not absorbed (an error);
a `gpu.memset` of C before each split-K kernel whose C was zero-filled;
every kernel made carries `tile.tiling = {source = "model" | "user" |
"tuning-db", split_k, predicted_seconds, prefer}` (source "model" when no
option fixed any part, else the `source` option; the prediction when the model
could cost it; `prefer` when the model chose an instruction tile-select-mma
takes only when preferred, such as sm_90a's wgmma, which tile-select-mma then
prefers for this kernel), which tile-compile --report reads.

Options:
  block=M,N,K   threads=N   stages=N   split-k=N   target=FAMILY:NAME
  source=user|tuning-db   who fixed the options given (default user);
                tile-compile says tuning-db when they come from a tuning
                database (tile-tune), and the kernel's tile.tiling says so
  rank=N        take the configuration the model ranks N-th (0, the default:
                the fastest; the source stays "model"); tile-compile raises it
                when the model's compiled choice spills registers (its remark
                names the spilling configuration); an error when block, threads
                and stages are all given, or fewer than N + 1 configurations fit

Example:

    "tile.fill"(%C, %zero) ...; "tile.gemm"(%A, %B, %C) {accum_dtype = f32, ...}
        : (memref<256x256xf16>, memref<256x256xf16>, memref<256x256xf16>) -> ()
    // becomes (gfx942: 32 workgroups of 32x64 blocks in 4 waves on its 304 CUs, not 4 of 128x128)
    "tile.kernel"() ({ ^bb0(%bx: index, %by: index): ... scf.for ... {tile.num_stages = 2 : i64} ... })
        {grid = array<i64: 4, 8>, threads = 256 : i64, tile.tiling = {predicted_seconds = ...,
         source = "model", split_k = 1 : i64}}
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar, Literal

from mlir import ir
from mlir.dialects import arith, gpu, scf

from tilemlir.cost.facts import ModelFacts, model_facts
from tilemlir.cost.model import (
    DoesNotFit,
    GemmProblem,
    KernelConfig,
    Prediction,
    element_bytes,
    predict,
)
from tilemlir.dialects import attributes, tile
from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass
from tilemlir.passes.gemm_configs import (
    Fixed,
    accumulator_register_budget,
    accumulator_registers,
    candidate_configs,
    default_block_k,
    gemm_problem,
    instruction_for,
    shared_bytes_needed,
    split_k_misfit,
    split_k_refusal,
)
from tilemlir.passes.gemm_facts import gemm_shape
from tilemlir.passes.kernel_facts import grid_problem, int_attr
from tilemlir.passes.lower_to_gpu.api import matrix_core_for
from tilemlir.targets import resolve_target

# The rule the model replaced, used when no configuration passes its checks.
RULE_STAGES = 2
RULE_WAVES = 4
RULE_EXTENT = 128
SMALLEST_EXTENT = 32
# The facts the fixed rule's checks read (besides the wave size and the LDS,
# which are never assumed).
RULE_FACTS = ("registers.vgprs_per_lane", "compute.max_threads_per_workgroup")


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def block_extent(problem: int, preferred: int = RULE_EXTENT, smallest: int = SMALLEST_EXTENT) -> int:
    if problem >= preferred:
        return preferred
    extent = smallest
    while extent < problem:
        extent *= 2
    return extent


@dataclass(frozen=True)
class TilingChoice:
    """How tile-tiling splits a gemm: the block tile (M, N, K), the threads of
    each block, and the pipeline stages of the K loop; who decided it
    ("model", "user" or "tuning-db") and what the cost model predicts for it."""

    block: tuple[int, int, int]
    threads: int
    stages: int
    source: str = "user"
    prediction: Prediction | None = None
    prefer: str = ""  # tile-select-mma's preference for the instruction the model chose
    split_k: int = 1  # K slices, each a workgroup adding its partial sums into C


# How much slower than predicted a kernel whose own warps load the matrix
# operands is taken to be, beside one fed by a producer warpgroup, where the
# family has both (Prediction.own_operand_loads): the model does not cost
# ldmatrix and address work. Measured on the H200 (bench/results/
# gemm-defaults-h200.md), measured / predicted time: mma.sync kernels 1.33
# (f16 512x512x8192, 32x64 blocks) and 3.5 (fp8 4096x4096x1024, the best of
# them), warp-specialized wgmma 0.62 and 1.4 (two measurements, no more);
# 1.5 is below every ratio of the two.
OWN_OPERAND_LOADS = 1.5


def rank_key(prediction: Prediction, config: KernelConfig) -> tuple:
    """Fastest first, a kernel whose own warps load its operands weighed by
    OWN_OPERAND_LOADS on a target whose family has producer-fed kernels (all
    such candidates alike where none is producer-fed); on a
    tie, fewer K iterations (per-iteration costs the descriptor does not
    give: latency, barriers), the larger block, more stages, then the wave
    count nearest the fixed rule's (the most exercised lowering), fewer
    waves first."""
    bm, bn, _ = config.block
    waves = prediction.figures.waves
    return (weighed_seconds(prediction), prediction.figures.iterations, -bm * bn, -config.stages,
            abs(waves - RULE_WAVES), waves)


def weighed_seconds(prediction: Prediction) -> float:
    return prediction.seconds * (OWN_OPERAND_LOADS if prediction.own_operand_loads else 1.0)


# On a family with producer-fed kernels, the fastest prediction's
# configuration with more stages, predicted this close, comes first
# (`rank_configs`): what separates them is the first tile's fill, which a
# deeper pipeline makes longer, while it runs better measured (H200,
# bench/gemm_defaults.py, 2026-12-04: f16 4096^3 in 128x256x64 blocks, 4 stages
# 682 TFLOP/s against 3 stages 634; 8192^3 654 against 605).
SAME = 0.005

# Predictions this close to the fastest are taken as equal (`rank_configs`).
# The model costs the instructions a wave issues besides its matrix ones
# (global loads, LDS stores and reads, address work, waits and the barrier) as
# one figure per chip and instruction height (Backend.loop_issue_clocks and
# loop_issue_clocks_by_rows, medians of its loops), while they vary from one
# configuration to another by a factor of two and more, so a wave with a
# small share of the block may spend most of its loop on them. The figures below are from before the model had that figure.
# On gfx942, llvm-mca's busy ratio (the matrix unit's share of one main-loop
# iteration, `--report`'s mfma_busy_ratio) of f16 256^3 is 0.106 with 32x32
# blocks of 4 waves (predicted 0.787 us) and 0.32 with 2 waves of 32x32 and
# longer K steps (0.83 us); gfx90a's rises from 0.274 to 0.582 for 9% more
# predicted time, and f16 1024^3 on gfx950 from 0.577 to 0.643 for 2%.
# 10% is the margin at which the small AMD shapes of bench/amd_vs_triton.py
# --defaults stop changing (5%: gfx950 256^3 stays at 0.128).
NEAR = 0.10


def simds_used(prediction: Prediction, facts: ModelFacts) -> int:
    """SIMDs of a CU the launch's waves occupy: the workgroups a CU runs at
    once (at most its share of the launch) times their waves, at most the
    CU's SIMDs. A launch of fewer workgroups than CUs in workgroups of 2
    waves leaves half of each CU's SIMDs idle (f16 16x8192x8192 on gfx942,
    bench/amd_vs_triton.py --defaults: 16x64x128 blocks of 2 waves, busy
    ratio 0.213, the model's time with it 37.6 us; of 4 waves 0.200, 32.6
    us)."""
    at_once = min(prediction.resident, -(-prediction.workgroups // prediction.compute_units))
    return min(facts.simds_per_cu, at_once * prediction.figures.waves)


def wave_share(prediction: Prediction, config: KernelConfig) -> int:
    """Elements of the block's C tile each wave holds."""
    return config.block[0] * config.block[1] // prediction.figures.waves


# Bytes of row padding tile-infer-layout adds per stored row of a shared tile
# where 8 bytes make its reads conflict-free, the least it adds (4 f16 or 8
# fp8 elements; some tiles take 16), for `reads_free_of_conflicts`.
ROW_PADDING_BYTES = 8


def reads_free_of_conflicts(prediction: Prediction, config: KernelConfig, facts: ModelFacts) -> bool:
    """Whether the workgroup's tiles are read free of bank conflicts as far
    as their LDS goes: where the LDS holds them with their rows padded, or
    where their rows are XOR-swizzled instead (`swizzles_free_of_conflicts`).
    tile-infer-layout drops padding that does not fit; unswizzled, f16
    1024^3 in 128x128x64 blocks of 2 stages filling 64 KiB has 1920 conflict
    clocks per iteration, which the model does not cost."""
    if swizzles_free_of_conflicts(prediction, config, facts):
        return True
    bm, bn, bk = config.block
    # A stored as its bm rows, B as its bk rows or transposed as its bn.
    padding = config.stages * (bm + max(bn, bk)) * ROW_PADDING_BYTES
    return prediction.figures.shared_bytes + padding <= facts.shared_bytes_per_workgroup


def swizzles_free_of_conflicts(prediction: Prediction, config: KernelConfig, facts: ModelFacts) -> bool:
    """Whether tile-infer-layout's XOR swizzle of the tiles' rows, which it
    takes where their padding does not fit, leaves their reads free of bank
    conflicts as the model knows it: the matrix core reads swizzled rows
    (MatrixCore.reads_swizzled_rows: AMD), the LDS's banks are stated, both
    operands are 16-bit and a K step's row spans every bank at least once
    (block K x 2 bytes at least banks x bank width). Measured with
    tile-infer-layout's conflict model: on gfx942, 4096^3 f16 in 256x256
    blocks filling the 64 KiB, 64 of K in one stage 0 conflict clocks per
    iteration, 32 of K (64-byte rows) in 2 stages 96; lanes reading 4 bytes
    a step (f32, i8) or 1-byte rows written transposed (fp8 A stored K x M)
    conflict or slow down in swizzled rows too, and where the bank count is
    unknown (gfx950, RDNA: 32 and 64 checked) 128-byte rows cannot span both."""
    return (matrix_core_for(facts.target).reads_swizzled_rows
            and not any(a.field == "memory.shared_banks" for a in facts.assumed)
            and prediction.figures.k_row_bytes == 2 * config.block[2]
            and prediction.figures.k_row_bytes >= facts.shared_bytes_per_clock)


def near_tie_reason(chosen: tuple[Prediction, KernelConfig], other: tuple[Prediction, KernelConfig],
                    facts: ModelFacts) -> str:
    """Why `rank_configs` (or `ranked_candidates`) put `chosen` before
    `other`, predicted faster."""
    stream = facts.stream_bytes_in_flight
    if stream and bytes_in_flight(*chosen) >= stream > bytes_in_flight(*other):
        return (f"this one holds {bytes_in_flight(*chosen) // 1024} KiB in flight per CU, that one "
                f"{bytes_in_flight(*other) // 1024}; a launch streaming device memory needs "
                f"{stream // 1024} KiB (Backend.stream_bytes_in_flight)")
    if not reads_free_of_conflicts(*other, facts) and reads_free_of_conflicts(*chosen, facts):
        return "its tiles leave no LDS to pad their rows (bank conflicts)"
    if (other[1].block, other[1].stages, other[1].split_k) == (chosen[1].block, chosen[1].stages, chosen[1].split_k) \
            and simds_used(other[0], facts) < simds_used(chosen[0], facts):
        return (f"its waves occupy {simds_used(other[0], facts)} of a CU's SIMDs, this one's "
                f"{simds_used(chosen[0], facts)}")
    if other[0].figures.waves == 1 < chosen[0].figures.waves:
        return "it is a workgroup of one wave"
    if other[0].figures.iterations == 1 < chosen[0].figures.iterations:
        return "it has one K iteration"
    if wave_share(*other) < wave_share(*chosen):
        return (f"its waves hold {wave_share(*other)} elements of C each, this one's {wave_share(*chosen)} "
                f"(with more, a wave's loads and address work weigh less)")
    return "this one has more stages or longer K steps (fewer iterations to pay for)"


def bytes_in_flight(prediction: Prediction, config: KernelConfig) -> int:
    """A and B tile bytes the busiest CU has requested and not yet used: the
    stages loaded ahead of each of its workgroups running at once."""
    running = min(prediction.resident, math.ceil(prediction.workgroups / prediction.compute_units))
    return running * max(1, config.stages - 1) * prediction.figures.global_bytes


def starved(fastest: tuple[Prediction, KernelConfig], facts: ModelFacts) -> bool:
    """Whether the fastest configuration is a launch of fewer workgroups than
    CUs bound by device memory that holds less in flight per CU than its
    family measured such a launch needs (Backend.stream_bytes_in_flight; the
    model's latency under load does not ask for it)."""
    return bool(facts.stream_bytes_in_flight) and fastest[0].bound == "device memory" \
        and fastest[0].workgroups < facts.compute_units \
        and bytes_in_flight(*fastest) < facts.stream_bytes_in_flight


def streaming_first(ranked: list[tuple[Prediction, KernelConfig]], facts: ModelFacts) \
        -> tuple[Prediction, KernelConfig] | None:
    """Of the configurations within NEAR of the fastest that launch fewer
    workgroups than CUs and hold Backend.stream_bytes_in_flight per CU, the
    fastest of those with the most workgroups; None if there is none."""
    fastest = ranked[0]
    limit = weighed_seconds(fastest[0]) * (1 + NEAR)
    holding = [pair for pair in ranked if weighed_seconds(pair[0]) <= limit
               and pair[0].workgroups < facts.compute_units
               and bytes_in_flight(*pair) >= facts.stream_bytes_in_flight]
    # Of those, the most CUs streaming (the model's device-memory share lets
    # half the CUs draw the whole bandwidth; measured on the H200, f16
    # 16x8192x8192: 64 workgroups of 32x128x128 blocks ran 0.93 of 128 of
    # 32x64x128 with as much in flight, 120 KiB per SM).
    return max(holding, key=lambda pair: pair[0].workgroups, default=None)


def ranked_candidates(problem: GemmProblem, target, fixed: Fixed | None = None) \
        -> list[tuple[Prediction, KernelConfig]]:
    """Every candidate configuration with its prediction, in tile-tiling's
    order (`rank_configs`); where the fastest is `starved`, the candidates
    again with deeper pipelines and longer K steps (`candidate_configs`'s
    stream), the `streaming_first` of them first, if any."""
    facts = model_facts(target)

    def predicted(configs) -> list[tuple[Prediction, KernelConfig]]:
        found = []
        for config in configs:
            try:
                found.append((predict(problem, config, target), config))
            except DoesNotFit:
                continue
        return found

    ranked = rank_configs(predicted(candidate_configs(problem, target, fixed or Fixed())), facts)
    if not ranked or not starved(ranked[0], facts):
        return ranked
    known = {config for _, config in ranked}
    deeper = rank_configs(ranked + predicted(config for config in candidate_configs(problem, target, fixed or Fixed(),
                                                                                    stream=True)
                                             if config not in known), facts)
    streaming = streaming_first(deeper, facts)
    return ranked if streaming is None else [streaming] + [pair for pair in deeper if pair is not streaming]


def rank_configs(predicted: list[tuple[Prediction, KernelConfig]], facts: ModelFacts) \
        -> list[tuple[Prediction, KernelConfig]]:
    """`predicted` in the order tile-tiling ranks it (its first is the
    default): by `rank_key` (on a family with producer-fed kernels, the
    fastest's configuration with the most stages within SAME of it first),
    except that, where the ranking does not already weigh the waves' own
    operand loads (a family without producer-fed kernels:
    OWN_OPERAND_LOADS), the configurations whose tiles are read free of bank
    conflicts (`reads_free_of_conflicts`, where there are such) and are
    predicted within NEAR of the fastest of them count as equal and one of
    them comes first: of those with more than one wave (where there are none,
    the fastest of all those free of conflicts with more than one wave: never
    one wave where a wider workgroup fits) and more than one K
    iteration (where there are such), the one whose waves hold the largest
    share of the block (the most matrix work for a wave's loads and address
    work), then with two stages or more, then with the most matrix work per
    wave and iteration (longer K steps: fewer iterations to pay for), the
    first of equals; then, of its block, stages and split-K, the wave count
    that occupies the most SIMDs of a CU (`simds_used`). The rest keep
    rank_key's order."""
    ranked = sorted(predicted, key=lambda pair: rank_key(*pair))
    if not ranked:
        return ranked
    if facts.producer_prefix:
        fastest = ranked[0]
        limit = weighed_seconds(fastest[0]) * (1 + SAME)
        deeper = [pair for pair in ranked if weighed_seconds(pair[0]) <= limit
                  and dataclasses.replace(pair[1], stages=fastest[1].stages) == fastest[1]]
        best = max(deeper, key=lambda pair: pair[1].stages)
        return [best] + [pair for pair in ranked if pair is not best]
    # The default's tiles are read free of bank conflicts where any
    # configuration's are (unpadded, unswizzled reads conflict: 1920 conflict
    # clocks per iteration of f16 1024^3 in 128x128x64 blocks of 2 stages,
    # which the model does not cost); NEAR is measured from the fastest of those.
    free_first = [pair for pair in ranked if reads_free_of_conflicts(*pair, facts)] or ranked
    limit = weighed_seconds(free_first[0][0]) * (1 + NEAR)
    near = [pair for pair in free_first if weighed_seconds(pair[0]) <= limit]
    # Never one wave where a wider workgroup fits: the fastest of those if none is near.
    wide = [pair for pair in near if pair[0].figures.waves > 1] \
        or [pair for pair in free_first if pair[0].figures.waves > 1][:1] or near
    looped = [pair for pair in wide if pair[0].figures.iterations > 1] or wide
    best = max(looped, key=lambda pair: (wave_share(*pair), min(pair[1].stages, 2), pair[0].figures.matrix_clocks))
    same_block = [pair for pair in looped if (pair[1].block, pair[1].stages, pair[1].split_k)
                  == (best[1].block, best[1].stages, best[1].split_k)]
    best = max(same_block, key=lambda pair: (simds_used(pair[0], facts), wave_share(*pair)))
    return [best] + [pair for pair in ranked if pair is not best]


@dataclass(frozen=True)
class TileTiling(TilePass):
    name: ClassVar[str] = "tile-tiling"
    summary: ClassVar[str] = "Turn whole-problem tile.gemm into tile kernels tiled by the cost model"

    block: tuple[int, ...] = ()
    threads: int = 0
    stages: int = 0
    target: str = ""
    source: Literal["user", "tuning-db"] = "user"
    split_k: int = 0
    # The model's configuration at this place of its ranking (0: the fastest);
    # tile-compile raises it when the compiled default spills (compiler.py).
    rank: int = 0

    def run(self, module: ir.Operation, state: PassState) -> None:
        fills = [op for op in walk(module) if op.name == "tile.fill"
                 and not any(p.name == "tile.kernel" for p in _parents(op))]
        pairs = whole_problem_gemms(module)
        if not pairs and not fills:
            return
        target = resolve_target(module, self.target)
        absorbed = [fill for _, fill in pairs if fill is not None]
        for op in fills:
            if not any(op == fill for fill in absorbed):
                state.error(op, "tile-tiling: a whole-problem tile.fill is only tiled when it clears "
                                "the C of the tile.gemm right after it")
        for op, fill in pairs:
            tiling = self.choose_tiling(op, target, state, zero_init=fill is not None)
            if tiling is None:
                continue
            kernel = self.tile_gemm(op, tiling, zero_init=fill is not None)
            entries = {"source": ir.StringAttr.get(tiling.source), "split_k": int_attr(tiling.split_k)}
            if tiling.prediction is not None:
                entries["predicted_seconds"] = ir.FloatAttr.get_f64(tiling.prediction.seconds)
            if tiling.prefer:
                entries["prefer"] = ir.StringAttr.get(tiling.prefer)
            attributes.TILING.write(kernel, entries)
            if fill is not None:
                fill.erase()

    # -- choosing the tiles ---------------------------------------------------

    def choose_tiling(self, op: ir.Operation, target, state: PassState,
                      zero_init: bool = True) -> TilingChoice | None:
        shape = gemm_shape(op)
        dynamic = ir.ShapedType.get_dynamic_size()
        if dynamic in (shape.m, shape.n, shape.k):
            state.error(op, "tile-tiling: dynamic GEMM shapes are not supported yet")
            return None
        if self.block and len(self.block) != 3:
            state.error(op, f"tile-tiling: block must be M,N,K, got {','.join(map(str, self.block))}")
            return None
        if self.rank < 0:
            state.error(op, f"tile-tiling: rank must be 0 (the fastest) or more, got {self.rank}")
            return None
        if (self.block and min(self.block) <= 0) or min(self.threads, self.stages, self.split_k) < 0:
            state.error(op, "tile-tiling: block sizes, threads, stages and split-k must be positive")
            return None
        facts = model_facts(target)
        if self.threads > facts.max_threads_per_workgroup:
            state.error(op, f"tile-tiling: threads={self.threads}: a workgroup of {target.family}:{target.name} "
                            f"has at most {facts.max_threads_per_workgroup} threads")
            return None
        if self.stages > attributes.MAX_STAGES:
            state.error(op, f"tile-tiling: stages={self.stages}: a pipeline has at most {attributes.MAX_STAGES}")
            return None
        problem = gemm_problem(shape, target, zero_init)
        if self.split_k > 1 and (refusal := split_k_refusal(problem)) is not None:
            state.error(op, f"tile-tiling: split-k={self.split_k} is not possible for this {problem} gemm: "
                            f"{refusal}")
            return None
        given = {"block": self.block, "threads": self.threads, "stages": self.stages, "split-k": self.split_k}
        source = self.source if any(given.values()) else "model"
        if self.rank and self.block and self.threads and self.stages:
            state.error(op, f"tile-tiling: rank={self.rank} picks among the model's configurations, and "
                            f"block, threads and stages leave it none to pick")
            return None
        if self.block and self.threads and self.stages:
            tiling = self.checked_rule_tiling(op, problem, target, state)
            if tiling is not None:
                tiling = self.with_prediction(op, problem, tiling, target, source, state)
            if tiling is not None:
                self.say_assumptions(op, tiling.prediction, facts, state)
                if source == "tuning-db":
                    state.remark(op, f"tile-tiling: block {'x'.join(map(str, tiling.block))}, "
                                     f"{tiling.threads} threads, {tiling.stages} stages, split-K "
                                     f"{tiling.split_k} for this {problem} gemm, from the tuning database",
                                 kind="info")
            return tiling
        fixed = Fixed(tuple(self.block), self.threads, self.stages, self.split_k)
        ranked = ranked_candidates(problem, target, fixed)
        if self.rank and self.rank >= len(ranked):
            state.error(op, f"tile-tiling: rank={self.rank}, but the model ranks {len(ranked)} "
                            f"configuration{'s' if len(ranked) != 1 else ''} for this {problem} gemm")
            return None
        if not ranked:
            tiling = self.checked_rule_tiling(op, problem, target, state)
            if tiling is not None:
                tiling = self.with_prediction(op, problem, tiling, target, source, state)
            if tiling is None:
                return None
            self.say_assumptions(op, tiling.prediction, facts, state)
            if target.mma_candidates(problem.shared_a, problem.shared_b, problem.accum):
                # (Without any instruction for these types a later pass says why.)
                state.remark(op, f"tile-tiling: no configuration passes the cost model's checks for "
                                 f"this {problem} gemm; block {'x'.join(map(str, tiling.block))}, "
                                 f"{tiling.threads} threads, {tiling.stages} stages, split-K "
                                 f"{tiling.split_k} by the fixed rule", kind="speed")
            return tiling
        place = self.rank
        (best, config), runner_up = ranked[place], ranked[place + 1] if len(ranked) > place + 1 else None
        self.say_assumptions(op, best, facts, state)
        fixed_words = ", ".join(f"{k}={v if not isinstance(v, tuple) else ','.join(map(str, v))}"
                                for k, v in given.items() if v)
        text = (f"tile-tiling: {config.describe(facts.wave_size)} for this {problem} gemm"
                f"{f' ({fixed_words} as given)' if fixed_words else ''}: {best.describe()}")
        if config.split_k > 1:
            text += (f"; each of the {config.split_k} K slices adds its partial sums into C atomically"
                     f"{' (C cleared first)' if zero_init else ''}")
        if runner_up is not None:
            text += (f"; runner-up: {runner_up[1].describe(facts.wave_size)}: "
                     f"{runner_up[0].describe()}")
            if weighed_seconds(runner_up[0]) < weighed_seconds(best):
                faster = 1 - weighed_seconds(runner_up[0]) / weighed_seconds(best)
                text += (f" (predicted faster by {faster:.0%}, but "
                         f"{near_tie_reason((best, config), runner_up, facts)})")
        which = (f"ranked {place + 1} (rank={place}) of {len(ranked)} configurations that fit (the "
                 f"{place} ranked ahead of it passed over)" if place else f"ranked first of {len(ranked)} configurations that fit")
        state.remark(op, f"{text}; {which} (cost model: tilemlir.cost.model)", kind="info")
        if not self.split_k and best.workgroups < facts.compute_units \
                and (refusal := split_k_refusal(problem)) is not None:
            state.remark(op, f"tile-tiling: {best.workgroups} workgroups leave CUs of {target.name} idle, "
                             f"and split-K is not considered: {refusal}", kind="speed")
        return TilingChoice(config.block, config.threads, config.stages, source, best, config.prefer,
                            config.split_k)

    def with_prediction(self, op: ir.Operation, problem: GemmProblem, tiling: TilingChoice, target,
                        source: str, state: PassState) -> TilingChoice | None:
        """The fixed rule's tiling with the split-K option (checked) and the
        model's prediction, from `source`."""
        split_k = self.split_k or 1
        why = split_k_misfit(problem, tiling.block, split_k, tiling.stages)
        if why is None and split_k > 1:
            grid = [ceil_div(problem.n, tiling.block[1]), ceil_div(problem.m, tiling.block[0]), split_k]
            why = grid_problem(grid, tiling.threads, target)
        if why is not None:
            state.error(op, f"tile-tiling: split-k={split_k}: {why}")
            return None
        tiling = dataclasses.replace(tiling, source=source, split_k=split_k)
        return dataclasses.replace(tiling, prediction=self.prediction_of(problem, tiling, target))

    def say_assumptions(self, op: ir.Operation, prediction: Prediction | None, facts,
                        state: PassState) -> None:
        """One remark per assumed fact the decision used (`emit_remark` says
        each once per compile): those the prediction read, or without one
        those the fixed rule's checks read."""
        assumed = prediction.assumed if prediction is not None else tuple(
            a for a in facts.assumed if a.field in RULE_FACTS)
        for assumption in assumed:
            state.remark(op, f"tile-tiling: {assumption.message()}", kind="assumption",
                         fact=(str(assumption.target), assumption.field))

    @staticmethod
    def prediction_of(problem: GemmProblem, tiling: TilingChoice, target) -> Prediction | None:
        """The model's prediction for a tiling it did not choose, when
        tile-select-mma has an instruction for it and a CU can hold it."""
        chosen = instruction_for(problem, tiling.block, tiling.threads, target)
        if isinstance(chosen, str):
            return None
        row, split, group = chosen
        config = KernelConfig(tiling.block, tiling.threads, tiling.stages, row, split, group, tiling.split_k)
        try:
            return predict(problem, config, target)
        except DoesNotFit:
            return None

    def checked_rule_tiling(self, op: ir.Operation, problem: GemmProblem, target,
                            state: PassState) -> TilingChoice | None:
        """The options, completed by the fixed rule (module docstring), and
        checked against the LDS, the launch limits and the register budget
        (each failure a diagnostic with the numbers)."""
        facts = model_facts(target)
        wave = facts.wave_size
        a_bytes, b_bytes = element_bytes(problem.shared_a), element_bytes(problem.shared_b)
        if self.block:
            block = tuple(self.block)
        else:
            block = (block_extent(problem.m), block_extent(problem.n), default_block_k(problem, target))
        tiling = TilingChoice(block, self.threads or RULE_WAVES * wave, self.stages or RULE_STAGES)
        lds_limit = facts.shared_bytes_per_workgroup
        needed = shared_bytes_needed(tiling.block, tiling.stages, a_bytes, b_bytes)
        if needed > lds_limit and not self.stages and not self.block:
            while tiling.stages > 1 and shared_bytes_needed(tiling.block, tiling.stages, a_bytes,
                                                            b_bytes) > lds_limit:
                tiling = TilingChoice(tiling.block, tiling.threads, tiling.stages - 1)
            needed = shared_bytes_needed(tiling.block, tiling.stages, a_bytes, b_bytes)
        if needed > lds_limit:
            bm, bn, bk = tiling.block
            state.error(op, f"tile-tiling: needs {needed} bytes of LDS ({tiling.stages} stages x "
                            f"({bm}x{bk} A + {bk}x{bn} B tiles)), {target.name} allows {lds_limit}")
            return None
        grid = [ceil_div(problem.n, tiling.block[1]), ceil_div(problem.m, tiling.block[0])]
        too_large = grid_problem(grid, tiling.threads, target)
        if too_large is not None:
            state.error(op, f"tile-tiling: a {problem.m}x{problem.n} C in {tiling.block[0]}x{tiling.block[1]} "
                            f"blocks needs a grid of {grid[0]}x{grid[1]} blocks (x: N, y: M): "
                            f"{too_large}; split the GEMM into several")
            return None
        budget, why = accumulator_register_budget(facts)
        registers = accumulator_registers(block, problem.accum, tiling.threads)
        while registers > budget and not self.threads and tiling.threads * 2 <= facts.max_threads_per_workgroup:
            # More waves share the accumulator when the thread count was not given.
            tiling = TilingChoice(tiling.block, tiling.threads * 2, tiling.stages)
            registers = accumulator_registers(block, problem.accum, tiling.threads)
        if registers > budget:
            state.error(op, f"tile-tiling: the {block[0]}x{block[1]} accumulator needs {registers} "
                            f"registers per lane with {tiling.threads} threads, {target.name} leaves "
                            f"{budget} for it ({why})")
            return None
        return tiling

    # -- writing the kernel ---------------------------------------------------

    def tile_gemm(self, op: ir.Operation, tiling: TilingChoice, zero_init: bool) -> ir.Operation:
        """Writes the kernel in place of `op` and returns it."""
        shape = gemm_shape(op)
        A, B, C = op.operands[0], op.operands[1], op.operands[2]
        bm, bn, bk = tiling.block
        a_type, b_type = ir.MemRefType(A.type), ir.MemRefType(B.type)
        accum = ir.TypeAttr(op.attributes["accum_dtype"]).value
        split_k = tiling.split_k
        grid = [ceil_div(shape.n, bn), ceil_div(shape.m, bm)] + ([split_k] if split_k > 1 else [])
        a_tile = [bk, bm] if shape.transpose_a else [bm, bk]
        b_tile = [bn, bk] if shape.transpose_b else [bk, bn]
        # Each K slice runs `iterations` blocks of K (split_k_misfit: they divide evenly).
        iterations = ceil_div(shape.k, bk) // split_k
        with ir.InsertionPoint(op), op.location:
            if split_k > 1 and zero_init:  # the slices add into C: it starts at zero
                c_element = ir.MemRefType(C.type).element_type
                gpu.MemsetOp(None, [], C, arith.ConstantOp(c_element, _zero(c_element)).result)
            kernel = tile.kernel(grid, tiling.threads)
            with tile.kernel_body(kernel) as (bx, by, *slice_index):
                index = ir.IndexType.get()

                def constant(value: int) -> ir.Value:
                    return arith.ConstantOp(index, value).result

                a_shared = tile.alloc_shared(tile.shared_memref_type(a_tile, a_type.element_type))
                b_shared = tile.alloc_shared(tile.shared_memref_type(b_tile, b_type.element_type))
                acc = tile.alloc_fragment(tile.fragment_memref_type([bm, bn], accum))
                row = arith.MulIOp(by, constant(bm)).result
                col = arith.MulIOp(bx, constant(bn)).result
                if zero_init or split_k > 1:
                    tile.fill(acc, arith.ConstantOp(accum, _zero(accum)).result)
                else:
                    load = tile.copy(C, acc, [row, col])
                    if shape.m % bm == 0 and shape.n % bn == 0:
                        attributes.IN_BOUNDS.mark(load)
                loop = scf.ForOp(constant(0), constant(iterations), constant(1))
                with ir.InsertionPoint(loop.body):
                    k = arith.MulIOp(loop.induction_variable, constant(bk)).result
                    if split_k > 1:  # slice z starts at K block z * iterations
                        start = arith.MulIOp(slice_index[0], constant(iterations * bk)).result
                        k = arith.AddIOp(start, k).result
                    copy_a = tile.copy(A, a_shared, [k, row] if shape.transpose_a else [row, k])
                    copy_b = tile.copy(B, b_shared, [col, k] if shape.transpose_b else [k, col])
                    # Windows of a dimension the block divides never leave the operand.
                    if shape.m % bm == 0 and shape.k % bk == 0:
                        attributes.IN_BOUNDS.mark(copy_a)
                    if shape.n % bn == 0 and shape.k % bk == 0:
                        attributes.IN_BOUNDS.mark(copy_b)
                    tile.gemm(a_shared, b_shared, acc, accum_dtype=accum,
                              transpose_a=shape.transpose_a, transpose_b=shape.transpose_b)
                    scf.YieldOp([])
                attributes.NUM_STAGES.write(loop.operation, tiling.stages)
                store = tile.copy(acc, C, dst_indices=[row, col])
                if shape.m % bm == 0 and shape.n % bn == 0:
                    attributes.IN_BOUNDS.mark(store)
                if split_k > 1:
                    attributes.ATOMIC_ADD.mark(store)
        op.erase()
        return kernel


def _zero(element: ir.Type) -> ir.Attribute:
    return ir.FloatAttr.get(element, 0.0) if isinstance(element, ir.FloatType) else ir.IntegerAttr.get(element, 0)


def whole_problem_gemms(module: ir.Operation) -> list[tuple[ir.Operation, ir.Operation | None]]:
    """What tile-tiling tiles: each tile.gemm outside any tile.kernel, in
    program order, with the zero tile.fill of its C right before it (which
    becomes the cleared accumulator), or None when the gemm reads C."""
    return [(op, _zero_fill_before(op)) for op in walk(module) if op.name == "tile.gemm"
            and not any(p.name == "tile.kernel" for p in _parents(op))]


def _parents(op: ir.Operation):
    from tilemlir.irutil import parent_ops

    return parent_ops(op)


def _zero_fill_before(gemm: ir.Operation) -> ir.Operation | None:
    """The `tile.fill(C, 0)` right before `gemm` on the same C, if any."""
    previous = _previous_op(gemm)
    while previous is not None and previous.name == "arith.constant":
        previous = _previous_op(previous)
    if previous is None or previous.name != "tile.fill" or previous.operands[0] != gemm.operands[2]:
        return None
    value = previous.operands[1].owner
    if not isinstance(value, ir.OpView | ir.Operation) or value.name != "arith.constant":
        return None
    attr = value.attributes["value"]
    number = ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else ir.IntegerAttr(attr).value
    return previous.operation if number == 0 else None


def _previous_op(op: ir.Operation) -> ir.Operation | None:
    block = op.block
    previous = None
    for candidate in block.operations:
        if candidate.operation == op.operation:
            return previous
        previous = candidate.operation
    return None
