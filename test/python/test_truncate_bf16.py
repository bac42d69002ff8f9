"""amdgpu-truncate-bf16 computes what docs/kernels.md says a bf16 conversion is.

The pass rewrites the LLVM dialect's f32 -> bf16 `llvm.fptrunc` into integer
arithmetic. Its output is generic LLVM IR, so it runs on this machine: a
loop over a buffer, lowered by upstream passes, then the pass, then MLIR's
ExecutionEngine (the host's LLVM; its own fptrunc to bf16 would be a
compiler-rt libcall the engine does not have, so every conversion that runs
here is the pass's). Compared with tilemlir.runtime.dtypes.convert (the
definition the reference engine and the emulator use): the same bits for
every number, ties to even, overflow to infinity, subnormals and -0; a NaN
for a NaN, which the pass makes the canonical 0x7fc0. The form for
exponentials (one unsigned minimum for the NaN choice) is checked on every
value an exponential gives: +0 and up, and quiet NaNs of either sign.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from mlir import ir, passmanager
from mlir.execution_engine import ExecutionEngine

from tilemlir.backends.amdgpu.truncate_bf16 import (
    QUIET_NAN,
    AmdgpuTruncateBf16,
    rounded_bf16,
    truncate_bf16,
)
from tilemlir.irutil import walk
from tilemlir.passes.base import PassState
from tilemlir.runtime.dtypes import convert

# Every element through the scalar form (and again through the form for
# exponentials, @exponential), and every block of 4 through the vector form.
SCALAR = """
func.func @scalar(%x: memref<?xf32>, %y: memref<?xi16>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %t = arith.truncf %v : f32 to bf16
    %b = arith.bitcast %t : bf16 to i16
    memref.store %b, %y[%i] : memref<?xi16>
  }
  return
}
"""
VECTOR = """
func.func @vector(%x: memref<?xf32>, %y: memref<?xi16>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c4 {
    %v = vector.load %x[%i] : memref<?xf32>, vector<4xf32>
    %t = arith.truncf %v : vector<4xf32> to vector<4xbf16>
    %b = arith.bitcast %t : vector<4xbf16> to vector<4xi16>
    vector.store %b, %y[%i] : memref<?xi16>, vector<4xi16>
  }
  return
}
"""
PROGRAM = SCALAR + SCALAR.replace("@scalar", "@exponential") + VECTOR
LOWER = ("builtin.module(convert-scf-to-cf,convert-vector-to-llvm,finalize-memref-to-llvm,convert-arith-to-llvm,"
         "convert-func-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts)")


class MemRef1D(ctypes.Structure):
    _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64),
                ("size", ctypes.c_int64), ("stride", ctypes.c_int64)]


def descriptor(array: np.ndarray) -> MemRef1D:
    return MemRef1D(array.ctypes.data, array.ctypes.data, 0, len(array), 1)


@pytest.fixture(scope="module")
def engine():
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(PROGRAM)
        passmanager.PassManager.parse(LOWER).run(module.operation)
        # @exponential's conversion in the form for exponentials, whatever its input.
        (function,) = [op for op in module.body.operations if op.attributes["sym_name"].value == "exponential"]
        (fptrunc,) = [op for op in walk(function) if op.name == "llvm.fptrunc"]
        with ir.InsertionPoint(fptrunc), fptrunc.location:
            fptrunc.results[0].replace_all_uses_with(rounded_bf16(fptrunc.operands[0], exponential=True))
        fptrunc.erase()
        assert truncate_bf16(module.operation) == 2
        assert "llvm.fptrunc" not in str(module)
        yield ExecutionEngine(module, opt_level=2)


def rounded(engine, function: str, x: np.ndarray) -> np.ndarray:
    y = np.zeros(len(x), np.uint16)
    engine.invoke(function, ctypes.pointer(ctypes.pointer(descriptor(x))),
                  ctypes.pointer(ctypes.pointer(descriptor(y))))
    return y


def interesting_floats() -> np.ndarray:
    """f32 bit patterns of every kind: zeros, subnormals, normals, the largest
    values and infinities, NaNs (quiet, signalling, with full payloads), the
    halfway points between bf16 neighbours (even and odd) and their
    neighbours, and random bits over the whole range."""
    special = [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00008000, 0x00018000, 0x3F800000,
               0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0x7F7F0000, 0x7F7F7FFF, 0x7F7F8000,
               0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7F800001, 0x7FBFFFFF, 0x7FC00000,
               0x7FFFFFFF, 0xFFFFFFFF, 0xFF800001, 0x7F808000, 0x7FFF8000]
    high = np.random.default_rng(0).integers(0, 1 << 16, 4096, dtype=np.uint32) << 16
    ties = np.concatenate([high | 0x8000, high | 0x7FFF, high | 0x8001, high])
    noise = np.random.default_rng(1).integers(0, 1 << 32, 1 << 15, dtype=np.uint64).astype(np.uint32)
    bits = np.concatenate([np.array(special, np.uint32), ties, noise])
    bits = bits[: len(bits) // 4 * 4]  # whole vectors
    return bits.view(np.float32)


@pytest.mark.parametrize("function", ["scalar", "vector"])
def test_rounds_to_nearest_even_as_the_runtime_defines(engine, function):
    x = interesting_floats()
    got = rounded(engine, function, x)
    want = np.asarray(convert(x, np.dtype("bfloat16"))).view(np.uint16)
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], want[~nan])
    assert np.all(got[nan] == QUIET_NAN >> 16)


def test_exponentials_round_as_the_runtime_defines(engine):
    """Every value an exponential gives (+0 and up, quiet NaNs of either sign)
    rounds to the runtime's bf16 with the unsigned-minimum NaN choice."""
    x = interesting_floats()
    bits = x.view(np.uint32)
    quiet_nan = np.isnan(x) & ((bits & 0x00400000) != 0)
    x = x[(~np.isnan(x) & (bits < 0x80000000)) | quiet_nan]
    got = rounded(engine, "exponential", x)
    want = np.asarray(convert(x, np.dtype("bfloat16"))).view(np.uint16)
    nan = np.isnan(x)
    assert nan.any() and (x[nan].view(np.uint32) >= 0x80000000).any()
    assert np.array_equal(got[~nan], want[~nan])
    assert np.all(got[nan] == QUIET_NAN >> 16)


def test_only_chips_without_a_conversion_instruction():
    """gfx950 converts in hardware (the descriptor's amdgpu.bf16_conversions):
    the pass leaves its fptrunc to llc; gfx942's becomes integer arithmetic."""
    text = """module attributes {tile.target = "amdgpu:gfx942"} {
      llvm.func @f(%x: f32) -> bf16 {
        %y = llvm.fptrunc %x : f32 to bf16
        llvm.return %y : bf16
      }
    }"""
    for chip, kept in (("gfx942", False), ("gfx950", True), ("gfx90a", False), ("gfx1100", False)):
        with ir.Context(), ir.Location.unknown():
            module = ir.Module.parse(text)
            AmdgpuTruncateBf16(target=f"amdgpu:{chip}").run(module.operation, PassState("amdgpu-truncate-bf16"))
            assert ("llvm.fptrunc" in str(module)) == kept, chip
