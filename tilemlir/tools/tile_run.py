"""tile-run: run a tile kernel on random inputs and check it against float64 NumPy.

    tile-run examples/seed_fp8_gemm.mlir --entry mixed_precision_gemm --engine reference
    tile-run kernel.mlir --entry gemm --seed 3 --save out/
    tile-run gemm_dynamic.mlir --dim A.0=1000        # %A: memref<?x128xf16> is 1000x128

Inputs come from the seed (arguments.INPUTS_TEXT, also in --help: memrefs
uniform in [-1, 1], scalar arguments (f32 scales, i32/index sizes) away from
0). Dynamic extents come from --dim (arguments.DIM_TEXT): an extent is named
by the argument and dimension that hold it, `A.0`, since MLIR types carry no
name for one; extents the program ties together (a whole-problem gemm's M, N,
K) take one value. Every output (an argument the program writes) is
compared with a float64 reference; GEMM outputs are checked against the
tolerance below. With --engine emulator (or device) every output is also
checked against the reference engine's on the same inputs. GPU-level IR
(gpu.launch_func, no tile ops) runs only in the emulator, under its
sanitizer, with no oracle to check its outputs. The emulator and the device
compile the program as tile-compile does, a tuning database included: the
entry tile-compile would apply (`--tuning-db PATH`, else $TILEMLIR_TUNING_DB,
else the cache file; none with --no-tuning-db; tile_compile.TuningLookup) is
the configuration that runs, and a line says which entry that was, or none.
The last line is PASS, FAIL or NOT CHECKED (some output had no oracle), exit
status 0, 1 or 2.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

PROG = "tile-run"

NOT_CHECKED = 2  # the exit status of a run that found nothing wrong but left outputs unchecked

_EPILOG_HEAD = """\
exit status:
  0  PASS: every output was checked against a tolerance and is within it
  1  FAIL: some output is not within its tolerance; or any error, a sanitizer
     report of the emulator included (never a Python traceback)
  2  NOT CHECKED: nothing failed, but some output has no oracle: with
     --engine reference, an output that is not a plain GEMM result; for
     GPU-level IR (which only the emulator runs, under its sanitizer), every
     output; or the function writes no argument

"""


def _epilog() -> str:
    """The help's epilog: exit status, inputs, dynamic extents, tolerances."""
    from tilemlir.runtime.arguments import DIM_TEXT, INPUTS_TEXT
    from tilemlir.runtime.oracle import ENGINE_TOLERANCE_TEXT, TOLERANCE_TEXT

    return "\n\n".join([_EPILOG_HEAD + INPUTS_TEXT, DIM_TEXT, TOLERANCE_TEXT, ENGINE_TOLERANCE_TEXT,
                        _emulator_default()])


def _emulator_default() -> str:
    """The emulator's own target, for the help's epilog (`emulator_target`)."""
    from tilemlir.diagnostics import UserError
    from tilemlir.runtime.emulator import emulator_target

    try:
        chosen = emulator_target()
    except UserError as error:
        chosen = f"none ({error})"
    return ("the emulator's own target (the first family, by name, whose default chip the emulator "
            f"models):\n  {chosen}")


def _parser():
    from tilemlir.dialects import attributes
    from tilemlir.runtime import ENGINES
    from tilemlir.tools.common import ToolParser

    parser = ToolParser(
        PROG,
        description="Run a function of a tile IR file on random inputs and compare its outputs "
                    "with a float64 NumPy reference.",
        epilog=_epilog,
    )
    parser.add_argument("input", metavar="FILE", help="the .mlir file")
    parser.add_argument("--entry", metavar="NAME",
                        help="the function to run (default: the only function of the module)")
    parser.add_argument("--engine", default="reference", metavar="ENGINE",
                        help=f"one of {', '.join(ENGINES)} (default reference); 'emulator' compiles "
                             f"for --target (or the module's {attributes.TARGET.name}) and runs the GPU-level IR "
                             "in the SIMT emulator under its sanitizer, checking every output "
                             "against the reference engine too; GPU-level IR as input runs only "
                             "there (unchecked: no oracle); 'device' compiles for an nvidia "
                             "target and runs on this machine's GPU")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="random seed of the inputs (default 0)")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME.DIM=VALUE",
                        help="the extent of a dynamic dimension: --dim A.0=1000 is dimension 0 of "
                             "argument %%A; '*.0=1000' every argument's dynamic dimension 0 "
                             "(repeatable; see 'dynamic extents' below)")
    parser.add_argument("--save", metavar="DIR",
                        help="write inputs, outputs and references as .npy files plus manifest.json")
    parser.add_argument("--target", metavar="T",
                        help="the target the emulator or the device compiles for, named as "
                             "tile-compile's --target; default: the input's "
                             f"{attributes.TARGET.name}, else "
                             f"$TILEMLIR_TARGET, else for the emulator its own (below), for the "
                             "device this machine's GPU (README.md, 'Which target, which artefact'); "
                             "the reference engine does not depend on it")
    parser.add_argument("--tuning-db", metavar="PATH",
                        help="compile for the emulator or the device as this tuning database (tile-tune's) "
                             "says, as tile-compile does (default: $TILEMLIR_TUNING_DB, else "
                             "$XDG_CACHE_HOME/tilemlir/tuning.json if it exists); the reference engine "
                             "runs the program as written")
    parser.add_argument("--no-tuning-db", action="store_true",
                        help="read no tuning database: the cost model decides the tiling")
    return parser


