"""Tile IR kernels whose host functions take scalar arguments, dynamic shapes
and views, written out from a few parameters, with their NumPy meaning.

`scaled_gemm` is an f16 GEMM whose epilogue scales the f32 accumulator by two
scalar f32 arguments and adds an i32 and an index argument:

    C = f16((A @ B) * sa * sb + shift + n)

with M static or dynamic (`memref<?x64xf16>`): the grid covers `rows`
rows, tile.copy reads zeros past M and drops writes past it.
"""

from __future__ import annotations

import numpy as np

K, N, BLOCK_M, BLOCK_N, BLOCK_K = 64, 128, 64, 64, 32
SHARED = "#gpu.address_space<workgroup>"
FRAGMENT = "#gpu.address_space<private>"


def scaled_gemm(rows: int = 128, dynamic: bool = False, name: str = "gemm") -> str:
    m = "?" if dynamic else str(rows)
    a, b, c = f"memref<{m}x{K}xf16>", f"memref<{K}x{N}xf16>", f"memref<{m}x{N}xf16>"
    a_s, b_s = f"memref<{BLOCK_M}x{BLOCK_K}xf16, {SHARED}>", f"memref<{BLOCK_K}x{BLOCK_N}xf16, {SHARED}>"
    acc = f"memref<{BLOCK_M}x{BLOCK_N}xf32, {FRAGMENT}>"
    grid = f"{N // BLOCK_N}, {-(-rows // BLOCK_M)}"
    return "\n".join([
        f"func.func @{name}(%A: {a}, %B: {b}, %C: {c}, %sa: f32, %sb: f32, %shift: i32, %n: index) {{",
        '  "tile.kernel"() ({',
        "  ^bb0(%bx: index, %by: index):",
        "    %c0 = arith.constant 0 : index",
        "    %c1 = arith.constant 1 : index",
        f"    %bM = arith.constant {BLOCK_M} : index",
        f"    %bN = arith.constant {BLOCK_N} : index",
        f"    %bK = arith.constant {BLOCK_K} : index",
        f"    %num_k = arith.constant {K // BLOCK_K} : index",
        "    %zero = arith.constant 0.0 : f32",
        f'    %A_s = "tile.alloc_shared"() : () -> {a_s}',
        f'    %B_s = "tile.alloc_shared"() : () -> {b_s}',
        f'    %acc = "tile.alloc_fragment"() : () -> {acc}',
        f'    "tile.fill"(%acc, %zero) : ({acc}, f32) -> ()',
        "    %row = arith.muli %by, %bM : index",
        "    %col = arith.muli %bx, %bN : index",
        "    scf.for %ko = %c0 to %num_k step %c1 {",
        "      %k = arith.muli %ko, %bK : index",
        (f'      "tile.copy"(%A, %A_s, %row, %k) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}} '
        f": ({a}, {a_s}, index, index) -> ()"),
        (f'      "tile.copy"(%B, %B_s, %k, %col) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}} '
        f": ({b}, {b_s}, index, index) -> ()"),
        (f'      "tile.gemm"(%A_s, %B_s, %acc) {{accum_dtype = f32, transpose_a = false, transpose_b = false}} '
        f": ({a_s}, {b_s}, {acc}) -> ()"),
        "    } {tile.num_stages = 2 : i64}",
        "    %scale = arith.mulf %sa, %sb : f32",
        "    %shift_f = arith.sitofp %shift : i32 to f32",
        "    %n_i = arith.index_cast %n : index to i32",
        "    %n_f = arith.sitofp %n_i : i32 to f32",
        "    %add = arith.addf %shift_f, %n_f : f32",
        "    scf.parallel (%i, %j) = (%c0, %c0) to (%bM, %bN) step (%c1, %c1) {",
        f"      %v = memref.load %acc[%i, %j] : {acc}",
        "      %scaled = arith.mulf %v, %scale : f32",
        "      %moved = arith.addf %scaled, %add : f32",
        f"      memref.store %moved, %acc[%i, %j] : {acc}",
        "      scf.reduce",
        "    }",
        (f'    "tile.copy"(%acc, %C, %row, %col) {{operandSegmentSizes = array<i32: 1, 1, 0, 2>}} '
        f": ({acc}, {c}, index, index) -> ()"),
        "    gpu.yield",
        f"  }}) {{grid = array<i64: {grid}>, threads = 256 : i64}} : () -> ()",
        "  return",
        "}",
    ]) + "\n"


def scaled_gemm_inputs(m: int, seed: int) -> list:
    """[A, B, C (NaN-poisoned), sa, sb, shift, n] for an M of `m` rows."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (m, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    c = np.full((m, N), np.nan, np.float16)
    return [a, b, c, float(rng.uniform(0.5, 2)), float(rng.uniform(0.5, 2)), int(rng.integers(-9, 9)),
            int(rng.integers(1, 9))]


def scaled_gemm_expected(args: list) -> np.ndarray:
    a, b, _, sa, sb, shift, n = args
    scale = np.float32(np.float32(sa) * np.float32(sb))
    return (a.astype(np.float64) @ b.astype(np.float64)) * np.float64(scale) + (shift + n)


def scaled_gemm_tolerance(args: list) -> np.ndarray:
    """Per element: f32 sums of K exact f16 products, the scale and the add
    (K + 3 roundings of 2^-24 relative to the sum of magnitudes), then the
    output's rounding to f16 (half an ulp: 2^-11 relative, 2^-25 absolute at
    the subnormals)."""
    a, b, _, sa, sb, shift, n = args
    magnitude = (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) * sa * sb + abs(shift + n)
    expected = scaled_gemm_expected(args)
    return (K + 3) * 2.0 ** -24 * magnitude + np.abs(expected) * 2.0 ** -11 + 2.0 ** -25
