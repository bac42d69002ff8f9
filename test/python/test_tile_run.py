"""tile-run's verdicts and exit statuses (0 PASS, 1 FAIL or error, 2 NOT
CHECKED), and the tolerance between two engines' outputs that makes every
output of an emulator run a checked one; the tuning database tile-run
applies as tile-compile does."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tilemlir.runtime import load_module
from tilemlir.runtime.arguments import bind, parameters, random_arguments
from tilemlir.runtime.dtypes import convert
from tilemlir.runtime.oracle import compare_engines
from tilemlir.runtime.reference import Program
from tilemlir.targets import get_target
from tilemlir.tools.tile_run import NOT_CHECKED, main
from tilemlir.tune.db import TunedConfig, TuningEntry, record_entry
from tilemlir.tune.search import tuning_key

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_text import whole_problem_gemm

INPUTS = "test/Runtime/Inputs"


@pytest.mark.parametrize("args,status,last", [
    # a GEMM output: checked against float64
    ([f"{INPUTS}/gemm_fp8_64x200x96.mlir"], 0, "PASS: 1 output(s) checked"),
    # one that skips a K tile: outside the tolerance
    ([f"{INPUTS}/gemm_fp8_wrong.mlir"], 1, "FAIL: 1 output(s) checked against a tolerance, 1 failed"),
    # a softmax has no float64 oracle: it ran, nothing was checked
    ([f"{INPUTS}/softmax.mlir"], NOT_CHECKED, "NOT CHECKED: no float64 oracle for %Y"),
    # hand-written GPU-level IR runs in the emulator, with no oracle at all
    (["examples/gpu/mfma_fp8_gfx942.mlir", "--engine", "emulator"], NOT_CHECKED,
     "NOT CHECKED: no float64 oracle for GPU-level IR (%c)"),
    # the emulator's result is checked against the reference engine's as well
    ([f"{INPUTS}/gemm_i8.mlir", "--engine", "emulator", "--target", "amdgpu:gfx942"], 0,
     "PASS: 1 output(s) checked"),
])
def test_exit_status_and_last_line(repo, monkeypatch, capsys, args, status, last):
    monkeypatch.chdir(repo)
    assert main(args) == status
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1].startswith(last), lines[-1]
    assert not any(line.startswith("PASS") for line in lines[:-1])


@pytest.mark.parametrize("args,error", [
    (["examples/gpu/mfma_fp8_gfx942.mlir"], "the reference engine runs tile-level IR"),
    ([f"{INPUTS}/gpu_race.mlir", "--engine", "emulator"],
     "data race: workgroup (0, 0, 0) wrote and workgroup (1, 0, 0) writes"),
])
def test_gpu_level_errors(repo, monkeypatch, capsys, args, error):
    monkeypatch.chdir(repo)
    assert main(args) == 1
    captured = capsys.readouterr()
    assert error in captured.err and "PASS" not in captured.out


def _softmax(repo):
    """(parameter of %Y, inputs, reference engine's outputs, float64 re-execution's)."""
    module, source = load_module(repo / INPUTS / "softmax.mlir")
    program, ideal = Program(module, source=source), Program(module, source=source,
                                                              precision="float64")
    params = parameters(program.function("softmax").op, program.dtype_of, source)
    inputs = random_arguments(params, 0)
    outputs = [x.copy() for x in inputs]
    program.call("softmax", bind(params, outputs, "softmax"))
    shadows = [convert(x, np.float64) for x in inputs]
    ideal.call("softmax", bind(parameters(program.function("softmax").op, ideal.dtype_of, source),
                               shadows, "softmax"))
    return params[1], inputs, outputs[1], shadows[1]


def test_engines_agreeing_to_a_unit_in_the_last_place_pass(repo):
    param, inputs, reference, shadow = _softmax(repo)
    other = np.nextafter(reference, np.float16(np.inf))  # every element one ulp up
    report = compare_engines(param, other, reference, shadow, None, inputs, "emulator")
    assert report.passed and 0 < report.worst_ratio <= 1.0
    assert report.reference.startswith("the reference engine (E = ")


def test_an_engine_off_by_more_than_rounding_fails(repo):
    param, inputs, reference, shadow = _softmax(repo)
    other = reference.copy()
    other[3, 5] = np.float16(float(reference[3, 5]) * 1.01)  # ~10 ulps of f16 at one element
    report = compare_engines(param, other, reference, shadow, None, inputs, "emulator")
    assert not report.passed and report.worst_ratio > 1.0
    other[3, 5] = np.float16(np.nan)
    assert compare_engines(param, other, reference, shadow, None, inputs, "emulator").worst_ratio \
        == np.inf


def test_scalar_inputs_follow_the_documented_rule():
    """Floats in [0.5, 2) rounded to their type, integers in [1, 8]: over many
    seeds both ends of each range are approached and never passed."""
    text = """func.func @f(%a: f32, %b: bf16, %n: index, %m: i32) {
  return
}"""
    module, source = load_module(text)
    program = Program(module, source=source)
    params = parameters(program.function("f").op, program.dtype_of, source)
    draws = [random_arguments(params, seed) for seed in range(200)]
    floats = np.array([[float(d[0]), float(d[1])] for d in draws])
    ints = np.array([[d[2], d[3]] for d in draws])
    assert ((0.5 <= floats) & (floats <= 2.0)).all() and floats.min() < 0.55 and floats.max() > 1.9
    assert all(type(d[0]) is np.float32 and d[1].dtype.name == "bfloat16" for d in draws)
    assert ((1 <= ints) & (ints <= 8)).all() and {1, 8} <= set(ints.ravel().tolist())
    assert all(isinstance(v, int) for d in draws for v in d[2:])


# The output is written in a callee: the entry's IR does not show it.
CALLEE_WRITES = """
func.func @store_one(%Y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  memref.store %one, %Y[%c0] : memref<4xf32>
  return
}
func.func @entry(%Y: memref<4xf32>) {
  func.call @store_one(%Y) : (memref<4xf32>) -> ()
  return
}
"""


def test_an_output_only_the_reference_engine_writes_is_compared(tmp_path, monkeypatch, capsys):
    """An engine that leaves an output untouched fails it, even when only the
    reference engine's run shows that it is an output."""
    import tilemlir.runtime

    monkeypatch.setattr(tilemlir.runtime, "run_emulator", lambda *args, **kwargs: [])
    path = tmp_path / "callee.mlir"
    path.write_text(CALLEE_WRITES)
    assert main([str(path), "--entry", "entry", "--engine", "emulator"]) == 1
    out = capsys.readouterr().out
    assert "argument 0 %Y: memref<4xf32> (output)" in out
    assert "%Y: emulator vs reference engine" in out and out.strip().splitlines()[-1].startswith("FAIL")


