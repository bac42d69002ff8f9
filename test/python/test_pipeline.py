"""tile-pipeline, executed: every pipelined kernel runs in the SIMT emulator with
the race and uninitialized-read detectors on and matches the reference engine,
at 1, 2, 3 and 4 stages; and the detectors do see a pipelined kernel whose one
barrier per iteration is removed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kernel_text import seed_kernel, whole_problem_gemm
from test_amd_acceptance import emulate_against_reference

import tilemlir
from tilemlir.runtime import load_module
from tilemlir.runtime.arguments import parameters, random_arguments
from tilemlir.runtime.emulator import SanitizerError, emulate
from tilemlir.runtime.reference import Program


@pytest.mark.parametrize("chip", ["gfx942", "gfx950", "gfx90a"])
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_pipelined_seed_kernel_runs(chip, stages):
    text = seed_kernel(256).replace("tile.num_stages = 3", f"tile.num_stages = {stages}")
    if chip == "gfx950":  # OCP fp8, the encoding its matrix unit reads (FNUZ would be refused)
        text = text.replace("f8E4M3FNUZ", "f8E4M3FN")
    emulate_against_reference(text, chip)


def test_pipelined_non_multiple_shape_runs():
    """K = 200 is no multiple of block_K: the last prefetches read zeros past K
    into stages no gemm reads (the whole-problem form pipelines with the
    cost model's 2 to 4 stages)."""
    text = whole_problem_gemm(100, 136, 200, "f16", "f32")
    tile_ir = tilemlir.compile(text, target="amdgpu:gfx942", emit="tile").artifacts["tile"]
    assert re.search(r"tile\.pipelined = [234] ", tile_ir)
    emulate_against_reference(text, "gfx942")


# The pipelined loop's barrier on AMD (LoweringHooks.stage_barrier): it waits for LDS alone.
STAGE_BARRIER = "amdgpu.lds_barrier"


def test_missing_barrier_is_a_race():
    text = seed_kernel(256)
    gpu = tilemlir.compile(text, target="amdgpu:gfx942", emit="gpu").artifacts["gpu"]
    loop = gpu.index("scf.for")
    tail = gpu.index("scf.for", loop + 1)  # the last 2 iterations, peeled (tile-pipeline{peel-tail})
    barrier = gpu.index(STAGE_BARRIER, loop)
    broken = gpu[:barrier] + gpu[barrier:].replace(STAGE_BARRIER, "", 1)
    assert gpu[loop:tail].count(STAGE_BARRIER) == 1 and broken[loop:tail].count(STAGE_BARRIER) == 0
    program = Program(load_module(text)[0])
    args = random_arguments(parameters(program.function("mixed_precision_gemm").op, program.dtype_of), 0)
    module, _ = load_module(broken, verify=False)
    with pytest.raises(SanitizerError, match="data race"):
        emulate(module, "mixed_precision_gemm", args, chip="gfx942")


def test_single_stage_refill_without_its_barrier_is_a_race():
    """One stage (tile.num_stages = 1): the next tile's LDS stores wait behind a
    second barrier in the iteration; without it they race the gemm's reads."""
    text = seed_kernel(256).replace("tile.num_stages = 3", "tile.num_stages = 1")
    gpu = tilemlir.compile(text, target="amdgpu:gfx942", emit="gpu").artifacts["gpu"]
    loop = gpu.index("scf.for")
    assert gpu[loop:].count(STAGE_BARRIER) == 2
    second = gpu.index(STAGE_BARRIER, gpu.index(STAGE_BARRIER, loop) + 1)
    broken = gpu[:second] + gpu[second:].replace(STAGE_BARRIER, "", 1)
    program = Program(load_module(text)[0])
    args = random_arguments(parameters(program.function("mixed_precision_gemm").op, program.dtype_of), 0)
    module, _ = load_module(broken, verify=False)
    with pytest.raises(SanitizerError, match="data race"):
        emulate(module, "mixed_precision_gemm", args, chip="gfx942")


@pytest.mark.parametrize(("chip", "fp8", "shape"), [
    ("gfx942", "f8E4M3FNUZ", (128, 128, 256)),
    ("gfx942", "f8E4M3FNUZ", (100, 72, 200)),  # guarded edge blocks
    ("gfx950", "f8E4M3FN", (128, 128, 256)),
])
def test_fp8_row_major_b_register_transpose_runs(chip, fp8, shape):
    """A K x N fp8 B is stored N x K: with a 128x128 B tile each thread loads
    4 rows of 16 bytes, rebuilds 4-byte columns with byte permutations
    (gpu_builders.columns_of with AMD's v_perm_b32, llvm.amdgcn.perm: eight
    per 4x4 block) and writes each with one 32-bit LDS store (on gfx950 with
    its transpose reads turned off: they would read B as stored)."""
    text = whole_problem_gemm(*shape, fp8, "f16")
    tiling = "block=64,128,128 threads=256 stages=2"
    passes = "tile-infer-layout{transpose-reads=false}"
    gpu = tilemlir.compile(text, target=f"amdgpu:{chip}", emit="gpu",
                           options={"tiling": tiling, "passes": passes}).artifacts["gpu"]
    assert "vector<1xi32> to vector<4x" in gpu  # the packed columns
    assert '"llvm.amdgcn.perm"' in gpu
    emulate_against_reference(text, chip, tiling=tiling, passes=passes)


def test_fp8_register_transpose_without_a_byte_permute_runs(monkeypatch):
    """A family without a byte permutation (LoweringHooks.byte_permute: None,
    as MetaX's) transposes with dword bit arithmetic: the same columns."""
    from tilemlir.backends.amdgpu.lowering import AmdgpuLoweringHooks

    monkeypatch.setattr(AmdgpuLoweringHooks, "byte_permute", lambda self: None)
    text = whole_problem_gemm(100, 72, 200, "f8E4M3FNUZ", "f16")
    tiling = "block=64,128,128 threads=256 stages=2"
    gpu = tilemlir.compile(text, target="amdgpu:gfx942", emit="gpu", options={"tiling": tiling}).artifacts["gpu"]
    assert "vector<1xi32> to vector<4x" in gpu and "arith.shli" in gpu
    assert "llvm.amdgcn.perm" not in gpu
    emulate_against_reference(text, "gfx942", tiling=tiling)


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("trips", [0, 1, 3])
def test_loop_with_a_runtime_bound_runs_its_prologue_only_if_it_runs(trips, stages):
    """A pipelined loop whose bound comes at run time (a causal loop stops at
    the diagonal) may run 0 times: the emulated kernel agrees with the
    reference engine for 0, 1 and more iterations (tile-pipeline guards its
    prologue, test/Transforms/pipeline-runtime-bounds.mlir), with 2 stages
    and with 3 (index remainders, not masks)."""
    import numpy as np

    from tilemlir.runtime import run

    text = (Path(__file__).resolve().parents[1] / "Transforms" / "pipeline-runtime-bounds.mlir").read_text()
    text = text.replace("tile.num_stages = 2", f"tile.num_stages = {stages}")
    compiled = tilemlir.compile(text, target="amdgpu:gfx942", emit="gpu")
    a = np.random.default_rng(0).uniform(-1, 1, (256, 32)).astype(np.float16)
    emulated, reference = np.full((64, 64), np.nan, np.float32), np.full((64, 64), np.nan, np.float32)
    run(compiled.artifacts["gpu"], "runtime_bound", [a, emulated, trips], engine="emulator", target="amdgpu:gfx942")
    run(text, "runtime_bound", [a, reference, trips])
    assert np.allclose(emulated, reference, rtol=0, atol=64 * 2.0 ** -20) and not np.isnan(emulated).any()
    assert (reference == 0).all() == (trips == 0)


def test_a_loop_shorter_than_its_stages_gets_one_stage_an_iteration():
    """num_stages = 4 over a loop of 2 iterations: 2 stages (a third and a
    fourth would hold re-read copies of the last tile, and take LDS), and the
    kernel still matches the reference engine."""
    text = (seed_kernel(256).replace("%num_k = arith.constant 8 ", "%num_k = arith.constant 2 ")
            .replace("tile.num_stages = 3", "tile.num_stages = 4"))
    assert "%num_k = arith.constant 2 " in text
    tile_ir = tilemlir.compile(text, target="amdgpu:gfx942", emit="tile").artifacts["tile"]
    assert "tile.pipelined = 2 " in tile_ir
    emulate_against_reference(text, "gfx942")


SHORT_GEMM = """
import tilemlir.language as T


@T.prim_func
def gemm(A: T.Tensor((256, 64), 'float16'), B: T.Tensor((64, 128), 'float16'), C: T.Tensor((256, 128), 'float16')):
    with T.Kernel(1, 2, threads=128) as (bx, by):
        A_s = T.alloc_shared((128, 32), 'float16')
        B_s = T.alloc_shared((32, 128), 'float16')
        C_l = T.alloc_fragment((128, 128), 'float32')
        T.clear(C_l)
        for k in T.Pipelined(2, num_stages=STAGES):
            T.copy(A[by * 128, k * 32], A_s)
            T.copy(B[k * 32, bx * 128], B_s)
            T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C[by * 128, bx * 128])
"""


def test_a_short_loop_on_sm90_takes_the_shared_memory_of_its_iterations():
    """The sm_90a K loop (TMA into an mbarrier ring, or cp.async) gives a loop
    of 2 iterations 2 stages whatever num_stages asks (at least 2)."""
    from tilemlir.torch_backend.dynamo import load_prim_func

    def shared_bytes(stages: int) -> int:
        prim = load_prim_func(SHORT_GEMM.replace("STAGES", str(stages)), "gemm")
        report = tilemlir.compile(prim, target="nvidia:sm_90a").compile(report=True).report
        return report["kernels"][0]["nvidia"]["dynamic_shared_bytes"]
    assert shared_bytes(4) == shared_bytes(3) == shared_bytes(2)
