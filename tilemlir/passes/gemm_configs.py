"""The GEMM configurations that fit a target: what tile-tiling (and a tuner)
chooses among.

    problem = gemm_problem(gemm_shape(op), target, zero_init=True)
    for config in candidate_configs(problem, target):
        predict(problem, config, target)          # tilemlir.cost.model

`candidate_configs` enumerates block tiles, waves, stages and split-K, each with the instruction and
wave split tile-select-mma would choose for it (`select_mma_for`), and with
each instruction it takes only when preferred (sm_90a's wgmma:
`instruction_choices`, where the matrix core can fill its operands and with
the stages its loop needs), and keeps those that fit:

* block M and N: 32, 64, 128, 256, up to the smallest that covers the
  problem's dimension; block K: the largest K among the usable instructions,
  at least 64 bytes of A per row, and twice that when K has room for it
  (four times too where the family's waves pay issue clocks per iteration,
  `ModelFacts.issue_clocks`: AMD's skinny GEMMs, whose iterations are
  mostly that overhead, unless the operands are decoded on the way to
  shared memory);
* waves: 1, 2, 4 or 8, within the workgroup limit; stages: 1 to 4 (with
  `stream`, for blocks that leave C in fewer tiles than the CUs, also 6 and
  8, and 4 times the block K: tiling.ranked_candidates asks for them);
* split-K: 1, and where the C tiles are fewer than the CUs and C holds the
  accumulator type (f32 or i32: the slices' partial sums are added into C
  atomically, `split_k_refusal`), 2, 4, 8 or 16 slices that divide the K
  blocks evenly, each slice at least `stages` iterations long, the
  workgroups at most twice the CUs;
* LDS: every stage's A and B tiles within the workgroup's LDS;
* registers: the accumulator within its budget (`accumulator_register_budget`),
  and the model's per-lane estimate within what one wave may hold
  (`wave_register_limit`);
* the grid within the launch limits, and a matrix instruction that splits the
  block over the waves (tile-select-mma's rule; its lane layout known).

Options the user fixed (tile-tiling's `block`, `threads`, `stages`) take only
their given value. Unknown descriptor facts are assumed (tilemlir.cost.facts).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from tilemlir.cost.facts import ModelFacts, model_facts
from tilemlir.cost.model import GemmProblem, KernelConfig, element_bytes, kernel_figures, occupancy
from tilemlir.dialects.attributes import ATOMIC_ADD_TYPES
from tilemlir.passes.gemm_facts import GemmShape
from tilemlir.passes.kernel_facts import grid_problem
from tilemlir.passes.legalize_precision import Rejected, TileLegalizePrecision
from tilemlir.passes.lower_to_gpu.api import matrix_core_for
from tilemlir.passes.select_mma import select_mma_for
from tilemlir.targets.model import FP8_KIND, MmaInstr, Target, is_unknown

BLOCK_EXTENTS = (32, 64, 128, 256)
WAVE_COUNTS = (1, 2, 4, 8)
STAGE_COUNTS = (1, 2, 3, 4)
# A launch whose C tiles are fewer than the CUs streams its operands through
# each CU once (skinny GEMMs: decoding's 16 rows): what it draws from device
# memory is what it holds in flight, so where its fastest configuration holds
# too little (tiling.ranked_candidates) the search also tries deeper
# pipelines and longer K steps (`candidate_configs(stream=True)`).
STREAM_STAGE_COUNTS = (6, 8)
STREAM_K_FACTOR = 4
SPLIT_K_COUNTS = (2, 4, 8, 16)
# Bytes of A a block row reads at least per K step (tile-tiling's rule for
# block_K since its first version; the model then also tries twice that).
MIN_ROW_BYTES = 64
# Registers per lane kept for operand fragments and addresses on targets whose
# accumulators share the one register file (no separate accumulation file).
OPERAND_REGISTER_RESERVE = 64


def compute_types(shape: GemmShape, target: Target) -> tuple[str, str]:
    """The operand types the matrix unit will read: tile-legalize-precision's
    choice with its default options (fp8 in the chip's encoding, or f16 where
    the chip has none or it is not known); the stored types when it would
    refuse the gemm (it says why later)."""
    if shape.a not in FP8_KIND and shape.b not in FP8_KIND:
        return shape.a, shape.b
    formats = target.matrix.fp8_formats
    try:
        return TileLegalizePrecision().legal_types(shape.a, shape.b, () if is_unknown(formats) else tuple(formats),
                                                   str(target))
    except Rejected:
        return shape.a, shape.b


def gemm_problem(shape: GemmShape, target: Target, zero_init: bool) -> GemmProblem:
    """The model's view of a whole-problem gemm."""
    compute_a, compute_b = compute_types(shape, target)
    return GemmProblem(**dataclasses.asdict(shape), reads_c=not zero_init, compute_a=compute_a,
                       compute_b=compute_b)


