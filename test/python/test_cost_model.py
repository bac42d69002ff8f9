"""The cost model (tilemlir.cost), the configurations tile-tiling chooses among
(tilemlir.passes.gemm_configs), and what tile-compile --report says of them."""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tilemlir
from tilemlir.compiler import CompileOptions
from tilemlir.cost import facts as facts_module
from tilemlir.cost.facts import RULES, least_favourable, model_facts
from tilemlir.cost.model import DoesNotFit, GemmProblem, KernelConfig, kernel_figures, predict
from tilemlir.passes.gemm_configs import (
    Fixed,
    candidate_configs,
    instruction_for,
    misfit,
    wave_register_limit,
)
from tilemlir.passes.tiling import (
    NEAR,
    near_tie_reason,
    rank_configs,
    rank_key,
    ranked_candidates,
    reads_free_of_conflicts,
    simds_used,
    swizzles_free_of_conflicts,
    wave_share,
)
from tilemlir.runtime import load_module, run, run_emulator
from tilemlir.targets import get_target, load_target_file
from tilemlir.targets.model import UNKNOWN, UnknownFactError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_text import whole_problem_gemm

REPO = Path(__file__).resolve().parents[2]
GFX942 = get_target("amdgpu:gfx942")
F16 = GemmProblem(256, 256, 256, "f16", "f16", "f16", "f32")


def config(problem: GemmProblem, block, threads=256, stages=2, target=GFX942, split_k=1) -> KernelConfig:
    row, split, group = instruction_for(problem, block, threads, target)
    return KernelConfig(block, threads, stages, row, split, group, split_k)


ML_DTYPES = {"f16": np.float16, "f8E4M3FNUZ": "float8_e4m3fnuz", "f8E4M3FN": "float8_e4m3fn"}


def emulated_gemm_matches_float64(m: int, n: int, k: int, dtype: str, target: str, tiling: str = "") -> None:
    """C (f16) = A x B compiled for `target` (the model's tiling, or `tiling`)
    and run in the emulator: within one f16 rounding of C plus K f32
    roundings of the products' magnitudes of the float64 product."""
    import ml_dtypes

    element = ML_DTYPES[dtype] if dtype == "f16" else getattr(ml_dtypes, ML_DTYPES[dtype])
    rng = np.random.default_rng(m * n + k)
    a = rng.uniform(-2, 2, (m, k)).astype(element)
    b = rng.uniform(-2, 2, (k, n)).astype(element)
    c = np.full((m, n), np.nan, np.float16)
    module, _ = load_module(whole_problem_gemm(m, n, k, dtype, "f16"))
    run_emulator(module, "gemm", [a, b, c], target, CompileOptions(tiling=tiling))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    magnitude = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    bound = 2.0 ** -11 * np.abs(exact) + k * 2.0 ** -23 * magnitude + 2.0 ** -24
    assert np.all(np.abs(c.astype(np.float64) - exact) <= bound), f"{dtype} {m}x{n}x{k} on {target}"


# --------------------------------------------------------------------------
# The acceptance: a small GEMM on a large chip is spread over it
# --------------------------------------------------------------------------


def test_256_cubed_on_gfx942_fills_the_chip_and_the_report_says_why():
    """A 256x256x256 f16 GEMM on gfx942 (304 CUs) was 4 workgroups of 128x128;
    the cost model spreads it over more, each wave holding 1024 elements of C
    in 32x32 MFMAs (Backend.loop_issue_clocks_by_rows: a loop around 16x16
    ones issues more besides them; 32x64 blocks of 16x16 MFMAs kept the
    matrix unit 0.278 busy per iteration, 64x64 of 32x32 ones keep it 0.640),
    the report says the model chose it and what it predicts, the remark gives
    the runner-up, and the kernel it chose computes the GEMM (emulator
    against float64)."""
    text = whole_problem_gemm(256, 256, 256, "f16", "f16")
    result = tilemlir.compile(text, target="amdgpu:gfx942", emit="isa", options={"report": True},
                              remarks="tile-tiling")
    (kernel,) = result.report["kernels"]
    assert kernel["workgroups"] >= 16
    (decision,) = result.report["decisions"]
    assert decision["block"]["m"] * decision["block"]["n"] // decision["waves"] >= 32 * 32
    assert kernel["amdgpu"]["mfma_busy_ratio"] >= 0.5
    assert kernel["config_source"] == "model" and kernel["split_k"] == 1
    assert 0 < kernel["predicted_seconds"] < predict(F16, config(F16, (128, 128, 32)), GFX942).seconds
    (remark,) = [d.message for d in result.remarks if d.message.startswith("tile-tiling: block")]
    assert f"gemm: {kernel['workgroups']} workgroups on 304 CUs" in remark and "; runner-up: block " in remark
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((256, 256)).astype(np.float16) for _ in range(2))
    c = np.zeros((256, 256), np.float16)
    run(text, "gemm", [a, b, c], engine="emulator", target="amdgpu:gfx942")
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # f16 output rounding plus f32 sums of 256 products of values below ~5.
    assert np.abs(c.astype(np.float64) - exact).max() <= np.abs(exact).max() * 2.0 ** -10 + 256 * 25 * 2.0 ** -23


@pytest.mark.parametrize("target, shape", [("amdgpu:gfx942", (256, 256, 256)), ("amdgpu:gfx90a", (256, 256, 256)),
                                           ("amdgpu:gfx950", (200, 96, 136)), ("metax:xcore1000", (256, 256, 256))])
def test_near_ties_go_to_the_fullest_waves(target, shape):
    """Among the configurations whose tiles are read free of bank conflicts,
    predicted within NEAR of the fastest of them, the default's block gives
    each wave the largest share of it, is never one wave where a wider one
    fits (test_never_one_wave_where_a_wider_workgroup_fits) and loops over K
    where one that close does; of that block's
    wave counts, the default's fills the most SIMDs of a CU; the rest keep
    rank_key's order."""
    chip = get_target(target)
    facts = model_facts(chip)
    problem = GemmProblem(*shape, "f16", "f16", "f16", "f32")
    predicted = [(predict(problem, c, chip), c) for c in candidate_configs(problem, chip)]
    by_key = sorted(predicted, key=lambda pair: rank_key(*pair))
    free = [pair for pair in by_key if reads_free_of_conflicts(*pair, facts)]
    ranked = rank_configs(predicted, facts)
    limit = free[0][0].seconds * (1 + NEAR)
    near = [pair for pair in free if pair[0].seconds <= limit and pair[0].figures.waves > 1
            and pair[0].figures.iterations > 1]
    (chosen, config) = ranked[0]
    assert chosen.figures.waves > 1 and chosen.figures.iterations > 1 and chosen.seconds <= limit
    fullest = max(wave_share(*pair) for pair in near)
    assert any(pair[1].block == config.block and wave_share(*pair) == fullest for pair in near)
    same_block = [pair for pair in near if (pair[1].block, pair[1].stages) == (config.block, config.stages)]
    assert simds_used(chosen, facts) == max(simds_used(pair[0], facts) for pair in same_block)
    assert ranked[1:] == [pair for pair in by_key if pair is not ranked[0]]


