"""The AMD path's acceptance list (issue 5), each kernel also executed (issue 6).

Every GEMM is compiled to real gfx90a/gfx942/gfx950 ISA by the whole pipeline
and must have no scratch and no spills, LDS within the chip's limit, and
exactly block_M * block_N * block_K / (m * n * k) matrix instructions per
main-loop iteration of a workgroup (the ISA is one wave's program, so the
count there times the waves). The same kernels, at sizes that keep the suite
fast, run in the SIMT emulator and must match the reference engine on the
same inputs within the tolerance of their output type.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from kernel_text import EXAMPLES, seed_kernel, whole_problem_gemm

import tilemlir
from tilemlir.runtime import run
from tilemlir.runtime.arguments import parameters, random_arguments
from tilemlir.runtime.dtypes import convert
from tilemlir.runtime.reference import Program
from tilemlir.targets import get_target

CHIPS = ("gfx90a", "gfx942", "gfx950")


def whole_problem(size: int) -> str:
    return (EXAMPLES / "gemm_whole_problem.mlir").read_text().replace("1024", str(size))


def tile_facts(tile_ir: str) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """(instruction m, n, k), (block M, N, K) and threads of the single kernel."""
    instruction = tuple(int(x) for x in re.search(r"shape = array<i64: (\d+), (\d+), (\d+), 1>",
                                                   tile_ir).groups())
    acc = re.search(r'"tile.alloc_fragment"\(\).*-> memref<(\d+)x(\d+)x', tile_ir)
    block_m, block_n = int(acc.group(1)), int(acc.group(2))
    a_shape = re.search(r'"tile.gemm"[^\n]*: \(memref<(\d+)x(\d+)x', tile_ir)
    transpose_a = "transpose_a = true" in re.search(r'"tile.gemm"[^\n]*', tile_ir).group(0)
    block_k = int(a_shape.group(1) if transpose_a else a_shape.group(2))
    threads = int(re.search(r"threads = (\d+) : i64", tile_ir).group(1))
    return instruction, (block_m, block_n, block_k), threads


def check_compiled(text: str, chip: str) -> dict:
    """The compiled kernel's report entry (docs/report.md), checked."""
    target = get_target(f"amdgpu:{chip}")
    result = tilemlir.compile(text, target=target, emit="hsaco", options={"report": True})
    (kernel,) = result.report["kernels"]
    assert kernel["scratch_bytes"] == 0 and kernel["spills"] == 0, kernel
    assert 0 < kernel["shared_bytes"] <= target.memory.shared_bytes_per_workgroup
    (m, n, k), (bm, bn, bk), threads = tile_facts(result.artifacts["tile"])
    waves = threads // target.compute.wave_size
    per_wave = sum(entry["main_loop"] for entry in kernel["matrix_instructions"].values())
    if not per_wave:  # one K step (a split-K slice of one block): no loop, the kernel's MFMAs are one step's
        per_wave = sum(entry["total"] for entry in kernel["matrix_instructions"].values())
    assert per_wave * waves == bm * bn * bk // (m * n * k), (kernel["matrix_instructions"], (bm, bn, bk))
    assert result.artifacts["hsaco"][:4] == b"\x7fELF"
    return kernel


def in_chip_fp8(text: str, chip: str) -> str:
    """The seed's FNUZ fp8 re-typed as the fp8 a chip's MFMAs read: OCP on
    gfx950, where FNUZ has no exact conversion (tile-legalize-precision refuses it)."""
    return text.replace("f8E4M3FNUZ", "f8E4M3FN") if chip == "gfx950" else text


