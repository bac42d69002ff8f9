"""tile.copy between any two levels, reductions of shared buffers, layout
conversions and scf.if over fragments: small kernels compiled for gfx942 and
run in the emulator (under its sanitizer), compared element for element with
what the copy means (exact: copies and f32 max/min do not round; sums of a
few small integers in f32 are exact too).
"""

from __future__ import annotations

import numpy as np
import pytest

import tilemlir
from tilemlir.runtime import run

S = "#gpu.address_space<workgroup>"
F = "#gpu.address_space<private>"


def kernel(signature: str, body: str, threads: int = 128, grid: int = 1) -> str:
    return f"""
func.func @k({signature}) {{
  "tile.kernel"() ({{
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
{body}
    gpu.yield
  }}) {{grid = array<i64: {grid}>, threads = {threads} : i64}} : () -> ()
  return
}}
"""


def copy(src: str, dst: str, src_type: str, dst_type: str, src_idx: str = "", dst_idx: str = "") -> str:
    ns = len(src_idx.split(",")) if src_idx else 0
    nd = len(dst_idx.split(",")) if dst_idx else 0
    operands = ", ".join(x for x in (src, dst, src_idx, dst_idx) if x)
    types = ", ".join([src_type, dst_type] + ["index"] * (ns + nd))
    return (f'    "tile.copy"({operands}) {{operandSegmentSizes = array<i32: 1, 1, {ns}, {nd}>}}'
            f" : ({types}) -> ()")


def emulate(text: str, args: list, target: str = "amdgpu:gfx942") -> None:
    compiled = tilemlir.compile(text, target=target, emit="gpu")
    run(compiled.artifacts["gpu"], "k", args, engine="emulator", target=target)


def small_ints(shape, seed=0):
    return np.random.default_rng(seed).integers(-8, 8, shape).astype(np.float32)


def test_global_shared_fragment_round_trip():
    """global -> shared -> fragment (f32 -> f16 cast) -> shared -> global, and
    shared -> global directly, on a 16x64 tile at an offset."""
    g, s, f = "memref<32x64xf32>", f"memref<16x64xf32, {S}>", f"memref<16x64xf16, {F}>"
    s2 = f"memref<16x64xf16, {S}>"
    body = "\n".join([
        "    %c16 = arith.constant 16 : index",
        f'    %s = "tile.alloc_shared"() : () -> {s}',
        f'    %t = "tile.alloc_shared"() : () -> {s2}',
        f'    %f = "tile.alloc_fragment"() : () -> {f}',
        copy("%X", "%s", g, s, "%c16, %c0"),
        copy("%s", "%f", s, f),
        copy("%f", "%t", f, s2),
        copy("%t", "%Y", s2, "memref<16x64xf16>", "", "%c0, %c0"),
        copy("%s", "%Z", s, g, "", "%c0, %c0"),
    ])
    x = np.random.default_rng(1).uniform(-1, 1, (32, 64)).astype(np.float32)
    y = np.full((16, 64), np.nan, np.float16)
    z = np.full((32, 64), np.nan, np.float32)
    emulate(kernel(f"%X: {g}, %Y: memref<16x64xf16>, %Z: {g}", body), [x, y, z])
    assert np.array_equal(y, x[16:].astype(np.float16))
    assert np.array_equal(z[:16], x[16:]) and np.isnan(z[16:]).all()


