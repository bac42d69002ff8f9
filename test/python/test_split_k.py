"""Split-K (issue 20): tile-tiling cuts K among workgroups whose partial sums
tile.atomic_add adds into C; each backend's code is run against float64 (the
emulator for AMD, the emulator and the MACA C++ on the CPU for MetaX in
test_metax.py, the H200 in bench/tune_model.py --cases split-k), and every
piece on its own: the reference engine, the emulator's atomics and memset,
the nvidia launch metadata, the model, the tuning database."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
from mlir import ir

import tilemlir
from tilemlir.cost.facts import model_facts
from tilemlir.cost.model import GemmProblem, KernelConfig, predict
from tilemlir.dialects.tile import make_context
from tilemlir.passes.gemm_configs import Fixed, candidate_configs, split_k_refusal
from tilemlir.runtime import run
from tilemlir.runtime.emulator import UnsupportedOp, emulate
from tilemlir.targets import get_target
from tilemlir.tune.db import TunedConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_text import whole_problem_gemm


def _inputs(m: int, n: int, k: int, dtype, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return (rng.integers(-128, 128, (m, k)).astype(dtype), rng.integers(-128, 128, (k, n)).astype(dtype))
    return (rng.uniform(-1, 1, (m, k)).astype(dtype), rng.uniform(-1, 1, (k, n)).astype(dtype))


def _f32_bound(a: np.ndarray, b: np.ndarray, split_k: int) -> np.ndarray:
    """f32 sums: K products per slice, then split_k additions into C (and
    the matrix unit's own order), each within 2^-23 of |A| |B| (with margin)."""
    k = a.shape[1]
    return (k + split_k) * 2.0 ** -22 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))


def _compile(text: str, target: str, **options):
    return tilemlir.compile(text, target=target, emit="gpu", options={"report": True, **options},
                            remarks="all")


@pytest.mark.parametrize("chip", ["gfx90a", "gfx942", "gfx950"])
def test_split_k_gemm_on_amd_runs_in_the_emulator(chip):
    """A 64x128 C of 4096-long f16 rows is too few tiles for any AMD chip: the
    model cuts K, the kernel clears C (gpu.memset) and adds the slices into
    it atomically; the result is the GEMM (the output poisoned first)."""
    text = whole_problem_gemm(64, 128, 4096, "f16", "f32")
    result = _compile(text, f"amdgpu:{chip}")
    gpu_ir = result.artifacts["gpu"]
    assert "gpu.memset" in gpu_ir and "memref.atomic_rmw addf" in gpu_ir
    # A launcher of the HSACO alone learns from the report that C is cleared first.
    (decisions,) = result.report["decisions"]
    (kernel,) = result.report["kernels"]
    assert decisions["split_k"] == kernel["split_k"] > 1 and decisions["cleared_first"] == [2]
    (remark,) = [d.message for d in result.remarks if d.message.startswith("tile-tiling: block")]
    assert "K slices adds its partial sums into C atomically (C cleared first)" in remark
    # Relaxed at agent scope (amdgpu-scope-atomics): one instruction per add, no
    # compare-swap loop, except on gfx90a (see scope_atomics.py).
    isa = tilemlir.compile(text, target=f"amdgpu:{chip}", emit="isa").artifact
    single = "global_atomic_add_f32" in isa and "cmpswap" not in isa
    assert single == (chip != "gfx90a")
    a, b = _inputs(64, 128, 4096, np.float16)
    c = np.full((64, 128), np.nan, np.float32)
    run(text, "gemm", [a, b, c], engine="emulator", target=f"amdgpu:{chip}")
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.all(np.abs(c - exact) <= _f32_bound(a, b, 16))


@pytest.mark.parametrize("transpose_b", [False, True])
def test_split_k_slices_of_one_k_step_run_in_the_emulator(transpose_b):
    """64x200x96 f16 into f32 C on gfx942: the default cuts K in two slices
    of one K step each (64x32 blocks; no K loop left in the kernel), and the
    result is the GEMM (the output poisoned first)."""
    m, n, k = 64, 200, 96
    text = whole_problem_gemm(m, n, k, "f16", "f32", transpose_b)
    (kernel,) = _compile(text, "amdgpu:gfx942").report["kernels"]
    assert kernel["split_k"] == 2
    a, b = _inputs(m, n, k, np.float16)
    c = np.full((m, n), np.nan, np.float32)
    run(text, "gemm", [a, np.ascontiguousarray(b.T) if transpose_b else b, c], engine="emulator",
        target="amdgpu:gfx942")
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.all(np.abs(c - exact) <= _f32_bound(a, b, 2))


