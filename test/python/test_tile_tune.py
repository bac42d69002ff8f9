"""tile-tune (tilemlir/tools/tile_tune.py) and tile-compile's use of its
database: issue 20's acceptance (a budget of 8 on a small GEMM writes a
database tile-compile then uses; the tuned prediction is never worse than the
default's; the Ray executor on a local instance), the interrupted run, the
two-step device measurement, and every error path."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import BIN, run_tool
from kernel_text import whole_problem_gemm

from tilemlir.tools import tile_tune
from tilemlir.tune.db import load_database

SMALL = whole_problem_gemm(256, 256, 256, "f16", "f16")
GFX942 = "amdgpu:gfx942"
METAX = "metax:xcore1000"
SM90 = "nvidia:sm_90a"


def env(**values: str) -> dict:
    """The tests' environment (no tuning database: conftest) with `values`."""
    return {**os.environ, **values}


def compiled_tiling(path: Path, target: str, *flags: str, environ: dict | None = None) -> str:
    """The tile.tiling tile-compile writes for the kernel (--emit tile, in
    this process, under `environ`)."""
    import contextlib
    import io
    from unittest import mock

    from tilemlir.tools import tile_compile

    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, environ or env(), clear=True), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        status = tile_compile.main([str(path), "--target", target, "--emit", "tile", *flags])
    assert status == 0, err.getvalue()
    return out.getvalue()[out.getvalue().index("tile.tiling = {"):].split("}", 1)[0]


@pytest.fixture(scope="module")
def tuned_gfx942(tmp_path_factory):
    """tile-tune with a budget of 8 and 2 jobs on a 256^3 f16 GEMM for gfx942."""
    folder = tmp_path_factory.mktemp("gfx942")
    source = folder / "gemm.mlir"
    source.write_text(SMALL)
    database = folder / "tuning.json"
    started = time.perf_counter()
    done = run_tool("tile-tune", str(source), "--target", GFX942, "--budget", "8", "--jobs", "2",
                    "--db", str(database))
    return source, database, done, time.perf_counter() - started