def emulate_against_reference(text: str, chip: str, seed: int = 0, tiling: str = "",
                              passes: str = "") -> None:
    """The emulator on the compiled kernel against the reference engine on the
    tile IR the kernel was lowered from (after tile-legalize-precision, whose
    explicit casts, e.g. fp8 -> f16 on gfx90a, are part of its meaning;
    the tile passes themselves are checked by translation validation).
    `tiling`: tile-tiling's options for a whole-problem GEMM; `passes`: other
    tile passes' options (tile-compile --pass-options)."""
    target = f"amdgpu:{chip}"
    compiled = tilemlir.compile(text, target=target, emit="gpu",
                                options={"tiling": tiling, "passes": passes})
    entry = "gemm" if "@gemm" in text else "mixed_precision_gemm"
    program = Program(tilemlir.runtime.load_module(text)[0])
    inputs = random_arguments(parameters(program.function(entry).op, program.dtype_of), seed)
    reference = [x.copy() for x in inputs]
    emulated = [x.copy() for x in inputs]
    run(compiled.artifacts["tile"], entry, reference)
    run(compiled.artifacts["gpu"], entry, emulated, engine="emulator", target=target)
    out_ref = convert(reference[-1], np.float64)
    out_emu = convert(emulated[-1], np.float64)
    # Same inputs and output rounding; the accumulation order differs (the
    # emulator sums one instruction's K at once), so allow one output ulp plus
    # an f32 accumulation bound K * 2^-23 * sum |a||b|.
    k = inputs[0].shape[1]
    ulp = np.spacing(np.abs(out_ref).astype(reference[-1].dtype)).astype(np.float64)
    sum_ab = np.abs(convert(inputs[0], np.float64)).max() * np.abs(convert(inputs[1], np.float64)).max() * k
    bound = ulp + k * 2.0 ** -23 * sum_ab
    assert np.all(np.abs(out_emu - out_ref) <= bound), float(np.abs(out_emu - out_ref).max())
    assert np.abs(out_ref).max() > 0


# -- compiled to ISA -----------------------------------------------------------

@pytest.mark.parametrize("chip", ["gfx942", "gfx950"])
@pytest.mark.parametrize("form", ["kernel", "whole-problem"])
def test_seed_fp8_gemm_compiles(chip, form):
    text = (EXAMPLES / ("seed_fp8_gemm.mlir" if form == "kernel" else "gemm_whole_problem.mlir")).read_text()
    kernel = check_compiled(in_chip_fp8(text, chip), chip)
    names = list(kernel["matrix_instructions"])
    if chip == "gfx942":  # FNUZ fp8 MFMAs
        assert all("fp8_fp8" in name for name in names), names
    else:  # OCP fp8 (the same mnemonics take OCP on gfx950) or f8f6f4
        assert all("fp8_fp8" in name or "f8f6f4" in name for name in names), names


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("shape", [(1024, 1024, 1024), (1000, 1000, 1000), (64, 200, 96)])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_half_precision_gemm_compiles(chip, dtype, shape, transpose_b):
    kernel = check_compiled(whole_problem_gemm(*shape, dtype, "f32", transpose_b), chip)
    if chip == "gfx950":  # the full-rate doubled-K instructions, not the inherited half-rate ones
        assert all(re.search(r"16x16x32|32x32x16", name) for name in kernel["matrix_instructions"])


# -- executed in the emulator ----------------------------------------------------

@pytest.mark.parametrize("chip", ["gfx942", "gfx950"])
def test_seed_kernel_form_runs(chip):
    emulate_against_reference(in_chip_fp8(seed_kernel(256), chip), chip)


def test_fnuz_fp8_on_gfx950_computes_exactly_in_f16():
    # The way around FNUZ on an OCP chip that tile-legalize-precision names:
    # f16 MFMAs fed by converting copies into the swizzled transpose-read rows
    # (whose 16-byte pieces once left a vector.extract_strided_slice for ROCDL).
    passes = "tile-legalize-precision{fp8-fallback=f16}"
    text = seed_kernel(256)
    report = tilemlir.compile(text, target="amdgpu:gfx950", emit="isa",
                              options={"report": True, "passes": passes}).report
    (kernel,) = report["kernels"]
    assert kernel["spills"] == 0
    assert all("f16" in name for name in kernel["matrix_instructions"]), kernel["matrix_instructions"]
    emulate_against_reference(text, "gfx950", passes=passes)


