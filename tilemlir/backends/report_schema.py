"""The shape of `tile-compile --report`'s JSON, the same for every family.

    {"schema_version": 1, "tool": "tilemlir 0.2.0", "target": "amdgpu:gfx942", "family": "amdgpu",
     "kernels": [{"name": "softmax_kernel0", "threads": 128, "registers": 50, ...,
                  "config_source": "user", "amdgpu": {...the family's own fields...}}],
     "functions": null, "decisions": [...], "compile_seconds": {...},
     "spill_fallback": null, "tuning": null}

Every key of `TOP_LEVEL_KEYS` and of `KERNEL_KEYS` is always present; a value a
family cannot know is null (nvidia's registers: ptxas allocates them, and it
does not run here). Fields only one family has live in the kernel's section
named after the family. docs/report.md describes every key, and
test/python/test_report_schema.py checks it against real reports.

A backend's report stage builds the report with `module_report` and
`kernel_entry`; the driver (compiler.py) completes it with `complete_report`:
the stage times, the decisions, each kernel's configuration, the spill fallback.
`SCHEMA_VERSION` changes whenever a key is removed, renamed or changes meaning;
adding a key keeps it.
"""

from __future__ import annotations

from tilemlir.targets.model import Target

SCHEMA_VERSION = 1

TOP_LEVEL_KEYS = ("schema_version", "tool", "target", "family", "kernels", "functions",
                  "decisions", "compile_seconds", "spill_fallback", "tuning")

# How each kernel's configuration was decided (passes/kernel_facts.configuration_of).
CONFIGURATION_KEYS = ("workgroups", "split_k", "predicted_seconds", "config_source")

# A kernel's fields every family fills (null where it cannot know), then its configuration.
KERNEL_KEYS = ("name", "threads", "registers", "shared_bytes", "scratch_bytes", "spills",
               "occupancy", "matrix_instructions", *CONFIGURATION_KEYS)

# What a kernel's configuration is when no tile.kernel made it (hand-written GPU-level IR).
USER_WRITTEN = {"workgroups": None, "split_k": None, "predicted_seconds": None, "config_source": "user"}


def tool_name() -> str:
    """`tilemlir VERSION`, the compiler that wrote the report."""
    from tilemlir.version import __version__

    return f"tilemlir {__version__}"


def kernel_entry(name: str, family: str, *, threads: int | None = None, registers: int | None = None,
                 shared_bytes: int | None = None, scratch_bytes: int | None = None,
                 spills: int | None = None, occupancy: int | None = None,
                 matrix_instructions: dict[str, dict[str, int | None]] | None = None,
                 family_fields: dict | None = None) -> dict:
    """One kernel's entry: the common fields (None where the family cannot
    know them), the configuration (filled by `complete_report`) and the
    family's own fields under the key `family`. `matrix_instructions` maps an
    instruction's name to {"main_loop": n or None, "total": n}."""
    return {"name": name, "threads": threads, "registers": registers, "shared_bytes": shared_bytes,
            "scratch_bytes": scratch_bytes, "spills": spills, "occupancy": occupancy,
            "matrix_instructions": dict(sorted((matrix_instructions or {}).items())),
            **USER_WRITTEN, family: dict(family_fields or {})}


def module_report(target: Target, kernels: list[dict], functions: list[dict] | None = None) -> dict:
    """A report with every top-level key: the kernels a backend found, the
    host functions' launches where the family computes them (else None)."""
    return {"schema_version": SCHEMA_VERSION, "tool": tool_name(), "target": str(target),
            "family": target.family, "kernels": kernels, "functions": functions,
            "decisions": [], "compile_seconds": {}, "spill_fallback": None, "tuning": None}


def complete_report(report: dict, target: Target, *, seconds: dict[str, float], decisions: list,
                    configurations: list[dict], spill_fallback: dict | None) -> dict:
    """The driver's part of a report a backend built: stage times, the tile
    passes' decisions (their JSON), each kernel's configuration and the spill
    fallback, with the keys in the documented order. A kernel gets the
    configuration of the tile.kernel it was lowered from (the decisions name
    it; `configurations` are in the same program order, and without names
    one per kernel is matched in order); a kernel no
    tile.kernel made was written by the user (`USER_WRITTEN`). A plug-in's
    report missing a key gets it (null, or [] for `kernels`)."""
    kernels = report.get("kernels") or []
    made_from = {kernel.kernel: configuration
                 for kernel, configuration in zip(decisions, configurations) if kernel.kernel is not None}
    if not made_from and len(configurations) == len(kernels):  # unnamed: one per tile.kernel, in order
        made_from = {kernel.get("name"): configuration for kernel, configuration in zip(kernels, configurations)}
    for kernel in kernels:
        configuration = made_from.get(kernel.get("name"), USER_WRITTEN)
        kernel.update({key: configuration[key] for key in CONFIGURATION_KEYS})
    report.update({"kernels": [_ordered(kernel, KERNEL_KEYS) for kernel in kernels],
                   "decisions": [kernel.as_json() for kernel in decisions],
                   "compile_seconds": {step: round(value, 4) for step, value in seconds.items()},
                   "spill_fallback": spill_fallback})
    defaults = module_report(target, [])
    return _ordered({**defaults, **report}, TOP_LEVEL_KEYS)


def _ordered(entry: dict, keys: tuple[str, ...]) -> dict:
    """`entry` with `keys` first, in that order (None where missing), then the rest."""
    return {**{key: entry.get(key) for key in keys}, **entry}


def only_kernel(report: dict) -> dict:
    """The kernel entry of a report of exactly one kernel."""
    (kernel,) = report["kernels"]
    return kernel
