"""tile-run's GEMM oracle (tilemlir.runtime.oracle.gemm_outputs) claims an
output only when it is the product start + op(A) @ op(B): a program that
changes a tile or the accumulator in place, or accumulates two gemms into one
fragment, has no oracle (NOT CHECKED), never a false FAIL or a false PASS."""

from __future__ import annotations

import pytest

from tilemlir.runtime import load_module
from tilemlir.runtime.oracle import gemm_outputs
from tilemlir.tools.tile_run import NOT_CHECKED, main

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
