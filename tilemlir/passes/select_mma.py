"""tile-select-mma: choose the matrix instruction for every tile.gemm in a kernel.

For each `tile.gemm` inside a `tile.kernel`, the block tile (M x N x K of the
gemm) is split over the kernel's waves (threads / wave size) into warp tiles,
and one instruction is chosen from the target's ordered table
(`Target.mma_candidates(a, b, c)`: fastest first, table order among equals):

1. full-rate rows before slower ones (e.g. gfx950's 16x16x32 f16 before the
   inherited 16x16x16 f16, which runs at half rate there);
2. among equally fast rows, the larger instruction (32x32 before 16x16) when
   the warp tile is a whole number of it, then the larger K when it divides
   the block's K;
3. only instructions whose lane layout is documented (the family's matrix core,
   `Backend.matrix_core`, see `tilemlir.passes.lower_to_gpu.api`).

The choice is recorded as `tile.mma = {name, shape = [m, n, k, blocks], types}`
and the wave split as `tile.warp_grid = array<i64: wm, wn>`. When nothing fits,
the diagnostic lists every row that was tried and why it was rejected, and
the options that would help (`ways_out`): for types the chip has no
instruction for, computing fp8 exactly in f16 (`tile-legalize-precision
{fp8-fallback=f16}`) where that is exact, or the type pairs it has; for shapes,
the instruction tiles a block and K must divide into, and the options that set
them (`tile-tiling{block=M,N,K}`, the kernel's own sizes, `prefer`).

Input invariant: tile-verify holds; gemms inside kernels have A/B in shared or
fragment buffers and a fragment accumulator of type accum_dtype (after
tile-legalize-precision the operand types are ones the chip can take).
Output invariant: every in-kernel tile.gemm carries tile.mma and tile.warp_grid.

4. gemms chained through registers (one's accumulator, copied to a fragment,
   is the next one's A, as in flash attention), where the family's core reads
   such an A from registers (`MatrixCore.register_a_bits`), split their
   waves along M only when that fits (a wave holds whole rows);
5. instructions a group of waves executes together (NVIDIA's warpgroup
   `wgmma`, four warps) split the block along M into bands of one or more
   instructions per group (m rows each, by the block's whole N); they rank
   after every wave-level row unless preferred, because their operands must
   be stored in shared memory as the group reads them (128-byte-swizzled
   boxes); each wave of a band holds whole rows, so such rows also serve
   gemms chained through registers.

Options:
  target (string): the target, e.g. amdgpu:gfx942 (default: the module's tile.target).
  prefer (string): rank rows whose name starts with this first, e.g. `wgmma`
    on nvidia:sm_90a (default: the preference tile-tiling recorded in the
    kernel's tile.tiling, when its cost model chose such an instruction; else
    none, the table's ranking alone). A gemm that no preferred row fits takes
    the best other row, and a remark says why each preferred row was rejected.

Example:

    "tile.gemm"(%a, %b, %c) {accum_dtype = f32, ...}      // 128x128x32 fp8, 256 threads
    // becomes
    "tile.gemm"(%a, %b, %c) {accum_dtype = f32, ..., tile.mma = {name = "v_mfma_f32_32x32x16_fp8_fp8",
        shape = array<i64: 32, 32, 16, 1>, ...}, tile.warp_grid = array<i64: 2, 2>}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.dialects import attributes
from tilemlir.dialects.element_types import bit_width
from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass
from tilemlir.passes.gemm_facts import MmaChoice, gemm_shape, register_a_source, split_waves
from tilemlir.passes.kernel_facts import enclosing_kernel, kernel_threads
from tilemlir.passes.lower_to_gpu.api import matrix_core_for
from tilemlir.targets import resolve_target
from tilemlir.targets.model import FP8_KIND, is_unknown

# The fewest rows of a block a wave owns where waves split M alone
# (`select_mma_for(rows_only=True)`).
MIN_WAVE_ROWS = 32


def select_mma_for(target, shape, threads: int, prefer: str = "", rows_only: bool = False,
                   rejected: list[str] | None = None, only_m: int = 0) \
        -> tuple[MmaChoice, tuple[int, int]] | list[str]:
    """The instruction and wave split for a gemm, or the reasons each row failed.
    Rows whose name starts with `prefer` (when given) rank before all others.
    `rows_only`: split the waves along M only (each wave whole rows).
    `only_m`: rows of that M alone (a gemm chained with another through
    registers takes the same M as it). `rejected`, when given, receives the
    reasons of the rows that failed (also when another row fits)."""
    wave = target.require("compute.wave_size", "splitting a block over waves")
    if threads % wave:
        return [f"{threads} threads are not a whole number of {wave}-lane waves"]
    waves = threads // wave
    rows = target.mma_candidates(shape.a, shape.b, shape.accum)
    core = matrix_core_for(target)
    if not rows:
        return [f"{target} has no matrix instruction for {shape.a} x {shape.b} -> {shape.accum}"]
    # Without published cycle counts the table's order is the ranking: every row
    # counts as full rate and the order decides (mma_candidates keeps it).
    ranked = not any(is_unknown(r.cycles) for r in rows) and not is_unknown(target.compute.simds_per_cu)
    fastest = target.flops_per_cu_cycle(rows[0]) if ranked else None
    rejected = [] if rejected is None else rejected
    fitting = []
    for rank, row in enumerate(rows):
        if only_m and row.m != only_m:
            rejected.append(f"{row.name}: not the {only_m}-row instruction of the gemm it is chained with")
            continue
        if not core.supported(row.m, row.n, row.k, row.blocks, wave):
            rejected.append(f"{row.name}: no documented lane layout for {row.m}x{row.n}x{row.k}"
                            f" with {row.blocks} blocks")
            continue
        group = core.waves_per_instruction(row.name)
        if group > 1 and rows_only and not (prefer and row.name.startswith(prefer)):
            rejected.append(f"{row.name}: executed by groups of {group} waves, taken for gemms chained "
                            "through registers only where preferred")
            continue
        if group > 1:
            # A group's band of rows by the block's whole N: each wave of it
            # holds whole rows (`rows_only` holds), read as a group, so the
            # MIN_WAVE_ROWS rule of waves that each read all of B does not apply.
            # Groups of `group` consecutive waves, stacked along M, each a band of
            # one or more instructions' rows by the block's whole N.
            groups = waves // group
            if waves % group:
                rejected.append(f"{row.name}: {waves} waves are not whole groups of {group}")
                continue
            if shape.m % (groups * row.m) or shape.n != row.n:
                rejected.append(f"{row.name}: needs the block to be a multiple of {row.m} rows per group "
                                f"of {group} waves by {row.n} columns ({waves} waves: "
                                f"{groups * row.m}x{row.n}, {2 * groups * row.m}x{row.n}, ...), "
                                f"not {shape.m}x{shape.n}")
                continue
            split = (waves, 1)
        elif rows_only:
            # Whole rows per wave, at least MIN_WAVE_ROWS of them: with fewer, every
            # wave reads all of B for few rows (measured on the H200 with
            # bench/attention.py: 8 warps of 16 rows ran at a third of 4 warps of
            # 32). One 32-row instruction reuses B as two 16-row ones do (gfx942
            # flash attention d 128, 128x64 blocks of 4 waves: llvm-mca's busy
            # ratio 0.590 with 16x16x16, 0.624 with 32x32x8; bf16 0.504, 0.534).
            wave_rows = shape.m // waves
            if shape.m % waves or wave_rows < MIN_WAVE_ROWS:
                rejected.append(f"{row.name}: {waves} waves splitting the {shape.m} rows alone hold fewer than "
                                f"{MIN_WAVE_ROWS} rows each, or unequal shares")
                continue
            fits = wave_rows % row.m == 0 and shape.n % row.n == 0
            split = (waves, 1) if fits else None
        else:
            split = split_waves(waves, shape.m, shape.n, row.m, row.n)
        if split is None:
            rejected.append(f"{row.name}: the {shape.m}x{shape.n} block does not split into "
                            f"{row.m}x{row.n} tiles over {waves} waves")
            continue
        if shape.k % row.k:
            rejected.append(f"{row.name}: K={shape.k} is not a multiple of {row.k}")
            continue
        full_rate = not ranked or target.flops_per_cu_cycle(row) >= fastest
        preferred = not prefer or row.name.startswith(prefer)
        # Group-level rows (NVIDIA's warpgroup wgmma) are taken only when preferred
        # or when no wave-level row fits: they change how shared memory is filled.
        fitting.append(((not preferred, not full_rate, group > 1, -row.m, -row.k, rank), row, split))
    if not fitting:
        return rejected
    _, row, split = min(fitting, key=lambda item: item[0])
    return MmaChoice(row.name, row.m, row.n, row.k, row.blocks, row.a, row.b, row.c), split


def ways_out(target, shape, threads: int) -> str:
    """What would let a gemm that no instruction fits compile, for the
    diagnostic: other operand types, or other tile sizes."""
    fp8 = shape.a in FP8_KIND or shape.b in FP8_KIND
    typed = fp8 and is_unknown(target.matrix.fp8_formats)
    if typed or not target.mma_candidates(shape.a, shape.b, shape.accum):
        options = []
        exact_in_f16 = all(t in FP8_KIND or t == "f16" for t in (shape.a, shape.b))
        if fp8 and exact_in_f16 and target.mma_candidates("f16", "f16", shape.accum):
            options.append("compute it exactly in f16 with tile-legalize-precision{fp8-fallback=f16} "
                           "(run before tile-select-mma, as tile-compile does)")
        pairs = sorted({f"{r.a} x {r.b} -> {r.c}" for r in target.mma})
        options.append(f"copy the operands into types {target} has instructions for "
                       f"({', '.join(pairs)})")
        return "options: " + "; or ".join(options)
    wave = target.require("compute.wave_size", "splitting a block over waves")
    if threads % wave:
        return (f"options: a thread count that is a multiple of {wave} (the kernel's threads, or "
                "tile-tiling{threads=N})")
    core = matrix_core_for(target)
    tiles = sorted({(r.m, r.n, r.k) for r in target.mma_candidates(shape.a, shape.b, shape.accum)
                    if core.supported(r.m, r.n, r.k, r.blocks, wave)}, reverse=True)
    shown = ", ".join(f"{m}x{n}x{k}" for m, n, k in tiles)
    return (f"options: a block whose M x N splits into the instructions' tiles ({shown}) over the "
            f"{threads // wave} waves and whose K is a multiple of theirs, set by "
            "tile-tiling{block=M,N,K threads=N} or the kernel's own sizes; or "
            "tile-select-mma{prefer=NAME} to try other rows first")


def kernel_preference(kernel: ir.Operation) -> str:
    """The instruction preference tile-tiling recorded for the kernel (its
    tile.tiling's `prefer`: the cost model chose such an instruction); empty
    when none."""
    tiling = attributes.TILING.read(kernel)
    if tiling is None or "prefer" not in tiling:
        return ""
    return ir.StringAttr(tiling["prefer"]).value


@dataclass(frozen=True)
class TileSelectMma(TilePass):
    name: ClassVar[str] = "tile-select-mma"
    summary: ClassVar[str] = "Choose the matrix instruction and wave split of every tile.gemm"

    target: str = ""
    prefer: str = ""

    def run(self, module: ir.Operation, state: PassState) -> None:
        gemms = [op for op in walk(module) if op.name == "tile.gemm"]
        if not gemms:
            return
        target = resolve_target(module, self.target)
        if self.prefer and not any(row.name.startswith(self.prefer) for row in target.mma):
            names = list(dict.fromkeys(row.name for row in target.mma))
            state.error(gemms[0], f"tile-select-mma: prefer={self.prefer} starts no instruction name "
                                  f"of {target} (its table has e.g. {', '.join(names[:3])})")
            return
        # Gemms chained through registers (one's accumulator, copied, is the next
        # one's A) split their waves along M only where the core can read that A
        # from registers: a wave must hold whole rows of it.
        chained = set()
        widths = matrix_core_for(target).register_a_bits
        for op in gemms:
            source = register_a_source(op)
            if source is not None and bit_width(ir.MemRefType(op.operands[0].type).element_type) in widths:
                chained.update((op, source))
        chain_m = self.chained_rows(target, gemms, chained)
        # Every gemm's preference before any choice is recorded: a family's
        # answer may look at other gemms (NVIDIA's at the loop's), which the
        # recorded choices would change.
        kernels = [enclosing_kernel(op) for op in gemms]
        preferences = [self.gemm_preference(op, kernel, target) if kernel is not None else ""
                       for op, kernel in zip(gemms, kernels)]
        for op, kernel, prefer in zip(gemms, kernels, preferences):
            if kernel is None:
                continue  # whole-problem form: tile-tiling makes the kernel first
            shape = gemm_shape(op)
            result, rejected = None, []
            if op in chained:
                result = select_mma_for(target, shape, kernel_threads(kernel), prefer, rows_only=True,
                                        only_m=chain_m.get(op, 0))
            if result is None or isinstance(result, list):
                result = select_mma_for(target, shape, kernel_threads(kernel), prefer, rejected=rejected)
            if isinstance(result, list):
                tried = "; ".join(result)
                state.error(op, f"tile-select-mma: no matrix instruction of {target} fits this "
                                f"{shape.m}x{shape.n}x{shape.k} {shape.a} x {shape.b} -> {shape.accum} "
                                f"gemm with {kernel_threads(kernel)} threads; tried: {tried}; "
                                f"{ways_out(target, shape, kernel_threads(kernel))}")
                continue
            choice, (wm, wn) = result
            if prefer and not choice.name.startswith(prefer):
                # The preference is given up: say why each preferred row failed.
                tried = "; ".join(reason for reason in rejected if reason.startswith(prefer))
                state.remark(op, f"tile-select-mma: prefer={prefer} given up: {choice.name} is used, "
                                 f"no {prefer} instruction fits this {shape.m}x{shape.n}x{shape.k} gemm "
                                 f"with {kernel_threads(kernel)} threads" + (f" ({tried})" if tried else ""),
                             kind="speed")
            choice.record(op)
            attributes.WARP_GRID.write(op, [wm, wn])

    def gemm_preference(self, op: ir.Operation, kernel: ir.Operation, target) -> str:
        """The option's preference, else the kernel's (tile.tiling), else, for
        a kernel written with its own sizes, the family's choice of what to
        try first (the cost model's choice stands otherwise)."""
        prefer = self.prefer or kernel_preference(kernel)
        if not prefer and attributes.TILING.read(kernel) is None:
            prefer = matrix_core_for(target).preference(op, kernel_threads(kernel), target)
        return prefer

    def chained_rows(self, target, gemms: list, chained: set) -> dict:
        """The instruction M each gemm of a register chain (one's accumulator
        the next one's A) takes: the largest that both of a pair can split
        their waves along M with, so that the next one reads the accumulator
        as it lies (flash attention at head size 80: S could take 32x32
        MFMAs, P x V only 16x16 ones, and P would then go through LDS)."""
        chosen: dict = {}
        for op in gemms:
            source = register_a_source(op)
            kernel = enclosing_kernel(op)
            if source is None or op not in chained or kernel is None:
                continue
            threads = kernel_threads(kernel)
            pair = [(gemm, gemm_shape(gemm), self.gemm_preference(gemm, kernel, target)) for gemm in (source, op)]
            sizes = sorted({row.m for _, shape, _ in pair
                            for row in target.mma_candidates(shape.a, shape.b, shape.accum)}, reverse=True)
            common = next((m for m in sizes if all(
                not isinstance(select_mma_for(target, shape, threads, prefer, rows_only=True, only_m=m), list)
                for _, shape, prefer in pair)), 0)
            for gemm, _, _ in pair:
                chosen[gemm] = common
        return chosen