def test_near_ties_keep_the_order_where_own_loads_are_weighed():
    """Where the family has producer-fed kernels (sm_90a) the ranking already
    weighs the waves' own operand loads (OWN_OPERAND_LOADS): rank_key's order
    stands (the H200's measured skinny fp8 GEMM lost 17% to the fuller waves)."""
    chip = get_target("nvidia:sm_90a")
    problem = GemmProblem(16, 8192, 8192, "f16", "f16", "f16", "f32")
    predicted = [(predict(problem, c, chip), c) for c in candidate_configs(problem, chip)]
    assert rank_configs(predicted, model_facts(chip)) == sorted(predicted, key=lambda pair: rank_key(*pair))


def test_report_fields_for_user_choices():
    """--tiling (any part of it) and a kernel written by hand are the user's;
    the model still predicts what --tiling gave; GPU-level input has no tile
    kernel to describe."""
    text = whole_problem_gemm(256, 256, 256, "f16", "f16")
    (given,) = tilemlir.compile(text, target="amdgpu:gfx942", emit="isa",
                                options={"report": True, "tiling": "block=128,128,32"}).report["kernels"]
    assert (given["workgroups"], given["split_k"], given["config_source"]) == (4, 1, "user")
    assert given["predicted_seconds"] > 0
    seed = (REPO / "examples" / "seed_fp8_gemm.mlir").read_text()
    (hand,) = tilemlir.compile(seed, target="amdgpu:gfx942", emit="isa", options={"report": True}).report["kernels"]
    assert (hand["workgroups"], hand["split_k"], hand["predicted_seconds"], hand["config_source"]) == (
        64, 1, None, "user")
    (gpu,) = tilemlir.compile((REPO / "examples" / "gpu" / "mfma_fp8_gfx942.mlir").read_text(),
                              target="amdgpu:gfx942", emit="isa", options={"report": True}).report["kernels"]
    assert (gpu["workgroups"], gpu["predicted_seconds"], gpu["config_source"]) == (None, None, "user")


def test_metax_report_has_the_fields():
    text = whole_problem_gemm(128, 128, 64, "f16", "f32")
    report = tilemlir.compile(text, target="metax:xcore1500", emit="maca", options={"report": True}).report
    (kernel,) = report["kernels"]
    assert kernel["config_source"] == "model" and kernel["predicted_seconds"] > 0
    assert kernel["workgroups"] >= 1 and kernel["split_k"] == 1


# --------------------------------------------------------------------------
# The formula
# --------------------------------------------------------------------------


def test_prediction_by_hand():
    """One 128x128 workgroup of 4 waves, K = 256 in 8 steps of 32, on gfx942,
    worked out from the descriptor: 2100 MHz, 4 SIMDs, 128 B/clock of LDS
    (32 banks x 4 B), 5300 GB/s, v_mfma_f32_32x32x8_f16 at 16384 FLOP / 32 cycles,
    and the device-memory latencies it assumes (idle, and under the load the
    launch puts on device memory)."""
    problem = GemmProblem(128, 128, 256, "f16", "f16", "f16", "f32")
    chosen = config(problem, (128, 128, 32))
    assert chosen.instruction.name == "v_mfma_f32_32x32x8_f16" and chosen.warp_grid == (2, 2)
    prediction = predict(problem, chosen, GFX942)
    # One wave's clocks per step: 512 of MFMAs, and the issue clocks the family
    # measured for gfx942's loops around 32-row MFMAs
    # (Backend.loop_issue_clocks_by_rows), which the one wave of each SIMD
    # does not overlap with anything.
    issue = model_facts(GFX942).issue_clocks(chosen.instruction)
    assert issue == 508
    matrix = 2 * 128 * 128 * 32 / 4 / (16384 / 32) + issue
    lds = (2 * 128 * 32 * 2 + 4 * (64 * 32 * 2) * 2) / 128  # tiles written, panels read: 384
    share = 5300e9 / 2100e6  # bytes per clock, one active CU
    memory = 2 * 128 * 32 * 2 / share
    idle, loaded = 296, 891  # assumed: the longest shipped (sm_90a's measured), 1 tile in flight at 2 stages

    def clocks(latency: float) -> float:  # steps, fill, C
        return 8 * max(matrix, lds, memory, latency) + memory + latency + 128 * 128 * 2 / share

    # A, B and C (160 KiB) fit gfx942's 32 MiB L2: device memory moves them once.
    busy = (2 * 128 * 256 * 2 + 128 * 128 * 2) / (clocks(idle) * share)
    assert prediction.seconds == pytest.approx(clocks(idle + busy * (loaded - idle)) / 2100e6, rel=1e-12)
    assert (prediction.workgroups, prediction.rounds, prediction.bound) == (1, 1, "matrix")
    # A measured busy ratio replaces the issue clocks' estimate.
    assert predict(problem, chosen, GFX942, busy_ratio=1.0).iteration_clocks == 512
    assert predict(problem, chosen, GFX942, busy_ratio=0.25).iteration_clocks == 2048
    figures = prediction.figures
    assert (figures.iterations, figures.global_bytes, figures.shared_bytes) == (8, 16384, 32768)
    assert figures.matrix_instructions == 16 and figures.accumulator_registers == 64


def test_pipeline_stages_hide_memory_latency():
    """A skinny GEMM (16 workgroups of two warps, little work per K step)
    waits on device memory: each stage past the first keeps one more tile in
    flight, so the latency a K step waits out halves from 2 to 3 stages (the
    latency itself between the idle and the loaded one: this launch keeps
    device memory partly busy). On nvidia a loop of one stage is not
    pipelined: its loads wait each step, on top of the gemm; on gfx942
    tile-pipeline still prefetches one tile through registers."""
    sm90 = get_target("nvidia:sm_90a")
    facts = model_facts(sm90)
    idle, loaded = facts.memory_latency_clocks, facts.loaded_latency_clocks
    problem = GemmProblem(16, 1024, 8192, "f16", "f16", "f16", "f32")
    times = {stages: predict(problem, config(problem, (32, 64, 32), 64, stages, sm90), sm90)
             for stages in (1, 2, 3, 4)}
    assert times[4].seconds < times[3].seconds < times[2].seconds < times[1].seconds
    assert [times[s].bound for s in (1, 2, 3, 4)] == ["unpipelined", "latency", "latency", "latency"]
    for stages in (2, 3, 4):
        assert idle < times[stages].iteration_clocks * (stages - 1) < loaded
    assert times[1].iteration_clocks > idle
    # gfx942's loops without their issue clocks (Backend.loop_issue_clocks),
    # which would bound these small steps: the latency's terms alone.
    gfx942 = dataclasses.replace(model_facts(GFX942), loop_issue_clocks=0, issue_clocks_by_rows=())
    amd = {stages: predict(problem, config(problem, (32, 64, 32), 64, stages), gfx942) for stages in (1, 2)}
    assert (amd[1].bound, amd[2].bound) == ("single-buffer", "latency")
    assert amd[1].iteration_clocks < times[1].iteration_clocks


