"""tile-opt: mlir-opt for tile IR.

    tile-opt FILE -p 'builtin.module(tile-verify,func.func(canonicalize),cse)' [-o OUT]
    tile-opt FILE --tile-verify --canonicalize          # per-pass flags, in order
    tile-opt FILE --split-input-file --verify-diagnostics

Flags are spelled as for mlir-opt, with one dash or two (`-pass-pipeline=...`,
`-split-input-file`, `-canonicalize`). Tile passes and every upstream MLIR
pass mix in one pipeline; `--dump-pass-pipeline` prints it in a form `-p`
reads back (tile passes with their options, anchors kept). The input is
verified after parsing (MLIR's verifier, then tile-verify). Errors print as
`file:line:col: error: message`; the exit status is 1 and no output file is
left behind.
"""

from __future__ import annotations

import argparse
import sys
import typing
from dataclasses import dataclass, field

PROG = "tile-opt"

_EPILOG = """\
passes:
  Any tile pass (see --list-passes) or upstream MLIR pass may be given as a flag,
  e.g. --tile-verify --canonicalize --cse, or with options as
  --canonicalize='max-iterations=3'. Flags run in the order given.
  As in mlir-opt, every long flag may also be written with one dash.

exit status: 0 on success, 1 on any error (never a Python traceback).
"""


@dataclass
class Options:
    input: str = "-"
    output: str = "-"
    pipeline: str | None = None
    pass_flags: list[str] = field(default_factory=list)
    split_input_file: bool = False
    verify_diagnostics: bool = False
    list_passes: bool = False
    dump_pass_pipeline: bool = False
    print_ir_after_all: bool = False
    timing: bool = False
    print_generic: bool = False
    print_debuginfo: bool = False
    export_irdl: bool = False
    allow_unregistered_dialect: bool = False
    target: str | None = None
    target_desc: str | None = None
    list_targets: bool = False
    describe_target: str | None = None
    describe_format: str | None = None


def _parser() -> argparse.ArgumentParser:
    from tilemlir.dialects import attributes
    from tilemlir.target.cli import add_target_query_flags

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Optimizer driver for tile IR: tile passes and upstream MLIR passes in one pipeline.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file ('-' for stdin, the default)")
    parser.add_argument("-o", dest="output", default="-", metavar="FILE", help="output file (default stdout)")
    parser.add_argument("-p", "--pass-pipeline", dest="pipeline", metavar="PIPELINE",
                        help="textual pipeline, e.g. 'builtin.module(tile-verify,func.func(cse))'")
    parser.add_argument("--split-input-file", action="store_true",
                        help="process each '// -----' chunk of the input on its own")
    parser.add_argument("--verify-diagnostics", action="store_true",
                        help="check diagnostics against expected-error/warning/remark/note comments")
    parser.add_argument("--list-passes", action="store_true", help="list tile passes and upstream passes")
    parser.add_argument("--dump-pass-pipeline", action="store_true",
                        help="print the exact pipeline that runs (to stderr)")
    parser.add_argument("--mlir-print-ir-after-all", dest="print_ir_after_all", action="store_true",
                        help="print the IR after every pass (to stderr)")
    parser.add_argument("--mlir-timing", dest="timing", action="store_true",
                        help="print the time each pass took (to stderr, after the run)")
    parser.add_argument("--mlir-print-op-generic", dest="print_generic", action="store_true",
                        help="print the output in generic op form")
    parser.add_argument("--mlir-print-debuginfo", dest="print_debuginfo", action="store_true",
                        help="print locations (loc(...)) with the output")
    parser.add_argument("--export-irdl", action="store_true",
                        help="write the tile dialect as IRDL (for mlir-opt --irdl-file) and exit")
    parser.add_argument("--allow-unregistered-dialect", action="store_true",
                        help="accept ops of dialects that are not registered")
    parser.add_argument("--target", metavar="FAMILY:NAME",
                        help="hardware target of target-dependent passes, e.g. amdgpu:gfx942 "
                             f"(wins over the module's {attributes.TARGET.name})")
    parser.add_argument("--target-desc", metavar="FILE",
                        help="use the target descriptor (TOML) in FILE as the target")
    add_target_query_flags(parser)
    return parser


