"""tile-compile: tile IR (or GPU-level IR) to a target's artefacts (ISA, HSACO, MACA C++, PTX).

    tile-compile FILE --target amdgpu:gfx942 --emit isa [-o OUT]
    tile-compile FILE --emit hsaco -o kernel.hsaco --report
    tile-compile FILE --target nvidia:sm_90a --dump-pass-pipeline
    tile-compile FILE --plot-layout layout.png [--plot-buffer %A_shared]
    tile-compile FILE --emit hsaco -o kernel.hsaco --save-temps=build/ --mlir-print-ir-after-all

The target's backend names its stages (tile and gpu, shared, then amdgpu's
llvm, isa, hsaco; metax's maca; nvidia's ptx); `--emit` stops after any of
them, by default at the backend's default (amdgpu: isa; else its last stage),
as `tilemlir.compile` does; without --target, README.md's "Which target, which
artefact" says which target (`tilemlir.targets.selection`).
Input already at GPU level (a gpu.module, no tile ops) skips the tile passes.
`--report` prints the backend's report as JSON on stdout, with the `decisions`
the tile passes recorded per kernel (`tilemlir.backends.decisions`); stdout
then holds the report, so without `-o` the artefact is written where clang
writes an output it is not told the name of: a file named after the input in
the current directory (`kernel.s` for kernel.mlir, `stdin.s` for '-'), and a
note on stderr says so. `--save-temps[=DIR]` keeps every stage's output the
same way, named after the input (`kernel.tile.mlir`, `kernel.gpu.mlir`,
`kernel.ll`, `kernel.s`, `kernel.hsaco`; `.ptx`, `.maca.cpp`: each stage's
`suffix`), in the current directory or DIR. `--mlir-print-ir-before-all` and
`--mlir-print-ir-after-all` print the IR around every pass of every stage on
stderr, as mlir-opt does. Flags are spelled as tile-opt's (`tools/common.ToolParser`:
`-emit=isa`, `--emit isa`). A whole-problem GEMM that tile-tune tuned for
the target is tiled as the tuning database says (`--tuning-db PATH`, else
$TILEMLIR_TUNING_DB, else the cache file when it exists; not when --tiling or
--select is given), and the report says `config_source: "tuning-db"`.
`--plot-layout FILE.png` draws the kernel's fragments' lane layouts and its
shared buffers' bank maps (`plot_layout`; needs matplotlib, the `plot` extra).
Errors print as `file:line:col: error: message`, the exit
status is 1 and no output is written.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PROG = "tile-compile"



def _defaults() -> str:
    from tilemlir.backends.driver import default_emit
    from tilemlir.diagnostics import UserError
    from tilemlir.targets.registry import report_broken_family, usable_families

    shown = []
    for family in usable_families():
        try:
            shown.append(f"{family} {default_emit(family)}")
        except UserError as error:  # its stages do not load: reported once, skipped
            report_broken_family(family, error)
    return ", ".join(shown)


def _description() -> str:
    """What the tool does, with the installed backends (entry points included)."""
    from tilemlir.targets.registry import backend, usable_families

    installed = "; ".join(f"{family}: {backend(family).summary}" for family in usable_families())
    return (f"Compile tile IR or GPU-level IR for a target, through its backend's stages. "
            f"Installed backends: {installed}.")


def _epilog() -> str:
    """The stages of the installed backends, each with what it prints."""
    from tilemlir.backends.driver import registered_stages

    lines = [f"emit (default: the backend's own: {_defaults()}):"]
    for name, stage in registered_stages().items():
        summary = stage.summary.replace("\n", "\n" + " " * 9)
        lines.append(f"  {name:<6} {summary}")
    return "\n".join(lines) + "\n\nexit status: 0 on success, 1 on any error (never a Python traceback).\n"


@dataclass
class Options:
    input: str = "-"
    output: str | None = None
    target: str | None = None
    target_desc: str | None = None
    emit: str | None = None  # None: the target's backend's default
    report: bool = False
    allow_spills: bool = False
    no_spills: bool = False  # the old opt-in, accepted; refusing spills is the default
    tiling: str = ""
    select: str = ""
    pass_options: str = ""
    dump_pass_pipeline: bool = False
    verify_diagnostics: bool = False
    split_input_file: bool = False
    list_targets: bool = False
    describe_target: str | None = None
    describe_format: str | None = None
    plot_layout: str | None = None
    plot_buffer: list[str] | None = None
    tuning_db: str | None = None
    no_tuning_db: bool = False
    save_temps: str | None = None  # the folder (--save-temps alone: the current one)
    print_ir_before_all: bool = False
    print_ir_after_all: bool = False


def _parser():
    from tilemlir.backends.driver import emits
    from tilemlir.targets.cli import add_target_query_flags
    from tilemlir.targets.selection import TARGET_HELP

    stages = emits()
    from tilemlir.tools.common import ToolParser

    parser = ToolParser(PROG, description=_description(), epilog=_epilog)
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file ('-' for stdin, the default)")
    parser.add_argument("-o", dest="output", metavar="FILE",
                        help="output file (default stdout; '-' is stdout; with --report and no -o, a file "
                             "named after the input, as --save-temps names it)")
    parser.add_argument("--target", metavar="FAMILY:NAME",
                        help=TARGET_HELP)
    parser.add_argument("--target-desc", metavar="FILE", help="compile for the target described in FILE (.toml)")
    parser.add_argument("--emit", choices=stages, default=None,
                        help=f"the stage to output (default: the backend's own: {_defaults()})")
    parser.add_argument("--report", action="store_true",
                        help="print the resource report as JSON on stdout (without -o, the artefact goes to "
                             "a file named after the input: INPUT.s, ...; a note says which) "
                             "(registers, LDS, occupancy, MFMAs, "
                             "times) and the decisions: per kernel its block, warp grid, threads, matrix "
                             "instruction, stages, split-K and each shared buffer's padding, swizzle, bank "
                             "conflicts, transpose reads and direct loads")
    parser.add_argument("--plot-layout", metavar="FILE.png",
                        help="draw the compiled kernel's fragment lane layouts (thread and register of each "
                             "element) and shared-buffer bank maps (conflicting reads marked) into one PNG; "
                             "needs matplotlib (pip install tilemlir[plot])")
    parser.add_argument("--plot-buffer", metavar="NAME", action="append",
                        help="with --plot-layout: draw only this fragment or shared buffer (its SSA name in "
                             "the source, e.g. %%C_local, or the report's name such as shared0); repeatable")
    parser.add_argument("--allow-spills", action="store_true",
                        help="accept a kernel that spills registers to scratch (by default an error)")
    # Spills are an error by default now; the old opt-in flag is still accepted.
    parser.add_argument("--no-spills", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tiling", metavar="OPTIONS", default="",
                        help="tile-tiling's options for whole-problem GEMMs, e.g. 'block=128,128,64 stages=2'")
    parser.add_argument("--select", metavar="OPTIONS", default="",
                        help="tile-select-mma's options, e.g. 'prefer=wgmma' (sm_90a's warpgroup "
                             "path: wgmma fed by TMA)")
    parser.add_argument("--pass-options", metavar="PIPELINE", default="",
                        help="options for any tile pass, written as pipeline elements, e.g. "
                             "'tile-infer-layout{transpose-reads=true},"
                             "tile-lower-to-gpu{direct-lds-loads=true}'")
    parser.add_argument("--tuning-db", metavar="PATH",
                        help="tile whole-problem GEMMs as this tuning database (tile-tune's) says "
                             "(default: $TILEMLIR_TUNING_DB, else $XDG_CACHE_HOME/tilemlir/tuning.json "
                             "if it exists); --tiling or --select set by hand take precedence")
    parser.add_argument("--no-tuning-db", action="store_true",
                        help="read no tuning database: the cost model (or --tiling) decides")
    parser.add_argument("--dump-pass-pipeline", action="store_true",
                        help="print every stage's exact pipeline or command line (to stderr)")
    parser.add_argument("--verify-diagnostics", action="store_true",
                        help="check diagnostics against expected-error comments instead of writing output")
    parser.add_argument("--split-input-file", action="store_true",
                        help="with --verify-diagnostics: check each '// -----' chunk on its own")
    parser.add_argument("--save-temps", nargs="?", const=".", metavar="DIR",
                        help="keep every stage's output, named after the input as clang names its "
                             "temporaries (INPUT.tile.mlir, INPUT.gpu.mlir, INPUT.ll, INPUT.s, INPUT.hsaco, "
                             "INPUT.ptx, INPUT.maca.cpp), in the current directory or, as "
                             "--save-temps=DIR, in DIR")
    parser.add_argument("--mlir-print-ir-before-all", dest="print_ir_before_all", action="store_true",
                        help="print the IR before every pass of every stage (to stderr)")
    parser.add_argument("--mlir-print-ir-after-all", dest="print_ir_after_all", action="store_true",
                        help="print the IR after every pass of every stage (to stderr)")
    add_target_query_flags(parser)
    return parser


def parse_args(argv: list[str]) -> Options:
    from tilemlir.backends.driver import registered_stages
    from tilemlir.diagnostics import UserError

    options = Options(**vars(_parser().parse_command_line(argv)))
    if options.target and options.target_desc:
        raise UserError("give either --target or --target-desc, not both")
    if options.tuning_db is not None and options.no_tuning_db:
        raise UserError("give either --tuning-db or --no-tuning-db, not both")
    if options.split_input_file and not options.verify_diagnostics:
        raise UserError("--split-input-file is only supported with --verify-diagnostics")
    if options.save_temps is not None:
        if options.verify_diagnostics:
            raise UserError("--save-temps keeps a compile's stages: not with --verify-diagnostics")
        if not options.save_temps:
            raise UserError("--save-temps= needs a folder: --save-temps=DIR, or --save-temps for the "
                            "current one")
    if options.plot_buffer and not options.plot_layout:
        raise UserError("--plot-buffer selects what --plot-layout draws: give --plot-layout FILE.png")
    if options.plot_layout is not None:
        from tilemlir.tools.plot_layout import require_matplotlib

        if options.verify_diagnostics:
            raise UserError("--plot-layout draws a compiled kernel: not with --verify-diagnostics")
        if options.plot_layout in ("", "-"):
            raise UserError("--plot-layout writes a PNG file: give a file name")
        require_matplotlib()
    binary = options.emit is not None and registered_stages()[options.emit].binary
    if binary and options.output is None and not options.report:
        raise UserError(f"--emit {options.emit} writes a binary file: give -o FILE")
    if binary and options.output == "-" and sys.stdout.isatty():
        raise UserError(f"refusing to write a binary {options.emit.upper()} to a terminal: give -o FILE")
    return options


class TuningLookup:
    """The tuning database tile-compile reads (read when first needed, once):
    --tuning-db, else $TILEMLIR_TUNING_DB, else the cache file if it exists."""

    def __init__(self, options: Options):
        from tilemlir.tune.db import database_path

        self.path = None if options.no_tuning_db or options.tiling or options.select else \
            database_path(options.tuning_db, os.environ)
        self.database = None

    def entry_for(self, module, target):
        """The database's entry for this module on `target`, or None."""
        from tilemlir.tune.db import load_database
        from tilemlir.tune.search import find_entry, tuning_key

        if self.path is None or tuning_key(module, target) is None:
            return None
        if self.database is None:
            self.database = load_database(self.path)
        return find_entry(self.database, module, target)  # a near match is a remark

    def apply(self, module, target, options):
        """(CompileOptions, entry or None): `options` with tile-tiling's and
        tile-select-mma's options set as the database's entry for `module` on
        `target` says, when it has one (tile-run applies it through this too)."""
        tuned = self.entry_for(module, target)
        if tuned is None:
            return options, None
        return dataclasses.replace(options, tiling=f"{tuned.config.tiling_options()} source=tuning-db",
                                   select=tuned.config.select_options()), tuned

    def report(self, entry) -> dict:
        return {"database": str(self.path), "measure": entry.measure, "seconds": entry.seconds,
                "default_seconds": entry.default_seconds, "candidates": entry.candidates,
                "when": entry.when}


