"""Every pass pipeline tile-compile --dump-pass-pipeline prints reproduces the run.

For each family the driver compiles an example and prints its stages; the
printed `tile`, `gpu` and `gpu-to-llvm`/`gpu-to-nvvm` (and `ptx`) pipelines are
then run through `tile-opt -p`, each on the artefact of the stage before, and
must give the driver's artefact of that stage: the same tile and GPU-level IR,
and, through the rest of the backend's steps, the same LLVM IR and PTX.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from conftest import REPO
from mlir import ir

from tilemlir.backends.amdgpu import toolchain as amdgpu_toolchain
from tilemlir.backends.nvidia import toolchain as nvidia_toolchain
from tilemlir.compiler import CompileOptions, compile_module
from tilemlir.dialects import tile
from tilemlir.targets import get_target

SEED = (REPO / "examples" / "seed_fp8_gemm.mlir").read_text()
F16_GEMM = (REPO / "test" / "Backends" / "metax" / "maca-f16.mlir").read_text()
WGMMA_GEMM = (REPO / "test" / "Backends" / "nvidia" / "wgmma-f16.mlir").read_text()
DIRECT_LDS_GEMM = (REPO / "test" / "Backends" / "amdgpu" / "direct-lds-loads.mlir").read_text()


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    target: str
    options: CompileOptions = field(default_factory=CompileOptions)
    expect_in_lowered: str = ""  # what the last pipeline must have written (its pass did something)


CASES = [
    Case("amdgpu-gfx942", SEED, "amdgpu:gfx942"),
    # Loads into LDS, so amdgpu-order-lds-dma has loads to mark.
    Case("amdgpu-gfx950-direct-lds", DIRECT_LDS_GEMM, "amdgpu:gfx950",
         CompileOptions(tiling="block=128,128,128 threads=256 stages=2",
                        passes="tile-infer-layout{transpose-reads=true},tile-lower-to-gpu{direct-lds-loads=true}"),
         "alias_scopes"),
    Case("metax-xcore1000", F16_GEMM, "metax:xcore1000"),
    Case("nvidia-mma-sync", F16_GEMM, "nvidia:sm_90a"),
    # Dynamic shared memory, which nvidia-dynamic-shared-extern makes external.
    Case("nvidia-wgmma", WGMMA_GEMM, "nvidia:sm_90a",
         CompileOptions(tiling="block=128,128,64 threads=256 stages=3", select="prefer=wgmma"),
         "llvm.mlir.global external @__dynamic_shmem__"),
]


def compiled(case: Case):
    module = ir.Module.parse(case.text, tile.make_context()).operation
    lines: list[str] = []
    result = compile_module(module, get_target(case.target), None, case.options,
                            dump_pipeline=lines.append)
    printed = dict(line.rstrip("\n").split(": ", 1) for line in lines)
    return result, printed


def tile_opt(run_in_process, pipeline: str, text: str) -> str:
    """`tile-opt -p PIPELINE` on `text` (its main(), in this process: conftest.run_in_process)."""
    done = run_in_process("tile-opt", "-", "-p", pipeline, stdin=text)
    assert done.returncode == 0, f"tile-opt -p '{pipeline}' failed:\n{done.stderr}"
    return done.stdout


def same_ir(printed: str, artifact: str) -> bool:
    context = tile.make_context()
    return str(ir.Module.parse(printed, context)) == str(ir.Module.parse(artifact, context))


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_printed_pipelines_reproduce_the_artefacts(case, run_in_process):
    result, printed = compiled(case)
    family = case.target.split(":")[0]
    tile_ir = tile_opt(run_in_process, printed["tile"], case.text)
    assert same_ir(tile_ir, result.artifacts["tile"])
    gpu_ir = tile_opt(run_in_process, printed["gpu"], result.artifacts["tile"])
    assert same_ir(gpu_ir, result.artifacts["gpu"])
    if family == "amdgpu":
        lowered = tile_opt(run_in_process, printed["gpu-to-llvm"], result.artifacts["gpu"])
        assert case.expect_in_lowered in lowered
        module = ir.Module.parse(lowered, tile.make_context())
        device = amdgpu_toolchain.extract_device_module(module.operation)
        llvm_ir = amdgpu_toolchain.optimize_llvmir(amdgpu_toolchain.translate_to_llvmir(device),
                                                   case.target.split(":")[1])
        assert llvm_ir == result.artifacts["llvm"]
    elif family == "nvidia":
        lowered = tile_opt(run_in_process, printed["gpu-to-nvvm"], result.artifacts["gpu"])
        assert case.expect_in_lowered in lowered
        binary = tile_opt(run_in_process, printed["ptx"], lowered)
        module = ir.Module.parse(binary, tile.make_context())
        assert nvidia_toolchain.binary_assembly(module.operation) == result.artifacts["ptx"]
    else:
        assert set(printed) == {"tile", "gpu", "maca", "mxcc"}


def test_every_printed_pass_is_registered():
    """No pass name in a printed pipeline is unknown to tile-opt (the backends'
    passes are found through the family registry)."""
    from tilemlir.passes import is_tile_pass, pass_family

    assert pass_family("amdgpu-check-resources") == "amdgpu"
    assert pass_family("amdgpu-order-lds-dma") == "amdgpu"
    assert pass_family("nvidia-dynamic-shared-extern") == "nvidia"
    assert pass_family("gpu-check-input") is None and is_tile_pass("gpu-check-input")
