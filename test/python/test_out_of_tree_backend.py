"""A fourth backend family from outside the package, for real.

test/python/toygpu/ is a complete out-of-tree family (`toygpu`, chip `toy1`):
its own descriptor, matrix core, lowering hooks, stages (tile, gpu, then its
own `toyasm`) and pass. The fixture installs it the way an installer leaves a
package in a site directory -- the package next to its own
`tilemlir_toygpu-0.1.dist-info` whose `entry_points.txt` registers the
`tilemlir.backends` entry point, written from the toy's pyproject.toml (no
pip, offline) -- and every test drives the real console scripts in a
subprocess whose PYTHONPATH holds that directory. Nothing in tilemlir names
the toy (`test_the_package_does_not_name_the_toy`): docs/backends.md walks
through these files as the backend contract's worked example.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import BIN, REPO
from kernel_text import Gemm, gemm_kernel, whole_problem_gemm

TOY_SOURCE = Path(__file__).parent / "toygpu"
TOY_PACKAGE = "tilemlir_toygpu"
TARGET = "toygpu:toy1"
# C (64x64, f32) = A (64x32, f16) x B (32x64, f16): the compiler chooses the tiles.
WHOLE_PROBLEM_GEMM = whole_problem_gemm(64, 64, 32, "f16", "f32")
# The same GEMM in kernel form, K = 128 in two-stage pipelined steps of 32.
KERNEL_GEMM = gemm_kernel(Gemm(64, 64, 128, block=(64, 64, 32), in_type="f16", acc_type="f32",
                               out_type="f32", stages=2))
MMA_LINE = re.compile(r"^\s+toy\.mma\.8x8x4\.f16 %\d+, %\d+, %\d+, %\d+$", re.MULTILINE)


def install(site: Path, source: Path = TOY_SOURCE) -> Path:
    """The toy package and its dist-info in `site`, as an installer leaves
    them: METADATA and entry_points.txt from the project's pyproject.toml,
    RECORD listing the files."""
    project = tomllib.loads((source / "pyproject.toml").read_text())["project"]
    shutil.copytree(source / TOY_PACKAGE, site / TOY_PACKAGE,
                    ignore=shutil.ignore_patterns("__pycache__"))
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    groups = project["entry-points"]
    (info / "entry_points.txt").write_text("\n".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items())
        for group, entries in groups.items()))
    files = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    (info / "RECORD").write_text("".join(f"{file},,\n" for file in files)
                                 + f"{info.name}/RECORD,,\n")
    return site


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return install(tmp_path_factory.mktemp("site-packages"))


def tool(site: Path, name: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """One of our console scripts, with the toy's site directory on its path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return subprocess.run([str(BIN / name), *args], input=stdin, capture_output=True, text=True,
                          env=env, timeout=120, check=False)


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result


def test_the_package_does_not_name_the_toy():
    """Adding the family took no line of tilemlir: its files are all its own."""
    mentions = [str(path.relative_to(REPO)) for path in (REPO / "tilemlir").rglob("*")
                if path.is_file() and path.suffix in (".py", ".toml")
                and "toygpu" in path.read_text(errors="replace")]
    assert mentions == []
    # And it is not visible without its dist-info.
    listing = subprocess.run([str(BIN / "tile-compile"), "--list-targets"], capture_output=True,
                             text=True, timeout=120, check=False)
    assert "toygpu" not in listing.stdout


# A distribution registering families that cannot load, each a different way.
BROKEN_ENTRY_POINTS = {
    "ghost": ("no_such_module:BACKEND", "ModuleNotFoundError: No module named 'no_such_module'"),
    "raising": ("tilemlir_raising:BACKEND", "ImportError: needs a library that is not installed"),
    "notabackend": ("os:sep", "the entry point names a str, not a tilemlir Backend"),
}


@pytest.fixture(scope="module")
def broken_site(tmp_path_factory) -> Path:
    """The toy installed with a `stages` string naming a missing module, next
    to a distribution whose three entry points cannot load."""
    site = tmp_path_factory.mktemp("broken-site-packages")
    install(site)
    manifest = site / TOY_PACKAGE / "__init__.py"
    text = manifest.read_text()
    manifest.write_text(text.replace('stages="tilemlir_toygpu.stages:STAGES"',
                                     'stages="tilemlir_toygpu.no_such_stages:STAGES"'))
    assert manifest.read_text() != text
    (site / "tilemlir_raising.py").write_text(
        'raise ImportError("needs a library that is not installed")\n')
    info = site / "tilemlir_broken-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tilemlir-broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tilemlir.backends]\n" + "".join(
        f"{family} = {value}\n" for family, (value, _) in BROKEN_ENTRY_POINTS.items()))
    (info / "RECORD").write_text("tilemlir_raising.py,,\ntilemlir_broken-0.1.dist-info/RECORD,,\n")
    return site


