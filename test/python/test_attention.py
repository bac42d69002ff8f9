"""Flash attention forward (issue 18), written as TileLang's example_mha_fwd
writes it (attention_cases.py): every variant compiles for every family's
chips with no spills on AMD, and runs in the SIMT emulator (gfx90a, gfx942, gfx950,
MetaX) to match a float64 NumPy model within its dtype-derived bound; MetaX's
MACA C++ is also compiled by g++ against test/metax/maca_host.h and run on the
CPU against the same model. The H200 runs of the same variants are
bench/device_check.py's.
"""

from __future__ import annotations

import functools
import re

import maca_programs
import numpy as np
import pytest
from attention_cases import REGISTER_P, VARIANTS, Attention, inputs, kernel_text, model

import tilemlir
from tilemlir.runtime import run
from tilemlir.runtime.dtypes import convert

COMPILE_TARGETS = ("amdgpu:gfx90a", "amdgpu:gfx942", "amdgpu:gfx950", "metax:xcore1000", "nvidia:sm_90a")
EMULATED_TARGETS = ("amdgpu:gfx90a", "amdgpu:gfx942", "amdgpu:gfx950", "metax:xcore1000")
IDS = [variant.name for variant in VARIANTS]


@functools.cache
def compiled(kernel: Attention, target: str) -> tilemlir.compiler.CompileResult:
    """One compile per kernel and target, shared by the tests below (make test
    keeps this module on one worker: conftest.xdist_scope): its report and
    remarks, the GPU-level IR the emulator runs, MetaX's MACA C++."""
    return tilemlir.compile(kernel_text(kernel), target=target, remarks="all")


@functools.cache
def emulated(kernel: Attention, target: str) -> np.ndarray:
    """O, in float64, from running `kernel` in the emulator on its inputs."""
    args = inputs(kernel)
    run(compiled(kernel, target).artifacts["gpu"], kernel.name, args, engine="emulator", target=target)
    return convert(args[3], np.float64)


@pytest.mark.parametrize("target", COMPILE_TARGETS)
@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_compiles_without_spills(variant, target):
    compiled_kernel = compiled(variant, target)
    if target.startswith("amdgpu"):
        (kernel,) = compiled_kernel.report["kernels"]
        assert kernel["spills"] == 0 and kernel["scratch_bytes"] == 0, kernel
    # P reaches the second gemm from registers where the family reads them as its
    # A (AMD's MFMAs, NVIDIA's mma.sync), else through shared memory; the
    # compiler says which. Both read P from registers when the waves split
    # along M only with 32 rows each or more (select_mma.MIN_WAVE_ROWS: two
    # 16-row tiles, or one 32-row MFMA): 4 warps of 32 lanes, or 2 waves of 64,
    # need a 128- or 64-row block.
    # On sm_90a both gemms run on wgmma where the loop is prefetched (2 stages),
    # every warpgroup of 4 warps owns 64 rows or a multiple (m64 bands), and
    # Q, K and V rows are 128-byte multiples (backends/nvidia/wgmma_threads.py):
    # P is then wgmma's A from registers.
    wave = 32 if target.startswith("nvidia") else 64
    groups = variant.threads // 128
    wgmma = (target == "nvidia:sm_90a" and variant.stages >= 2 and variant.threads % 128 == 0
             and variant.block_m % (64 * groups) == 0 and variant.dim * 2 % 128 == 0)
    in_registers = wgmma or (not target.startswith("metax") and variant.block_m // (variant.threads // wave) >= 32)
    said = "stays in registers" if in_registers else "is held in registers"
    instruction = "wgmma.mma_async" if wgmma else ""
    assert any(f"tile-stage-operands: gemm operand A {said}" in r.message and instruction in r.message
               for r in compiled_kernel.remarks), [r.message for r in compiled_kernel.remarks]


def emulated_error(kernel: Attention, target: str, modelled: Attention | None = None):
    """(|error|, bound) of `kernel` run in the emulator against the float64
    model of `modelled` (default: the kernel's own) on the same inputs."""
    modelled = modelled or kernel
    if modelled != kernel:  # the emulator ran `kernel` on its own inputs
        assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(inputs(kernel), inputs(modelled)))
    expected, bound = model(modelled, inputs(modelled))[3]
    return np.abs(emulated(kernel, target) - expected), bound


