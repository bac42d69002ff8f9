"""Descriptor files beyond one file read alone: a descriptor built on a base
(merge rules, sources, cycles), the TOML a target is written back as (it loads
to an equal target), how a target read from a user's file is named, and the
rows each family refuses because its lowering could not emit them."""

from __future__ import annotations

import dataclasses
import re
import textwrap
import typing
from pathlib import Path

import pytest
from conftest import REPO

from tilemlir.targets import (
    DescriptorError,
    TargetError,
    get_target,
    load_target_file,
    target_names,
)
from tilemlir.targets.descriptor import load_descriptor
from tilemlir.targets.model import Target, Unknown
from tilemlir.targets.registry import backend, packaged_target
from tilemlir.targets.toml_writer import descriptor_data, descriptor_toml

INPUTS = REPO / "test/Backends/Inputs"
GFX942 = REPO / "tilemlir/backends/amdgpu/targets/gfx942.toml"


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


# --------------------------------------------------------------------------
# Bases
# --------------------------------------------------------------------------


def test_a_derived_descriptor_overrides_key_by_key():
    base = get_target("amdgpu:gfx942")
    derived = load_target_file(INPUTS / "derived_gfx942.toml")
    # Tables merge a key at a time: the rest of [compute] and [memory] is gfx942's.
    assert derived.compute == dataclasses.replace(base.compute, compute_units=228, clock_mhz=2100)
    assert derived.memory.hbm_gib == base.memory.hbm_gib and not derived.memory.l2_mib
    assert derived.registers == base.registers and derived.describes == "MI300A"
    # [sources] keeps the base's keys and adds the file's own.
    assert dict(derived.sources) == {**dict(base.sources), "TEST": "made up for the test suite"}
    # An array replaces the base's array entirely: one row, not gfx942's 33 plus one.
    assert [row.name for row in derived.mma] == ["v_mfma_f32_32x32x8_f16"]
    assert derived.matrix.fp8_formats == base.matrix.fp8_formats
    assert derived.bases == ("amdgpu:gfx942",)


def test_facts_keep_the_file_that_wrote_them():
    derived = load_target_file(INPUTS / "derived_gfx942.toml")
    twice = load_target_file(INPUTS / "derived_twice.toml")
    assert derived.file_of("compute.clock_mhz") == derived.path
    assert derived.file_of("compute.wave_size") == str(GFX942)
    assert twice.file_of("compute.clock_mhz") == twice.path  # overridden again
    assert twice.file_of("compute.compute_units") == derived.path
    assert twice.file_of("registers.sgprs_per_wave") == str(GFX942)
    assert twice.bases == (derived.path, "amdgpu:gfx942")
    # An unknown fact is reported in the file that wrote it.
    with pytest.raises(TargetError, match=r"'memory.l2_mib' is not publicly known \(written as "
                                          r"unknown in .*derived_gfx942.toml\)"):
        twice.require("memory.l2_mib")


