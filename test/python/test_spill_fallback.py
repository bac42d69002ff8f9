"""No spill at the default (issue 28): when the configuration tile-tiling's
cost model chose compiles to a kernel that spills registers, tile-compile
compiles the model's next-ranked configuration instead (at most
MAX_SPILL_FALLBACKS of them) and says so in a remark; a configuration someone
gave (--tiling, a tuning database) that spills stays an error (unless it
compiles without tile-pipeline's prefetch: test_attention.py's RDNA case).

gfx90a has no fp8 matrix instruction: its fp8 GEMMs decode A and B to f16
on the way to shared memory, and the decoding's SGPRs made 128x128x64 in 256
threads spill 9 SGPRs (llc-22 -mcpu=gfx90a; its rows XOR-swizzled where the padding
does not fit the LDS) for the whole-problem example:
rank_key's favourite, which tile-tiling's near-tie rule (rank_configs) no
longer puts first. Its MFMAs now read those swizzled rows two K steps at a
time (tile.operand_read_steps), and it no longer spills; the tests below keep
the one-step reads (`one_step_reads`) to keep a configuration that spills. gfx1100 widens fp8 to f16 too, and its first two
configurations for 256^3 spill."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tilemlir
from tilemlir import compiler
from tilemlir.compiler import CompileError, CompileOptions
from tilemlir.runtime import load_module, run_emulator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO, run_tool
from kernel_text import whole_problem_gemm

EXAMPLE = REPO / "examples" / "gemm_whole_problem.mlir"


def test_whole_problem_example_on_gfx90a_compiles_without_spills():
    done = run_tool("tile-compile", str(EXAMPLE), "--target", "amdgpu:gfx90a", "--emit", "isa", "--report",
                    "--no-tuning-db", "-o", os.devnull)
    assert done.returncode == 0, done.stderr
    (kernel,) = json.loads(done.stdout)["kernels"]
    assert kernel["spills"] == 0 and kernel["config_source"] == "model"


def unpeeled(monkeypatch) -> None:
    """tile-pipeline as it was before it peeled amdgpu's loops (the prefetch
    clamped to the last tile), under which the configurations below spill: the
    peeled loop saves the clamp's scalar registers."""
    from tilemlir.passes import software_pipeline

    monkeypatch.setattr(software_pipeline.TilePipeline, "peels", lambda self, module: False)


@pytest.fixture
def one_step_reads(monkeypatch):
    """The MFMAs read one K step a read in any rows (as before
    tile.operand_read_steps) and the loop is not peeled (`unpeeled`), under
    which 128x128x64 fp8 on gfx90a spills."""
    from tilemlir.backends.amdgpu import matrix

    monkeypatch.setattr(matrix.MfmaCore, "k_steps_per_read", lambda self, gemm, wave_size: 1)
    unpeeled(monkeypatch)


def test_two_steps_a_read_spill_no_sgprs_there():
    """With two K steps a read in its swizzled rows, 128x128x64 fp8 in 256
    threads on gfx90a compiles without spills."""
    report = tilemlir.compile(EXAMPLE.read_text(), target="amdgpu:gfx90a", emit="isa",
                              options={"report": True, "tiling": "block=128,128,64 threads=256 stages=2"}).report
    assert report["kernels"][0]["spills"] == 0


@pytest.mark.usefixtures("one_step_reads")
def test_a_default_that_spills_falls_back_to_a_configuration_that_does_not(monkeypatch):
    """With rank_key's order alone (no near-tie rule), the model's favourite
    for the example on gfx90a is 128x128x64 in 256 threads, which spills, and
    so does the next; the first that does not is compiled and the remark says so."""
    from tilemlir.passes import tiling

    monkeypatch.setattr(tiling, "rank_configs",
                        lambda predicted, facts: sorted(predicted, key=lambda pair: tiling.rank_key(*pair)))
    result = tilemlir.compile(EXAMPLE.read_text(), target="amdgpu:gfx90a", emit="isa", options={"report": True},
                              remarks="all")
    report = result.report
    (kernel,) = report["kernels"]
    assert kernel["spills"] == 0 and kernel["config_source"] == "model"
    fallback = report["spill_fallback"]
    tried = fallback["tried"]
    assert fallback["rank"] == len(tried) >= 1
    assert tried[0]["configuration"].startswith("block 128x128x64, 256 threads, 2 stages")
    assert tried[0]["spills"] == [{"kernel": "gemm_kernel0", "vgpr_spills": 0, "sgpr_spills": 9}]
    assert all(attempt["spills"] for attempt in tried)
    messages = [d.message for d in result.remarks]
    (remark,) = [m for m in messages if m.startswith("tile-compile:")]
    assert "rank 0 (block 128x128x64, 256 threads, 2 stages" in remark
    assert "spills 0 VGPRs and 9 SGPRs" in remark
    assert f"used rank {fallback['rank']} ({fallback['configuration']})" in remark
    threads = int(fallback["configuration"].split(", ")[1].split()[0])
    assert report["decisions"][0]["threads"] == threads  # what the remark says was used
    # The spilling attempts' own remarks are withdrawn: one tiling remark, the one used.
    (tiling_remark,) = [m for m in messages if m.startswith("tile-tiling: block")]
    assert f"ranked {fallback['rank'] + 1} (rank={fallback['rank']}) of" in tiling_remark