def test_a_rank_0_memref_next_to_a_scalar(tmp_path, capsys):
    """A memref<f32> is an array (re-executed in float64), the f32 next to it a scalar."""
    path = tmp_path / "rank0.mlir"
    path.write_text("""func.func @f(%x: memref<f32>, %s: f32) {
  %v = memref.load %x[] : memref<f32>
  %y = arith.mulf %v, %s : f32
  memref.store %y, %x[] : memref<f32>
  return
}
""")
    assert main([str(path)]) == NOT_CHECKED
    out = capsys.readouterr().out
    assert "argument 0 %x: memref<f32> (output)" in out and "argument 1 %s: f32 (scalar input = " in out
    assert "%x: vs float64 re-execution of the program" in out and "PASS" not in out


def test_compiler_remarks_are_printed():
    """tile-run compiles for the emulator: what the passes say (here: P staged
    through MetaX's shared memory for flash attention's second gemm) reaches
    stderr, located, as tile-compile prints it."""
    import subprocess
    import sys
    from pathlib import Path

    kernel = Path(__file__).resolve().parents[2] / "examples" / "kernels" / "flash_attention.mlir"
    result = subprocess.run([sys.executable, "-m", "tilemlir.tools.tile_run", str(kernel), "--engine", "emulator",
                             "--target", "metax:xcore1000"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "flash_attention.mlir:90:7: remark: tile-stage-operands: gemm operand A is held in registers" \
        in result.stderr


def test_the_tuning_database_configures_the_compiled_run(tmp_path, monkeypatch, capsys):
    """tile-run applies the tuning database through tile-compile's lookup: its
    entry for the program on the target is the configuration the emulator
    runs (tile-tiling says it tiled by the database); --no-tuning-db ignores it."""
    text = whole_problem_gemm(32, 32, 128, "f16", "f32", zero_fill=False)
    program = tmp_path / "gemm.mlir"
    program.write_text(text)
    module, _ = load_module(text)
    # Not the model's choice (block 32x32x128, 256 threads, 2 stages, split-K 1): K steps of 32, split-K 2.
    tuned = TunedConfig((32, 32, 32), 128, 2, split_k=2)
    model = TunedConfig((32, 32, 128), 256, 2, split_k=1)
    database = tmp_path / "tuning.json"
    record_entry(database, TuningEntry(tuning_key(module, get_target("amdgpu:gfx942")), tuned, 1e-6, model,
                                       2e-6, "model", 2, True, "2026-12-06T00:00:00Z", "test"))
    common = [str(program), "--engine", "emulator", "--target", "amdgpu:gfx942", "--remarks=tile-tiling"]

    assert main([*common, "--tuning-db", str(database)]) == 0
    captured = capsys.readouterr()
    assert f"  tuning database: {database}: applied the entry for 32x32x128 f16 x f16 -> f32 (sum in f32, " \
           f"nn, C read) on amdgpu:gfx942: block 32x32x32, 128 threads, 2 stages, split-K 2\n" in captured.out
    assert "tile-tiling: block 32x32x32, 128 threads, 2 stages, split-K 2 for this 32x32x128 f16 x f16 -> " \
           "f32 (sum in f32) gemm, from the tuning database" in captured.err
    assert captured.out.strip().splitlines()[-1].startswith("PASS: 1 output(s) checked")

    # --no-tuning-db: the cost model's tiling runs, though $TILEMLIR_TUNING_DB names the database.
    assert main([*common, "--tuning-db", str(database), "--no-tuning-db"]) == 1
    assert "give either --tuning-db or --no-tuning-db" in capsys.readouterr().err
    monkeypatch.setenv("TILEMLIR_TUNING_DB", str(database))
    assert main([*common, "--no-tuning-db"]) == 0
    captured = capsys.readouterr()
    assert "  tuning database: none read (--no-tuning-db)\n" in captured.out
    assert "tile-tiling: block 32x32x128, 256 threads (4 waves as 2x2), 2 stages, v_mfma_f32_16x16x16_f16, " \
           "split-K 1" in captured.err
    assert "from the tuning database" not in captured.err
