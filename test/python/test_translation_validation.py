"""Translation validation of every tile pass (tilemlir.runtime.validate).

Each registered tile pass must appear in VALIDATED with inputs it is expected
to transform: the IR is executed in the reference engine before and after the
pass, and any change in the results fails naming the pass. A new tile pass is
not done until it has a row here (test_every_tile_pass_is_validated says so).
"""

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from attention_cases import Attention, kernel_text
from kernel_text import Gemm, gemm_kernel, pv_kernel, softmax_kernel
from mlir import ir
from mlir.dialects import arith

from tilemlir.dialects import attributes
from tilemlir.passes import pass_names
from tilemlir.passes.base import PassState, TilePass
from tilemlir.runtime.validate import TranslationValidationError, validate_pipeline

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"



def _kernel(name: str, *replacements: tuple[str, str]) -> str:
    text = (EXAMPLES / "kernels" / name).read_text()
    for old, new in replacements:
        assert old in text, (name, old)
        text = text.replace(old, new)
    return text


RAGGED_CAUSAL = Attention(seq=200, dim=32, causal=True)
# Small inputs the pipelines below run on: name -> (text, entry).
INPUTS = {
    "gemm-fp8-edges": (gemm_kernel(Gemm(64, 200, 96)), "gemm"),
    "gemm-bf16-transposed": (gemm_kernel(Gemm(40, 48, 40, block=(64, 64, 32), in_type="bf16",
                                              transpose_a=True, transpose_b=True)), "gemm"),
    "gemm-bias-relu": (gemm_kernel(Gemm(40, 48, 40, block=(64, 64, 32), epilogue="bias_relu")), "gemm"),
    "softmax": (softmax_kernel(40, 32, 16), "softmax"),
    # B dequantised into shared memory by the program's own stores (kept as written).
    "dequant-gemm": ((Path(__file__).resolve().parents[1] / "Runtime" / "Inputs" / "dequant_gemm.mlir")
                     .read_text(), "dequant_gemm"),
    "whole-problem": (
        (EXAMPLES / "gemm_whole_problem.mlir").read_text().replace("1024", "96"), "gemm"),
    # P written to shared memory by a T.Parallel and read by the next gemm, in a loop.
    "p-through-shared": (pv_kernel(loop=2), "pv"),
    # Issue 17's kernels (examples/kernels), on fewer rows or workgroups: fragments
    # of every layout, reductions across waves, T.Parallel into shared memory.
    "layernorm": (_kernel("layernorm.mlir", ("256x1024xbf16", "8x1024xbf16"), ("256xf32", "8xf32"),
                          ("array<i64: 64>", "array<i64: 2>")), "layernorm"),
    "online-softmax": (_kernel("online_softmax.mlir", ("256x2048", "8x2048"),
                               ("array<i64: 32>", "array<i64: 1>")), "online_softmax"),
    "conv-im2col": (_kernel("conv3x3_im2col.mlir", ("array<i64: 1, 8>", "array<i64: 1, 1>")), "conv3x3"),
    "w4a16": (_kernel("w4a16_gemm.mlir", ("array<i64: 2, 2>", "array<i64: 1, 1>")), "w4a16_gemm"),
    # P from registers into the second gemm (staged through shared memory).
    "flash-attention": (_kernel("flash_attention.mlir", ("array<i64: 4>", "array<i64: 1>")),
                        "flash_attention"),
    # Causal, and 200 keys in blocks of 64: two masks, ORed (tile-split-loops);
    # then over every key block, the diagonal's and those after it masked.
    "attention-causal-ragged": (kernel_text(RAGGED_CAUSAL), RAGGED_CAUSAL.name),
    "attention-causal-all-blocks": (kernel_text(RAGGED_CAUSAL).replace(
        "%upper = arith.minui %upper_diag, %blocks : index", "%upper = arith.addi %blocks, %c0 : index"),
        RAGGED_CAUSAL.name),
}
ALL = list(INPUTS)
T = "target=amdgpu:gfx942"

