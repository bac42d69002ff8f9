"""The hardware-description API: lookup, the selection-facing queries, unknown
facts, the target flags reaching passes, and backends plugged in from outside."""

from __future__ import annotations

import dataclasses
import json
import os
import textwrap
import types
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import REPO, run_tool
from mlir import ir

from tilemlir import targets as target_layer
from tilemlir.passes.base import TilePass
from tilemlir.targets import (
    UNKNOWN,
    DescriptorError,
    TargetError,
    UnknownFactError,
    get_target,
    registry,
    resolve_target,
)
from tilemlir.targets.cli import describe_json

MINIMAL = REPO / "test/Backends/Inputs/minimal.toml"

# --------------------------------------------------------------------------
# Lookup
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", target_layer.target_names())
def test_str_parses_back(name: str):
    target = get_target(name)
    assert str(target) == name
    assert get_target(str(target)) is target
    assert hash(target) == hash(get_target(name))


def test_bare_names_and_paths():
    assert str(get_target("gfx942")) == "amdgpu:gfx942"
    assert str(get_target(str(MINIMAL))) == "amdgpu:gfx908 (from minimal.toml)"


def test_unknown_target_suggests_the_closest():
    with pytest.raises(TargetError, match=r"did you mean 'amdgpu:gfx950'\?"):
        get_target("amdgpu:gfx951")


# --------------------------------------------------------------------------
# Selection-facing API
# --------------------------------------------------------------------------


def _names(rows) -> list[str]:
    return [r.name for r in rows]


def test_gfx950_prefers_doubled_k_over_inherited_half_rate_shapes():
    t = get_target("amdgpu:gfx950")
    f16 = t.mma_candidates("f16", "f16", "f32")
    assert _names(f16)[:3] == [
        "v_mfma_f32_16x16x32_f16",
        "v_mfma_f32_32x32x16_f16",
        "v_mfma_f32_16x16x16_f16",
    ]
    assert t.is_full_rate(f16[0]) and not t.is_full_rate(f16[2])
    assert t.flops_per_cu_cycle(f16[0]) == 2 * t.flops_per_cu_cycle(f16[2]) == 4096
    fp8 = t.mma_candidates("f8E4M3FN", "f8E4M3FN", "f32")
    assert fp8[0].name == "v_mfma_f32_16x16x128_f8f6f4" and t.flops_per_cu_cycle(fp8[0]) == 8192
    assert fp8[-1].name == "v_mfma_f32_32x32x16_fp8_fp8" and not t.is_full_rate(fp8[-1])


def test_fp8_formats_per_chip():
    gfx942, gfx950 = get_target("amdgpu:gfx942"), get_target("amdgpu:gfx950")
    assert _names(gfx942.mma_candidates("f8E4M3FNUZ", "f8E5M2FNUZ", "f32")) == [
        "v_mfma_f32_16x16x32_fp8_bf8",
        "v_mfma_f32_32x32x16_fp8_bf8",
    ]
    # The wrong fp8 flavour for the chip has no instruction, not a silent reinterpretation.
    assert gfx942.mma_candidates("f8E4M3FN", "f8E4M3FN", "f32") == ()
    assert gfx950.mma_candidates("f8E4M3FNUZ", "f8E4M3FNUZ", "f32") == ()
    assert get_target("amdgpu:gfx90a").mma_candidates("f8E4M3FNUZ", "f8E4M3FNUZ", "f32") == ()


def test_xf32_is_a_separate_request():
    gfx942 = get_target("amdgpu:gfx942")
    assert all(r.a == "f32" for r in gfx942.mma_candidates("f32", "f32", "f32"))
    assert _names(gfx942.mma_candidates("xf32", "xf32", "f32"))[0] == "v_mfma_f32_16x16x8_xf32"
    assert get_target("amdgpu:gfx950").mma_candidates("xf32", "xf32", "f32") == ()


def test_metax_int8_k_and_unknown_fp8():
    c500, c600 = get_target("metax:xcore1000"), get_target("metax:xcore1500")
    assert [r.k for r in c500.mma_candidates("i8", "i8", "i32")] == [16]
    assert [r.k for r in c600.mma_candidates("i8", "i8", "i32")] == [32]
    assert (
        c600.mma_candidates("f8E4M3FN", "f8E4M3FN", "f32")[0].key("builtin")
        == "__builtin_mxc_mma_16x16x32f8"
    )
    with pytest.raises(
        UnknownFactError, match=r"metax:xcore1000: 'matrix.fp8_formats' is not publicly known"
    ):
        c500.mma_candidates("f8E4M3FN", "f8E4M3FN", "f32")
    # Cycles are unknown: candidates keep the table's order, throughput says so.
    row = c500.mma_candidates("f16", "f16", "f32")[0]
    assert row.cycles is UNKNOWN
    with pytest.raises(UnknownFactError, match="simds_per_cu"):
        c500.flops_per_cu_cycle(row)


