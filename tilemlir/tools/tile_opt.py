"""tile-opt: mlir-opt for tile IR.

    tile-opt FILE -p 'builtin.module(tile-verify,func.func(canonicalize),cse)' [-o OUT]
    tile-opt FILE --tile-verify --canonicalize          # per-pass flags, in order
    tile-opt FILE --split-input-file --verify-diagnostics
    tile-opt --help | --version | --list-passes | --show-dialects

Flags are spelled as for mlir-opt, with one dash or two (`-pass-pipeline=...`,
`-split-input-file`, `-canonicalize`; `tools/common.ToolParser`, which the
other tools share). Tile passes and every upstream MLIR
pass mix in one pipeline; `--dump-pass-pipeline` prints it in a form `-p`
reads back (tile passes with their options, anchors kept). The input is
verified after parsing (MLIR's verifier, then tile-verify). Errors print as
`file:line:col: error: message`; the exit status is 1 and no output file is
left behind.
"""

from __future__ import annotations

import sys
import typing
from dataclasses import dataclass, field

PROG = "tile-opt"

_EPILOG = """\
passes:
  Any tile pass (below) or upstream MLIR pass (tile-opt --list-passes names
  them; their options as in mlir-opt --help) may be given as a flag, e.g.
  --tile-verify --canonicalize --cse, or with options as
  --canonicalize='max-iterations=3' or --tile-tiling='block=128,128,32 stages=3'.
  Flags run in the order given; a pass's options come only after '='. As in
  mlir-opt, every long flag may also be written with one dash, and a flag's
  value (-o, -p, --target, ...) after '=' or as the next argument.

exit status: 0 on success, 1 on any error (never a Python traceback).
"""


def _epilog() -> str:
    """The help's epilog: how passes are given, then every tile pass with its
    options (built only when --help is asked for)."""
    lines = ["tile passes, with their options (OPTION=KIND, its default, and the pass's own",
             "documentation of them):"]
    for entry in _tile_passes():
        family = f"[{entry.family}] " if entry.family else ""
        lines.append(f"  --{entry.name:<30} {family}{entry.summary}")
        lines.extend(f"      {option}{': ' + said if said else ''}"
                     for option, said in zip(entry.options, entry.descriptions))
        lines.extend(f"    {line}" if line else "" for line in entry.documented)
    return _EPILOG.replace("\nexit status", "\n" + "\n".join(lines) + "\n\nexit status")


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
    print_ir_before_all: bool = False
    disable_threading: bool = False
    show_dialects: bool = False
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