def _compile_chunk(chunk, options: Options, context, stderr_lines: list[str],
                   tuning: TuningLookup | None = None):
    """Parses and compiles one chunk; returns (result or None, diagnostics)."""
    from tilemlir.compiler import CompileError, CompileOptions, compile_module, default_emit
    from tilemlir.diagnostics import (
        Diag,
        ParseFailure,
        UserError,
        collect_diagnostics,
        parse_chunk,
    )
    from tilemlir.targets import select_target
    from tilemlir.tune.db import TuningDatabaseError

    diags: list = []
    result = None
    with collect_diagnostics(context, diags, chunk.source):
        try:
            start = time.perf_counter()
            module = parse_chunk(chunk, context)
            parse_seconds = time.perf_counter() - start
            target = select_target(options.target_desc or options.target, module)
            compile_options = CompileOptions(report=options.report, allow_spills=options.allow_spills,
                                             tiling=options.tiling, select=options.select,
                                             passes=options.pass_options,
                                             print_ir_before_all=options.print_ir_before_all,
                                             print_ir_after_all=options.print_ir_after_all)
            tuned = None
            if tuning is not None:
                compile_options, tuned = tuning.apply(module, target, compile_options)
            result = compile_module(
                module,
                target,
                options.emit or default_emit(target.family),
                compile_options,
                source=chunk.source,
                seconds={"parse": parse_seconds},
                dump_pipeline=stderr_lines.append if options.dump_pass_pipeline else None,
            )
            if tuned is not None and result.report is not None:
                result.report["tuning"] = tuning.report(tuned)
        except ParseFailure as failure:
            diags.extend(failure.diags)
        except CompileError as error:
            diags.extend(error.diags)
        except TuningDatabaseError as error:
            diags.append(error.diag)  # `PATH:line:col: error: ...`, the database's position
        except UserError as error:
            if not options.verify_diagnostics:
                raise
            diags.append(Diag("error", str(error), chunk.source.name))
    return result, diags


