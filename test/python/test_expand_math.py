"""Math ops in kernels: every op a kernel may use compiles for every AMD chip and
sm_90a, and what tile-expand-math makes of it computes the right values.

Numerics: the amdgpu pipeline's math steps (pass_lists.EXPAND_MATH) run on a
GPU-level kernel applying one op per output; the SIMT emulator executes the
result (gfx942), and each output is compared with float64 NumPy on the same
inputs, edge values included, at a tolerance derived from the dtype and the
expansion's stated error (expand_math.MAX_ERROR_ULPS). Ops the target lowers
natively the emulator computes with NumPy's float32 functions (NATIVE_ULPS).
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from mlir import ir

import tilemlir
from tilemlir.backends.amdgpu.pass_lists import EXPAND_MATH
from tilemlir.backends.driver import CompileError
from tilemlir.dialects import make_context
from tilemlir.passes import build_pipeline
from tilemlir.passes.expand_math import MAX_ERROR_ULPS
from tilemlir.runtime.dtypes import convert
from tilemlir.runtime.emulator import emulate

# The math ops a kernel may use (the reference engine's set, runtime/reference.py)
# plus erf, with their float64 NumPy meaning.
UNARY = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": np.cbrt, "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "absf": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "round": lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x), "roundeven": np.rint,
    "erf": np.vectorize(__import__("math").erf, otypes=[np.float64]),
}
BINARY = {"powf": np.power, "atan2": np.arctan2, "copysign": np.copysign}
DTYPES = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16),
          "bf16": np.dtype(ml_dtypes.bfloat16)}
MANTISSA_BITS = {"f32": 23, "f16": 10, "bf16": 7}
MIN_EXPONENT = {"f32": -126, "f16": -14, "bf16": -126}
# NumPy's float32 exp and log, which the emulator runs for the native ops, are
# within 3 ulp (2.8 measured for log); tan is upstream's sin/cos (math-expand-ops).
NATIVE_ULPS = 3
UPSTREAM_ULPS = {"tan": 4}
N = 1024  # inputs per op: 4 blocks of 256 threads
EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -3.0, 1e-30, -1e-30,
         1e-7, -1e-7, 0.999, -0.999, 2.25, 3.92, 3.95, 9.1, 10.5, 44.5, 88.5, 89.0, -89.0,
         100.0, -100.0, 1e30, -1e30]


def _inputs(name: str, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Edge values, then random ones over the op's interesting range."""
    count = N - len(EDGES)
    magnitude = 10.0 ** rng.uniform(-8, 8, count) * rng.choice([-1.0, 1.0], count)
    if name in ("asin", "acos"):
        spread = rng.uniform(-1.2, 1.2, count)
    elif name in ("tanh", "sinh", "cosh", "erf", "exp", "exp2", "expm1", "sin", "cos", "tan"):
        spread = np.concatenate([rng.uniform(-12, 12, count // 2),
                                 10.0 ** rng.uniform(-8, 2, count - count // 2)
                                 * rng.choice([-1.0, 1.0], count - count // 2)])
    elif name in ("round", "roundeven", "floor", "ceil", "trunc"):
        spread = np.concatenate([rng.uniform(-8, 8, count // 2), np.arange(count - count // 2) * 0.5 - 64])
    else:
        spread = magnitude
    x = np.concatenate([EDGES, spread])
    if name not in BINARY:
        return (x,)
    if name == "powf":
        y = np.concatenate([rng.uniform(-20, 20, N // 2), rng.integers(-12, 13, N - N // 2)])
        x = np.abs(x) ** 0.05 * np.sign(x)  # bases around 1, so powers stay in range
        x[: len(EDGES)] = EDGES
        y[: len(EDGES)] = [2.0, -1.0, 0.5, 3.0, 2.0, np.inf, -np.inf, 0.0, np.nan, -0.0, 3.0, -3.0,
                           2.0, 1.0, np.inf, -np.inf, 1e10, 7.0, -7.0, 0.5, -0.5, 0.0, 1.0, 3.0,
                           -2.0, 5.0, -5.0, 2.5, 1.5, 4.0]
        return x, y
    y = np.concatenate([EDGES[::-1], rng.permutation(spread)])
    return x, y


def _module(ops: list[str], element: str) -> str:
    """A host function launching one kernel that applies op k of `ops` to
    x[k, :] (and y[k, :]) into out[k, :]."""
    rows = f"memref<{len(ops)}x{N}x{element}>"
    args = f"%x: {rows}, %y: {rows}, %out: {rows}"
    lines = []
    for k, name in enumerate(ops):
        operands = f"%a{k}, %b{k}" if name in BINARY else f"%a{k}"
        lines.append(f"      %k{k} = arith.constant {k} : index\n"
                     f"      %a{k} = memref.load %x[%k{k}, %i] : {rows}\n"
                     f"      %b{k} = memref.load %y[%k{k}, %i] : {rows}\n"
                     f"      %r{k} = math.{name} {operands} : {element}\n"
                     f"      memref.store %r{k}, %out[%k{k}, %i] : {rows}")
    body = "\n".join(lines)
    return f"""module attributes {{gpu.container_module}} {{
  func.func @host({args}) {{
    %blocks = arith.constant {N // 256} : index
    %threads = arith.constant 256 : index
    %one = arith.constant 1 : index
    gpu.launch_func @m::@k blocks in (%blocks, %one, %one) threads in (%threads, %one, %one) args(%x : {rows}, %y : {rows}, %out : {rows})
    return
  }}
  gpu.module @m {{
    gpu.func @k({args}) kernel attributes {{known_block_size = array<i32: 256, 1, 1>}} {{
      %bx = gpu.block_id x
      %tx = gpu.thread_id x
      %c256 = arith.constant 256 : index
      %base = arith.muli %bx, %c256 : index
      %i = arith.addi %base, %tx : index
{body}
      gpu.return
    }}
  }}
}}
"""


def _ulp(values: np.ndarray, element: str) -> np.ndarray:
    """The spacing of `element` numbers at |values| (float64)."""
    magnitude = np.abs(values)
    exponent = np.floor(np.log2(np.where(magnitude > 0, magnitude, 1.0)))
    exponent = np.maximum(exponent, MIN_EXPONENT[element])
    return np.exp2(exponent - MANTISSA_BITS[element])


def _mismatches(name: str, element: str, inputs, out: np.ndarray) -> list[str]:
    dtype = DTYPES[element]
    wide = [v.astype(np.float64) for v in inputs]
    with np.errstate(all="ignore"):
        ref = (UNARY.get(name) or BINARY[name])(*wide).astype(np.float64)
    expected = convert(ref, dtype).astype(np.float64)
    got = out.astype(np.float64)
    # Stated error of the f32 computation, then (narrow types) one rounding to the dtype.
    f32_ulps = MAX_ERROR_ULPS.get(name) or UPSTREAM_ULPS.get(name, NATIVE_ULPS)
    if name == "powf":
        with np.errstate(all="ignore"):
            f32_ulps = f32_ulps + np.nan_to_num(np.abs(wide[1] * np.log2(np.abs(wide[0]))))
    bound = f32_ulps * _ulp(ref, "f32")
    if element != "f32":
        bound = bound + 0.5 * _ulp(ref, element)
    special = ~np.isfinite(expected)
    with np.errstate(all="ignore"):
        wrong = np.where(special, ~((got == expected) | (np.isnan(got) & np.isnan(expected))),
                         ~(np.abs(got - ref) <= bound))
    # The emulator's own math.round gives +0 for -0 (runtime/emu_arith.py), so
    # that native op is left out of the sign check.
    if name != "round":
        wrong |= (ref == 0) & (np.signbit(got) != np.signbit(ref))
    return [f"math.{name} {element}{tuple(float(v[i]) for v in wide)}: got {got[i]!r}, "
            f"float64 {ref[i]!r} (bound {float(np.broadcast_to(bound, ref.shape)[i]):.3g})"
            for i in np.flatnonzero(wrong)[:3]]


def _expanded(text: str, target: str = "amdgpu:gfx942") -> ir.Module:
    chip = target.partition(":")[2]
    steps = ",".join(step.format(chip=chip, spec=target) for step in EXPAND_MATH)
    context = make_context()
    with context:
        module = ir.Module.parse(text)
        build_pipeline(f"builtin.module(gpu.module({steps}))", context=context).run(module.operation)
    return module


@pytest.mark.parametrize("element", list(DTYPES))
def test_expansions_match_float64(element):
    ops = list(UNARY) + list(BINARY)
    rng = np.random.default_rng(17)
    dtype = DTYPES[element]
    failures = []
    x, y = np.zeros((len(ops), N), dtype), np.zeros((len(ops), N), dtype)
    for k, name in enumerate(ops):
        values = _inputs(name, rng)
        x[k] = convert(values[0], dtype)
        y[k] = convert(values[1], dtype) if len(values) > 1 else 0
    module = _expanded(_module(ops, element))
    left = sorted({op for op in re.findall(r"math\.(\w+)", str(module))} - {
        "exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "floor", "ceil",
        "trunc", "round", "roundeven", "absf", "copysign", "fma"})
    assert not left, f"tile-expand-math left math ops gfx942 does not lower: {left}"
    out = np.zeros((len(ops), N), dtype)
    emulate(module, "host", [x, y, out])
    for k, name in enumerate(ops):
        failures += _mismatches(name, element, (x[k], y[k]) if name in BINARY else (x[k],), out[k])
    assert not failures, "\n".join(failures)


TARGETS = {"amdgpu:gfx90a": "isa", "amdgpu:gfx942": "isa", "amdgpu:gfx950": "isa", "nvidia:sm_90a": "ptx"}


@pytest.mark.parametrize("element", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("target", list(TARGETS))
def test_every_math_op_compiles(target, element):
    text = _module(list(UNARY) + list(BINARY), element)
    artifact = tilemlir.compile(text, target=target, emit=TARGETS[target]).artifact
    # No call of a function the code object would have to find elsewhere.
    assert "__ocml" not in artifact and "s_swappc" not in artifact and ".extern" not in artifact


def test_native_f64_ops_compile_and_others_are_refused_on_amdgpu():
    native = ["absf", "sqrt", "floor", "ceil", "trunc", "round", "roundeven", "rsqrt", "copysign"]
    tilemlir.compile(_module(native, "f64"), target="amdgpu:gfx942", emit="isa")
    with pytest.raises(CompileError) as refused:
        tilemlir.compile(_module(["exp", "tanh"], "f64"), target="amdgpu:gfx950", emit="isa")
    message = str(refused.value)
    assert re.search(r":\d+:\d+: error: 'math.exp' on f64 has no lowering for amdgpu:gfx950", message)
    assert "'math.tanh' on f64 has no lowering for amdgpu:gfx950" in message
    assert "llc" not in message
