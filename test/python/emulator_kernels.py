"""GPU-level kernels written in upstream dialects, generated from templates,
for the emulator tests (shared by test_emulator*.py)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from tilemlir.runtime.mfma_layouts import Mfma

MLIR_TYPE = {
    "f32": "f32", "xf32": "f32", "f16": "f16", "bf16": "bf16", "i8": "i8", "f64": "f64",
    "i32": "i32",
}
FP8_MLIR = {
    "gfx942": {"fp8": "f8E4M3FNUZ", "bf8": "f8E5M2FNUZ"},
    "gfx950": {"fp8": "f8E4M3FN", "bf8": "f8E5M2"},
}
NUMPY = {
    "f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8,
    "f64": np.float64, "i32": np.int32, "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz, "f8E4M3FN": ml_dtypes.float8_e4m3fn,
    "f8E5M2": ml_dtypes.float8_e5m2,
}


def element_type(kind: str, chip: str) -> str:
    return FP8_MLIR[chip][kind] if kind in ("fp8", "bf8") else MLIR_TYPE[kind]


def _operand_type(count: int, element: str) -> str:
    return element if count == 1 and element in ("f32", "f64") else f"vector<{count}x{element}>"


def _result_item(instr: Mfma, item: int) -> tuple[str, str, str]:
    """Affine expressions of the lane `l` giving (block, i, j) of result `item`,
    the inverse of AMD's C/D layout (AMD Matrix Instruction Calculator)."""
    m = instr.m
    if instr.acc == "f64":
        if m == 16:
            return "0", f"l floordiv 16 + {4 * item}", "l mod 16"
        return "(l floordiv 4) mod 4", "l floordiv 16", "l mod 4"
    if m == 32:
        block, r = divmod(item, 16)
        return str(block), f"{8 * (r // 4) + r % 4} + 4 * (l floordiv 32)", "l mod 32"
    if m == 16:
        block, r = divmod(item, 4)
        return str(block), f"{r} + 4 * (l floordiv 16)", "l mod 16"
    return "l floordiv 4", str(item), "l mod 4"


def mfma_kernel(instr: Mfma, chip: str, waves: int = 2) -> str:
    """A launch of `grid` workgroups of `waves` waves; wave p (over the whole
    grid) computes problem p: D[p] = C[p] + A[p] . B[p] per block, loading
    each lane's A, B^T (both K-contiguous) and C values per AMD's layout,
    running one amdgpu.mfma and storing D per the layout."""
    a_el, b_el = element_type(instr.a, chip), element_type(instr.b, chip)
    acc = MLIR_TYPE[instr.acc]
    kpl, ncd = instr.per_lane, instr.results_per_lane
    m, n, k, nb = instr.m, instr.n, instr.k, instr.blocks
    threads = 64 * waves
    a_t = f"memref<?x{nb}x{m}x{k}x{a_el}>"
    b_t = f"memref<?x{nb}x{n}x{k}x{b_el}>"
    c_t = f"memref<?x{nb}x{m}x{n}x{acc}>"
    a_op, b_op = _operand_type(kpl, a_el), _operand_type(kpl, b_el)
    c_op = acc if ncd == 1 else f"vector<{ncd}x{acc}>"
    lines = []
    emit = lines.append
    emit("      %t = gpu.thread_id x")
    emit("      %wg = gpu.block_id x")
    emit(f"      %p = affine.apply affine_map<(t, g) -> (g * {waves} + t floordiv 64)>(%t, %wg)")
    emit("      %l = gpu.lane_id")
    emit(f"      %ai = affine.apply affine_map<(l) -> (l mod {m})>(%l)")
    emit(f"      %ab = affine.apply affine_map<(l) -> ((l floordiv {m}) mod {nb})>(%l)")
    emit(f"      %ak = affine.apply affine_map<(l) -> ((l floordiv {m * nb}) * {kpl})>(%l)")
    emit(f"      %bj = affine.apply affine_map<(l) -> (l mod {n})>(%l)")
    emit(f"      %bb = affine.apply affine_map<(l) -> ((l floordiv {n}) mod {nb})>(%l)")
    emit(f"      %bk = affine.apply affine_map<(l) -> ((l floordiv {n * nb}) * {kpl})>(%l)")
    if a_op.startswith("vector"):
        emit(f"      %a = vector.load %A[%p, %ab, %ai, %ak] : {a_t}, {a_op}")
        emit(f"      %b = vector.load %B[%p, %bb, %bj, %bk] : {b_t}, {b_op}")
    else:
        emit(f"      %a = memref.load %A[%p, %ab, %ai, %ak] : {a_t}")
        emit(f"      %b = memref.load %B[%p, %bb, %bj, %bk] : {b_t}")
    coords = []
    for item in range(ncd):
        block, i, j = _result_item(instr, item)
        for name, expr in (("b", block), ("i", i), ("j", j)):
            emit(f"      %{name}{item} = affine.apply affine_map<(l) -> ({expr})>(%l)")
        emit(f"      %c{item} = memref.load %C[%p, %b{item}, %i{item}, %j{item}] : {c_t}")
        coords.append(item)
    c_value = "%c0" if ncd == 1 else "%c"
    if ncd > 1:
        elements = ", ".join(f"%c{item}" for item in coords)
        emit(f"      %c = vector.from_elements {elements} : {c_op}")
    attrs = ", reducePrecision" if instr.a == "xf32" else ""
    emit(f"      %d = amdgpu.mfma {m}x{n}x{k} %a * %b + {c_value} {{blocks = {nb} : i32{attrs}}} "
         f"blgp = none : {a_op}, {b_op}, {c_op}")
    for item in coords:
        if ncd == 1:
            emit(f"      memref.store %d, %D[%p, %b{item}, %i{item}, %j{item}] : {c_t}")
        else:
            emit(f"      %d{item} = vector.extract %d[{item}] : {acc} from {c_op}")
            emit(f"      memref.store %d{item}, %D[%p, %b{item}, %i{item}, %j{item}] : {c_t}")
    body = "\n".join(lines)
    return f"""module attributes {{gpu.container_module}} {{
  func.func @entry(%A: {a_t}, %B: {b_t}, %C: {c_t}, %D: {c_t}, %grid: index) {{
    %c1 = arith.constant 1 : index
    %threads = arith.constant {threads} : index
    gpu.launch_func @mod::@kern blocks in (%grid, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%A : {a_t}, %B : {b_t}, %C : {c_t}, %D : {c_t})
    return
  }}
  gpu.module @mod {{
    gpu.func @kern(%A: {a_t}, %B: {b_t}, %C: {c_t}, %D: {c_t}) kernel
        attributes {{known_block_size = array<i32: {threads}, 1, 1>}} {{
{body}
      gpu.return
    }}
  }}
}}
"""


def random_values(shape, mlir_type: str, rng: np.random.Generator) -> np.ndarray:
    """Random values exactly representable in `mlir_type` (as that dtype)."""
    dtype = NUMPY[mlir_type]
    if mlir_type in ("i8", "i32"):
        return rng.integers(-128, 128, size=shape).astype(dtype)
    scale = 8.0 if mlir_type.startswith("f8") else 4.0
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(dtype)
