"""Which target a compile is for (tilemlir.targets.selection): the same rule for
tile-compile, tile-run, tile-tune, tilemlir.compile, tilemlir.runtime.run and
@tilemlir.jit, and the same default stage for tile-compile and
tilemlir.compile. The GPU probe is stubbed through TILEMLIR_GPU (conftest sets
it to `none`) or a monkeypatched `probed_gpus`; nothing here compiles: the
driver stops where it would run its first stage and says what it would do."""

from __future__ import annotations

import dataclasses
import re
import stat
from pathlib import Path

import pytest
from tilelang_style import kernels as K

import tilemlir
import tilemlir.language
from tilemlir import compiler, runtime
from tilemlir.backends.amdgpu.detect import chips_in_topology, gfx_name
from tilemlir.backends.nvidia import detect as nvidia_detect
from tilemlir.diagnostics import UserError
from tilemlir.targets import get_target, registry, selection
from tilemlir.targets.selection import NoTargetError, select_target
from tilemlir.tools import tile_compile, tile_run, tile_tune

KERNEL = """\
module {
  func.func @f(%A: memref<16x16xf16>, %C: memref<16x16xf32>) {
    "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<16x16xf16>, memref<16x16xf16>, memref<16x16xf32>) -> ()
    return
  }
}
"""
ON_GFX90A = KERNEL.replace("module {", 'module attributes {tile.target = "amdgpu:gfx90a"} {')
WOULD = re.compile(r"would compile for (\S+) to (\w+)")


@pytest.fixture
def stop_before_compiling(monkeypatch):
    """The driver raises, instead of running its stages, what it would compile
    for; tile-tune, instead of tuning, what it would tune for."""
    from tilemlir.tune import search

    def refuse(job, dump=None):
        raise UserError(f"would compile for {job.target} to {job.emit}")

    def refuse_to_tune(module, target, source):
        raise UserError(f"would compile for {target} to tune")

    monkeypatch.setattr(compiler, "run_stages", refuse)
    monkeypatch.setattr(search, "tune_problem", refuse_to_tune)


def python_api(text: str, target: str | None, emit: str | None = None) -> tuple[str, str]:
    with pytest.raises(UserError) as raised:
        tilemlir.compile(text, target=target, emit=emit)
    return said(str(raised.value))


def said(message: str) -> tuple[str, str]:
    found = WOULD.search(message)
    assert found, message
    return found[1], found[2]


def tool(main, argv: list[str], capsys) -> str:
    """Runs a tool in process; returns its error line (every call here fails on purpose)."""
    assert main(argv) == 1
    return capsys.readouterr().err


def cli(path: Path, target: str | None, capsys) -> tuple[str, str]:
    return said(tool(tile_compile.main, [str(path)] + (["--target", target] if target else []), capsys))


# (what --target / target= says, TILEMLIR_TARGET, TILEMLIR_GPU, the module's tile.target?) -> target
CASES = [
    pytest.param("amdgpu:gfx950", None, "none", False, "amdgpu:gfx950", id="named"),
    pytest.param("gfx950", None, "none", False, "amdgpu:gfx950", id="bare-chip"),
    pytest.param("sm_90a", None, "none", False, "nvidia:sm_90a", id="bare-chip-nvidia"),
    pytest.param("xcore1000", None, "none", False, "metax:xcore1000", id="bare-chip-metax"),
    pytest.param("amdgpu:gfx950", "gfx942", "nvidia:sm_90a", True, "amdgpu:gfx950", id="named-wins"),
    pytest.param(None, "gfx942", "nvidia:sm_90a", True, "amdgpu:gfx90a", id="module-over-environment"),
    pytest.param(None, "gfx942", "nvidia:sm_90a", False, "amdgpu:gfx942", id="environment-over-gpu"),
    pytest.param(None, None, "nvidia:sm_90a", False, "nvidia:sm_90a", id="gpu"),
    pytest.param("auto", None, "gfx950", False, "amdgpu:gfx950", id="auto-names-nothing"),
    pytest.param("cuda", None, "none", False, "nvidia:sm_90a", id="tilelang-family"),
    pytest.param("hip", "amdgpu:gfx950", "none", False, "amdgpu:gfx950", id="family-chip-from-environment"),
    pytest.param("rocm", "nvidia:sm_90a", "gfx90a", False, "amdgpu:gfx90a", id="family-chip-from-gpu"),
    pytest.param("hip", None, "nvidia:sm_90a", False, "amdgpu:gfx942", id="family-default-chip"),
]


