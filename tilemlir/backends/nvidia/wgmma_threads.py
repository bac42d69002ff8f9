"""wgmma gemms whose shared operands the kernel's own threads store: flash
attention on sm_90a.

TMA slot rings (wgmma.py) feed the gemms of a loop that only copies and
multiplies. Flash attention's loop also runs the online softmax between its
two gemms, and is prefetched with cp.async instead (cp_async_overlap.py: K's
tile lands while the second gemm runs, V's while the first and the softmax
do). Its gemms still run on wgmma, as in FlashAttention-3 and Triton's Hopper
kernels, given three things:

* The shared operands (Q, K, V) are stored as wgmma reads them: boxes of
  rows x 128 bytes with the 128-byte swizzle (`gpu_builders.box_index`,
  `SharedLayout.boxed`), written by cp.async chunks and vector stores at the
  swizzled addresses. Those are generic-proxy writes and wgmma reads shared
  memory through the async proxy, so every writing thread executes
  `fence.proxy.async.shared::cta` after its writes and before the workgroup
  barrier that publishes them (PTX ISA, "Memory Consistency Model", proxies;
  `NvidiaMatrixCore.fence_shared_writes`).
* The second gemm's A (P, the softmax of the first's accumulator, cast to 16
  bits) comes from registers: wgmma's register fragment of A for m64nNk16
  (PTX ISA, "Register Fragments", matrix A) gives warp w of the warpgroup
  rows 16w + g and 16w + g + 8, columns 2t, 2t + 1 and 2t + 8, 2t + 9 of each
  K step (g = lane / 4, t = lane % 4): the m16n8k16 A fragment, i.e. two
  adjacent m16n8 tiles of the first gemm's accumulator, which a warp of the
  same band holds (`register_a_wgmma`).
* Each gemm waits for its wgmmas (wait_group 0) before anything reads its
  accumulator: the softmax reads S at once, and O is rescaled by the next
  iteration.

`thread_fed_operands` says which loops qualify. One more condition comes
from measurement: a wgmma's accumulator is one PTX operand of N / 2
registers per instruction, which ptxas must hold whole, so where the
accumulators of the loop's gemms (S and O, live together at S's gemm) and
its row vectors do not fit a thread's registers beside the addresses
(`fits_registers`), mma.sync, whose accumulators are m16n8 tiles ptxas may
spill one at a time, runs faster: bench/attention.py on the H200, d 128,
128x128 blocks of 128 threads, 147 against 234 TFLOP/s (causal: 78 against
203), where 128x64 blocks (S and O 192 registers) ran at 489 against 318.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import llvm

from tilemlir.backends.nvidia.cp_async_overlap import id_of, plan_overlap
from tilemlir.dialects import tile
from tilemlir.irutil import parent_ops, walk
from tilemlir.passes.gemm_facts import gemm_shape, register_a_source
from tilemlir.passes.gpu_builders import BOX_BYTES
from tilemlir.passes.lower_to_gpu.api import bit_width, for_loop_parts
from tilemlir.targets import backend

SWIZZLE_ROWS = 8  # the rows of one 128-byte swizzle atom (1024 bytes)
SIXTEEN_BIT = ("f16", "bf16")  # wgmma reads these MN-major and from registers


def is_wgmma(name: str) -> bool:
    """Whether an instruction (a row name of the target's table) is a wgmma
    (warpgroup) one, which wgmma.py lowers."""
    return name.startswith("wgmma.")


def thread_fed_operands(loop: ir.Operation, threads: int, target) -> list | None:
    """The shared operands of a loop whose every gemm runs on wgmma from
    operands its threads store (module docstring), or None where one does
    not: the loop is prefetched by cp.async (`plan_overlap`); each gemm
    multiplies 16-bit types; its B is a tile the loop copies; its A is such a
    tile, one copied from global memory before the loop and read by gemms
    only (flash attention's Q), or the registers of another gemm of the loop
    (P); no gemm sits in a branch of the body; every shared operand has rows
    of a multiple of 128 bytes, a multiple of 8 of them; tile-select-mma's
    wgmma row fits each gemm; and the accumulators fit (`fits_registers`)."""
    from tilemlir.passes.select_mma import select_mma_for

    plan = plan_overlap(loop, threads)
    if plan is None:
        return None
    copied = {id_of(c.operands[1].owner): c.operands[1] for c in plan.copies}
    gemms = [op for op in for_loop_parts(loop).body_ops if op.name == "tile.gemm"]
    if sum(1 for op in walk(loop) if op.name == "tile.gemm") != len(gemms):
        return None  # a gemm in a branch of the body: the loop keeps one instruction, mma.sync
    accumulators = [g.operands[2] for g in gemms]
    operands = dict(copied)
    for gemm in gemms:
        a, b = gemm.operands[0], gemm.operands[1]
        if {str(ir.MemRefType(v.type).element_type) for v in (a, b)} - set(SIXTEEN_BIT):
            return None
        if id_of(b.owner) not in copied:
            return None
        if tile.memory_level(a.type) == tile.FRAGMENT:
            # The copy of an accumulator of this loop's gemms (another loop's
            # gemms may write the same fragment: register_a_source names one).
            source = register_a_source(gemm)
            if source is None or ir.BoolAttr(gemm.attributes["transpose_a"]).value or \
                    not any(source.operands[2] == accumulator for accumulator in accumulators):
                return None
        elif id_of(a.owner) in copied or _copied_once(a, loop):
            operands[id_of(a.owner)] = a
        else:
            return None
        chosen = select_mma_for(target, gemm_shape(gemm), threads, "wgmma", rows_only=True)
        if isinstance(chosen, list) or not is_wgmma(chosen[0].name):
            return None
    for buffer in operands.values():
        rows, cols = ir.MemRefType(buffer.type).shape
        if rows % SWIZZLE_ROWS or (cols * bit_width(ir.MemRefType(buffer.type).element_type) // 8) % BOX_BYTES:
            return None
    if not fits_registers(loop, gemms, threads, target):
        return None
    return list(operands.values())


def fits_registers(loop: ir.Operation, gemms: list, threads: int, target) -> bool:
    """Whether a thread's share of the gemms' accumulators and of the
    kernel's other fragments of rank 1 (the softmax's row vectors), 32-bit
    words each, beside the family's address registers, fits the registers a
    thread may use (module docstring)."""
    kernel = next((p for p in parent_ops(loop) if p.name == "tile.kernel"), None)
    accumulators = {id_of(g.operands[2].owner): g.operands[2] for g in gemms}
    rows = {id_of(op): op.results[0] for op in (walk(kernel) if kernel is not None else ())
            if op.name == "tile.alloc_fragment" and ir.MemRefType(op.results[0].type).rank == 1}
    words = sum(-(-math.prod(ir.MemRefType(v.type).shape) * max(32, bit_width(ir.MemRefType(v.type).element_type))
                  // 32 // threads) for v in [*accumulators.values(), *rows.values()])
    limit = target.registers.vgprs_per_lane
    return isinstance(limit, int) and words + backend(target.family).address_registers <= limit


def _copied_once(buffer: ir.Value, loop: ir.Operation) -> bool:
    """A shared tile written only by copies from global memory outside
    `loop`, and otherwise read by gemms only."""
    if not isinstance(buffer, ir.OpResult) or buffer.owner.name != "tile.alloc_shared":
        return False
    writers = 0
    for use in buffer.uses:
        user = use.owner
        if user.name == "tile.copy" and use.operand_number == 1:
            inside = any(id_of(parent) == id_of(loop) for parent in parent_ops(user))
            if inside or tile.memory_level(user.operands[0].type) != tile.GLOBAL:
                return False
            writers += 1
        elif user.name != "tile.gemm" or use.operand_number == 2:
            return False
    return writers > 0


def register_a_wgmma(accumulator: ir.Value, a: list, desc_b: ir.Value, n: int, element: str,
                     b_mn_major: bool) -> ir.Value:
    """One wgmma.mma_async m64nNk16 with A from registers (the four 32-bit
    registers `a` of this thread, two 16-bit elements each) and B by its
    descriptor: D = A * B + D. nvvm.wgmma.mma_async takes A by descriptor
    only, so this is the instruction's PTX, volatile (it must stay between
    its wgmma.fence and commit_group)."""
    half = n // 2
    i32 = ir.IntegerType.get_signless(32)
    d = ", ".join(f"${j}" for j in range(half))
    regs = ", ".join(f"${half + j}" for j in range(4))
    text = ("{ .reg .pred p; setp.ne.b32 p, $" + str(half + 5) + ", 0; "
            f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{element}.{element} "
            f"{{{d}}}, {{{regs}}}, ${half + 4}, p, 1, 1, {int(b_mn_major)}; }}")
    constraints = ",".join(["=f"] * half + ["r"] * 4 + ["l", "r"] + [str(j) for j in range(half)])
    f32 = ir.F32Type.get()
    inputs = [llvm.ExtractValueOp(f32, accumulator, [j]).result for j in range(half)]
    one = llvm.ConstantOp(i32, ir.IntegerAttr.get(i32, 1)).result  # scale-d: accumulate
    return llvm.InlineAsmOp(accumulator.type, [*a, desc_b, one, *inputs], text, constraints,
                            has_side_effects=True).result