def test_register_counts_from_shape():
    gfx950 = get_target("amdgpu:gfx950")
    by_name = {r.name: r for r in gfx950.mma}
    assert by_name["v_mfma_f32_32x32x16_f16"].register_counts(64) == (4, 4, 16)
    assert by_name["v_mfma_f64_16x16x4_f64"].register_counts(64) == (2, 2, 8)
    assert by_name["v_mfma_f32_4x4x1_16b_f32"].register_counts(64) == (1, 1, 4)


# --------------------------------------------------------------------------
# Unknown facts
# --------------------------------------------------------------------------


def test_require_names_field_and_target():
    c600 = get_target("metax:xcore1500")
    assert c600.require("memory.shared_bytes_per_workgroup") == 131072
    with pytest.raises(UnknownFactError) as caught:
        c600.require("memory.hbm_bandwidth_gbps", "the roofline")
    message = str(caught.value)
    assert "metax:xcore1500: 'memory.hbm_bandwidth_gbps' is not publicly known" in message
    assert "xcore1500.toml" in message and "needed for the roofline" in message
    with pytest.raises(UnknownFactError, match="peak_dense_tflops.f16"):
        c600.peak_tflops("f16")
    assert not UNKNOWN and str(UNKNOWN) == "unknown" and target_layer.is_unknown(UNKNOWN)


def test_peaks_for_missing_paths_are_errors_not_zero():
    with pytest.raises(
        TargetError, match="amdgpu:gfx90a has no published dense matrix peak for fp8"
    ):
        get_target("amdgpu:gfx90a").peak_tflops("f8E4M3FNUZ")


# --------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", target_layer.target_names())
def test_describe_json_is_json_with_the_row_keys(name: str):
    data = json.loads(describe_json(get_target(name)))
    assert data["target"] == name
    for row in data["matrix"]["instructions"]:
        assert list(row)[:9] == ["name", "m", "n", "k", "blocks", "a", "b", "c", "cycles"]


# --------------------------------------------------------------------------
# The target reaching passes: resolve_target and tile-opt's overrides
# --------------------------------------------------------------------------


def _module(text: str) -> ir.Module:
    from tilemlir.dialects import tile

    context = tile.make_context()
    with context:
        return ir.Module.parse(text)


def test_resolve_target_option_wins_over_attribute():
    module = _module(
        'module attributes {tile.target = "amdgpu:gfx950"} { func.func @f() { return } }'
    )
    func = next(iter(module.body.operations))
    assert str(resolve_target(module.operation)) == "amdgpu:gfx950"
    assert str(resolve_target(func)) == "amdgpu:gfx950"  # found on the enclosing module
    assert str(resolve_target(module.operation, "amdgpu:gfx942")) == "amdgpu:gfx942"
    assert str(resolve_target(module.operation, str(MINIMAL))) == "amdgpu:gfx908 (from minimal.toml)"


def test_resolve_target_errors():
    with pytest.raises(TargetError, match="no target: pass --target=FAMILY:NAME"):
        resolve_target(_module("module {}").operation)
    with pytest.raises(TargetError, match="'tile.target' must be a string"):
        resolve_target(_module("module attributes {tile.target = 3 : i64} {}").operation)
    with pytest.raises(TargetError, match="unknown target 'amdgpu:gfx1'"):
        resolve_target(_module('module attributes {tile.target = "amdgpu:gfx1"} {}').operation)


SEEN: list[str] = []


@dataclass(frozen=True)
class SeesTarget(TilePass):
    """Stands in for a target-dependent pass: records the target it resolves."""

    name: ClassVar[str] = "test-sees-target"
    summary: ClassVar[str] = "records the resolved target"
    target: str = ""

    def run(self, module: ir.Operation, state) -> None:
        SEEN.append(str(resolve_target(module, self.target)))


@pytest.fixture
def sees_target(monkeypatch) -> list[str]:
    from tilemlir.passes import registry

    monkeypatch.setitem(registry._REGISTRY, SeesTarget.name, f"{__name__}:SeesTarget")
    SEEN.clear()
    return SEEN


