"""NVIDIA's cp.async prefetch of two loops sharing their K and V tiles
(tile-split-loops' copy of a loop and the loop, cp_async_overlap._twin_loops):
each is prefetched only when the other is too, so that nothing but the gemms
of a prefetched loop reads the buffers a prologue copy fills."""

from __future__ import annotations

import pytest
from mlir import ir

from tilemlir.backends.nvidia.cp_async_overlap import plan_overlap
from tilemlir.dialects import tile
from tilemlir.irutil import walk

SHARED = "#gpu.address_space<workgroup>"
PRIVATE = "#gpu.address_space<private>"
KV = f"memref<64x64xf16, {SHARED}>"
ACC = f"memref<64x64xf32, {PRIVATE}>"
P = f"memref<64x64xf16, {PRIVATE}>"


def loop(lower: str, upper: str, extra: str = "") -> str:
    """One K/V loop of flash attention's shape; `extra`: more of its body."""
    copy = ("\"tile.copy\"(%{src}, %{dst}, %k0, %c0) {{operandSegmentSizes = array<i32: 1, 1, 2, 0>}} : "
            f"(memref<256x64xf16>, {KV}, index, index) -> ()")
    return f"""
    scf.for %kb = {lower} to {upper} step %c1 {{
      %k0 = arith.muli %kb, %c64 : index
      {copy.format(src="K", dst="k_s")}
      "tile.gemm"(%q_s, %k_s, %acc) {{accum_dtype = f32, transpose_a = false, transpose_b = true}} : ({KV}, {KV}, {ACC}) -> ()
      {extra}
      "tile.copy"(%acc, %p) {{operandSegmentSizes = array<i32: 1, 1, 0, 0>}} : ({ACC}, {P}) -> ()
      {copy.format(src="V", dst="v_s")}
      "tile.gemm"(%p, %v_s, %o) {{accum_dtype = f32, transpose_a = false, transpose_b = false}} : ({P}, {KV}, {ACC}) -> ()
    }} {{tile.num_stages = 2 : i64}}"""


def module(first_extra: str = "") -> ir.Module:
    text = f"""
func.func @twins(%K: memref<256x64xf16>, %V: memref<256x64xf16>) {{
  "tile.kernel"() ({{
  ^bb0(%bx: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %q_s = "tile.alloc_shared"() : () -> {KV}
    %k_s = "tile.alloc_shared"() : () -> {KV}
    %v_s = "tile.alloc_shared"() : () -> {KV}
    %acc = "tile.alloc_fragment"() : () -> {ACC}
    %p = "tile.alloc_fragment"() : () -> {P}
    %o = "tile.alloc_fragment"() : () -> {ACC}
    {loop("%c0", "%c2", first_extra)}
    {loop("%c2", "%c4")}
    gpu.yield
  }}) {{grid = array<i64: 1>, threads = 128 : i64}} : () -> ()
  return
}}
"""
    return ir.Module.parse(text, tile.make_context())


def loops(parsed: ir.Module) -> list:
    return [op for op in walk(parsed.operation) if op.name == "scf.for"]


def test_twin_loops_are_both_prefetched():
    parsed = module()
    first, second = loops(parsed)
    assert plan_overlap(first, 128) is not None and plan_overlap(second, 128) is not None


@pytest.mark.parametrize("extra", [
    # The first loop also reads K's tile after its gemm: it is not prefetched,
    # so the second's prologue copy into that tile could race with the read.
    f"""scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c64) step (%c1, %c1) {{
        %x = memref.load %k_s[%i, %j] : {KV}
        %y = arith.extf %x : f16 to f32
        memref.store %y, %acc[%i, %j] : {ACC}
        scf.reduce
      }}""",
])
def test_a_loop_whose_twin_is_not_prefetched_is_not_either(extra):
    parsed = module(extra)
    first, second = loops(parsed)
    assert plan_overlap(first, 128) is None
    assert plan_overlap(second, 128) is None
