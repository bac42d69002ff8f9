"""tile-run's GEMM oracle (tilemlir.runtime.oracle.gemm_outputs) claims an
output only when it is the product start + op(A) @ op(B): a program that
changes a tile or the accumulator in place, or accumulates two gemms into one
fragment, has no oracle (NOT CHECKED), never a false FAIL or a false PASS.
The start is what the program means: C's initial value where it accumulates
into C without clearing it (split-K's atomic adds included), else the fill."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import tilemlir.runtime
from tilemlir.passes import build_pipeline
from tilemlir.runtime import dtypes, load_module, run
from tilemlir.runtime.arguments import parameters, random_arguments
from tilemlir.runtime.oracle import check_output, gemm_outputs
from tilemlir.tools.tile_run import NOT_CHECKED, main

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_text import whole_problem_gemm

INPUTS = "test/Runtime/Inputs"
SEED_GEMM = "gemm_fp8_64x200x96.mlir"
SHARED_A = "memref<128x32xf8E4M3FNUZ, #gpu.address_space<workgroup>>"
FRAGMENT = "memref<128x128xf32, #gpu.address_space<private>>"
GEMM_LINE = '      "tile.gemm"(%A_s, %B_s, %C_l)'
COPY_OUT = '    "tile.copy"(%C_l, %C, %row, %col)'


def _halve(buffer: str, memref: str, rows: int, cols: int, indent: str) -> str:
    """A T.Parallel that halves every element of `buffer` in place."""
    return (f"{indent}%half_{buffer[1:]} = arith.constant 0.5 : f32\n"
            f"{indent}scf.parallel (%i, %j) = (%c0, %c0) to (%r{rows}, %r{cols}) step (%c1, %c1) {{\n"
            f"{indent}  %x = memref.load {buffer}[%i, %j] : {memref}\n"
            + (f"{indent}  %w = arith.extf %x : f8E4M3FNUZ to f32\n" if "f8" in memref else
               f"{indent}  %w = arith.addf %x, %x : f32\n")
            + f"{indent}  %y = arith.mulf %w, %half_{buffer[1:]} : f32\n"
            + (f"{indent}  %z = arith.truncf %y : f32 to f8E4M3FNUZ\n" if "f8" in memref else
               f"{indent}  %z = arith.addf %y, %y : f32\n")
            + f"{indent}  memref.store %z, {buffer}[%i, %j] : {memref}\n"
            f"{indent}  scf.reduce\n{indent}}}\n")


def _gemm_line(text: str) -> str:
    """The kernel's tile.gemm line, at the kernel body's indentation."""
    line = next(line for line in text.splitlines() if line.startswith(GEMM_LINE))
    return line.strip().join(["    ", "\n"])


def _variant(repo, edit) -> str:
    text = (repo / INPUTS / SEED_GEMM).read_text()
    text = text.replace("    %c1 = arith.constant 1 : index\n",
                        "    %c1 = arith.constant 1 : index\n"
                        "    %r32 = arith.constant 32 : index\n    %r128 = arith.constant 128 : index\n")
    edited = edit(text)
    assert edited != text
    return edited


VARIANTS = {
    # the A tile scaled in place after its copy (a dequantization): no longer A's data
    "operand changed in place": lambda t: t.replace(
        GEMM_LINE, _halve("%A_s", SHARED_A, 128, 32, "      ") + GEMM_LINE),
    # the accumulator rescaled at every K step (online softmax does this)
    "accumulator rescaled in the loop": lambda t: t.replace(
        GEMM_LINE, _halve("%C_l", FRAGMENT, 128, 128, "      ") + GEMM_LINE),
    # an epilogue in place before the copy out
    "epilogue in place": lambda t: t.replace(COPY_OUT, _halve("%C_l", FRAGMENT, 128, 128, "    ") + COPY_OUT),
    # a second gemm into the same accumulator
    "two gemms into one accumulator": lambda t: t.replace(COPY_OUT, _gemm_line(t) + COPY_OUT),
}


def test_the_unchanged_gemm_has_an_oracle(repo):
    module, _ = load_module(repo / INPUTS / SEED_GEMM)
    function = module.regions[0].blocks[0].operations[0]
    assert list(gemm_outputs(function)) == [2]


@pytest.mark.parametrize("name", VARIANTS)
def test_a_program_that_is_not_the_product_has_no_oracle(repo, tmp_path, monkeypatch, capsys, name):
    text = _variant(repo, VARIANTS[name])
    module, _ = load_module(text)
    function = module.regions[0].blocks[0].operations[0]
    assert gemm_outputs(function) == {}
    path = tmp_path / "variant.mlir"
    path.write_text(text)
    assert main([str(path)]) == NOT_CHECKED
    out = capsys.readouterr().out
    assert "NOT CHECKED: no float64 oracle for %C" in out and "FAIL" not in out


# C += A @ B with C read (no fill): tile-tiling cuts K in 2 for gfx942, each
# slice's workgroup adding its partial sums into C atomically, C not cleared.
ONTO_C = whole_problem_gemm(32, 32, 128, "f16", "f32", zero_fill=False)
# C = A @ B: tiled with split-K 2 too (split-k=2), the same kernel after a gpu.memset of C.
CLEARED = whole_problem_gemm(32, 32, 128, "f16", "f32")


def _tiled(text: str, options: str = "") -> str:
    """`text` after tile-tiling alone (`tile-opt -p 'builtin.module(tile-tiling{...})'`)."""
    module, _ = load_module(text)
    with module.context:
        build_pipeline(f"tile-tiling{{target=amdgpu:gfx942 {options}}}").run(module)
    return str(module)


def _gemm_outputs(text: str) -> dict:
    module, _ = load_module(text)
    return gemm_outputs(module.regions[0].blocks[0].operations[0])


def test_split_k_onto_c_is_checked_against_c_in_plus_the_product(tmp_path, capsys):
    """Both engines run the split-K kernel of a program that accumulates into
    an f32 C, and its oracle, derived from the kernel (atomic adds onto a C no
    memset cleared), is C's initial value plus the product: both PASS."""
    tiled = _tiled(ONTO_C, "split-k=2")
    assert "tile.atomic_add" in tiled and "split_k = 2" in tiled and "gpu.memset" not in tiled
    path = tmp_path / "split_k.mlir"
    path.write_text(tiled)
    for engine in ("reference", "emulator"):
        assert main([str(path), "--engine", engine, "--target", "amdgpu:gfx942"]) == 0
        out = capsys.readouterr().out
        assert "%arg2: vs float64 initial %arg2 + %arg0 @ %arg1 (K=128, f32 accumulation)" in out
        assert out.strip().splitlines()[-1].startswith("PASS: 1 output(s) checked")


