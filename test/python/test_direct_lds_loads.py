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
      WAIT
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


def dma_kernel(base_col: str = "%c0", wait: str = "amdgpu.memory_counter_wait load(0)") -> str:
    return DMA_KERNEL.replace("BASE_COL", base_col).replace("WAIT", wait)


def test_emulator_writes_in_lane_order_and_checks_the_wave_base():
    from tilemlir.runtime.emulator import emulate

    # Lane i of wave w lands at element 4 i of rows 16 w..: each 64-lane wave
    # fills 256 consecutive f32 of the 32 x 16 tile, so the tile is src in order.
    src = np.arange(512, dtype=np.float32)
    out = np.zeros((32, 16), dtype=np.float32)
    with make_context():
        emulate(ir.Module.parse(dma_kernel()), "entry", [src, out], chip="gfx950")
    assert np.array_equal(out.reshape(-1), src)
    # A destination that differs between the lanes of a wave is refused.
    with make_context(), pytest.raises(SanitizerError, match="not the same on every lane of the wave"):
        emulate(ir.Module.parse(dma_kernel("%lane")), "entry",
                [src, np.zeros((32, 16), dtype=np.float32)], chip="gfx950")


IN_FLIGHT = (r"-:28:12: error: emulator: read of byte 0 of LDS \(workgroup attribution 0\), which the "
             r"amdgpu.gather_to_lds at -:22:7 is still loading for wave 0: that wave has not waited for it "
             r"\(amdgpu.memory_counter_wait load\(0\)\), in workgroup \(0, 0, 0\), lane 0 ")


@pytest.mark.parametrize("wait", [
    "",  # the barrier alone: s_barrier does not wait for vmcnt
    "amdgpu.memory_counter_wait load(1)",  # counts of outstanding loads are not modelled
    "amdgpu.memory_counter_wait load(0) store(1)",  # one vmcnt on GFX9: 1
    "amdgpu.memory_counter_wait ds(0)",
])
def test_lds_written_by_a_gather_is_read_only_after_the_wave_waits_for_it(wait):
    from tilemlir.runtime.emulator import emulate

    src = np.arange(512, dtype=np.float32)
    with make_context(), pytest.raises(SanitizerError, match=IN_FLIGHT):
        emulate(ir.Module.parse(dma_kernel(wait=wait)), "entry", [src, np.zeros((32, 16), np.float32)],
                chip="gfx950")
    # Without the sanitizer the read sees what LDS held before (nothing of src).
    out = np.zeros((32, 16), dtype=np.float32)
    with make_context():
        emulate(ir.Module.parse(dma_kernel(wait=wait)), "entry", [src, out], chip="gfx950", sanitize=False)
    assert not np.array_equal(out.reshape(-1), src)


def test_a_wait_for_no_stores_is_a_wait_for_no_loads_on_gfx9():
    from tilemlir.runtime.emulator import emulate

    # GFX9 counts loads and stores in one vmcnt: store(0) alone waits for both.
    src, out = np.arange(512, dtype=np.float32), np.zeros((32, 16), np.float32)
    with make_context():
        emulate(ir.Module.parse(dma_kernel(wait="amdgpu.memory_counter_wait store(0)")), "entry",
                [src, out], chip="gfx950")
    assert np.array_equal(out.reshape(-1), src)


def test_an_atomic_on_bytes_a_gather_is_loading_is_an_error():
    from tilemlir.runtime.emulator import emulate

    text = dma_kernel(wait="""%one = arith.constant 1.0 : f32
      %old = memref.atomic_rmw addf %one, %lds[%row, %c0] : (f32, memref<32x16xf32, #wg>) -> f32
      amdgpu.memory_counter_wait load(0)""")
    with make_context(), pytest.raises(SanitizerError, match=r"-:24:14: .*write to byte 0 of LDS .* "
                                       r"amdgpu.gather_to_lds at -:22:7 is still loading for wave 0"):
        emulate(ir.Module.parse(text), "entry", [np.arange(512, dtype=np.float32),
                                                 np.zeros((32, 16), np.float32)], chip="gfx950")


