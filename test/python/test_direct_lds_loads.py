"""Direct global -> LDS loads (tile-lower-to-gpu{direct-lds-loads=true}): the
prefetch copies of a software-pipelined loop become amdgpu.gather_to_lds
(buffer_load_dwordx4 ... lds on gfx950), the wave writing its slots of the stored,
padded rows in lane order. Executed in the emulator (race and uninitialized-
read detectors on) against the reference engine at 2, 3 and 4 stages, with and
without LDS transpose reads; checked down to the ISA (the instruction, the
explicit vmcnt(0) before the loop's barrier, and no vmcnt wait in front of the
LDS reads, which the alias scopes of amdgpu-order-lds-dma (backends/amdgpu/order_lds_dma.py)
allow); and the emulator's model of the instruction is pinned by hand."""

from __future__ import annotations

import re

import numpy as np
import pytest
from kernel_text import whole_problem_gemm
from mlir import ir
from test_transpose_reads import assert_emulated_matches_reference

import tilemlir
from tilemlir.backends.amdgpu import report
from tilemlir.dialects.tile import make_context
from tilemlir.passes import build_pipeline
from tilemlir.runtime.emulator import SanitizerError

PIPELINE = ("tile-tiling{{block={block} threads=256 stages={stages}}},canonicalize,"
            "tile-legalize-precision,tile-select-mma,tile-infer-layout{{transpose-reads={tr}}},"
            "tile-pipeline,tile-lower-to-gpu{{direct-lds-loads={dma}}},canonicalize")


def lowered(text: str, stages: int = 2, transpose_reads: bool = True, direct: bool = True,
            chip: str = "gfx950", block: str = "64,64,64") -> str:
    with make_context():
        module = ir.Module.parse(text)
        pm = build_pipeline(PIPELINE.format(block=block, stages=stages,
                                            tr=str(transpose_reads).lower(),
                                            dma=str(direct).lower()),
                            overrides={"target": f"amdgpu:{chip}"})
        pm.run(module.operation)
        return str(module)


@pytest.mark.parametrize(("dtype", "stages", "transpose_reads"), [
    ("f16", 2, True), ("f16", 3, True), ("f16", 4, True), ("f8E4M3FN", 2, True),
    ("f8E4M3FN", 3, False), ("bf16", 2, False)])
def test_direct_loads_match_reference(dtype, stages, transpose_reads):
    k = 256
    text = whole_problem_gemm(64, 64, k, dtype, "f16")
    gpu = lowered(text, stages, transpose_reads)
    # Without transpose reads B is stored transposed and keeps the register path.
    assert gpu.count("amdgpu.gather_to_lds") >= (2 if transpose_reads else 1)
    assert "amdgpu.memory_counter_wait load(0)" in gpu
    assert_emulated_matches_reference(text, gpu, k, seed=5)


def test_only_in_bounds_copies_go_direct():
    # 100 is not a multiple of the 64-wide block: loads into LDS cannot give
    # zeros past the edge, so those copies keep the register path.
    text = whole_problem_gemm(100, 64, 128, "f16", "f16")
    gpu = lowered(text)
    assert "amdgpu.gather_to_lds" in gpu  # B (K x N, 128 x 64) is inside
    assert_emulated_matches_reference(text, gpu, 128, seed=5)
    assert "amdgpu.gather_to_lds" not in lowered(whole_problem_gemm(100, 100, 100, "f16", "f16"))


def test_chips_without_16_byte_direct_loads_keep_registers():
    text = whole_problem_gemm(64, 64, 128, "f16", "f16")
    for chip in ("gfx942", "gfx90a"):  # buffer_load_dword at most (amdgpu.buffer_load_lds)
        assert "amdgpu.gather_to_lds" not in lowered(text, transpose_reads=False, chip=chip)


def test_direct_loads_reach_the_isa_without_waits_before_lds_reads():
    gpu = lowered(whole_problem_gemm(128, 128, 256, "f8E4M3FN", "f16"), block="128,128,128")
    isa = tilemlir.compile(gpu, target="amdgpu:gfx950", emit="isa").artifact
    loop = "\n".join(report.main_loop_instructions(next(iter(report.function_sections(isa).values()))))
    assert "buffer_load_dwordx4" in loop and " lds" in loop and "ds_write" not in loop
    # Between the loop's barrier and the next one, LDS reads never wait on vmcnt.
    waits = [line for line in loop.splitlines() if "s_waitcnt" in line and "vmcnt" in line]
    assert waits and all(re.search(r"vmcnt\(0\)", w) for w in waits), waits
    lines = [line.strip() for line in loop.splitlines()]
    barrier = next(i for i, line in enumerate(lines) if line.startswith("s_barrier"))
    assert "vmcnt(0)" in lines[barrier - 1]
    # The only vmcnt wait is that one: none in front of the LDS reads.
    assert sum("vmcnt" in line for line in lines) == 1


DMA_KERNEL = """
#wg = #gpu.address_space<workgroup>
module attributes {gpu.container_module} {
  func.func @entry(%src: memref<512xf32>, %out: memref<32x16xf32>) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    gpu.launch_func @mod::@k blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%src : memref<512xf32>, %out : memref<32x16xf32>)
    return
  }
  gpu.module @mod {
    gpu.func @k(%src: memref<512xf32>, %out: memref<32x16xf32>) workgroup(%lds: memref<32x16xf32, #wg>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %c64 = arith.constant 64 : index
      %wave = arith.divui %t, %c64 : index
      %row = arith.muli %wave, %c16 : index
      %lane = arith.remui %t, %c64 : index
      %mine = arith.muli %t, %c4 : index
      amdgpu.gather_to_lds %src[%mine], %lds[%row, BASE_COL] : vector<4xf32>, memref<512xf32>, memref<32x16xf32, #wg>
      gpu.barrier
      %r = arith.divui %t, %c4 : index
      %c = arith.remui %t, %c4 : index
      %cc = arith.muli %c, %c4 : index
      %v = vector.load %lds[%r, %cc] : memref<32x16xf32, #wg>, vector<4xf32>
      vector.store %v, %out[%r, %cc] : memref<32x16xf32>, vector<4xf32>
      gpu.return
    }
  }
}
"""