def _parse_args(argv: list[str]) -> argparse.Namespace:
    from tilemlir.diagnostics import UserError

    options = _parser().parse_command_line(argv)
    if options.tuning_db is not None and options.no_tuning_db:
        raise UserError("give either --tuning-db or --no-tuning-db, not both")
    if options.seed < 0:
        raise UserError(f"--seed must be a non-negative integer, not {options.seed}")
    return options


def _apply_tuning_db(options: argparse.Namespace, module, target):
    """(CompileOptions, a line saying what was applied): the tuning database's
    entry for the module on `target`, found and applied by tile-compile's own
    lookup, so the emulator runs the configuration tile-compile builds."""
    import os

    from tilemlir.compiler import CompileOptions
    from tilemlir.tools.tile_compile import Options, TuningLookup
    from tilemlir.tune.db import ENVIRONMENT_VARIABLE, cache_path

    lookup = TuningLookup(Options(tuning_db=options.tuning_db, no_tuning_db=options.no_tuning_db))
    compile_options, entry = lookup.apply(module, target, CompileOptions())
    if options.no_tuning_db:
        said = "none read (--no-tuning-db)"
    elif lookup.path is None:
        said = f"none (no --tuning-db, ${ENVIRONMENT_VARIABLE} or {cache_path(os.environ)})"
    elif entry is None:
        said = f"{lookup.path}: no entry for this program on {target}, none applied"
    else:
        said = f"{lookup.path}: applied the entry for {entry.key.op} on {target}: {entry.config.describe()}"
    return compile_options, f"tuning database: {said}"


def _entry_name(program, requested: str | None) -> str:
    from tilemlir.diagnostics import UserError

    if requested is not None:
        return requested
    names = program.entry_names()
    if len(names) == 1:
        return names[0]
    listed = ", ".join(f"@{n}" for n in names) or "none"
    raise UserError(f"--entry is required: the module has {len(names)} functions ({listed})")


def _function_op(module, program, name: str):
    """The func.func @name at the top of the module."""
    from mlir import ir

    from tilemlir.diagnostics import UserError

    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op
    known = ", ".join(f"@{n}" for n in program.entry_names()) or "none"
    raise UserError(f"no function @{name} in the module (functions: {known})")


def _copy(value):
    """A fresh copy of an input: arrays are written in place, scalars are values."""
    return value.copy() if hasattr(value, "copy") else value


def _is_float_array(value) -> bool:
    """A memref's array of floats (scalars are NumPy scalars or ints, not arrays)."""
    import numpy as np

    from tilemlir.runtime.dtypes import is_float_dtype

    return isinstance(value, np.ndarray) and is_float_dtype(value.dtype)


def _role(p, value, written: set[int]) -> str:
    """'input', 'output', 'input, 1000x128' (a dynamic shape), 'scalar input = 1.25'."""
    if not p.is_memref:
        shown = f"{float(value):.6g}" if hasattr(value, "dtype") and value.dtype.kind not in "iu" \
            else str(value)
        return f"scalar input = {shown}"
    role = "output" if p.index in written else "input"
    if any(d is None for d in p.shape):
        role += ", " + "x".join(str(d) for d in value.shape)
    return role


def _fmt(x: float) -> str:
    return f"{x:.3e}"