def test_wave_quantisation():
    """Workgroups beyond what the CUs hold at once take another round: one
    more workgroup than the chip holds costs a whole round more."""
    problem = GemmProblem(128, 128, 4096, "f16", "f16", "f16", "f32")
    chosen = config(problem, (128, 128, 32))
    resident = predict(problem, chosen, GFX942).resident
    assert resident == 2  # the LDS bound: 2 x 32 KiB of 64 KiB
    full = 304 * resident

    def at(workgroups: int):
        return predict(dataclasses.replace(problem, m=128 * workgroups), chosen, GFX942)

    exact, over = at(full), at(full + 1)
    assert (exact.rounds, over.rounds) == (1, 2)
    assert over.seconds > 1.4 * exact.seconds
    # One fewer: the same round (its CUs' share of memory bandwidth barely changes).
    assert at(full - 1).seconds == pytest.approx(exact.seconds, rel=1e-2)


def test_busy_ratio_and_single_buffer_and_split_k():
    """llvm-mca's busy ratio lengthens an iteration the matrix unit bounds; one
    buffer serialises LDS stores after the reads; split-K multiplies the
    workgroups and divides their K steps."""
    problem = GemmProblem(128, 128, 256, "f16", "f16", "f16", "f32")
    chosen = config(problem, (128, 128, 32))
    plain = predict(problem, chosen, GFX942, busy_ratio=1.0)
    slow = predict(problem, chosen, GFX942, busy_ratio=0.5)
    assert slow.seconds > 1.9 * plain.seconds and slow.bound == "issue"
    # Without a measured ratio, the family's issue clocks (gfx942: 530 of a
    # 1042-clock step, as if the ratio were 0.49).
    estimate = predict(problem, chosen, GFX942)
    assert estimate.seconds > 1.9 * plain.seconds
    assert estimate.seconds == pytest.approx(slow.seconds, rel=0.05)
    single = predict(problem, dataclasses.replace(chosen, stages=1), GFX942, busy_ratio=1.0)
    assert single.seconds > plain.seconds and single.bound == "single-buffer"
    split = predict(problem, dataclasses.replace(chosen, split_k=2), GFX942, busy_ratio=1.0)
    assert split.workgroups == 2 and split.figures.iterations == 4
    assert split.seconds < plain.seconds


def test_resident_workgroups_of_the_compiled_kernel_replace_the_estimate():
    """A tuner passes the workgroups a CU holds as the compiled kernel allows
    (its real registers and LDS): fewer at once means more rounds; none is
    DoesNotFit, naming the compiled bound. (This one is memory-bound: the
    rounds share the bandwidth, so its time does not grow.)"""
    problem = GemmProblem(4096, 4096, 512, "f16", "f16", "f16", "f32")
    chosen = config(problem, (128, 128, 32))
    estimated = predict(problem, chosen, GFX942)
    assert estimated.resident > 1
    one = predict(problem, chosen, GFX942, resident=1)
    assert one.resident == 1 and one.occupancy_limits == (("compiled", 1),)
    assert one.rounds > estimated.rounds and one.seconds >= estimated.seconds
    same = predict(problem, chosen, GFX942, resident=estimated.resident)
    assert same.seconds == estimated.seconds
    with pytest.raises(DoesNotFit, match="its compiled bound is 0"):
        predict(problem, chosen, GFX942, resident=0)


def test_a_configuration_no_cu_holds_is_refused():
    """More LDS than a CU has: DoesNotFit names the bound; misfit says why.
    An empty problem is no problem to cost."""
    chosen = config(F16, (256, 256, 64), threads=512)
    with pytest.raises(DoesNotFit, match="its lds bound is 0"):
        predict(F16, chosen, GFX942)
    assert misfit(F16, chosen, GFX942) == "needs 131072 bytes of LDS"
    with pytest.raises(ValueError, match="non-empty problems"):
        predict(dataclasses.replace(F16, k=0), config(F16, (32, 32, 32)), GFX942)


def test_candidates_fit_and_respect_fixed_options():
    candidates = candidate_configs(F16, GFX942)
    assert candidates and all(misfit(F16, c, GFX942) is None for c in candidates)
    assert {c.split_k for c in candidates} == {1} and {c.stages for c in candidates} == {1, 2, 3, 4}
    fixed = candidate_configs(F16, GFX942, Fixed(block=(64, 64, 32), stages=2))
    assert fixed and {(c.block, c.stages) for c in fixed} == {((64, 64, 32), 2)}
    # Registers: 8 waves sharing 4 SIMDs hold 256 each, as architected
    # registers (the amdgpu lowering allocates them no AGPRs); 4 waves at most
    # the 256 architected registers of one lane.
    big = GemmProblem(4096, 4096, 4096, "f8E4M3FNUZ", "f8E4M3FNUZ", "f16", "f32")
    assert misfit(big, config(big, (256, 256, 64), threads=512), GFX942) is None
    assert misfit(big, config(big, (256, 256, 64), threads=256), GFX942) \
        == "needs about 352 registers per lane, more than the 256 it may hold"
    assert wave_register_limit(model_facts(GFX942), 8) == wave_register_limit(model_facts(GFX942), 4) == 256
    assert wave_register_limit(model_facts(GFX942), 16) == 128


# --------------------------------------------------------------------------
# Facts and assumptions
# --------------------------------------------------------------------------


def test_assumptions_are_the_least_favourable_shipped_values():
    """Each rule's value is the smallest (or largest) a shipped descriptor states."""
    from tilemlir.targets import shipped_targets

    shipped = shipped_targets()
    for rule in RULES:
        stated = [facts_module._field(t, rule.field) for t in shipped
                  if facts_module._field(t, rule.field) is not UNKNOWN]
        value, basis = least_favourable(rule.field)
        assert value == (min(stated) if rule.least == "min" else max(stated)), rule.field
        assert basis.startswith(rule.meaning)


def test_assumptions_come_from_chips_of_the_same_segment():
    """A datacenter part's unknown L2 is assumed from datacenter parts (a
    desktop card's 2 MiB would shrink every H200 prediction's reuse); a
    target whose segment is unknown draws on every shipped chip, and a fact
    no chip of the segment states falls back to them all."""
    assert least_favourable("memory.l2_mib", segment="datacenter") == (
        8, "the smallest L2 of the shipped descriptors (metax:xcore1000)")
    assert least_favourable("memory.l2_mib", segment="client") == (
        2, "the smallest L2 of the shipped descriptors (amdgpu:gfx1102)")
    assert least_favourable("memory.l2_mib")[0] == 2
    assert least_favourable("memory.latency_clocks", segment="client") == (
        296, "the longest device-memory latency of the shipped descriptors (nvidia:sm_90a)")
    unknown_segment = dataclasses.replace(get_target("nvidia:sm_90a"), segment=UNKNOWN)
    (l2,) = model_facts(unknown_segment).assumed
    assert (l2.field, l2.value) == ("memory.l2_mib", 2)