def test_a_base_file_is_relative_to_the_file_naming_it(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    _write(tmp_path / "sub", "fast.toml", f'base = "{GFX942}"\n[compute]\nclock_mhz = 2400\n')
    top = _write(tmp_path, "top.toml", 'base = "sub/fast.toml"\ndescribes = "MI325X"\n')
    monkeypatch.chdir("/")
    target = load_target_file(top)
    assert target.compute.clock_mhz == 2400 and target.describes == "MI325X"


def test_a_packaged_target_names_its_base_by_name_only(tmp_path):
    path = _write(tmp_path, "gfx942.toml", f'base = "{GFX942}"\n')
    with pytest.raises(DescriptorError, match="a packaged target names its base as family:name"):
        load_descriptor(path, backend, expected_family="amdgpu", expected_name="gfx942",
                        packaged_target=packaged_target)


@pytest.mark.parametrize("spec, message", [
    ("gfx942", "expected a target name"),
    ("amdgpu:", "expected a target name"),
    ("nosuch:gfx942", "no backend family 'nosuch'"),
    ("amdgpu:gfx9420", "did you mean 'amdgpu:gfx942'"),
])
def test_bad_base_names(tmp_path, spec, message):
    path = _write(tmp_path, "bad.toml", f'base = "{spec}"\n')
    with pytest.raises(DescriptorError, match=rf"bad.toml: field 'base': .*{message}"):
        load_target_file(path)


def test_a_base_that_is_not_a_string(tmp_path):
    path = _write(tmp_path, "bad.toml", "base = 942\n")
    with pytest.raises(DescriptorError, match="field 'base': expected a target name .* got 942"):
        load_target_file(path)


def test_a_file_that_is_its_own_base(tmp_path):
    path = _write(tmp_path, "self.toml", 'base = "self.toml"\n')
    with pytest.raises(DescriptorError, match=r"self.toml: field 'base': its bases come back to "
                                              r".*self.toml \(.*self.toml -> .*self.toml\)"):
        load_target_file(path)


def test_a_derived_file_is_checked_as_a_whole(tmp_path):
    """The merged descriptor passes every check a plain one does."""
    path = _write(tmp_path, "over.toml", 'base = "amdgpu:gfx942"\n[registers]\narch_vgprs_max = 512\n')
    with pytest.raises(DescriptorError, match="over.toml: field 'registers.acc_vgprs_max': "
                                              "arch_vgprs_max \\+ acc_vgprs_max = 768"):
        load_target_file(path)
    typo = _write(tmp_path, "typo.toml", 'base = "amdgpu:gfx942"\n[compute]\nclock_mzh = 1\n')
    with pytest.raises(DescriptorError, match="did you mean 'compute.clock_mhz'"):
        load_target_file(typo)


# --------------------------------------------------------------------------
# Written back as TOML
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", target_names())
def test_every_shipped_target_round_trips_through_toml(tmp_path, name):
    target = get_target(name)
    path = tmp_path / "written.toml"
    path.write_text(descriptor_toml(target))
    back = load_target_file(path)
    assert back == target
    assert descriptor_data(back) == descriptor_data(target)
    assert descriptor_toml(back).splitlines()[2:] == descriptor_toml(target).splitlines()[2:]


@pytest.mark.parametrize("file", ["derived_gfx942.toml", "derived_twice.toml", "minimal.toml"])
def test_descriptors_of_the_users_round_trip_through_toml(tmp_path, file):
    target = load_target_file(INPUTS / file)
    path = tmp_path / "written.toml"
    path.write_text(descriptor_toml(target))
    assert load_target_file(path) == target


def test_strings_are_escaped_for_toml(tmp_path):
    target = get_target("amdgpu:gfx942")
    odd = dataclasses.replace(target, sources=(('quoted "key"', 'a "quote", a \\ and é'),))
    path = tmp_path / "odd.toml"
    path.write_text(descriptor_toml(odd))
    assert load_target_file(path).sources == odd.sources


# --------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------


def _numeric_fields(cls: type, prefix: tuple = ()) -> list[tuple]:
    """The path of every number the schema reads, from the dataclasses
    themselves (so a new field is covered): a table's fields, the first row of
    a list of rows, the first key of a mapping of numbers."""
    paths = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.metadata.get("internal"):
            continue
        hint = hints[f.name]
        args = [a for a in typing.get_args(hint) if a is not Unknown] or [hint]
        base = args[0] if len(args) == 1 else hint
        item = typing.get_args(base)[0] if typing.get_origin(base) is tuple else None
        if base in (int, float):
            paths.append((*prefix, f.name))
        elif dataclasses.is_dataclass(base):
            paths += _numeric_fields(base, (*prefix, f.name))
        elif dataclasses.is_dataclass(item):
            paths += _numeric_fields(item, (*prefix, f.name, 0))
        elif item is int:
            paths.append((*prefix, f.name, 0))
        elif f.metadata.get("mapping") and f.metadata["mapping"] != "str":
            paths.append((*prefix, f.name, "key"))
    return paths


def _replaced(value, path: tuple, new):
    """`value` with the number at `path` replaced by `new` ("key": a mapping's first pair)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if head == "key":
        (key, _), *pairs = value
        return ((key, new), *pairs)
    if isinstance(head, int):
        return (_replaced(value[head], rest, new), *value[head + 1:])
    return dataclasses.replace(value, **{head: _replaced(getattr(value, head), rest, new)})


def _shown(path: tuple, target: Target) -> str:
    where, node = "", target
    for part in path:
        if part == "key":
            return f"{where}.{node[0][0]}"
        if isinstance(part, int):
            where, node = f"{where}[{part}]", node[part]
        else:
            where, node = f"{where}.{part}" if where else part, getattr(node, part)
    return where


NUMERIC_FIELDS = _numeric_fields(Target)


def test_the_schema_reads_these_numbers():
    """The walk above finds the float facts the cost model divides by."""
    shown = {".".join(str(p) for p in path) for path in NUMERIC_FIELDS}
    assert {"memory.hbm_bandwidth_gbps", "memory.latency_clocks", "memory.l2_mib",
            "matrix.instructions.0.cycles", "peak_dense_tflops.key", "compute.clock_mhz"} <= shown


@pytest.mark.parametrize("path", NUMERIC_FIELDS, ids=lambda path: ".".join(map(str, path)))
def test_numbers_must_be_finite(tmp_path, path):
    """TOML spells nan, inf and -inf; no fact of a descriptor may be one (the
    cost model predicted "nan us" from a nan bandwidth)."""
    gfx942 = get_target("amdgpu:gfx942")
    where = _shown(path, gfx942)
    for value in (float("nan"), float("inf"), float("-inf")):
        file = tmp_path / "bad.toml"
        file.write_text(descriptor_toml(_replaced(gfx942, path, value)))
        with pytest.raises(DescriptorError, match=re.escape(f"{file}: field '{where}'")
                           + ".*" + re.escape(f"got {value!r}")):
            load_target_file(file)


# --------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------


def test_a_users_descriptor_is_named_by_its_file(tmp_path):
    copy = tmp_path / "my_gfx942.toml"
    copy.write_text(GFX942.read_text())
    mine = load_target_file(copy)
    assert mine == get_target("amdgpu:gfx942")  # the same facts ...
    assert str(mine) == "amdgpu:gfx942 (from my_gfx942.toml)"  # ... but not the packaged target
    assert mine.qualified_name == "amdgpu:gfx942"
    # The packaged file itself, however it is reached, is the packaged target.
    assert str(load_target_file(GFX942)) == "amdgpu:gfx942"
    with pytest.raises(TargetError, match="is how a target read from a descriptor file prints; "
                                          "name the file itself"):
        get_target(str(mine))


# --------------------------------------------------------------------------
# Rows a family's lowering cannot emit
# --------------------------------------------------------------------------


@pytest.mark.parametrize("file, message", [
    ("wmma_in_amdgpu.toml", "is a WMMA, but TEST1 in wave64 is not a WMMA target; the amdgpu lowering emits"),
    ("mfma_shape_mismatch.toml", "says 32x32x8, but m, n, k = 16, 16, 16"),
    ("hmma_in_nvidia.toml", "is not a PTX mma.sync or wgmma instruction"),
    ("metax_wrong_builtin.toml", "is not the one the lowering calls"),
])
def test_rows_the_family_cannot_lower_are_refused(file, message):
    with pytest.raises(DescriptorError, match=rf"{file}: field 'matrix.instructions\[0\]' .*{message}"):
        load_target_file(INPUTS / file)


def test_metax_rows_are_16x16_wave64_builtins(tmp_path):
    def with_row(row: str, wave: int = 64) -> Path:
        return _write(tmp_path, "x.toml", f"""\
            base = "metax:xcore1000"
            [compute]
            wave_size = {wave}
            [matrix]
            instructions = [{row}]
            """)

    row = ('{{ name = "{name}", builtin = "__builtin_mxc_{name}", intrinsic = "llvm.mxc.mma", '
           'm = {m}, n = {n}, k = {k}, blocks = 1, a = "f16", b = "f16", c = "f32", cycles = "unknown" }}')
    with pytest.raises(DescriptorError, match="a 32x32 instruction"):
        load_target_file(with_row(row.format(name="mma_32x32x8f16", m=32, n=32, k=8)))
    with pytest.raises(DescriptorError, match="is not a MetaX MMA built-in name"):
        load_target_file(with_row(row.format(name="wmma_16x16x16f16", m=16, n=16, k=16)))
    with pytest.raises(DescriptorError, match="MetaX MMAs run on a wave of 64 lanes, not 32"):
        load_target_file(with_row(row.format(name="mma_16x16x16f16", m=16, n=16, k=16), wave=32))
    assert load_target_file(with_row(row.format(name="mma_16x16x16f16", m=16, n=16, k=16))).mma


def test_the_metax_check_calls_the_builtin_the_lowering_calls():
    from tilemlir.backends.metax import matrix, mma_rows

    assert matrix.builtin_name("mma_16x16x16f16") == mma_rows.BUILTIN_PREFIX + "mma_16x16x16f16"


def test_the_nvidia_check_knows_the_shapes_the_lowering_selects():
    from tilemlir.backends.nvidia import matrix, mma_rows

    for m, n, k in matrix.SHAPES.values():
        assert f"m{m}n{n}k{k}" in mma_rows.SUPPORTED


# --------------------------------------------------------------------------
# "none", a family's own table, its row keys
# --------------------------------------------------------------------------


@pytest.mark.parametrize("text, message", [
    # RDNA compiles wave32 only
    ('base = "amdgpu:gfx1100"\nname = "w64"\n[compute]\nwave_size = 64\n',
     "field 'compute.wave_size': gfx1100 runs wave32 code from the amdgpu lowering"),
    # no AGPRs but an offset for them (and the other way round)
    ('base = "amdgpu:gfx942"\nname = "x"\n[amdgpu]\nacc_offset_granule = "none"\n',
     "field 'amdgpu.acc_offset_granule': is none while registers.acc_vgprs_max is 256"),
    ('base = "amdgpu:gfx1100"\nname = "x"\n[amdgpu]\nacc_offset_granule = 4\n',
     "field 'amdgpu.acc_offset_granule': is 4 while registers.acc_vgprs_max is none"),
    # "none" where every GPU has the thing
    ('base = "amdgpu:gfx942"\nname = "x"\n[registers]\nvgprs_per_lane = "none"\n',
     "field 'registers.vgprs_per_lane': expected a positive integer or \"unknown\", got \"none\""),
    # a fact that moved to the family's table
    ('base = "amdgpu:gfx942"\nname = "x"\n[memory]\nbuffer_load_lds = []\n',
     "unknown field 'memory.buffer_load_lds'; it moved to 'amdgpu.buffer_load_lds'"),
    # a family table's own field checked like any other
    ('base = "amdgpu:gfx942"\nname = "x"\n[amdgpu]\nacc_offset_granul = 4\n',
     "unknown field 'amdgpu.acc_offset_granul'; did you mean 'amdgpu.acc_offset_granule'?"),
    # a row key of another family's
    (('base = "amdgpu:gfx942"\nname = "x"\n[matrix]\ninstructions = [{ name = "v_mfma_f32_16x16x16_f16", '
     'intrinsic = "llvm.amdgcn.mfma.f32.16x16x16f16", builtin = "b", m = 16, n = 16, k = 16, blocks = 1, '
     'a = "f16", b = "f16", c = "f32", cycles = 16 }]\n'),
     "unknown field 'matrix.instructions[0].builtin'"),
])
def test_none_family_tables_and_row_keys_are_checked(tmp_path, text, message):
    path = _write(tmp_path, "bad.toml", text)
    with pytest.raises(DescriptorError, match=re.escape(message)):
        load_target_file(path)


def test_none_and_the_family_table_read_write_and_inherit(tmp_path):
    """`none` prints back as none; a derived file overrides one fact of the
    family's table and keeps the rest, which names the file that wrote it."""
    from tilemlir.targets.model import NONE, is_stated

    rdna = get_target("amdgpu:gfx1100")
    assert rdna.registers.acc_vgprs_max is NONE and not is_stated(NONE)
    assert 'acc_vgprs_max = "none"' in descriptor_toml(rdna)
    assert "[amdgpu]" in descriptor_toml(rdna)
    derived = load_target_file(_write(tmp_path, "lds.toml", '''
        base = "amdgpu:gfx942"
        name = "gfx942-x3"
        [amdgpu]
        buffer_load_lds = ["buffer_load_dword", "buffer_load_dwordx3"]
        '''))
    gfx942 = get_target("amdgpu:gfx942")
    assert derived.family_facts.buffer_load_lds == ("buffer_load_dword", "buffer_load_dwordx3")
    assert derived.family_facts.acc_offset_granule == gfx942.family_facts.acc_offset_granule == 4
    assert derived.file_of("amdgpu.buffer_load_lds").endswith("lds.toml")
    assert derived.file_of("amdgpu.acc_offset_granule").endswith("gfx942.toml")
    assert derived.require("amdgpu.acc_offset_granule") == 4
    with pytest.raises(TargetError, match=r"has no 'registers.acc_vgprs_max' \(written as none"):
        rdna.require("registers.acc_vgprs_max")
