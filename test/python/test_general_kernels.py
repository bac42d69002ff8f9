"""Issue 17's acceptance kernels: what a TileLang user writes besides a plain
GEMM (examples/kernels/*.mlir, written in the kernel form with fragments,
T.Parallel and tile.reduce). Each compiles for every family's chips with no
spills, and runs in the SIMT emulator (gfx90a, gfx942, gfx950, RDNA's gfx1100 and
gfx1201, and MetaX's GPU-level IR) to match a float64 NumPy model (general_kernel_cases.py) within a bound
derived from the dtypes and the length of the f32 computation.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from general_kernel_cases import CASES, COMPILE_TARGETS, EMULATED_TARGETS, as_f64, inputs_for

import tilemlir
from tilemlir.runtime import run


@pytest.fixture(scope="module")
def compiled():
    """compiled(name, target): one compile per case and target, shared by the
    tests below (a module-scoped fixture: make test keeps the module on one
    worker, conftest.xdist_scope); the emulator runs its GPU-level IR."""
    return functools.cache(lambda name, target: tilemlir.compile(CASES[name].text(target), target=target))


@pytest.mark.parametrize("target", COMPILE_TARGETS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiles_without_spills(name, target, compiled):
    result = compiled(name, target)
    if target.startswith("amdgpu"):
        for kernel in result.report["kernels"]:
            assert kernel["spills"] == 0 and kernel["scratch_bytes"] == 0, kernel


@pytest.mark.parametrize("target", EMULATED_TARGETS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_matches_float64(name, target, compiled):
    case = CASES[name]
    args = inputs_for(case, target)
    originals = [np.copy(a) for a in args]
    # The emulator runs under its sanitizer: LDS bounds and initialisation, data races.
    run(compiled(name, target).artifacts["gpu"], case.entry, args, engine="emulator", target=target)
    for index, (expected, bound) in case.model(originals).items():
        got = as_f64(args[index])
        error = np.abs(got - expected)
        assert np.all(error <= bound), (
            f"{name} on {target}, argument {index}: max error {error.max():.3e}, "
            f"worst error/bound {(error / bound).max():.3f}")