def _warnings(stderr: str, prog: str) -> dict[str, str]:
    """family -> the warning line reporting it (each family once)."""
    lines = [line for line in stderr.splitlines() if line.startswith(f"{prog}: warning: ")]
    found = {}
    for line in lines:
        family = re.search(r"; the (\w+) family is skipped$", line).group(1)
        assert family not in found, f"{family} reported twice:\n{stderr}"
        found[family] = line
    return found


def test_broken_families_are_reported_once_and_skipped(broken_site):
    """A family that does not load breaks nothing else: compiling for amdgpu
    works, each broken family is named once with its entry point and why."""
    result = ok(tool(broken_site, "tile-compile", "-", "--target", "amdgpu:gfx942", "--emit", "isa",
                     stdin=WHOLE_PROBLEM_GEMM))
    assert "v_mfma_f32_" in result.stdout
    reported = _warnings(result.stderr, "tile-compile")
    assert set(reported) == {*BROKEN_ENTRY_POINTS, "toygpu"}
    for family, (value, why) in BROKEN_ENTRY_POINTS.items():
        assert f"backend '{family}' ({value}, from tilemlir-broken 0.1) failed to load: " in reported[family]
        assert why in reported[family]
    assert ("the toygpu backend's stages 'tilemlir_toygpu.no_such_stages:STAGES' (from "
            "tilemlir-toygpu 0.1) failed to load: ModuleNotFoundError") in reported["toygpu"]
    # The listing shows the families that load (the toy's manifest and targets do).
    listing = ok(tool(broken_site, "tile-opt", "--list-targets"))
    assert "amdgpu:gfx942" in listing.stdout and "toygpu:toy1" in listing.stdout
    assert set(_warnings(listing.stderr, "tile-opt")) == set(BROKEN_ENTRY_POINTS)


@pytest.mark.parametrize("target, why", [
    ("ghost:g1", ("backend 'ghost' (no_such_module:BACKEND, from tilemlir-broken 0.1) failed to "
                  "load: ModuleNotFoundError: No module named 'no_such_module'")),
    (TARGET, ("the toygpu backend's stages 'tilemlir_toygpu.no_such_stages:STAGES' (from "
              "tilemlir-toygpu 0.1) failed to load")),
])
def test_a_broken_familys_target_is_an_error_saying_why(broken_site, target, why):
    result = tool(broken_site, "tile-compile", "-", "--target", target, stdin=WHOLE_PROBLEM_GEMM)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"tile-compile: error: {why}" in result.stderr


def test_listed_with_its_distribution(site):
    listing = ok(tool(site, "tile-compile", "--list-targets")).stdout
    assert ("toygpu: a made-up GPU family from outside tilemlir (docs/backends.md) "
            "[tilemlir-toygpu 0.1]") in listing
    assert re.search(r"^  toygpu:toy1 +unknown +Toy One$", listing, re.MULTILINE)
    described = json.loads(ok(tool(site, "tile-opt", f"--describe-target={TARGET}")).stdout)
    assert [row["name"] for row in described["matrix"]["instructions"]] == [
        "toy_mma_8x8x4_f16", "toy_mma_8x8x4_bf16"]
    assert described["sources"]["TOY"].startswith("invented for tilemlir's out-of-tree backend")


def test_compiles_a_gemm_to_its_own_stage(site):
    """Whole-problem form: tile-tiling plans from toy1's descriptor, the toy's
    core lowers the gemm, its toyasm stage prints the result."""
    result = ok(tool(site, "tile-compile", "-", "--target", TARGET, "--emit", "toyasm", "--remarks=tile-tiling",
                     stdin=WHOLE_PROBLEM_GEMM))
    asm = result.stdout
    assert asm.startswith(".module gemm_kernels\n.kernel gemm_kernel0\n")
    # The cost model, from toy1's descriptor, gives each of its 4 CUs a 32x32
    # block (its remark says so), in 2 waves of 64 lanes (4 waves are predicted
    # as fast, and hold half as much each: tiling.rank_configs): each wave's
    # 32x16 share is 4x2 tiles of 8x8, times K/4 = 8 steps: 64 instructions.
    assert "tile-tiling: block 32x32x32, 128 threads" in result.stderr
    assert "  .threads 128\n" in asm and "  .mma 64\n" in asm
    assert asm.count("  .shared ") == 2
    assert len(MMA_LINE.findall(asm)) == 64
    assert "func.call" not in asm and asm.endswith(".end kernel\n.end module\n")
    # Without --emit: the backend's default_emit, toyasm.
    assert ok(tool(site, "tile-compile", "-", "--target", TARGET,
                   stdin=WHOLE_PROBLEM_GEMM)).stdout == asm