@pytest.mark.parametrize("target", EMULATED_TARGETS)
@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_emulated_matches_float64(variant, target):
    error, bound = emulated_error(variant, target)
    assert np.all(error <= bound), f"worst error/bound {(error / bound).max():.3f}"


def test_the_model_catches_a_wrong_mask():
    """A test that cannot fail is a defect: the non-causal kernel's output is
    far outside the causal model's bound."""
    error, bound = emulated_error(VARIANTS[0], "amdgpu:gfx942", modelled=VARIANTS[1])
    assert not np.all(error <= bound)


# fp8 Q, K, V (and P) where the chip's matrix unit reads fp8: FNUZ on gfx942,
# OCP on gfx950; MetaX's C500 computes them exactly in f16 (its fp8 support is
# not publicly known). Softmax stays in f32, O is written in f16.
FP8 = {"amdgpu:gfx942": "f8E4M3FNUZ", "amdgpu:gfx950": "f8E4M3FN", "metax:xcore1000": "f8E4M3FN"}


@pytest.mark.parametrize("target", sorted(FP8))
def test_fp8_attention_matches_float64(target):
    error, bound = emulated_error(Attention(dtype=FP8[target], causal=True), target)
    assert np.all(error <= bound), f"worst error/bound {(error / bound).max():.3f}"


# The C++ runs each block's 256 threads as std::threads: the grouped-query
# variant at a quarter of VARIANTS' size (one batch, 2 query heads on 1) keeps
# its head size, threads and stage, and the suite's time.
MACA_KERNELS = VARIANTS[:4] + (Attention(batch=1, heads=2, kv_heads=1, seq=128, dim=128, threads=256, stages=1),
                               Attention(dtype=FP8["metax:xcore1000"], causal=True))


@pytest.fixture(scope="module")
def maca_program(tmp_path_factory):
    """MACA_KERNELS as MetaX compiles them to MACA C++, built into one CPU
    program (maca_programs.build: g++ against test/metax/maca_host.h)."""
    sources = {kernel.name: compiled(kernel, "metax:xcore1000").artifacts["maca"] for kernel in MACA_KERNELS}
    # -O0: g++ builds the six in 5 s instead of 14 at -O1, and runs them in 6 s instead of 3.
    return maca_programs.build(sources, tmp_path_factory.mktemp("attention_maca"), ("-O0",))


@pytest.mark.parametrize("kernel", MACA_KERNELS, ids=[kernel.name for kernel in MACA_KERNELS])
def test_maca_cpp_on_the_cpu_matches_float64(kernel, maca_program, tmp_path):
    """The C++ as printed (K and V tiles stored as the 16x16 MMAs read them,
    64-bit operand loads, 32-bit index arithmetic), not only the GPU-level IR
    the emulator runs, computes attention within the model's bound."""
    args = inputs(kernel)
    expected, bound = model(kernel, [np.copy(a) for a in args])[3]
    maca_programs.run(maca_program, kernel.name, args, tmp_path)
    error = np.abs(convert(args[3], np.float64) - expected)
    assert np.all(error <= bound), f"worst error/bound {(error / bound).max():.3f}"


def test_fp8_p_on_nvidia_is_refused_at_its_copy():
    """NVIDIA's code generator encodes no fp8 in a kernel yet: the cast of P
    into an fp8 fragment is a located error, not an LLVM translation failure."""
    with pytest.raises(tilemlir.compiler.CompileError,
                       match=r"<input>:\d+:\d+: error: tile-lower-to-gpu: converting to f8E4M3FN is not supported"):
        tilemlir.compile(kernel_text(Attention(dtype="f8E4M3FN")), target="nvidia:sm_90a")


MMA_SYNC = {"select": "prefer=mma.sync"}  # tile-select-mma's option: the warp-level path


