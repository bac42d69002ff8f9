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


def gemm_kernel(m: int, n: int, k: int, *, block: tuple[int, int, int] = (128, 128, 32),
                planted: str = "", extra_grid: int = 0) -> str:
    """C (f32) += A (f16, MxK) . B (f16, KxN) with 256 threads (2x2 waves), LDS
    tiles carved by memref.view from one workgroup attribution, B stored
    transposed in LDS through a permuted vector.transfer_write, an scf.for over
    K with the accumulators as iter_args, v_mfma_f32_32x32x8_f16 per 32x32
    piece, barriers around the compute phase, and C written back through a
    dynamic vector.extract in an scf.for.

    `planted` plants one bug for the sanitizer tests: "no-barrier-after-copy",
    "no-barrier-after-compute", "skip-copy-b"; `extra_grid` launches that many
    more workgroups along M than the problem has (reading past A)."""
    bm, bn, bk = block
    wm, wn = bm // 2, bn // 2  # wave tile
    tm, tn = wm // 32, wn // 32  # 32x32 MFMA pieces per wave
    a_vectors = bm * bk // 8 // 256  # 8-element vectors each thread copies
    b_vectors = bk * bn // 8 // 256
    lds_bytes = 2 * (bm * bk + bn * bk)
    acc_names = [f"%acc{i}_{j}" for i in range(tm) for j in range(tn)]
    acc_t = "vector<16xf32>"
    lines = []
    emit = lines.append
    emit("      %c0 = arith.constant 0 : index")
    emit("      %c1 = arith.constant 1 : index")
    emit("      %c8 = arith.constant 8 : index")
    emit("      %c16 = arith.constant 16 : index")
    emit(f"      %cK = arith.constant {k} : index")
    emit(f"      %cBK = arith.constant {bk} : index")
    emit(f"      %a_bytes = arith.constant {2 * bm * bk} : index")
    emit("      %t = gpu.thread_id x")
    emit("      %lane = gpu.lane_id")
    emit("      %bx = gpu.block_id x")
    emit("      %by = gpu.block_id y")
    emit(f"      %m0 = affine.apply affine_map<(b) -> (b * {bm})>(%bx)")
    emit(f"      %n0 = affine.apply affine_map<(b) -> (b * {bn})>(%by)")
    emit(f"      %lds_a = memref.view %lds[%c0][] : memref<{lds_bytes}xi8, #wg> "
         f"to memref<{bm}x{bk}xf16, #wg>")
    emit(f"      %lds_bt = memref.view %lds[%a_bytes][] : memref<{lds_bytes}xi8, #wg> "
         f"to memref<{bn}x{bk}xf16, #wg>")
    emit(f"      %wave_m = affine.apply affine_map<(t) -> ((t floordiv 64) mod 2 * {wm})>(%t)")
    emit(f"      %wave_n = affine.apply affine_map<(t) -> (t floordiv 128 * {wn})>(%t)")
    emit("      %row = affine.apply affine_map<(l) -> (l mod 32)>(%lane)")
    emit("      %kq = affine.apply affine_map<(l) -> (l floordiv 32 * 4)>(%lane)")
    emit(f"      %zero = arith.constant dense<0.0> : {acc_t}")
    inits = ", ".join(f"{a} = %zero" for a in acc_names)
    types = ", ".join([acc_t] * len(acc_names))
    emit(f"      %acc:{len(acc_names)} = scf.for %kb = %c0 to %cK step %cBK "
         f"iter_args({inits}) -> ({types}) {{")
    # copy A: vectors of 8 along K
    emit(f"        scf.for %v = %c0 to %c{a_vectors}_ step %c1 {{".replace(
        f"%c{a_vectors}_", "%na"))
    lines.insert(-1, f"        %na = arith.constant {a_vectors} : index")
    emit("          %ia = affine.apply affine_map<(t, v) -> (t + v * 256)>(%t, %v)")
    emit(f"          %ar = affine.apply affine_map<(i) -> (i floordiv {bk // 8})>(%ia)")
    emit(f"          %ac = affine.apply affine_map<(i) -> (i mod {bk // 8} * 8)>(%ia)")
    emit("          %gr = arith.addi %m0, %ar : index")
    emit("          %gc = arith.addi %kb, %ac : index")
    emit("          %va = vector.load %A[%gr, %gc] : memref<?x?xf16>, vector<8xf16>")
    emit(f"          vector.store %va, %lds_a[%ar, %ac] : memref<{bm}x{bk}xf16, #wg>, vector<8xf16>")
    emit("        }")
    if planted != "skip-copy-b":
        emit(f"        %nb = arith.constant {b_vectors} : index")
        emit("        scf.for %v = %c0 to %nb step %c1 {")
        emit("          %ib = affine.apply affine_map<(t, v) -> (t + v * 256)>(%t, %v)")
        emit(f"          %br = affine.apply affine_map<(i) -> (i floordiv {bn // 8})>(%ib)")
        emit(f"          %bc = affine.apply affine_map<(i) -> (i mod {bn // 8} * 8)>(%ib)")
        emit("          %gk = arith.addi %kb, %br : index")
        emit("          %gn = arith.addi %n0, %bc : index")
        emit("          %vb = vector.load %B[%gk, %gn] : memref<?x?xf16>, vector<8xf16>")
        emit("          vector.transfer_write %vb, %lds_bt[%bc, %br] "
             "{in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : "
             f"vector<8xf16>, memref<{bn}x{bk}xf16, #wg>")
        emit("        }")
    if planted != "no-barrier-after-copy":
        emit("        gpu.barrier")
    inner = ", ".join(f"%in{i} = {a}" for i, a in enumerate(acc_names))
    emit(f"        %part:{len(acc_names)} = scf.for %ks = %c0 to %cBK step %c8 "
         f"iter_args({inner}) -> ({types}) {{")
    emit("          %kk = arith.addi %ks, %kq : index")
    for i in range(tm):
        emit(f"          %ra{i} = affine.apply affine_map<(w, r) -> (w + r + {32 * i})>"
             "(%wave_m, %row)")
        emit(f"          %fa{i} = vector.load %lds_a[%ra{i}, %kk] : "
             f"memref<{bm}x{bk}xf16, #wg>, vector<4xf16>")
    for j in range(tn):
        emit(f"          %rb{j} = affine.apply affine_map<(w, r) -> (w + r + {32 * j})>"
             "(%wave_n, %row)")
        emit(f"          %fb{j} = vector.load %lds_bt[%rb{j}, %kk] : "
             f"memref<{bn}x{bk}xf16, #wg>, vector<4xf16>")
    outs = []
    for index, _ in enumerate(acc_names):
        i, j = divmod(index, tn)
        emit(f"          %d{index} = amdgpu.mfma 32x32x8 %fa{i} * %fb{j} + %in{index} "
             f"blgp = none : vector<4xf16>, vector<4xf16>, {acc_t}")
        outs.append(f"%d{index}")
    emit(f"          scf.yield {', '.join(outs)} : {types}")
    emit("        }")
    if planted != "no-barrier-after-compute":
        emit("        gpu.barrier")
    parts = ", ".join(f"%part#{i}" for i in range(len(acc_names)))
    emit(f"        scf.yield {parts} : {types}")
    emit("      }")
    for index, _ in enumerate(acc_names):
        i, j = divmod(index, tn)
        emit("      scf.for %e = %c0 to %c16 step %c1 {")
        emit(f"        %ci = affine.apply affine_map<(e, l)[m, w] -> (m + w + {32 * i} + "
             "e floordiv 4 * 8 + l floordiv 32 * 4 + e mod 4)>(%e, %lane)[%m0, %wave_m]")
        emit(f"        %cj = affine.apply affine_map<(l)[n, w] -> (n + w + {32 * j} + l mod 32)>"
             "(%lane)[%n0, %wave_n]")
        emit(f"        %x = vector.extract %acc#{index}[%e] : f32 from {acc_t}")
        emit("        %old = memref.load %C[%ci, %cj] : memref<?x?xf32>")
        emit("        %new = arith.addf %old, %x : f32")
        emit("        memref.store %new, %C[%ci, %cj] : memref<?x?xf32>")
        emit("      }")
    body = "\n".join(lines)
    gm, gn = m // bm + extra_grid, n // bn
    return f"""#wg = #gpu.address_space<workgroup>
module attributes {{gpu.container_module}} {{
  func.func @entry(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %C: memref<?x?xf32>) {{
    %c1 = arith.constant 1 : index
    %gm = arith.constant {gm} : index
    %gn = arith.constant {gn} : index
    %threads = arith.constant 256 : index
    gpu.launch_func @mod::@gemm blocks in (%gm, %gn, %c1) threads in (%threads, %c1, %c1)
        args(%A : memref<?x?xf16>, %B : memref<?x?xf16>, %C : memref<?x?xf32>)
    return
  }}
  gpu.module @mod {{
    gpu.func @gemm(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %C: memref<?x?xf32>)
        workgroup(%lds: memref<{lds_bytes}xi8, #wg>) kernel
        attributes {{known_block_size = array<i32: 256, 1, 1>}} {{
{body}
      gpu.return
    }}
  }}
}}
"""