@pytest.mark.parametrize("chip", ["gfx942", "gfx950", "gfx90a"])
@pytest.mark.parametrize("size", [128, 100])
def test_seed_whole_problem_form_runs(chip, size):
    emulate_against_reference(in_chip_fp8(whole_problem(size), chip), chip)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("shape,transpose_b", [((64, 200, 96), False), ((100, 136, 72), True)])
def test_half_precision_gemm_runs(chip, dtype, shape, transpose_b):
    emulate_against_reference(whole_problem_gemm(*shape, dtype, "f16", transpose_b), chip)


def test_accumulating_gemm_runs():
    """Without a zero fill, C += A*B reads C's old values through the fragment."""
    emulate_against_reference(whole_problem_gemm(64, 96, 64, "f16", "f32", zero_fill=False), "gfx942")


def test_pipeline_deeper_than_the_loop_stays_in_bounds():
    # 4 stages over a 2-iteration K loop: the prologue's iterations 2 and 3 do
    # not exist; with in-bounds copies they must re-read the last tile, not
    # read past the end of A and B (the sanitizer checks every access).
    emulate_against_reference(whole_problem_gemm(64, 64, 128, "f16", "f16"), "gfx942",
                              tiling="block=64,64,64 threads=256 stages=4")


def test_the_kernels_multiplies_fuse_into_their_adds_on_amd(monkeypatch):
    """docs/kernels.md: AMD's kernels may contract a multiply and the add that
    uses its product into one FMA (amdgpu-contract-float-ops): the flash
    attention example's scaled scores minus the row max become v_fma, and
    layernorm's normalisation too; the steps llc writes for exp keep their
    own roundings (a global -fp-contract=fast fused those as well, and exp
    lost its accuracy): the softmax example, whose own ops hold no product
    feeding an add, compiles to the same FMAs either way."""
    import tilemlir.backends.amdgpu.contract_float_ops as contract

    def fmas(name: str) -> int:
        text = (EXAMPLES / "kernels" / f"{name}.mlir").read_text()
        isa = tilemlir.compile(text, target="amdgpu:gfx942", emit="isa").artifact
        # elements fused: a packed FMA (amdgpu-pack-float-ops) fuses two
        return len(re.findall(r"v_fmac?_f32", isa)) + 2 * len(re.findall(r"v_pk_fma_f32", isa))

    fused = {name: fmas(name) for name in ("flash_attention", "layernorm", "softmax")}
    monkeypatch.setattr(contract, "contract_float_ops", lambda module: 0)
    separate = {name: fmas(name) for name in fused}
    assert fused["flash_attention"] >= separate["flash_attention"] + 32
    assert fused["layernorm"] > separate["layernorm"]
    assert fused["softmax"] == separate["softmax"]


def test_element_wise_math_over_fragments_is_packed_on_cdna(monkeypatch):
    """amdgpu-pack-float-ops: flash attention's rescale of O and its scores'
    scale-then-subtract run as packed f32 instructions where the chip has
    them (gfx90a, gfx942, gfx950: half as many instructions for the same
    elements); RDNA3 has none, and llc splits the vector ops back into the
    scalar ones. GEMMs, which hold no element-wise float math in their loop,
    compile to the same ISA either way."""
    import tilemlir.backends.amdgpu.pack_float_ops as pack

    def isa(name: str, chip: str) -> str:
        text = (EXAMPLES / "kernels" / f"{name}.mlir").read_text()
        return tilemlir.compile(text, target=f"amdgpu:{chip}", emit="isa").artifact

    def scalar_and_packed(text: str) -> tuple[int, int]:
        scalar = len(re.findall(r"\bv_(?:mul|fmac?|add|sub)_f32", text))
        return scalar, len(re.findall(r"\bv_pk_(?:mul|fma|add)_f32", text))

    packed = {chip: isa("flash_attention", chip) for chip in ("gfx90a", "gfx942", "gfx950", "gfx1100")}
    gemm = isa("batched_gemm", "gfx942")
    monkeypatch.setattr(pack, "pack_float_ops", lambda module: 0)
    for chip in ("gfx90a", "gfx942", "gfx950"):
        scalar, pairs = scalar_and_packed(packed[chip])
        # (The in-thread sums of tile.reduce are vector adds from the start.)
        before, before_pairs = scalar_and_packed(isa("flash_attention", chip))
        assert pairs >= before_pairs + 24 and scalar + pairs <= before + before_pairs - 24, chip
    assert scalar_and_packed(packed["gfx1100"])[1] == 0
    assert isa("batched_gemm", "gfx942") == gemm


