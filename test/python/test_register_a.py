"""AMD's A operand from registers (`amdgpu.matrix.register_a_plan`): for every
dense square MFMA shape the shipped chips have, a plan either exists and
computes S @ V exactly when simulated lane by lane with the emulator's own
lane maps (`tilemlir.runtime.mfma_layouts`, independent of the
`tilemlir.mma_layouts` tables the plan is made from), or is refused. The
simulation builds each lane's A from where the transposed source accumulator
puts S's elements and B from the plan's runs, so a wrong slot, run or stride
changes the product. Flash attention compiled this way runs in the emulator
in test_attention.py."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tilemlir.backends.amdgpu.matrix import MfmaCore, register_a_plan
from tilemlir.mma_layouts import layout_for
from tilemlir.passes.gemm_facts import MmaChoice
from tilemlir.runtime import mfma_layouts

SHAPES = sorted({(i.m, i.k) for instrs in mfma_layouts.INSTRUCTIONS.values() for i in instrs
                 if i.blocks == 1 and i.m == i.n and i.m in (16, 32)})
PAIRS = [(shape, source) for shape, source in itertools.product(SHAPES, SHAPES)]


def _inverse(lanes: np.ndarray, items: np.ndarray) -> dict:
    """(lane, item) -> matrix position, from the emulator's (lane, item) arrays."""
    return {(int(lane), int(item)): position[1:]
            for position, lane, item in zip(np.ndindex(lanes.shape), lanes.flat, items.flat)}


def simulated(layout, source, plan, s: np.ndarray, v: np.ndarray) -> np.ndarray:
    """D = S V over S's columns, one K step at a time, from the emulator's own
    lane maps (tilemlir.runtime.mfma_layouts, not the tables the plan was made
    from): the source's C map says which element of S each (lane, item) of
    the transposed accumulator holds; the registers the plan picks are the
    instruction's A items, B's items are V's rows at the plan's runs (shifted
    by the lane group's stride); the instruction's A and B maps place them in
    its K order, and the step adds A @ B."""
    m, n, k, wave = layout.m, layout.n, layout.k, layout.wave_size
    width = source.n
    issued = _inverse(*mfma_layouts.output_layout(source.m, source.n, 1, False))
    a_at = _inverse(*mfma_layouts.input_layout(m, k, 1))
    b_at = _inverse(*mfma_layouts.input_layout(n, k, 1))  # B^T: (column, K)
    d = np.zeros((m, n))
    for step in range(s.shape[1] // k):
        period, q = divmod(step, plan.steps_per_period)
        first = period * plan.period
        runs = [step * k + base + offset for base, length in plan.runs[q] for offset in range(length)]
        a, b = np.full((m, k), np.nan), np.full((k, n), np.nan)
        for lane in range(wave):
            group = lane // m
            for item, (t, j) in enumerate(plan.slots[q]):
                issued_row, issued_col = issued[(lane, j)]
                row, kk = a_at[(lane, item)]
                a[row, kk] = s[issued_col, first + t * width + issued_row]  # transposed: S[col, row]
                column, kk = b_at[(lane, item)]
                b[kk, column] = v[runs[item] + group * plan.group_stride, column]
        assert not np.isnan(a).any() and not np.isnan(b).any()
        d += a @ b
    return d


@pytest.mark.parametrize("shape,source", PAIRS, ids=[f"{a[0]}x{a[1]}-from-{b[0]}x{b[1]}" for a, b in PAIRS])
def test_plan_computes_s_times_v(shape, source):
    layout = layout_for(shape[0], shape[0], shape[1])
    source_layout = layout_for(source[0], source[0], source[1])
    plan = register_a_plan(layout, source_layout)
    if shape[0] != source[0]:
        assert plan is None  # a lane holds another instruction's rows
        return
    if plan is None:
        # K steps narrower than a lane's run of four source columns (the f32
        # and older bf16 instructions, 1-2 elements per lane) have no plan.
        assert layout.a_per_lane < 4
        return
    rng = np.random.default_rng(shape[0] * 1000 + shape[1])
    columns = 2 * max(plan.period, layout.k)
    s = rng.integers(-4, 5, size=(layout.m, columns)).astype(np.float64)
    v = rng.integers(-4, 5, size=(columns, layout.n)).astype(np.float64)
    np.testing.assert_array_equal(simulated(layout, source_layout, plan, s, v), s @ v)


@pytest.mark.parametrize("m,k", [(16, 16), (32, 8), (16, 32), (32, 16)])
def test_attention_shapes_have_plans(m, k):
    """The 16-bit instructions of gfx90a/gfx942 (k = 16, 8: one run per step)
    and gfx950 (k = 32, 16: two runs of four) read P from registers."""
    plan = register_a_plan(layout_for(m, m, k), layout_for(m, m, k))
    assert plan is not None and [len(step) for step in plan.runs] == [1 if k * m == 256 else 2] * len(plan.runs)


def test_a_wrong_stride_is_caught():
    """The simulation can fail: the gfx950 plan with group 1's runs at group
    0's offsets reads the wrong rows of V."""
    layout, source = layout_for(32, 32, 16), layout_for(32, 32, 16)
    plan = register_a_plan(layout, source)
    wrong = type(plan)(plan.period, plan.slots, plan.runs, 0)
    s, v = np.arange(32 * 32.0).reshape(32, 32), np.arange(32 * 32.0).reshape(32, 32) % 7
    assert not np.array_equal(simulated(layout, source, wrong, s, v), s @ v)


def choice(m: int, k: int, a: str) -> MmaChoice:
    return MmaChoice(f"v_mfma_{m}x{m}x{k}", m, m, k, 1, a, a, "f32")


@pytest.mark.parametrize("warps,source_warps,bits,accepted", [
    ((4, 1), (4, 1), 16, True),    # waves own whole rows of P
    ((2, 2), (2, 2), 16, False),   # a wave holds half of each row
    ((4, 1), (2, 2), 16, False),   # the gemms split their waves differently
    ((4, 1), (4, 1), 8, False),    # 8-bit runs of four: 32-bit reads of B
])
def test_register_a_accepts(warps, source_warps, bits, accepted):
    a = "f16" if bits == 16 else "fp8"
    k = 16 if bits == 16 else 32
    assert MfmaCore().register_a(choice(16, k, a), warps, choice(16, k, a), source_warps, bits) is accepted
