"""Shared memory written by the program and read by other threads is ordered
by the compiler (tile-insert-barriers): flash attention's P, computed from a
gemm's accumulator in a T.Parallel, stored to shared memory and read by the
next gemm, runs in the SIMT emulator with its race sanitizer and matches
float64 NumPy and the reference engine. With the one barrier the pass inserts
removed, the emulator reports the race: the test can fail."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_text import PV_K, PV_M, PV_N, PV_SCALE, pv_kernel

import tilemlir
from tilemlir.passes import build_pipeline
from tilemlir.runtime import load_module, run
from tilemlir.runtime.emu_core import SanitizerError


def inputs(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((PV_M, PV_K)).astype(np.float16), rng.standard_normal((PV_K, PV_N)).astype(np.float16),
            rng.standard_normal((PV_N, PV_N)).astype(np.float16), np.zeros((PV_M, PV_N), np.float32)]


def check_against_float64(out: np.ndarray, args: list[np.ndarray], loop: int) -> None:
    """P is S * PV_SCALE rounded to f16 (relative error 2^-11, S's f32 sum adds
    K * 2^-24 more), so each output is within 2^-10 * sum |P||V| (times the
    iterations) of the float64 product; f32 accumulation of O is far below that."""
    a, b, v = (x.astype(np.float64) for x in args[:3])
    p = PV_SCALE * (a @ b)
    expected = (loop or 1) * (p @ v)
    bound = (loop or 1) * 2.0 ** -10 * (np.abs(p) @ np.abs(v))
    assert np.all(np.abs(out - expected) <= bound), np.abs(out - expected).max()


TARGETS = ("amdgpu:gfx942", "amdgpu:gfx950", "amdgpu:gfx90a", "metax:xcore1000")


@pytest.mark.parametrize("loop", [0, 3])
@pytest.mark.parametrize("target", TARGETS)
def test_p_through_shared_memory_has_no_race(target, loop):
    text = pv_kernel(loop)
    compiled = tilemlir.compile(text, target=target, emit="gpu")
    assert "gpu.barrier" in compiled.artifacts["tile"]
    reference, emulated = inputs(), inputs()
    run(compiled.artifacts["tile"], "pv", reference)
    run(compiled.artifacts["gpu"], "pv", emulated, engine="emulator", target=target)  # sanitizer on
    check_against_float64(reference[-1], reference, loop)
    check_against_float64(emulated[-1], emulated, loop)


def test_p_kernel_compiles_for_nvidia():
    ptx = tilemlir.compile(pv_kernel(3), target="nvidia:sm_90a", emit="ptx").artifacts["ptx"]
    assert "bar.sync" in ptx or "barrier.sync" in ptx


@pytest.mark.parametrize("loop, barrier", [(0, 0), (3, 0), (3, 1)])
def test_the_race_without_the_inserted_barrier(loop, barrier):
    """The tile IR after the tile passes with one of the inserted barriers
    taken out (0: before the gemm reading P; with the loop, 1: at the end of
    the iteration, before P is overwritten), lowered as usual: the emulator's
    sanitizer reports the race."""
    target = "amdgpu:gfx942"
    tile_ir = tilemlir.compile(pv_kernel(loop), target=target, emit="tile").artifacts["tile"]
    lines = tile_ir.splitlines(keepends=True)
    barriers = [i for i, line in enumerate(lines) if line.strip() == "gpu.barrier"]
    assert len(barriers) == (2 if loop else 1)
    del lines[barriers[barrier]]
    module, _ = load_module("".join(lines))
    with module.context:
        build_pipeline(f"tile-lower-to-gpu{{target={target}}}").run(module)
    with pytest.raises(SanitizerError, match="data race"):
        run(module, "pv", inputs(), engine="emulator", target=target)