def test_facts_known_facts_are_not_assumed_and_a_descriptor_replaces_assumptions():
    # sm_90a's L2: 50 MB in secondary H100 sources, 60 MB from torch on the H200: unresolved.
    (l2,) = model_facts(get_target("nvidia:sm_90a")).assumed
    assert (l2.field, l2.value) == ("memory.l2_mib", 8)
    assert "the smallest L2 of the shipped descriptors (metax:xcore1000)" in l2.message()
    latency, loaded = model_facts(GFX942).assumed  # the gfx942 facts no source gives
    assert (latency.field, latency.value) == ("memory.latency_clocks", 296)
    assert (loaded.field, loaded.value) == ("memory.loaded_latency_clocks", 891)
    assert "the longest device-memory latency of the shipped descriptors (nvidia:sm_90a)" in latency.message()
    c500 = model_facts(get_target("metax:xcore1000"))
    assert {a.field for a in c500.assumed} == {
        "compute.logical_devices", "compute.simds_per_cu", "compute.max_waves_per_simd",
        "compute.max_threads_per_workgroup", "registers.vgprs_per_lane", "memory.shared_bytes_per_cu",
        "memory.shared_banks", "memory.shared_bank_bytes", "memory.hbm_bandwidth_gbps",
        "memory.latency_clocks", "memory.loaded_latency_clocks"}
    assert c500.compute_units == 104 // 2 and c500.clock_mhz == 1600  # stated ones are used
    stated = model_facts(load_target_file(REPO / "test" / "Transforms" / "Inputs" / "xcore1000_stated.toml"))
    assert stated.assumed == () and stated.vgprs_per_lane == 512 and stated.compute_units == 104


def test_instruction_rates():
    """Cycles when stated (sm_90a's mma.sync: measured, bench/mma_rate.cu);
    else the published peak (sm_90a's wgmma: 989.4 TFLOP/s over 132 SMs x 4 x
    1830 MHz); else the slowest shipped rate of the class."""
    rate, assumed = model_facts(GFX942).instruction_rate(GFX942.mma_candidates("f16", "f16", "f32")[0])
    assert (rate, assumed) == (512, None)
    sm90 = get_target("nvidia:sm_90a")
    mma_sync, *_, wgmma = sm90.mma_candidates("f16", "f16", "f32")
    assert mma_sync.name.startswith("mma.sync") and wgmma.name.startswith("wgmma")
    assert model_facts(sm90).instruction_rate(mma_sync) == (pytest.approx(2 * 16 * 8 * 16 / 6.02), None)
    rate, assumed = model_facts(sm90).instruction_rate(wgmma)
    assert rate == pytest.approx(989.4e12 / (132 * 4 * 1830e6)) and assumed is None
    c600 = get_target("metax:xcore1500")
    rate, assumed = model_facts(c600).instruction_rate(c600.mma_candidates("i8", "i8", "i32")[0])
    assert assumed is not None and assumed.field == "matrix.instructions[mma_16x16x32i8].cycles"
    assert rate == min(r.flops / r.cycles for t in (get_target("amdgpu:gfx90a"), GFX942,
                                                    get_target("amdgpu:gfx950"))
                       for r in t.mma if r.a == "i8")


def test_unknown_facts_without_a_rule_or_a_stated_value_are_errors(monkeypatch):
    """The wave size is never assumed; nor is a fact no shipped descriptor states."""
    no_wave = dataclasses.replace(GFX942, compute=dataclasses.replace(GFX942.compute, wave_size=UNKNOWN))
    with pytest.raises(UnknownFactError, match="'compute.wave_size' is not publicly known"):
        model_facts(no_wave)
    monkeypatch.setattr(facts_module, "_shipped", lambda segment=None: ())
    c600 = dataclasses.replace(get_target("metax:xcore1500"))  # a fresh object: not cached
    with pytest.raises(UnknownFactError, match="'compute.compute_units' is not publicly known"):
        model_facts(c600)


def test_figures_count_what_the_model_reads():
    problem = GemmProblem(100, 70, 50, "f8E4M3FN", "f8E4M3FN", "f16", "f32", reads_c=True,
                          compute_a="f16", compute_b="f16")
    xcore = get_target("metax:xcore1000")
    chosen = config(problem, (32, 32, 64), threads=256, target=xcore)
    figures = kernel_figures(problem, chosen, model_facts(xcore))
    assert figures.workgroups == math.ceil(100 / 32) * math.ceil(70 / 32)
    assert figures.iterations == 1
    assert figures.global_bytes == 2 * 32 * 64  # fp8 as stored
    assert figures.shared_bytes == 2 * 2 * 32 * 64 * 2  # f16 in shared memory, 2 stages
    assert figures.epilogue_bytes == 32 * 32 * 2 * 2  # C read and written


# --------------------------------------------------------------------------
# Hopper: L2 reuse among the workgroups running at once, its register file
# --------------------------------------------------------------------------

SM90 = get_target("nvidia:sm_90a")


def wgmma_config(problem: GemmProblem, block, threads, stages) -> KernelConfig:
    row, split, group = instruction_for(problem, block, threads, SM90, "wgmma")
    assert row.name.startswith("wgmma")
    return KernelConfig(block, threads, stages, row, split, group, prefer="wgmma")


def test_device_reach_counts_the_tiles_the_running_workgroups_share():
    """4096^3 f16 in 128x128x64 blocks, 2 resident per SM: the 264 running
    workgroups cover ceil(264 / 32) = 9 block rows by 32 block columns, so per
    K step device memory serves 9 A tiles and 32 B tiles of the 528 asked
    for. Operands that fit in the L2 come once in all."""
    from tilemlir.cost.model import device_reach

    facts = model_facts(SM90)
    big = GemmProblem(4096, 4096, 4096, "f16", "f16", "f16", "f32")
    chosen = wgmma_config(big, (128, 128, 64), 128, 3)
    figures = kernel_figures(big, chosen, facts)
    assert device_reach(big, chosen, figures, facts, resident=2) == pytest.approx((9 + 32) / (2 * 264))
    assert device_reach(big, chosen, figures, facts, resident=1) == pytest.approx((5 + 32) / (2 * 132))
    small = GemmProblem(1024, 1024, 1024, "f16", "f16", "f16", "f32")
    chosen = wgmma_config(small, (64, 64, 64), 128, 4)
    figures = kernel_figures(small, chosen, facts)
    requested = figures.workgroups * figures.iterations * 2 * 64 * 64 * 2
    assert device_reach(small, chosen, figures, facts, resident=3) == pytest.approx(2 * 1024 * 1024 * 2 / requested)


