"""The command line the four tools share (tilemlir/tools/common.py): one version,
answered without MLIR; one flag parser; tile-compile's files named after the input.
What the tools print is tested by lit (test/Tools/version.test, flags.test,
tile-compile/); here, what the Python side promises."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import pytest
from conftest import BIN, REPO

import tilemlir
from tilemlir.diagnostics import UserError

TOOLS = {"tile-opt": "tile_opt", "tile-compile": "tile_compile", "tile-run": "tile_run",
         "tile-tune": "tile_tune"}


def test_the_version_is_written_once_and_the_changelog_has_its_section():
    assert re.fullmatch(r"\d+\.\d+\.\d+", tilemlir.__version__)
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "tilemlir.version.__version__"}
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"\n## [{tilemlir.__version__}]" in changelog, \
        f"CHANGELOG.md has no section '## [{tilemlir.__version__}]' for the current version"


def test_version_of_every_tool_without_importing_mlir():
    """--version is answered before anything heavy is imported: MLIR (and NumPy,
    which its bindings load) stay out of sys.modules."""
    script = "\n".join([
        "import contextlib, io, sys",
        *(f"from tilemlir.tools.{module} import main as {module}" for module in TOOLS.values()),
        "out = io.StringIO()",
        "with contextlib.redirect_stdout(out):",
        *(f"    assert {module}(['--version']) == 0" for module in TOOLS.values()),
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('mlir', 'numpy'))",
        "print(out.getvalue() + 'imported: ' + ' '.join(heavy))",
    ])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    for tool in TOOLS:
        assert f"{tool} (tilemlir) version {tilemlir.__version__}\n" in done.stdout
    assert done.stdout.rstrip().endswith("imported:"), done.stdout


@pytest.mark.parametrize("spelling", [
    ["k.mlir", "--emit=isa", "--target=amdgpu:gfx942"],
    ["k.mlir", "-emit=isa", "-target=amdgpu:gfx942"],
    ["k.mlir", "-emit", "isa", "-target", "amdgpu:gfx942"],
    ["--emit", "isa", "k.mlir", "--target", "amdgpu:gfx942"],
])
def test_one_dash_or_two_a_value_after_equals_or_next(spelling):
    from tilemlir.tools import tile_compile

    options = tile_compile.parse_args(spelling)
    assert (options.input, options.emit, options.target) == ("k.mlir", "isa", "amdgpu:gfx942")


def test_an_optional_value_comes_only_after_equals():
    from tilemlir.tools import tile_compile

    assert tile_compile.parse_args(["k.mlir", "--save-temps"]).save_temps == "."
    assert tile_compile.parse_args(["k.mlir", "-save-temps=out"]).save_temps == "out"
    bare = tile_compile.parse_args(["--save-temps", "k.mlir"])
    assert (bare.save_temps, bare.input) == (".", "k.mlir")
    with pytest.raises(UserError, match="--save-temps= needs a folder"):
        tile_compile.parse_args(["k.mlir", "--save-temps="])


def test_unknown_flags_name_the_closest_flags_of_that_tool():
    from tilemlir.tools import tile_compile, tile_tune

    with pytest.raises(UserError, match=r"unknown flag '-mlir-print-ir-afterall'; did you mean "
                                        r"'--mlir-print-ir-after-all'"):
        tile_compile.parse_args(["k.mlir", "-mlir-print-ir-afterall"])
    with pytest.raises(UserError, match=r"unknown flag '--job'; did you mean '--jobs'\? "
                                        r"\(flags: tile-tune --help\)"):
        tile_tune.parse_args(["k.mlir", "--job=2"])


def test_remarks_spec_reaches_configure_remarks(monkeypatch):
    from tilemlir import diagnostics
    from tilemlir.tools import tile_opt

    seen = []
    monkeypatch.setattr(diagnostics, "configure_remarks", seen.append)
    tile_opt.parse_args(["k.mlir", "-remarks=tile-tiling|tile-select-mma"])
    tile_opt.parse_args(["k.mlir"])  # a run without the flag resets to the default
    assert seen == ["tile-tiling|tile-select-mma", None]


def test_every_stage_names_its_file_as_clang_would():
    from tilemlir.backends.driver import registered_stages

    suffixes = {name: stage.suffix for name, stage in registered_stages().items()}
    assert suffixes == {"tile": ".tile.mlir", "gpu": ".gpu.mlir", "llvm": ".ll", "isa": ".s",
                        "hsaco": ".hsaco", "maca": ".maca.cpp", "ptx": ".ptx"}


def test_files_named_after_the_input(tmp_path):
    from tilemlir.backends.driver import registered_stages
    from tilemlir.tools.tile_compile import _named_after_input

    stages = registered_stages()
    assert _named_after_input("kernels/softmax.mlir", stages["isa"], ".") == "softmax.s"
    assert _named_after_input("-", stages["ptx"], "out") == "out/stdin.ptx"
    # An input whose name is the output's: refused, never overwritten.
    source = tmp_path / "kernel.s"
    source.write_text("// tile IR in a file named like assembly\n")
    with pytest.raises(UserError, match="would be written over the input"):
        _named_after_input(str(source), stages["isa"], str(tmp_path))


@pytest.mark.parametrize("redirect,message", [
    ("1>&-", "tile-opt: error: standard output is closed"),
    ("0<&-", "tile-opt: error: standard input is closed"),
    (">/dev/full", "tile-opt: error: cannot write the output: No space left on device"),
])
def test_closed_or_full_standard_streams_are_errors(redirect, message):
    """A caller that closes stdin or stdout, or points stdout at a full
    device, gets an error that says so (exit 1), not an internal error."""
    source = "-" if redirect.startswith("0") else str(REPO / "examples" / "seed_fp8_gemm.mlir")
    done = subprocess.run(f"{BIN / 'tile-opt'} {source} {redirect}", shell=True, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 1 and done.stderr.strip() == message, done.stderr


def test_running_out_of_memory_is_an_error_not_a_bug(capsys):
    from tilemlir.tools.common import _guarded

    def run(argv):
        raise MemoryError("Unable to allocate 256. GiB")

    assert _guarded("tile-run", run, []) == 1
    assert capsys.readouterr().err == ("tile-run: error: out of memory (Unable to allocate 256. GiB): the input "
                                       "needs more memory than this machine gives the process\n")


def test_an_endless_or_huge_input_is_refused(monkeypatch, tmp_path):
    """At most MAX_INPUT_BYTES are read: /dev/zero is refused at once, not
    read until memory runs out."""
    from tilemlir.tools import common

    done = subprocess.run([str(BIN / "tile-opt"), "/dev/zero"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 1
    assert done.stderr == "tile-opt: error: input file '/dev/zero' is larger than 1 GiB, the most the tools read\n"
    monkeypatch.setattr(common, "MAX_INPUT_BYTES", 8)
    (tmp_path / "nine.mlir").write_text("// 456789")
    (tmp_path / "eight.mlir").write_text("// 45678")
    with pytest.raises(UserError, match="is larger than"):
        common.read_input(str(tmp_path / "nine.mlir"))
    assert common.read_input(str(tmp_path / "eight.mlir")).text == "// 45678"