def test_global_to_global_and_shared_to_shared_go_through_registers():
    g, s = "memref<8x32xf32>", f"memref<8x32xf32, {S}>"
    body = "\n".join([
        f'    %a = "tile.alloc_shared"() : () -> {s}',
        f'    %b = "tile.alloc_shared"() : () -> {s}',
        copy("%X", "%Y", g, g, "%c0, %c0"),
        copy("%X", "%a", g, s, "%c0, %c0"),
        copy("%a", "%b", s, s),
        copy("%b", "%Z", s, g, "", "%c0, %c0"),
    ])
    x = small_ints((8, 32))
    y, z = np.zeros_like(x), np.zeros_like(x)
    emulate(kernel(f"%X: {g}, %Y: {g}, %Z: {g}", body), [x, y, z])
    assert np.array_equal(y, x) and np.array_equal(z, x)


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_reduce_shared_source_and_destination(kind):
    """Both dims of a shared tile, into shared and global row/column vectors;
    clear = false combines with what the destination held."""
    g, s = "memref<8x64xf32>", f"memref<8x64xf32, {S}>"
    rows, cols = f"memref<8xf32, {S}>", f"memref<64xf32, {F}>"
    body = "\n".join([
        f'    %s = "tile.alloc_shared"() : () -> {s}',
        f'    %r = "tile.alloc_shared"() : () -> {rows}',
        f'    %c = "tile.alloc_fragment"() : () -> {cols}',
        copy("%X", "%s", g, s, "%c0, %c0"),
        copy("%R0", "%r", "memref<8xf32>", rows, "%c0"),
        f'    "tile.reduce"(%s, %r) {{clear = false, dim = 1 : i64, kind = "{kind}"}} : ({s}, {rows}) -> ()',
        f'    "tile.reduce"(%s, %c) {{clear = true, dim = 0 : i64, kind = "{kind}"}} : ({s}, {cols}) -> ()',
        copy("%r", "%R", rows, "memref<8xf32>", "", "%c0"),
        copy("%c", "%C", cols, "memref<64xf32>", "", "%c0"),
    ])
    x, r0 = small_ints((8, 64), 2), small_ints((8,), 3)
    r, c = np.zeros(8, np.float32), np.zeros(64, np.float32)
    emulate(kernel(f"%X: {g}, %R0: memref<8xf32>, %R: memref<8xf32>, %C: memref<64xf32>", body),
            [x, r0, r, c])
    combine = {"sum": np.add, "max": np.maximum, "min": np.minimum}[kind]
    assert np.array_equal(r, combine(r0, combine.reduce(x, axis=1)))
    assert np.array_equal(c, combine.reduce(x, axis=0))


def test_conversion_between_layouts_and_scalar_fragment():
    """Column sums of a tile loaded from f16 memory (8 elements per thread
    access) are read in a T.Parallel over a tile loaded from f32 memory (4 per
    access): another layout, converted through the scratch. A rank-0
    fragment (the sum of everything) is held by every thread."""
    g, h = "memref<16x64xf32>", "memref<16x64xf16>"
    tile = f"memref<16x64xf32, {F}>"
    col = f"memref<64xf32, {F}>"
    total = f"memref<f32, {F}>"
    body = "\n".join([
        "    %c16 = arith.constant 16 : index",
        "    %c64 = arith.constant 64 : index",
        f'    %x = "tile.alloc_fragment"() : () -> {tile}',
        f'    %z = "tile.alloc_fragment"() : () -> {tile}',
        f'    %y = "tile.alloc_fragment"() : () -> {tile}',
        f'    %colsum = "tile.alloc_fragment"() : () -> {col}',
        f'    %all = "tile.alloc_fragment"() : () -> {total}',
        copy("%X", "%x", g, tile, "%c0, %c0"),
        copy("%Z", "%z", h, tile, "%c0, %c0"),
        f'    "tile.reduce"(%z, %colsum) {{clear = true, dim = 0 : i64, kind = "sum"}} : ({tile}, {col}) -> ()',
        f'    "tile.reduce"(%colsum, %all) {{clear = true, dim = 0 : i64, kind = "sum"}} : ({col}, {total}) -> ()',
        "    scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c64) step (%c1, %c1) {",
        f"      %v = memref.load %x[%i, %j] : {tile}",
        f"      %s = memref.load %colsum[%j] : {col}",
        f"      %t = memref.load %all[] : {total}",
        "      %d = arith.subf %v, %s : f32",
        "      %e = arith.addf %d, %t : f32",
        f"      memref.store %e, %y[%i, %j] : {tile}",
        "      scf.reduce",
        "    }",
        copy("%y", "%Y", tile, g, "", "%c0, %c0"),
    ])
    text = kernel(f"%X: {g}, %Z: {h}, %Y: {g}", body)
    lowered = str(tilemlir.compile(text, target="amdgpu:gfx942", emit="tile").artifacts["tile"])
    assert "tile.scratch" in lowered  # the conversion's shared memory
    x, z = small_ints((16, 64), 4), small_ints((16, 64), 7).astype(np.float16)
    y = np.zeros_like(x)
    emulate(text, [x, z, y])
    zs = z.astype(np.float32)
    assert np.array_equal(y, x - zs.sum(axis=0) + zs.sum())