def test_split_k_adds_onto_c_and_handles_edges():
    """Without a zero fill the slices add onto C as it is (i32: exactly);
    with M and N not multiples of the block, the edge tiles' atomics are
    dropped outside C as stores are."""
    m, n, k = 50, 70, 2048
    text = whole_problem_gemm(m, n, k, "i8", "i32", zero_fill=False, accum="i32")
    report = _compile(text, "amdgpu:gfx942").report
    assert report["kernels"][0]["split_k"] > 1 and report["decisions"][0]["cleared_first"] == []
    a, b = _inputs(m, n, k, np.int8)
    c0 = np.arange(m * n, dtype=np.int32).reshape(m, n)
    c = c0.copy()
    run(text, "gemm", [a, b, c], engine="emulator", target="amdgpu:gfx942")
    np.testing.assert_array_equal(c, c0 + a.astype(np.int64) @ b.astype(np.int64))


def test_given_split_k_and_the_reference_engine_on_the_tiled_ir():
    """split-k given as an option is used (the model chooses the rest; the
    report says the user decided); the tiled tile IR, memset and atomic adds
    included, runs on the reference engine to the same GEMM."""
    text = whole_problem_gemm(64, 128, 1024, "f16", "f32")
    result = tilemlir.compile(text, target="amdgpu:gfx942", emit="tile",
                              options={"report": True, "tiling": "split-k=4"})
    (kernel,) = result.report["kernels"]
    assert (kernel["split_k"], kernel["config_source"]) == (4, "user")
    tiled = result.artifacts["tile"]
    assert tiled.count("tile.atomic_add") == 1 and "gpu.memset" in tiled
    a, b = _inputs(64, 128, 1024, np.float16)
    c = np.full((64, 128), np.nan, np.float32)
    run(tiled, "gemm", [a, b, c], engine="reference")
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.all(np.abs(c - exact) <= _f32_bound(a, b, 4))


