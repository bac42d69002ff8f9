"""gfx950 LDS transpose reads (tile-infer-layout{transpose-reads=true}): B (and a
transposed A) stay as stored and each lane's K run is read with
amdgpu.transpose_load. Executed in the emulator against the reference engine,
checked down to ds_read_b64_tr_b16/b8 in the ISA, and the emulator's model of
the instruction is pinned by a hand-worked lane exchange."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_text import whole_problem_gemm
from mlir import ir

import tilemlir
from tilemlir.dialects.tile import make_context
from tilemlir.passes import build_pipeline
from tilemlir.runtime import load_module, run
from tilemlir.runtime.arguments import parameters, random_arguments
from tilemlir.runtime.dtypes import convert
from tilemlir.runtime.emulator import SanitizerError, emulate
from tilemlir.runtime.reference import Program

PIPELINE = ("tile-tiling{block=64,64,64 threads=256 stages=2},canonicalize,tile-legalize-precision,"
            "tile-select-mma,tile-infer-layout{transpose-reads=%s},tile-pipeline,tile-lower-to-gpu,"
            "canonicalize")


def lowered(text: str, transpose_reads: bool = True, chip: str = "gfx950") -> str:
    with make_context():
        module = ir.Module.parse(text)
        pm = build_pipeline(PIPELINE % str(transpose_reads).lower(),
                            overrides={"target": f"amdgpu:{chip}"})
        pm.run(module.operation)
        return str(module)


def transposed_a_text(m: int, n: int, k: int, dtype: str) -> str:
    return (f"func.func @gemm(%A: memref<{k}x{m}x{dtype}>, %B: memref<{k}x{n}x{dtype}>, "
            f"%C: memref<{m}x{n}xf16>) {{\n"
            f'  %zero = arith.constant 0.0 : f16\n'
            f'  "tile.fill"(%C, %zero) : (memref<{m}x{n}xf16>, f16) -> ()\n'
            f'  "tile.gemm"(%A, %B, %C) {{accum_dtype = f32, transpose_a = true, transpose_b = false}}'
            f" : (memref<{k}x{m}x{dtype}>, memref<{k}x{n}x{dtype}>, memref<{m}x{n}xf16>) -> ()\n"
            f"  return\n}}\n")


CASES = {
    "f16": whole_problem_gemm(128, 64, 192, "f16", "f16"),
    "bf16": whole_problem_gemm(64, 128, 128, "bf16", "f32"),
    "fp8": whole_problem_gemm(64, 64, 256, "f8E4M3FN", "f16"),
    "f16_transposed_a": transposed_a_text(64, 64, 128, "f16"),
}


def assert_emulated_matches_reference(text: str, gpu: str, k: int, seed: int = 3) -> None:
    """Runs the tile IR in the reference engine and its lowering in the gfx950
    emulator (sanitizer on) on the same random inputs; compares C within the
    output's rounding plus f32 summation over k."""
    program = Program(load_module(text)[0])
    inputs = random_arguments(parameters(program.function("gemm").op, program.dtype_of), seed)
    reference = [x.copy() for x in inputs]
    emulated = [x.copy() for x in inputs]
    run(text, "gemm", reference)
    run(gpu, "gemm", emulated, engine="emulator", target="amdgpu:gfx950")
    want, got = convert(reference[-1], np.float64), convert(emulated[-1], np.float64)
    bound = (np.spacing(np.abs(want).astype(reference[-1].dtype)).astype(np.float64)
             + k * 2.0 ** -23 * np.abs(want).max() * 4)
    assert np.all(np.abs(got - want) <= bound), float(np.abs(got - want).max())
    assert np.abs(want).max() > 0


@pytest.mark.parametrize("case", sorted(CASES))
def test_transpose_reads_match_reference(case):
    text = CASES[case]
    gpu = lowered(text)
    assert "amdgpu.transpose_load" in gpu
    assert_emulated_matches_reference(text, gpu, 256)


@pytest.mark.parametrize(("dtype", "mnemonic"), [("f16", "ds_read_b64_tr_b16"),
                                                 ("f8E4M3FN", "ds_read_b64_tr_b8")])
def test_transpose_reads_reach_the_isa(dtype, mnemonic):
    gpu = lowered(whole_problem_gemm(128, 128, 128, dtype, "f16"))
    isa = tilemlir.compile(gpu, target="amdgpu:gfx950", emit="isa").artifact
    assert mnemonic in isa
    # The operand is not transposed on its way into LDS: no single-element LDS stores.
    assert "ds_write_b16" not in isa and "ds_write_b8" not in isa


def test_automatic_where_the_accumulator_leaves_room_and_only_where_the_chip_has_them():
    """transpose-reads=auto (infer_layout.transpose_reads_pay): a 128x128 f32
    accumulator over 256 lanes (64 registers of 512) is read transposed and
    loaded straight into LDS; 256x256 (256 registers) is not."""
    text = whole_problem_gemm(512, 512, 128, "f16", "f16")
    assert "amdgpu.transpose_load" not in lowered(text, transpose_reads=False)
    assert "amdgpu.transpose_load" not in lowered(text, chip="gfx942")

    def default(tiling: str) -> str:
        options = {"tiling": tiling}
        return tilemlir.compile(text, target="amdgpu:gfx950", emit="gpu", options=options).artifacts["gpu"]

    room = default("block=128,128,64 threads=256 stages=2")
    assert "amdgpu.transpose_load" in room and "amdgpu.gather_to_lds" in room
    full = default("block=256,256,64 threads=256 stages=2")
    assert "amdgpu.transpose_load" not in full and "amdgpu.gather_to_lds" not in full


