"""One shared buffer read by several gemms in different operand roles and
orientations (issue 27): S = Q K^T next to H = K^T Q, as in linear attention,
retention and every backward pass. tile-infer-layout takes one storage layout
per buffer (transposed or not, transpose reads, padding, swizzle), so every
decision must serve every use (`infer_layout.storage`, `buffer_layout`), and
each use is read the way it needs (`shared_memory.use_reads_transposed`): on
gfx950 a buffer stored for LDS transpose reads is read with them only by the
uses whose K runs down its columns; the others read its rows as vectors.

The corpus below is chosen to hit each per-buffer decision with mixed uses:
transpose reads with uses along and across (`mixed`, `self_gemm`), every use
across (`across`: transpose reads and an XOR swizzle on gfx950, a transposed
copy elsewhere), more uses across than along (`two_across`: transposed, the use
along reads element by element), padding for all uses' reads (all of them),
a buffer the program indexes (`indexed`: kept as written), a copy out of a
buffer stored otherwise (`copied_out`), and a software-pipelined loop whose
copies go straight into LDS (`pipelined`, gfx950). Each runs in the SIMT
emulator on every AMD chip and MetaX and is compared with float64 NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from tilemlir.runtime import run

THREADS = 128
TARGETS = ("amdgpu:gfx90a", "amdgpu:gfx942", "amdgpu:gfx950", "metax:xcore1000")
SWIZZLED = ("amdgpu:gfx950", "tile", "swizzle = ")
TRANSPOSE_READS = ("amdgpu:gfx950", "gpu", "amdgpu.transpose_load")

# Per case: the gemms (A, B, transpose_a, transpose_b) over shared %x and %y,
# what else touches the buffers, the tile side, and the decisions it is there
# to reach: (target, artefact, text the artefact holds).
CASES = {
    "mixed": {"gemms": [("x", "y", False, True), ("y", "x", True, False)],
              "hits": [TRANSPOSE_READS, ("amdgpu:gfx942", "tile", "transposed = false, unpadded")]},
    "across": {"gemms": [("x", "y", False, False), ("y", "x", True, False)], "copy_out": True, "n": 64,
               "hits": [SWIZZLED, TRANSPOSE_READS, ("amdgpu:gfx942", "tile", "transposed = true")]},
    "self_gemm": {"gemms": [("x", "x", False, False), ("x", "x", True, True), ("x", "y", False, True)],
                  "hits": [TRANSPOSE_READS, ("amdgpu:gfx942", "tile", "pad = 4")]},
    "two_across": {"gemms": [("x", "y", True, False), ("y", "x", True, False), ("x", "y", False, True)],
                   "hits": [TRANSPOSE_READS, ("amdgpu:gfx942", "tile", "transposed = true")]},
    "indexed": {"gemms": [("x", "y", False, True), ("y", "x", True, False)], "indexed": True,
                "hits": [("amdgpu:gfx950", "tile", "as_written")]},
    "copied_out": {"gemms": [("x", "y", True, True), ("y", "x", False, False)], "copy_out": True,
                   "hits": [("amdgpu:gfx942", "tile", "transposed = true")]},
    "pipelined": {"gemms": [("x", "y", False, True), ("x", "y", True, False)], "loop": 2,
                  "hits": [TRANSPOSE_READS, ("amdgpu:gfx950", "gpu", "amdgpu.gather_to_lds")]},
}


def kernel_text(gemms, n: int = 32, loop: int = 0, indexed: bool = False, copy_out: bool = False,
                hits=()) -> str:
    """@uses(X, Y, C0, C1, ..., [O]): X and Y (f16, `loop` n x n blocks stacked,
    one without a loop) are copied into shared %x and %y; gemm i accumulates
    op(A) op(B) into C_i over the blocks. `indexed`: a T.Parallel reads %x
    and writes 2 %x into O; `copy_out`: %y is copied to O."""
    f16 = f"memref<{n}x{n}xf16>"
    shared = f"memref<{n}x{n}xf16, #gpu.address_space<workgroup>>"
    acc = f"memref<{n}x{n}xf32, #gpu.address_space<private>>"
    out = f"memref<{n}x{n}xf32>"
    rows = n * max(1, loop)
    src = f"memref<{rows}x{n}xf16>"
    outs = [f"%C{i}: {out}" for i in range(len(gemms))]
    if indexed or copy_out:
        outs.append(f"%O: {f16}")
    copy_attrs = "operandSegmentSizes = array<i32: 1, 1, 2, 0>" + (", tile.in_bounds" if loop else "")
    body = [
        f"func.func @uses(%X: {src}, %Y: {src}, {', '.join(outs)}) {{",
        '  "tile.kernel"() ({',
        "  ^bb0(%bx: index):",
        "    %c0 = arith.constant 0 : index",
        "    %c1 = arith.constant 1 : index",
        f"    %cN = arith.constant {n} : index",
        "    %zero = arith.constant 0.0 : f32",
        f'    %x = "tile.alloc_shared"() : () -> {shared}',
        f'    %y = "tile.alloc_shared"() : () -> {shared}',
    ]
    for i in range(len(gemms)):
        body += [f'    %acc{i} = "tile.alloc_fragment"() : () -> {acc}',
                 f'    "tile.fill"(%acc{i}, %zero) : ({acc}, f32) -> ()']
    indent = "      " if loop else "    "
    row = "%r" if loop else "%c0"
    if loop:
        body += [f"    %num = arith.constant {loop} : index",
                 "    scf.for %ko = %c0 to %num step %c1 {",
                 "      %r = arith.muli %ko, %cN : index"]
    for name, value in (("x", "%X"), ("y", "%Y")):
        body.append(f'{indent}"tile.copy"({value}, %{name}, {row}, %c0) {{{copy_attrs}}}'
                    f" : ({src}, {shared}, index, index) -> ()")
    for i, (a, b, ta, tb) in enumerate(gemms):
        body.append(f'{indent}"tile.gemm"(%{a}, %{b}, %acc{i}) {{accum_dtype = f32, '
                    f"transpose_a = {str(ta).lower()}, transpose_b = {str(tb).lower()}}}"
                    f" : ({shared}, {shared}, {acc}) -> ()")
    if loop:
        body.append("    } {tile.num_stages = 2 : i64}")
    for i in range(len(gemms)):
        body.append(f'    "tile.copy"(%acc{i}, %C{i}) {{operandSegmentSizes = array<i32: 1, 1, 0, 0>}}'
                    f" : ({acc}, {out}) -> ()")
    if indexed:
        body += ["    scf.parallel (%i, %j) = (%c0, %c0) to (%cN, %cN) step (%c1, %c1) {",
                 f"      %v = memref.load %x[%i, %j] : {shared}",
                 "      %w = arith.addf %v, %v : f16",
                 f"      memref.store %w, %O[%i, %j] : {f16}",
                 "      scf.reduce",
                 "    }"]
    if copy_out:
        body.append(f'    "tile.copy"(%y, %O) {{operandSegmentSizes = array<i32: 1, 1, 0, 0>}}'
                    f" : ({shared}, {f16}) -> ()")
    body += ["    gpu.yield",
             f"  }}) {{grid = array<i64: 1>, threads = {THREADS} : i64}} : () -> ()",
             "  return", "}"]
    return "\n".join(body) + "\n"


def check_gemm(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """f16 products are exact in f32; the f32 sums of K terms are within
    K * 2^-24 of sum |a||b| each (plus a tiny slack)."""
    want = a @ b
    bound = a.shape[1] * 2.0 ** -23 * (np.abs(a) @ np.abs(b)) + 1e-6
    error = np.abs(got.astype(np.float64) - want)
    assert np.all(error <= bound), float((error / np.maximum(np.abs(want), 1)).max())


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_one_buffer_several_gemm_uses(case, target):
    spec = CASES[case]
    n, loop = spec.get("n", 32), spec.get("loop", 0)
    compiled = tilemlir.compile(kernel_text(**spec), target=target, emit="gpu")
    for chip, artefact, text in spec["hits"]:  # the decision this case is there for was taken
        if chip == target:
            assert text in compiled.artifacts[artefact], (chip, text)
    rng = np.random.default_rng(7)
    x, y = (rng.standard_normal((n * max(1, loop), n)).astype(np.float16) for _ in range(2))
    outs = [np.zeros((n, n), np.float32) for _ in spec["gemms"]]
    extra = [np.zeros((n, n), np.float16)] if spec.get("indexed") or spec.get("copy_out") else []
    args = [x, y, *outs, *extra]
    run(compiled.artifacts["gpu"], "uses", args, engine="emulator", target=target)  # sanitizer on
    blocks = {"x": np.split(x.astype(np.float64), max(1, loop)),
              "y": np.split(y.astype(np.float64), max(1, loop))}
    for got, (a, b, ta, tb) in zip(args[2:], spec["gemms"]):
        # Summing over the blocks is one gemm over their K runs side by side.
        a_all = np.concatenate([m.T if ta else m for m in blocks[a]], axis=1)
        b_all = np.concatenate([m.T if tb else m for m in blocks[b]], axis=0)
        check_gemm(got, a_all, b_all)
    if spec.get("indexed"):
        assert np.array_equal(args[-1], x[:n] * np.float16(2))
    if spec.get("copy_out"):
        assert np.array_equal(args[-1], y[:n])


@tilemlir.jit(out_idx=[2, 3], target="amdgpu:gfx950", engine="emulator")
def qk_and_ktq(dtype="float16"):
    @T.prim_func
    def main(Q: T.Tensor((64, 64), dtype), K: T.Tensor((64, 64), dtype),
             S: T.Tensor((64, 64), "float32"), H: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:  # noqa: F841
            q = T.alloc_shared([64, 64], dtype)
            k = T.alloc_shared([64, 64], dtype)
            s = T.alloc_fragment([64, 64], "float32")
            h = T.alloc_fragment([64, 64], "float32")
            T.copy(Q[0, 0], q)
            T.copy(K[0, 0], k)
            T.gemm(q, k, s, clear_accum=True, transpose_B=True)
            T.gemm(k, q, h, clear_accum=True, transpose_A=True)
            T.copy(s, S[0, 0])
            T.copy(h, H[0, 0])
    return main


def test_issue_27_transpose_reads_of_a_buffer_read_both_ways():
    """gfx950 stores q and k for LDS transpose reads (H = K^T Q reads them down
    their columns); S = Q K^T reads the same buffers along their rows and must
    not use transpose reads (it did: relative error 1.13, silently)."""
    rng = np.random.default_rng(0)
    q, k = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    s, h = qk_and_ktq()(q, k)
    q64, k64 = q.astype(np.float64), k.astype(np.float64)
    check_gemm(s, q64, k64.T)
    check_gemm(h, k64.T, q64)
