"""The --report JSON against docs/report.md: one small GEMM compiled for each
family, every key it reports documented (with its type) and every documented
key reported; the top level the same for every family; and the pieces of the
schema that no compile above reaches (a plug-in's partial report, the PTX
reading)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest
from conftest import REPO
from kernel_text import whole_problem_gemm

import tilemlir
from tilemlir.backends.nvidia.report import build_report as nvidia_report
from tilemlir.backends.report_schema import (
    KERNEL_KEYS,
    TOP_LEVEL_KEYS,
    complete_report,
    kernel_entry,
    module_report,
)
from tilemlir.targets import get_target

DOC = REPO / "docs" / "report.md"
TARGETS = {"amdgpu": ("amdgpu:gfx942", "isa"), "nvidia": ("nvidia:sm_90a", "ptx"),
           "metax": ("metax:xcore1000", "maca")}
# The JSON type each word of the documentation's Type column names.
TYPES = {"integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
         "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
         "string": lambda v: isinstance(v, str), "object": lambda v: isinstance(v, dict),
         "array": lambda v: isinstance(v, list), "null": lambda v: v is None}
_ROW = re.compile(r"^\| `([^`]+)` \| ([a-z ]+) \|")


def documented() -> dict[str, list[str]]:
    """docs/report.md's keys (`kernels[].amdgpu.vgpr`) and the types each may have."""
    rows = {}
    for line in DOC.read_text().splitlines():
        match = _ROW.match(line)
        if match:
            assert match.group(1) not in rows, f"{match.group(1)} is documented twice"
            rows[match.group(1)] = match.group(2).split(" or ")
    return rows


def produced(report: dict) -> dict[str, list]:
    """The keys of a report as docs/report.md writes them, each with its values:
    the top level, each entry of kernels, functions and decisions, a kernel's
    family section and its matrix instructions' counts."""
    found: dict[str, list] = {}

    def add(prefix: str, entry: dict) -> None:
        for key, value in entry.items():
            found.setdefault(prefix + key, []).append(value)

    add("", report)
    for kernel in report["kernels"]:
        add("kernels[].", kernel)
        add(f"kernels[].{report['family']}.", kernel[report["family"]])
        for counts in kernel["matrix_instructions"].values():
            add("kernels[].matrix_instructions.*.", counts)
    for listed in ("functions", "decisions"):
        for entry in report[listed] or []:
            add(f"{listed}[].", entry)
    return found


def _applies(path: str, report: dict, values: dict[str, list]) -> bool:
    """Whether a report must have a documented key: not another family's
    section, not inside a value that is null or empty here."""
    family = re.match(r"kernels\[\]\.(\w+)", path)
    if family and family.group(1) in TARGETS and family.group(1) != report["family"]:
        return False
    parent = re.match(r"(.+)\.\*\.", path) or re.match(r"(.+?)\[\]\.", path)
    return parent is None or any(values.get(parent.group(1), []))


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    """A 128x128x64 f16 GEMM's report for each family, as tile-compile prints it (JSON)."""
    text = whole_problem_gemm(128, 128, 64, "f16", "f32")
    return {family: json.loads(json.dumps(tilemlir.compile(text, target=target, emit=emit,
                                                           options={"report": True}).report))
            for family, (target, emit) in TARGETS.items()}


@pytest.mark.parametrize("family", TARGETS)
def test_every_reported_key_is_documented_with_its_type(reports, family):
    rows, found = documented(), produced(reports[family])
    assert sorted(set(found) - set(rows)) == []
    for path, values in found.items():
        wrong = [v for v in values if not any(TYPES[word](v) for word in rows[path])]
        assert wrong == [], f"{path} is documented as {' or '.join(rows[path])}"


@pytest.mark.parametrize("family", TARGETS)
def test_every_documented_key_is_reported(reports, family):
    report = reports[family]
    found = produced(report)
    missing = [path for path in documented() if _applies(path, report, found) and path not in found]
    assert missing == []


def test_every_family_has_the_same_top_level_and_kernel_keys(reports):
    for family, report in reports.items():
        (kernel,) = report["kernels"]
        assert list(report) == list(TOP_LEVEL_KEYS)
        assert list(kernel) == [*KERNEL_KEYS, family]
        assert (report["schema_version"], report["family"], report["target"]) == (1, family, TARGETS[family][0])
        assert kernel["matrix_instructions"] and kernel["config_source"] == "model"
        assert kernel["name"] == report["decisions"][0]["kernel"]