def test_attention_kernels_bound_by_lds_to_one_wave_are_scheduled_for_latency():
    """A kernel whose pipelined loop reduces between its gemms (flash
    attention) and whose LDS allows one wave per SIMD gets llc's max-ILP
    scheduler ("amdgpu-sched-strategy"="max-ilp"): at head size 128, 64x64
    blocks of two waves take 48 KiB with Q read from global memory, more
    than a third of gfx942's and gfx90a's 64 KiB; on gfx950's 160 KiB three
    workgroups fit, and the default scheduler keeps registers for them.
    GEMMs, row reductions (no gemm) and the example's head size 64 (Q read
    from global memory, one stage: two waves per SIMD, tile-pipeline's
    waves_from_global) keep the default, and tile-lower-to-gpu{sched-hints=false}
    turns it off."""
    from attention_cases import Attention, kernel_text

    strategy = '"amdgpu-sched-strategy"="max-ilp"'
    wide = kernel_text(Attention(heads=2, kv_heads=2, dim=128))

    def llvm_ir(name: str, chip: str, **options) -> str:
        text = wide if name == "d128" else (EXAMPLES / "kernels" / f"{name}.mlir").read_text()
        return tilemlir.compile(text, target=f"amdgpu:{chip}", emit="llvm", **options).artifact

    assert strategy in llvm_ir("d128", "gfx942")
    assert strategy in llvm_ir("d128", "gfx90a")
    assert strategy not in llvm_ir("d128", "gfx950")
    assert strategy not in llvm_ir("flash_attention", "gfx942")
    assert strategy not in llvm_ir("batched_gemm", "gfx942")
    assert strategy not in llvm_ir("softmax", "gfx942")
    assert strategy not in llvm_ir("d128", "gfx942", options={"passes": "tile-lower-to-gpu{sched-hints=false}"})


def test_contraction_keeps_the_flags_an_op_had():
    """amdgpu-contract-float-ops adds `contract` to llvm.fmul/fadd/fsub and
    keeps their other fast-math flags; other ops are left alone."""
    from mlir import ir

    from tilemlir.backends.amdgpu.contract_float_ops import contract_float_ops
    from tilemlir.dialects import tile

    text = """llvm.func @f(%a: f32, %b: f32) -> f32 {
      %p = llvm.fmul %a, %b {fastmathFlags = #llvm.fastmath<afn>} : f32
      %s = llvm.fsub %p, %a : f32
      %d = llvm.fdiv %s, %b : f32
      %t = llvm.fadd %d, %a {fastmathFlags = #llvm.fastmath<contract>} : f32
      llvm.return %t : f32
    }"""
    module = ir.Module.parse(text, tile.make_context())
    assert contract_float_ops(module.operation) == 2
    flags = {op.name: str(op.attributes["fastmathFlags"]) for op in module.body.operations[0].regions[0].blocks[0]
             if "fastmathFlags" in op.attributes}
    assert flags["llvm.fmul"] == "#llvm.fastmath<contract, afn>"
    assert flags["llvm.fsub"] == flags["llvm.fadd"] == "#llvm.fastmath<contract>"
    assert flags["llvm.fdiv"] == "#llvm.fastmath<none>"


