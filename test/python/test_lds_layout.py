"""LDS layouts: the static bank-conflict model against hand-worked cases, and
the layouts tile-infer-layout chooses (issue 7: 0 conflicts per main-loop
iteration for the default f16 and fp8 configurations on gfx942 and gfx950)."""

from __future__ import annotations

import pytest
from kernel_text import EXAMPLES, whole_problem_gemm

import tilemlir
from tilemlir.lds_banks import (
    access_conflicts,
    choose_padding,
    choose_swizzle,
    operand_read_conflicts,
    swizzled_byte,
)

LANES = range(64)


def test_b64_rows_32_bytes_apart():
    """fp8 A of v_mfma_f32_32x32x16: lane l reads 8 bytes at row l % 32, K (l // 32) * 8.
    Rows 32 bytes apart put rows 0, 4, 8, 12 of each 16-lane group on the same
    two banks (row * 8 dwords mod 32): 4 distinct dwords -> 3 extra clocks,
    times 4 groups = 12."""
    rows = [lane % 32 for lane in LANES]
    ks = [(lane // 32) * 8 for lane in LANES]
    assert operand_read_conflicts(rows, ks, 32, 1, 8, banks=32) == 12
    # 8 bytes of padding: row * 10 dwords mod 32 is a different even bank for
    # each of the 16 rows of a group, the next dword the odd one after it.
    assert operand_read_conflicts(rows, ks, 40, 1, 8, banks=32) == 0
    assert choose_padding(rows, ks, 32, 1, 8, [32]) == (8, 0)


def test_transpose_reads_need_a_swizzle():
    """f16 B of v_mfma_f32_32x32x16 read with ds_read_b64_tr_b16, B stored K x N
    in rows of 128 halves (256 bytes): lane l of each 16-lane group reads 8
    bytes of row k + (l % 16) // 4 at column n - l % 16 + 4 (l % 4), n = l % 32,
    k = 8 (l // 32). Lanes 0-31 read rows 0-3, bytes 0-63 of each.

    64 banks (32 lanes a clock): the 4 rows start on bank 0 -> 4 distinct dwords
    per bank, 3 extra clocks, twice (lanes 32-63: rows 8-11) = 6. 32 banks (16
    lanes a clock, bytes 0-31 or 32-63 of the rows): 3 per group, 4 groups = 12.
    A padding of R bytes would need R = 64 or 192 mod 256 for 64 banks and
    32 or 96 mod 128 for 32: none does both. XOR-swizzling chunk c of row r to
    c ^ 5r (16 chunks) gives rows 0-3 the chunks {0-3}, {4-7}, {8-11}, {12-15}:
    conflict-free for both; s = 1..4 repeat a chunk set (or its mod-8 banks)."""
    rows = [8 * (lane // 32) + (lane % 16) // 4 for lane in LANES]
    cols = [(lane % 32) - lane % 16 + 4 * (lane % 4) for lane in LANES]
    assert operand_read_conflicts(rows, cols, 256, 2, 4, banks=64) == 6
    assert operand_read_conflicts(rows, cols, 256, 2, 4, banks=32) == 12
    assert all(max(operand_read_conflicts(rows, cols, 256 + 2 * pad, 2, 4, banks)
                   for banks in (32, 64)) for pad in range(0, 129, 4))
    assert choose_padding(rows, cols, 128, 2, 4, [32]) == (16, 0)  # 32 banks alone: padding works
    assert choose_swizzle(rows, cols, 128, 2, 4, [32, 64]) == (5, 0)
    assert swizzled_byte(3, 16, 5, 256) == 16 ^ 15 * 16  # row 3, chunk 1 -> chunk 14
    assert swizzled_byte(9, 40, 5, 256) == 40 ^ 13 * 16  # 45 mod 16 = 13
    assert choose_swizzle(rows, cols, 120, 2, 4, [32, 64]) is None  # 15 chunks: no XOR swizzle


def test_rows_eight_apart_in_one_clock_take_a_skewed_swizzle():
    """A 16x16x32 MFMA's transpose reads of B in rows of 64 f16 (8 chunks):
    lanes 16g..16g+15 read rows 8g..8g+3, 32 bytes of each, so one clock of
    64 banks (32 lanes of 8 bytes) reaches rows 0-3 and 8-11. Every plain
    swizzle gives rows 0 and 8 one phase (8s mod 8 = 0), and both land in the
    same half of the 256 bytes: no plain swizzle and no padding is free of
    conflicts on 64 banks and 32 at once. The skewed swizzle s = 8 + 2 adds
    row div 8 to the row first: rows 0-3 take chunk pairs 0-3 and rows 8-11
    pairs 1, 2, 3, 0, apart in both halves and in each clock of 32 banks."""
    lanes = range(64)
    rows = [8 * (lane // 16) + (lane % 16) // 4 for lane in lanes]
    cols = [4 * (lane % 4) for lane in lanes]
    both = (32, 64)
    assert all(max(operand_read_conflicts(rows, cols, 128 + 2 * pad, 2, 4, banks) for banks in both)
               for pad in range(0, 65, 4))
    assert all(max(operand_read_conflicts(rows, cols, 128, 2, 4, banks, swizzle=s) for banks in both)
               for s in range(1, 8))
    assert choose_swizzle(rows, cols, 64, 2, 4, list(both)) == (10, 0)
    assert [swizzled_byte(row, 0, 10, 128) // 32 for row in (0, 1, 2, 3, 8, 9, 10, 11)] == [0, 1, 2, 3, 1, 2, 3, 0]
    assert swizzled_byte(9, 0, 2, 128) == swizzled_byte(1, 0, 2, 128) == 32  # plain: rows 8 apart alike


def test_b64_rows_64_bytes_apart():
    """f16 A of v_mfma_f32_16x16x16: rows 64 bytes apart land on banks {0, 1, 16, 17};
    8 distinct rows share each: 7 extra clocks per 16-lane group, 28 in all."""
    rows = [lane % 16 for lane in LANES]
    ks = [(lane // 16) * 4 for lane in LANES]
    assert operand_read_conflicts(rows, ks, 64, 2, 4, banks=32) == 28
    assert choose_padding(rows, ks, 32, 2, 4, [32]) == (4, 0)


def test_broadcast_and_contiguous():
    assert access_conflicts([0] * 64, 4, banks=32) == 0  # one dword for every lane: broadcast
    assert access_conflicts([16 * lane for lane in LANES], 16, banks=32) == 0  # b128, contiguous
    assert access_conflicts([128 * lane for lane in LANES], 4, banks=32) == 31 * 2  # one bank, 32 dwords


def test_more_banks_halve_the_pressure():
    rows = [lane % 32 for lane in LANES]
    ks = [(lane // 32) * 8 for lane in LANES]
    # With 64 banks, 32 lanes go per clock and 32-byte rows still share banks.
    assert operand_read_conflicts(rows, ks, 32, 1, 8, banks=64) > 0
    assert choose_padding(rows, ks, 32, 1, 8, [32, 64])[1] == 0


def test_seed_layouts():
    seed = (EXAMPLES / "seed_fp8_gemm.mlir").read_text()
    tile_ir = tilemlir.compile(seed, target="amdgpu:gfx942", emit="tile").artifacts["tile"]
    # A: rows 32 bytes apart would cost 12 extra clocks per operand read (the
    # hand-worked case above); 8 bytes of padding make them conflict-free.
    assert ('tile.smem_layout = {banks = "32", conflicts = 0 : i64, pad = 8 : i64, '
            'transpose_read = false, transposed = false, unpadded_conflicts = 12 : i64}') in tile_ir
    assert 'pad = 8 : i64, transpose_read = false, transposed = true' in tile_ir  # B is stored N x K


def test_padding_gives_way_to_the_lds_budget():
    """128x128x64 f16 at 2 stages fills gfx942's 64 KiB exactly: no room for
    padding, so none is added; the rows are XOR-swizzled instead and the
    MFMAs read them two K steps (16 bytes) at a time, without conflicts,
    and the remark says so, among what the compiler chose (nothing is lost:
    not printed by default)."""
    compiled = tilemlir.compile(whole_problem_gemm(4096, 4096, 4096, "f16", "f32"), target="amdgpu:gfx942",
                                emit="isa", options={"report": True, "tiling": "block=128,128,64 stages=2"},
                                remarks="all")
    (kernel,) = compiled.report["kernels"]
    assert kernel["shared_bytes"] == 65536 and kernel["spills"] == 0
    assert kernel["amdgpu"]["lds_bank_conflicts_per_iteration"] == 0 and kernel["amdgpu"]["lds_read_bits"] == 128
    said = [r for r in compiled.remarks if "dropped" in r.message]
    assert len(said) == 2 and all("XOR-swizzled instead (swizzle 1): its gemm operand reads cost 0 bank-conflict "
                                  "clocks per iteration, as padded" in r.message and r.kind == "info"
                                  for r in said), said


@pytest.mark.parametrize("chip", ["gfx942", "gfx950"])
@pytest.mark.parametrize("dtype,out", [("f16", "f32"), ("fp8", "f16")])
def test_default_configurations_are_conflict_free(chip, dtype, out):
    if dtype == "fp8":  # the chip's own e4m3: FNUZ on gfx942, OCP on gfx950
        dtype = "f8E4M3FNUZ" if chip == "gfx942" else "f8E4M3FN"
    report = tilemlir.compile(whole_problem_gemm(1024, 1024, 1024, dtype, out), target=f"amdgpu:{chip}",
                              emit="isa", options={"report": True}).report
    (kernel,) = report["kernels"]
    assert kernel["amdgpu"]["lds_bank_conflicts_per_iteration"] == 0
    assert kernel["amdgpu"]["lds_read_bits"] >= 64  # operand reads are vector reads