def test_the_documented_keys_are_the_schemas():
    rows = documented()
    assert [k for k in rows if "." not in k and "[]" not in k] == list(TOP_LEVEL_KEYS)
    common = [k.removeprefix("kernels[].") for k in rows if re.fullmatch(r"kernels\[\]\.\w+", k)]
    assert common == [*KERNEL_KEYS, *TARGETS]
    assert all(word in TYPES for types in rows.values() for word in types)


@dataclass
class _Decided:
    """A stand-in for backends.decisions.KernelDecisions: its name and JSON."""

    kernel: str | None

    def as_json(self) -> dict:
        return {"kernel": self.kernel}


TARGET = get_target("metax:xcore1000")
MODEL = {"workgroups": 8, "split_k": 1, "predicted_seconds": 1e-6, "config_source": "model"}


def test_completing_gives_each_kernel_the_configuration_of_its_tile_kernel():
    """By the name the decisions give; a kernel no tile.kernel made (here the
    second) is the user's."""
    report = module_report(TARGET, [kernel_entry("k0", "metax"), kernel_entry("hand_written", "metax")])
    done = complete_report(report, TARGET, seconds={"total": 0.123456}, decisions=[_Decided("k0")],
                           configurations=[MODEL], spill_fallback=None)
    first, second = done["kernels"]
    assert {key: first[key] for key in MODEL} == MODEL
    assert (second["workgroups"], second["config_source"]) == (None, "user")
    assert (done["decisions"], done["compile_seconds"]) == ([{"kernel": "k0"}], {"total": 0.1235})
    # Unnamed (lowering not reached), one per kernel: matched in order.
    again = complete_report(module_report(TARGET, [kernel_entry("k0", "metax")]), TARGET, seconds={},
                            decisions=[_Decided(None)], configurations=[MODEL], spill_fallback=None)
    assert again["kernels"][0]["config_source"] == "model"


def test_a_plug_ins_partial_report_gets_every_key():
    """A backend from outside that builds its report by hand still gives the
    documented shape: missing keys null (kernels: [])."""
    done = complete_report({"target": "metax:xcore1000", "kernels": [{"name": "k", "own": 1}]}, TARGET,
                           seconds={}, decisions=[], configurations=[], spill_fallback=None)
    assert list(done) == list(TOP_LEVEL_KEYS) and done["schema_version"] == 1
    (kernel,) = done["kernels"]
    assert list(kernel) == [*KERNEL_KEYS, "own"] and kernel["threads"] is None
    assert complete_report({}, TARGET, seconds={}, decisions=[], configurations=[],
                           spill_fallback=None)["kernels"] == []


PTX = """\
.extern .shared .align 1024 .b8 __dynamic_shmem__0[];
.shared .align 4 .b32 module_scratch[8];

.visible .entry first(
\t.param .u64 first_param_0
)
.reqntid 64, 2, 1
{
\t.shared .align 8 .b8 __mbarrier[32];
\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1}, {%r1}, {%r2}, {%f1};
\t@%p1 mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1}, {%r1}, {%r2}, {%f1};
\tld.shared.b32 %r3, [module_scratch];
\tbar.sync 0;
}
.visible .entry second(
)
{
\tret;
}
"""


def test_nvidia_kernels_are_read_from_the_ptx_and_the_launches():
    """threads from .reqntid, else the launches' block; shared memory static
    (in the entry and the module-scope arrays it uses) plus dynamic; matrix
    instructions by full name, predicated ones too."""
    launches = [{"kernel": "first", "grid": [1, 1, 1], "block": [64, 2, 1], "dynamic_shared_bytes": 1024},
                {"kernel": "second", "grid": [1, 1, 1], "block": [32, 1, 1], "dynamic_shared_bytes": 0}]
    metadata = {"functions": [{"entry": "f", "arguments": [], "launches": launches}]}
    report = nvidia_report(PTX, metadata, get_target("nvidia:sm_90a"))
    first, second = report["kernels"]
    assert (first["name"], first["threads"], first["shared_bytes"]) == ("first", 128, 32 + 4 * 8 + 1024)
    assert first["matrix_instructions"] == {
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32": {"main_loop": None, "total": 2}}
    assert (first["nvidia"]["ptx_instructions"]["bar.sync"], first["nvidia"]["dynamic_shared_bytes"]) == (1, 1024)
    assert (second["threads"], second["shared_bytes"], second["matrix_instructions"]) == (32, 0, {})
    assert report["functions"] is metadata["functions"] and first["registers"] is None