@pytest.mark.parametrize("chip,dtype,k,tiling,transpose_b", [
    ("gfx942", "f16", 128, "block=128,128,32 threads=256 stages=4", False),
    ("gfx1100", "f16", 128, "block=128,128,32 threads=256 stages=4", False),  # WMMA: 32-byte reads
    ("gfx950", "f8E4M3FN", 640, "block=128,128,128 threads=256 stages=5", True),  # 32 fp8 a lane
], ids=["gfx942-f16", "gfx1100-f16", "gfx950-fp8"])
def test_rows_swizzled_in_place_of_dropped_padding(chip, dtype, k, tiling, transpose_b):
    """Tilings whose padded stages overflow the LDS: the padding goes and
    the rows are XOR-swizzled instead (tile-infer-layout); the MFMA and WMMA
    reads take the swizzled column a 16-byte chunk at a time (RDNA3's and
    fp8's 32-byte reads in two), and the result matches the reference engine."""
    text = whole_problem_gemm(128, 128, k, dtype, "f32", transpose_b=transpose_b)
    tile_ir = tilemlir.compile(text, target=f"amdgpu:{chip}", emit="tile", options={"tiling": tiling}).artifact
    layouts = re.findall(r"tile.smem_layout = \{[^}]*\}", tile_ir)
    assert layouts and any("dropped_pad" in layout and "swizzle = " in layout for layout in layouts), layouts
    emulate_against_reference(text, chip, tiling=tiling)


@pytest.mark.parametrize("chip,dtype,out,transpose_b,m,k,tiling,read_bits", [
    ("gfx942", "f16", "f32", False, 128, 128, "block=128,128,32 stages=4", 128),
    ("gfx942", "bf16", "bf16", True, 128, 128, "block=128,128,32 stages=4", 128),
    ("gfx942", "f8E4M3FNUZ", "f16", True, 128, 256, "block=128,128,64 stages=4", 128),
    ("gfx90a", "f16", "f16", False, 128, 128, "block=128,128,32 stages=4", 128),
    # One element a lane and step (scalar operands): a pair is one ds_read2.
    ("gfx942", "f32", "f32", False, 128, 64, "block=128,128,16 stages=4", None),
    ("gfx942", "f64", "f64", True, 64, 64, "block=64,64,16 stages=4", None),
], ids=["gfx942-f16", "gfx942-bf16", "gfx942-fp8", "gfx90a-f16", "gfx942-f32", "gfx942-f64"])
def test_two_k_steps_a_read_in_swizzled_rows(chip, dtype, out, transpose_b, m, k, tiling, read_bits):
    """Tilings whose padded stages overflow the LDS: the rows are
    XOR-swizzled instead, and where a lane's part of an MFMA operand is at
    most 64 bits tile-infer-layout records two K steps a read
    (tile.operand_read_steps = 2, MfmaCore.k_steps_per_read): each lane reads
    two steps' worth of K at once (a whole 16-byte chunk where each step read
    8 bytes at a scattered column), the steps take the halves, K permuted
    alike in A and B, and the result matches the reference engine."""
    accum = "f64" if dtype == "f64" else "f32"
    text = whole_problem_gemm(m, m, k, dtype, out, transpose_b, accum=accum)
    tile_ir = tilemlir.compile(text, target=f"amdgpu:{chip}", emit="tile", options={"tiling": tiling}).artifact
    assert "tile.operand_read_steps = 2" in tile_ir and "swizzle = " in tile_ir
    report = tilemlir.compile(text, target=f"amdgpu:{chip}", emit="isa",
                              options={"report": True, "tiling": tiling}).report
    (kernel,) = report["kernels"]
    assert kernel["spills"] == 0
    assert read_bits is None or kernel["amdgpu"]["lds_read_bits"] == read_bits
    emulate_against_reference(text, chip, tiling=tiling)


