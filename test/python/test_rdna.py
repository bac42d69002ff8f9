"""RDNA3 (gfx1100, gfx1101, gfx1102) and RDNA4 (gfx1200, gfx1201) in the amdgpu family.

Their matrix instructions are WMMAs in wave32, whose lane layouts differ by
generation (tilemlir/mma_layouts.py). Every kernel compiled here is also
executed in the SIMT emulator, whose own statement of the layouts
(tilemlir/runtime/wmma_layouts.py, from AMD's documents) checks the lowering's,
against the reference engine on the same inputs. The descriptors say "none"
where RDNA lacks a thing (accumulation registers, loads into LDS).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from kernel_text import EXAMPLES, softmax_kernel, whole_problem_gemm
from test_amd_acceptance import emulate_against_reference

import tilemlir
from tilemlir import mma_layouts
from tilemlir.runtime import run, wmma_layouts
from tilemlir.targets import get_target
from tilemlir.targets.model import NONE, TargetError

RDNA3, RDNA4 = ("gfx1100", "gfx1101", "gfx1102"), ("gfx1200", "gfx1201")


def compiled_isa(text: str, chip: str, **options) -> tuple[str, dict]:
    """The ISA and the report of a kernel compiled for `chip`, checked: wave32,
    no spills, no scratch."""
    result = tilemlir.compile(text, target=f"amdgpu:{chip}", emit="isa", options={"report": True, **options})
    for kernel in result.report["kernels"]:
        assert kernel["spills"] == 0 and kernel["scratch_bytes"] == 0, kernel
    assert ".amdhsa_wavefront_size32 1" in result.artifact
    return result.artifact, result.report


# -- the layouts ------------------------------------------------------------------


@pytest.mark.parametrize(("architecture", "chip"), [("RDNA3", "gfx1100"), ("RDNA4", "gfx1201")])
def test_the_lowering_and_the_emulator_state_the_same_layouts(architecture, chip):
    """Two statements of AMD's layouts, one per side: every (lane, element) of
    A, B and C/D names the same matrix element in both."""
    layout = mma_layouts.WmmaLayout(architecture)
    generation = wmma_layouts.GENERATIONS[chip]
    lane_in, item_in = wmma_layouts.input_layout(generation)
    lane_out, item_out = wmma_layouts.output_layout(generation)
    for lane in range(32):
        for i in range(layout.a_per_lane):
            row, k = layout.a_coord(lane, i)
            assert (lane_in[row, k] % 16, item_in[row, k]) == (lane % 16, i)
            if layout.replicated:
                assert lane_in[row, k] == lane % 16  # the emulator reads the lower half
            else:
                assert lane_in[row, k] == lane
            assert layout.b_coord(lane, i) == (k, row)
        for j in range(layout.c_per_lane):
            row, col = layout.c_coord(lane, j)
            assert (lane_out[row, col], item_out[row, col]) == (lane, j)


def test_rdna3_operands_must_be_replicated():
    instr = wmma_layouts.find_instruction("gfx1100", 16, 16, 16, "f16", "f16")
    a = np.arange(64 * 16, dtype=np.float16).reshape(64, 16)
    b = np.ones((64, 16), np.float16)
    assert wmma_layouts.unreplicated_wave(instr, a, b) == 0
    a[:, :] = np.tile(np.arange(16 * 16, dtype=np.float16).reshape(16, 16), (4, 1))
    assert wmma_layouts.unreplicated_wave(instr, a, b) is None
    b[40, 3] = 2  # wave 1, lane 8 of its upper half
    assert wmma_layouts.unreplicated_wave(instr, a, b) == 1
    assert wmma_layouts.unreplicated_wave(wmma_layouts.find_instruction("gfx1201", 16, 16, 16, "f16", "f16"),
                                          a[:, :8], b[:, :8]) is None


def test_a_wrong_layout_is_caught_by_the_emulator(monkeypatch):
    """The emulator is a check of the lowering: RDNA4 kernels lowered with
    RDNA3's accumulator rows (2j + lane half, not j + 8 x lane half) give
    wrong results, which the comparison with the reference engine finds."""
    monkeypatch.setitem(mma_layouts.WMMA_GENERATIONS, "RDNA4", (False, (2, 1)))
    with pytest.raises(AssertionError):
        emulate_against_reference(whole_problem_gemm(32, 32, 32, "f16", "f32"), "gfx1201")


# -- GEMMs ------------------------------------------------------------------------


@pytest.mark.parametrize(("chip", "dtype", "shape", "transpose_b"), [
    ("gfx1100", "f16", (72, 40, 56), False),
    ("gfx1100", "bf16", (100, 136, 72), True),
    ("gfx1102", "f16", (64, 200, 96), False),
    ("gfx1201", "f16", (72, 40, 56), True),
    ("gfx1200", "bf16", (64, 200, 96), False),
])
def test_half_precision_gemms_compile_to_wmma_and_run(chip, dtype, shape, transpose_b):
    text = whole_problem_gemm(*shape, dtype, "f16", transpose_b)
    isa, report = compiled_isa(text, chip)
    (kernel,) = report["kernels"]
    assert list(kernel["matrix_instructions"]) == [f"v_wmma_f32_16x16x16_{dtype}"]
    assert "v_mfma" not in isa and "a0" not in re.findall(r"\ba\d+\b", isa)
    emulate_against_reference(text, chip)


@pytest.mark.parametrize("fp8", ["f8E4M3FN", "f8E5M2"])
def test_ocp_fp8_gemm_on_rdna4(fp8):
    text = whole_problem_gemm(80, 48, 64, fp8, "f16")
    _, report = compiled_isa(text, "gfx1201")
    kind = "fp8" if fp8 == "f8E4M3FN" else "bf8"
    assert list(report["kernels"][0]["matrix_instructions"]) == [f"v_wmma_f32_16x16x16_{kind}_{kind}"]
    emulate_against_reference(text, "gfx1201")


def test_fp8_on_rdna3_is_computed_in_f16():
    """gfx11 has no fp8 WMMA: tile-legalize-precision widens fp8 to f16."""
    text = whole_problem_gemm(64, 64, 64, "f8E4M3FN", "f16")
    _, report = compiled_isa(text, "gfx1100")
    assert list(report["kernels"][0]["matrix_instructions"]) == ["v_wmma_f32_16x16x16_f16"]
    emulate_against_reference(text, "gfx1100")


@pytest.mark.parametrize("chip", ["gfx1101", "gfx1201"])
def test_int8_gemm(chip):
    text = whole_problem_gemm(64, 48, 64, "i8", "i32", accum="i32")
    _, report = compiled_isa(text, chip)
    assert list(report["kernels"][0]["matrix_instructions"]) == ["v_wmma_i32_16x16x16_iu8"]
    emulate_against_reference(text, chip)


def test_the_busy_ratio_counts_wmma_as_its_descriptor_cycles():
    """llvm-mca-22 models a WMMA as a one-cycle VALU op; the report holds the
    VALU for the descriptor's cycles (32 on gfx11) and the ratio stays a fraction."""
    _, report = compiled_isa(whole_problem_gemm(1024, 1024, 1024, "f16", "f16"), "gfx1100")
    (kernel,) = report["kernels"]
    own = kernel["amdgpu"]
    wmmas = kernel["matrix_instructions"]["v_wmma_f32_16x16x16_f16"]["main_loop"]
    assert own["main_loop_cycles"]["mfma"] == 32 * wmmas
    assert own["main_loop_cycles"]["llvm_mca"] >= 32 * wmmas
    assert 0.5 < own["mfma_busy_ratio"] <= 1, own
    # The same configuration, on fewer blocks, in the emulator.
    decision = report["decisions"][0]
    block = ",".join(str(decision["block"][axis]) for axis in "mnk")
    emulate_against_reference(whole_problem_gemm(256, 128, 96, "f16", "f16"), "gfx1100",
                              tiling=f"block={block} threads={decision['threads']} stages={decision['stages']}")


