"""tilemlir.runtime.run: binding arguments, and every error it reports (each
names the argument, or points at the op with file:line:col; never a traceback
from inside the engine)."""

import re

import ml_dtypes
import numpy as np
import pytest

from tilemlir import runtime
from tilemlir.diagnostics import UserError
from tilemlir.runtime.reference import RunError

GEMM = """\
func.func @gemm(%A: memref<8x4xf8E4M3FNUZ>, %B: memref<4x6xf8E4M3FNUZ>, %C: memref<8x6xf16>) {
  %zero = arith.constant 0.0 : f16
  "tile.fill"(%C, %zero) : (memref<8x6xf16>, f16) -> ()
  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<8x4xf8E4M3FNUZ>, memref<4x6xf8E4M3FNUZ>, memref<8x6xf16>) -> ()
  return
}
"""

F8 = ml_dtypes.float8_e4m3fnuz


def gemm_args():
    return [np.ones((8, 4), F8), np.ones((4, 6), F8), np.zeros((8, 6), np.float16)]


def test_outputs_are_written_in_place():
    a, b, c = gemm_args()
    assert runtime.run(GEMM, "gemm", [a, b, c], target="amdgpu:gfx942") == []
    assert (c == 4).all()


def test_results_are_returned():
    text = "func.func @f(%x: index, %y: f32) -> (index, f32) {\n  return %x, %y : index, f32\n}\n"
    x, y = runtime.run(text, "f", [5, 0.1])
    assert x == 5 and y == np.float32(0.1) and isinstance(y, np.float32)


def test_wrong_arity_names_the_parameters():
    with pytest.raises(UserError, match=re.escape("@gemm takes 3 argument(s) (%A, %B, %C), got 2")):
        runtime.run(GEMM, "gemm", gemm_args()[:2])


@pytest.mark.parametrize("index, value, got", [
    (2, np.zeros((8, 6), np.float32), "float32 array of shape (8, 6)"),
    (2, np.zeros((6, 8), np.float16), "float16 array of shape (6, 8)"),
    (2, np.zeros(48, np.float16), "float16 array of shape (48,)"),
    (0, np.ones((8, 4), ml_dtypes.float8_e4m3fn), "float8_e4m3fn array of shape (8, 4)"),
    (1, [[1.0] * 6] * 4, "list"),
])
def test_wrong_array_names_the_argument(index, value, got):
    args = gemm_args()
    args[index] = value
    expected = {
        0: "argument 0 (%A): expected memref<8x4xf8E4M3FNUZ> (float8_e4m3fnuz array of shape (8, 4))",
        1: "argument 1 (%B): expected memref<4x6xf8E4M3FNUZ> (float8_e4m3fnuz array of shape (4, 6))",
        2: "argument 2 (%C): expected memref<8x6xf16> (float16 array of shape (8, 6))",
    }[index]
    with pytest.raises(UserError, match=re.escape(f"{expected}, got {got}")):
        runtime.run(GEMM, "gemm", args)


SCALARS = "func.func @s(%n: index, %b: i8, %x: f16, %m: memref<?x4xf32>) {\n  return\n}\n"


def test_scalar_arguments_and_dynamic_shapes():
    runtime.run(SCALARS, "s", [3, -128, 2.5, np.zeros((7, 4), np.float32)])
    with pytest.raises(UserError, match=re.escape("argument 1 (%b): 200 is out of range for i8")):
        runtime.run(SCALARS, "s", [3, 200, 2.5, np.zeros((7, 4), np.float32)])
    with pytest.raises(UserError, match=re.escape("argument 0 (%n): expected index (a scalar), got float 1.5")):
        runtime.run(SCALARS, "s", [1.5, 1, 2.5, np.zeros((7, 4), np.float32)])
    with pytest.raises(UserError, match=re.escape(
            "argument 3 (%m): expected memref<?x4xf32> (float32 array of shape (?, 4)), "
            "got float32 array of shape (7, 5)")):
        runtime.run(SCALARS, "s", [1, 1, 2.5, np.zeros((7, 5), np.float32)])


def test_unknown_entry_lists_the_functions():
    with pytest.raises(UserError, match=re.escape("no function @gem in the module (functions: @gemm)")):
        runtime.run(GEMM, "gem", gemm_args())