# pass name -> (a pipeline containing it, with what it needs before it; the
# inputs it is validated on). Every tile step of the pipeline is checked.
VALIDATED = {
    "tile-verify": ("tile-verify,canonicalize,tile-verify", ALL),
    "tile-tiling": (f"tile-tiling{{{T}}}", ALL),
    "tile-prove-bounds": (f"tile-tiling{{{T}}},tile-legalize-precision{{{T}}},tile-prove-bounds", ALL),
    "tile-legalize-precision": (f"tile-tiling{{{T}}},tile-legalize-precision{{{T}}}", ALL),
    "tile-select-mma": (f"tile-tiling{{{T}}},tile-legalize-precision{{{T}}},tile-select-mma{{{T}}}", ALL),
    "tile-stage-operands": ((f"tile-tiling{{{T}}},tile-legalize-precision{{{T}}},tile-select-mma{{{T}}},"
                             f"tile-stage-operands{{{T}}}"), ALL),
    "tile-infer-layout": ((f"tile-tiling{{{T}}},tile-legalize-precision{{{T}}},tile-select-mma{{{T}}},"
                           f"tile-stage-operands{{{T}}},tile-infer-layout{{{T}}}"), ALL),
    "tile-pipeline": ((f"tile-tiling{{{T} stages=3}},tile-legalize-precision{{{T}}},"
                       f"tile-select-mma{{{T}}},tile-stage-operands{{{T}}},tile-infer-layout{{{T}}},"
                       f"tile-pipeline{{{T}}}"), ALL),
    # In production order: after tile-pipeline, whose stages the two loops share.
    "tile-split-loops": ((f"tile-tiling{{{T}}},tile-legalize-precision{{{T}}},tile-prove-bounds,"
                          f"tile-select-mma{{{T}}},tile-stage-operands{{{T}}},tile-infer-layout{{{T}}},"
                          f"tile-pipeline{{{T}}},tile-split-loops"),
                         ["attention-causal-ragged", "attention-causal-all-blocks"]),
    "tile-insert-barriers": ((f"tile-tiling{{{T} stages=3}},tile-legalize-precision{{{T}}},"
                              f"tile-select-mma{{{T}}},tile-stage-operands{{{T}}},tile-infer-layout{{{T}}},"
                              f"tile-pipeline{{{T}}},"
                              "tile-insert-barriers"), ALL),
}
# Passes whose output the reference engine cannot run, and what will check them.
BEYOND_REFERENCE = {
    "tile-lower-to-gpu": "its output is GPU-level IR; the SIMT emulator (engine 'emulator') will validate it",
    # The passes on GPU-level IR and after it, which the backends run.
    "gpu-check-input": "checks GPU-level IR and changes nothing (test/Backends/gpu-input.mlir)",
    "amdgpu-check-resources": "checks GPU-level IR and changes nothing (test/Backends/amdgpu/)",
    "amdgpu-order-lds-dma": ("adds alias scopes to the LLVM dialect; test_direct_lds_loads.py checks "
                             "the ISA, the emulator the lowering before it"),
    "amdgpu-scope-atomics": ("changes the ordering and scope of atomics in the LLVM dialect; "
                             "test/Backends/amdgpu/scope-atomics.mlir checks which, test_split_k.py the ISA, "
                             "the emulator the split-K kernels before it"),
    "amdgpu-contract-float-ops": ("adds `contract` to the LLVM dialect's float multiplies and adds, which lets "
                                  "llc fuse them (docs/kernels.md); test/Backends/amdgpu/contract-float-ops.mlir "
                                  "checks the flags, test_amd_acceptance.py the ISA, the emulator the kernels "
                                  "before it"),
    "amdgpu-pack-float-ops": ("replaces element-wise float ops over every element of a vector by one vector "
                              "op computing each element as before; test/Backends/amdgpu/pack-float-ops.mlir "
                              "checks which, test_amd_acceptance.py the packed ISA, the emulator the kernels "
                              "before it"),
    "amdgpu-truncate-bf16": ("replaces the LLVM dialect's f32 -> bf16 fptrunc by integer rounding; "
                             "test_truncate_bf16.py runs it on the host against exact rounding of every "
                             "kind of f32, test/Backends/amdgpu/truncate-bf16.mlir checks where it applies"),
    "tile-expand-math": ("replaces math ops by approximations, which change the last bits; "
                         "test_expand_math.py runs its output in the emulator against float64 NumPy "
                         "within each expansion's stated error"),
    "amdgpu-math-to-intrinsics": ("calls the LLVM intrinsic of the same math function; "
                                  "test_expand_math.py compiles every math op with llc for each chip"),
    "nvidia-dynamic-shared-extern": ("changes a global's linkage in the LLVM dialect; the PTX is "
                                     "checked by test/Backends/nvidia and run on an H200 by bench/gemm.py"),
    "nvidia-tensor-maps-by-value": ("changes argument attributes in the LLVM dialect; the PTX is checked "
                                    "by test/Backends/nvidia/tensor-maps-by-value.mlir and test_nvidia.py, "
                                    "and run on an H200 by bench/device_check.py"),
    "nvidia-dynamic-memref-arguments": ("rewrites GPU-level IR; test_kernel_arguments.py runs it in the "
                                        "emulator before and after, and its PTX on an H200"),
}