def test_p_from_registers_on_nvidia():
    """With 4 warps of 32 rows, mma.sync reads P from the registers the first
    gemm left it in: no shared buffer for it, both gemms split along M only
    (checked on the H200 by bench/device_check.py)."""
    compiled = tilemlir.compile(kernel_text(REGISTER_P), target="nvidia:sm_90a", emit="tile", remarks="all",
                                options=MMA_SYNC)
    said = [r.message for r in compiled.remarks]
    assert any("gemm operand A stays in registers" in m for m in said), said
    tile_ir = str(compiled.artifacts["tile"])
    # Both gemms of both loops (tile-split-loops: the causal loop's blocks
    # before the diagonal run in a copy without the mask).
    assert tile_ir.count('"tile.gemm"') == 4
    assert tile_ir.count("tile.warp_grid = array<i64: 4, 1>") == 4
    # Q's 128x64 shared tile only: no second one for P (its staging buffer).
    assert tile_ir.count('"tile.alloc_shared"() : () -> memref<128x64xf16') == 1
    ptx = tilemlir.compile(kernel_text(REGISTER_P), target="nvidia:sm_90a", options=MMA_SYNC).artifacts["ptx"]
    assert ptx.count("mma.sync") > 0 and "wgmma" not in ptx


def test_wgmma_attention_on_sm_90a():
    """By default on sm_90a both gemms of the prefetched K/V loop run on
    wgmma (backends/nvidia/wgmma_threads.py): Q, K and V stored as
    128-byte-swizzled boxes by the threads' vector stores and cp.async, fenced
    for the async proxy before each barrier that publishes them; S by
    descriptors (K-major K), O += P V with P from four registers a thread and
    V by an MN-major descriptor (imm-trans-b 1); each gemm waits for its
    wgmmas before the softmax or the rescale reads its accumulator. A 64-row
    block of 4 warps is one m64 band: d 64, 64 keys, so S takes four
    m64n64k16 a loop and P x V four m64n64k16 with A from registers. (Checked
    on the H200 by bench/device_check.py; timed by bench/attention.py.)"""
    kernel = Attention()
    compiled = tilemlir.compile(kernel_text(kernel), target="nvidia:sm_90a", remarks="all")
    ptx = compiled.artifacts["ptx"]
    assert "mma.sync" not in ptx and "ldmatrix" not in ptx
    register_a = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16 \{[^}]*\}, "
                            r"\{(%r\d+, %r\d+, %r\d+, %r\d+)\}, %rd\d+, p, 1, 1, 1;", ptx)
    assert len(register_a) == 4
    assert ptx.count("wgmma.mma_async") == 8
    # One wgmma group a gemm, waited for at once.
    assert re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", ptx) == ["0", "0"]
    # Q's stores, then K's and V's landings: each fenced, then published.
    assert len(re.findall(r"fence\.proxy\.async\.shared::cta;\s*bar\.sync", ptx)) == 3
    assert re.findall(r"cp\.async\.wait_group\s+(\d+)", ptx) == ["0"] * 3
    said = [r.message for r in compiled.remarks]
    assert any("gemm operand A stays in registers" in m and "wgmma.mma_async" in m for m in said), said
    # A warpgroup's band holds whole rows, so rows split alone take wgmma,
    # where it is preferred only (as unpreferred, a group-level row is the
    # last resort of tile-select-mma).
    from tilemlir.cost.model import GemmShape
    from tilemlir.passes.select_mma import select_mma_for
    from tilemlir.targets import get_target

    h200, scores = get_target("nvidia:sm_90a"), GemmShape(64, 64, 64, "f16", "f16", "f32", "f32")
    choice, split = select_mma_for(h200, scores, 128, prefer="wgmma", rows_only=True)
    assert (choice.name, split) == ("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", (4, 1))
    unpreferred = select_mma_for(h200, scores, 128, rows_only=True)
    assert isinstance(unpreferred, list) and any("taken for gemms chained" in r for r in unpreferred)
    # Preferring mma.sync gives the warp-level kernel back.
    warp_level = tilemlir.compile(kernel_text(kernel), target="nvidia:sm_90a", options=MMA_SYNC)
    assert "wgmma" not in warp_level.artifacts["ptx"]


@pytest.mark.parametrize("target,instruction", [("amdgpu:gfx942", "v_mfma_f32_32x32x8_f16"),
                                                ("amdgpu:gfx950", "v_mfma_f32_32x32x16_f16")])
