"""The `tile.*` attributes the passes hand each other: one table, one place.

Each attribute is a row: its name, the ops it sits on, the pass that records
it, the passes and stages that read it, and its form (in words, and as a check
that tile-verify applies to a hand-written or stale one before any pass reads
it). Passes read and write an attribute only through its row's typed helpers
(`IN_BOUNDS.mark(op)`, `NUM_STAGES.read(op)`, ...), so no other module spells
a `tile.<attribute>` name (test/python/test_tile_attributes.py checks that).

All of them are discardable attributes, so upstream passes keep them. The
structured ones have typed views next to the code that reads them
(`MmaChoice` for `tile.mma`, `SharedLayout` for `tile.smem_layout`, in
`tilemlir.passes.gemm_facts`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from mlir import ir
from mlir.dialects import arith

# A check of an attribute's form: None when it fits, else what is wrong ("got ...").
FormCheck = Callable[[ir.Attribute], "str | None"]


# --------------------------------------------------------------------------
# Form checks (tile-verify applies them)
# --------------------------------------------------------------------------

def _is_integer_type(t: ir.Type) -> bool:
    return isinstance(t, ir.IndexType) or (isinstance(t, ir.IntegerType) and t.width > 1)


def dictionary(required: dict[str, FormCheck], optional: dict[str, FormCheck] | None = None) -> FormCheck:
    """A dictionary attribute whose entries pass their checks."""
    optional = optional or {}

    def check(attr: ir.Attribute) -> str | None:
        if not isinstance(attr, ir.DictAttr):
            return f"got {attr}"
        for key, entry_check in {**required, **optional}.items():
            if key not in attr:
                if key in required:
                    return f"'{key}' is missing in {attr}"
                continue
            problem = entry_check(attr[key])
            if problem is not None:
                return f"'{key}': {problem}"
        return None
    return check


def positive_i64_array(length: int) -> FormCheck:
    def check(attr: ir.Attribute) -> str | None:
        if not isinstance(attr, ir.DenseI64ArrayAttr) or len(attr) != length or any(v <= 0 for v in attr):
            return f"got {attr}"
        return None
    return check


def integer(minimum: int, maximum: int | None = None) -> FormCheck:
    def check(attr: ir.Attribute) -> str | None:
        if not isinstance(attr, ir.IntegerAttr) or not _is_integer_type(attr.type) or attr.value < minimum \
                or (maximum is not None and attr.value > maximum):
            return f"got {attr}"
        return None
    return check


# The deepest pipeline tile.num_stages may ask for: more stages than any
# chip's shared memory holds tiles for (a loop would be copied that often).
MAX_STAGES = 64


def of_kind(kind: type, *, equal: str | None = None) -> FormCheck:
    def check(attr: ir.Attribute) -> str | None:
        if not isinstance(attr, kind) or (equal is not None and str(attr) != equal):
            return f"got {attr}"
        return None
    return check


def string_in(*choices: str) -> FormCheck:
    def check(attr: ir.Attribute) -> str | None:
        if not isinstance(attr, ir.StringAttr) or attr.value not in choices:
            return f"got {attr} (expected {' or '.join(repr(c) for c in choices)})"
        return None
    return check


def array_of(kind: type, length: int | None = None) -> FormCheck:
    def check(attr: ir.Attribute) -> str | None:
        if not isinstance(attr, ir.ArrayAttr) or (length is not None and len(attr) != length) or not all(
                isinstance(entry, kind) for entry in attr):
            return f"got {attr}"
        return None
    return check


# --------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class TileAttribute:
    """One attribute of the inter-pass protocol: what it is, who writes and
    who reads it, and untyped access (the subclasses add typed access)."""

    name: str
    on: tuple[str, ...]  # the ops it belongs on
    producer: str  # the pass (or source) that records it
    consumers: tuple[str, ...]  # the passes and stages that read it
    form: str  # its form, in words (tile-verify's diagnostics quote it)
    check: FormCheck  # its form, as a check

    def is_on(self, op) -> bool:
        return self.name in op.attributes

    def get(self, op) -> ir.Attribute | None:
        if self.name not in op.attributes:  # MLIR attribute maps have no .get
            return None
        return op.attributes[self.name]

    def set(self, op, attribute: ir.Attribute) -> None:
        op.attributes[self.name] = attribute

    def remove(self, op) -> None:
        if self.name in op.attributes:
            del op.attributes[self.name]


@dataclass(frozen=True)
class UnitAttribute(TileAttribute):
    """A marker: present or not."""

    def mark(self, op) -> None:
        self.set(op, ir.UnitAttr.get())


@dataclass(frozen=True)
class IntegerAttribute(TileAttribute):
    """An integer, written as i64."""

    def read(self, op) -> int | None:
        attribute = self.get(op)
        return None if attribute is None else ir.IntegerAttr(attribute).value

    def write(self, op, value: int) -> None:
        self.set(op, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value)))


@dataclass(frozen=True)
class I64ArrayAttribute(TileAttribute):
    """A fixed-length `array<i64: ...>`."""

    def read(self, op) -> tuple[int, ...] | None:
        attribute = self.get(op)
        return None if attribute is None else tuple(ir.DenseI64ArrayAttr(attribute))

    def write(self, op, values: Iterable[int]) -> None:
        self.set(op, ir.DenseI64ArrayAttr.get([int(v) for v in values]))


def increasing_dims() -> FormCheck:
    def check(attr: ir.Attribute) -> str | None:
        if not isinstance(attr, ir.DenseI64ArrayAttr):
            return f"got {attr}"
        dims = list(attr)
        if any(d < 0 for d in dims) or any(a >= b for a, b in pairwise(dims)):
            return f"got {attr}"
        return None
    return check


@dataclass(frozen=True)
class CopyWindowAttribute(TileAttribute):
    """Which dims of a rank-reducing tile.copy's higher-rank (indexed) side
    the window spans, one per dim of the lower-rank (un-indexed) side, in
    increasing order. The window has the lower-rank side's extents in those
    dims and extent 1 in every other dim (fixed at its index). Without the
    attribute the window spans the LAST dims: a 2-D tile of a
    [batch, rows, cols] tensor is cut at (b, row0, col0). With it, any dims:
    `Q[b, rows, h, :]` of a [batch, seq, heads, dim] tensor into a 2-D tile is
    `tile.window = array<i64: 1, 3>` with indices (b, row0, h, 0)."""

    def read(self, op) -> tuple[int, ...] | None:
        attribute = self.get(op)
        return None if attribute is None else tuple(ir.DenseI64ArrayAttr(attribute))

    def write(self, op, dims: Iterable[int]) -> None:
        self.set(op, ir.DenseI64ArrayAttr.get([int(d) for d in dims]))

    def dims(self, op, indexed_rank: int, window_rank: int) -> tuple[int, ...]:
        """The spanned dims of the indexed side: the attribute's, or the last
        `window_rank` dims (tile-verify has checked the attribute fits)."""
        return self.read(op) or tuple(range(indexed_rank - window_rank, indexed_rank))


@dataclass(frozen=True)
class StringAttribute(TileAttribute):
    def read(self, op) -> str | None:
        attribute = self.get(op)
        return None if attribute is None else ir.StringAttr(attribute).value

    def write(self, op, value: str) -> None:
        self.set(op, ir.StringAttr.get(value))


@dataclass(frozen=True)
class DictionaryAttribute(TileAttribute):
    """A dictionary; its typed view lives with the code that reads it."""

    def read(self, op) -> ir.DictAttr | None:
        attribute = self.get(op)
        return None if attribute is None else ir.DictAttr(attribute)

    def write(self, op, entries: dict[str, ir.Attribute]) -> None:
        self.set(op, ir.DictAttr.get(entries))


@dataclass(frozen=True)
class StringArrayAttribute(TileAttribute):
    def read(self, op) -> list[str] | None:
        attribute = self.get(op)
        return None if attribute is None else [ir.StringAttr(a).value for a in ir.ArrayAttr(attribute)]

    def write(self, op, values: Sequence[str]) -> None:
        self.set(op, ir.ArrayAttr.get([ir.StringAttr.get(v) for v in values]))


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------

TARGET = StringAttribute(
    "tile.target", ("builtin.module", "func.func"),
    producer="the input (or tile-compile's caller)",
    consumers=("every target-dependent pass (tilemlir.targets.resolve_target)", "tile-compile", "tile-run"),
    form='a string such as "amdgpu:gfx942"', check=of_kind(ir.StringAttr))

NUM_STAGES = IntegerAttribute(
    "tile.num_stages", ("scf.for",),
    producer="tile-tiling (or the input: TileLang's T.Pipelined)",
    consumers=("tile-pipeline", "tile-infer-layout", "the nvidia matrix core (cp.async pipelining)",
               "the report's decisions"),
    form=f"an integer from 1 to {MAX_STAGES}", check=integer(1, MAX_STAGES))

TILING = DictionaryAttribute(
    "tile.tiling", ("tile.kernel",),
    producer="tile-tiling (who decided the kernel's configuration, and the cost model's prediction for it)",
    consumers=("tile-compile --report (config_source, split_k, predicted_seconds)",
               "tile-select-mma (prefer, unless its own option prefers)"),
    form='{source = "model" | "user" | "tuning-db", split_k = N >= 1, predicted_seconds = F (optional), '
         'prefer = S (optional)}',
    check=dictionary({"source": string_in("model", "user", "tuning-db"), "split_k": integer(1)},
                     {"predicted_seconds": of_kind(ir.FloatAttr), "prefer": of_kind(ir.StringAttr)}))

IN_BOUNDS = UnitAttribute(
    "tile.in_bounds", ("tile.copy",),
    producer="tile-tiling, tile-prove-bounds (every window of the copy lies inside the global memref)",
    consumers=("tile-lower-to-gpu", "amdgpu lowering hooks (LDS DMA)",
               "the nvidia matrix core (cp.async pipelining)"),
    form="a unit attribute", check=of_kind(ir.UnitAttr))

# What tile.atomic_add may add: types with a native global atomic add on every
# backend (PTX atom.add.f32/.s32; AMD global_atomic_add_f32/_u32; MACA atomicAdd).
ATOMIC_ADD_TYPES = ("f32", "i32")
# The memref.atomic_rmw kinds tile-lower-to-gpu lowers it to (the emulator and
# the MACA emitter take these, and refuse any other).
ATOMIC_ADD_KINDS = frozenset({int(arith.AtomicRMWKind.addf), int(arith.AtomicRMWKind.addi)})
# The element types of T.atomic_add/max/min of one element (memref.atomic_rmw):
# 16-bit float additions too (PTX atom.add.noftz.f16/bf16; AMD and MetaX: a
# compare-and-swap loop on the 32-bit word, llc's and the MACA prelude's).
ATOMIC_ELEMENT_TYPES = {"add": ("f32", "i32", "f16", "bf16"), "max": ("f32", "i32"), "min": ("f32", "i32")}
# Every memref.atomic_rmw kind a kernel may hold (T.atomic_add/max/min of one
# element), by the update it makes: the engines, the emulator and the MACA
# emitter take these. Float max/min ignore a NaN operand.
ATOMIC_RMW_KINDS: dict[int, str] = {
    int(arith.AtomicRMWKind.addf): "add", int(arith.AtomicRMWKind.addi): "add",
    int(arith.AtomicRMWKind.maxnumf): "max", int(arith.AtomicRMWKind.maxs): "max",
    int(arith.AtomicRMWKind.minnumf): "min", int(arith.AtomicRMWKind.mins): "min",
}

ATOMIC_ADD = UnitAttribute(
    "tile.atomic_add", ("tile.copy",),
    producer="tile-tiling (split-K: each K slice's partial sums are added into C), or the input "
             "(TileLang's T.atomic_add)",
    consumers=("tile-verify (a fragment into global memory of its own element type: f32 or i32)",
               "tile-lower-to-gpu (memref.atomic_rmw per element)", "the reference engine",
               "tilemlir.tune.search (split-K candidates)"),
    form="a unit attribute: the copy adds the source into the destination's window (dst += src), "
         "each element one atomic read-modify-write",
    check=of_kind(ir.UnitAttr))

CAST = DictionaryAttribute(
    "tile.cast", ("tile.copy",),
    producer="tile-legalize-precision (the copy converts element types)",
    consumers=("tile-lower-to-gpu (the conversion's rounding; refuses a cast its types contradict)",),
    form='{from = T1, to = T2, rounding = "nearest_even"}',
    check=dictionary({"from": of_kind(ir.TypeAttr), "to": of_kind(ir.TypeAttr),
                      "rounding": of_kind(ir.StringAttr, equal='"nearest_even"')}))

MMA = DictionaryAttribute(
    "tile.mma", ("tile.gemm",),
    producer="tile-select-mma (the chosen matrix instruction)",
    consumers=("tile-infer-layout", "tile-lower-to-gpu (the family's matrix core)", "the report's decisions"),
    form='{name = "...", shape = array<i64: m, n, k, blocks>, types = ["a", "b", "c"]}',
    check=dictionary({"name": of_kind(ir.StringAttr), "shape": positive_i64_array(4),
                      "types": array_of(ir.StringAttr, 3)}))

WARP_GRID = I64ArrayAttribute(
    "tile.warp_grid", ("tile.gemm",),
    producer="tile-select-mma (waves along M and N)",
    consumers=("tile-infer-layout", "tile-lower-to-gpu", "the report's decisions"),
    form="array<i64: waves_m, waves_n> (positive)", check=positive_i64_array(2))

LDS_CONFLICTS = IntegerAttribute(
    "tile.lds_conflicts", ("tile.gemm",),
    producer="tile-infer-layout (LDS bank-conflict clocks per execution of the gemm)",
    consumers=("tile-lower-to-gpu (sums them into tile.lds_bank_conflicts_per_iteration)",
               "the report's decisions"),
    form="an integer >= 0", check=integer(0))

OPERAND_READ_STEPS = IntegerAttribute(
    "tile.operand_read_steps", ("tile.gemm",),
    producer="tile-infer-layout (a gemm whose A and B lie in XOR-swizzled rows, where the matrix core can read "
             "n of the instruction's K steps of an operand at once, K permuted alike in A and B: "
             "MatrixCore.k_steps_per_read; absent: 1)",
    consumers=("tile-lower-to-gpu (reads each operand so)", "the LDS bank-conflict count", "the report's decisions"),
    form="an integer >= 1", check=integer(1))

def _layout_check(attr: ir.Attribute) -> str | None:
    """tile.layout: one of the two kinds, each with its entries
    (tilemlir.passes.fragment_layout); `dims` (which dims of the base layout
    the fragment has) is optional for both."""
    if not isinstance(attr, ir.DictAttr) or "kind" not in attr:
        return f"got {attr}"
    kind = attr["kind"]
    dims = {"dims": of_kind(ir.DenseI64ArrayAttr)}
    if str(kind) == '"mma_accumulator"':
        return dictionary({"kind": of_kind(ir.StringAttr), "instruction": positive_i64_array(3),
                           "warps": positive_i64_array(2)},
                          {**dims, "base_shape": positive_i64_array(2),
                           "transposed": of_kind(ir.BoolAttr)})(attr)
    if str(kind) == '"blocked"':
        return dictionary({"kind": of_kind(ir.StringAttr), "base_shape": positive_i64_array(2),
                           "threads_per_row": integer(1), "vector": integer(1),
                           "rows_per_pass": integer(1)}, dims)(attr)
    return f"'kind': got {kind} (expected \"mma_accumulator\" or \"blocked\")"


LAYOUT = DictionaryAttribute(
    "tile.layout", ("tile.alloc_fragment",),
    producer="tile-infer-layout (which lane holds which fragment element)",
    consumers=("tile-lower-to-gpu", "the report's decisions and tile-compile --plot-layout"),
    form='{kind = "mma_accumulator", instruction = array<i64: m, n, k>, warps = array<i64: wm, wn>, '
         'optional transposed = true (issued as C^T += B^T A^T)} or '
         '{kind = "blocked", base_shape = array<i64: rows, cols>, threads_per_row = G, vector = V, '
         'rows_per_pass = P}, either with an optional dims = array<i64: ...>',
    check=_layout_check)

SCRATCH = UnitAttribute(
    "tile.scratch", ("tile.alloc_shared",),
    producer="tile-infer-layout (shared memory for reductions across waves and layout conversions)",
    consumers=("tile-lower-to-gpu",),
    form="a unit attribute", check=of_kind(ir.UnitAttr))

SMEM_LAYOUT = DictionaryAttribute(
    "tile.smem_layout", ("tile.alloc_shared",),
    producer="tile-infer-layout (stored transposed? row padding, transpose reads, swizzle, bank model; "
             "dropped_pad: row padding given up to fit the LDS, an XOR swizzle in its place "
             "where the matrix core reads swizzled rows)",
    consumers=("tile-infer-layout", "tile-pipeline", "tile-lower-to-gpu", "amdgpu lowering hooks",
               "the nvidia matrix core (cp.async pipelining)", "the report's decisions"),
    form="{transposed = true|false, pad = N >= 0, ...} (tile-infer-layout)",
    check=dictionary({"transposed": of_kind(ir.BoolAttr), "pad": integer(0)},
                     {"transpose_read": of_kind(ir.BoolAttr), "swizzle": integer(0),
                      "conflicts": integer(0), "unpadded_conflicts": integer(0),
                      "banks": of_kind(ir.StringAttr), "as_written": of_kind(ir.StringAttr),
                      "dropped_pad": integer(1),
                      # tile-infer-layout's own, between two of its steps (infer_layout.UNPADDED_SWIZZLE)
                      "unpadded_swizzle": integer(1), "swizzled_conflicts": integer(0)}))

VECTOR_WIDTH = IntegerAttribute(
    "tile.vector_width", ("tile.copy",),
    producer="tile-infer-layout (elements per lane per access)",
    consumers=("tile-lower-to-gpu",),
    form="a positive integer", check=integer(1))

PREFETCH = UnitAttribute(
    "tile.prefetch", ("tile.copy",),
    producer="tile-pipeline (the copy fills the next stage's buffer)",
    consumers=("tile-insert-barriers (leaves the copy to the loop's barriers)", "tile-lower-to-gpu",
               "amdgpu lowering hooks"),
    form="a unit attribute", check=of_kind(ir.UnitAttr))

WINDOW = CopyWindowAttribute(
    "tile.window", ("tile.copy",),
    producer="the input (a TileLang slice such as Q[b, rows, h, :])",
    consumers=("tile-verify", "the reference engine", "tile-run (the GEMM oracle ignores such copies)"),
    form="array<i64: d0, d1, ...> (strictly increasing dims >= 0 of the indexed side)",
    check=increasing_dims())

PER_THREAD = UnitAttribute(
    "tile.per_thread", ("scf.parallel",),
    producer="the input (TileLang's per-thread code, in a kernel that calls T.get_thread_binding)",
    consumers=("tile-verify (its bounds are the kernel's threads; no tile op inside)",
               "tile-insert-barriers (orders the per-thread accesses inside)",
               "tile-lower-to-gpu (the body once, its induction variables the thread's indices)",
               "the reference engine (every thread in lockstep)"),
    form="a unit attribute: the loop runs one iteration per thread of the block, all at once, from 0 to "
         "the kernel's threads along x, y, z (whose product is the kernel's `threads`); its body may hold "
         "gpu.barrier where every thread reaches it, and memref.alloca private to each thread",
    check=of_kind(ir.UnitAttr))

READ_FROM_GLOBAL = UnitAttribute(
    "tile.read_from_global", ("tile.alloc_shared",),
    producer="tile-pipeline (a loop whose stages fit the LDS only without this buffer, or run two waves "
             "per SIMD only without it)",
    consumers=(("tile-lower-to-gpu (no LDS for it: the gemms that read it as A read its one copy's "
                "global source into registers, once, before their loop)"), "the report's decisions"),
    form="a unit attribute, on a 2-D buffer filled by one tile.copy from global memory that nothing "
         "writes in the kernel, before the loop, and read only as the A operand of gemms in it",
    check=of_kind(ir.UnitAttr))

PIPELINED = IntegerAttribute(
    "tile.pipelined", ("scf.for",),
    producer="tile-pipeline (the loop's stages, once pipelined)",
    consumers=("tile-pipeline (runs once per loop)", "tile-lower-to-gpu", "the report's decisions"),
    form="an integer >= 1", check=integer(1))

PIPELINE_TAIL = UnitAttribute(
    "tile.pipeline_tail", ("scf.for",),
    producer="tile-pipeline (the last iterations of a pipelined loop, which prefetch nothing)",
    consumers=("tile-split-loops (leaves it whole)",
               "tile-lower-to-gpu (its iterations wait for the stages the loop before it prefetched)"),
    form="a unit attribute, on a loop that also carries tile.pipelined and directly follows the "
         "pipelined loop whose stages it reads",
    check=of_kind(ir.UnitAttr))

# On the gpu.funcs tile-lower-to-gpu makes, for the stages after it; the
# conversion to LLVM keeps them on the llvm.func it makes of each.
_LOWERED_KERNEL = ("gpu.func", "llvm.func")
LDS_BANK_CONFLICTS_PER_ITERATION = IntegerAttribute(
    "tile.lds_bank_conflicts_per_iteration", _LOWERED_KERNEL,
    producer="tile-lower-to-gpu (the sum of the kernel's tile.lds_conflicts)",
    consumers=("the amdgpu llvm stage (--report's lds_bank_conflicts_per_iteration)",),
    form="an integer >= 0", check=integer(0))

SCHEDULE_TRIAL = UnitAttribute(
    "tile.schedule_trial", _LOWERED_KERNEL,
    producer="tile-lower-to-gpu (amdgpu, sched-hints on: a pipelined loop that issues matrix instructions)",
    consumers=(("the amdgpu isa stage (llc's latency schedule tried too, kept where the main loop is faster: "
                "backends/amdgpu/schedule.py)"),),
    form="a unit attribute", check=of_kind(ir.UnitAttr))

DYNAMIC_SHARED_BYTES = IntegerAttribute(
    "tile.dynamic_shared_bytes", _LOWERED_KERNEL,
    producer="tile-lower-to-gpu (a matrix core that places shared memory itself)",
    consumers=("nvidia toolchain (launch metadata)",),
    form="an integer >= 0", check=integer(0))

KERNEL_ARGUMENTS = StringArrayAttribute(
    "tile.kernel_arguments", _LOWERED_KERNEL,
    producer="tile-lower-to-gpu (arguments a matrix core or hook added, as JSON)",
    consumers=("nvidia toolchain (launch metadata)",),
    form='an array of JSON strings such as "{\\"position\\": 3, ...}"', check=array_of(ir.StringAttr))

SHARED_STORAGE = StringArrayAttribute(
    "tile.shared_storage", _LOWERED_KERNEL,
    producer="tile-lower-to-gpu (the family's matrix core and hooks: how they stored and filled a shared "
             "buffer beyond tile.smem_layout, as JSON)",
    consumers=("the report's decisions (tilemlir.backends.decisions)",),
    form='an array of JSON strings such as "{\\"buffer\\": 0, \\"fill\\": \\"buffer_load_dwordx4 lds\\"}" '
         "(buffer: the tile.alloc_shared's position among the kernel's; optional pad, swizzle, fill)",
    check=array_of(ir.StringAttr))

DEFAULT_THREADS = UnitAttribute(
    "tile.default_threads", ("tile.kernel",),
    producer="the Python front end (a kernel with no T.Kernel or no threads=, whose body never asks for its "
             "thread index, launched with TileLang's default 128)",
    consumers=("tile-compile (launches it with more threads where the default spills registers)",),
    form="a unit attribute", check=of_kind(ir.UnitAttr))

ALL: tuple[TileAttribute, ...] = (
    TARGET, NUM_STAGES, TILING, IN_BOUNDS, DEFAULT_THREADS, ATOMIC_ADD, CAST, MMA, WARP_GRID, LDS_CONFLICTS, OPERAND_READ_STEPS, LAYOUT, SCRATCH, SMEM_LAYOUT,
    VECTOR_WIDTH, PREFETCH, WINDOW, PER_THREAD, READ_FROM_GLOBAL, PIPELINED, PIPELINE_TAIL, LDS_BANK_CONFLICTS_PER_ITERATION, SCHEDULE_TRIAL,
    DYNAMIC_SHARED_BYTES,
    KERNEL_ARGUMENTS, SHARED_STORAGE,
)
BY_NAME: dict[str, TileAttribute] = {attribute.name: attribute for attribute in ALL}