@pytest.mark.parametrize(("given", "environment", "gpu", "on_module", "expected"), CASES)
def test_cli_and_python_pick_the_same_target(given, environment, gpu, on_module, expected, tmp_path,
                                             monkeypatch, capsys, stop_before_compiling):
    text = ON_GFX90A if on_module else KERNEL
    path = tmp_path / "kernel.mlir"
    path.write_text(text)
    if environment is None:
        monkeypatch.delenv("TILEMLIR_TARGET", raising=False)
    else:
        monkeypatch.setenv("TILEMLIR_TARGET", environment)
    monkeypatch.setenv("TILEMLIR_GPU", gpu)
    assert str(select_target(given, _parsed(text))) == expected
    family = expected.split(":")[0]
    default = {"amdgpu": "isa", "metax": "maca", "nvidia": "ptx"}[family]
    assert cli(path, given, capsys) == (expected, default)
    assert python_api(text, given) == (expected, default)
    argv = [str(path)] + (["--target", given] if given else [])
    assert said(tool(tile_tune.main, argv, capsys)) == (expected, "tune")


def _parsed(text: str):
    from mlir import ir

    from tilemlir.dialects import tile

    return ir.Module.parse(text, tile.make_context()).operation


def test_without_a_target_or_a_gpu_it_is_an_error_saying_how_to_name_one(tmp_path, capsys):
    path = tmp_path / "kernel.mlir"
    path.write_text(KERNEL)
    expected = ("no target: name one with --target FAMILY:CHIP (Python: target=) or $TILEMLIR_TARGET, "
                "or set tile.target on the module; no GPU was found on this machine to compile for "
                "(known targets: amdgpu:gfx1100, amdgpu:gfx1101, amdgpu:gfx1102, amdgpu:gfx1200, amdgpu:gfx1201, "
                "amdgpu:gfx90a, amdgpu:gfx942, amdgpu:gfx950, metax:xcore1000")
    assert f"tile-compile: error: {expected}" in tool(tile_compile.main, [str(path)], capsys)
    with pytest.raises(NoTargetError, match=re.escape(expected)):
        tilemlir.compile(KERNEL)


@pytest.mark.parametrize(("given", "environment", "gpu", "message"), [
    # a chip no family ships: the candidates it might have meant
    ("gfx9", None, "none", "unknown target 'gfx9'; did you mean 'amdgpu:gfx90a'? (known targets: amdgpu:gfx1100"),
    # a bad TILEMLIR_TARGET is named as the environment's
    (None, "gfx9", "none", "$TILEMLIR_TARGET: unknown target 'gfx9'; did you mean 'amdgpu:gfx90a'?"),
    # two kinds of GPU here: which one is not ours to guess
    (None, None, "gfx942,sm_90a",
     "this machine has GPUs of 2 targets (amdgpu:gfx942, nvidia:sm_90a); say which with --target"),
    # a stub naming no target
    (None, None, "gfx1030", "$TILEMLIR_GPU: unknown target 'gfx1030'"),
])
def test_bad_names_are_the_same_error_everywhere(given, environment, gpu, message, tmp_path, monkeypatch,
                                                 capsys):
    path = tmp_path / "kernel.mlir"
    path.write_text(KERNEL)
    if environment is not None:
        monkeypatch.setenv("TILEMLIR_TARGET", environment)
    monkeypatch.setenv("TILEMLIR_GPU", gpu)
    argv = [str(path)] + (["--target", given] if given else [])
    assert f"tile-compile: error: {message}" in tool(tile_compile.main, argv, capsys)
    with pytest.raises(UserError, match=re.escape(message)):
        tilemlir.compile(KERNEL, target=given)