def accumulator_register_budget(facts: ModelFacts) -> tuple[int, str]:
    """Registers per lane an accumulator may take, and why: half the file where
    the target has an accumulation file (AMD AGPRs), else the file minus a
    reserve for operands (NVIDIA)."""
    total = facts.vgprs_per_lane
    if facts.has_accumulation_file:
        return total // 2, f"half of {total}"
    return total - OPERAND_REGISTER_RESERVE, f"{total} minus {OPERAND_REGISTER_RESERVE} kept for operands"


def accumulator_registers(block: tuple[int, ...], accum: str, threads: int) -> int:
    return math.ceil(block[0] * block[1] * element_bytes(accum) / (4 * threads))


def shared_bytes_needed(block: tuple[int, ...], stages: int, a_bytes: int, b_bytes: int) -> int:
    bm, bn, bk = block
    return stages * (bm * bk * a_bytes + bk * bn * b_bytes)


def default_block_k(problem: GemmProblem, target: Target) -> int:
    """The largest K among the chip's usable instructions for these types, at
    least MIN_ROW_BYTES of A per row as the matrix unit reads it: fp8 decoded
    to f16 on the way to shared memory (gfx90a, gfx1100, MetaX's chips) counts
    as f16 (on gfx90a the decoding's scalar registers spill at K steps of 128
    fp8, llc-22)."""
    wave = target.require("compute.wave_size", "choosing the thread count")
    core = matrix_core_for(target)
    rows = [r for r in target.mma_candidates(problem.shared_a, problem.shared_b, problem.accum)
            if core.supported(r.m, r.n, r.k, r.blocks, wave)]
    instruction_k = max((r.k for r in rows), default=16)
    return max(instruction_k, MIN_ROW_BYTES // element_bytes(problem.shared_a))


def _extents(problem_extent: int, skinny: int = 0) -> list[int]:
    """Block extents for a problem extent; one of `skinny` too where the
    problem's fits it (Backend.skinny_block)."""
    if 0 < problem_extent <= skinny < BLOCK_EXTENTS[0]:
        return [skinny, BLOCK_EXTENTS[0]]
    covering = next((e for e in BLOCK_EXTENTS if e >= problem_extent), BLOCK_EXTENTS[-1])
    return [e for e in BLOCK_EXTENTS if e <= covering]


@dataclass(frozen=True)
class Fixed:
    """What the user fixed (tile-tiling's options); empty or 0: free."""

    block: tuple[int, ...] = ()
    threads: int = 0
    stages: int = 0
    split_k: int = 0


def split_k_refusal(problem: GemmProblem) -> str | None:
    """Why this gemm's K cannot be split among workgroups (None when it can):
    the slices' partial sums are added into C atomically, in C's type, so C
    must hold the accumulator type (else each addition would round the sum
    to C's type) and be a type every backend adds atomically."""
    if problem.c != problem.accum:
        return (f"C holds {problem.c}, not the accumulator type {problem.accum}: the slices' partial "
                f"sums would be rounded to {problem.c} as they are added into C")
    if problem.c not in ATOMIC_ADD_TYPES:
        return f"C holds {problem.c}, which not every backend adds atomically ({', '.join(ATOMIC_ADD_TYPES)} only)"
    return None


def split_k_misfit(problem: GemmProblem, block: tuple[int, int, int], split_k: int, stages: int) -> str | None:
    """Why K in `block[2]` blocks cannot be cut into `split_k` slices (None
    when it can): the slices are equal (K's blocks divide evenly) and each
    at least `stages` iterations long (the pipelined loop's prologue)."""
    if split_k == 1:
        return None
    blocks = math.ceil(problem.k / block[2])
    if blocks % split_k:
        return f"K = {problem.k} is {blocks} blocks of {block[2]}, which {split_k} slices do not divide"
    if blocks // split_k < stages:
        return (f"K = {problem.k} in {split_k} slices is {blocks // split_k} blocks of {block[2]} each, "
                f"fewer than the {stages} pipeline stages")
    return None


def split_k_counts(problem: GemmProblem, block: tuple[int, int, int], facts: ModelFacts,
                   fixed: Fixed) -> list[int]:
    """The split-K factors to try for `block` (module docstring)."""
    if fixed.split_k:
        return [fixed.split_k]
    tiles = math.ceil(problem.m / block[0]) * math.ceil(problem.n / block[1])
    if split_k_refusal(problem) is not None or tiles >= facts.compute_units:
        return [1]
    return [1] + [s for s in SPLIT_K_COUNTS if tiles * s <= 2 * facts.compute_units]


def instruction_for(problem: GemmProblem, block: tuple[int, int, int], threads: int,
                    target: Target, prefer: str = "") -> tuple[MmaInstr, tuple[int, int], int] | str:
    """tile-select-mma's instruction for this block and thread count (under
    `prefer`), its wave split, and the waves that issue one instruction
    together; or why none fits."""
    shape = GemmShape(*block, problem.shared_a, problem.shared_b, problem.accum, problem.accum)
    result = select_mma_for(target, shape, threads, prefer)
    if isinstance(result, list):
        return "; ".join(result)
    choice, split = result
    row = next(r for r in target.mma if r.name == choice.name and r.types == (choice.a, choice.b, choice.c))
    return row, split, matrix_core_for(target).waves_per_instruction(row.name)


def preferences(target: Target) -> tuple[str, ...]:
    """The instruction families tile-select-mma takes only when preferred:
    those the matrix core issues from a group of waves (sm_90a's warpgroup
    wgmma), named by the first dotted part of their names."""
    core = matrix_core_for(target)
    return tuple(sorted({row.name.split(".")[0] for row in target.mma if core.waves_per_instruction(row.name) > 1}))


def operand_misfit(problem: GemmProblem, block: tuple[int, int, int], name: str, target: Target) -> str | None:
    """Why the matrix core's pipelined loop cannot fill this block's A or B
    tile for gemms of instruction `name` (None when it can)."""
    core = matrix_core_for(target)
    bm, bn, bk = block
    a = (bk, bm, problem.m) if problem.transpose_a else (bm, bk, problem.k)
    b = (bn, bk, problem.k) if problem.transpose_b else (bk, bn, problem.n)
    for (rows, cols, global_cols), stored in ((a, problem.a), (b, problem.b)):
        why = core.operand_misfit(name, rows, cols, global_cols, element_bytes(stored))
        if why:
            return why
    return None


def instruction_choices(problem: GemmProblem, block: tuple[int, int, int], threads: int,
                        target: Target) -> list[tuple[MmaInstr, tuple[int, int], int, str]]:
    """The instructions a block of `threads` can take: tile-select-mma's own
    choice, and under each of `preferences` the preferred row when it differs
    and the matrix core can fill its operands; each with its wave split, the
    waves that issue it together, and the preference it needs ("" for none)."""
    found = []
    chosen = instruction_for(problem, block, threads, target)
    if not isinstance(chosen, str):
        found.append((*chosen, ""))
    for prefix in preferences(target):
        chosen = instruction_for(problem, block, threads, target, prefix)
        if isinstance(chosen, str) or not chosen[0].name.startswith(prefix):
            continue
        if any(chosen[0] == row for row, *_ in found) or operand_misfit(problem, block, chosen[0].name, target):
            continue
        found.append((*chosen, prefix))
    return found


def wave_register_limit(facts: ModelFacts, waves: int) -> int:
    """Registers per lane the model's estimate may reach in a workgroup of
    `waves` waves: the descriptor's per-lane limit (256 on AMD, NVIDIA's 255
    per thread) and, with a unified file of architected and accumulation
    registers (AMD's CDNA: acc_vgprs_max stated), a wave's share of its SIMD's
    file where the workgroup's waves share SIMDs (8 waves over 4 SIMDs: 256),
    which such kernels get whole as architected registers
    (amdgpu lowering's share_fits_architected). The estimate leaves out
    addresses and the epilogue's conversions but counts a whole block K of
    operands, which llc reads as the matrix instructions go; llc-22's
    registers against the estimate, 8-wave 2-stage or one-stage 4096^3 gemms
    (bench/amd_vs_triton.py's harness): 208-230 where it is 256 (f16 256x256x64
    on gfx942, fp8 256x256x128, f16 256x256x64 on gfx950), 166-212 where it
    is 192, none spilling."""
    if not facts.has_accumulation_file:
        return facts.register_limit
    share = facts.register_file // math.ceil(waves / facts.simds_per_cu)
    return min(facts.register_limit, share)


def misfit(problem: GemmProblem, config: KernelConfig, target: Target) -> str | None:
    """Why `config` does not fit `target` (None when it does): the LDS, the
    accumulator budget, the registers of one lane, the grid, a CU's resources."""
    facts = model_facts(target)
    figures = kernel_figures(problem, config, facts)
    if figures.shared_bytes > facts.shared_bytes_per_workgroup:
        return f"needs {figures.shared_bytes} bytes of LDS"
    budget, _ = accumulator_register_budget(facts)
    if figures.accumulator_registers > budget:
        return f"its accumulator needs {figures.accumulator_registers} registers per lane"
    limit = wave_register_limit(facts, figures.waves)
    if figures.registers > limit:
        return f"needs about {figures.registers} registers per lane, more than the {limit} it may hold"
    grid = [math.ceil(problem.n / config.block[1]), math.ceil(problem.m / config.block[0])]
    if config.split_k > 1:
        grid.append(config.split_k)
    too_large = grid_problem(grid, config.threads, target)
    if too_large is not None:
        return too_large
    if min(occupancy(figures, facts).values()) < 1:
        return "a CU cannot hold one workgroup"
    return None


def streams(problem: GemmProblem, block: tuple[int, ...], facts: ModelFacts) -> bool:
    """Whether blocks of this M x N leave C in fewer tiles than the CUs (each
    CU streaming one tile's operands)."""
    return math.ceil(problem.m / block[0]) * math.ceil(problem.n / block[1]) < facts.compute_units


def candidate_configs(problem: GemmProblem, target: Target, fixed: Fixed = Fixed(),
                      stream: bool = False) -> tuple[KernelConfig, ...]:
    """Every configuration of the search space (module docstring) that fits
    `target`, in enumeration order (block M, N, K, waves, stages); with
    `stream`, blocks that leave C in fewer tiles than the CUs also in
    STREAM_STAGE_COUNTS stages and with STREAM_K_FACTOR times the block K."""
    facts = model_facts(target)
    wave = facts.wave_size
    if fixed.block:
        blocks = [tuple(fixed.block)]
    else:
        block_k = default_block_k(problem, target)
        # Decoded operands (fp8 read as f16) stay at twice: the decoding's scalar
        # registers spill at longer steps (gfx90a, `default_block_k`).
        longer = (facts.loop_issue_clocks or facts.issue_clocks_by_rows) and problem.k >= STREAM_K_FACTOR * block_k \
            and (problem.shared_a, problem.shared_b) == (problem.a, problem.b)
        ks = [block_k] + ([2 * block_k] if problem.k > block_k else []) + \
            ([STREAM_K_FACTOR * block_k] if longer else [])
        skinny = facts.skinny_block
        blocks = [(bm, bn, bk) for bm in _extents(problem.m, skinny) for bn in _extents(problem.n, skinny)
                  for bk in ks]
        blocks += [(bm, bn, STREAM_K_FACTOR * block_k) for bm, bn, bk in blocks
                   if stream and bk == block_k and problem.k > 2 * block_k and streams(problem, (bm, bn), facts)
                   and STREAM_K_FACTOR * block_k not in ks]
    threads = [fixed.threads] if fixed.threads else [w * wave for w in WAVE_COUNTS
                                                      if w * wave <= facts.max_threads_per_workgroup]
    core = matrix_core_for(target)
    found = []
    for block in blocks:
        for count in threads:
            for row, split, group, prefer in instruction_choices(problem, block, count, target):
                stages = [fixed.stages] if fixed.stages else list(STAGE_COUNTS) + (
                    list(STREAM_STAGE_COUNTS) if stream and streams(problem, block, facts) else [])
                for stage_count in stages:
                    if stage_count < core.min_stages(row.name):
                        continue
                    for split_k in split_k_counts(problem, block, facts, fixed):
                        if split_k_misfit(problem, block, split_k, stage_count) is not None:
                            continue
                        # A K loop of one iteration is no loop once tiled (the
                        # canonicalizer folds it): nothing to feed stage by stage.
                        iterations = math.ceil(math.ceil(problem.k / split_k) / block[2])
                        if core.min_stages(row.name) > 1 and iterations < 2:
                            continue
                        config = KernelConfig(block, count, stage_count, row, split, group, split_k, prefer)
                        if misfit(problem, config, target) is None:
                            found.append(config)
    return tuple(found)