def parse_args(argv: list[str]) -> Options:
    """Reads the command line as mlir-opt does: long flags with one dash or two,
    `--NAME[=OPTIONS]` for any registered pass (run in the order given), and
    any other flag refused, with the flags it might have meant."""
    from tilemlir.diagnostics import UserError

    parser = _parser()
    takes_value = {s for a in parser._actions for s in a.option_strings if a.nargs is None}
    known_flags = {s for a in parser._actions for s in a.option_strings}
    ours, pass_flags = [], []
    value_expected = False
    for arg in argv:
        if value_expected or not arg.startswith("-") or arg in ("-", "--"):
            ours.append(arg)
            value_expected = False
            continue
        flag, eq, value = arg.lstrip("-").partition("=")
        if not arg.startswith("--") and len(flag) == 1:
            # A short flag: `-o FILE` or `-o=FILE`.
            ours.extend([f"-{flag}", value] if eq else [arg])
            value_expected = arg in takes_value
        elif f"--{flag}" in known_flags:
            ours.append(f"--{flag}{eq}{value}")
            value_expected = not eq and f"--{flag}" in takes_value
        elif _is_pass(flag):
            pass_flags.append(f"{flag}{{{value}}}" if eq else flag)
        else:
            raise UserError(_unknown_flag(arg, known_flags))

    def error(message: str):
        raise UserError(message)

    parser.error = error  # type: ignore[method-assign]
    namespace = parser.parse_args(ours)
    options = Options(**{k: v for k, v in vars(namespace).items()})
    options.pass_flags = pass_flags
    if options.pipeline is not None and pass_flags:
        raise UserError("'-p/--pass-pipeline' cannot be combined with per-pass flags "
                        f"({', '.join('--' + p for p in pass_flags)})")
    return options


def _is_pass(name: str) -> bool:
    from tilemlir.passes import is_tile_pass
    from tilemlir.passes.pipeline_text import is_upstream_pass

    return is_tile_pass(name) or is_upstream_pass(name)


def _unknown_flag(arg: str, known_flags: set[str]) -> str:
    """Says that `arg` is neither a tile-opt flag nor a pass, with the closest flags."""
    import difflib

    from tilemlir.passes import pass_names
    from tilemlir.passes.pipeline_text import upstream_pass_names

    flag = arg.partition("=")[0]
    candidates = sorted(f for f in known_flags if f.startswith("--"))
    candidates += [f"--{name}" for name in (*pass_names(), *upstream_pass_names())]
    close = difflib.get_close_matches("--" + flag.lstrip("-"), candidates, n=3, cutoff=0.75)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown flag '{flag}'{hint} (flags: {PROG} --help; passes: {PROG} --list-passes)"


def _pipeline_text(options: Options) -> str:
    if options.pipeline is not None:
        return options.pipeline
    return ",".join(options.pass_flags)


def _list_passes() -> str:
    from tilemlir.passes import pass_class, pass_family, pass_names
    from tilemlir.passes.base import option_name
    from tilemlir.passes.pipeline_text import upstream_pass_names

    lines = ["Tile passes (and, marked with their family, the backends' passes):"]
    for name in pass_names():
        cls = pass_class(name)
        family = pass_family(name)
        lines.append(f"  {name:<28} {f'[{family}] ' if family else ''}{cls.summary}")
        hints = typing.get_type_hints(cls)
        for f in cls.options():
            default = f.default
            kind = type(f.default).__name__
            if typing.get_origin(hints[f.name]) is typing.Literal:
                kind = "|".join(typing.get_args(hints[f.name]))
            if isinstance(default, bool):
                default = "true" if default else "false"
            elif isinstance(default, tuple):
                default = ",".join(map(str, default)) or "(unset)"
            elif default == "":
                default = "(unset)"
            read_by = f"  (read by {', '.join(f.metadata['families'])})" if "families" in f.metadata else ""
            lines.append(f"      {option_name(f.name)}={kind:<8} default {default}{read_by}")
    upstream = upstream_pass_names()
    lines.append("")
    lines.append(f"Upstream MLIR passes ({len(upstream)}; options as in mlir-opt --help):")
    lines.extend(f"  {name}" for name in upstream)
    return "\n".join(lines) + "\n"