def test_p_from_registers_on_amd_32x32(target, instruction):
    """Two waves of 64 rows take 32x32 MFMAs, whose P registers the next
    MFMA reads as they are (gfx942) or with K permuted in A and B alike
    (gfx950: two runs of four per lane); the variants above cover the 16x16
    ones. The output matches float64 in the emulator."""
    compiled_kernel = compiled(REGISTER_P, target)
    said = [r.message for r in compiled_kernel.remarks]
    assert any("gemm operand A stays in registers: it is the accumulator of the gemm at" in m
               and instruction in m for m in said), said
    error, bound = emulated_error(REGISTER_P, target)
    assert np.all(error <= bound), f"worst error/bound {(error / bound).max():.3f}"


def test_wgmma_attention_where_loops_share_fragments_or_a_gemm_branches():
    """Two K/V loops writing the same S, P and O fragments both run on wgmma
    (each loop's P is the copy of its own S, whichever gemm
    register_a_source names; the gemms' preferences are all taken before
    any choice is recorded); a gemm inside a branch of the loop keeps the
    loop on mma.sync. Both compile (a second reader's kernels)."""
    tile_type = "memref<64x64xf16, #gpu.address_space<workgroup>>"
    acc_type = "memref<64x64xf32, #gpu.address_space<private>>"
    base = kernel_text(Attention())
    start = base.index("    scf.for %kb")
    end = base.index("} {tile.num_stages = 2 : i64}\n") + len("} {tile.num_stages = 2 : i64}\n")
    second = base[start:end].replace("%k_s", "%k2_s").replace("%v_s", "%v2_s").replace("%kb", "%kb2")
    two = (base[:end] + second + base[end:]).replace(
        '    %acc_s = "tile.alloc_fragment"',
        f'    %k2_s = "tile.alloc_shared"() : () -> {tile_type}\n'
        f'    %v2_s = "tile.alloc_shared"() : () -> {tile_type}\n    %acc_s = "tile.alloc_fragment"', 1)
    ptx = tilemlir.compile(two, target="nvidia:sm_90a").artifacts["ptx"]
    assert ptx.count("wgmma.mma_async") == 16 and "mma.sync" not in ptx
    gemm = (f'"tile.gemm"(%q_s, %q_s, %acc_x) {{accum_dtype = f32, transpose_a = false, transpose_b = true}} : '
            f'({tile_type}, {tile_type}, {acc_type}) -> ()')
    branch = base.replace(
        '      "tile.fill"(%acc_s, %zero)',
        f'      %acc_x = "tile.alloc_fragment"() : () -> {acc_type}\n'
        '      %first = arith.cmpi eq, %kb, %c0 : index\n'
        f'      scf.if %first {{\n        "tile.fill"(%acc_x, %zero) : ({acc_type}, f32) -> ()\n        {gemm}\n      }}\n'
        '      "tile.fill"(%acc_s, %zero)', 1)
    ptx = tilemlir.compile(branch, target="nvidia:sm_90a").artifacts["ptx"]
    assert "mma.sync" in ptx and "wgmma" not in ptx


def test_nvidia_prefetches_k_and_v_one_place_ahead():
    """On NVIDIA the K/V loop (num_stages = 2) issues V's cp.async at K's place
    and the next K's at V's, in the kernel's own buffers: a wait for all
    groups at each place and one after the loop, and no remark saying it runs
    without prefetch; the causal kernel's two loops (tile-split-loops) each do
    so in the same buffers, their prologues only where they run. With num_stages = 1 nothing is asynchronous.
    (Checked on the H200 by bench/device_check.py; timed by bench/attention.py.)"""
    compiled = tilemlir.compile(kernel_text(REGISTER_P), target="nvidia:sm_90a", options=MMA_SYNC)
    ptx = compiled.artifacts["ptx"]
    assert re.findall(r"cp\.async\.wait_group\s+(\d+)", ptx) == ["0"] * 6
    # Per loop: prologue K (an empty group where the loop runs no iteration), V, next K.
    assert ptx.count("cp.async.commit_group") == 2 * 4
    assert ptx.count("cp.async.cg.shared.global") == 2 * 3 * 4  # 4 chunks a thread each
    assert not any("without prefetch" in r.message for r in compiled.remarks)
    unpipelined = tilemlir.compile(kernel_text(Attention(stages=1)), target="nvidia:sm_90a")
    assert "cp.async" not in unpipelined.artifacts["ptx"]


