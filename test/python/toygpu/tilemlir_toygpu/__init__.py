"""toygpu: a made-up GPU family, plugged into tilemlir from outside the package.

The worked example of docs/backends.md. Everything a family provides is named
by the manifest below, registered under the `tilemlir.backends` entry point
(pyproject.toml: `toygpu = "tilemlir_toygpu:BACKEND"`):

* targets/*.toml: its chips (toy1), validated by tilemlir's descriptor rules
  and by `check_target` / `check_mma_row` here;
* matrix.py: its matrix core (one accumulator element per lane) and lowering
  hooks (one option of tile-lower-to-gpu);
* stages.py: tile, gpu (tilemlir's), then its own `toyasm`;
* passes.py: its own pass, `toygpu-count-mma`, which `tile-opt` runs too.

This module imports only tilemlir's target layer: the registry imports it to
list targets, so the heavier modules load when a compile needs them.
"""

from __future__ import annotations

import re
from pathlib import Path

from tilemlir.targets.model import Backend, MmaInstr, Target, is_unknown

# A row's name says its shape and operand type; it is the function the
# lowering calls (matrix.py).
ROW_NAME = re.compile(r"toy_mma_(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)_(?P<type>[a-z0-9]+)")
SUPPORTED = ("the toygpu lowering emits toy_mma_MxNxK_<type> with one accumulator element per "
             "lane (m x n = the wave size, one block, A and B of one type)")
NEEDS_WAVE_SIZE = ("the toygpu lowering needs the wave size (it spreads an instruction tile over "
                   "the lanes of a wave)")


def check_target(target: Target) -> tuple[str, str] | None:
    """The toy lowering spreads every instruction tile over a wave: it needs
    the wave size."""
    if is_unknown(target.compute.wave_size):
        return ("compute.wave_size", NEEDS_WAVE_SIZE)
    return None


def check_mma_row(row: MmaInstr, target: Target) -> str | None:
    """Why the toy lowering cannot emit `row` on `target`, or None."""
    parsed = ROW_NAME.fullmatch(row.name)
    if parsed is None:
        return f"'{row.name}' is not a toygpu instruction name; {SUPPORTED}"
    named = (int(parsed["m"]), int(parsed["n"]), int(parsed["k"]), parsed["type"])
    if named != (row.m, row.n, row.k, row.a) or row.a != row.b:
        return (f"its name says {named[0]}x{named[1]}x{named[2]} on {named[3]}, but the row is "
                f"{row.m}x{row.n}x{row.k} on {row.a} x {row.b}; {SUPPORTED}")
    if row.blocks != 1 or row.m * row.n != target.compute.wave_size:
        return (f"{row.blocks} block(s) of {row.m}x{row.n} on a wave of "
                f"{target.compute.wave_size} lanes; {SUPPORTED}")
    return None


BACKEND = Backend(
    family="toygpu",
    summary="a made-up GPU family from outside tilemlir (docs/backends.md)",
    targets_dir=Path(__file__).parent / "targets",
    mma_operand_types=frozenset({"f16", "bf16"}),
    mma_accumulator_types=frozenset({"f32"}),
    # The row's name is the symbol the lowering calls: no extra per-row key.
    mma_row_keys=(),
    check_target=check_target,
    check_mma_row=check_mma_row,
    matrix_core="tilemlir_toygpu.matrix:ToyMatrixCore",
    lowering_hooks="tilemlir_toygpu.matrix:ToyLoweringHooks",
    stages="tilemlir_toygpu.stages:STAGES",
    default_emit="toyasm",
    report_stage="toyasm",
    passes={"toygpu-count-mma": "tilemlir_toygpu.passes:ToyCountMma"},
)