@pytest.mark.parametrize("engine, message", [
    ("device", "engine 'device' needs an NVIDIA GPU"),  # none on the CI machines
    ("numpy", "unknown engine 'numpy' (engines: reference, emulator, device)"),
])
def test_engines_that_do_not_exist(engine, message):
    with pytest.raises(UserError, match=re.escape(message)):
        runtime.run(GEMM, "gemm", gemm_args(), engine=engine)


def test_emulator_without_a_target_runs_for_its_own_chip(monkeypatch):
    """No target=, tile.target or TILEMLIR_TARGET: the emulator compiles for its
    own chip (emulator.emulator_target(), gfx942), not this machine's GPU. The GEMM's FNUZ
    fp8 is gfx942's alone: gfx950 and sm_90a refuse it."""
    monkeypatch.setenv("TILEMLIR_GPU", "nvidia:sm_90a")
    args = gemm_args()
    runtime.run(GEMM, "gemm", args, engine="emulator")
    assert (args[2] == 4).all()


def test_emulator_engine_matches_reference():
    """The same call, engine="emulator": compiled for gfx942 and executed lane by lane."""
    reference, emulated = gemm_args(), gemm_args()
    runtime.run(GEMM, "gemm", reference)
    runtime.run(GEMM, "gemm", emulated, engine="emulator", target="amdgpu:gfx942")
    assert np.abs(reference[2].astype(np.float64) - emulated[2].astype(np.float64)).max() <= 2 ** -8 * max(
        1.0, float(np.abs(reference[2].astype(np.float64)).max()))


def test_unsupported_op_points_at_it(tmp_path):
    path = tmp_path / "thread.mlir"
    path.write_text(
        "func.func @t(%out: memref<4xindex>) {\n"
        "  %c0 = arith.constant 0 : index\n"
        "  %tid = gpu.thread_id x\n"
        "  memref.store %tid, %out[%c0] : memref<4xindex>\n"
        "  return\n"
        "}\n")
    with pytest.raises(RunError) as caught:
        runtime.run(path, "t", [np.zeros(4, np.int64)])
    assert str(caught.value).startswith(f"{path}:3:10: error: 'gpu.thread_id' is not supported by the "
                                        "reference engine, which runs tile-level IR")
    assert caught.value.formatted().endswith("  %tid = gpu.thread_id x\n         ^\n")


def test_parse_and_verify_errors_are_located():
    with pytest.raises(RunError, match=re.escape("<string>:2:19: error: use of undeclared SSA value name")):
        runtime.run("func.func @f() {\n  %x = arith.addi %y, %y : i32\n  return\n}\n", "f", [])
    bad_fill = GEMM.replace("%zero = arith.constant 0.0 : f16", "%zero = arith.constant 0.0 : f32").replace(
        "(memref<8x6xf16>, f16)", "(memref<8x6xf16>, f32)")
    with pytest.raises(RunError, match=re.escape("<string>:3:3: error: tile.fill: the value is f32 but the buffer holds f16")):
        runtime.run(bad_fill, "gemm", gemm_args())


def test_read_only_output_is_a_located_error():
    a, b, c = gemm_args()
    c.flags.writeable = False
    with pytest.raises(RunError, match=r"<string>:3:3: error: tile\.fill: ValueError: assignment destination is read-only"):
        runtime.run(GEMM, "gemm", [a, b, c])


def test_module_objects_run_too():
    module, _ = runtime.load_module(GEMM)
    a, b, c = gemm_args()
    runtime.run(module, "gemm", [a, b, c])
    assert (c == 4).all()
    with pytest.raises(UserError, match="expected MLIR text, a path or an MLIR module, got int"):
        runtime.run(3, "gemm", [])


def test_gpu_level_ir_runs_in_the_emulator_only(repo):
    """A host function launching gpu.module kernels: the reference engine says
    which engine runs it; the emulator runs it (and its sanitizer watches)."""
    text = (repo / "examples/gpu/mfma_fp8_gfx942.mlir").read_text()
    a, bt = np.ones((16, 1024), F8), np.ones((16, 1024), F8)
    c = np.zeros((16, 16), np.float32)
    with pytest.raises(UserError, match="the reference engine runs tile-level IR; this module is "
                                        r"GPU-level IR \(gpu.launch_func"):
        runtime.run(text, "gemm_16x16", [a, bt, c])
    runtime.run(text, "gemm_16x16", [a, bt, c], engine="emulator")
    assert (c == 1024).all()