def test_report_and_lowering_hook_option(site):
    """Kernel form with a pipelined K loop; the toy's own tile-lower-to-gpu
    option reaches its hooks; --report comes from its report_stage."""
    result = ok(tool(site, "tile-compile", "-", "--target", TARGET, "--report", "-o", os.devnull,
                     "--pass-options", "tile-lower-to-gpu{toy-banner=true}", stdin=KERNEL_GEMM))
    report = json.loads(result.stdout)
    assert (report["schema_version"], report["target"], report["family"]) == (1, TARGET, "toygpu")
    (kernel,) = report["kernels"]
    # Two stages of a 64x32 A tile and a 32x64 B tile, f16.
    assert kernel["shared_bytes"] == 2 * 2 * (64 * 32 * 2)
    # The loop body's gemm: each wave's 32x32 share is 4x4 tiles, times 8 steps: 128 instructions.
    assert (kernel["threads"], kernel["toygpu"]["mma_instructions"]) == (256, 128)
    # The report's common keys: null where the toy cannot know; the kernel form is the user's.
    assert kernel["registers"] is None and kernel["config_source"] == "user"
    assert set(report["compile_seconds"]) >= {"tile", "gpu", "toyasm-prepare", "toyasm"}
    asm = ok(tool(site, "tile-compile", "-", "--target", TARGET,
                  "--pass-options", "tile-lower-to-gpu{toy-banner=true}", stdin=KERNEL_GEMM)).stdout
    assert "  // lowered for toygpu:toy1 by tilemlir-toygpu\n" in asm
    assert "scf.for" in asm and MMA_LINE.search(asm)
    plain = ok(tool(site, "tile-compile", "-", "--target", TARGET, stdin=KERNEL_GEMM)).stdout
    assert "// lowered for" not in plain


def test_dumped_pipelines_reproduce_the_compile(site, tmp_path):
    """--dump-pass-pipeline (no --emit) prints the toy's stages; each printed
    pipeline, the toy's own pass included, runs through tile-opt -p, and
    tile-opt's result is what tile-compile --emit gpu gives."""
    source = tmp_path / "gemm.mlir"
    source.write_text(WHOLE_PROBLEM_GEMM)
    dumped = ok(tool(site, "tile-compile", str(source), "--target", TARGET,
                     "--dump-pass-pipeline", "-o", str(tmp_path / "out.s"))).stderr
    # The dump's lines, without the remarks around them (file:line:col: remark: ...).
    lines = [line for line in dumped.splitlines() if re.match(r"[\w-]+: ", line)]
    labels = [line.split(":", 1)[0] for line in lines]
    assert labels == ["tile", "gpu", "toyasm-prepare", "toyasm"]
    pipelines = dict(line.split(": ", 1) for line in lines)
    assert pipelines["toyasm-prepare"] == (
        f"builtin.module(gpu-check-input{{target={TARGET}}},toygpu-count-mma)")
    text = WHOLE_PROBLEM_GEMM
    for label in ("tile", "gpu"):
        text = ok(tool(site, "tile-opt", "-", "-p", pipelines[label], stdin=text)).stdout
    gpu_level = ok(tool(site, "tile-compile", str(source), "--target", TARGET, "--emit", "gpu")).stdout
    assert text == gpu_level
    prepared = ok(tool(site, "tile-opt", "-", "-p", pipelines["toyasm-prepare"], stdin=text)).stdout
    assert "toygpu.mma_count = 64 : i64" in prepared


def test_its_pass_and_option_are_listed(site):
    listing = ok(tool(site, "tile-opt", "--list-passes")).stdout
    assert re.search(r"^  toygpu-count-mma +\[toygpu\] record on every gpu\.func", listing,
                     re.MULTILINE)
    assert re.search(r"^ +toy-banner=bool +default false +\(read by toygpu\)$", listing,
                     re.MULTILINE)