def test_an_ambiguous_bare_chip_lists_the_families_that_ship_it(tmp_path, monkeypatch, capsys):
    # A plug-in family shipping a chip of the same name as one of ours.
    shipped = registry.all_targets()
    twin = dataclasses.replace(get_target("amdgpu:gfx942"), family="toygpu")
    monkeypatch.setattr(registry, "all_targets", lambda: (*shipped, twin))
    path = tmp_path / "kernel.mlir"
    path.write_text(KERNEL)
    message = "target 'gfx942' is ambiguous; say which: amdgpu:gfx942, toygpu:gfx942"
    assert f"tile-compile: error: {message}" in tool(tile_compile.main, [str(path), "--target", "gfx942"],
                                                      capsys)
    with pytest.raises(UserError, match=re.escape(message)):
        tilemlir.compile(KERNEL, target="gfx942")


def test_a_gpu_no_target_describes_is_an_error(monkeypatch):
    monkeypatch.delenv("TILEMLIR_GPU")
    monkeypatch.setattr(selection, "probed_gpus", lambda: (("amdgpu", "gfx1030"),))
    with pytest.raises(UserError, match=re.escape(
            "this machine's GPU is amdgpu gfx1030, which no known target describes; name a target")):
        select_target(None)
    # ... but a family's name still means its default chip then.
    assert str(select_target("hip")) == "amdgpu:gfx942"


def test_the_probe_runs_when_nothing_names_a_target(monkeypatch):
    monkeypatch.delenv("TILEMLIR_GPU")
    monkeypatch.setattr(selection, "probed_gpus", lambda: (("nvidia", "sm_90a"),))
    assert str(select_target(None)) == "nvidia:sm_90a"
    monkeypatch.setattr(selection, "probed_gpus", lambda: (("amdgpu", "gfx1100"),))  # a Radeon RX 7900
    assert str(select_target(None)) == "amdgpu:gfx1100"
    monkeypatch.setattr(selection, "probed_gpus", lambda: (("nvidia", "sm_90a"),))
    assert str(select_target(None, engine_default="amdgpu:gfx942")) == "amdgpu:gfx942"


# -- engines: the emulator takes its own chip instead of the GPU ------------------

def test_the_emulator_takes_its_own_chip_instead_of_the_gpu(tmp_path, monkeypatch, capsys,
                                                             stop_before_compiling):
    from tilemlir.runtime.emulator import emulator_target

    monkeypatch.setenv("TILEMLIR_GPU", "nvidia:sm_90a")  # a GPU the emulator does not model
    path = tmp_path / "kernel.mlir"
    path.write_text(KERNEL)
    assert emulator_target() == "amdgpu:gfx942"
    run_said = tool(tile_run.main, [str(path), "--engine", "emulator"], capsys)
    assert said(run_said) == ("amdgpu:gfx942", "gpu")
    with pytest.raises(UserError, match="would compile for amdgpu:gfx942 to gpu"):
        runtime.run(KERNEL, "f", [], engine="emulator")
    # TILEMLIR_TARGET and --target still win.
    monkeypatch.setenv("TILEMLIR_TARGET", "gfx950")
    assert said(tool(tile_run.main, [str(path), "--engine", "emulator"], capsys)) == ("amdgpu:gfx950", "gpu")
    assert said(tool(tile_run.main, [str(path), "--engine", "emulator", "--target", "gfx90a"], capsys)) \
        == ("amdgpu:gfx90a", "gpu")