@pytest.mark.parametrize(("chip", "invalidate"), [("gfx1100", "buffer_gl0_inv"), ("gfx1201", "global_inv")])
def test_the_pipelined_loop_barrier_does_not_invalidate_the_vector_cache(chip, invalidate):
    """The stage barrier orders LDS only (amdgpu.lds_barrier): in WGP mode a
    workgroup acquire of global memory would invalidate the vector L0 cache
    every iteration; the loop keeps its barrier and loses the invalidate."""
    from tilemlir.backends.amdgpu.report import main_loop_instructions

    result = tilemlir.compile(whole_problem_gemm(256, 256, 256, "f16", "f16"), target=f"amdgpu:{chip}",
                              emit="isa")
    loop = [line.split()[0] for line in main_loop_instructions(result.artifact)]
    assert any(m.startswith("s_barrier") for m in loop) and invalidate not in loop, loop
    emulate_against_reference(whole_problem_gemm(256, 256, 256, "f16", "f16"), chip)


# -- the other operators ------------------------------------------------------------


@pytest.mark.parametrize("chip", ["gfx1100", "gfx1201"])
def test_flash_attention_takes_wmma(chip):
    """The example kernels compile and run on RDNA in test_general_kernels;
    here, that attention's two gemms are WMMAs in wave32."""
    isa, report = compiled_isa((EXAMPLES / "kernels" / "flash_attention.mlir").read_text(), chip)
    assert set(report["kernels"][0]["matrix_instructions"]) == {"v_wmma_f32_16x16x16_f16"}
    assert "v_mfma" not in isa