@pytest.mark.usefixtures("one_step_reads")
def test_a_given_configuration_that_spills_is_still_refused():
    text = EXAMPLE.read_text()
    with pytest.raises(CompileError, match="spills 0 VGPRs and 9 SGPRs"):
        tilemlir.compile(text, target="amdgpu:gfx90a", emit="isa",
                         options={"tiling": "block=128,128,64 threads=256 stages=2"})


# gfx1100 has no fp8 instruction: fp8 is widened to f16 on the way to shared
# memory, and RDNA3's WMMAs read their operands replicated in both lane halves;
# the model's first two configurations for 256^3 (2 waves of 32 lanes) spill.
RDNA3_FP8 = (256, 256, 256)


def test_when_every_configuration_tried_spills_the_models_error_stands(monkeypatch):
    """256^3 fp8 on gfx1100: the model's first two configurations spill (unpeeled)."""
    unpeeled(monkeypatch)
    monkeypatch.setattr(compiler, "MAX_SPILL_FALLBACKS", 1)
    text = whole_problem_gemm(*RDNA3_FP8, "f8E4M3FNUZ", "f16")
    with pytest.raises(CompileError) as error:
        tilemlir.compile(text, target="amdgpu:gfx1100", emit="isa")
    (diag,) = error.value.diags
    assert "spills 213 VGPRs and 78 SGPRs" in diag.message
    (note,) = diag.notes
    assert "next-ranked configurations spill too: rank 1 (block 64x32x64" in note.message


def test_rank_is_refused_where_it_picks_nothing():
    text = whole_problem_gemm(64, 64, 64, "f16", "f16")
    with pytest.raises(CompileError, match="block, threads and stages leave it none to pick"):
        tilemlir.compile(text, target="amdgpu:gfx942", emit="tile",
                         options={"tiling": "block=32,32,32 threads=64 stages=1 rank=1"})
    with pytest.raises(CompileError, match=r"rank=100000, but the model ranks \d+ configurations"):
        tilemlir.compile(text, target="amdgpu:gfx942", emit="tile", options={"tiling": "rank=100000"})


def test_the_fallen_back_kernel_runs_in_the_emulator():
    """256^3 fp8 on gfx1100: the model's first two configurations spill; the
    kernel compiled instead computes the GEMM (the emulator, against float64)."""
    m, n, k = RDNA3_FP8
    text = whole_problem_gemm(m, n, k, "f8E4M3FNUZ", "f16")
    report = tilemlir.compile(text, target="amdgpu:gfx1100", emit="isa", options={"report": True}).report
    assert report["kernels"][0]["spills"] == 0 and report["spill_fallback"]["rank"] == 2
    rng = np.random.default_rng(0)
    a = rng.uniform(-2, 2, (m, k)).astype(ml_dtypes.float8_e4m3fnuz)
    b = rng.uniform(-2, 2, (k, n)).astype(ml_dtypes.float8_e4m3fnuz)
    c = np.full((m, n), np.nan, np.float16)
    module, _ = load_module(text)
    rank = report["spill_fallback"]["rank"]
    run_emulator(module, "gemm", [a, b, c], "amdgpu:gfx1100", CompileOptions(tiling=f"rank={rank}"))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # fp8 products are exact in f32; sums of 256 of them in f32, then one rounding to f16.
    magnitude = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    bound = 2.0 ** -11 * np.abs(exact) + k * 2.0 ** -22 * magnitude + 2.0 ** -24
    assert np.all(np.abs(c.astype(np.float64) - exact) <= bound)


def test_tile_tunes_default_candidate_is_the_models_first_configuration_as_it_is():
    """tile-tune records the configuration it compiled: a default that spills
    fails as a candidate (the fallback's configuration is a candidate of its own),
    so no tuning database entry names a configuration that spills."""
    from tilemlir.tune.search import CompileJob, compile_candidate

    text = whole_problem_gemm(*RDNA3_FP8, "f8E4M3FNUZ", "f16")
    outcome = compile_candidate(CompileJob(0, text, "gemm.mlir", "amdgpu:gfx1100", "isa"))
    assert outcome.report is None
    assert outcome.error == "block 32x64x64, 64 threads, 2 stages, v_wmma_f32_16x16x16_f16, split-K 1 spills registers"