def _parser():
    from tilemlir.dialects import attributes
    from tilemlir.targets.cli import add_target_query_flags
    from tilemlir.tools.common import ToolParser

    parser = ToolParser(
        PROG,
        flags_hint=f"flags: {PROG} --help; passes: {PROG} --list-passes",
        description="Optimizer driver for tile IR: tile passes and upstream MLIR passes in one pipeline.",
        epilog=_epilog,
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
    parser.add_argument("--mlir-print-ir-before-all", dest="print_ir_before_all", action="store_true",
                        help="print the IR before every pass (to stderr)")
    parser.add_argument("--mlir-disable-threading", dest="disable_threading", action="store_true",
                        help="run MLIR on this thread only (accepted as mlir-opt's; tile-opt always "
                             "does, since tile passes and diagnostics call into Python)")
    parser.add_argument("--show-dialects", action="store_true",
                        help="list the dialects the context has registered (tile among them) and exit")
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
    """Reads the command line as mlir-opt does (`ToolParser`), with
    `--NAME[=OPTIONS]` for any registered pass (run in the order given)."""
    from tilemlir.diagnostics import UserError

    pass_flags: list[str] = []

    def claim(name: str, value: str | None) -> bool:
        if not _is_pass(name):
            return False
        pass_flags.append(name if value is None else f"{name}{{{value}}}")
        return True

    namespace = _parser().parse_command_line(argv, claim=claim, more_flags=_all_pass_names)
    options = Options(**vars(namespace))
    options.pass_flags = pass_flags
    if options.pipeline is not None and pass_flags:
        raise UserError("'-p/--pass-pipeline' cannot be combined with per-pass flags "
                        f"({', '.join('--' + p for p in pass_flags)})")
    return options


def _is_pass(name: str) -> bool:
    from tilemlir.passes import is_tile_pass
    from tilemlir.passes.pipeline_text import is_upstream_pass

    return is_tile_pass(name) or is_upstream_pass(name)


def _all_pass_names() -> list[str]:
    """Tile and upstream pass names: what an unknown flag may have meant too."""
    from tilemlir.passes import pass_names
    from tilemlir.passes.pipeline_text import upstream_pass_names

    return [*pass_names(), *upstream_pass_names()]


def _pipeline_text(options: Options) -> str:
    if options.pipeline is not None:
        return options.pipeline
    return ",".join(options.pass_flags)


@dataclass(frozen=True)
class _TilePassEntry:
    name: str
    family: str | None
    summary: str
    options: list[str]  # one line per option: OPTION=KIND, its default, who reads it
    descriptions: list[str]  # each option's `help` metadata, where it declares one ("" if not)
    documented: list[str]  # the "Options" section of the pass's docstring (its spec)


def _tile_passes() -> list[_TilePassEntry]:
    """Every registered tile pass (the backends' too) with its options, for
    --list-passes and --help."""
    from tilemlir.passes import pass_class, pass_family, pass_names
    from tilemlir.passes.base import option_name

    entries = []
    for name in pass_names():
        cls = pass_class(name)
        hints = typing.get_type_hints(cls)
        options, descriptions = [], []
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
            options.append(f"{option_name(f.name)}={kind:<8} default {default}{read_by}")
            descriptions.append(f.metadata.get("help", ""))
        entries.append(_TilePassEntry(name, pass_family(name), cls.summary, options, descriptions,
                                      _documented_options(sys.modules[cls.__module__].__doc__ or "")))
    return entries


def _documented_options(docstring: str) -> list[str]:
    """The "Options:" section of a pass module's docstring (its contract, STYLE
    rule 1): the header line and the indented lines under it."""
    lines = docstring.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Options")), None)
    if start is None:
        return []
    section = [lines[start]]
    for line in lines[start + 1:]:
        if line and not line[0].isspace():
            break
        section.append(line.rstrip())
    while section and not section[-1]:
        section.pop()
    return section


def _list_passes() -> str:
    from tilemlir.passes.pipeline_text import upstream_pass_names

    lines = ["Tile passes (and, marked with their family, the backends' passes):"]
    for entry in _tile_passes():
        lines.append(f"  {entry.name:<28} {f'[{entry.family}] ' if entry.family else ''}{entry.summary}")
        lines.extend(f"      {option}" for option in entry.options)
    upstream = upstream_pass_names()
    lines.append("")
    lines.append(f"Upstream MLIR passes ({len(upstream)}; options as in mlir-opt --help):")
    lines.extend(f"  {name}" for name in upstream)
    return "\n".join(lines) + "\n"


def _show_dialects(context) -> str:
    """mlir-opt's --show-dialects line, for this context: MLIR's bindings do
    not enumerate registered dialects, so every dialect the pinned mlir-opt
    (the same LLVM release) or the bindings' modules name is looked up in the
    context, and those it has are listed, tile among them."""
    import re
    import subprocess
    from pathlib import Path

    import mlir

    from tilemlir.dialects import tile

    names = {tile.DIALECT_NAME}
    roots = [Path(root) for root in mlir.__path__]
    for binary in [root / "bin" / "mlir-opt" for root in roots] + [Path("/usr/bin/mlir-opt-22")]:
        try:
            listed = subprocess.run([str(binary), "--show-dialects"], capture_output=True, text=True,
                                    timeout=30, check=False).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        names.update(re.findall(r"[\w.]+", listed.partition(":")[2]))
        break
    for generated in (path for root in roots for path in (root / "dialects").glob("_*_ops_gen.py")):
        names.update(re.findall(r'DIALECT_NAMESPACE = "([\w.]+)"', generated.read_text(encoding="utf-8")))

    def registered(name: str) -> bool:
        try:
            context.dialects[name]
        except (IndexError, ValueError):
            return False
        return True

    return f"Available Dialects: {','.join(sorted(n for n in names if registered(n)))}\n"


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
    from tilemlir.targets.cli import handle_target_flags

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
    if options.disable_threading:
        context.enable_multithreading(False)  # make_context already does: Python passes need it
    if options.show_dialects:
        write_output(options.output, _show_dialects(context))
        return 0
    pipeline = _pipeline_text(options)
    overrides: dict = {"target": target_override} if target_override else {}
    # Built once, before the input is read (a typo fails fast), and run on every chunk.
    with context:
        verify_pm = build_pipeline(_verify_after_parse(pipeline), context=context)
        pm = build_pipeline(pipeline, context=context, overrides=overrides)
    if options.print_ir_after_all or options.print_ir_before_all:
        pm.enable_ir_printing(print_before_all=options.print_ir_before_all,
                              print_after_all=options.print_ir_after_all)
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