def test_target_flags_reach_the_passes_option(sees_target, tmp_path, capsys):
    from tilemlir.tools import tile_opt

    source = tmp_path / "in.mlir"
    source.write_text('module attributes {tile.target = "amdgpu:gfx950"} {}\n')
    assert tile_opt.run([str(source), "--test-sees-target"]) == 0
    assert tile_opt.run([str(source), "--test-sees-target", "--target=amdgpu:gfx942"]) == 0
    assert tile_opt.run([str(source), "--test-sees-target", f"--target-desc={MINIMAL}"]) == 0
    assert tile_opt.run([str(source), "-p", "test-sees-target{target=metax:xcore1500}"]) == 0
    assert sees_target == ["amdgpu:gfx950", "amdgpu:gfx942", "amdgpu:gfx908 (from minimal.toml)",
                           "metax:xcore1500"]


# --------------------------------------------------------------------------
# Backends as plug-ins
# --------------------------------------------------------------------------

_TOY_INIT = """
from pathlib import Path
from tilemlir.targets.model import Backend

BACKEND = Backend(
    family="toy",
    summary="a backend from outside tilemlir",
    targets_dir=Path(__file__).parent / "targets",
    mma_operand_types=frozenset({"f16"}),
    mma_accumulator_types=frozenset({"f32"}),
    mma_row_keys=("builtin",),
)
"""


def _install_toy(root: Path, entry_value: str = "toy_backend:BACKEND") -> Path:
    """A package and its *.dist-info with an entry point, as pip would leave them."""
    package = root / "toy_backend"
    (package / "targets").mkdir(parents=True)
    (package / "__init__.py").write_text(_TOY_INIT)
    # Without the [amdgpu] table: the toy family declares no facts of its own.
    descriptor = MINIMAL.read_text().split("\n[amdgpu]\n")[0]
    descriptor = descriptor.replace('family = "amdgpu"', 'family = "toy"')
    descriptor = descriptor.replace('name = "gfx908"', 'name = "toy1"')
    descriptor = descriptor.replace('fp8_formats = ["f8E4M3FN", "f8E5M2"]', "fp8_formats = []")
    descriptor = descriptor.replace(
        'intrinsic = "llvm.amdgcn.mfma.f32.16x16x16f16"', 'builtin = "toy_mma"'
    )
    rows = [line for line in descriptor.splitlines() if "fp8_fp8" not in line]
    (package / "targets" / "toy1.toml").write_text("\n".join(rows) + "\n")
    info = root / "toy_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[tilemlir.backends]\ntoy = {entry_value}\n")
    return root


def _env_with(path: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path), env.get("PYTHONPATH")]))
    return env