def run(argv: list[str]) -> int:
    from tilemlir.diagnostics import UserError, format_diag, split_input, verify_expectations
    from tilemlir.dialects import tile
    from tilemlir.targets.cli import handle_target_flags
    from tilemlir.tools.common import read_input, write_output

    options = parse_args(argv)
    if options.list_targets or options.describe_target is not None or options.describe_format:
        _, target_report = handle_target_flags(options.target, options.target_desc, options.list_targets,
                                               options.describe_target, options.describe_format)
        write_output(options.output or "-", target_report or "")
        return 0
    context = tile.make_context()
    source = read_input(options.input)
    stderr_lines: list[str] = []
    results, ok = [], True
    tuning = TuningLookup(options)
    for chunk in split_input(source, options.split_input_file):
        result, diags = _compile_chunk(chunk, options, context, stderr_lines, tuning)
        if options.verify_diagnostics:
            failures = verify_expectations(chunk, diags)
            stderr_lines.extend(format_diag(d, source) for d in failures)
            ok &= not failures
            continue
        stderr_lines.extend(format_diag(d, source) for d in diags)
        if result is None or any(d.severity == "error" for d in diags):
            ok = False
        results.append(result)
    sys.stderr.write("".join(stderr_lines))
    if not ok:
        return 1
    if options.verify_diagnostics:
        return 0
    (result,) = results
    if options.plot_layout is not None:
        from tilemlir.tools.plot_layout import render_png

        if not result.decisions:
            raise UserError("--plot-layout needs tile IR: the input is GPU-level IR, whose layouts the "
                            "compiler did not choose")
        write_output(options.plot_layout, render_png(result.decisions, options.plot_buffer))
    if options.save_temps is not None:
        _save_temps(result, options.input, options.save_temps)
    output = options.output or "-"
    if options.output is None and options.report:  # stdout is the report's: never drop the artefact
        output = _named_after_input(options.input, _emitted_stage(result), ".")
        sys.stderr.write(f"{PROG}: note: --report prints the report on stdout; the {result.emit} went "
                         f"to '{output}' (-o FILE puts it elsewhere)\n")
    write_output(output, result.artifact)
    if options.report:
        write_output("-", json.dumps(result.report, indent=2) + "\n")
    return 0