def test_nvidia_says_when_a_staged_loop_is_not_prefetched():
    from tilelang_style.kernels import copies_then_gemm_then_epilogue

    compiled = copies_then_gemm_then_epilogue().compile("ptx")
    said = [r.message for r in compiled.remarks]
    assert any("this loop (num_stages = 2) runs without prefetch on NVIDIA" in m for m in said), said
    assert "cp.async" not in compiled.artifacts["ptx"]


def test_waves_splitting_m_own_32_rows_or_more():
    """select_mma_for(rows_only=True): a wave's rows are whole instruction
    tiles, at least MIN_WAVE_ROWS (32) of them: one 32x32 MFMA (gfx942, 4 waves
    of a 128-row block, its first choice) or two 16-row tiles; 16 rows a wave
    (4 waves of 64 rows) fit none. Two gemms chained through registers take
    the same M: at head size 80 (P x V fits no 32x32 MFMA) both take 16x16,
    and P stays in registers."""
    from tilemlir.cost.model import GemmShape
    from tilemlir.passes.select_mma import MIN_WAVE_ROWS, select_mma_for
    from tilemlir.targets import get_target

    assert MIN_WAVE_ROWS == 32
    gfx942 = get_target("amdgpu:gfx942")
    scores = GemmShape(128, 64, 128, "f16", "f16", "f32", "f32")
    choice, split = select_mma_for(gfx942, scores, 256, rows_only=True)
    assert (choice.name, split) == ("v_mfma_f32_32x32x8_f16", (4, 1))
    choice, split = select_mma_for(gfx942, scores, 256, prefer="v_mfma_f32_16x16x16", rows_only=True)
    assert (choice.name, split) == ("v_mfma_f32_16x16x16_f16", (4, 1))
    reasons = select_mma_for(gfx942, GemmShape(64, 64, 128, "f16", "f16", "f32", "f32"), 256, rows_only=True)
    assert isinstance(reasons, list) and all("fewer than 32 rows each" in r for r in reasons if "lane layout" not in r)
    sm90 = get_target("nvidia:sm_90a")
    choice, split = select_mma_for(sm90, GemmShape(192, 64, 64, "f16", "f16", "f32", "f32"), 128, rows_only=True)
    assert choice.m == 16 and split == (4, 1)  # 48 rows a warp: three 16-row tiles
    head80 = Attention(seq=256, dim=80, block_m=128, threads=256)
    compiled_kernel = tilemlir.compile(kernel_text(head80), target="amdgpu:gfx942", emit="isa",
                                       options={"report": True}, remarks="all")
    assert list(compiled_kernel.report["kernels"][0]["matrix_instructions"]) == ["v_mfma_f32_16x16x16_f16"]
    assert any("gemm operand A stays in registers" in r.message for r in compiled_kernel.remarks)
    error, bound = emulated_error(head80, "amdgpu:gfx942")
    assert np.all(error <= bound), f"worst error/bound {(error / bound).max():.3f}"


@pytest.mark.parametrize("target", ["amdgpu:gfx942", "amdgpu:gfx90a"])
def test_rows_xor_swizzled_where_their_padding_does_not_fit(target):
    """d 128 in 128x64 blocks of four waves: Q, K and V padded do not fit the
    64 KiB of LDS in one stage, unpadded they do; their rows are then
    XOR-swizzled (tile-infer-layout's fit_padding; the MFMAs' vector reads
    take the swizzled columns, MfmaCore.reads_swizzled_rows): S = Q K^T reads
    Q and K 16 bytes (two K steps) at a time, conflict-free in swizzled rows;
    O += P V reads V's rows 8 bytes at a time (P in registers keeps its
    order), 128 clocks per iteration; and the kernel still matches float64."""
    kernel = Attention(seq=256, dim=128, dtype="bf16", block_m=128, block_n=64, threads=256, stages=2)
    compiled_kernel = compiled(kernel, target)
    swizzled = [r.message for r in compiled_kernel.remarks if "XOR-swizzled instead" in r.message]
    assert len(swizzled) == 3, [r.message for r in compiled_kernel.remarks]
    (decision,) = compiled_kernel.report["decisions"]
    assert decision["lds_bank_conflicts_per_iteration"] == 128
    # Two K steps a read in S = Q K^T only (tile.operand_read_steps).
    assert compiled_kernel.artifacts["tile"].count("tile.operand_read_steps = 2") == 1
    error, bound = emulated_error(kernel, target)
    assert np.all(error <= bound), f"worst error/bound {(error / bound).max():.3f}"