def test_hopper_registers_per_sm_and_accumulator_copies():
    """sm_90a's 65536 registers per SM are a file of 512 per lane of each
    sub-partition: a 128-thread block holding a 128x128 f32 accumulator
    (128 + 26 address registers per thread) fits three times by registers,
    twice once its wgmma K loop gets a producer warpgroup of 128 threads at 40
    registers (Backend.producer_prefix): 65536 / (128 x 160 + 128 x 40) = 2.56.
    8-bit wgmma keeps each block K's partial sums beside the sum: two
    accumulators (Backend.partial_sums_prefix)."""
    facts = model_facts(SM90)
    assert facts.register_file == 512 and facts.register_limit == 255 and not facts.copies_through_registers
    f16 = GemmProblem(4096, 4096, 4096, "f16", "f16", "f16", "f32")
    figures = kernel_figures(f16, wgmma_config(f16, (128, 128, 64), 128, 2), facts)
    assert figures.registers == 128 + 26
    from tilemlir.cost.model import occupancy

    assert figures.producer_waves == 4 and figures.producer_registers == 40
    assert occupancy(figures, facts)["registers"] == 2
    assert occupancy(figures, facts)["waves"] == 64 // (4 + 4)
    one_stage = kernel_figures(f16, wgmma_config(f16, (128, 128, 64), 128, 1), facts)
    assert one_stage.producer_waves == 0 and occupancy(one_stage, facts)["registers"] == 3
    fp8 = GemmProblem(4096, 4096, 4096, "f8E4M3FN", "f8E4M3FN", "f16", "f32", transpose_b=True)
    assert kernel_figures(fp8, wgmma_config(fp8, (128, 128, 128), 256, 2), facts).registers == 2 * 64 + 26
    assert misfit(fp8, wgmma_config(fp8, (128, 256, 128), 256, 2), SM90).startswith("needs about 282 registers")


def test_hopper_pipelines_cover_a_tiles_transfer_from_the_l2():
    """Measured on the H200 (bench/results/gemm-defaults-h200.md): a
    warp-specialized 128x256x64 f16 kernel at 4096^3 runs at 0.61 of its speed
    with 2 stages instead of 4. One stage in flight must hide a 48 KiB tile's
    latency and its transfer at the SM's share of the L2 (40 bytes a clock):
    the model ranks 4 stages first, and 2 stages bound by that latency."""
    f16 = GemmProblem(4096, 4096, 4096, "f16", "f16", "f16", "f32")
    two, four = (predict(f16, wgmma_config(f16, (128, 256, 64), 256, stages), SM90) for stages in (2, 4))
    assert two.bound == "latency" and four.bound == "matrix"
    assert four.seconds < 0.75 * two.seconds


def test_producer_fed_loops_pay_a_sync_per_iteration_and_fill_once():
    """Measured on the H200 (bench/gemm_defaults.py, 2026-12-04): f16 4096^3 in
    warp-specialized 128x256 blocks runs best with block K 64 in 4 stages (682
    TFLOP/s; K 32, 4 stages: 658; K 64, 3 stages: 634). Each iteration of a
    producer-fed loop costs the matrix units Backend.producer_loop_sync_clocks
    (fewer, longer iterations win); the producer loads a tile's first slots
    while the consumers finish the last, so only the first round fills, and
    the deeper pipeline, predicted within SAME, ranks first."""
    from tilemlir.passes.tiling import SAME
    from tilemlir.tune.search import candidates

    facts = model_facts(SM90)
    assert facts.producer_loop_sync_clocks > 0
    f16 = GemmProblem(4096, 4096, 4096, "f16", "f16", "f16", "f32")
    k32, k64, three = (predict(f16, wgmma_config(f16, (128, 256, bk), 256, stages), SM90)
                       for bk, stages in ((32, 4), (64, 4), (64, 3)))
    assert k32.iteration_clocks == 2 * k32.figures.matrix_clocks + facts.producer_loop_sync_clocks
    assert k64.seconds < k32.seconds
    assert three.seconds < k64.seconds < three.seconds * (1 + SAME)
    config = candidates(f16, SM90)[0].config
    assert (config.block, config.stages) == ((128, 256, 64), 4)


def test_streaming_launches_hold_what_they_need_in_flight():
    """Measured on the H200 (bench/gemm_defaults.py --sweep, 2026-12-04): f16
    16x8192x8192 in 128 workgroups of 32x64 mma.sync blocks ran 44.0 TFLOP/s
    with 36 KiB in flight per SM (block K 64, 4 stages, the model's fastest),
    49.7-51.2 with 72-144 KiB; the model's latency under load asks for 18 KiB.
    Where the fastest configuration of a launch of fewer workgroups than CUs
    is bound by device memory and holds less than the family's
    stream_bytes_in_flight, the candidates are searched again with deeper
    pipelines and longer K steps, and the fastest one within NEAR that holds
    it with the most workgroups comes first; every other launch keeps its
    ranking (the large shapes' defaults are unchanged), and a family that
    measured no such figure (AMD) is never searched again."""
    from tilemlir.passes.tiling import bytes_in_flight, rank_configs, ranked_candidates, starved

    facts = model_facts(SM90)
    skinny = GemmProblem(16, 8192, 8192, "f16", "f16", "f16", "f32")
    plain = rank_configs([(predict(skinny, c, SM90), c) for c in candidate_configs(skinny, SM90)], facts)
    assert starved(plain[0], facts)
    chosen, *_ = ranked_candidates(skinny, SM90)
    assert (chosen[1].block, chosen[1].stages) == ((32, 64, 128), 4)
    assert bytes_in_flight(*chosen) >= facts.stream_bytes_in_flight
    assert chosen[0].workgroups == plain[0][0].workgroups
    assert chosen[0].seconds <= plain[0][0].seconds * (1 + NEAR)
    result = tilemlir.compile(whole_problem_gemm(16, 8192, 8192, "f16", "f16"), target="nvidia:sm_90a", emit="tile",
                              remarks="tile-tiling")
    (remark,) = [d.message for d in result.remarks if d.message.startswith("tile-tiling: block")]
    assert remark.startswith("tile-tiling: block 32x64x128") and "72 KiB in flight per CU, that one 36" in remark
    large = GemmProblem(4096, 4096, 4096, "f16", "f16", "f16", "f32")
    assert ranked_candidates(large, SM90)[0][1] == rank_configs(
        [(predict(large, c, SM90), c) for c in candidate_configs(large, SM90)], facts)[0][1]
    gfx942 = model_facts(GFX942)
    assert gfx942.stream_bytes_in_flight == 0
    amd = ranked_candidates(skinny, GFX942)
    assert not starved(amd[0], gfx942)
    assert max(c.stages for _, c in amd) == 4


