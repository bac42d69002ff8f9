"""tile-split-loops in the compile driver: a split that spills registers is
dropped with a remark, unless spills are allowed (the pass itself:
test/Transforms/split-loops.mlir; its translation validation:
test_translation_validation.py; the split kernels in the emulator and on the
H200: test_attention.py, bench/device_check.py)."""

from __future__ import annotations

import pytest
from attention_cases import Attention, kernel_text

import tilemlir

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


def test_a_kernel_that_spills_either_way_keeps_the_first_error():
    """128 rows of d = 128 in one wave spill split or not: the error is the
    split compile's, and no remark claims a fallback."""
    kernel = Attention(seq=1000, dim=128, causal=True, block_m=128, threads=64, stages=1)
    with pytest.raises(tilemlir.compiler.CompileError) as caught:
        tilemlir.compile(kernel_text(kernel), target=TARGET, emit="isa")
    message = str(caught.value)
    assert "spills" in message and "VGPRs" in message and "--allow-spills" in message
    assert "compiled without the split" not in message