@pytest.mark.parametrize(("chip", "staged"), [("gfx1100", True), ("gfx1201", False)])
def test_attention_keeps_p_in_registers_on_rdna4(chip, staged):
    """With the waves split along M alone (two waves of 32 rows), RDNA4's
    transposed accumulator holds each lane's A elements of O += P V, so P
    stays in registers; RDNA3's replicated operands make it go through LDS."""
    from tilemlir.runtime.arguments import parameters, random_arguments
    from tilemlir.runtime.reference import Program

    text = (EXAMPLES / "kernels" / "flash_attention.mlir").read_text().replace("threads = 128 : i64",
                                                                              "threads = 64 : i64")
    result = tilemlir.compile(text, target=f"amdgpu:{chip}", emit="gpu")
    assert any("copied there first" in str(r.message) for r in result.remarks) == staged
    program = Program(tilemlir.runtime.load_module(text)[0])
    inputs = random_arguments(parameters(program.function("flash_attention").op, program.dtype_of), 1)
    reference, emulated = [x.copy() for x in inputs], [x.copy() for x in inputs]
    tilemlir.runtime.run(text, "flash_attention", reference)
    tilemlir.runtime.run(result.artifacts["gpu"], "flash_attention", emulated, engine="emulator",
                         target=f"amdgpu:{chip}")
    expected, got = (np.asarray(x[-1], np.float64) for x in (reference, emulated))
    assert np.abs(expected).max() > 0 and np.abs(got - expected).max() <= 2.0 ** -9 * np.abs(expected).max()


@pytest.mark.parametrize("chip", ["gfx1100", "gfx1201"])
def test_softmax_runs(chip):
    """Row reductions across the 32 lanes of a wave (no DPP row broadcasts on RDNA)."""
    m, n = 64, 200
    text = softmax_kernel(m, n, 16)
    compiled_isa(text, chip)
    x = np.random.default_rng(3).standard_normal((m, n)).astype(np.float32) * 3
    y = np.full((m, n), np.nan, np.float16)
    tilemlir.runtime.run(text, "softmax", [x, y], engine="emulator", target=f"amdgpu:{chip}")
    shifted = x.astype(np.float64) - x.max(axis=1, keepdims=True)
    ref = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    assert np.all(np.abs(y.astype(np.float64) - ref) <= 2.0**-10 * ref + 2.0**-20)


