"""Tile IR kernels for the runtime tests, written out from a few parameters.

`gemm_kernel` is the seed's GEMM (examples/seed_fp8_gemm.mlir) generalized:
any M, N, K and block sizes (the grid rounds up, so edge blocks read zeros
and drop writes), transposed operands, any element types, and three
epilogues: `copy` (tile.copy converts the accumulator, dropping out-of-bounds
writes), `store` (the seed's scf.parallel of memref.store; needs block-multiple
shapes) and `bias_relu` (scf.parallel adding a bias row and applying ReLU,
guarded by scf.if at the edges). test/Runtime/Inputs/*.mlir were written by
this module (`python test/python/kernel_text.py` rewrites them).

`whole_problem_gemm` is one tile.gemm on whole global buffers (tile-tiling
makes the kernel); `seed_kernel` is examples/seed_fp8_gemm.mlir at another size.
`pv_kernel` is flash attention's P @ V step: P written to shared memory by a
T.Parallel over a gemm's accumulator, then read by the next gemm.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tilemlir.dialects.element_types import bit_width_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SHARED = "#gpu.address_space<workgroup>"
FRAGMENT = "#gpu.address_space<private>"


def ceildiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Gemm:
    m: int
    n: int
    k: int
    block: tuple[int, int, int] = (128, 128, 32)
    in_type: str = "f8E4M3FNUZ"
    acc_type: str = "f32"
    out_type: str = "f16"
    transpose_a: bool = False
    transpose_b: bool = False
    epilogue: str = "copy"  # copy | store | bias_relu
    name: str = "gemm"
    stages: int = 3

    @property
    def a_shape(self) -> tuple[int, int]:
        return (self.k, self.m) if self.transpose_a else (self.m, self.k)

    @property
    def b_shape(self) -> tuple[int, int]:
        return (self.n, self.k) if self.transpose_b else (self.k, self.n)


def _memref(shape, element: str, space: str | None = None) -> str:
    dims = "x".join(str(d) for d in shape)
    return f"memref<{dims}x{element}, {space}>" if space else f"memref<{dims}x{element}>"


def _zero(element: str) -> str:
    return f"arith.constant 0 : {element}" if element.startswith("i") else f"arith.constant 0.0 : {element}"


def _cast(value: str, source: str, target: str, result: str) -> str:
    if source == target:
        return ""
    op = "truncf" if _width(target) < _width(source) else "extf"
    return f"%{result} = arith.{op} %{value} : {source} to {target}"


def _width(element: str) -> int:
    return bit_width_of(element)


def gemm_kernel(g: Gemm) -> str:
    bm, bn, bk = g.block
    a_g, b_g = _memref(g.a_shape, g.in_type), _memref(g.b_shape, g.in_type)
    c_g = _memref((g.m, g.n), g.out_type)
    a_tile = (bk, bm) if g.transpose_a else (bm, bk)
    b_tile = (bn, bk) if g.transpose_b else (bk, bn)
    a_s, b_s = _memref(a_tile, g.in_type, SHARED), _memref(b_tile, g.in_type, SHARED)
    c_l = _memref((bm, bn), g.acc_type, FRAGMENT)
    a_at = "%k, %row" if g.transpose_a else "%row, %k"
    b_at = "%col, %k" if g.transpose_b else "%k, %col"
    bias = f", %bias: memref<{g.n}x{g.acc_type}>" if g.epilogue == "bias_relu" else ""
    lines = [
        f"func.func @{g.name}(%A: {a_g}, %B: {b_g}, %C: {c_g}{bias}) {{",
        '  "tile.kernel"() ({',
        "  ^bb0(%bx: index, %by: index):",
        "    %c0 = arith.constant 0 : index",
        "    %c1 = arith.constant 1 : index",
        f"    %bM = arith.constant {bm} : index",
        f"    %bN = arith.constant {bn} : index",
        f"    %bK = arith.constant {bk} : index",
        f"    %num_k = arith.constant {ceildiv(g.k, bk)} : index",
        f"    %zero = {_zero(g.acc_type)}",
        f'    %A_s = "tile.alloc_shared"() : () -> {a_s}',
        f'    %B_s = "tile.alloc_shared"() : () -> {b_s}',
        f'    %C_l = "tile.alloc_fragment"() : () -> {c_l}',
        f'    "tile.fill"(%C_l, %zero) : ({c_l}, {g.acc_type}) -> ()',
        "    %row = arith.muli %by, %bM : index",
        "    %col = arith.muli %bx, %bN : index",
        "    scf.for %ko = %c0 to %num_k step %c1 {",
        "      %k = arith.muli %ko, %bK : index",
        (f'      "tile.copy"(%A, %A_s, {a_at}) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}}'
         f" : ({a_g}, {a_s}, index, index) -> ()"),
        (f'      "tile.copy"(%B, %B_s, {b_at}) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}}'
         f" : ({b_g}, {b_s}, index, index) -> ()"),
        (f'      "tile.gemm"(%A_s, %B_s, %C_l) {{accum_dtype = {g.acc_type}, '
         f"transpose_a = {str(g.transpose_a).lower()}, transpose_b = {str(g.transpose_b).lower()}}}"
         f" : ({a_s}, {b_s}, {c_l}) -> ()"),
        f"    }} {{tile.num_stages = {g.stages} : i64}}",
    ]
    lines += _epilogue(g, c_l, c_g)
    grid = f"{ceildiv(g.n, bn)}, {ceildiv(g.m, bm)}"
    lines += [
        "    gpu.yield",
        f"  }}) {{grid = array<i64: {grid}>, threads = 256 : i64}} : () -> ()",
        "  return",
        "}",
    ]
    return "\n".join(lines) + "\n"


def _epilogue(g: Gemm, c_l: str, c_g: str) -> list[str]:
    if g.epilogue == "copy":
        return [(f'    "tile.copy"(%C_l, %C, %row, %col) {{operandSegmentSizes = array<i32: 1, 1, 0, 2>}}'
                 f" : ({c_l}, {c_g}, index, index) -> ()")]
    head = ["    scf.parallel (%i, %j) = (%c0, %c0) to (%bM, %bN) step (%c1, %c1) {",
            f"      %acc = memref.load %C_l[%i, %j] : {c_l}",
            "      %gi = arith.addi %row, %i : index",
            "      %gj = arith.addi %col, %j : index"]
    if g.epilogue == "store":
        cast = _cast("acc", g.acc_type, g.out_type, "out")
        value = "out" if cast else "acc"
        body = ([f"      {cast}"] if cast else []) + [f"      memref.store %{value}, %C[%gi, %gj] : {c_g}"]
        return head + body + ["      scf.reduce", "    }"]
    if g.epilogue == "bias_relu":
        cast = _cast("relu", g.acc_type, g.out_type, "out")
        value = "out" if cast else "relu"
        return head + [
            f"      %m = arith.constant {g.m} : index",
            f"      %n = arith.constant {g.n} : index",
            "      %in_m = arith.cmpi slt, %gi, %m : index",
            "      %in_n = arith.cmpi slt, %gj, %n : index",
            "      %inside = arith.andi %in_m, %in_n : i1",
            "      scf.if %inside {",
            f"        %b = memref.load %bias[%gj] : memref<{g.n}x{g.acc_type}>",
            f"        %sum = arith.addf %acc, %b : {g.acc_type}",
            f"        %relu = arith.maximumf %sum, %zero : {g.acc_type}",
            *([f"        {cast}"] if cast else []),
            f"        memref.store %{value}, %C[%gi, %gj] : {c_g}",
            "      }",
            "      scf.reduce",
            "    }",
        ]
    raise ValueError(f"unknown epilogue {g.epilogue}")


def whole_problem_gemm(m: int, n: int, k: int, dtype: str, out: str, transpose_b: bool = False,
                       zero_fill: bool = True, accum: str = "f32") -> str:
    """@gemm: C (M x N, `out`) = A (M x K) * B (K x N, or N x K with `transpose_b`),
    operands of `dtype`, `accum` accumulation; C zero-filled first unless not `zero_fill`."""
    b_shape = f"{n}x{k}" if transpose_b else f"{k}x{n}"
    zero = "0" if out.startswith("i") else "0.0"
    fill = (f'  %zero = arith.constant {zero} : {out}\n'
            f'  "tile.fill"(%C, %zero) : (memref<{m}x{n}x{out}>, {out}) -> ()\n') if zero_fill else ""
    return (
        f"func.func @gemm(%A: memref<{m}x{k}x{dtype}>, %B: memref<{b_shape}x{dtype}>, "
        f"%C: memref<{m}x{n}x{out}>) {{\n{fill}"
        f'  "tile.gemm"(%A, %B, %C) {{accum_dtype = {accum}, transpose_a = false, '
        f'transpose_b = {"true" if transpose_b else "false"}}} : (memref<{m}x{k}x{dtype}>, '
        f"memref<{b_shape}x{dtype}>, memref<{m}x{n}x{out}>) -> ()\n  return\n}}\n"
    )


def seed_kernel(size: int, name: str | None = None) -> str:
    """examples/seed_fp8_gemm.mlir (kernel form) at size^3 instead of 1024^3,
    its function renamed to `name` if given."""
    text = (EXAMPLES / "seed_fp8_gemm.mlir").read_text()
    blocks = size // 128
    text = (text.replace("1024x1024", f"{size}x{size}")
            .replace("array<i64: 8, 8>", f"array<i64: {blocks}, {blocks}>")
            .replace("%num_k = arith.constant 32", f"%num_k = arith.constant {size // 32}"))
    return text.replace("@mixed_precision_gemm", f"@{name}") if name else text


def softmax_kernel(m: int, n: int, block_m: int, in_type: str = "f32", out_type: str = "f16",
                   name: str = "softmax") -> str:
    """Row softmax: tile.reduce max, exp(x - max) in scf.parallel, tile.reduce
    sum, divide in scf.parallel; one block of `block_m` whole rows."""
    x_g, y_g = _memref((m, n), in_type), _memref((m, n), out_type)
    tile = _memref((block_m, n), "f32", FRAGMENT)
    row_vec = _memref((block_m,), "f32", FRAGMENT)
    return "\n".join([
        f"func.func @{name}(%X: {x_g}, %Y: {y_g}) {{",
        '  "tile.kernel"() ({',
        "  ^bb0(%bx: index):",
        "    %c0 = arith.constant 0 : index",
        "    %c1 = arith.constant 1 : index",
        f"    %bM = arith.constant {block_m} : index",
        f"    %n = arith.constant {n} : index",
        f'    %X_l = "tile.alloc_fragment"() : () -> {tile}',
        f'    %max = "tile.alloc_fragment"() : () -> {row_vec}',
        f'    %sum = "tile.alloc_fragment"() : () -> {row_vec}',
        "    %row = arith.muli %bx, %bM : index",
        (f'    "tile.copy"(%X, %X_l, %row, %c0) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}}'
         f" : ({x_g}, {tile}, index, index) -> ()"),
        f'    "tile.reduce"(%X_l, %max) {{clear = true, dim = 1 : i64, kind = "max"}} : ({tile}, {row_vec}) -> ()',
        "    scf.parallel (%i, %j) = (%c0, %c0) to (%bM, %n) step (%c1, %c1) {",
        f"      %x = memref.load %X_l[%i, %j] : {tile}",
        f"      %mx = memref.load %max[%i] : {row_vec}",
        "      %d = arith.subf %x, %mx : f32",
        "      %e = math.exp %d : f32",
        f"      memref.store %e, %X_l[%i, %j] : {tile}",
        "      scf.reduce",
        "    }",
        f'    "tile.reduce"(%X_l, %sum) {{clear = true, dim = 1 : i64, kind = "sum"}} : ({tile}, {row_vec}) -> ()',
        "    scf.parallel (%i, %j) = (%c0, %c0) to (%bM, %n) step (%c1, %c1) {",
        f"      %e = memref.load %X_l[%i, %j] : {tile}",
        f"      %s = memref.load %sum[%i] : {row_vec}",
        "      %y = arith.divf %e, %s : f32",
        f"      memref.store %y, %X_l[%i, %j] : {tile}",
        "      scf.reduce",
        "    }",
        (f'    "tile.copy"(%X_l, %Y, %row, %c0) {{operandSegmentSizes = array<i32: 1, 1, 0, 2>}}'
         f" : ({tile}, {y_g}, index, index) -> ()"),
        "    gpu.yield",
        f"  }}) {{grid = array<i64: {ceildiv(m, block_m)}>, threads = 256 : i64}} : () -> ()",
        "  return",
        "}",
    ]) + "\n"


def runtime_inputs() -> dict[str, tuple[str, str]]:
    """test/Runtime/Inputs: file name -> (comment, kernel text)."""
    wrong = gemm_kernel(Gemm(64, 200, 96)).replace(
        "%num_k = arith.constant 3 : index", "%num_k = arith.constant 2 : index")
    return {
        "gemm_fp8_1000.mlir": (
            ("The seed's FP8 GEMM at M = N = K = 1000: not a multiple of the 128x128x32 blocks,\n"
             "// so edge blocks read zeros and drop their writes (tile.copy epilogue)."),
            gemm_kernel(Gemm(1000, 1000, 1000))),
        "gemm_fp8_64x200x96.mlir": (
            "The seed's FP8 GEMM at 64x200x96: M smaller than one block, N and K not multiples.",
            gemm_kernel(Gemm(64, 200, 96))),
        "gemm_fp8_transposed.mlir": (
            "FP8 GEMM with both operands transposed (A stored K x M, B stored N x K).",
            gemm_kernel(Gemm(256, 192, 160, block=(64, 64, 32), transpose_a=True, transpose_b=True))),
        "gemm_bf16.mlir": (
            "bf16 GEMM, f32 accumulation, f32 output, transposed B.",
            gemm_kernel(Gemm(200, 160, 96, block=(64, 64, 32), in_type="bf16", out_type="f32",
                             transpose_b=True))),
        "gemm_i8.mlir": (
            "int8 GEMM, i32 accumulation and output: exact.",
            gemm_kernel(Gemm(200, 160, 96, block=(64, 64, 32), in_type="i8", acc_type="i32",
                             out_type="i32"))),
        "gemm_bias_relu.mlir": (
            "FP8 GEMM with an scf.parallel epilogue: C = f16(relu(acc + bias)), guarded at the edges.",
            gemm_kernel(Gemm(200, 160, 96, block=(64, 64, 32), epilogue="bias_relu"))),
        "softmax.mlir": (
            ("Row softmax from tile.reduce (max, sum) and scf.parallel (exp, divide); 100 rows in "
             "blocks of 32."),
            softmax_kernel(100, 64, 32)),
        "gemm_fp8_wrong.mlir": (
            ("A wrong FP8 GEMM: the K loop stops one tile early (num_k = 2 for K = 96).\n"
             "// tile-run must fail it."),
            wrong),
    }


if __name__ == "__main__":
    inputs = Path(__file__).resolve().parents[1] / "Runtime" / "Inputs"
    for name, (comment, text) in runtime_inputs().items():
        (inputs / name).write_text(f"// {comment}\n// Written by test/python/kernel_text.py.\n{text}")


# pv_kernel: S = A (PV_M x PV_K) . B (PV_K x PV_N); O = P (PV_M x PV_N) . V (PV_N x PV_N).
PV_M, PV_N, PV_K = 64, 64, 32
PV_SCALE = 0.125


def pv_kernel(loop: int = 0) -> str:
    """S = A.B into a fragment; P = f16(S * PV_SCALE) written to shared memory by
    a T.Parallel over S; O += P.V. With `loop` > 0, the P and O steps run
    `loop` times in an scf.for (P is rewritten each iteration after the
    previous iteration's gemm read it: write after read over the back edge)."""
    sh = lambda r, c: f"memref<{r}x{c}xf16, {SHARED}>"
    fr = f"memref<{PV_M}x{PV_N}xf32, {FRAGMENT}>"
    step = [
        "scf.parallel (%i, %j) = (%c0, %c0) to (%cM, %cN) step (%c1, %c1) {",
        f"  %s = memref.load %S_l[%i, %j] : {fr}",
        "  %scaled = arith.mulf %s, %scale : f32",
        "  %p = arith.truncf %scaled : f32 to f16",
        f"  memref.store %p, %P_s[%i, %j] : {sh(PV_M, PV_N)}",
        "  scf.reduce",
        "}",
        (f'"tile.gemm"(%P_s, %V_s, %O_l) {{accum_dtype = f32, transpose_a = false, transpose_b = false}}'
         f" : ({sh(PV_M, PV_N)}, {sh(PV_N, PV_N)}, {fr}) -> ()"),
    ]
    if loop:
        step = [f"scf.for %it = %c0 to %c{loop} step %c1 {{", *("  " + line for line in step), "}"]
    lines = [
        (f"func.func @pv(%A: memref<{PV_M}x{PV_K}xf16>, %B: memref<{PV_K}x{PV_N}xf16>, "
         f"%V: memref<{PV_N}x{PV_N}xf16>, %O: memref<{PV_M}x{PV_N}xf32>) {{"),
        '  "tile.kernel"() ({',
        "  ^bb0(%bx: index):",
        "    %c0 = arith.constant 0 : index",
        "    %c1 = arith.constant 1 : index",
        f"    %c{loop or 2} = arith.constant {loop or 2} : index",
        f"    %cM = arith.constant {PV_M} : index",
        f"    %cN = arith.constant {PV_N} : index",
        "    %zero = arith.constant 0.0 : f32",
        f"    %scale = arith.constant {PV_SCALE} : f32",
        f'    %A_s = "tile.alloc_shared"() : () -> {sh(PV_M, PV_K)}',
        f'    %B_s = "tile.alloc_shared"() : () -> {sh(PV_K, PV_N)}',
        f'    %V_s = "tile.alloc_shared"() : () -> {sh(PV_N, PV_N)}',
        f'    %P_s = "tile.alloc_shared"() : () -> {sh(PV_M, PV_N)}',
        f'    %S_l = "tile.alloc_fragment"() : () -> {fr}',
        f'    %O_l = "tile.alloc_fragment"() : () -> {fr}',
        f'    "tile.fill"(%S_l, %zero) : ({fr}, f32) -> ()',
        f'    "tile.fill"(%O_l, %zero) : ({fr}, f32) -> ()',
        *(f'    "tile.copy"(%{g}, %{g}_s, %c0, %c0) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}}'
          f" : (memref<{r}x{c}xf16>, {sh(r, c)}, index, index) -> ()"
          for g, r, c in (("A", PV_M, PV_K), ("B", PV_K, PV_N), ("V", PV_N, PV_N))),
        (f'    "tile.gemm"(%A_s, %B_s, %S_l) {{accum_dtype = f32, transpose_a = false, '
         f"transpose_b = false}} : ({sh(PV_M, PV_K)}, {sh(PV_K, PV_N)}, {fr}) -> ()"),
        *("    " + line for line in step),
        (f'    "tile.copy"(%O_l, %O, %c0, %c0) {{operandSegmentSizes = array<i32: 1, 1, 0, 2>}}'
         f" : ({fr}, memref<{PV_M}x{PV_N}xf32>, index, index) -> ()"),
        "    gpu.yield",
        '  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()',
        "  return",
        "}",
    ]
    return "\n".join(lines) + "\n"


def reduce_kernel(kind: str, rows: int, cols: int, dim: int, dtype: str) -> str:
    """Y <- tile.reduce kind of X along `dim`, in one workgroup of 128 threads."""
    kept = rows if dim == 1 else cols
    x, y = f"memref<{rows}x{cols}x{dtype}>", f"memref<{kept}x{dtype}>"
    fx, fy = f"memref<{rows}x{cols}x{dtype}, #F>", f"memref<{kept}x{dtype}, #F>"
    return f"""#F = #gpu.address_space<private>
func.func @reduce(%X: {x}, %Y: {y}) {{
  "tile.kernel"() ({{
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %x = "tile.alloc_fragment"() : () -> {fx}
    %y = "tile.alloc_fragment"() : () -> {fy}
    "tile.copy"(%X, %x, %c0, %c0) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}} : ({x}, {fx}, index, index) -> ()
    "tile.reduce"(%x, %y) {{clear = true, dim = {dim} : i64, kind = "{kind}"}} : ({fx}, {fy}) -> ()
    "tile.copy"(%y, %Y, %c0) {{operandSegmentSizes = array<i32: 1, 1, 0, 1>}} : ({fy}, {y}, index) -> ()
    gpu.yield
  }}) {{grid = array<i64: 1>, threads = 128 : i64}} : () -> ()
  return
}}
"""