def test_tune_writes_a_database_that_tile_compile_uses(tuned_gfx942):
    source, database, done, seconds = tuned_gfx942
    assert done.returncode == 0, done.stderr
    print(f"8 candidates, 2 jobs: {seconds:.1f} s")
    # The ranking on stdout: the 8 candidates, the default among them.
    rows = done.stdout.splitlines()[1:]
    assert len(rows) == 8 and sum("(default)" in row for row in rows) == 1
    assert done.stderr.startswith("tile-tune: 8 of 8 candidates ranked by model") and \
        done.stderr.count("\n") == 1  # stderr is no terminal: one summary line, no progress bar
    # The database: one entry, for this target and gemm.
    (entry,) = load_database(database).entries.values()
    assert entry.key.target == GFX942 and entry.measure == "model"
    assert (entry.key.op.m, entry.key.op.n, entry.key.op.k, entry.key.op.a, entry.key.op.c) == \
        (256, 256, 256, "f16", "f16")
    assert not entry.key.op.reads_c and entry.complete and entry.candidates == 8
    # Tuned is never worse than the default, under the same measure.
    assert entry.seconds <= entry.default_seconds
    times = [float(row.split()[1]) for row in rows]
    assert times == sorted(times) and entry.seconds == pytest.approx(times[0] * 1e-6, rel=1e-3)
    # tile-compile reads it and says so; the kernel is the database's configuration.
    report = run_tool("tile-compile", str(source), "--target", GFX942, "--tuning-db", str(database),
                      "--report", "--remarks=all", "-o", os.devnull)
    assert report.returncode == 0, report.stderr
    fields = json.loads(report.stdout)
    (kernel,) = fields["kernels"]
    bm, bn, _ = entry.config.block
    assert kernel["config_source"] == "tuning-db"
    assert kernel["workgroups"] == (256 // bm) * (256 // bn)
    assert fields["tuning"]["seconds"] == entry.seconds
    assert fields["tuning"]["default_seconds"] == entry.default_seconds
    assert fields["tuning"]["seconds"] <= fields["tuning"]["default_seconds"]
    assert "from the tuning database" in report.stderr
    # Without the database the model decides, as before.
    plain = json.loads(run_tool("tile-compile", str(source), "--target", GFX942, "--report",
                                "-o", os.devnull).stdout)
    assert plain["kernels"][0]["config_source"] == "model" and plain["tuning"] is None


def test_where_tile_compile_looks_for_the_database(tuned_gfx942, tmp_path):
    """--tuning-db PATH, else $TILEMLIR_TUNING_DB, else the cache file;
    --no-tuning-db and --tiling/--select bypass it; another target misses."""
    source, database, _, _ = tuned_gfx942
    assert 'source = "tuning-db"' in compiled_tiling(source, GFX942, environ=env(TILEMLIR_TUNING_DB=str(database)))
    cache = tmp_path / "cache"
    (cache / "tilemlir").mkdir(parents=True)
    (cache / "tilemlir" / "tuning.json").write_text(database.read_text())
    assert 'source = "tuning-db"' in compiled_tiling(source, GFX942, environ=env(XDG_CACHE_HOME=str(cache)))
    assert 'source = "model"' in compiled_tiling(source, GFX942, "--no-tuning-db",
                                                 environ=env(XDG_CACHE_HOME=str(cache)))
    assert 'source = "user"' in compiled_tiling(source, GFX942, "--tiling", "stages=1",
                                                environ=env(XDG_CACHE_HOME=str(cache)))
    # The flag wins over the variable, which wins over the cache file.
    empty = tmp_path / "empty.json"
    empty.write_text('{"format": "tilemlir-tuning-db", "version": 1, "entries": [\n]}\n')
    assert 'source = "model"' in compiled_tiling(source, GFX942, "--tuning-db", str(empty),
                                                 environ=env(TILEMLIR_TUNING_DB=str(database)))
    assert 'source = "model"' in compiled_tiling(source, GFX942, environ=env(TILEMLIR_TUNING_DB=str(empty),
                                                                            XDG_CACHE_HOME=str(cache)))
    # Tuned for gfx942: gfx950 has no entry. An edit that leaves the gemm's
    # problem as it was keeps the entry; one that changes it misses.
    assert 'source = "model"' in compiled_tiling(source, "amdgpu:gfx950", "--tuning-db", str(database))
    edited = tmp_path / "edited.mlir"
    edited.write_text(SMALL.replace("return", '%one = arith.constant 1 : index\n  return'))
    assert 'source = "tuning-db"' in compiled_tiling(edited, GFX942, "--tuning-db", str(database))
    edited.write_text(whole_problem_gemm(256, 256, 128, "f16", "f16"))
    assert 'source = "model"' in compiled_tiling(edited, GFX942, "--tuning-db", str(database))


def test_tile_compile_refuses_a_corrupt_database_with_its_position(tmp_path, tuned_gfx942):
    source = tuned_gfx942[0]
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "tilemlir-tuning-db", "version": 1, "entries": [\n{"key": 1}\n]}\n')
    done = run_tool("tile-compile", str(source), "--target", GFX942, "--tuning-db", str(broken))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"{broken}:2:1: error: tuning database entry 1:")
    missing = run_tool("tile-compile", str(source), "--target", GFX942, "--tuning-db", str(tmp_path / "no.json"))
    assert missing.returncode == 1 and "tuning database does not exist" in missing.stderr
    both = run_tool("tile-compile", str(source), "--tuning-db", str(broken), "--no-tuning-db")
    assert both.returncode == 1 and "either --tuning-db or --no-tuning-db" in both.stderr


def test_metax_and_the_ray_executor_on_a_local_instance(tmp_path):
    """The same search as Ray tasks on a local Ray instance of 2 CPUs, shut
    down after it: the same entry as the local workers' (MetaX: ranked by the
    model with the emitted kernels' shared memory)."""
    pytest.importorskip("ray")
    source = tmp_path / "gemm.mlir"
    source.write_text(SMALL)
    local, remote = tmp_path / "local.json", tmp_path / "ray.json"
    done = run_tool("tile-tune", str(source), "--target", METAX, "--budget", "4", "--jobs", "1", "--db", str(local))
    assert done.returncode == 0, done.stderr
    started = time.perf_counter()
    done = run_tool("tile-tune", str(source), "--target", METAX, "--budget", "4", "--jobs", "2",
                    "--executor", "ray", "--db", str(remote))
    print(f"ray, 4 candidates: {time.perf_counter() - started:.1f} s")
    assert done.returncode == 0, done.stderr
    (by_workers,) = load_database(local).entries.values()
    (by_ray,) = load_database(remote).entries.values()
    assert by_ray.key == by_workers.key and by_ray.key.target == METAX
    assert (by_ray.config, by_ray.seconds, by_ray.candidates) == (by_workers.config, by_workers.seconds, 4)
    assert by_ray.seconds <= by_ray.default_seconds
    assert 'source = "tuning-db"' in compiled_tiling(source, METAX, "--tuning-db", str(remote))


