"""tile-prove-bounds: copies whose every window provably lies inside the
global memref are marked `tile.in_bounds`, so that they are lowered without
per-access bounds checks.

tile-tiling marks the copies of the kernels it makes; a kernel written with
its own sizes (TileLang's programs, flash attention's K/V loop) indexes its
copies with the block indices and loop variables, and without the mark every
vector load is guarded by compares of its 64-bit address (AMD: a
`s_and_saveexec` and a branch around each global load; no direct-to-LDS
loads). This pass bounds each window offset by interval arithmetic over the
integer ops that compute it, from what the program states:

* constants;
* a `tile.kernel` block index: 0 .. grid extent - 1;
* an `scf.for` or `scf.parallel` induction variable: lower bound's least ..
  upper bound's greatest - 1 (a loop that runs no iteration runs no copy),
  for a step of at least 1 whose last increment cannot wrap, and not for
  `scf.for unsigned`;
* `arith` add, sub, mul, divui/divsi, remui/remsi, floordivsi, ceildivsi,
  min/max (signed and unsigned), select, index_cast, index_castui (of a
  non-negative value), and nothing else.

Every bound must be representable in its value's type, signed, with `index`
taken as 32 bits (the narrowest any backend lowers it to: nvidia's, where
every memref is static and small): an operation that could wrap, or a
narrowing cast that could truncate, proves nothing.

A copy is marked when, along every dim of the global memref, the offset's
least value is at least 0 and its greatest value plus the window's extent
(the tile's extent along that dim, 1 for the dims a rank-reducing copy
fixes) is at most the dim's static size, unless it converts element types
on its way into shared memory: unguarded, llc hoists such a copy's address
arithmetic into scalar registers (the seed's fp8 GEMM computed in f16 on
gfx950, tile-legalize-precision{fp8-fallback=f16}, spilled 10 SGPRs), so
those keep their checks. Nothing is assumed about kernel
arguments or values of other ops: such an offset leaves the copy guarded.
A sequence that is not a multiple of the block (200 rows in blocks of 64)
keeps its checks; one that is (4096) loses them.

Input invariant: tile-verify holds; tile-legalize-precision ran (its casts
are the converting copies). Output: only `tile.in_bounds` is added.
No options.

    %kv = arith.muli %kb, %c64 : index           // scf.for %kb = 0 to 64
    "tile.copy"(%K, %k_s, %kv, %c0) : (memref<4096x128xf16>, memref<64x128xf16, #shared>, ...)
    // becomes
    "tile.copy"(%K, %k_s, %kv, %c0) {tile.in_bounds} : (...)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.dialects import attributes, tile
from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass
from tilemlir.passes.kernel_facts import enclosing_kernel

Interval = tuple[int, int]

# Bits of `index` as the bounds are checked: the least any lowering gives it
# (nvidia lowers index to 32 bits where every memref is static and small:
# backends/nvidia/toolchain.py index_bitwidth), so no wrap the proof ignores.
INDEX_BITS = 32


def _constant(value: ir.Value) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.OpView | ir.Operation) and owner.name == "arith.constant":
        attr = owner.attributes["value"]
        if isinstance(attr, ir.IntegerAttr):
            return ir.IntegerAttr(attr).value
    return None


def _fits(value_type: ir.Type, bounds: Interval | None) -> Interval | None:
    """`bounds` where every value in it is representable in `value_type`
    (signed; index as INDEX_BITS), else None: arithmetic that could wrap
    proves nothing."""
    if bounds is None:
        return None
    if isinstance(value_type, ir.IndexType):
        bits = INDEX_BITS
    elif isinstance(value_type, ir.IntegerType) and ir.IntegerType(value_type).width > 1:
        bits = ir.IntegerType(value_type).width
    else:
        return None
    low, high = bounds
    return bounds if -(1 << (bits - 1)) <= low <= high < (1 << (bits - 1)) else None


class Ranges:
    """Interval bounds of index and integer values (module docstring), memoised."""

    def __init__(self) -> None:
        self._known: dict = {}

    def of(self, value: ir.Value, depth: int = 0) -> Interval | None:
        if value in self._known:
            return self._known[value]
        result = None if depth > 64 else _fits(value.type, self._compute(value, depth + 1))
        self._known[value] = result
        return result

    def _compute(self, value: ir.Value, depth: int) -> Interval | None:
        constant = _constant(value)
        if constant is not None:
            return (constant, constant)
        if isinstance(value, ir.BlockArgument):
            return self._argument(ir.BlockArgument(value), depth)
        owner = value.owner
        name = owner.name
        operands = [self.of(operand, depth) for operand in owner.operands]
        if name == "arith.select":
            if None in operands[1:]:
                return None
            (a_low, a_high), (b_low, b_high) = operands[1], operands[2]
            return (min(a_low, b_low), max(a_high, b_high))
        if name == "arith.index_cast":
            return operands[0]  # the result's own width is checked by _fits
        if name == "arith.index_castui":
            return operands[0] if operands[0] is not None and operands[0][0] >= 0 else None
        if len(operands) != 2 or None in operands:
            return None
        (a_low, a_high), (b_low, b_high) = operands
        if name == "arith.addi":
            return (a_low + b_low, a_high + b_high)
        if name == "arith.subi":
            return (a_low - b_high, a_high - b_low)
        if name == "arith.muli":
            products = [a_low * b_low, a_low * b_high, a_high * b_low, a_high * b_high]
            return (min(products), max(products))
        if name in ("arith.minui", "arith.minsi"):
            if name == "arith.minui" and min(a_low, b_low) < 0:
                return None
            return (min(a_low, b_low), min(a_high, b_high))
        if name in ("arith.maxui", "arith.maxsi"):
            if name == "arith.maxui" and min(a_low, b_low) < 0:
                return None
            return (max(a_low, b_low), max(a_high, b_high))
        # Division and remainder by a positive divisor of a non-negative dividend.
        if a_low < 0 or b_low <= 0:
            return None
        if name in ("arith.divui", "arith.divsi", "arith.floordivsi"):
            return (a_low // b_high, a_high // b_low)
        if name == "arith.ceildivsi":
            return (-(-a_low // b_high), -(-a_high // b_low))
        if name in ("arith.remui", "arith.remsi"):
            return (0, min(a_high, b_high - 1))
        return None

    def _argument(self, argument: ir.BlockArgument, depth: int) -> Interval | None:
        block = argument.owner
        parent = block.owner
        name = parent.name
        if name == "tile.kernel":
            grid = list(ir.DenseI64ArrayAttr(parent.attributes["grid"]))
            index = argument.arg_number
            return (0, grid[index] - 1) if index < len(grid) else None
        if name == "scf.for" and argument.arg_number == 0 and "unsignedCmp" not in parent.attributes:
            return self._induction(argument, parent.operands[0], parent.operands[1], parent.operands[2], depth)
        if name == "scf.parallel" and argument.arg_number < len(block.arguments):
            rank, d = len(block.arguments), argument.arg_number
            return self._induction(argument, parent.operands[d], parent.operands[rank + d],
                                   parent.operands[2 * rank + d], depth)
        return None

    def _induction(self, argument: ir.BlockArgument, lower: ir.Value, upper: ir.Value, step: ir.Value,
                   depth: int) -> Interval | None:
        """A loop variable's bounds: lower's least .. upper's greatest - 1, for a
        step of at least 1 whose increment past the last value cannot wrap."""
        lower, upper, step = (self.of(v, depth) for v in (lower, upper, step))
        if lower is None or upper is None or step is None or step[0] < 1 \
                or _fits(argument.type, (lower[0], upper[1] - 1 + step[1])) is None:
            return None
        return (lower[0], max(lower[0], upper[1] - 1))


def window_in_bounds(copy: ir.Operation, ranges: Ranges) -> bool:
    """Whether every window of a tile.copy between global memory and a tile
    provably lies inside the global memref (module docstring)."""
    segments = list(ir.DenseI32ArrayAttr(copy.attributes["operandSegmentSizes"]))
    src, dst = copy.operands[0], copy.operands[1]
    src_offsets = list(copy.operands[2:2 + segments[2]])
    dst_offsets = list(copy.operands[2 + segments[2]:2 + segments[2] + segments[3]])
    levels = (tile.memory_level(src.type), tile.memory_level(dst.type))
    if levels.count(tile.GLOBAL) != 1:
        return False
    big, small, offsets = (src, dst, src_offsets) if levels[0] == tile.GLOBAL else (dst, src, dst_offsets)
    big_type, small_type = ir.MemRefType(big.type), ir.MemRefType(small.type)
    if big_type.element_type != small_type.element_type and tile.memory_level(dst.type) == tile.SHARED:
        return False  # converting copies into shared memory keep their checks (module docstring)
    if len(offsets) != big_type.rank or any(ir.ShapedType.is_dynamic_size(d) for d in big_type.shape):
        return False
    dims = attributes.WINDOW.read(copy)
    dims = tuple(dims) if dims is not None else tuple(range(big_type.rank - small_type.rank, big_type.rank))
    extents = [1] * big_type.rank
    for dim, extent in zip(dims, small_type.shape):
        extents[dim] = extent
    for offset, extent, size in zip(offsets, extents, big_type.shape):
        bounds = ranges.of(offset)
        if bounds is None or bounds[0] < 0 or bounds[1] + extent > size:
            return False
    return True


@dataclass(frozen=True)
class TileProveBounds(TilePass):
    name: ClassVar[str] = "tile-prove-bounds"
    summary: ClassVar[str] = "Mark the copies whose windows provably lie inside global memory"

    def run(self, module: ir.Operation, state: PassState) -> None:
        ranges = Ranges()
        for op in walk(module):
            if op.name == "tile.copy" and enclosing_kernel(op) is not None \
                    and not attributes.IN_BOUNDS.is_on(op) and window_in_bounds(op, ranges):
                attributes.IN_BOUNDS.mark(op)
