"""The metax compile pipeline: the shared tile pipeline, then MACA C++.

    tile IR --TILE_PIPELINE (shared with amdgpu)--> GPU-level IR
        --emitter.print_maca--> MACA C++ (.maca) --mxcc (not run here)--> mcbin

The tile passes are the family-neutral ones (backends/amdgpu/pipeline.py
TILE_PIPELINE); the target's descriptor makes them choose MetaX's 16x16
instructions, and tile-lower-to-gpu emits them through MetaxMmaCore
(matrix.py). `--emit tile` and `--emit gpu` stop where they do for amdgpu;
`--emit maca` prints the source. The shared-memory budget (64 KiB on
xcore1000, 128 KiB on xcore1500) is checked by tile-lower-to-gpu, with numbers.
"""

from __future__ import annotations

from tilemlir.backends.amdgpu.pipeline import (
    EMIT_TILE_BEFORE,
    TILE_PIPELINE,
    tile_pipeline,
)

EMITS: tuple[str, ...] = ("tile", "gpu", "maca")

__all__ = ["EMITS", "EMIT_TILE_BEFORE", "TILE_PIPELINE", "describe", "maca_stage", "report_of",
           "tile_pipeline"]


def mxcc_command(arch: str, source: str = "KERNEL.maca") -> str:
    """How to build the emitted source with MetaX's compiler (maca-samples'
    Makefile: `mxcc -x maca ... --maca-path`; --offload-arch per tilelang-metax)."""
    return (f"$MACA_PATH/mxgpu_llvm/bin/mxcc -x maca -O3 -std=c++17 --offload-arch={arch} "
            f"--maca-path=$MACA_PATH -shared -fPIC {source} -o lib{source.rsplit('.', 1)[0]}.so")


def describe(target) -> list[str]:
    return [
        "maca: in process (tilemlir.backends.metax.emitter: GPU-level IR -> MACA C++)",
        f"mxcc: {mxcc_command(target.name)}",
    ]


def report_of(source, target) -> dict:
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


def maca_stage(module, target, report_wanted: bool):
    """(MACA source text, report or None) of a GPU-level module. Raises
    emitter.EmitError (located at its op) for constructs it cannot print."""
    from tilemlir.backends.metax.emitter import print_maca

    source = print_maca(module, target)
    return source.text, (report_of(source, target) if report_wanted else None)