def _verify_after_parse(pipeline: str) -> str:
    """tile-verify runs after parsing; if the pipeline names tile-verify with
    options (e.g. allow-narrow-accumulator), those options apply there too."""
    from tilemlir.passes.pipeline_text import parse_pipeline

    for element in parse_pipeline(pipeline):
        if element.name == "tile-verify":
            return element.text()
    return "tile-verify"


def _process_chunk(chunk, options: Options, context, verify_pm, pm,
                   stderr_lines: list[str]) -> tuple[bool, str]:
    """Runs one chunk through tile-verify and the pipeline; returns (ok, printed IR)."""
    from mlir import ir

    from tilemlir.diagnostics import (
        ParseFailure,
        collect_diagnostics,
        format_diag,
        mlir_error_diags,
        parse_chunk,
        verify_expectations,
    )

    diags = []
    output = ""
    ok = True
    with collect_diagnostics(context, diags, chunk.source):
        try:
            module = parse_chunk(chunk, context)
        except ParseFailure as failure:
            diags.extend(failure.diags)
            module = None
        if module is not None:
            with context:
                try:
                    verify_pm.run(module)
                    pm.run(module)
                    output = module.get_asm(print_generic_op_form=options.print_generic,
                                            enable_debug_info=options.print_debuginfo) + "\n"
                except ir.MLIRError as error:
                    diags.extend(mlir_error_diags(error, chunk.source))
                    ok = False
    if module is None:
        ok = False
    if options.verify_diagnostics:
        failures = verify_expectations(chunk, diags)
        stderr_lines.extend(format_diag(d, chunk.source) for d in failures)
        return not failures, output
    stderr_lines.extend(format_diag(d, chunk.source) for d in diags)
    if any(d.severity == "error" for d in diags):
        ok = False
    return ok, output


def run(argv: list[str]) -> int:
    from tilemlir.diagnostics import SPLIT_MARKER, split_input
    from tilemlir.dialects import tile
    from tilemlir.passes import build_pipeline, print_pipeline
    from tilemlir.tools.common import read_input, write_output

    options = parse_args(argv)
    from tilemlir.target.cli import handle_target_flags

    target_override, target_report = handle_target_flags(
        options.target, options.target_desc, options.list_targets, options.describe_target,
        options.describe_format)
    if target_report is not None:
        write_output(options.output, target_report)
        return 0
    if options.list_passes:
        write_output(options.output, _list_passes())
        return 0
    if options.export_irdl:
        write_output(options.output, tile.irdl_text())
        return 0

    context = tile.make_context()
    context.allow_unregistered_dialects = options.allow_unregistered_dialect
    pipeline = _pipeline_text(options)
    overrides: dict = {"target": target_override} if target_override else {}
    # Built once, before the input is read (a typo fails fast), and run on every chunk.
    with context:
        verify_pm = build_pipeline(_verify_after_parse(pipeline), context=context)
        pm = build_pipeline(pipeline, context=context, overrides=overrides)
    if options.print_ir_after_all:
        pm.enable_ir_printing(print_after_all=True)
    if options.timing:
        pm.enable_timing()  # MLIR prints the report when `pm` is destroyed
    stderr_lines: list[str] = []
    if options.dump_pass_pipeline:
        with context:
            printed = print_pipeline(pipeline, context=context, overrides=overrides)
        stderr_lines.append(f"Pass Manager with pipeline:\n{printed}\n")

    source = read_input(options.input)
    outputs, all_ok = [], True
    for chunk in split_input(source, options.split_input_file):
        ok, printed = _process_chunk(chunk, options, context, verify_pm, pm, stderr_lines)
        all_ok &= ok
        outputs.append(printed)
    sys.stderr.write("".join(stderr_lines))
    sys.stderr.flush()
    del pm  # the timing report, if any, follows the diagnostics
    if not all_ok:
        return 1
    write_output(options.output, f"{SPLIT_MARKER}\n".join(outputs))
    return 0


def main(argv: list[str] | None = None) -> int:
    from tilemlir.tools.common import guarded_main

    return guarded_main(PROG, run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