def _run_with_env(env: dict, *args: str):
    import subprocess
    import sys

    return subprocess.run(
        [str(Path(sys.executable).parent / "tile-opt"), *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )


def test_out_of_tree_backend_is_listed(tmp_path):
    env = _env_with(_install_toy(tmp_path))
    listing = _run_with_env(env, "--list-targets")
    assert listing.returncode == 0, listing.stderr
    assert "toy: a backend from outside tilemlir [toy-backend 0.1]" in listing.stdout
    assert "  toy:toy1 " in listing.stdout and "amdgpu:gfx942" in listing.stdout
    described = _run_with_env(env, "--describe-target=toy:toy1")
    assert json.loads(described.stdout)["matrix"]["instructions"][0]["builtin"] == "toy_mma"
    # The toy family's own rules apply to descriptors of that family.
    bad = tmp_path / "bad.toml"
    amdgpu_rows = MINIMAL.read_text().replace('family = "amdgpu"', 'family = "toy"')
    # A row key of another family's (amdgpu's intrinsic) is not one of the toy's.
    bad.write_text(amdgpu_rows.split("\n[amdgpu]\n")[0])
    rejected = _run_with_env(env, f"--target-desc={bad}", "--describe-target")
    assert rejected.returncode == 1
    assert ("unknown field 'matrix.instructions[0].intrinsic' (expected one of: name, m, n, k, blocks, "
            "a, b, c, cycles, builtin)") in rejected.stderr
    toy_text = amdgpu_rows.replace("intrinsic = ", "builtin = ")
    bad.write_text(toy_text.split("\n[amdgpu]\n")[0])
    rejected = _run_with_env(env, f"--target-desc={bad}", "--describe-target")
    assert rejected.returncode == 1
    assert "field 'matrix.fp8_formats[0]': toy cannot take 'f8E4M3FN'" in rejected.stderr
    # Another family's facts, and facts of its own the toy does not declare, are refused.
    bad.write_text(toy_text)
    rejected = _run_with_env(env, f"--target-desc={bad}", "--describe-target")
    assert rejected.returncode == 1 and "unknown field 'amdgpu'" in rejected.stderr
    bad.write_text(toy_text.replace("\n[amdgpu]\n", "\n[toy]\n"))
    rejected = _run_with_env(env, f"--target-desc={bad}", "--describe-target")
    assert rejected.returncode == 1
    assert "field 'toy': the toy family has no facts of its own" in rejected.stderr


def test_broken_plugin_is_reported_not_a_traceback(tmp_path):
    """The listing goes on without it (a warning says why); using it is an error."""
    env = _env_with(_install_toy(tmp_path, entry_value="toy_backend_missing:BACKEND"))
    result = _run_with_env(env, "--list-targets")
    assert result.returncode == 0 and "amdgpu:gfx942" in result.stdout
    assert (
        "tile-opt: warning: backend 'toy' (toy_backend_missing:BACKEND, from toy-backend 0.1) "
        "failed to load: " in result.stderr
    )
    used = _run_with_env(env, "--describe-target=toy:toy1")
    assert used.returncode == 1
    assert "tile-opt: error: backend 'toy' (toy_backend_missing:BACKEND" in used.stderr
    assert "Traceback" not in result.stderr + used.stderr


def test_builtin_backends_without_metadata(monkeypatch):
    monkeypatch.setattr(metadata, "entry_points", lambda **_: [])
    for cached in (registry._registrations, registry.resolve_backend, registry._load_cached):
        cached.cache_clear()
    try:
        assert registry.families() == ("amdgpu", "metax", "nvidia")
        assert str(get_target("metax:xcore1000")) == "metax:xcore1000"
    finally:
        monkeypatch.undo()
        for cached in (registry._registrations, registry.resolve_backend, registry._load_cached):
            cached.cache_clear()


def test_a_family_is_resolved_once_into_one_object():
    """The manifest and every part it names are imported once and kept on one
    object, which the stages, the lowering and the pass registry all read."""
    from tilemlir.backends.driver import backend_stages
    from tilemlir.passes.lower_to_gpu.api import lowering_hooks_for, matrix_core_for
    from tilemlir.passes.registry import pass_class

    resolved = registry.resolve_backend("amdgpu")
    assert registry.resolve_backend("amdgpu") is resolved and registry.backend("amdgpu") is resolved.manifest
    assert backend_stages("amdgpu") == tuple(resolved.part("stages"))
    assert type(matrix_core_for(types.SimpleNamespace(family="amdgpu"))) is resolved.part("matrix_core")
    assert lowering_hooks_for("amdgpu") is resolved.part("lowering_hooks")
    assert pass_class("amdgpu-order-lds-dma") is resolved.part("passes", "amdgpu-order-lds-dma")
    assert resolved.part("passes", "no-such-pass") is None and resolved.errors == {}
    with pytest.raises(ValueError, match="'summary' is not a manifest field naming a part"):
        resolved.part("summary")


def test_a_part_that_fails_to_load_is_kept_as_its_error(monkeypatch):
    """A broken part is a TargetError naming the family, the field and why
    (not the import's own exception), the same each time it is asked for."""
    from tilemlir.passes.lower_to_gpu.api import matrix_core_for

    manifest = dataclasses.replace(registry.backend("metax"), matrix_core="no_such_module:Core")
    resolved = registry.ResolvedBackend("metax", "test:BACKEND", "test 0.1", manifest)
    monkeypatch.setattr(registry, "resolve_backend", lambda family: resolved)
    expected = ("the metax backend's matrix_core 'no_such_module:Core' (from test 0.1) failed to load: "
                "ModuleNotFoundError: No module named 'no_such_module'")
    for _ in range(2):
        with pytest.raises(TargetError) as raised:
            matrix_core_for(types.SimpleNamespace(family="metax"))
        assert str(raised.value) == expected
    assert list(resolved.errors) == ["matrix_core"]
    broken = registry.ResolvedBackend("ghost", "ghost:BACKEND", "test 0.1", error=TargetError("no ghost"))
    with pytest.raises(TargetError, match="no ghost"):
        broken.part("stages")
    assert list(broken.errors) == ["manifest"]


def test_builtins_are_registered_as_entry_points():
    registered = {ep.name: ep.value for ep in metadata.entry_points(group="tilemlir.backends")}
    assert registered.get("amdgpu") == "tilemlir.backends.amdgpu:BACKEND"
    assert registered.get("metax") == "tilemlir.backends.metax:BACKEND"


def test_descriptor_error_is_a_user_error():
    from tilemlir.diagnostics import UserError

    assert issubclass(DescriptorError, UserError) and issubclass(UnknownFactError, UserError)
    assert dataclasses.is_dataclass(get_target("amdgpu:gfx942"))


def test_tile_opt_reports_descriptor_errors_without_traceback(tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text(
        textwrap.dedent(MINIMAL.read_text()).replace("wave_size = 64", "wave_size = [64]")
    )
    result = run_tool("tile-opt", f"--target-desc={broken}", "--list-targets")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "field 'compute.wave_size': expected a positive integer" in result.stderr
