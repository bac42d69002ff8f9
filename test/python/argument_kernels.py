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


# Host views of A (M = 128): (host argument type, the view op making %A from %A0,
# the kernel's type of %A, the host array holding a given A).
_A = f"memref<128x{K}xf16>"
_A_OFFSET = f"memref<128x{K}xf16, strided<[{K}, 1], offset: {64 * K}>>"
_C_OFFSET = f"memref<128x{N}xf16, strided<[{N}, 1], offset: {32 * N}>>"
HOST_VIEWS = {
    "collapse_shape": (f"memref<2x64x{K}xf16>",
                       f"%A = memref.collapse_shape %A0 [[0, 1], [2]] : memref<2x64x{K}xf16> into {_A}",
                       _A, lambda a: a.reshape(2, 64, K)),
    "expand_shape": (f"memref<{128 * K}xf16>",
                     (f"%A = memref.expand_shape %A0 [[0, 1]] output_shape [128, {K}] : "
                     f"memref<{128 * K}xf16> into {_A}"), _A, lambda a: a.reshape(-1)),
    "reinterpret_cast": (f"memref<{128 * K}xf16>",
                         (f"%A = memref.reinterpret_cast %A0 to offset: [0], sizes: [128, {K}], "
                         f"strides: [{K}, 1] : memref<{128 * K}xf16> to {_A}"), _A, lambda a: a.reshape(-1)),
    "cast": (f"memref<?x{K}xf16>", f"%A = memref.cast %A0 : memref<?x{K}xf16> to {_A}", _A, lambda a: a),
    # Rows 64..191 of a 256-row array; C is rows 32..159 of a 192-row array.
    "subview": (f"memref<256x{K}xf16>",
                f"%A = memref.subview %A0[64, 0] [128, {K}] [1, 1] : memref<256x{K}xf16> to {_A_OFFSET}",
                _A_OFFSET, lambda a: np.concatenate([np.zeros((64, K), a.dtype), a, np.ones((64, K), a.dtype)])),
    # Rows %n..%n+127: an offset known at run time only (n < 9 rows of zeros before A).
    "subview_dynamic": (f"memref<{128 + 16}x{K}xf16>",
                        (f"%A = memref.subview %A0[%n, 0] [128, {K}] [1, 1] : memref<{128 + 16}x{K}xf16> to "
                        f"memref<128x{K}xf16, strided<[{K}, 1], offset: ?>>"),
                        f"memref<128x{K}xf16, strided<[{K}, 1], offset: ?>>", None),
}
C_SUBVIEW = (f"memref<192x{N}xf16>",
             f"%C = memref.subview %C0[32, 0] [128, {N}] [1, 1] : memref<192x{N}xf16> to {_C_OFFSET}",
             _C_OFFSET)


def viewed_gemm(view: str, name: str = "gemm") -> str:
    """scaled_gemm (M = 128) whose host function makes %A with a view op
    (HOST_VIEWS); with "subview", %C is a subview too (C_SUBVIEW)."""
    host_type, op, kernel_type, _ = HOST_VIEWS[view]
    text = scaled_gemm(128, name=name)
    text = text.replace(f"%A: {_A},", f"%A0: {host_type},", 1)
    text = text.replace('  "tile.kernel"() ({', f'  {op}\n  "tile.kernel"() ({{', 1)
    text = text.replace(f"({_A}, memref<", f"({kernel_type}, memref<")
    if view == "subview":
        c_host, c_op, c_kernel = C_SUBVIEW
        text = text.replace(f"%C: memref<128x{N}xf16>,", f"%C0: {c_host},", 1)
        text = text.replace('  "tile.kernel"() ({', f'  {c_op}\n  "tile.kernel"() ({{', 1)
        text = text.replace(f", memref<128x{N}xf16>, index, index)", f", {c_kernel}, index, index)")
    return text


def viewed_gemm_arguments(view: str, seed: int) -> tuple[list, list, slice]:
    """(host arguments, the logical [A, B, C, scalars...], the rows of the host C that are C)."""
    logical = scaled_gemm_inputs(128, seed)
    host = list(logical)
    if view == "subview_dynamic":
        n = logical[6]
        host[0] = np.zeros((128 + 16, K), np.float16)
        host[0][n:n + 128] = logical[0]
    else:
        host[0] = np.ascontiguousarray(HOST_VIEWS[view][3](logical[0]))
    rows = slice(0, 128)
    if view == "subview":
        host[2] = np.full((192, N), np.nan, np.float16)
        rows = slice(32, 160)
    return host, logical, rows
