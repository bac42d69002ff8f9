"""bench/amd_vs_triton.py's replication accounting: a kernel whose every wave
computes the whole block (Triton's small blocks on AMD) is compared by the busy
ratio of the work the block needs, and a main loop whose accumulators llc
renames along their chains is not taken for one that holds more of C."""

from __future__ import annotations

import bench_modules
import pytest


def _bench(name: str = "amd_vs_triton"):
    return bench_modules.load(name)


def _kernel(body: list[str]) -> str:
    lines = ["\t.text", "\t.globl\tgemm", "\t.type\tgemm,@function", "gemm:", ".LBB0_1:"]
    lines += [f"\t{instruction}" for instruction in body]
    lines += ["\ts_cbranch_scc1 .LBB0_1", "\ts_endpgm", ".Lfunc_end0:", "\t.size\tgemm, .Lfunc_end0-gemm"]
    return "\n".join(lines) + "\n"


# Two loop-carried 16x16 accumulators, renamed at every step of their chains.
RENAMED = _kernel([
    "v_mfma_f32_16x16x16f16 v[58:61], v[58:59], v[12:13], v[0:3]",
    "v_mfma_f32_16x16x16f16 v[62:65], v[0:1], v[12:13], v[4:7]",
    "v_mfma_f32_16x16x16f16 v[58:61], v[0:1], v[8:9], v[58:61]",
    "v_mfma_f32_16x16x16f16 v[6:9], v[0:1], v[8:9], v[62:65]",
    "v_mfma_f32_16x16x16f16 v[0:3], v[12:13], v[14:15], v[58:61]",
    "v_mfma_f32_16x16x16f16 v[4:7], v[6:7], v[4:5], v[6:9]",
])
# One 32x32 accumulator, the whole of a 32x32 block, on every one of 4 waves.
WHOLE_BLOCK = _kernel([f"v_mfma_f32_32x32x8_f16 v[2:17], v[{38 + 2 * i}:{39 + 2 * i}], v[70:71], v[2:17]"
                       for i in range(8)])


def test_chains_count_loop_carried_accumulators():
    bench = _bench()
    assert bench.accumulated_per_wave(RENAMED) == 2 * 16 * 16
    assert bench.accumulated_per_wave(WHOLE_BLOCK) == 32 * 32
    assert bench.accumulated_per_wave(_kernel(["v_add_f32 v0, v1, v2"])) is None


def test_replicated_waves_count_their_share():
    bench = _bench()
    entry = {"mfma_busy_ratio": 0.332}
    replicated = bench.with_useful_busy(entry, bench.Case("f16", "gfx942", (32, 32, 64), threads=256), WHOLE_BLOCK)
    assert replicated["replication"] == 4 and replicated["useful_busy"] == 0.083
    split = bench.with_useful_busy(entry, bench.Case("f16", "gfx942", (32, 32, 64), threads=64), WHOLE_BLOCK)
    assert split["replication"] == 1 and split["useful_busy"] == 0.332
    # 16x128 on 4 waves: 512 elements each, the two chains of RENAMED.
    renamed = bench.with_useful_busy(entry, bench.Case("f16", "gfx90a", (16, 128, 128), threads=256), RENAMED)
    assert renamed["replication"] == 1
    assert bench.with_useful_busy({"error": "x"}, bench.Case("f16", "gfx942", (32, 32, 64)), "")["useful_busy"] is None


def test_norm_instructions_are_counted_from_entry_to_end_and_loops_are_marked():
    bench = _bench("amd_norms_vs_triton")
    straight = _kernel(["v_mov_b32 v0, 0", "v_max_f32_dpp v1, v1, v1 row_shr:1 ; row_ in a comment",
                        "s_waitcnt lgkmcnt(0)", "ds_swizzle_b32 v2, v1 offset:0x401f", "ds_write_b32 v3, v1",
                        "s_barrier"])
    counts = bench.instruction_counts(straight)
    # _kernel's loop label and back branch: a loop, so no count per element.
    assert counts == {"instructions": 8, "cross_lane": 2, "waits": 1, "lds": 1, "barriers": 1, "loops": True}
    assert bench.per_element(counts, 1) is None
    straight = straight.replace(".LBB0_1:\n", "").replace("\ts_cbranch_scc1 .LBB0_1\n", "")
    counts = bench.instruction_counts(straight)
    assert counts == {"instructions": 7, "cross_lane": 2, "waits": 1, "lds": 1, "barriers": 1, "loops": False}
    assert bench.per_element(counts, 0.5) == 14.0


def test_our_row_kernels_compile_for_the_norms_table(tmp_path):
    pytest.importorskip("mlir")
    bench = _bench("amd_norms_vs_triton")
    entry = bench.ours(bench.Case("rmsnorm", "bf16", 1024), 2, 256, tmp_path)
    assert entry["spills"] == 0 and not entry["loops"] and entry["cross_lane"] > 0
    assert entry["per_element"] == round(entry["instructions"] / 8, 2)  # 2 rows of 1024 on 256 lanes
    # The same kernel (one workgroup of 2 rows) in the gfx942 emulator against float64.
    import ml_dtypes
    import numpy as np

    from tilemlir.runtime import run

    text = bench.norms_bench.kernel_text("rmsnorm", "bf16", 2, 1024, 2, 256).replace(
        f'tile.target = "{bench.norms_bench.TARGET}"', 'tile.target = "amdgpu:gfx942"')
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 1024)).astype(ml_dtypes.bfloat16)
    weight = rng.uniform(0.5, 1.5, 1024).astype(ml_dtypes.bfloat16)
    y = np.full((2, 1024), np.nan, ml_dtypes.bfloat16)
    run(text, "rmsnorm", [x, weight, y], engine="emulator", target="amdgpu:gfx942")
    x64, w64 = x.astype(np.float64), weight.astype(np.float64)
    exact = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + bench.norms_bench.EPS["rmsnorm"]) * w64
    # One bf16 rounding of the output, and f32 sums of 1024 squares.
    assert np.all(np.abs(y.astype(np.float64) - exact) <= 2.0 ** -8 * np.abs(exact) + 1024 * 2.0 ** -23)


def test_ours_at_given_configurations(tmp_path, capsys):
    """`--ours DTYPE:CHIP:MxNxK:BMxBNxBK:WAVES:STAGES` compiles our side at
    that configuration and prints its busy ratios, spills and predicted
    time; a malformed or unknown one is an argparse error naming it."""
    pytest.importorskip("mlir")
    import argparse

    bench = _bench()
    case = bench.parse_config("f16:gfx942:64x64x128:32x32x64:4:2")
    assert (case.block, case.threads, case.stages, case.shape) == ((32, 32, 64), 256, 2, (64, 64, 128))
    for text in ("f16:gfx942:64x64:32x32x64:4:2", "f32:gfx942:64x64x128:32x32x64:4:2", "f16:gfx9999:1x1x1:1x1x1:1:1"):
        with pytest.raises(argparse.ArgumentTypeError, match="DTYPE:CHIP|unknown target 'amdgpu:gfx9999'"):
            bench.parse_config(text)
    assert bench.ours_at([case], tmp_path) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("f16_64x64x128_32x32x64_gfx942_w4_s2: busy 0.") and "spills 0, predicted " in line
