"""The metax stages: tile, gpu (shared), then maca.

    tile IR --TILE_PIPELINE (backends/driver.py)--> GPU-level IR
        --NARROW_INDICES (on a copy)--> --emitter.print_maca--> MACA C++ (.maca)
        --mxcc (not run here)--> mcbin

The tile passes are the family-neutral ones; the target's descriptor makes them
choose MetaX's 16x16 instructions, and tile-lower-to-gpu emits them through
MetaxMmaCore (matrix.py). Before printing, index arithmetic that MLIR's
integer range analysis bounds is narrowed to 32 bits (`narrowed`); the
printer indexes allocations of fewer than 2^31 elements in 32 bits, counts
loops with constant bounds in an int32_t, and widens a 32-bit value only
inside the 64-bit offset that needs it.
`--emit maca` prints the source, and `--report` (from the `maca` stage, `report_of`)
gives per kernel its threads, shared memory and MMA built-ins.
The shared-memory budget (64 KiB on xcore1000, 128 KiB on xcore1500) is
checked by tile-lower-to-gpu, with numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir, passmanager

from tilemlir.backends.driver import Compilation, GpuStage, Stage, TileStage
from tilemlir.backends.metax.emitter import EmitError, MacaSource, mxcc_command, print_maca
from tilemlir.backends.report_schema import kernel_entry, module_report
from tilemlir.irutil import walk
from tilemlir.passes.lower_to_gpu.api import constant_int

# Upstream passes that compute index values in 32 bits where MLIR's integer
# range analysis proves them to fit: thread ids bounded by the gpu.func's
# known_block_size, block ids by its known_grid_size (`known_grid_sizes`),
# constants and the arithmetic on them. Index values stay 64-bit where the
# analysis cannot bound them (a grid sized at run time, dynamic extents).
NARROW_INDICES = ("builtin.module(gpu.module(gpu.func("
                  "arith-int-range-narrowing{int-bitwidths-supported=32})))")


def known_grid_sizes(module: ir.Operation) -> None:
    """Sets known_grid_size on every gpu.func whose launches all give it the
    same constant grid (what the range analysis bounds block ids by)."""
    grids: dict[str, set] = {}
    for op in walk(module):
        if op.name == "gpu.launch_func":
            launch = op.opview
            grid = tuple(constant_int(v) for v in (launch.gridSizeX, launch.gridSizeY, launch.gridSizeZ))
            kernel = ir.SymbolRefAttr(launch.kernel).value[-1]
            grids.setdefault(kernel, set()).add(grid)
    for op in walk(module):
        if op.name != "gpu.func" or "known_grid_size" in op.attributes:
            continue
        found = grids.get(ir.StringAttr(op.attributes["sym_name"]).value, set())
        if len(found) == 1:
            grid = next(iter(found))
            if all(extent is not None and 0 < extent < 2 ** 31 for extent in grid):
                op.attributes["known_grid_size"] = ir.DenseI32ArrayAttr.get(list(grid))


def narrowed(module: ir.Operation) -> ir.Operation:
    """A copy of a GPU-level module with its index arithmetic in 32 bits
    where that is proven exact (NARROW_INDICES)."""
    copy = module.clone()
    with module.context:
        known_grid_sizes(copy)
        passmanager.PassManager.parse(NARROW_INDICES).run(copy)
    return copy


def report_of(source: MacaSource, target) -> dict:
    """The --report JSON (docs/report.md) for a metax compile: per kernel its
    threads, shared memory and MMA built-ins (per main-loop iteration and in
    all, per thread); the metax section holds the chip's shared-memory limit.
    Registers, spills and occupancy are mxcc's, which does not run here: null."""
    limit = target.memory.shared_bytes_per_workgroup
    return module_report(target, [
        kernel_entry(k.name, target.family, threads=k.threads, shared_bytes=k.shared_bytes,
                     matrix_instructions={name: {"main_loop": k.mma_per_iteration.get(name, 0), "total": total}
                                          for name, total in k.mma_total.items()},
                     family_fields={"shared_bytes_limit": limit})
        for k in source.kernels
    ])


@dataclass(frozen=True)
class MacaStage(Stage):
    """GPU-level IR -> MACA C++ (kernels and host launchers), in process."""

    name: str = "maca"
    suffix: str = ".maca.cpp"
    summary: str = ("MACA C++ for metax targets (kernels + host launcher; the mxcc command\n"
                    "line is in its first lines)")

    def describe(self, job: Compilation) -> list[str]:
        return ["maca: in process (tilemlir.backends.metax.emitter: GPU-level IR -> MACA C++)",
                f"mxcc: {mxcc_command(job.target.processor)}"]

    def run(self, job: Compilation) -> None:
        with job.timed(self.name):
            try:
                source = print_maca(narrowed(job.module), job.target)
            except EmitError as error:
                raise job.located_errors([(error.op, str(error))]) from None
        if job.options.report:
            job.report = report_of(source, job.target)
        job.artifacts[self.name] = source.text


STAGES: tuple[Stage, ...] = (TileStage(), GpuStage(), MacaStage())
