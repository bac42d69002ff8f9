"""The nvidia stages: tile, gpu (shared, without tile-pipeline), then ptx.

    gpu --ptx--> gpu-check-input, nvidia-dynamic-memref-arguments, GPU_TO_NVVM,
                 nvidia-dynamic-shared-extern, nvidia-tensor-maps-by-value (one
                 pipeline, "gpu-to-nvvm"), then
                 TO_BINARY ("ptx"): PTX text

The launch metadata (toolchain.launch_metadata) is read from the GPU-level IR
before it is converted; the report (always built by `ptx`, report.py) holds it
as `functions`, and per kernel the counts of the matrix, ldmatrix, cp.async and
TMA instructions in the PTX.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.backends.driver import Compilation, GpuStage, Stage, TileStage
from tilemlir.backends.nvidia import pass_lists, toolchain
from tilemlir.backends.nvidia.report import build_report
from tilemlir.passes.check_gpu_input import GpuCheckInput


@dataclass(frozen=True)
class PtxStage(Stage):
    """GPU-level IR -> the LLVM and NVVM dialects -> PTX, in process."""

    name: str = "ptx"
    suffix: str = ".ptx"
    summary: str = ("PTX text for nvidia targets (e.g. --target nvidia:sm_90a); --report gives\n"
                    "the launch metadata a launcher needs")
    one_kernel_function: bool = True

    def to_nvvm(self, job: Compilation) -> str:
        # 32-bit index arithmetic when every memref of the module, as it is
        # now, has fewer than 2^31 elements (toolchain.index_bitwidth).
        return pass_lists.gpu_to_nvvm_pipeline(job.target.processor,
                                             index_bits=toolchain.index_bitwidth(job.module),
                                             check=str(GpuCheckInput(target=job.spec)))

    def describe(self, job: Compilation) -> list[str]:
        return [f"gpu-to-nvvm: {self.to_nvvm(job)}", f"ptx: builtin.module({pass_lists.TO_BINARY})"]

    def run(self, job: Compilation) -> None:
        try:
            metadata = toolchain.launch_metadata(job.module, job.target)
        except toolchain.LaunchError as error:
            raise job.located_errors([(error.op, str(error))]) from None
        with job.timed("gpu-to-nvvm"):
            job.run_pipeline(self.to_nvvm(job))
        with job.timed(self.name):
            job.run_pipeline(f"builtin.module({pass_lists.TO_BINARY})")
            ptx = job.artifacts[self.name] = toolchain.binary_assembly(job.module)
        toolchain.add_parameter_types(metadata, ptx)
        job.report = build_report(ptx, metadata, job.target)


STAGES: tuple[Stage, ...] = (TileStage(pass_lists.TILE_PIPELINE), GpuStage(pass_lists.TILE_PIPELINE),
                             PtxStage())
