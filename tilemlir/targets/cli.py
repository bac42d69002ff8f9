"""The target flags every tool shares: --target, --target-desc, --list-targets,
--describe-target[=T] [--format json|toml]. Tools add the last three with
`add_target_query_flags`, call `handle_target_flags` first thing and either print
what it returns and exit, or pass the override on to their passes.

`--describe-target` prints JSON by default (derived numbers included: each
row's flops per CU cycle, whether it is full rate); `--format toml` prints the
descriptor file itself, which `--target-desc` loads back to an equal target.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tilemlir.targets.model import Target, TargetError
from tilemlir.targets.registry import (
    backend,
    family_targets,
    get_target,
    load_target_file,
    provider,
    report_broken_family,
    usable_families,
)
from tilemlir.targets.toml_writer import descriptor_toml

_ROWS_PLACEHOLDER = "@@instructions@@"


def describe_json(target: Target) -> str:
    """The resolved descriptor as JSON: nested objects as in the file, unknown
    facts as the string "unknown", one matrix instruction per line."""
    data = target.as_dict()
    rows = data["matrix"]["instructions"]
    data["matrix"]["instructions"] = _ROWS_PLACEHOLDER
    text = json.dumps(data, indent=2)
    body = ",\n".join(f"      {json.dumps(row)}" for row in rows)
    return text.replace(json.dumps(_ROWS_PLACEHOLDER), f"[\n{body}\n    ]" if rows else "[]") + "\n"


def _target_line(target: Target) -> str:
    products = ", ".join(target.products)
    return f"  {target.qualified_name:<20} {target.architecture!s:<9} {products}"


def list_targets_text(extra: Target | None = None) -> str:
    lines = ["Targets, by backend family (select one with --target=FAMILY:NAME):"]
    for family in usable_families():  # a broken plug-in is reported and skipped
        try:
            targets = family_targets(family)
        except TargetError as error:
            report_broken_family(family, error)
            continue
        lines.append(f"{family}: {backend(family).summary} [{provider(family)}]")
        lines.extend(_target_line(t) for t in targets)
    if extra is not None:
        lines.append(f"From --target-desc {extra.path}:")
        lines.append(_target_line(extra))
    return "\n".join(lines) + "\n"


DESCRIBE_FORMATS = {"json": describe_json, "toml": descriptor_toml}


def add_target_query_flags(parser: argparse.ArgumentParser) -> None:
    """--list-targets, --describe-target[=T] and --format, as every tool spells them."""
    parser.add_argument("--list-targets", action="store_true", help="list the known targets and exit")
    parser.add_argument("--describe-target", nargs="?", const="", metavar="FAMILY:NAME",
                        help="print a target's resolved descriptor and exit "
                             "(without a value: the --target/--target-desc one)")
    parser.add_argument("--format", dest="describe_format", choices=tuple(DESCRIBE_FORMATS),
                        help="what --describe-target prints: json (the default; with derived "
                             "numbers) or toml (a descriptor file --target-desc reads back)")


def handle_target_flags(
    target: str | None,
    target_desc: str | None,
    list_targets: bool = False,
    describe_target: str | None = None,
    describe_format: str | None = None,
) -> tuple[str | None, str | None]:
    """Validates the flags before any input is read. Returns (override, report):
    `override` is what the passes' `target` option receives (a `family:name`, or
    the absolute path of a --target-desc file); `report` is text to print and
    exit with (--list-targets, --describe-target in `describe_format`, json by
    default), else None."""
    if describe_format is not None and describe_target is None:
        raise TargetError(f"--format {describe_format} says how --describe-target prints; "
                          "give --describe-target[=FAMILY:NAME] too")
    if target is not None and target_desc is not None:
        raise TargetError(
            "--target and --target-desc both given; use one (--target-desc names the target itself)"
        )
    selected: Target | None = None
    override: str | None = None
    if target_desc is not None:
        selected = load_target_file(target_desc)
        override = str(Path(target_desc).resolve())
    elif target is not None:
        selected = get_target(target)
        override = selected.path if Path(target).suffix == ".toml" else selected.qualified_name
    if list_targets:
        return override, list_targets_text(selected if target_desc else None)
    if describe_target is not None:
        if describe_target:
            chosen = (selected if selected is not None and selected.qualified_name == describe_target
                      else None)
            chosen = chosen or get_target(describe_target)
        elif selected is not None:
            chosen = selected
        else:
            raise TargetError(
                "--describe-target needs a target: --describe-target=FAMILY:NAME, "
                "or together with --target or --target-desc"
            )
        return override, DESCRIBE_FORMATS[describe_format or "json"](chosen)
    return override, None
