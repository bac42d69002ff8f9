"""AMD lane exchanges without LDS (backends/amdgpu/cross_lane.py): the SIMT
emulator's DPP moves, permlane swaps and readlane, lane by lane against the
ISA's description of each control, and tile.reduce lowered with them: every
kind and shape against float64 NumPy on gfx90a, gfx942 and gfx950, bit-equal
to the shuffle lowering, and the ISA free of LDS-path shuffles."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_text import reduce_kernel

import tilemlir
from tilemlir.diagnostics import UserError
from tilemlir.runtime import run

THREADS = 128  # two waves of 64: every move stays inside its own wave
LANE = np.arange(THREADS) % 64
WAVE_BASE = np.arange(THREADS) - LANE
ROW = LANE // 16


def _lane_kernel(op: str, prelude: str = "") -> str:
    """out[t] = `op` applied to %src = float(t), with %old = -1 - t, after the
    ops of `prelude`."""
    n = THREADS
    return f"""module attributes {{gpu.container_module}} {{
  func.func @lanes(%out: memref<{n}xf32>) {{
    %c1 = arith.constant 1 : index
    %n = arith.constant {n} : index
    gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1) args(%out : memref<{n}xf32>)
    return
  }}
  gpu.module @m {{
    gpu.func @k(%out: memref<{n}xf32>) kernel {{
      %t = gpu.thread_id x
      %ti = arith.index_cast %t : index to i32
      %src = arith.sitofp %ti : i32 to f32
      %m1 = arith.constant -1.0 : f32
      %neg = arith.negf %src : f32
      %old = arith.addf %neg, %m1 : f32
      {prelude}
      %r = {op}
      memref.store %r, %out[%t] : memref<{n}xf32>
      gpu.return
    }}
  }}
}}
"""


def _run_lanes(op: str, chip: str = "gfx942", prelude: str = "") -> np.ndarray:
    out = np.full(THREADS, np.nan, np.float32)
    run(_lane_kernel(op, prelude), "lanes", [out], engine="emulator", target=f"amdgpu:{chip}")
    return out


def _expect(source: np.ndarray, written: np.ndarray | None = None, zero: np.ndarray | None = None) -> np.ndarray:
    """Lane t gets float(wave base + source[t]) where written, else its old
    value -1 - t; `zero`: written lanes that read out of range with bound_ctrl (0)."""
    t = np.arange(THREADS)
    got = (WAVE_BASE + source).astype(np.float32)
    if zero is not None:
        got = np.where(zero, np.float32(0), got)
    return got if written is None else np.where(written, got, (-1 - t).astype(np.float32))


# The DPP16 controls (CDNA3 ISA, DPP_CTRL): which lane of its wave each lane reads.
DPP_CASES = {
    "quad_perm xor 1": ("quad_perm([1 : i32, 0 : i32, 3 : i32, 2 : i32])", LANE ^ 1),
    "quad_perm xor 2": ("quad_perm([2 : i32, 3 : i32, 0 : i32, 1 : i32])", LANE ^ 2),
    "quad_perm broadcast 3": ("quad_perm([3 : i32, 3 : i32, 3 : i32, 3 : i32])", LANE | 3),
    "row_half_mirror": ("row_half_mirror", LANE // 8 * 8 + 7 - LANE % 8),
    "row_mirror": ("row_mirror", ROW * 16 + 15 - LANE % 16),
    "row_ror 8": ("row_ror(8 : i32)", LANE ^ 8),
    "row_ror 3": ("row_ror(3 : i32)", ROW * 16 + (LANE - 3) % 16),
    "wave_rol": ("wave_rol", (LANE + 1) % 64),
    "wave_ror": ("wave_ror", (LANE - 1) % 64),
}


@pytest.mark.parametrize("name", sorted(DPP_CASES))
def test_dpp_moves_every_lane(name):
    control, source = DPP_CASES[name]
    got = _run_lanes(f"amdgpu.dpp %old %src {control} : f32")
    np.testing.assert_array_equal(got, _expect(source), err_msg=name)


def test_dpp_bank_masks_make_an_exact_xor_4():
    # cross_lane's bit 4 when lanes of a quad differ: banks 0 and 2 read four
    # lanes up (row_shl), banks 1 and 3 four lanes down (row_shr); masked-off
    # banks keep `old`.
    up = _run_lanes("amdgpu.dpp %old %src row_shl(4 : i32) {bank_mask = 5 : i32} : f32")
    in_even_bank = (LANE % 16 // 4) % 2 == 0
    np.testing.assert_array_equal(up, _expect(LANE + 4, written=in_even_bank))
    both = _run_lanes("amdgpu.dpp %up %src row_shr(4 : i32) {bank_mask = 10 : i32} : f32",
                      prelude="%up = amdgpu.dpp %old %src row_shl(4 : i32) {bank_mask = 5 : i32} : f32")
    np.testing.assert_array_equal(both, _expect(LANE ^ 4))


def test_dpp_row_bcast_with_row_masks():
    # row_bcast:15 into rows 1 and 3 (lane 15 of the row before), row_bcast:31
    # into rows 2 and 3 (lane 31); rows the mask leaves out keep `old`.
    got15 = _run_lanes("amdgpu.dpp %old %src row_bcast_15 {row_mask = 10 : i32} : f32")
    np.testing.assert_array_equal(got15, _expect(ROW * 16 - 1, written=ROW % 2 == 1))
    got31 = _run_lanes("amdgpu.dpp %old %src row_bcast_31 {row_mask = 12 : i32} : f32")
    np.testing.assert_array_equal(got31, _expect(np.full(THREADS, 31), written=ROW >= 2))


@pytest.mark.parametrize("bound_ctrl", [False, True])
def test_dpp_out_of_range_lanes_follow_bound_ctrl(bound_ctrl):
    # row_shr:1: lane 0 of each row has no source: 0 with bound_ctrl, else old.
    attrs = " {bound_ctrl = true}" if bound_ctrl else ""
    got = _run_lanes(f"amdgpu.dpp %old %src row_shr(1 : i32){attrs} : f32")
    first = LANE % 16 == 0
    if bound_ctrl:
        want = _expect(LANE - 1, zero=first)
    else:
        want = _expect(LANE - 1, written=~first)
    np.testing.assert_array_equal(got, want)
    shl = _run_lanes(f"amdgpu.dpp %old %src row_shl(2 : i32){attrs} : f32")
    last = LANE % 16 >= 14
    want = _expect(LANE + 2, zero=last) if bound_ctrl else _expect(LANE + 2, written=~last)
    np.testing.assert_array_equal(shl, want)


@pytest.mark.parametrize("row_length", [16, 32])
def test_permlane_swap_reads_lane_xor_row_length(row_length):
    got = _run_lanes(f"amdgpu.permlane_swap %src {row_length} : f32", chip="gfx950")
    np.testing.assert_array_equal(got, _expect(LANE ^ row_length))


def test_permlane_swap_on_a_chip_without_it_is_an_error():
    # v_permlane16_swap is CDNA4's (gfx950): gfx942's ISA has none.
    with pytest.raises(UserError, match=r":\d+:\d+: error: emulator: amdgpu.permlane_swap: "
                                        r"gfx942 has no v_permlane16/32_swap"):
        _run_lanes("amdgpu.permlane_swap %src 16 : f32", chip="gfx942")


def test_readlane_gives_every_lane_of_a_wave_one_lane():
    got = _run_lanes("rocdl.readlane %src, %lane : (f32, i32) -> f32",
                     prelude="%lane = arith.constant 37 : i32")
    np.testing.assert_array_equal(got, _expect(np.full(THREADS, 37)))


# --------------------------------------------------------------------------
# tile.reduce lowered with them
# --------------------------------------------------------------------------

# (rows, cols, dim) and the lane bits each reduces over, as the lowering
# exchanges them on gfx942 (gfx950: permlane swaps for bits 16 and 32):
SHAPES = [
    (64, 64, 1),  # 1, 2 quad_perm, 4 row_half_mirror, 8 row_ror:8
    (8, 512, 1),  # the whole wave: ... then row_bcast:15/31 and readlane 63
    (64, 16, 0),  # 4 row_shl/shr:4 with bank masks (lanes of a quad differ), 8, then 16, 32 shuffles
    (16, 64, 0),  # 16 and 32 alone: shuffles
    (8, 128, 1),  # a row in half a wave: 1 to 8 as above, then a shuffle of 16
]
NUMPY = {"sum": np.sum, "max": np.max, "min": np.min, "maximum": np.max, "minimum": np.min}
DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32}


def _reduce_inputs(rows: int, cols: int, dtype: str) -> np.ndarray:
    rng = np.random.default_rng(rows * 7 + cols)
    if dtype == "i32":
        return rng.integers(-1000, 1000, (rows, cols)).astype(np.int32)
    return rng.uniform(-2, 2, (rows, cols)).astype(DTYPES[dtype])


@pytest.mark.parametrize("chip", ["gfx90a", "gfx942", "gfx950"])
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("rows, cols, dim", SHAPES)
def test_reductions_match_float64(chip, dtype, rows, cols, dim):
    x = _reduce_inputs(rows, cols, dtype)
    for kind, reference in NUMPY.items():
        got = np.zeros(rows if dim == 1 else cols, DTYPES[dtype])
        run(reduce_kernel(kind, rows, cols, dim, dtype), "reduce", [x, got], engine="emulator",
            target=f"amdgpu:{chip}")
        want = reference(x.astype(np.float64), axis=dim)
        if kind != "sum" or dtype == "i32":
            np.testing.assert_array_equal(got, want.astype(DTYPES[dtype]), err_msg=f"{kind} {chip}")
            continue
        # each of the n - 1 additions rounds once in the element type
        n = x.shape[dim]
        bound = (n - 1) * np.finfo(DTYPES[dtype]).eps * np.abs(x.astype(np.float64)).sum(axis=dim)
        assert (np.abs(got - want) <= bound).all(), f"sum {dtype} {chip}: {np.abs(got - want).max()}"


# (chip, shape, what its ISA must hold, whether LDS-path shuffles may remain)
ISA_CASES = [
    ("gfx942", (64, 64, 1), ["quad_perm:[1,0,3,2]", "quad_perm:[2,3,0,1]", "row_half_mirror", "row_ror:8"], False),
    ("gfx942", (8, 512, 1), ["row_bcast:15 row_mask:0xa", "row_bcast:31 row_mask:0xc", "v_readlane_b32"], False),
    ("gfx942", (64, 16, 0), ["row_shl:4 row_mask:0xf bank_mask:0x5", "row_shr:4 row_mask:0xf bank_mask:0xa"], True),
    ("gfx90a", (8, 512, 1), ["row_bcast:15", "row_bcast:31", "v_readlane_b32"], False),
    ("gfx950", (8, 512, 1), ["row_ror:8", "v_permlane16_swap", "v_permlane32_swap"], False),
    ("gfx950", (16, 64, 0), ["v_permlane16_swap", "v_permlane32_swap"], False),
    ("gfx942", (8, 128, 1), ["row_ror:8"], True),
    ("gfx950", (8, 128, 1), ["row_ror:8", "v_permlane16_swap"], False),
]


@pytest.mark.parametrize("chip, shape, needs, lds_left", ISA_CASES)
def test_isa_exchanges_lanes_without_lds(chip, shape, needs, lds_left):
    """The reduction steps reach the ISA as DPP moves and swaps; ds_swizzle and
    ds_bpermute remain only for steps DPP cannot express (bits 16 and 32 of a
    partial-wave group on chips without permlane swaps)."""
    isa = tilemlir.compile(reduce_kernel("sum", *shape, "f32"), target=f"amdgpu:{chip}", emit="isa").artifact
    for text in needs:
        assert text in isa, f"{text} missing on {chip}"
    lds_shuffles = isa.count("ds_swizzle") + isa.count("ds_bpermute")
    assert (lds_shuffles > 0) == lds_left, f"{lds_shuffles} LDS-path shuffles on {chip}"
