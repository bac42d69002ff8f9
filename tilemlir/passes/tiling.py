"""tile-tiling: whole-problem GEMMs become tile kernels.

A `tile.gemm` on global memrefs outside any kernel (C += op(A) * op(B), C in
its own type, the sum in accum_dtype) becomes one `tile.kernel` over a grid of
block tiles, written exactly as a TileLang user would write it:

    shared A tile (block_M x block_K), shared B tile (block_K x block_N),
    an accumulator fragment (block_M x block_N, accum_dtype);
    accumulator <- 0 if a zero `tile.fill` of C precedes the gemm, else C's tile;
    for ko in [0, ceil(K / block_K)) {tile.num_stages = stages}:
        copy A's and B's windows into shared memory; tile.gemm;
    copy the accumulator back to C's window (rounded to C's type).

Out-of-bounds reads of the copies give 0 and out-of-bounds writes are dropped,
so shapes that are not multiples of the block are handled. Where the block
divides the dimensions a copy's windows move along, the copy is marked
`tile.in_bounds` (a promise the lowering uses to drop its edge checks). A zero fill of C
directly before the gemm becomes the cleared accumulator (no pass over memory).

Choices, from the target's descriptor unless given as options:
* block_K: the largest K among the chip's instructions for these types, at
  least 64 bytes of A per row;
* block_M, block_N: 128, or the smallest power of two >= 32 covering a smaller
  problem dimension;
* threads: 4 waves (wave size from the descriptor); stages: 2;
* budgets: stages * (block_M + block_N) * block_K * element bytes must fit the
  workgroup's LDS, and the accumulator's registers per lane must fit half the
  register file; otherwise a compile-time error with the numbers.

Block tile -> warp tiles -> instruction tiles: the split over waves and the
instruction are chosen by tile-select-mma from this block tile.

Input invariant: tile-verify holds. Output invariant: no tile.gemm outside a
tile.kernel; whole-problem tile.fill only where it was not absorbed (an error).

Options:
  block=M,N,K   threads=N   stages=N   target=FAMILY:NAME

Example:

    "tile.fill"(%C, %zero) ...; "tile.gemm"(%A, %B, %C) {accum_dtype = f32, ...}
        : (memref<1024x1024xf8E4M3FNUZ>, memref<1024x1024xf8E4M3FNUZ>, memref<1024x1024xf16>) -> ()
    // becomes (gfx942)
    "tile.kernel"() ({ ^bb0(%bx: index, %by: index): ... scf.for ... {tile.num_stages = 2 : i64} ... })
        {grid = array<i64: 8, 8>, threads = 256 : i64}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir
from mlir.dialects import arith, scf

from tilemlir.dialects import attributes, tile
from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass
from tilemlir.passes.gemm_facts import gemm_shape
from tilemlir.passes.kernel_facts import grid_problem
from tilemlir.passes.lower_to_gpu.api import matrix_core_for
from tilemlir.target import resolve_target

DEFAULT_STAGES = 2
DEFAULT_WAVES = 4


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def block_extent(problem: int, preferred: int = 128, smallest: int = 32) -> int:
    if problem >= preferred:
        return preferred
    extent = smallest
    while extent < problem:
        extent *= 2
    return extent


def element_bytes(type_name: str) -> int:
    from tilemlir.target.model import ELEMENT_BITS

    return max(1, ELEMENT_BITS.get(type_name, 32) // 8)


# Registers per lane kept for operand fragments and addresses on targets whose
# accumulators share the one register file (no separate accumulation file).
OPERAND_REGISTER_RESERVE = 64


def accumulator_register_budget(target) -> tuple[int, str]:
    """Registers per lane an accumulator may take, and why: half the file where
    the target has an accumulation file (AMD AGPRs), else the file minus a
    reserve for operands (NVIDIA)."""
    from tilemlir.target.model import is_unknown

    total = target.require("registers.vgprs_per_lane", "the register budget")
    if not is_unknown(target.registers.acc_vgprs_max):
        return total // 2, f"half of {total}"
    return total - OPERAND_REGISTER_RESERVE, f"{total} minus {OPERAND_REGISTER_RESERVE} kept for operands"


@dataclass(frozen=True)
class TilingChoice:
    """How tile-tiling splits a gemm: the block tile (M, N, K), the threads of
    each block, and the pipeline stages of the K loop."""

    block: tuple[int, int, int]
    threads: int
    stages: int


def shared_bytes_needed(tiling: TilingChoice, a_bytes: int, b_bytes: int) -> int:
    bm, bn, bk = tiling.block
    return tiling.stages * (bm * bk * a_bytes + bk * bn * b_bytes)


@dataclass(frozen=True)
class TileTiling(TilePass):
    name: ClassVar[str] = "tile-tiling"
    summary: ClassVar[str] = "Turn whole-problem tile.gemm into tile kernels sized from the target"

    block: tuple[int, ...] = ()
    threads: int = 0
    stages: int = 0
    target: str = ""

    def run(self, module: ir.Operation, state: PassState) -> None:
        gemms = [op for op in walk(module) if op.name == "tile.gemm"
                 and not any(p.name == "tile.kernel" for p in _parents(op))]
        fills = [op for op in walk(module) if op.name == "tile.fill"
                 and not any(p.name == "tile.kernel" for p in _parents(op))]
        if not gemms and not fills:
            return
        target = resolve_target(module, self.target)
        pairs = [(op, _zero_fill_before(op)) for op in gemms]
        absorbed = [fill for _, fill in pairs if fill is not None]
        for op in fills:
            if not any(op == fill for fill in absorbed):
                state.error(op, "tile-tiling: a whole-problem tile.fill is only tiled when it clears "
                                "the C of the tile.gemm right after it")
        for op, fill in pairs:
            tiling = self.choose_tiling(op, target, state)
            if tiling is None:
                continue
            self.tile_gemm(op, tiling, zero_init=fill is not None)
            if fill is not None:
                fill.erase()

    # -- choosing the tiles ---------------------------------------------------

    def choose_tiling(self, op: ir.Operation, target, state: PassState) -> TilingChoice | None:
        shape = gemm_shape(op)
        dynamic = ir.ShapedType.get_dynamic_size()
        if dynamic in (shape.m, shape.n, shape.k):
            state.error(op, "tile-tiling: dynamic GEMM shapes are not supported yet")
            return None
        if self.block and len(self.block) != 3:
            state.error(op, f"tile-tiling: block must be M,N,K, got {','.join(map(str, self.block))}")
            return None
        wave = target.require("compute.wave_size", "choosing the thread count")
        a_bytes, b_bytes = element_bytes(shape.a), element_bytes(shape.b)
        if self.block:
            block = tuple(self.block)
        else:
            rows = [r for r in target.mma_candidates(shape.a, shape.b, shape.accum)
                    if matrix_core_for(target.family).supported(r.m, r.n, r.k, r.blocks, wave)]
            instruction_k = max((r.k for r in rows), default=16)
            block_k = max(instruction_k, 64 // a_bytes)
            block = (block_extent(shape.m), block_extent(shape.n), block_k)
        threads = self.threads or DEFAULT_WAVES * wave
        stages = self.stages or DEFAULT_STAGES
        if min(block) <= 0 or threads <= 0 or stages <= 0:
            state.error(op, "tile-tiling: block sizes, threads and stages must be positive")
            return None
        tiling = TilingChoice(block, threads, stages)
        lds_limit = target.require("memory.shared_bytes_per_workgroup", "the LDS budget")
        needed = shared_bytes_needed(tiling, a_bytes, b_bytes)
        if needed > lds_limit and not self.stages and not self.block:
            while tiling.stages > 1 and shared_bytes_needed(tiling, a_bytes, b_bytes) > lds_limit:
                tiling = TilingChoice(tiling.block, tiling.threads, tiling.stages - 1)
            needed = shared_bytes_needed(tiling, a_bytes, b_bytes)
        if needed > lds_limit:
            bm, bn, bk = tiling.block
            state.error(op, f"tile-tiling: needs {needed} bytes of LDS ({tiling.stages} stages x "
                            f"({bm}x{bk} A + {bk}x{bn} B tiles)), {target.name} allows {lds_limit}")
            return None
        grid = [ceil_div(shape.n, tiling.block[1]), ceil_div(shape.m, tiling.block[0])]
        too_large = grid_problem(grid, tiling.threads, target)
        if too_large is not None:
            state.error(op, f"tile-tiling: a {shape.m}x{shape.n} C in {tiling.block[0]}x{tiling.block[1]} "
                            f"blocks needs a grid of {grid[0]}x{grid[1]} blocks (x: N, y: M): "
                            f"{too_large}; split the GEMM into several")
            return None
        accum_bytes = element_bytes(shape.accum)
        budget, why = accumulator_register_budget(target)
        registers = ceil_div(block[0] * block[1] * accum_bytes, 4 * tiling.threads)
        most_threads = target.require("compute.max_threads_per_workgroup", "the thread count")
        while registers > budget and not self.threads and tiling.threads * 2 <= most_threads:
            # More waves share the accumulator when the thread count was not given.
            tiling = TilingChoice(tiling.block, tiling.threads * 2, tiling.stages)
            registers = ceil_div(block[0] * block[1] * accum_bytes, 4 * tiling.threads)
        if registers > budget:
            state.error(op, f"tile-tiling: the {block[0]}x{block[1]} accumulator needs {registers} "
                            f"registers per lane with {tiling.threads} threads, {target.name} leaves "
                            f"{budget} for it ({why})")
            return None
        return tiling

    # -- writing the kernel ---------------------------------------------------

    def tile_gemm(self, op: ir.Operation, tiling: TilingChoice, zero_init: bool) -> None:
        shape = gemm_shape(op)
        A, B, C = op.operands[0], op.operands[1], op.operands[2]
        bm, bn, bk = tiling.block
        a_type, b_type = ir.MemRefType(A.type), ir.MemRefType(B.type)
        accum = ir.TypeAttr(op.attributes["accum_dtype"]).value
        grid = [ceil_div(shape.n, bn), ceil_div(shape.m, bm)]
        a_tile = [bk, bm] if shape.transpose_a else [bm, bk]
        b_tile = [bn, bk] if shape.transpose_b else [bk, bn]
        with ir.InsertionPoint(op), op.location:
            kernel = tile.kernel(grid, tiling.threads)
            with tile.kernel_body(kernel) as (bx, by):
                index = ir.IndexType.get()

                def constant(value: int) -> ir.Value:
                    return arith.ConstantOp(index, value).result

                a_shared = tile.alloc_shared(tile.shared_memref_type(a_tile, a_type.element_type))
                b_shared = tile.alloc_shared(tile.shared_memref_type(b_tile, b_type.element_type))
                acc = tile.alloc_fragment(tile.fragment_memref_type([bm, bn], accum))
                row = arith.MulIOp(by, constant(bm)).result
                col = arith.MulIOp(bx, constant(bn)).result
                if zero_init:
                    zero = ir.FloatAttr.get(accum, 0.0) if isinstance(accum, ir.FloatType) \
                        else ir.IntegerAttr.get(accum, 0)
                    tile.fill(acc, arith.ConstantOp(accum, zero).result)
                else:
                    load = tile.copy(C, acc, [row, col])
                    if shape.m % bm == 0 and shape.n % bn == 0:
                        attributes.IN_BOUNDS.mark(load)
                loop = scf.ForOp(constant(0), constant(ceil_div(shape.k, bk)), constant(1))
                with ir.InsertionPoint(loop.body):
                    k = arith.MulIOp(loop.induction_variable, constant(bk)).result
                    copy_a = tile.copy(A, a_shared, [k, row] if shape.transpose_a else [row, k])
                    copy_b = tile.copy(B, b_shared, [col, k] if shape.transpose_b else [k, col])
                    # Windows of a dimension the block divides never leave the operand.
                    if shape.m % bm == 0 and shape.k % bk == 0:
                        attributes.IN_BOUNDS.mark(copy_a)
                    if shape.n % bn == 0 and shape.k % bk == 0:
                        attributes.IN_BOUNDS.mark(copy_b)
                    tile.gemm(a_shared, b_shared, acc, accum_dtype=accum,
                              transpose_a=shape.transpose_a, transpose_b=shape.transpose_b)
                    scf.YieldOp([])
                attributes.NUM_STAGES.write(loop.operation, tiling.stages)
                store = tile.copy(acc, C, dst_indices=[row, col])
                if shape.m % bm == 0 and shape.n % bn == 0:
                    attributes.IN_BOUNDS.mark(store)
        op.erase()


def _parents(op: ir.Operation):
    from tilemlir.irutil import parent_ops

    return parent_ops(op)


def _zero_fill_before(gemm: ir.Operation) -> ir.Operation | None:
    """The `tile.fill(C, 0)` right before `gemm` on the same C, if any."""
    previous = _previous_op(gemm)
    while previous is not None and previous.name == "arith.constant":
        previous = _previous_op(previous)
    if previous is None or previous.name != "tile.fill" or previous.operands[0] != gemm.operands[2]:
        return None
    value = previous.operands[1].owner
    if not isinstance(value, ir.OpView | ir.Operation) or value.name != "arith.constant":
        return None
    attr = value.attributes["value"]
    number = ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else ir.IntegerAttr(attr).value
    return previous.operation if number == 0 else None


def _previous_op(op: ir.Operation) -> ir.Operation | None:
    block = op.block
    previous = None
    for candidate in block.operations:
        if candidate.operation == op.operation:
            return previous
        previous = candidate.operation
    return None