def test_fragment_written_under_scf_if():
    """Registers written in a branch come out of the scf.if as its results."""
    g, tile = "memref<4x64xf32>", f"memref<4x64xf32, {F}>"
    body = "\n".join([
        "    %c4 = arith.constant 4 : index",
        "    %c64 = arith.constant 64 : index",
        "    %c32 = arith.constant 32 : index",
        "    %neg = arith.constant -1.0 : f32",
        f'    %x = "tile.alloc_fragment"() : () -> {tile}',
        copy("%X", "%x", g, tile, "%c0, %c0"),
        "    scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c64) step (%c1, %c1) {",
        "      %low = arith.cmpi ult, %j, %c32 : index",
        "      scf.if %low {",
        f"        %v = memref.load %x[%i, %j] : {tile}",
        "        %w = arith.mulf %v, %neg : f32",
        f"        memref.store %w, %x[%i, %j] : {tile}",
        "      }",
        "      scf.reduce",
        "    }",
        copy("%x", "%Y", tile, g, "", "%c0, %c0"),
    ])
    x = small_ints((4, 64), 5)
    y = np.zeros_like(x)
    emulate(kernel(f"%X: {g}, %Y: {g}", body), [x, y])
    expected = x.copy()
    expected[:, :32] *= -1
    assert np.array_equal(y, expected)


@pytest.mark.parametrize("target", ["amdgpu:gfx942", "metax:xcore1000"])
def test_rank_reducing_copy_reads_one_batch(target):
    """The leading index of a 3-D source is fixed (batched GEMM's A[b]); a
    batch index past the end reads zeros."""
    g, s, f = "memref<3x16x32xf32>", f"memref<16x32xf32, {S}>", f"memref<16x32xf32, {F}>"
    body = "\n".join([
        f'    %s = "tile.alloc_shared"() : () -> {s}',
        f'    %f = "tile.alloc_fragment"() : () -> {f}',
        copy("%X", "%s", g, s, "%bx, %c0, %c0"),
        copy("%s", "%f", s, f),
        copy("%f", "%Y", f, g, "", "%bx, %c0, %c0"),
    ])
    x = small_ints((3, 16, 32), 6)
    y = np.zeros_like(x)
    emulate(kernel(f"%X: {g}, %Y: {g}", body, grid=3), [x, y], target)
    assert np.array_equal(y, x)


def test_reduction_of_a_layout_without_lane_bits_goes_through_memory(monkeypatch):
    """A family whose accumulator layout does not describe its lane bits
    (`AccumulatorLayout.lane_terms` is None, the default) still reduces its
    accumulators right: through the shared scratch, one loop per result
    element (and a remark says so)."""
    from tilemlir.backends.amdgpu.matrix import MfmaAccumulator

    monkeypatch.setattr(MfmaAccumulator, "lane_terms", lambda self: None)
    s, frag = f"memref<64x64xf16, {S}>", f"memref<64x64xf32, {F}>"
    rows = f"memref<64xf32, {F}>"
    body = "\n".join([
        "    %zero = arith.constant 0.0 : f32",
        f'    %a = "tile.alloc_shared"() : () -> {s}',
        f'    %acc = "tile.alloc_fragment"() : () -> {frag}',
        f'    %r = "tile.alloc_fragment"() : () -> {rows}',
        f'    "tile.fill"(%acc, %zero) : ({frag}, f32) -> ()',
        copy("%A", "%a", "memref<64x64xf16>", s, "%c0, %c0"),
        f'    "tile.gemm"(%a, %a, %acc) {{accum_dtype = f32, transpose_a = false, transpose_b = true}} : ({s}, {s}, {frag}) -> ()',
        f'    "tile.reduce"(%acc, %r) {{clear = true, dim = 1 : i64, kind = "max"}} : ({frag}, {rows}) -> ()',
        copy("%r", "%R", rows, "memref<64xf32>", "", "%c0"),
    ])
    text = kernel("%A: memref<64x64xf16>, %R: memref<64xf32>", body, threads=256)
    compiled = tilemlir.compile(text, target="amdgpu:gfx942", emit="gpu")
    assert any("this reduction goes through shared memory" in r.message for r in compiled.remarks)
    a = small_ints((64, 64), 8).astype(np.float16)
    r = np.zeros(64, np.float32)
    run(compiled.artifacts["gpu"], "k", [a, r], engine="emulator", target="amdgpu:gfx942")
    product = a.astype(np.float32) @ a.astype(np.float32).T  # small integers: exact in f32
    assert np.array_equal(r, product.max(axis=1))