def test_padding_gives_way_to_a_second_workgroup():
    """d 64 in 128x64 blocks of four waves, one stage, on gfx942: padded, Q,
    K and V take 34816 bytes, one workgroup of the CU's 65536; swizzled
    instead (a few conflict clocks where the unpadded rows cost fifteen
    times more: tile-infer-layout's more_workgroups_unpadded), 32768, two
    workgroups, two waves per SIMD. A remark says so, and the kernel still
    matches float64."""
    kernel = Attention(seq=256, dim=64, block_m=128, block_n=64, threads=256, stages=1)
    compiled_kernel = tilemlir.compile(kernel_text(kernel), target="amdgpu:gfx942", emit="isa",
                                       options={"report": True}, remarks="all")
    (report,) = compiled_kernel.report["kernels"]
    assert report["shared_bytes"] == 32768 and report["occupancy"] == 2 and report["spills"] == 0
    said = [r.message for r in compiled_kernel.remarks if "dropped" in r.message]
    assert len(said) == 3 and all("to fit 2 workgroups (2 waves per SIMD) into a CU's 65536 bytes of LDS, where "
                                  "1 fit with padding (34816 bytes each, 1 wave per SIMD)" in m for m in said), said
    error, bound = emulated_error(kernel, "amdgpu:gfx942")
    assert np.all(error <= bound), f"worst error/bound {(error / bound).max():.3f}"


@pytest.mark.parametrize("chip,dtype,causal", [("gfx942", "f16", False), ("gfx942", "bf16", True),
                                               ("gfx950", "f16", True)])
def test_eight_waves_of_256_rows_share_the_simds(chip, dtype, causal):
    """d 64 in 256x64 blocks of eight waves, one stage (the best tiling of
    bench/amd_attention_vs_triton.py at d 64 on gfx942): two waves a SIMD,
    each with its 256 registers as architected ones ("amdgpu-agpr-alloc"="0"),
    no spills, and the kernel matches float64."""
    kernel = Attention(seq=512, dim=64, dtype=dtype, causal=causal, block_m=256, block_n=64, threads=512, stages=1)
    compiled_kernel = tilemlir.compile(kernel_text(kernel), target=f"amdgpu:{chip}", emit="isa",
                                       options={"report": True})
    (report,) = compiled_kernel.report["kernels"]
    assert report["spills"] == 0 and report["amdgpu"]["agpr"] == 0 and report["occupancy"] >= 2
    error, bound = emulated_error(kernel, f"amdgpu:{chip}")
    assert np.all(error <= bound), f"worst error/bound {(error / bound).max():.3f}"


def test_a_prefetch_that_spills_steps_down_on_rdna():
    """The Python example as written (64x64 blocks, 2 stages, 128 threads,
    d 128) spills on RDNA3 when tile-pipeline prefetches K and V through
    registers; tile-compile compiles it again without the prefetch, says so
    in a remark at the loop, and the kernel matches float64 in the emulator."""
    import sys

    from kernel_text import EXAMPLES

    sys.path.insert(0, str(EXAMPLES / "python"))
    import flash_attention as example

    rng = np.random.default_rng(0)
    q, k, v = (rng.uniform(-1, 1, (1, 64, 1, 128)).astype(np.float16) for _ in range(3))
    example.flashattn.target = "amdgpu:gfx1100"
    example.flashattn._cache.clear()
    try:
        compiled_kernel = example.flashattn(1, 1, 64, 128, True)
        remarks = [r.message for r in compiled_kernel.compile().remarks]
        assert any("prefetching this loop's copies (tile-pipeline) spills registers on gfx1100" in m
                   for m in remarks), remarks
        out = compiled_kernel(q, k, v)
    finally:
        example.flashattn.target = None
        example.flashattn._cache.clear()
    error = np.abs(out.astype(np.float64) - example.reference(q, k, v, True)).max()
    assert error < 2e-2, error