def _save(directory: str, params, inputs, outputs, shadows, written, reports) -> None:
    """.npy files (fp8/bf16 widened to float32, which is lossless) and a manifest."""
    import numpy as np

    from tilemlir.diagnostics import UserError
    from tilemlir.runtime import dtypes

    root = Path(directory)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create '{directory}': {error.strerror or error}") from None
    manifest = []

    def write(name: str, array) -> str:
        stored = array.astype(np.float32) if dtypes.is_narrow_float(array.dtype) else array
        path = root / name
        try:
            np.save(path, stored)
        except OSError as error:
            raise UserError(f"cannot write '{path}': {error.strerror or error}") from None
        return name

    by_param = {r.param.index: r for r in reports if not r.engine}
    for p, array in zip(params, inputs):
        if not p.is_memref:
            value = int(array) if isinstance(array, int) else float(array)
            manifest.append({"argument": p.index, "name": p.name, "type": str(p.type), "value": value})
            continue
        stem = f"{p.index}_{re.sub(r'[^A-Za-z0-9_.-]', '_', p.name.lstrip('%'))}"
        entry = {"argument": p.index, "name": p.name, "type": str(p.type),
                 "input": write(f"{stem}.input.npy", array)}
        if dtypes.is_narrow_float(array.dtype):
            entry["stored_as"] = f"float32 (exact); restore with .astype(ml_dtypes.{array.dtype.name})"
        if p.index in written:
            entry["output"] = write(f"{stem}.output.npy", outputs[p.index])
        if p.index in by_param:
            entry["float64_reexecution"] = write(f"{stem}.float64.npy", shadows[p.index])
            entry["compared_with"] = by_param[p.index].reference
        manifest.append(entry)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def run(argv: list[str]) -> int:
    import numpy as np

    from tilemlir.diagnostics import UserError, collect_diagnostics, format_diag
    from tilemlir.runtime import (
        check_engine,
        is_gpu_level,
        load_module,
        require_tile_level,
        run_emulator,
    )
    from tilemlir.runtime.arguments import (
        bind,
        dim_ties,
        parameters,
        parse_dim_flag,
        random_arguments,
        resolve_shapes,
        written_parameters,
    )
    from tilemlir.runtime.dtypes import convert, is_float_dtype
    from tilemlir.runtime.engine_target import resolve_engine_target
    from tilemlir.runtime.oracle import check_output, compare_engines, gemm_outputs
    from tilemlir.runtime.reference import Program, RunError
    from tilemlir.tune.db import TuningDatabaseError

    options = _parse_args(argv)
    check_engine(options.engine)
    dim_flags = [parse_dim_flag(text) for text in options.dim]
    try:
        module, source = load_module(Path(options.input))
        gpu_level = is_gpu_level(module)
        if options.engine == "reference":
            require_tile_level(module)
        program = Program(module, source=source)
        entry = _entry_name(program, options.entry)
        # GPU-level IR is not compiled for the reference engine: only its entry is needed
        function_op = _function_op(module, program, entry) if gpu_level else \
            program.function(entry).op
        params = parameters(function_op, program.dtype_of, source)
        shapes = resolve_shapes(params, dim_flags, dim_ties(function_op), source)
        inputs = random_arguments(params, options.seed, shapes)
        reference_outputs = shadows = None
        if not gpu_level:  # the reference engine and the float64 re-execution
            reference_outputs = [_copy(x) for x in inputs]
            started = time.perf_counter()
            program.call(entry, bind(params, reference_outputs, entry))
            elapsed = time.perf_counter() - started
            ideal = Program(module, source=source, precision="float64")
            shadows = [convert(x, np.float64) if _is_float_array(x) else _copy(x) for x in inputs]
            ideal.call(entry, bind(parameters(function_op, ideal.dtype_of, source), shadows, entry))
        if options.engine == "reference":
            outputs, reference_outputs = reference_outputs, None
            tuning_said = "tuning database: not applied (the reference engine runs the program as written)"
        else:
            try:
                target = resolve_engine_target(module, options.target, options.engine)
            except UserError:
                target = None  # the engine says what is missing (after whether it can run at all)
            compile_options, tuning_said = None, None
            if target is not None:
                compile_options, tuning_said = _apply_tuning_db(options, module, target)
            outputs = [_copy(x) for x in inputs]
            started = time.perf_counter()
            said: list = []  # what the compiler's passes remark, printed as tile-compile prints it
            with collect_diagnostics(module.context, said, source):
                if options.engine == "device":
                    from tilemlir.runtime.device import run_device

                    run_device(module, entry, outputs, target or options.target, compile_options)
                else:
                    run_emulator(module, entry, outputs, target or options.target, compile_options)
            elapsed = time.perf_counter() - started
            sys.stderr.write("".join(format_diag(d, source) for d in said if d.severity == "remark"))
    except RunError as error:
        sys.stderr.write(error.formatted())
        return 1
    except TuningDatabaseError as error:
        sys.stderr.write(format_diag(error.diag))  # `PATH:line:col: error: ...`, as tile-compile says it
        return 1

    # Outputs: what the program writes (seen in the IR), or what either engine changed.
    written = written_parameters(function_op)
    for results in (outputs, reference_outputs or outputs):
        written |= {i for i, (x, y) in enumerate(zip(inputs, results)) if isinstance(x, np.ndarray)
                    and not np.array_equal(x, y, equal_nan=is_float_dtype(x.dtype))}
    gemms = {i: g for i, g in gemm_outputs(function_op).items() if g.fits(inputs)}
    print(f"{PROG}: {options.input} @{entry}, engine {options.engine}, seed {options.seed}")
    for p in params:
        print(f"  argument {p.index} {p.name}: {p.type} ({_role(p, inputs[p.index], written)})")
    if tuning_said is not None:
        print(f"  {tuning_said}")
    sanitized = " under the sanitizer (bounds, LDS and global-memory races, uninitialized LDS): " \
        "no violation" if options.engine == "emulator" else ""
    print(f"  ran in {elapsed:.2f} s{sanitized}")
    names = [p.name for p in params]
    outputs_written = [p for p in params if p.index in written]
    reports = []
    if reference_outputs is not None:
        for p in outputs_written:
            r = compare_engines(p, outputs[p.index], reference_outputs[p.index], shadows[p.index],
                                gemms.get(p.index), inputs, options.engine)
            reports.append(r)
            print(f"  {p.name}: {options.engine} vs reference engine: max abs difference "
                  f"{_fmt(r.max_abs)}, worst difference/tolerance {r.worst_ratio:.3f}: "
                  f"{'PASS' if r.passed else 'FAIL'}")
    if shadows is not None:
        reports += [check_output(p, outputs[p.index], shadows[p.index], gemms.get(p.index),
                                 inputs, names) for p in outputs_written]
    for r in reports:
        if r.engine:
            continue
        verdict = "PASS" if r.passed else "FAIL"
        if r.passed and r.worst_ratio is None:
            verdict = "not checked"
        print(f"  {r.param.name}: vs {r.reference}")
        line = f"    max abs err {_fmt(r.max_abs)}, max rel err {_fmt(r.max_rel)} (to max |ref|)"
        if r.worst_ratio is not None:
            line += f", worst err/tolerance {r.worst_ratio:.3f}"
        print(f"{line}: {verdict}" + (f" ({r.note})" if r.note else ""))
    if gpu_level:
        for p in outputs_written:
            print(f"  {p.name}: not checked (no float64 oracle for GPU-level IR, and the "
                  "reference engine does not run it)")
    if not outputs_written:
        print("  no outputs: the function writes none of its arguments")
    if options.save:
        _save(options.save, params, inputs, outputs, shadows, written, reports)
        print(f"  saved inputs and outputs to {options.save}/")
    failed = [r for r in reports if not r.passed]
    checked = {r.param.index for r in reports if r.worst_ratio is not None}
    unchecked = [p.name for p in outputs_written if p.index not in checked]
    summary = f"{len(checked)} output(s) checked against a tolerance, {len(failed)} failed"
    if failed:
        print(f"FAIL: {summary}")
        return 1
    if unchecked or not outputs_written:
        if not outputs_written:
            why = "no output to check"
        elif gpu_level:
            why = f"no float64 oracle for GPU-level IR ({', '.join(unchecked)})"
        else:
            why = f"no float64 oracle for {', '.join(unchecked)} (not a plain GEMM result)"
        print(f"NOT CHECKED: {why}; {summary}")
        return NOT_CHECKED
    print(f"PASS: {summary}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from tilemlir.tools.common import guarded_main

    return guarded_main(PROG, run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
