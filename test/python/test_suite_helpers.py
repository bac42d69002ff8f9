"""The suite's own helpers (conftest.py): `run_in_process` gives what the
installed script gives (status, stdout, stderr), and a module that defines a
module-scoped fixture is one unit of work for `make test`'s two workers, so
the fixture is built once."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from conftest import REPO, pytest_xdist_make_scheduler, run_tool, xdist_scope

SMALL = str(REPO / "test" / "Tools" / "tile-opt" / "Inputs" / "small.mlir")


@pytest.mark.parametrize("tool,args,stdin", [
    ("tile-opt", [SMALL, "--canonicalize"], None),  # success, output on stdout
    ("tile-opt", ["-"], "func.func @f( {\n"),  # a located error from stdin
    ("tile-opt", [SMALL, "--tile-verfy"], None),  # a command-line error
    ("tile-compile", ["-", "--target", "amdgpu:gfx942"], '"tile"() : () -> ()\n'),  # an MLIR diagnostic
], ids=["success", "stdin-error", "flag-error", "mlir-diagnostic"])
def test_in_process_gives_what_the_script_gives(run_in_process, tool, args, stdin):
    script = run_tool(tool, *args, stdin=stdin)
    here = run_in_process(tool, *args, stdin=stdin)
    assert (here.returncode, here.stdout, here.stderr) == (script.returncode, script.stdout, script.stderr)


def test_in_process_runs_in_the_given_folder(run_in_process, tmp_path):
    (tmp_path / "small.mlir").write_text((REPO / "test" / "Tools" / "tile-opt" / "Inputs" / "small.mlir").read_text())
    result = run_in_process("tile-opt", "small.mlir", "-o", "out.mlir", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert '"tile.gemm"' in (tmp_path / "out.mlir").read_text()


@pytest.fixture(scope="module")
def built_once():
    return object()


def test_a_module_with_a_module_fixture_is_one_unit_of_work(built_once, request):
    module = request.node.nodeid.split("::")[0]
    assert xdist_scope(request.node.nodeid) == module
    assert xdist_scope(f"{module}::test_other_tests_stay_ungrouped") == module


def test_other_tests_are_units_of_their_own():
    nodeid = "test/python/test_fuzz.py::test_mutation_is_token_level_and_reproducible"
    assert xdist_scope(nodeid) == nodeid


def test_loadgroup_schedules_by_that_scope(request):
    from xdist.scheduler import LoadScopeScheduling

    def config(dist: str):
        option = SimpleNamespace(dist=dist, tx=["popen", "popen"], numprocesses=2, loadscopereorder=True)
        return SimpleNamespace(option=option, getvalue=lambda name: getattr(option, name))

    scheduler = pytest_xdist_make_scheduler(config("loadgroup"), None)
    assert isinstance(scheduler, LoadScopeScheduling)
    assert scheduler._split_scope(request.node.nodeid) == request.node.nodeid.split("::")[0]
    assert pytest_xdist_make_scheduler(config("load"), None) is None