DEFAULT_SIGINT_EXEC = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                       "os.execv(sys.argv[1], sys.argv[1:])")


def test_an_interrupted_run_keeps_what_it_ranked(tmp_path):
    """Ctrl-C while the database is being written, then SIGTERM (`timeout`'s)
    while tile-tune stops: exit 130, one line and no traceback, the workers
    gone; the write finished, so the database holds every entry it had and
    the best so far (marked incomplete), and no temporary file is left."""
    from tilemlir.tune.db import OpSignature, TunedConfig, TuningDatabase, TuningEntry, TuningKey

    source = tmp_path / "gemm.mlir"
    source.write_text(SMALL)
    database = tmp_path / "tuning.json"
    # Other gemms' entries: a database of some MB, whose write takes long
    # enough for the signals to arrive during it.
    config = TunedConfig((32, 32, 64), 256, 2, "", "v_mfma_f32_16x16x16_f16")
    others = {}
    for index in range(2500):
        key = TuningKey(GFX942, "gfx942", f"{index:016x}", OpSignature(512, 512, 512, "f16", "f16", "f16", "f32"))
        others[key] = TuningEntry(key, config, 1e-6, config, 2e-6, "model", 8, True, "2026-12-01T00:00:00Z", "0.1.0")
    database.write_text(TuningDatabase(str(database), others).text())
    # tile-tune started with SIGINT's default disposition (exec keeps it): a
    # test run started in the background (an `&` list) has it ignored, which
    # tile-tune would inherit and Python then keep.
    process = subprocess.Popen([sys.executable, "-c", DEFAULT_SIGINT_EXEC, str(BIN / "tile-tune"), str(source),
                                "--target", GFX942, "--budget", "8", "--jobs", "1", "--db", str(database)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The signals go when the first write is seen under way (its temporary
    # file), or, on a machine too busy to see that, just after it.
    first = database.stat().st_ino
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None and database.stat().st_ino == first and \
            not any(name.startswith(".tuning.json.") for name in os.listdir(tmp_path)):
        time.sleep(0.002)
    process.send_signal(signal.SIGINT)
    time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert stderr.startswith("tile-tune: interrupted; ") and stderr.count("\n") == 1, stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gemm.mlir", "tuning.json", "tuning.json.lock"]
    entries = load_database(database).entries
    assert len(entries) == len(others) + 1 and all(entries[key] == entry for key, entry in others.items())
    (entry,) = (entry for key, entry in entries.items() if key not in others)
    assert not entry.complete and 1 <= entry.candidates < 8
    assert entry.default_seconds is not None and entry.seconds <= entry.default_seconds
    assert f"recorded in {database}" in stderr


def test_the_interrupted_line_passes_a_native_stderr_capture():
    """The line a signal prints comes from the main thread while the run's
    thread may be compiling with descriptor 2 captured (the CI failure where
    the line went into the capture): it reaches the process's stderr, and the
    capture keeps only what native code wrote."""
    script = ("import os, threading; from tilemlir.irutil import capture_native_stderr, write_user_stderr\n"
              "with capture_native_stderr() as outer, capture_native_stderr() as inner:\n"
              "    os.write(2, b'native\\n')\n"
              "    thread = threading.Thread(target=write_user_stderr, args=('to the user\\n',))\n"
              "    thread.start(); thread.join()\n"
              "print(repr(inner.text()), repr(outer.text()))\n"
              "write_user_stderr('after\\n')\n")
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "to the user\nafter\n"
    assert done.stdout == "'native\\n' ''\n"


def test_device_measurement_in_two_steps(tmp_path):
    """--prepare writes PTX per candidate, the inputs, their float64 reference
    and bound, and a measuring script that needs only NumPy and the CUDA
    driver; --merge records the timings measured there (faked here: no GPU)."""
    source = tmp_path / "gemm.mlir"
    source.write_text(SMALL)
    folder = tmp_path / "prepared"
    done = run_tool("tile-tune", str(source), "--target", SM90, "--measure", "device", "--prepare", str(folder),
                    "--budget", "3", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    assert f"measure them with `python3 {folder / 'measure.py'} {folder}`" in done.stderr
    manifest = json.loads((folder / "manifest.json").read_text())
    names = [c["name"] for c in manifest["candidates"]]
    assert names == ["cand0", "cand1", "cand2"] and manifest["candidates"][0]["default"]
    for name in names:
        assert ".entry gemm_kernel0" in (folder / f"{name}.ptx").read_text()
        assert json.loads((folder / f"{name}.json").read_text())["functions"][0]["entry"] == "gemm"
    # The reference is float64 A @ B of the inputs, the bound positive.
    a, b = (np.load(folder / f"arg{i}.npy").view(np.float16).astype(np.float64) for i in (0, 1))
    want, bound = np.load(folder / "want.npy"), np.load(folder / "bound.npy")
    assert np.allclose(want, (a @ b).astype(np.float32)) and (bound > 0).all()
    assert not manifest["inputs"]["output_read"]
    # The measuring script stands alone: the folder's own copy, without tilemlir.
    measure = subprocess.run([sys.executable, "-I", str(folder / "measure.py"), str(folder)],
                             capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert measure.returncode == 1 and "Traceback" not in measure.stderr
    assert measure.stderr.startswith("measure: error: ") and "CUDA" in measure.stderr
    sys.path.insert(0, str(folder))
    try:
        import measure as script
    finally:
        sys.path.remove(str(folder))
    assert [c["name"] for c in script.to_measure(script.read_manifest(folder), {"cand1": {}})] == ["cand0", "cand2"]
    # Nothing measured yet: merging is an error saying what to run.
    nothing = run_tool("tile-tune", "--merge", str(folder), "--db", str(tmp_path / "db.json"))
    assert nothing.returncode == 1 and "has no timings yet" in nothing.stderr
    # Timings as measure.py writes them: cand2 was wrong, cand1 the fastest.
    script.write_timings(folder, {"cand0": {"ok": True, "seconds": 2e-5}, "cand1": {"ok": True, "seconds": 1e-5},
                                  "cand2": {"ok": False, "error": "wrong results: worst error/bound 3"}}, "fake")
    database = tmp_path / "db.json"
    merged = run_tool("tile-tune", "--merge", str(folder), "--db", str(database))
    assert merged.returncode == 0, merged.stderr
    assert "wrong results" in merged.stdout
    (entry,) = load_database(database).entries.values()
    assert entry.measure == "device" and entry.key.target == SM90
    assert (entry.seconds, entry.default_seconds, entry.candidates) == (1e-5, 2e-5, 2)
    assert entry.config.describe() == manifest["candidates"][1]["describe"]
    assert 'source = "tuning-db"' in compiled_tiling(source, SM90, "--tuning-db", str(database))


def test_wgmma_candidates_are_ones_the_lowering_takes():
    """tile-tune offers sm_90a's warpgroup wgmma (prefer=wgmma) only where
    its TMA pipeline lowers: 2 stages or more, A and B tiles of whole
    128-byte rows or one 64-byte row; stages 1 to 4 for the rest; the first
    wgmma candidates compile."""
    from mlir import ir

    from tilemlir.diagnostics import SourceBuffer
    from tilemlir.dialects import tile
    from tilemlir.targets import get_target
    from tilemlir.tune.search import candidates, compile_candidate, compile_job, tune_problem

    target = get_target(SM90)
    text = whole_problem_gemm(1024, 1024, 1024, "f16", "f16")
    module = ir.Module.parse(text, tile.make_context())
    chosen = candidates(tune_problem(module.operation, target, SourceBuffer("gemm.mlir", text)).problem, target)
    wgmma = [c for c in chosen if c.select == "prefer=wgmma"]
    assert wgmma and {c.config.stages for c in wgmma} == {2, 3, 4}
    # Rows of whole 128-byte boxes, or one 64-byte box (K = 32 f16: the 64-byte swizzle).
    assert all(c.config.block[2] * 2 in (64, 128, 256) and c.config.block[1] * 2 % 128 == 0 for c in wgmma)
    assert any(c.config.block[2] == 32 for c in wgmma)
    assert {c.config.stages for c in chosen if not c.select} == {1, 2, 3, 4}
    for index, candidate in enumerate(wgmma[:2]):
        outcome = compile_candidate(compile_job(candidate, index, text, "gemm.mlir", target, "ptx"))
        assert outcome.report is not None, outcome.error


def run_in_process(capsys, *argv: str) -> tuple[int, str]:
    status = tile_tune.main(list(argv))
    return status, capsys.readouterr().err


def test_errors(tmp_path, capsys, monkeypatch):
    """Every refusal: exit 1, one clear message, no traceback."""
    source = tmp_path / "gemm.mlir"
    source.write_text(SMALL)
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("not json")
    two = tmp_path / "two.mlir"
    two.write_text(SMALL.replace("@gemm", "@one") + SMALL.replace("@gemm", "@two"))
    kernel = Path(__file__).resolve().parents[2] / "examples" / "seed_fp8_gemm.mlir"
    cases = [
        # The database is checked before anything compiles.
        ((str(source), "--target", GFX942, "--db", str(corrupt)), f"{corrupt}:1:1: error: not a tuning database"),
        ((str(kernel),), f"{kernel}: error: tile-tune tunes a whole-problem tile.gemm"),
        ((str(two), "--target", GFX942), f"{two}:10:3: error: tile-tune tunes one whole-problem tile.gemm per module"),
        ((str(source),), "no target"),
        ((str(source), "--target", GFX942, "--budget", "0"), "--budget must be at least 1"),
        ((str(source), "--target", GFX942, "--jobs", "0"), "--jobs must be at least 1"),
        ((str(source), "--target", GFX942, "--prepare", str(tmp_path / "p")), "give --measure device"),
        ((str(source), "--target", GFX942, "--ray-address", "x:1"), "--ray-address is for --executor ray"),
        ((str(source), "--target", GFX942, "--measure", "device"), "the amdgpu backend of amdgpu:gfx942 emits none"),
        ((str(source), "--target", SM90, "--measure", "device"), "needs an NVIDIA GPU on this machine"),
        ((str(source), "--target", SM90, "--measure", "device", "--prepare", str(tmp_path)),
         "give a new or empty folder"),
        (("--merge", str(tmp_path), str(source)), "--merge records measured timings and takes only --db"),
        (("--merge", str(tmp_path)), "manifest.json does not exist"),
        ((), "give the input FILE (or --merge DIR)"),
        ((str(source), "--target", GFX942, "--target-desc", str(source)), "either --target or --target-desc"),
        ((str(source), "--target", GFX942, "--measure", "guess"), "invalid choice: 'guess'"),
    ]
    for argv, message in cases:
        status, stderr = run_in_process(capsys, *argv)
        assert status == 1, (argv, stderr)
        assert message in stderr and "Traceback" not in stderr, (argv, stderr)
    assert corrupt.read_text() == "not json"  # never overwritten
    # Without ray installed, the executor says how to get it.
    monkeypatch.setitem(sys.modules, "ray", None)
    status, stderr = run_in_process(capsys, str(source), "--target", METAX, "--executor", "ray",
                                    "--db", str(tmp_path / "db.json"))
    assert status == 1 and "error: --executor ray needs ray: pip install tilemlir[ray]" in stderr


def test_a_folder_that_is_not_tile_tunes_is_refused(tmp_path, capsys):
    """--merge and the measuring script check what they read: the manifest's
    format and version, the timings' format; --only names a candidate."""
    from tilemlir.runtime import gemm_timing

    (tmp_path / "manifest.json").write_text('{"format": "something else"}')
    status, stderr = run_in_process(capsys, "--merge", str(tmp_path))
    assert status == 1 and 'not a tile-tune folder (no "format": "tilemlir-tuning-candidates")' in stderr
    (tmp_path / "manifest.json").write_text('{"format": "tilemlir-tuning-candidates", "version": 9}')
    with pytest.raises(gemm_timing.MeasureError, match="format version 9, this script reads 1"):
        gemm_timing.read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text(
        '{"format": "tilemlir-tuning-candidates", "version": 1, "key": {}, "candidates": []}')
    status, stderr = run_in_process(capsys, "--merge", str(tmp_path))
    assert status == 1 and "manifest.json: malformed: 'key': missing 'op'" in stderr
    (tmp_path / "timings.json").write_text("[]")
    with pytest.raises(gemm_timing.MeasureError, match="not a timings file"):
        gemm_timing.read_timings(tmp_path)
    manifest = {"candidates": [{"name": "cand0", "compiled": True}, {"name": "cand1", "compiled": False}]}
    with pytest.raises(gemm_timing.MeasureError, match="no compiled candidate named 'cand1'"):
        gemm_timing.to_measure(manifest, {}, only="cand1")
    assert gemm_timing.to_measure(manifest, {"cand0": {}}, only="cand0") == manifest["candidates"][:1]