def lane_exchange_kernel(bits: int) -> str:
    """One wave: LDS (rows x 16, element = its flat index) is read with one
    transpose load, lane l pointing at row l // (16/E), column E * (l % (16/E))."""
    per_lane = 64 // bits
    rows = 64 * per_lane // 16
    lds = f"memref<{rows}x16xi{bits}, #gpu.address_space<workgroup>>"
    return f"""
module attributes {{gpu.container_module}} {{
gpu.module @m {{
  gpu.func @k(%out: memref<64x{per_lane}xi{bits}>) workgroup(%lds: {lds}) kernel
      attributes {{known_block_size = array<i32: 64, 1, 1>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %ce = arith.constant {per_lane} : index
    %cr = arith.constant {16 // per_lane} : index
    %lane = gpu.thread_id x
    %first = arith.muli %lane, %ce : index
    scf.for %e = %c0 to %ce step %c1 {{
      %flat = arith.addi %first, %e : index
      %r = arith.divui %flat, %c16 : index
      %c = arith.remui %flat, %c16 : index
      %x = arith.index_cast %flat : index to i{bits}
      memref.store %x, %lds[%r, %c] : {lds}
    }}
    gpu.barrier
    %row = arith.divui %lane, %cr : index
    %group_col = arith.remui %lane, %cr : index
    %col = arith.muli %group_col, %ce : index
    %v = amdgpu.transpose_load %lds[%row, %col] : {lds} -> vector<{per_lane}xi{bits}>
    vector.store %v, %out[%lane, %c0] : memref<64x{per_lane}xi{bits}>, vector<{per_lane}xi{bits}>
    gpu.return
  }}
}}
func.func @host(%out: memref<64x{per_lane}xi{bits}>) {{
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
      args(%out : memref<64x{per_lane}xi{bits}>)
  return
}}
}}
"""


@pytest.mark.parametrize("bits", [16, 8])
def test_lane_exchange_is_the_documented_one(bits):
    """Lane i of each 16-lane group must receive element j =
    in[j * 16/E + i // E][i % E]: column i of its group's E x 16 tile."""
    per_lane = 64 // bits
    per_row = 16 // per_lane
    module, _ = load_module(lane_exchange_kernel(bits))
    out = np.zeros((64, per_lane), dtype=np.int16 if bits == 16 else np.int8)
    emulate(module, "host", [out], chip="gfx950")
    for lane in range(64):
        group, i = divmod(lane, 16)
        for j in range(per_lane):
            flat = (group * 16 + j * per_row + i // per_lane) * per_lane + i % per_lane
            assert out[lane, j] == np.array(flat).astype(out.dtype), (lane, j)


def test_misaligned_transpose_read_is_reported():
    text = lane_exchange_kernel(16).replace("%col = arith.muli %group_col, %ce : index",
                                            "%col0 = arith.muli %group_col, %ce : index\n"
                                            "    %col = arith.addi %col0, %c1 : index")
    module, _ = load_module(text)
    with pytest.raises(SanitizerError, match="not 8-byte aligned"):
        emulate(module, "host", [np.zeros((64, 4), dtype=np.int16)], chip="gfx950")


def test_widening_copy_into_swizzled_rows():
    """fp8 computed in f16 (tile-legalize-precision{fp8-fallback=f16}): the copy
    of B converts 16 fp8 into 16 f16, 32 bytes, stored into rows XOR-swizzled
    by 16-byte chunks (swizzle 5): each chunk goes to its own swizzled place."""
    from test_amd_acceptance import emulate_against_reference

    text = whole_problem_gemm(128, 128, 128, "f8E4M3FN", "f16")
    tiling = "block=128,128,64 threads=256 stages=2"
    passes = "tile-legalize-precision{fp8-fallback=f16}"
    tile_ir = tilemlir.compile(text, target="amdgpu:gfx950", emit="tile",
                               options={"tiling": tiling, "passes": passes}).artifacts["tile"]
    assert "swizzle = 5" in tile_ir
    emulate_against_reference(text, "gfx950", tiling=tiling, passes=passes)


def test_transpose_reads_rows_eight_apart_meet_no_bank():
    """A 16x16x32 MFMA's transpose reads of B reach stored rows k..k+3 and
    k+8..k+11 in one clock of 64 banks (rows 0..3 alone on 32): in rows of 8
    chunks no padding and no plain XOR swizzle (rows 8 apart share its phase)
    leaves both bank counts free of conflicts; the swizzle's skew by row div 8
    does (lds_banks.swizzled_byte). gfx950's default for f16 256^3 is this
    block; executed against the reference engine."""
    from test_amd_acceptance import emulate_against_reference

    text = whole_problem_gemm(64, 64, 256, "f16", "f16")
    tiling = "block=32,64,128 threads=256 stages=2"
    tile_ir = tilemlir.compile(text, target="amdgpu:gfx950", emit="tile",
                               options={"tiling": tiling}).artifacts["tile"]
    (b_layout,) = [line for line in tile_ir.splitlines() if "tile.alloc_shared" in line and "128x64xf16" in line]
    assert "transpose_read = true" in b_layout and "conflicts = 0" in b_layout, b_layout
    assert "swizzle = " in b_layout and "pad = 0" in b_layout, b_layout
    emulate_against_reference(text, "gfx950", tiling=tiling)