def test_emulator_writes_in_lane_order_and_checks_the_wave_base():
    from tilemlir.runtime.emulator import emulate

    # Lane i of wave w lands at element 4 i of rows 16 w..: each 64-lane wave
    # fills 256 consecutive f32 of the 32 x 16 tile, so the tile is src in order.
    src = np.arange(512, dtype=np.float32)
    out = np.zeros((32, 16), dtype=np.float32)
    with make_context():
        emulate(ir.Module.parse(DMA_KERNEL.replace("BASE_COL", "%c0")), "entry", [src, out],
                chip="gfx950")
    assert np.array_equal(out.reshape(-1), src)
    # A destination that differs between the lanes of a wave is refused.
    with make_context(), pytest.raises(SanitizerError, match="not the same on every lane of the wave"):
        emulate(ir.Module.parse(DMA_KERNEL.replace("BASE_COL", "%lane")), "entry",
                [src, np.zeros((32, 16), dtype=np.float32)], chip="gfx950")


@pytest.mark.parametrize("chip", ["gfx90a", "gfx942", "gfx950"])
def test_descriptor_lists_exactly_the_loads_into_lds_llvm_mc_accepts(chip, tmp_path):
    import subprocess

    from tilemlir.backends.amdgpu.lowering import BUFFER_LOAD_LDS
    from tilemlir.targets import get_target

    listed = set(get_target(f"amdgpu:{chip}").family_facts.buffer_load_lds)
    for mnemonic in BUFFER_LOAD_LDS.values():
        source = tmp_path / f"{mnemonic}.s"
        source.write_text(f"{mnemonic} v1, s[0:3], 0 offen lds\n")
        result = subprocess.run(["/usr/lib/llvm-22/bin/llvm-mc", "-triple=amdgcn-amd-amdhsa",
                                 f"-mcpu={chip}", "-filetype=obj", "-o", str(tmp_path / "x.o"),
                                 str(source)], capture_output=True, text=True, check=False)
        assert (result.returncode == 0) == (mnemonic in listed), (chip, mnemonic, result.stderr)


def test_emulator_refuses_gather_into_rows_that_are_not_contiguous():
    from tilemlir.runtime.emulator import UnsupportedOp, emulate

    # The 32 x 16 view of a 32 x 32 LDS buffer: lane order cannot run on
    # across its rows, so the emulator does not guess.
    text = DMA_KERNEL.replace("BASE_COL", "%c0").replace(
        "workgroup(%lds: memref<32x16xf32, #wg>)", "workgroup(%whole: memref<32x32xf32, #wg>)").replace(
        "%t = gpu.thread_id x",
        "%t = gpu.thread_id x\n      %lds = memref.subview %whole[0, 0] [32, 16] [1, 1] : "
        "memref<32x32xf32, #wg> to memref<32x16xf32, strided<[32, 1]>, #wg>").replace(
        "memref<32x16xf32, #wg>", "memref<32x16xf32, strided<[32, 1]>, #wg>")
    with make_context(), pytest.raises(UnsupportedOp, match="not contiguous"):
        emulate(ir.Module.parse(text), "entry", [np.arange(512, dtype=np.float32),
                                                 np.zeros((32, 16), dtype=np.float32)], chip="gfx950")


def test_buffer_span_counts_strides_not_elements():
    from tilemlir.backends.amdgpu.lowering import buffer_span_bytes

    with make_context():
        dense = ir.MemRefType(ir.Type.parse("memref<64x128xf16>"))
        strided = ir.MemRefType(ir.Type.parse("memref<64x128xf16, strided<[67108864, 1]>>"))
        dynamic = ir.MemRefType(ir.Type.parse("memref<64x128xf16, strided<[?, 1]>>"))
        assert buffer_span_bytes(dense) == 64 * 128 * 2
        # 16 KiB of elements, but the last one is 8 GiB from the base: a 32-bit
        # buffer size would wrap to 0 and every load would read zeros.
        assert buffer_span_bytes(strided) == (63 * 67108864 + 128) * 2
        assert buffer_span_bytes(dynamic) is None
        # Rows running backwards from an offset: elements lie below later rows'
        # base, which unsigned 32-bit buffer offsets cannot reach.
        backwards = ir.MemRefType(ir.Type.parse(
            "memref<64x128xf16, strided<[-67108864, 1], offset: 4227858432>>"))
        assert buffer_span_bytes(backwards) is None


@pytest.mark.parametrize("strided", [
    "memref<64x128xf16, strided<[67108864, 1]>>",
    "memref<64x128xf16, strided<[-67108864, 1], offset: 4227858432>>",
])
def test_operand_spanning_more_than_2_gib_keeps_the_register_path(strided):
    # A's rows are 2^26 elements apart: 64 x 128 f16 elements, spread over 8 GiB.
    text = whole_problem_gemm(64, 64, 128, "f16", "f16").replace("memref<64x128xf16>", strided)
    assert strided in text
    gpu = lowered(text)
    casts = [line for line in gpu.splitlines() if "amdgpu.fat_raw_buffer_cast" in line]
    assert casts and all("67108864" not in line for line in casts), casts  # B still goes direct
    assert "amdgpu.gather_to_lds" in gpu