def test_kernels_loading_their_own_operands_are_weighed_where_a_producer_could():
    """The model does not cost mma.sync's operand loads. Measured on the H200:
    fp8 4096x4096x1024, the best mma.sync and wgmma blocks predicted 34.1 and
    34.2 us, measured 121 and 48 us at best; f16 512x512x8192, 32x64 mma.sync
    blocks predicted 28.6 us against 31.0 for 64x64 wgmma ones, measured 38
    and 19 us. Weighed by OWN_OPERAND_LOADS, the warp-specialized wgmma kernel
    ranks first in both; AMD's order, which has no producer kernels, is the
    predicted time's, to within NEAR of the fastest whose tiles leave LDS to
    pad their rows in (rank_configs)."""
    from tilemlir.tune.search import candidates

    def first(problem, target):  # tile-compile's default: tile-tiling's order
        return candidates(problem, target)[0].config

    fp8 = GemmProblem(4096, 4096, 1024, "f8E4M3FN", "f8E4M3FN", "f16", "f32", transpose_b=True)
    assert first(fp8, SM90).instruction.name.startswith("wgmma.")
    long_k = GemmProblem(512, 512, 8192, "f16", "f16", "f16", "f32")
    assert first(long_k, SM90).instruction.name.startswith("wgmma.")
    assert predict(long_k, first(long_k, SM90), SM90).own_operand_loads is False
    gfx942 = get_target("amdgpu:gfx942")
    f16 = GemmProblem(1024, 1024, 1024, "f16", "f16", "f16", "f32")
    chosen = first(f16, gfx942)
    fastest = min(predict(f16, c, gfx942).seconds for c in candidate_configs(f16, gfx942)
                  if not _does_not_fit(f16, c, gfx942))
    assert fastest <= predict(f16, chosen, gfx942).seconds <= fastest * (1 + NEAR)


def _does_not_fit(problem, config, target) -> bool:
    try:
        predict(problem, config, target)
    except DoesNotFit:
        return True
    return False


def test_the_remark_says_why_a_faster_prediction_ranks_second():
    """When the near-tie rule passes over a faster prediction, tile-tiling's
    remark gives the reason: here gfx942's 32x32 blocks of 4 waves for
    256^3, whose waves hold a quarter as much of C (`rank_configs`)."""
    result = tilemlir.compile(whole_problem_gemm(256, 256, 256, "f16", "f16"), target="amdgpu:gfx942", emit="tile",
                              remarks="tile-tiling")
    (remark,) = [d.message for d in result.remarks if d.message.startswith("tile-tiling: block 64x64x128")]
    assert "runner-up: block 32x32x128, 256 threads" in remark
    assert re.search(r"\(predicted faster by [0-9]%, but its waves hold 256 elements of C each, this one's 1024", remark)


def test_issue_clocks_by_chip():
    """Backend.loop_issue_clocks: a chip the family measured takes its own
    figure, another chip of the family the family's, another family none;
    Backend.loop_issue_clocks_by_rows: where the family measured them apart
    by the MFMA's rows, an instruction of those rows takes its rows' figure,
    one of other rows the chip's; a chip measured as a whole but not apart
    (the wave32 chips, whose WMMAs all have 16 rows) keeps its one figure."""
    from tilemlir.targets.model import MmaInstr

    def row(m: int) -> MmaInstr:
        return MmaInstr(name=f"v_mfma_f32_{m}x{m}x8_f16", m=m, n=m, k=8, blocks=1, a="f16", b="f16", c="f32",
                        cycles=32)

    gfx942 = model_facts(GFX942)
    assert gfx942.loop_issue_clocks == 652
    assert (gfx942.issue_clocks(row(16)), gfx942.issue_clocks(row(32)), gfx942.issue_clocks(row(4))) == (696, 508, 652)
    rdna3 = model_facts(get_target("amdgpu:gfx1100"))
    assert rdna3.loop_issue_clocks == 207 and rdna3.issue_clocks(row(16)) == 207
    assert model_facts(get_target("amdgpu:gfx1201")).loop_issue_clocks == 207  # gfx1100's, the wave32 chips'
    # A chip of the family the tables do not name: the CDNA loops' medians.
    gfx940 = dataclasses.replace(GFX942, processor="gfx940")
    assert facts_module.loop_issue_clocks(gfx940) == 492
    assert facts_module.issue_clocks_by_rows(gfx940) == ((16, 552), (32, 404))
    for other in ("nvidia:sm_90a", "metax:xcore1000"):
        facts = model_facts(get_target(other))
        assert (facts.loop_issue_clocks, facts.issue_clocks_by_rows) == (0, ())


def test_tiles_read_free_of_conflicts_come_first():
    """f16 1024^3 on gfx90a: rank_key's fastest, 128x128x64 in 2 stages,
    fills the 64 KiB of LDS; its padding does not fit and its rows are
    XOR-swizzled instead (AMD's cores read swizzled rows), so it counts as
    read free of conflicts, and the default compiles free of them. On MetaX,
    whose core reads no swizzled rows, tiles that leave no LDS to pad come
    after those that do."""
    chip = get_target("amdgpu:gfx90a")
    facts = model_facts(chip)
    problem = GemmProblem(1024, 1024, 1024, "f16", "f16", "f16", "f32")
    predicted = [(predict(problem, c, chip), c) for c in candidate_configs(problem, chip)]
    fastest = min(predicted, key=lambda pair: rank_key(*pair))
    assert fastest[1].block == (128, 128, 64) and fastest[0].figures.shared_bytes == 65536
    assert reads_free_of_conflicts(*fastest, facts)
    chosen = rank_configs(predicted, facts)[0]
    result = tilemlir.compile(whole_problem_gemm(1024, 1024, 1024, "f16", "f16"), target="amdgpu:gfx90a", emit="isa",
                              options={"report": True})
    (decision,) = result.report["decisions"]
    assert tuple(decision["block"][axis] for axis in "mnk") == chosen[1].block
    assert decision["lds_bank_conflicts_per_iteration"] == 0 and result.report["kernels"][0]["spills"] == 0
    # That configuration, on fewer workgroups, in the emulator.
    block, threads, stages = chosen[1].block, chosen[1].threads, chosen[1].stages
    emulated_gemm_matches_float64(256, 256, 128, "f16", "amdgpu:gfx90a",
                                  f"block={','.join(map(str, block))} threads={threads} stages={stages}")
    metax = get_target("metax:xcore1000")
    metax_facts = model_facts(metax)
    predicted = [(predict(problem, c, metax), c) for c in candidate_configs(problem, metax)]
    full = [pair for pair in predicted if not reads_free_of_conflicts(*pair, metax_facts)]
    assert full and all(pair[0].figures.shared_bytes + 8 * pair[1].stages * 2 * 128 > 65536 for pair in full)
    assert reads_free_of_conflicts(*rank_configs(predicted, metax_facts)[0], metax_facts)