def test_every_tile_pass_is_validated():
    missing = sorted(set(pass_names()) - set(VALIDATED) - set(BEYOND_REFERENCE))
    assert not missing, (f"tile passes without translation validation: {', '.join(missing)}; "
                         f"add them to VALIDATED in {Path(__file__).name}")


@pytest.mark.parametrize("pass_name, input_name", [
    # Rows of passes not registered (yet) are left out rather than failing.
    (name, input_name) for name, (_, inputs) in VALIDATED.items() if name in pass_names()
    for input_name in inputs
])
def test_tile_pass_preserves_results(pass_name, input_name):
    pipeline, _ = VALIDATED[pass_name]
    text, entry = INPUTS[input_name]
    reports = validate_pipeline(text, pipeline, entry)
    assert any(r.checked and r.step.startswith(pass_name) for r in reports)


@dataclass(frozen=True)
class DropLastKTile(TilePass):
    """A deliberately wrong pass: pipelined loops stop one iteration early."""

    name: ClassVar[str] = "test-drop-last-k-tile"
    summary: ClassVar[str] = "off-by-one in the K loop (for testing the validator)"

    def run(self, module: ir.Operation, state: PassState) -> None:
        from tilemlir.irutil import walk

        for op in list(walk(module)):
            if op.name == "scf.for" and attributes.NUM_STAGES.is_on(op):
                with ir.InsertionPoint(op), op.location:
                    one = arith.ConstantOp(ir.IndexType.get(), 1)
                    op.operands[1] = arith.SubIOp(op.operands[1], one.result).result


@dataclass(frozen=True)
class MarkKernels(TilePass):
    """A harmless pass: adds an attribute, changes no result."""

    name: ClassVar[str] = "test-mark"
    summary: ClassVar[str] = "marks kernels"

    def run(self, module: ir.Operation, state: PassState) -> None:
        from tilemlir.irutil import walk

        for op in walk(module):
            if op.name == "tile.kernel":
                op.attributes["test.seen"] = ir.UnitAttr.get(op.context)


def test_a_broken_pass_is_caught_and_named():
    text, entry = INPUTS["gemm-fp8-edges"]
    with pytest.raises(TranslationValidationError) as caught:
        validate_pipeline(text, ["tile-verify", MarkKernels(), "cse", DropLastKTile(), "canonicalize"], entry)
    message = str(caught.value)
    assert message.startswith("pass 'test-drop-last-k-tile' (step 4 of 5: tile-verify, test-mark, cse, "
                              "test-drop-last-k-tile, canonicalize) changed the results of @gemm:")
    assert "argument 2 (%C):" in message and "elements differ" in message


@dataclass(frozen=True)
class ClaimInBounds(TilePass):
    """A deliberately wrong pass: every copy of a kernel is claimed in bounds."""

    name: ClassVar[str] = "test-claim-in-bounds"
    summary: ClassVar[str] = "marks every copy in bounds (for testing the validator)"

    def run(self, module: ir.Operation, state: PassState) -> None:
        from tilemlir.irutil import walk

        for op in walk(module):
            if op.name == "tile.copy":
                attributes.IN_BOUNDS.mark(op)


def test_a_wrong_in_bounds_claim_is_caught():
    """The reference engine refuses a copy marked in bounds whose window leaves
    the memref (200 columns in 64-wide blocks): what tile-prove-bounds is
    validated against."""
    text, entry = INPUTS["gemm-fp8-edges"]
    with pytest.raises(TranslationValidationError, match="leaves the memref"):
        validate_pipeline(text, [f"tile-tiling{{{T}}}", ClaimInBounds()], entry)


def test_a_loop_split_one_block_late_is_caught(monkeypatch):
    """tile-split-loops with every bound one iteration too late runs the
    diagonal block unmasked where the loop goes past it: the validator sees
    the future keys."""
    from tilemlir.passes import split_loops

    right = split_loops.Candidate.boundary

    def late(candidate):
        return arith.AddIOp(right(candidate), arith.ConstantOp(ir.IndexType.get(), 1).result).result

    monkeypatch.setattr(split_loops.Candidate, "boundary", late)
    pipeline, _ = VALIDATED["tile-split-loops"]
    text, entry = INPUTS["attention-causal-all-blocks"]
    with pytest.raises(TranslationValidationError, match="pass 'tile-split-loops'"):
        validate_pipeline(text, pipeline, entry)


def test_upstream_passes_are_checked_on_request():
    text, entry = INPUTS["softmax"]
    reports = validate_pipeline(text, "canonicalize,cse", entry, check_all=True)
    assert [r.checked for r in reports] == [True, True]
    reports = validate_pipeline(text, "canonicalize,cse", entry)
    assert [r.checked for r in reports] == [False, False]