def test_k_steps_a_read_stay_one_where_they_would_not_pay():
    """In padded rows llc already merges two steps' 8-byte reads into one
    ds_read2_b64, and 16-byte reads would want wider padding: GEMMs in
    padded rows (64x128x64 in 2 stages) read one step a read. (RDNA's WMMAs
    and gfx950's doubled-K MFMAs, 128 bits a lane already, read one in any
    rows.) gfx90a's default for
    1024^3, 128x128x64 in 2 stages, fills the LDS: its rows are swizzled and
    read two steps at a time."""
    gemm = whole_problem_gemm(1024, 1024, 1024, "f16", "f32")
    padded = {"tiling": "block=64,128,64 threads=256 stages=2"}
    for chip in ("gfx942", "gfx90a", "gfx1100", "gfx950"):
        tile_ir = tilemlir.compile(gemm, target=f"amdgpu:{chip}", emit="tile", options=padded).artifact
        assert "tile.operand_read_steps" not in tile_ir
    assert "tile.operand_read_steps = 2" in tilemlir.compile(gemm, target="amdgpu:gfx90a", emit="tile").artifact


@pytest.mark.parametrize("chip,dtype,k,tiling,agprs", [
    ("gfx942", "f16", 128, "block=256,256,64 threads=512 stages=1", False),
    ("gfx950", "f8E4M3FN", 512, "block=256,256,128 threads=512 stages=2", False),
    ("gfx90a", "bf16", 96, "block=256,256,32 threads=512 stages=1", False),
    ("gfx942", "f16", 128, "block=128,256,32 threads=256 stages=2", True),  # one wave a SIMD: 512 registers
], ids=["gfx942-f16-8w", "gfx950-fp8-8w", "gfx90a-bf16-8w", "gfx942-f16-4w"])
def test_waves_sharing_a_simd_hold_their_share_in_architected_registers(chip, dtype, k, tiling, agprs):
    """A workgroup of 8 waves puts two on each SIMD: each wave's share of the
    unified file (256 registers) fits the architected registers, and the
    kernel is compiled with no AGPRs ("amdgpu-agpr-alloc"="0"), its
    accumulators in architected registers, without spills; a wave alone on
    its SIMD may use them. The 256x256 blocks match the reference engine."""
    text = whole_problem_gemm(256, 256, k, dtype, "f32")
    llvm_ir = tilemlir.compile(text, target=f"amdgpu:{chip}", emit="llvm", options={"tiling": tiling}).artifact
    assert ('"amdgpu-agpr-alloc"="0"' in llvm_ir) == (not agprs)
    report = tilemlir.compile(text, target=f"amdgpu:{chip}", emit="isa",
                              options={"report": True, "tiling": tiling}).report
    (kernel,) = report["kernels"]
    assert kernel["spills"] == 0
    if not agprs:
        assert kernel["amdgpu"]["agpr"] == 0
        emulate_against_reference(text, chip, tiling=tiling)


def test_no_agprs_where_the_chip_has_none():
    """RDNA has no accumulation registers: nothing to bound."""
    text = whole_problem_gemm(256, 256, 128, "f16", "f32")
    llvm_ir = tilemlir.compile(text, target="amdgpu:gfx1100", emit="llvm",
                               options={"tiling": "block=128,128,32 threads=512 stages=2"}).artifact
    assert "amdgpu-agpr-alloc" not in llvm_ir


def test_rows_a_skewed_swizzle_stores():
    """128x128x32 f16 blocks at 4 stages fill gfx942's LDS: the padding goes
    and the rows are XOR-swizzled, read two K steps at a time, so that a
    clock's lanes reach rows 4 apart, which only the skewed swizzle keeps
    apart (test/Transforms/infer-layout-given-up.mlir). The copies' stores and
    the MFMAs' reads at its addresses, executed against the reference engine."""
    text = whole_problem_gemm(128, 128, 128, "f16", "f32")
    tiling = "block=128,128,32 threads=256 stages=4"
    tile_ir = tilemlir.compile(text, target="amdgpu:gfx942", emit="tile", options={"tiling": tiling}).artifacts["tile"]
    assert tile_ir.count("swizzle = 5") == 2 and "tile.operand_read_steps = 2" in tile_ir
    emulate_against_reference(text, "gfx942", tiling=tiling)
