"""A shared buffer the program indexes itself keeps the layout it was written
in: B dequantised into shared memory by the program's own memref.store (i8
times a per-column f16 scale), then read by tile.gemm. tile-infer-layout used
to store that buffer transposed or padded (or swizzled) while the store kept
its logical indices: silently wrong results on gfx942/gfx950.

The dequantisation is a T.Parallel over the accumulator's shape (which it
also clears), the form the lowering distributes over the block's lanes today
(each element of B written by exactly one lane); it sits before the copy of A,
whose trailing barrier orders its writes before the gemm's reads (inserting
that barrier for the program's own shared writes is separate work). One K
block: nothing overwrites B after the gemm reads it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mlir import ir

import tilemlir
from tilemlir.dialects import attributes
from tilemlir.dialects.tile import make_context
from tilemlir.irutil import walk
from tilemlir.passes.shared_memory import SharedLayout, shared_layout
from tilemlir.runtime import run
from tilemlir.runtime.dtypes import convert

KERNEL = (Path(__file__).parents[1] / "Runtime" / "Inputs" / "dequant_gemm.mlir").read_text()
TARGETS = ["amdgpu:gfx90a", "amdgpu:gfx942", "amdgpu:gfx950", "metax:xcore1000", "nvidia:sm_90a"]
EMULATED = ["amdgpu:gfx90a", "amdgpu:gfx942", "amdgpu:gfx950", "metax:xcore1000"]


def inputs(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (64, 64)).astype(np.float16)
    bq = rng.integers(-128, 128, (64, 64)).astype(np.int8)
    scale = rng.uniform(0.001, 0.02, 64).astype(np.float16)
    return [a, bq, scale, np.zeros((64, 64), np.float32)]


def float64_oracle(a, bq, scale) -> np.ndarray:
    # B is rounded to f16 as the kernel stores it (i8 * f16 scale in f16).
    b = (bq.astype(np.float16) * scale[None, :]).astype(np.float64)
    return a.astype(np.float64) @ b


def tolerance(a, b) -> float:
    # f32 accumulation of K = 64 exact f16 products: K * 2^-23 * sum |a||b|,
    # sum |a||b| <= K max|a| max|b| (as test_amd_acceptance), plus a little for f32 output rounding.
    return 64 * 2.0 ** -23 * float(np.abs(a).max() * np.abs(b).max()) * 64 + 1e-6


@pytest.mark.parametrize("target", TARGETS)
def test_buffer_the_program_writes_is_kept_as_written(target):
    compiled = tilemlir.compile(KERNEL, target=target, emit="gpu")
    with make_context():
        module = ir.Module.parse(str(compiled.artifacts["tile"]))
        a, b = [op for op in walk(module.operation) if op.name == "tile.alloc_shared"]
        assert shared_layout(b) == SharedLayout()
        layout = attributes.SMEM_LAYOUT.read(b)
        if layout is not None:  # families whose matrix core describes its operand reads
            reason = ir.StringAttr(layout["as_written"]).value
            assert reason.startswith("kept as written (no transpose, padding or swizzle): "
                                     "memref.store at "), reason
        assert attributes.SMEM_LAYOUT.read(a) is None or "as_written" not in attributes.SMEM_LAYOUT.read(a)


@pytest.mark.parametrize("target", EMULATED)
def test_dequantised_gemm_matches_float64(target):
    args = inputs()
    reference = [x.copy() for x in args]
    run(KERNEL, "dequant_gemm", reference)
    emulated = [x.copy() for x in args]
    compiled = tilemlir.compile(KERNEL, target=target, emit="gpu")
    run(compiled.artifacts["gpu"], "dequant_gemm", emulated, engine="emulator", target=target)
    expected = float64_oracle(*args[:3])
    b = convert(args[1], np.float64) * convert(args[2], np.float64)[None, :]
    bound = tolerance(convert(args[0], np.float64), b)
    assert np.abs(expected).max() > 1  # a wrong layout cannot pass unnoticed
    assert np.abs(convert(reference[3], np.float64) - expected).max() <= bound
    assert np.abs(convert(emulated[3], np.float64) - expected).max() <= bound