def test_stage_errors_name_the_backends(site):
    wrong = tool(site, "tile-compile", "-", "--target", TARGET, "--emit", "isa",
                 stdin=WHOLE_PROBLEM_GEMM)
    assert wrong.returncode == 1
    assert ("error: --emit isa is not a stage of the toygpu backend (for toygpu:toy1: tile, gpu, "
            "toyasm); isa is a stage of amdgpu") in wrong.stderr
    other = tool(site, "tile-compile", "-", "--target", "amdgpu:gfx942", "--emit", "toyasm",
                 stdin=WHOLE_PROBLEM_GEMM)
    assert other.returncode == 1
    assert "--emit toyasm is not a stage of the amdgpu backend" in other.stderr
    assert "toyasm is a stage of toygpu" in other.stderr


def test_its_descriptor_rules(site, tmp_path):
    """A descriptor of the toy family builds on toy1 and is held to the toy's
    own rules (check_mma_row, check_target)."""
    faster = tmp_path / "toy1_fast.toml"
    faster.write_text('base = "toygpu:toy1"\n[compute]\nclock_mhz = 2000\n')
    described = json.loads(ok(tool(site, "tile-opt", f"--target-desc={faster}",
                                   "--describe-target")).stdout)
    assert described["compute"]["clock_mhz"] == 2000
    asm = ok(tool(site, "tile-compile", "-", "--target-desc", str(faster),
                  stdin=WHOLE_PROBLEM_GEMM)).stdout
    assert len(MMA_LINE.findall(asm)) == 64

    wrong_shape = tmp_path / "toy1_wrong_shape.toml"
    wrong_shape.write_text(
        'base = "toygpu:toy1"\n[matrix]\ninstructions = [\n'
        '  { name = "toy_mma_8x8x4_f16", m = 8, n = 8, k = 8, blocks = 1, a = "f16", '
        'b = "f16", c = "f32", cycles = 8 },\n]\n')
    refused = tool(site, "tile-opt", f"--target-desc={wrong_shape}", "--describe-target")
    assert refused.returncode == 1
    assert (f"{wrong_shape}: field 'matrix.instructions[0]' (row 'toy_mma_8x8x4_f16'): its name "
            "says 8x8x4 on f16, but the row is 8x8x8 on f16 x f16; the toygpu lowering emits "
            "toy_mma_MxNxK_<type>") in refused.stderr

    no_wave = tmp_path / "toy1_no_wave.toml"
    no_wave.write_text('base = "toygpu:toy1"\n[compute]\nwave_size = "unknown"\n')
    refused = tool(site, "tile-opt", f"--target-desc={no_wave}", "--describe-target")
    assert refused.returncode == 1
    assert (f"{no_wave}: field 'compute.wave_size': the toygpu lowering needs the wave size"
            in refused.stderr)



def test_the_contract_quotes_the_toy_as_it_is():
    """docs/backends.md shows the toy's files: every block it marks
    `<!-- verbatim: PATH -->` is text of that file."""
    document = (REPO / "docs/backends.md").read_text()
    quoted = re.findall(r"<!-- verbatim: (\S+) -->\n```\w*\n(.*?)```", document, re.DOTALL)
    assert len(quoted) >= 6
    for path, block in quoted:
        assert block in (REPO / path).read_text(), f"docs/backends.md quotes {path} wrongly"


def test_pip_installs_the_same_distribution(tmp_path):
    """pip (offline, no build isolation) installs the toy from its pyproject
    with the entry point the fixture writes by hand; the tools find it there."""
    source = tmp_path / "source"
    shutil.copytree(TOY_SOURCE, source, ignore=shutil.ignore_patterns("__pycache__"))
    site = tmp_path / "pip-site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--disable-pip-version-check", "--target", str(site), str(source)],
        capture_output=True, text=True, timeout=300, check=False)
    assert installed.returncode == 0, installed.stderr
    by_hand = install(tmp_path / "by-hand")
    for file in ("entry_points.txt", "METADATA"):
        (pip_file,) = site.glob(f"*.dist-info/{file}")
        (hand_file,) = by_hand.glob(f"*.dist-info/{file}")
        if file == "entry_points.txt":
            assert pip_file.read_text() == hand_file.read_text()
        else:
            assert "Name: tilemlir-toygpu\n" in pip_file.read_text()
    assert (site / TOY_PACKAGE / "targets" / "toy1.toml").is_file()
    listing = ok(tool(site, "tile-compile", "--list-targets")).stdout
    assert "toygpu:toy1" in listing and "[tilemlir-toygpu 0.1]" in listing