def _emitted_stage(result):
    from tilemlir.backends.driver import backend_stages

    return next(stage for stage in backend_stages(result.target.family) if stage.name == result.emit)


def _named_after_input(input_path: str, stage, folder: str) -> str:
    """`folder/STEM.SUFFIX`, clang's name for a stage's output (`kernel.s` for
    kernel.mlir; `stdin.s` for '-'); never the input itself."""
    from tilemlir.diagnostics import UserError

    stem = "stdin" if input_path == "-" else Path(input_path).stem
    path = str(Path(folder) / f"{stem}{stage.suffix or '.' + stage.name}")
    if input_path != "-" and Path(path).exists() and os.path.samefile(path, input_path):
        raise UserError(f"the {stage.name} output would be written over the input '{input_path}': "
                        f"give -o FILE")
    return path


def _save_temps(result, input_path: str, folder: str) -> None:
    """--save-temps: every stage's artefact the compile produced, named after the input."""
    from tilemlir.backends.driver import backend_stages
    from tilemlir.diagnostics import UserError
    from tilemlir.tools.common import write_output

    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"--save-temps: cannot create '{folder}': {error.strerror or error}") from None
    for stage in backend_stages(result.target.family):
        if stage.name in result.artifacts:
            write_output(_named_after_input(input_path, stage, folder), result.artifacts[stage.name])


def main(argv: list[str] | None = None) -> int:
    from tilemlir.tools.common import guarded_main

    return guarded_main(PROG, run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
