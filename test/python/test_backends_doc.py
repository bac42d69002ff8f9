"""docs/backends.md against the interface it documents (issue 33, item 4).

Each class a family implements, receives or registers has a section of the
document whose heading names it (`### \\`MatrixCore\\``); every public member
of the class (dataclass fields, class attributes, methods, and the instance
attributes listed in INSTANCE_ATTRIBUTES) must be named in that section as a
code span (`min_stages(name)`, `Backend.native_math`, `m`), and every name
in the first column of the section's table must be a member. So a member
added to the interface without a line here, or a line left after its member
is gone, fails this test. Every helper `api.py` exports is named too.
"""

from __future__ import annotations

import dataclasses
import re
from typing import ClassVar

import pytest
from conftest import REPO

from tilemlir.backends.driver import Compilation, Stage
from tilemlir.passes.gemm_facts import MmaChoice
from tilemlir.passes.lower_to_gpu import api
from tilemlir.targets.model import Backend
from tilemlir.targets.registry import ResolvedBackend

DOCUMENT = (REPO / "docs" / "backends.md").read_text()

INTERFACE = (ResolvedBackend, Backend, api.MatrixCore, api.AccumulatorLayout, api.GemmOperands, api.GlobalOperand, MmaChoice,
             api.AccumulatorFragment, api.RegisterFragment, api.LaneIds, api.KernelLowering,
             api.LoweringHooks, api.LoweringOption, Stage, Compilation)

# Members set in a constructor, which the class body does not name.
INSTANCE_ATTRIBUTES = {"LoweringHooks": {"lowering"}, "Compilation": {"tile_input", "spec"}}

HEADING = re.compile(r"^#{2,4} .*$", re.MULTILINE)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
# A code span's leading name, after an optional `Class.` prefix.
LEADING_NAME = re.compile(r"(?:[A-Z]\w*\.)?([A-Za-z_]\w*)")


def members(cls: type) -> set[str]:
    """The public members `cls` itself defines."""
    found = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    found |= set(vars(cls).get("__annotations__", {})) | set(vars(cls))
    found |= INSTANCE_ATTRIBUTES.get(cls.__name__, set())
    return {name for name in found if not name.startswith("_")}


def sections(text: str) -> dict[str, str]:
    """Each heading line -> the text under it, up to the next heading."""
    headings = list(HEADING.finditer(text))
    ends = [h.start() for h in headings[1:]] + [len(text)]
    return {h.group(0): text[h.end():end] for h, end in zip(headings, ends)}


def section_for(name: str, text: str = DOCUMENT) -> str:
    """The one section whose heading names `name` as a code span."""
    found = [body for heading, body in sections(text).items() if name in CODE_SPAN.findall(heading)]
    assert len(found) == 1, f"docs/backends.md has {len(found)} headings naming `{name}` (expected one)"
    return found[0]


def named(text: str) -> set[str]:
    """The names `text` documents: the leading name of each code span."""
    return {m.group(1) for span in CODE_SPAN.findall(text) if (m := LEADING_NAME.match(span))}


def table_names(text: str) -> set[str]:
    """The names in the first column of the table rows of `text`."""
    rows = [line.split("|")[1] for line in text.splitlines()
            if line.startswith("|") and not set(line) <= set("|-: ")]
    return {name for cell in rows[1:] for name in named(cell)} if rows else set()


def undocumented(cls: type, section: str) -> set[str]:
    return members(cls) - named(section)


@pytest.mark.parametrize("cls", INTERFACE, ids=lambda cls: cls.__name__)
def test_every_member_is_documented(cls: type):
    assert undocumented(cls, section_for(cls.__name__)) == set()


@pytest.mark.parametrize("cls", INTERFACE, ids=lambda cls: cls.__name__)
def test_every_documented_member_exists(cls: type):
    section = section_for(cls.__name__)
    # A section may document several classes (the two fragment kinds).
    classes = [c for c in INTERFACE if section_for(c.__name__) == section]
    assert table_names(section) - set().union(*(members(c) for c in classes)) == set()


def test_every_helper_of_the_lowering_interface_is_documented():
    assert set(api.__all__) - named(DOCUMENT) == set()


def test_an_undocumented_member_is_found():
    """The check sees a member the document does not name, in a dataclass
    field, a method and a class attribute alike."""

    @dataclasses.dataclass(frozen=True)
    class Grown(Backend):
        wave_scheduler: str = ""
        flavours: ClassVar[int] = 0

        def chip_aliases(self) -> tuple[str, ...]:
            return ()

    text = DOCUMENT.replace("## 2. The manifest: `Backend`", "## 2. The manifest: `Grown`")
    assert undocumented(Grown, section_for("Grown", text)) == {"wave_scheduler", "chip_aliases", "flavours"}
    assert table_names("| field | what |\n|---|---|\n| `gone`, `family` | x |\n") == {"gone", "family"}