def test_split_k_is_offered_only_where_c_takes_the_sums():
    """Candidates split K where C holds the accumulator type and the C tiles
    are fewer than the CUs; an f16 C (each addition would round) or a chip
    already full gets none, with the reason."""
    target = get_target("amdgpu:gfx942")
    f32 = GemmProblem(64, 128, 4096, "f16", "f16", "f32", "f32")
    splits = {c.split_k for c in candidate_configs(f32, target)}
    assert splits == {1, 2, 4, 8, 16}
    assert all(c.split_k == 4 for c in candidate_configs(f32, target, Fixed(split_k=4)))
    f16 = GemmProblem(64, 128, 4096, "f16", "f16", "f16", "f32")
    assert {c.split_k for c in candidate_configs(f16, target)} == {1}
    assert "rounded to f16" in split_k_refusal(f16)
    big = GemmProblem(4096, 4096, 4096, "f16", "f16", "f32", "f32")
    assert {c.split_k for c in candidate_configs(big, target, Fixed(block=(128, 128, 32)))} == {1}
    # Every slice the same length, at least `stages` K blocks.
    for config in candidate_configs(f32, target):
        blocks = -(-f32.k // config.block[2])
        assert blocks % config.split_k == 0 and blocks // config.split_k >= config.stages


def test_the_model_costs_the_memset_and_the_atomic_epilogue():
    """Clearing C is one pass over it at the device's bandwidth plus one
    latency, only where C starts at zero; the slices' epilogue reads and
    writes C in the accumulator type."""
    target = get_target("amdgpu:gfx942")
    problem = GemmProblem(64, 128, 4096, "f16", "f16", "f32", "f32")
    config = next(c for c in candidate_configs(problem, target) if c.split_k == 4)
    # One latency whatever the load (reading C changes the launch's traffic).
    facts = dataclasses.replace(model_facts(target), loaded_latency_clocks=model_facts(target).memory_latency_clocks)
    cleared = predict(problem, config, facts)
    onto_c = predict(GemmProblem(**{**problem.__dict__, "reads_c": True}), config, facts)
    memset = (64 * 128 * 4 / facts.memory_bytes_per_clock + facts.memory_latency_clocks) / (facts.clock_mhz * 1e6)
    assert cleared.seconds == pytest.approx(onto_c.seconds + memset)
    one = KernelConfig(config.block, config.threads, config.stages, config.instruction, config.warp_grid,
                       config.waves_per_instruction, 1)
    assert predict(problem, one, facts).figures.workgroups * 4 == cleared.figures.workgroups
    assert cleared.figures.epilogue_bytes == 2 * config.block[0] * config.block[1] * 4


def test_the_tuning_database_carries_split_k(tmp_path):
    """A tuned configuration with split-K gives tile-tiling the option, so
    tile-compile --tuning-db reproduces it."""
    tuned = TunedConfig((32, 64, 64), 256, 2, instruction="v_mfma_f32_16x16x16_f16", split_k=8)
    assert tuned.tiling_options() == "block=32,64,64 threads=256 stages=2 split-k=8"
    assert "split-K 8" in tuned.describe()
    text = whole_problem_gemm(64, 128, 4096, "f16", "f32")
    report = tilemlir.compile(text, target="amdgpu:gfx942", emit="tile",
                              options={"report": True,
                                       "tiling": f"{tuned.tiling_options()} source=tuning-db"}).report
    (kernel,) = report["kernels"]
    assert (kernel["split_k"], kernel["workgroups"], kernel["config_source"]) == (8, 2 * 2 * 8, "tuning-db")


def test_nvidia_ptx_and_launch_metadata():
    """sm_90a: the atomics are PTX atom.add.f32; the launcher clears C first
    (a memset entry before the launch, the grid's z the slices)."""
    text = whole_problem_gemm(16, 1024, 8192, "f16", "f32")
    result = tilemlir.compile(text, target="nvidia:sm_90a", emit="ptx", options={"report": True})
    (function,) = result.report["functions"]
    memset, launch = function["launches"]
    assert memset == {"memset": {"argument": 2, "element_bytes": 4, "bits": 0}}
    assert launch["grid"][2] == result.report["kernels"][0]["split_k"] > 1
    assert "atom.global.add.f32" in result.artifact


GPU_MEMSET = """module attributes {{gpu.container_module}} {{
  func.func @entry(%out: memref<4x16xf32>) {{
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %v = arith.constant {value} : f32
    {memset}
    gpu.launch_func @mod::@k blocks in (%c2, %c1, %c1) threads in (%c64, %c1, %c1) args(%out : memref<4x16xf32>)
    return
  }}
  gpu.module @mod {{
    gpu.func @k(%out: memref<4x16xf32>) kernel {{
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c3 = arith.constant 3 : index
      %one = arith.constant 1.0 : f32
      %r = arith.remui %t, %c3 : index
      %x = memref.atomic_rmw {kind} %one, %out[%r, %c0] : (f32, memref<4x16xf32>) -> f32
      gpu.return
    }}
  }}
}}
"""


def test_emulator_atomics_count_every_lane_and_memset_clears():
    """64 lanes of 2 workgroups add 1.0 into 3 elements (lanes of one op
    meeting at one element all count; no race between atomics); the host's
    gpu.memset set every element first."""
    out = np.full((4, 16), np.nan, np.float32)
    text = GPU_MEMSET.format(value="2.5", memset="gpu.memset %out, %v : memref<4x16xf32>, f32", kind="addf")
    with make_context():
        emulate(ir.Operation.parse(text), "entry", [out])
    expected = np.full((4, 16), 2.5, np.float32)
    expected[:3, 0] += 2 * np.array([22, 21, 21])
    np.testing.assert_array_equal(out, expected)


def test_emulator_refuses_other_atomics():
    text = GPU_MEMSET.format(value="0.0", memset="", kind="maximumf")
    with make_context(), pytest.raises(UnsupportedOp, match="memref.atomic_rmw of kind"):
        emulate(ir.Operation.parse(text, source_name="k.mlir"), "entry", [np.zeros((4, 16), np.float32)])


@pytest.mark.parametrize(("target", "memset", "message"), [
    ("nvidia:sm_90a", ("%s = memref.subview %out[0, 0] [2, 16] [1, 1] : memref<4x16xf32> to "
                       "memref<2x16xf32, strided<[16, 1]>>\n    gpu.memset %s, %v : "
                       "memref<2x16xf32, strided<[16, 1]>>, f32"),
     ("nvidia: gpu.memset of a view or of memory the host made; the launcher clears whole host "
      "arguments only")),
    ("metax:xcore1000", "gpu.memset %out, %v : memref<4x16xf32>, f32",
     "MACA emitter: gpu.memset is supported synchronously, of a whole memref argument, to zero"),
])
def test_memsets_a_launcher_cannot_do_are_located_errors(target, memset, message):
    text = GPU_MEMSET.format(value="1.0", memset=memset, kind="addf")
    with pytest.raises(tilemlir.CompileError) as caught:
        tilemlir.compile(text, target=target)
    line = next(i for i, text_line in enumerate(text.splitlines(), 1) if "gpu.memset" in text_line)
    assert str(caught.value).startswith(f"<input>:{line}:5: error: {message}")