def test_the_emulators_own_target_is_asked_of_the_backends(monkeypatch):
    """No chip is written in the runtime: the emulator's own target is the
    first family (by name) whose manifest's default chip it models."""
    import dataclasses

    from tilemlir.runtime import emulator
    from tilemlir.targets import registry

    real = registry.resolve_backend

    def with_default_chips(chips: dict[str, str]):
        def resolve(family):
            resolved = real(family)
            manifest = dataclasses.replace(resolved.manifest, default_chip=chips.get(family, "none"))
            return registry.ResolvedBackend(family, resolved.entry_point, resolved.provider, manifest)
        monkeypatch.setattr(registry, "resolve_backend", resolve)
        emulator.emulator_target.cache_clear()

    try:
        with_default_chips({"amdgpu": "gfx950", "metax": "xcore1500"})
        assert emulator.emulator_target() == "amdgpu:gfx950"
        with_default_chips({"metax": "xcore1500", "nvidia": "sm_90a"})
        assert emulator.emulator_target() == "metax:xcore1500"
        with_default_chips({"nvidia": "sm_90a"})
        with pytest.raises(UserError, match="no registered family's default chip is one of them"):
            emulator.emulator_target()
    finally:
        monkeypatch.undo()
        emulator.emulator_target.cache_clear()


@pytest.mark.parametrize(("target", "engine", "gpu", "cuda", "expected"), [
    ("gfx950", None, "none", False, "amdgpu:gfx950"),
    (None, None, "nvidia:sm_90a", True, "nvidia:sm_90a"),  # the GPU here, as tile-compile takes it
    # ... but one the CUDA driver does not give this process (CUDA_VISIBLE_DEVICES=): the emulator
    (None, None, "nvidia:sm_90a", False, "amdgpu:gfx942"),
    (None, None, "none", False, "amdgpu:gfx942"),  # no GPU: it runs in the emulator, for the emulator's chip
    (None, "emulator", "nvidia:sm_90a", True, "amdgpu:gfx942"),  # asked for the emulator: its chip
    ("auto", "reference", "none", False, "amdgpu:gfx942"),
])
def test_language_kernels_follow_the_same_rule(target, engine, gpu, cuda, expected, monkeypatch):
    from tilemlir.runtime import cuda_launch

    monkeypatch.setenv("TILEMLIR_GPU", gpu)
    monkeypatch.setattr(cuda_launch, "gpu_available", lambda: cuda)
    kernel = tilemlir.language.compile(K.running_sum.function(64), out_idx=[1], target=target,
                                       engine=engine)
    assert str(kernel.target) == expected


def test_the_device_engine_without_a_gpu_is_the_error_tile_compile_gives(monkeypatch):
    from tilemlir.language.kernel import resolve_target
    from tilemlir.runtime.engine_target import resolve_engine_target

    with pytest.raises(NoTargetError, match="no target: name one with --target"):
        resolve_target(None, "device")
    with pytest.raises(NoTargetError, match="no target: name one with --target"):
        resolve_engine_target(_parsed(KERNEL), None, "device")


# -- the probes ------------------------------------------------------------------

@pytest.mark.parametrize(("version", "name"), [
    (90402, "gfx942"), (90010, "gfx90a"), (90500, "gfx950"), (110501, "gfx1151"), (0, None),
])
def test_kfd_target_versions_are_llvm_processor_names(version, name):
    assert gfx_name(version) == name


def test_the_kfd_topology_lists_each_gpu_once(tmp_path):
    for node, version in (("0", 0), ("1", 90402), ("2", 90402)):
        (tmp_path / node).mkdir()
        (tmp_path / node / "properties").write_text(f"cpu_cores_count 0\ngfx_target_version {version}\n")
    assert chips_in_topology(tmp_path) == ("gfx942",)
    assert chips_in_topology(tmp_path / "missing") == ()


def _fake_nvidia_smi(folder: Path, script: str) -> None:
    tool = folder / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\n{script}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize(("script", "chips"), [
    ("printf '9.0\\n9.0\\n'", ("sm_90a",)),
    ("printf '8.0\\n'", ("sm_80",)),
    ("echo 'No devices were found'; exit 6", ()),  # a driver without a GPU
    ("echo '[N/A]'", ()),  # output that is no capability
])
def test_nvidia_smi_answers(script, chips, tmp_path, monkeypatch):
    _fake_nvidia_smi(tmp_path, script)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert nvidia_detect.present_chips() == chips


def test_no_nvidia_smi_is_no_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert nvidia_detect.present_chips() == ()
