"""The metax stages: tile, gpu (shared), then maca.

    tile IR --TILE_PIPELINE (backends/stages.py)--> GPU-level IR
        --emitter.print_maca--> MACA C++ (.maca) --mxcc (not run here)--> mcbin

The tile passes are the family-neutral ones; the target's descriptor makes them
choose MetaX's 16x16 instructions, and tile-lower-to-gpu emits them through
MetaxMmaCore (matrix.py). `--emit maca` prints the source, and `--report`
(from the `maca` stage) gives per kernel its shared memory and MMA built-ins.
The shared-memory budget (64 KiB on xcore1000, 128 KiB on xcore1500) is
checked by tile-lower-to-gpu, with numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.backends.metax.emitter import EmitError, MacaSource, mxcc_command, print_maca
from tilemlir.backends.stages import Compilation, GpuStage, Stage, TileStage


def report_of(source: MacaSource, target) -> dict:
    """The --report JSON for a metax compile: per kernel, shared memory and
    MMA built-ins (per main-loop iteration and in all, per thread)."""
    limit = target.memory.shared_bytes_per_workgroup
    return {
        "target": str(target),
        "kernels": [
            {"name": k.name, "threads": k.threads, "shared_bytes": k.shared_bytes,
             "shared_bytes_limit": limit,
             "mma_instructions": {name: {"main_loop": k.mma_per_iteration.get(name, 0), "total": total}
                                  for name, total in sorted(k.mma_total.items())}}
            for k in source.kernels
        ],
    }


@dataclass(frozen=True)
class MacaStage(Stage):
    """GPU-level IR -> MACA C++ (kernels and host launchers), in process."""

    name: str = "maca"
    summary: str = ("MACA C++ for metax targets (kernels + host launcher; the mxcc command\n"
                    "line is in its first lines)")

    def describe(self, job: Compilation) -> list[str]:
        return ["maca: in process (tilemlir.backends.metax.emitter: GPU-level IR -> MACA C++)",
                f"mxcc: {mxcc_command(job.target.name)}"]

    def run(self, job: Compilation) -> None:
        with job.timed(self.name):
            try:
                source = print_maca(job.module, job.target)
            except EmitError as error:
                raise job.located_errors([(error.op, str(error))]) from None
        if job.options.report:
            job.report = report_of(source, job.target)
        job.artifacts[self.name] = source.text


STAGES: tuple[Stage, ...] = (TileStage(), GpuStage(), MacaStage())
