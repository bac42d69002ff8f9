"""Translation validation: does a pass change what the program computes?

`validate_pipeline` runs a pipeline one step at a time and executes the IR
before and after every tile pass in the reference engine, on the same inputs,
comparing every argument and result bit for bit (NaN equals NaN). The first
step that changes a result raises `TranslationValidationError` naming it.

    from tilemlir.runtime.validate import validate_pipeline
    validate_pipeline(text, "tile-verify,canonicalize,tile-tiling", entry="gemm")

Exact comparison is the right default: the reference semantics fix the order
of every rounding (a gemm accumulates over k in increasing order, so tiling K
gives identical bits). A pass that legitimately reassociates can be given a
`compare` function with a tolerance. Steps are pipeline elements
("cse", "func.func(canonicalize)", "tile-verify{...}") or `TilePass`
instances, so a test can validate a pass that is not registered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from mlir import ir, passmanager

from tilemlir.diagnostics import UserError, format_diag, mlir_error_diags
from tilemlir.passes import build_pipeline, is_tile_pass
from tilemlir.passes.base import TilePass
from tilemlir.passes.pipeline_text import Element, parse_pipeline
from tilemlir.runtime import load_module
from tilemlir.runtime.arguments import bind, parameters, random_arguments
from tilemlir.runtime.reference import Program

Step = str | TilePass
# (before, after) -> None when equal enough, else what differs.
Compare = Callable[[np.ndarray, np.ndarray], str | None]


class TranslationValidationError(AssertionError):
    """A pass changed the results of the program (or the pipeline failed)."""


@dataclass(frozen=True)
class StepReport:
    """One pipeline step and whether its input and output were executed."""

    step: str
    checked: bool  # executed before and after


def _step_text(step: Step) -> str:
    return str(step) if isinstance(step, TilePass) else step


def _has_tile_pass(element: Element) -> bool:
    if element.children is not None:
        return any(_has_tile_pass(child) for child in element.children)
    return is_tile_pass(element.name)


def _steps(pipeline: str | Sequence[Step]) -> list[tuple[Step, bool]]:
    """(step, is a tile pass) for each top-level element of the pipeline."""
    if isinstance(pipeline, str):
        return [(element.text(), _has_tile_pass(element)) for element in parse_pipeline(pipeline)]
    found: list[tuple[Step, bool]] = []
    for step in pipeline:
        if isinstance(step, TilePass):
            found.append((step, True))
        else:
            found.extend(_steps(step))
    return found


def exact(before: np.ndarray, after: np.ndarray) -> str | None:
    """Bitwise equality of values (NaN equals NaN, +0 differs from -0)."""
    if before.shape != after.shape or before.dtype != after.dtype:
        return f"was {before.dtype}{list(before.shape)}, is {after.dtype}{list(after.shape)}"
    if before.dtype.kind in "iub":
        same = before == after
    else:
        x, y = before.astype(np.float64), after.astype(np.float64)
        same = ((x == y) & (np.signbit(x) == np.signbit(y))) | (np.isnan(x) & np.isnan(y))
    if same.all():
        return None
    count = int((~same).sum())
    first = tuple(int(i) for i in np.argwhere(~same)[0])
    plain = int if before.dtype.kind in "iub" else float
    return (f"{count} of {same.size} elements differ; first at {first}: "
            f"{plain(before[first])} before, {plain(after[first])} after")


def _apply(step: Step, module: ir.Operation) -> None:
    context = module.context
    with context:
        if isinstance(step, TilePass):
            pm = passmanager.PassManager("builtin.module", context=context)
            pm.add(step.as_mlir_callable(), name=step.name, argument=step.name, description=step.summary)
        else:
            pm = build_pipeline(step, context=context)
        try:
            pm.run(module)
        except ir.MLIRError as error:
            text = "".join(format_diag(d) for d in mlir_error_diags(error, None))
            raise TranslationValidationError(f"pass '{_step_text(step)}' failed:\n{text}") from None


class _Runner:
    """Executes the current IR on copies of fixed inputs."""

    def __init__(self, module: ir.Operation, source, entry: str, args: Sequence[np.ndarray] | None,
                 seed: int):
        self.module = module
        self.entry = entry
        program = Program(module, source=source)
        self.params = parameters(program.function(entry).op, program.dtype_of, source)
        self.args = list(args) if args is not None else random_arguments(self.params, seed)

    def outputs(self) -> list:
        program = Program(self.module)
        values = [a.copy() if isinstance(a, np.ndarray) else a for a in self.args]
        results = program.call(self.entry, bind(self.params, values, self.entry))
        return [*values, *results]

    def name(self, i: int) -> str:
        if i < len(self.params):
            return self.params[i].label()
        return f"result {i - len(self.params)}"


def validate_pipeline(
    module_or_text,
    pipeline: str | Sequence[Step],
    entry: str,
    args: Sequence[np.ndarray] | None = None,
    *,
    seed: int = 0,
    check_all: bool = False,
    compare: Compare = exact,
) -> list[StepReport]:
    """Runs `pipeline` step by step on the module (in place when a module is
    given) and checks that no tile pass (every pass with `check_all`) changes
    the results of `entry` on `args` (random inputs from `seed` by default)."""
    module, source = load_module(module_or_text)
    runner = _Runner(module, source, entry, args, seed)
    steps = _steps(pipeline)
    names = ", ".join(_step_text(s) for s, _ in steps)
    reports = []
    current: list | None = None
    for number, (step, tile_step) in enumerate(steps, start=1):
        checked = tile_step or check_all
        if checked and current is None:
            current = runner.outputs()
        _apply(step, module)
        if not checked:
            current = None
            reports.append(StepReport(_step_text(step), False))
            continue
        try:
            after = runner.outputs()
        except UserError as error:
            raise TranslationValidationError(
                f"after pass '{_step_text(step)}' (step {number} of {len(steps)}: {names}) "
                f"@{entry} no longer runs: {error}") from None
        differences = []
        for i, (x, y) in enumerate(zip(current, after)):
            x_arr, y_arr = np.asarray(x), np.asarray(y)
            what = compare(x_arr, y_arr)
            if what is not None:
                differences.append(f"  {runner.name(i)}: {what}")
        if differences:
            raise TranslationValidationError(
                f"pass '{_step_text(step)}' (step {number} of {len(steps)}: {names}) changed the "
                f"results of @{entry}:\n" + "\n".join(differences))
        current = after
        reports.append(StepReport(_step_text(step), True))
    return reports