def test_a_gather_into_bytes_another_wave_read_since_the_barrier_is_a_race():
    from tilemlir.runtime.emulator import emulate

    # Every lane zeroes its 4 elements, then (after a barrier) reads the
    # other wave's: wave 0's gather then overwrites what wave 1 read, with
    # no barrier between (the load may land before the read is done).
    text = dma_kernel().replace("      %mine = arith.muli %t, %c4 : index\n", """      %mine = arith.muli %t, %c4 : index
      %zr = arith.divui %t, %c4 : index
      %zc0 = arith.remui %t, %c4 : index
      %zc = arith.muli %zc0, %c4 : index
      %zero = arith.constant dense<0.0> : vector<4xf32>
      vector.store %zero, %lds[%zr, %zc] : memref<32x16xf32, #wg>, vector<4xf32>
      gpu.barrier
      %c32 = arith.constant 32 : index
      %shifted = arith.addi %zr, %c16 : index
      %other = arith.remui %shifted, %c32 : index
      %seen = vector.load %lds[%other, %zc] : memref<32x16xf32, #wg>, vector<4xf32>
""")
    with make_context(), pytest.raises(SanitizerError, match=r"-:32:7: .*data race: lane 64 read and "
                                       r"another lane writes with no gpu.barrier between \(write after read\)"):
        emulate(ir.Module.parse(text), "entry", [np.arange(512, dtype=np.float32),
                                                 np.zeros((32, 16), np.float32)], chip="gfx950")


def test_a_wave_waits_for_its_own_gathers_only():
    from tilemlir.runtime.emulator import emulate

    # Only wave 0 waits: wave 1's rows (16..31) are still in flight when row
    # 16 is read, by lane 64 (rows r = t / 4).
    text = dma_kernel(wait="""%first = arith.cmpi ult, %t, %c64 : index
      scf.if %first {
        amdgpu.memory_counter_wait load(0)
      }""")
    with make_context(), pytest.raises(SanitizerError, match=r"read of byte 1024 .* still loading for wave 1: "
                                       r"that wave has not waited .* lane 64 "):
        emulate(ir.Module.parse(text), "entry", [np.arange(512, dtype=np.float32),
                                                 np.zeros((32, 16), np.float32)], chip="gfx950")


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
    text = dma_kernel().replace(
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


NESTED = """
func.func @gemm(%A: memref<128x128xf16>, %B: memref<128x128xf16>, %C: memref<128x128xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %zero = arith.constant 0.0 : f32
    %A_s = "tile.alloc_shared"() : () -> memref<128x32xf16, #gpu.address_space<workgroup>>
    %B_s = "tile.alloc_shared"() : () -> memref<32x128xf16, #gpu.address_space<workgroup>>
    %acc = "tile.alloc_fragment"() : () -> memref<128x128xf32, #gpu.address_space<private>>
    scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c128) step (%c1, %c1) {
      memref.store %zero, %acc[%i, %j] : memref<128x128xf32, #gpu.address_space<private>>
      scf.reduce
    }
    scf.for %o = %c0 to %c2 step %c1 {
      scf.for %ki = %c0 to %c2 step %c1 {
        %kb = arith.muli %o, %c2 : index
        %kt = arith.addi %kb, %ki : index
        %k = arith.muli %kt, %c32 : index
        "tile.copy"(%A, %A_s, %c0, %k) {operandSegmentSizes = array<i32: 1, 1, 2, 0>, tile.in_bounds} : (memref<128x128xf16>, memref<128x32xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.copy"(%B, %B_s, %k, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>, tile.in_bounds} : (memref<128x128xf16>, memref<32x128xf16, #gpu.address_space<workgroup>>, index, index) -> ()
        "tile.gemm"(%A_s, %B_s, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<128x32xf16, #gpu.address_space<workgroup>>, memref<32x128xf16, #gpu.address_space<workgroup>>, memref<128x128xf32, #gpu.address_space<private>>) -> ()
      } {tile.num_stages = 2 : i64}
    }
    "tile.copy"(%acc, %C, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x128xf32, #gpu.address_space<private>>, memref<128x128xf16>, index, index) -> ()
    gpu.yield
  }) {grid = array<i64: 1, 1>, threads = 256 : i64} : () -> ()
  return
}
"""


def test_a_pipelined_loop_in_another_waits_for_its_loads_past_the_end():
    # Two iterations of two stages: not peeled, so the last prefetches stage 0
    # past the end, which the next outer iteration's prologue stores again.
    gpu = lowered(NESTED, block="128,128,32")
    assert "tile.pipeline_tail" not in gpu and gpu.count("amdgpu.gather_to_lds") >= 2
    # The inner loop's end, then the wait and a barrier (other waves' loads
    # land where the prologue stores), then the outer loop's yield.
    assert re.search(r"\n\s*}\n\s*amdgpu.memory_counter_wait load\(0\)\n\s*amdgpu.lds_barrier\n\s*scf.yield",
                     gpu)
    assert_emulated_matches_reference(NESTED, gpu, 128, seed=5)
