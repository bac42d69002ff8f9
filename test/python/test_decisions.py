"""The report's `decisions`: what the tile passes recorded in the IR, per
kernel, for GEMMs and other kernels of every family; and the arrays
`--plot-layout` draws (lane owners, bank maps), checked against the
documented instruction layouts and the bank model."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from kernel_text import EXAMPLES, Gemm, gemm_kernel, whole_problem_gemm

import tilemlir
from tilemlir.lds_banks import access_conflicts

SEED = (EXAMPLES / "seed_fp8_gemm.mlir").read_text()
# 128x128x32 f16 at 4 stages fills gfx942's 64 KiB: the row padding is dropped.
SMALL_LDS = {"tiling": "block=128,128,32 stages=4"}


@pytest.fixture(scope="module")
def seed():
    return tilemlir.compile(SEED, target="amdgpu:gfx942", emit="isa", options={"report": True})


@pytest.fixture(scope="module")
def small_lds():
    return tilemlir.compile(whole_problem_gemm(1024, 1024, 1024, "f16", "f32"), target="amdgpu:gfx942",
                            emit="isa", options={"report": True, **SMALL_LDS})


def test_seed_decisions(seed):
    (kernel,) = seed.report["decisions"]
    assert {key: kernel[key] for key in ("kernel", "grid", "threads", "waves", "stages", "split_k", "block",
                                         "warp_grid", "instruction", "lds_bank_conflicts_per_iteration")} == {
        "kernel": "mixed_precision_gemm_kernel0", "grid": [8, 8], "threads": 256, "waves": 4, "stages": 3,
        "split_k": 1, "block": {"m": 128, "n": 128, "k": 32}, "warp_grid": [2, 2],
        "instruction": "v_mfma_f32_32x32x16_fp8_fp8", "lds_bank_conflicts_per_iteration": 0}
    a, b = kernel["shared_buffers"]
    assert (a["name"], a["shape"], a["dtype"], a["at"]) == ("%A_shared", [128, 32], "f8E4M3FNUZ", "<input>:29:19")
    # 8 bytes of padding make the reads conflict-free (12 clocks a read without);
    # 3 stages of 128 rows of 40 bytes.
    assert (a["padding"], a["padding_dropped"], a["transposed"], a["swizzle"], a["transpose_reads"],
            a["bank_conflicts_per_iteration"], a["bank_conflicts_per_read"], a["stages"], a["bytes"],
            a["direct_loads"]) == (8, None, False, 0, False, 0, {"as_stored": 0, "unpadded": 12}, 3, 15360, False)
    assert (b["name"], b["transposed"], b["padding"]) == ("%B_shared", True, 8)  # stored N x K
    (c,) = kernel["fragments"]
    assert (c["name"], c["layout"], c["registers_per_thread"], c["threads_per_element"]) == \
        ("%C_local", "mma_accumulator", 64, 1)
    (compiled,) = seed.report["kernels"]
    assert compiled["amdgpu"]["lds_bank_conflicts_per_iteration"] == kernel["lds_bank_conflicts_per_iteration"]


def test_accumulator_owners_follow_the_mfma_layout(seed):
    """v_mfma_f32_32x32x16 (CDNA3 ISA, 32x32 C layout: lane l holds column
    l % 32 and rows 8 (j // 4) + 4 (l // 32) + j % 4 of its tile in register
    j), issued transposed (C^T += B^T A^T, the seed has no reduction): lane l
    holds row l % 32 and columns 8 (j // 4) + 4 (l // 32) + j % 4, runs of four
    along C's rows; the 2x2 waves take 64x64 quarters, each two tiles a side."""
    owner, register, holders = seed.decisions[0].fragments[0].owners()
    assert owner.shape == (128, 128) and (holders == 1).all()
    assert np.bincount(owner.ravel()).tolist() == [64] * 256  # 64 registers per thread
    for row, col in [(0, 0), (5, 3), (13, 31), (31, 17), (33, 40), (70, 5), (100, 127)]:
        tile_row, tile_col = row % 32, col % 32
        lane = tile_row + 32 * ((tile_col // 4) % 2)
        wave = 2 * (row // 64) + col // 64
        tile = 2 * ((row % 64) // 32) + (col % 64) // 32
        assert owner[row, col] == 64 * wave + lane, (row, col)
        assert register[row, col] == 16 * tile + 4 * (tile_col // 8) + tile_col % 4, (row, col)


def test_blocked_fragments_and_replicas():
    """softmax: no gemm, so no block or instruction; its row vectors are held
    by every thread of a row (replicas)."""
    result = tilemlir.compile((EXAMPLES / "kernels" / "softmax.mlir").read_text(), target="amdgpu:gfx942",
                              emit="isa", options={"report": True})
    (kernel,) = result.report["decisions"]
    assert (kernel["block"], kernel["instruction"], kernel["warp_grid"], kernel["gemms"]) == (None, None, None, [])
    layouts = {f["layout"] for f in kernel["fragments"]}
    assert layouts == {"blocked"}
    replicated = [f for f in kernel["fragments"] if len(f["shape"]) == 1]
    assert replicated and all(f["threads_per_element"] > 1 for f in replicated)
    for fragment in result.decisions[0].fragments:
        owner, _, holders = fragment.owners()
        assert (owner >= 0).all() and (holders >= 1).all()


def test_dropped_padding_is_recorded_and_said(small_lds):
    (kernel,) = small_lds.report["decisions"]
    for buffer in kernel["shared_buffers"]:
        # XOR-swizzled instead (skewed, test/Transforms/infer-layout-given-up.mlir), read two
        # K steps (16 bytes) at a time: no conflict, against 224 unpadded
        assert (buffer["padding"], buffer["padding_dropped"], buffer["bank_conflicts_per_iteration"],
                buffer["bytes"]) == (0, 4, 0, 32768)
    (compiled,) = small_lds.report["kernels"]
    assert kernel["lds_bank_conflicts_per_iteration"] == compiled["amdgpu"]["lds_bank_conflicts_per_iteration"] == 0
    assert compiled["shared_bytes"] == 65536
    # At no cost in conflicts, the dropped padding is no speed remark (its info
    # remark's text: test/Transforms/infer-layout-given-up.mlir).
    assert [d.message for d in small_lds.remarks if not d.message.startswith("tile-tiling:")] == []


@pytest.fixture(scope="module")
def conflicted():
    """fp8 64x64x64 blocks on gfx950 with transpose reads: B's reads keep 8
    conflict clocks (no padding or swizzle serves 32 and 64 banks)."""
    return tilemlir.compile(whole_problem_gemm(64, 64, 128, "f8E4M3FN", "f16"), target="amdgpu:gfx950",
                            emit="isa", options={"report": True, "tiling": "block=64,64,64 threads=256 stages=2",
                                                 "passes": "tile-infer-layout{transpose-reads=true}"})


def test_bank_maps_agree_with_the_pass(seed, small_lds, conflicted):
    """The bank map's conflicting reads are the conflicts the pass counted:
    per clock group of lanes, the busiest bank's ways minus one. gfx950's
    bank count is unknown: the pass counts the worse of 32 and 64 banks, and
    the maps are checked at both."""
    seen = []
    for result, bank_counts in ((seed, (None,)), (small_lds, (None,)), (conflicted, (32, 64))):
        for buffer, recorded in zip(result.decisions[0].shared_buffers, result.report["decisions"][0]["shared_buffers"]):
            models = [buffer.model if count is None else dataclasses.replace(buffer.model, banks=count)
                      for count in bank_counts]
            for model in models:
                banks, ways = model.bank_map(), model.read_ways()
                assert banks.shape == ways.shape == (model.rows, model.row_elements)
                assert banks.min() >= 0 and banks.max() < model.banks
                # Row r starts at byte r * row_bytes: its first element's bank.
                row_bytes = model.row_elements * model.element_bytes
                assert banks[1, 0] == (row_bytes // model.bank_bytes) % model.banks
                read = model.read
                width = read.per_access * model.element_bytes
                assert model.conflicts() == access_conflicts(read.addresses(model.pad, model.swizzle), width,
                                                             model.banks)
                assert (ways > 1).any() == (model.conflicts() > 0)
                assert np.count_nonzero(ways) == 64 * read.per_access  # every lane's elements of one access
                seen.append(model.conflicts())
            worst = max(model.conflicts() for model in models)
            assert worst * models[0].read.accesses == recorded["bank_conflicts_per_read"]["as_stored"]
    assert 0 in seen and max(seen) > 0  # both kinds of buffer checked


@pytest.mark.parametrize("target", ["metax:xcore1500", "nvidia:sm_90a"])
def test_other_families(target):
    """MetaX and NVIDIA record the same tile-level decisions; NVIDIA's core
    places shared memory itself, filled by cp.async: A's rows of 64 bytes
    padded by 16, B's of 128 bytes as swizzled boxes (nvidia/matrix.py
    `boxable`), and has no bank model."""
    text = gemm_kernel(Gemm(256, 256, 256, block=(64, 64, 32), in_type="f16", stages=2))
    result = tilemlir.compile(text, target=target, options={"report": True})
    (kernel,) = result.report["decisions"]
    assert (kernel["block"], kernel["threads"], kernel["stages"]) == ({"m": 64, "n": 64, "k": 32}, 256, 2)
    assert kernel["instruction"] == result.report["decisions"][0]["gemms"][0]["instruction"] is not None
    assert [(f["name"], f["layout"]) for f in kernel["fragments"]] == [("%C_l", "mma_accumulator")]
    names = [b["name"] for b in kernel["shared_buffers"]]
    assert names == ["%A_s", "%B_s"]
    for buffer, (padding, swizzle, stored) in zip(kernel["shared_buffers"], ((8, None, 2 * 64 * 40 * 2),
                                                                            (0, "128-byte (boxes)", 2 * 32 * 64 * 2))):
        if target.startswith("nvidia"):
            assert (buffer["padding"], buffer["swizzle"], buffer["bytes"], buffer["stages"], buffer["direct_loads"],
                    buffer["bank_conflicts_per_iteration"]) == (padding, swizzle, stored, 2, "cp.async.cg", None)
        else:
            assert buffer["direct_loads"] is False


def test_gpu_level_input_has_no_decisions():
    result = tilemlir.compile((EXAMPLES / "gpu" / "mfma_fp8_gfx942.mlir").read_text(), target="amdgpu:gfx942",
                              emit="isa", options={"report": True})
    assert result.report["decisions"] == [] and result.decisions == []