# -- the descriptors ---------------------------------------------------------------


@pytest.mark.parametrize("chip", RDNA3 + RDNA4)
def test_rdna_descriptors_say_what_the_chips_lack(chip):
    target = get_target(f"amdgpu:{chip}")
    assert target.compute.wave_size == 32 and target.segment == "client"
    assert target.registers.acc_vgprs_max is NONE and target.family_facts.acc_offset_granule is NONE
    assert target.family_facts.buffer_load_lds == () and target.memory.shared_transpose_reads == ()
    assert all(row.name.startswith("v_wmma_") for row in target.mma)
    assert bool(target.matrix.fp8_formats) == (chip in RDNA4)
    with pytest.raises(TargetError, match=r"has no 'registers.acc_vgprs_max' \(written as none"):
        target.require("registers.acc_vgprs_max")


# -- threads nobody chose ------------------------------------------------------------

FP8_GEMM = """
import tilemlir.language as T

@T.prim_func
def gemm(A: T.Tensor((256, 256), "float16"), B: T.Tensor((256, 256), "float16"),
         C: T.Tensor((256, 256), "float16")):
    with T.Kernel(2, 2{threads}) as (bx, by):
        A_shared = T.alloc_shared((128, 32), "float8_e4m3fn")
        B_shared = T.alloc_shared((32, 128), "float8_e4m3fn")
        C_local = T.alloc_fragment((128, 128), "float32")
        T.clear(C_local)
        for ko in T.Pipelined(8, num_stages=3):
            T.copy(A[by * 128, ko * 32], A_shared)
            T.copy(B[ko * 32, bx * 128], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[by * 128, bx * 128])
"""


def test_default_threads_that_spill_are_stepped_up(tmp_path):
    """TileLang's default 128 threads hold a 128x128 f32 fragment in twice
    the registers per lane on wave32 as on wave64, and RDNA3's WMMA operands
    are replicated: they spill, so the kernel is launched with more threads,
    with a warning, and still matches float64. threads=128 written out is
    the user's choice and stays an error."""
    import importlib.util

    import ml_dtypes

    import tilemlir as tl
    from tilemlir.diagnostics import UserError

    def load(threads: str):
        path = tmp_path / f"gemm_{len(threads)}.py"
        path.write_text(FP8_GEMM.replace("{threads}", threads))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.gemm

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((256, 256)).astype(np.float16) for _ in range(2))
    c = np.zeros((256, 256), np.float16)
    with pytest.warns(UserWarning, match=r"the default 128 threads \(no threads= given\) spill registers on "
                                         r"gfx1100 \(128 threads: .*; launched with \d+ threads, which do not"):
        compiled = tl.compile(load(""), target="amdgpu:gfx1100").compile(report=True)
    (kernel,) = compiled.report["kernels"]
    assert kernel["spills"] == 0 and kernel["threads"] > 128
    eight = [x.astype(ml_dtypes.float8_e4m3fn).astype(np.float64) for x in (a, b)]
    exact = eight[0] @ eight[1]
    # The stepped-up kernel (the ISA's GPU-level IR), and the program as written, in the emulator.
    assert re.search(r"known_block_size = array<i32: (\d+)", compiled.artifacts["gpu"]).group(1) == str(kernel["threads"])
    run(compiled.artifacts["gpu"], "gemm", [a, b, c], engine="emulator", target="amdgpu:gfx1100")
    assert np.abs(c.astype(np.float64) - exact).max() <= 2.0 ** -11 * np.abs(exact).max() + 64 * 2.0 ** -24 * 256
    c[:] = 0
    tl.compile(load(""), target="amdgpu:gfx1100", engine="emulator")(a, b, c)
    assert np.abs(c.astype(np.float64) - exact).max() <= 2.0 ** -11 * np.abs(exact).max() + 64 * 2.0 ** -24 * 256
    with pytest.raises(UserError, match="spills"):
        tl.compile(load(", threads=128"), target="amdgpu:gfx1100").get_isa()
