"""tile-split-loops in the compile driver: a split that spills registers is
dropped with a remark, unless spills are allowed (the pass itself:
test/Transforms/split-loops.mlir; its translation validation:
test_translation_validation.py; the split kernels in the emulator and on the
H200: test_attention.py, bench/device_check.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from attention_cases import Attention, kernel_text

import tilemlir
import tilemlir.compiler

# Causal over 1000 keys, d = 128, in one wave of 64 rows: on gfx942 the split
# kernel spills VGPRs (173 with LLVM 22), the loop as written none.
SPILLING = Attention(seq=1000, dim=128, causal=True, threads=64, stages=1)
TARGET = "amdgpu:gfx942"


def _split_remarks(result) -> list[str]:
    return [r.message for r in result.remarks if "tile-split-loops" in r.message]


def test_a_split_that_spills_is_dropped_with_a_remark():
    result = tilemlir.compile(kernel_text(SPILLING), target=TARGET, emit="isa",
                              options={"report": True}, remarks="all")
    assert result.report["kernels"][0]["spills"] == 0
    (said,) = [m for m in _split_remarks(result) if m.startswith("tile-compile:")]
    assert "spills registers on gfx942 (kernel 'attn_causal" in said and "VGPRs" in said, said
    assert "compiled without the split" in said


def test_allowed_spills_keep_the_split():
    result = tilemlir.compile(kernel_text(SPILLING), target=TARGET, emit="isa",
                              options={"report": True, "allow_spills": True}, remarks="all")
    assert result.report["kernels"][0]["amdgpu"]["vgpr_spills"] > 0
    said = _split_remarks(result)
    assert any(m.startswith("tile-split-loops: the iterations before") for m in said), said
    assert not any(m.startswith("tile-compile:") for m in said)


def test_a_split_that_fits_stays():
    result = tilemlir.compile(kernel_text(Attention(seq=1000, causal=True)), target=TARGET, emit="isa",
                              options={"report": True}, remarks="all")
    assert result.report["kernels"][0]["spills"] == 0
    said = _split_remarks(result)
    assert said and all(m.startswith("tile-split-loops:") for m in said), said


@pytest.fixture
def attempts(monkeypatch) -> list[str]:
    """The pass options of each compile attempt tilemlir.compile makes."""
    seen: list[str] = []
    attempt = tilemlir.compiler._attempt

    def counted(module, target, emit, options, *rest):
        seen.append(options.passes)
        return attempt(module, target, emit, options, *rest)

    monkeypatch.setattr(tilemlir.compiler, "_attempt", counted)
    return seen


def test_a_kernel_that_spills_either_way_keeps_the_first_error(attempts):
    """128 rows of d = 128 in one wave spill split or not, prefetched or not:
    the compiles without the split and without the prefetch are tried, and
    the error is the first compile's."""
    kernel = Attention(seq=1000, dim=128, causal=True, block_m=128, threads=64, stages=1)
    with pytest.raises(tilemlir.compiler.CompileError) as caught:
        tilemlir.compile(kernel_text(kernel), target=TARGET, emit="isa")
    assert attempts == ["", "tile-split-loops{enabled=false}", "tile-pipeline{enabled=false}"]
    message = str(caught.value)
    assert "spills" in message and "VGPRs" in message and "--allow-spills" in message


def test_the_options_given_to_the_pass_are_kept(attempts):
    """tile-split-loops{enabled=true} given by the user: no retry without it
    (the retry without tile-pipeline's prefetch keeps it, and does not spill)."""
    result = tilemlir.compile(kernel_text(SPILLING), target=TARGET, emit="isa",
                              options={"passes": "tile-split-loops{enabled=true}"})
    assert attempts == ["tile-split-loops{enabled=true}",
                        "tile-split-loops{enabled=true},tile-pipeline{enabled=false}"]
    assert any("compiled without the prefetch" in remark.message for remark in result.remarks)


def test_tile_compile_says_it_dropped_the_split(tmp_path):
    """The same through the command line, whose collector receives the
    remarks: the loop's line, and an ISA without spills."""
    source = tmp_path / "attention.mlir"
    text = kernel_text(SPILLING)
    source.write_text(text)
    loop_line = next(n for n, line in enumerate(text.splitlines(), 1) if line.lstrip().startswith("scf.for"))
    tool = Path(sys.executable).parent / "tile-compile"
    done = subprocess.run([str(tool), str(source), "--target", TARGET, "-o", str(tmp_path / "out.s")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert re.search(rf"attention\.mlir:{loop_line}:\d+: remark: tile-compile: splitting this loop .* "
                     r"compiled without the split", done.stderr), done.stderr
