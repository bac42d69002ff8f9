"""Every dense MFMA instruction the selector can pick on gfx90a, gfx942 and
gfx950, executed by the emulator from a hand-written GPU-level kernel that
loads each lane's A/B/C values and stores D per AMD's documented layouts;
D must equal C + A.B computed in float64 (exactly for integers, within the
accumulation bound for floats)."""

from __future__ import annotations

import numpy as np
import pytest
from emulator_kernels import MLIR_TYPE, NUMPY, element_type, mfma_kernel, random_values
from mlir import ir

from tilemlir.dialects.tile import make_context
from tilemlir.runtime import mfma_layouts
from tilemlir.runtime.emulator import emulate

CASES = [(chip, instr) for chip, instrs in mfma_layouts.INSTRUCTIONS.items() for instr in instrs]


def _bound(instr, a, bt, c) -> np.ndarray:
    """|D - exact| bound: one f32 rounding of the result plus the accumulation
    error of K terms (2**-24 each); xf32 inputs add 2**-10 relative per product
    (two operands rounded to 10 explicit bits); f64 uses 2**-53."""
    magnitude = np.abs(c).astype(np.float64) + np.einsum(
        "pbik,pbjk->pbij", np.abs(a.astype(np.float64)), np.abs(bt.astype(np.float64)))
    unit = 2.0**-53 if instr.acc == "f64" else 2.0**-24
    relative = (instr.k + 1) * unit + (2.0**-10 if instr.a == "xf32" else 0.0)
    return magnitude * relative


@pytest.mark.parametrize("chip,instr", CASES, ids=[f"{c}-{i.name}-{i.a}-{i.b}" for c, i in CASES])
def test_mfma_instruction(chip, instr):
    rng = np.random.default_rng(abs(hash((chip, instr.name, instr.a, instr.b))) % 2**32)
    waves, grid = 2, 2
    problems = waves * grid
    a_el, b_el = element_type(instr.a, chip), element_type(instr.b, chip)
    acc = MLIR_TYPE[instr.acc]
    a = random_values((problems, instr.blocks, instr.m, instr.k), a_el, rng)
    bt = random_values((problems, instr.blocks, instr.n, instr.k), b_el, rng)
    c = random_values((problems, instr.blocks, instr.m, instr.n), acc, rng)
    d = np.full_like(c, 0)
    with make_context():
        module = ir.Module.parse(mfma_kernel(instr, chip, waves))
        emulate(module, "entry", [a, bt, c, d, grid], chip=chip)
    wide = np.int64 if instr.acc == "i32" else np.float64
    exact = c.astype(wide) + np.einsum("pbik,pbjk->pbij", a.astype(wide), bt.astype(wide))
    if instr.acc == "i32":
        np.testing.assert_array_equal(d, exact.astype(np.int32))
    else:
        error = np.abs(d.astype(np.float64) - exact)
        assert (error <= _bound(instr, a, bt, c)).all(), (
            f"max error {error.max()} at {np.unravel_index(error.argmax(), error.shape)}")
    assert NUMPY[acc] == d.dtype


def test_layouts_are_bijections():
    """Every (lane, item) slot holds exactly one matrix element, per instruction."""
    for instrs in mfma_layouts.INSTRUCTIONS.values():
        for instr in instrs:
            for rows in (instr.m, instr.n):
                lane, item = mfma_layouts.input_layout(rows, instr.k, instr.blocks)
                slots = lane * instr.per_lane + item
                assert sorted(slots.reshape(-1)) == list(range(64 * instr.per_lane)), instr
            lane, item = mfma_layouts.output_layout(instr.m, instr.n, instr.blocks,
                                                    instr.acc == "f64")
            slots = lane * instr.results_per_lane + item
            assert sorted(slots.reshape(-1)) == list(range(64 * instr.results_per_lane)), instr