def test_skinny_problems_get_blocks_of_their_rows():
    """M = 16 (decoding): AMD and MetaX also try 16-row blocks
    (Backend.skinny_block), nvidia does not (its skinny defaults were
    measured with 32-row blocks); gfx942's default takes one, for M = 16 and
    for N = 16, and runs."""
    problem = GemmProblem(16, 512, 512, "f16", "f16", "f16", "f32")
    rows = {target: {c.block[0] for c in candidate_configs(problem, get_target(target))}
            for target in ("amdgpu:gfx942", "metax:xcore1000", "nvidia:sm_90a")}
    assert rows == {"amdgpu:gfx942": {16, 32}, "metax:xcore1000": {16, 32}, "nvidia:sm_90a": {32}}
    for (m, n, k), axis in (((16, 512, 512), "m"), ((512, 16, 512), "n")):
        text = whole_problem_gemm(m, n, k, "f16", "f16")
        result = tilemlir.compile(text, target="amdgpu:gfx942", emit="isa", options={"report": True})
        assert result.report["decisions"][0]["block"][axis] == 16 and result.report["kernels"][0]["spills"] == 0
        emulated_gemm_matches_float64(m, n, k, "f16", "amdgpu:gfx942")
    emulated_gemm_matches_float64(16, 512, 512, "f16", "metax:xcore1000")


@pytest.mark.parametrize("chip,shape,dtype,out,accum", [
    ("gfx942", (2048, 2048, 200), "f32", "f16", "f32"),  # 4-byte lane reads
    ("gfx942", (1024, 1024, 1024), "f32", "f32", "f32"),
    ("gfx90a", (1024, 1024, 1024), "i8", "i32", "i32"),
    ("gfx90a", (2048, 2048, 200), "i8", "i32", "i32"),
    ("gfx942", (4096, 4096, 4096), "f16", "f16", "f32"),  # 256x256x64 in one stage, swizzled
], ids=["gfx942-f32-2048x2048x200", "gfx942-f32-1024", "gfx90a-i8-1024", "gfx90a-i8-2048x2048x200",
        "gfx942-f16-4096"])
def test_defaults_read_free_of_conflicts(chip, shape, dtype, out, accum):
    """tile-tiling counts XOR-swizzled rows as read free of conflicts only
    where they are (`swizzles_free_of_conflicts`: 16-bit operands, a stated
    bank count, K rows spanning every bank): 4-byte lane reads (f32, gfx90a's
    i8) conflict in swizzled rows, and their defaults keep padded ones (a
    second reader found 128-192 conflict clocks per iteration when every
    swizzle counted). Each default compiles without conflicts or spills."""
    result = tilemlir.compile(whole_problem_gemm(*shape, dtype, out, accum=accum), target=f"amdgpu:{chip}",
                              emit="isa", options={"report": True})
    (decision,) = result.report["decisions"]
    assert decision["lds_bank_conflicts_per_iteration"] == 0 and result.report["kernels"][0]["spills"] == 0


def test_swizzles_count_where_the_model_knows_them_conflict_free():
    """16-bit operands in 128-byte K rows on gfx942 (32 banks of 4 bytes);
    not f32 or fp8 (lanes of 4 bytes, 1-byte rows written transposed: fp8 A
    stored K x M read 0.472 -> 0.214 of the matrix unit busy in swizzled
    128x128x128 blocks), nor 64-byte rows, nor gfx950, whose bank count is
    not published."""
    def swizzled(chip: str, dtype: str, block: tuple[int, int, int], threads: int = 512) -> bool:
        target = get_target(f"amdgpu:{chip}")
        problem = GemmProblem(4096, 4096, 4096, dtype, dtype, "f16", "f32")
        cfg = config(problem, block, threads=threads, stages=1, target=target)
        return swizzles_free_of_conflicts(predict(problem, cfg, target), cfg, model_facts(target))

    assert swizzled("gfx942", "f16", (256, 256, 64)) and swizzled("gfx942", "bf16", (128, 128, 64), 256)
    assert not swizzled("gfx942", "f16", (256, 256, 32))
    assert not swizzled("gfx942", "f32", (128, 128, 32), 256)
    assert not swizzled("gfx942", "f8E4M3FNUZ", (256, 256, 128))
    assert not swizzled("gfx950", "f16", (256, 256, 64))


def test_a_launch_of_few_workgroups_fills_the_simds():
    """f16 16x8192x8192 on gfx942: 128 workgroups of 16x64 blocks for 304
    CUs, one a CU: of that block, 4 waves (every SIMD of the CU) rather than
    2, which the model predicts alike (tiling.simds_used), and the remark's
    reason says so; the block with 4 waves runs."""
    chip = get_target("amdgpu:gfx942")
    facts = model_facts(chip)
    problem = GemmProblem(16, 8192, 8192, "f16", "f16", "f16", "f32")
    predicted = [(predict(problem, c, chip), c) for c in candidate_configs(problem, chip)]
    chosen, config = rank_configs(predicted, facts)[0]
    assert config.block[:2] == (16, 64) and config.threads == 256 and simds_used(chosen, facts) == 4
    two = [pair for pair in predicted if (pair[1].block, pair[1].stages, pair[1].threads)
           == (config.block, config.stages, 128)]
    assert two and simds_used(two[0][0], facts) == 2 and two[0][0].seconds == chosen.seconds
    assert near_tie_reason((chosen, config), two[0], facts) == "its waves occupy 2 of a CU's SIMDs, this one's 4"
    tiling = f"block={','.join(map(str, config.block))} threads=256 stages={config.stages}"
    emulated_gemm_matches_float64(16, 256, 512, "f16", "amdgpu:gfx942", tiling)


def test_decoded_fp8_steps_k_by_its_decoded_width():
    """gfx90a decodes fp8 to f16 on the way to shared memory: its block K
    follows f16's 64 bytes a row (32, and twice that), whose decoding fits the
    scalar registers (K steps of 128 spilled 2 to 14 SGPRs, llc-22); the
    default compiles without falling back."""
    from tilemlir.cost.model import GemmShape
    from tilemlir.passes.gemm_configs import default_block_k, gemm_problem

    chip = get_target("amdgpu:gfx90a")
    problem = gemm_problem(GemmShape(256, 256, 256, "f8E4M3FNUZ", "f8E4M3FNUZ", "f16", "f32"), chip, True)
    assert problem.shared_a == "f16" and default_block_k(problem, chip) == 32
    assert default_block_k(dataclasses.replace(problem, compute_a="", compute_b=""), chip) == 64
    result = tilemlir.compile(whole_problem_gemm(256, 256, 256, "f8E4M3FNUZ", "f16"), target="amdgpu:gfx90a",
                              emit="isa", options={"report": True})
    assert result.report["spill_fallback"] is None and result.report["kernels"][0]["spills"] == 0
    emulated_gemm_matches_float64(256, 256, 256, "f8E4M3FNUZ", "amdgpu:gfx90a")
    # MetaX decodes fp8 to f16 too.
    emulated_gemm_matches_float64(64, 96, 256, "f8E4M3FN", "metax:xcore1000")


@pytest.mark.parametrize("target", ["amdgpu:gfx90a", "amdgpu:gfx942", "amdgpu:gfx950", "amdgpu:gfx1100",
                                    "metax:xcore1000"])