def test_a_kernel_that_drops_c_in_fails_the_programs_oracle(tmp_path, monkeypatch, capsys):
    """The program's oracle, in the whole-problem form and in its kernel
    alike, is C's initial value plus the product; a kernel that drops C's
    initial value (the one tile-tiling makes of C = A @ B with split-K 2: C
    cleared, then the same atomic adds), standing for a compiler that lost C-in, fails it."""
    tiled, dropping = _tiled(ONTO_C, "split-k=2"), _tiled(CLEARED, "split-k=2")
    assert "gpu.memset" in dropping and "gpu.memset" not in tiled
    for text in (ONTO_C, tiled):
        gemm = _gemm_outputs(text)[2]
        assert (gemm.start_constant, gemm.start_argument) == (None, 2)
    cleared = _gemm_outputs(dropping)[2]
    assert (cleared.start_constant, cleared.start_argument) == (0.0, None)

    # The kernel's oracle: the right kernel passes it, the dropping one fails it.
    module, _ = load_module(tiled)
    params = parameters(module.regions[0].blocks[0].operations[0], lambda t: dtypes.ELEMENT_TYPES[str(t)].dtype)
    inputs = random_arguments(params, 0)
    names = [p.name for p in params]
    for kernel, passes in ((tiled, True), (dropping, False)):
        outputs = [x.copy() for x in inputs]
        run(kernel, "gemm", outputs)
        report = check_output(params[2], outputs[2], None, gemm, inputs, names)
        assert report.passed == passes and (report.worst_ratio > 1) != passes

    # tile-run: the dropping kernel run in place of the program's compiled code.
    monkeypatch.setattr(tilemlir.runtime, "run_emulator",
                        lambda module, entry, args, *rest: run(dropping, entry, args))
    path = tmp_path / "onto_c.mlir"
    path.write_text(ONTO_C)
    assert main([str(path), "--engine", "emulator", "--target", "amdgpu:gfx942"]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    verdict = lines.index("  %C: vs float64 initial %C + %A @ %B (K=128, f32 accumulation)") + 1
    assert lines[verdict].endswith(": FAIL") and lines[-1].startswith("FAIL: 1 output(s) checked")


SPLIT_K_VARIANTS = {
    # every slice's workgroup adds the accumulator's start too: C + 2 + A @ B, not C + 1 + A @ B
    "accumulator not cleared": lambda t: t.replace("%cst = arith.constant 0.000000e+00 : f32",
                                                   "%cst = arith.constant 1.000000e+00 : f32"),
    # C written again after the atomic adds
    "C changed afterwards": lambda t: t.replace(
        "    return\n", "    %one = arith.constant 1.0 : f32\n    gpu.memset %arg2, %one : memref<32x32xf32>, f32\n"
                        "    return\n"),
}


@pytest.mark.parametrize("name", SPLIT_K_VARIANTS)
def test_split_k_outputs_the_oracle_cannot_state_have_none(name):
    tiled = _tiled(ONTO_C, "split-k=2")
    edited = SPLIT_K_VARIANTS[name](tiled)
    assert edited != tiled and _gemm_outputs(tiled) and _gemm_outputs(edited) == {}