def test_small_gemm_defaults_run(target):
    """The defaults the issue clocks and the room-to-pad rule choose for the
    static table's odd small shape (4-wave workgroups on CDNA, gfx950's LDS
    transpose reads) compute the GEMM in the emulator."""
    emulated_gemm_matches_float64(200, 96, 136, "f16", target)


def test_never_one_wave_where_a_wider_workgroup_fits():
    """C += A x B, 32x32x128 into f32 on gfx942: one wave of 32x32 MFMAs in 4 K slices is
    predicted 10% faster than 4 waves of 16x16 ones, beyond NEAR; the
    default is still the wider workgroup (the fastest of those), and the
    remark says why the faster one ranks second; it computes the GEMM."""
    text = whole_problem_gemm(32, 32, 128, "f16", "f32", zero_fill=False)
    result = tilemlir.compile(text, target="amdgpu:gfx942", emit="tile", remarks="tile-tiling")
    (remark,) = [d.message for d in result.remarks if d.message.startswith("tile-tiling: block")]
    assert remark.startswith("tile-tiling: block 32x32x128, 256 threads (4 waves as 2x2)")
    assert "runner-up: block 32x32x32, 64 threads (1 wave as 1x1)" in remark
    assert re.search(r"\(predicted faster by [0-9]+%, but it is a workgroup of one wave\)", remark)
    a, b = (np.random.default_rng(1).uniform(-1, 1, (32, 128)).astype(np.float16),
            np.random.default_rng(2).uniform(-1, 1, (128, 32)).astype(np.float16))
    c = np.ones((32, 32), np.float32)
    run(text, "gemm", [a, b, c], engine="emulator", target="amdgpu:gfx942")
    exact = 1 + a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - exact).max() <= 128 * 2.0 ** -22 * (np.abs(a.astype(np.float64)) @ np.abs(b)).max()


@pytest.mark.parametrize("m, n, k, target", [(32, 32, 128, "amdgpu:gfx950"), (16, 16, 4096, "amdgpu:gfx1201"),
                                             (24, 4, 4, "amdgpu:gfx950"), (1, 1, 4096, "amdgpu:gfx1201")])
def test_wider_workgroups_than_one_wave_run(m, n, k, target):
    """Where one wave was predicted fastest beyond NEAR, the default now takes
    more waves (gfx950's 32x32x128 in 4 waves of 16x16 MFMAs, gfx1201's
    16x16x4096 in 16x32 blocks of 2 waves in 8 K slices); C += A x B into f32
    computes the GEMM in the emulator."""
    from tilemlir.cost.model import GemmShape
    from tilemlir.passes.gemm_configs import gemm_problem

    text = whole_problem_gemm(m, n, k, "f16", "f32", zero_fill=False)
    chip = get_target(target)
    (_, default), *_ = ranked_candidates(gemm_problem(GemmShape(m, n, k, "f16", "f16", "f32", "f32"), chip, False),
                                         chip)
    assert default.threads // model_facts(chip).wave_size > 1
    rng = np.random.default_rng(m + k)
    a, b = rng.uniform(-1, 1, (m, k)).astype(np.float16), rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.ones((m, n), np.float32)
    run(text, "gemm", [a, b, c], engine="emulator", target=target)
    exact = 1 + a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - exact).max() <= (k + 16) * 2.0 ** -22 * (np.abs(a.astype(np.float64)) @ np.abs(b)).max()


@pytest.mark.parametrize("m, n, k, dtype, target, block", [
    (256, 256, 256, "f16", "amdgpu:gfx950", (32, 64, 128)),
    (200, 96, 136, "f8E4M3FNUZ", "amdgpu:gfx942", (128, 32, 128)),
    (256, 256, 256, "f8E4M3FNUZ", "amdgpu:gfx942", (32, 64, 256))])
def test_defaults_of_the_issue_clocks_by_rows_run(m, n, k, dtype, target, block):
    """Defaults of the static table that the issue clocks measured apart by
    the MFMA's rows (Backend.loop_issue_clocks_by_rows) choose: fewer,
    fuller workgroups of 32-row MFMAs where 16-row ones were predicted as
    fast; each computes the GEMM in the emulator."""
    chip = get_target(target)
    problem = GemmProblem(m, n, k, dtype, dtype, "f16", "f32")
    (_, default), *_ = ranked_candidates(problem, chip)
    assert default.block == block
    emulated_gemm_matches_float64(m, n, k, dtype, target)


def test_amd_gemms_may_step_k_four_times_the_block():
    """AMD's waves pay issue clocks per K iteration (Backend.loop_issue_clocks),
    which a skinny GEMM's few matrix instructions per iteration do not hide:
    its candidates include K steps of four times the block K, and for
    16x8192x8192 f16 on gfx942 the model takes 128 (64 iterations where 64
    took 128; llvm-mca's busy ratio 0.103 -> 0.213). Not where the operands
    are decoded on the way to shared memory (fp8 on gfx90a: its decoding's
    SGPRs spill at longer steps), nor on a family that pays none (sm_90a)."""
    from tilemlir.cost.model import GemmShape
    from tilemlir.passes.gemm_configs import default_block_k, gemm_problem
    from tilemlir.passes.tiling import ranked_candidates

    skinny = GemmProblem(16, 8192, 8192, "f16", "f16", "f16", "f32")
    step = default_block_k(skinny, GFX942)
    assert {c.block[2] for c in candidate_configs(skinny, GFX942)} == {step, 2 * step, 4 * step}
    (_, chosen), *_ = ranked_candidates(skinny, GFX942)
    assert chosen.block[2] == 4 * step == 128
    # Such defaults compute the GEMM (K steps of 128 f16, 256 fp8), in the emulator.
    for m, n, k, dtype, target in ((16, 256, 1024, "f16", "amdgpu:gfx942"), (16, 256, 1024, "f16", "amdgpu:gfx950"),
                                   (16, 256, 1024, "f16", "amdgpu:gfx90a"),
                                   (32, 128, 512, "f8E4M3FNUZ", "amdgpu:gfx942")):
        problem = GemmProblem(m, n, k, dtype, dtype, "f16", "f32")  # as the emulated GEMM: C in f16
        (_, default), *_ = ranked_candidates(problem, get_target(target))
        assert default.block[2] == 4 * default_block_k(problem, get_target(target)), (target, default.block)
        emulated_gemm_matches_float64(m, n, k, dtype, target)
    assert max(c.block[2] for c in candidate_configs(skinny, SM90)) == 2 * default_block_k(skinny, SM90)
    gfx90a = get_target("amdgpu:gfx90a")
    decoded = gemm_problem(GemmShape(256, 256, 256, "f8E4M3FNUZ", "f8E4M3FNUZ", "f16", "f32"), gfx90a, True)
    assert max(c.block[2] for c in candidate_configs(decoded, gfx90a)) == 2 * default_block_k(decoded, gfx90a)
