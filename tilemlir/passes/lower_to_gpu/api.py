"""The lowering's interface to backends: what a family's matrix core and
lowering hooks receive from tile-lower-to-gpu, and the helpers they may use.

tile-lower-to-gpu is family-neutral. A family adds two things to it, both
named in its `Backend` manifest as "module:Class" strings and imported on
first use (`matrix_core_for`, `lowering_hooks_for`), so no pass imports a
backend:

* a `MatrixCore` (`Backend.matrix_core`): how a wave holds an accumulator tile
  and how one tile.gemm becomes matrix instructions;

  - `supported(m, n, k, blocks, wave_size)`: whether the lane layout of such
    an instruction is known (tile-select-mma only chooses those);
  - `accumulator_layout(m, n, k, wave_size, c_bits)`: where element j of a
    lane's accumulator vector sits in the instruction tile, as
    `row = lane_row(lane) + row_offset(j)`, `col = lane_col(lane) + col_offset(j)`;
  - `emit_k_steps(gemm)`: per-lane operand loads from shared memory and the
    matrix instructions for the whole block K of one tile.gemm;
  - optionally: placing shared memory itself (`place_shared`) and lowering a
    loop itself (`lower_loop`, e.g. software pipelining).

* `LoweringHooks` (`Backend.lowering_hooks`, optional): the family's own code
  at fixed points of the generic lowering (the kernel's entry, a pipelined
  loop's iteration, prefetch copies into shared memory) and the
  tile-lower-to-gpu options that code reads (`LoweringOption`).

Both receive a `KernelLowering`: the kernel being lowered, seen through a
small typed interface (lane ids, the value map, shared buffers, register
fragments, emitting nested ops), never the emitter itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from tilemlir.diagnostics import UserError
from tilemlir.dialects import attributes
from tilemlir.irutil import (
    constant_int,  # the lowering's helpers read it from here too
    element_of,
    shaped_like,
)
from tilemlir.lds_banks import SWIZZLE_CHUNK_BYTES
from tilemlir.passes.fragment_layout import FragmentLayout
from tilemlir.passes.gemm_facts import copy_vector_width

# Builders a core or hook emits with (re-exported: the interface is this module).
from tilemlir.passes.gpu_builders import (
    BytePermute,
    add,
    and_,
    bit_width,
    const_index,
    convert,
    is_fp8,
    mul,
    sub,
    swizzled_column,
    udiv,
    ult,
    urem,
)
from tilemlir.passes.shared_memory import SharedLayout

if TYPE_CHECKING:
    from tilemlir.passes.gemm_facts import MmaChoice

class LoweringError(UserError):
    """A construct tile-lower-to-gpu does not handle, reported at its op."""

    def __init__(self, op, message: str):
        super().__init__(message)
        self.op = op


# --------------------------------------------------------------------------
# Register fragments and lane ids
# --------------------------------------------------------------------------

class AccumulatorLayout(ABC):
    """Where a lane's accumulator elements sit inside one m x n instruction tile
    (an interface: each family's core implements it)."""

    m: int
    n: int
    c_per_lane: int
    # Waves that issue one instruction together (NVIDIA's warpgroup wgmma: 4),
    # each holding `m` rows of its group_m = group * m rows: the waves of a
    # group split the instruction's rows, so a wave's rows are every
    # group_m-th block of `m` (`fragment_layout.accumulator_layout`). 1: every
    # wave holds whole tiles of its own.
    group: int = 1
    # True: the core issues this tile's instructions on the transposed
    # problem, C^T += B^T A^T (`TransposedAccumulator`).
    issued_transposed: ClassVar[bool] = False

    @abstractmethod
    def lane_row(self, lane: ir.Value) -> ir.Value:
        """The lane's row offset inside the tile, as an index value."""

    @abstractmethod
    def lane_col(self, lane: ir.Value) -> ir.Value:
        """The lane's column offset inside the tile, as an index value."""

    @abstractmethod
    def row_offset(self, j: int) -> int:
        """The static row offset of the lane's j-th accumulator element."""

    @abstractmethod
    def col_offset(self, j: int) -> int:
        """The static column offset of the lane's j-th accumulator element."""

    def lane_terms(self) -> tuple[tuple, tuple] | None:
        """`lane_row` and `lane_col` as bit fields of the lane id: for each, a
        tuple of (div, mod, scale) with power-of-two div and mod, the value
        being the sum of `((lane // div) % mod) * scale`. With them, reductions
        over accumulator rows or columns use lane shuffles
        (`tilemlir.passes.fragment_layout`); None (the default): unknown, and
        such reductions go through shared memory."""
        return None

    def transposed(self) -> AccumulatorLayout:
        """The layout of a tile whose instructions are issued on the
        transposed problem (`TransposedAccumulator`)."""
        return TransposedAccumulator(self)


@dataclass(frozen=True)
class TransposedAccumulator(AccumulatorLayout):
    """`issued`, the accumulator layout of an instruction computing C^T +=
    B^T A^T (B in its A operand, A in its B), read as a tile of C: rows and
    columns swap. A core that issues accumulators so
    (`MatrixCore.transposes_accumulator`) gives a lane runs along C's rows
    where its instruction's own layout runs down the columns (AMD's MFMAs:
    four consecutive rows per lane, `tilemlir.mma_layouts`), so a row-major C
    is stored with vectors. tile-infer-layout chooses it
    (`tile.layout`'s `transposed`)."""

    issued: AccumulatorLayout
    issued_transposed: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.issued.group != 1:
            raise ValueError(f"an instruction of {self.issued.group} waves has no transposed layout")
        if self.issued.m != self.issued.n:
            # The operands swap slots: only a square instruction takes A's
            # rows in its B slot (and B's columns in its A slot) unchanged.
            raise ValueError(f"a {self.issued.m}x{self.issued.n} instruction has no transposed layout "
                             "(only square ones swap their operands)")

    @property
    def m(self) -> int:  # type: ignore[override]
        return self.issued.n

    @property
    def n(self) -> int:  # type: ignore[override]
        return self.issued.m

    @property
    def c_per_lane(self) -> int:  # type: ignore[override]
        return self.issued.c_per_lane

    def lane_row(self, lane: ir.Value) -> ir.Value:
        return self.issued.lane_col(lane)

    def lane_col(self, lane: ir.Value) -> ir.Value:
        return self.issued.lane_row(lane)

    def row_offset(self, j: int) -> int:
        return self.issued.col_offset(j)

    def col_offset(self, j: int) -> int:
        return self.issued.row_offset(j)

    def lane_terms(self) -> tuple[tuple, tuple] | None:
        terms = self.issued.lane_terms()
        return None if terms is None else (terms[1], terms[0])

    def transposed(self) -> AccumulatorLayout:
        return self.issued


@dataclass
class AccumulatorFragment:
    """A gemm accumulator held in registers: per lane, one vector per
    instruction tile of its wave (`values`, replaced as instructions update it)."""

    shape: tuple[int, int]
    element: ir.Type
    layout: AccumulatorLayout
    warps: tuple[int, int]  # waves along M and N
    values: list[ir.Value] = field(default_factory=list)
    # The instruction (m, n, k) its tile.layout names: the gemms that update
    # it must issue that one (KernelEmitter.gemm_operands checks).
    instruction: tuple[int, int, int] = ()

    @property
    def warp_tile(self) -> tuple[int, int]:
        return self.shape[0] // self.warps[0], self.shape[1] // self.warps[1]

    @property
    def tiles(self) -> tuple[int, int]:
        wm, wn = self.warp_tile
        return wm // self.layout.m, wn // self.layout.n

    @property
    def vector_type(self) -> ir.VectorType:
        return ir.VectorType.get([self.layout.c_per_lane], self.element)

    def tile_index(self, tm: int, tn: int) -> int:
        return tm * self.tiles[1] + tn

    def owned(self) -> list[tuple[int, int, int, int]]:
        """(tile, element, tm, tn) of every element a lane holds."""
        return [(self.tile_index(tm, tn), j, tm, tn)
                for tm in range(self.tiles[0]) for tn in range(self.tiles[1])
                for j in range(self.layout.c_per_lane)]

    # Which thread holds which element, in the form every fragment has
    # (`fragment_layout.FragmentLayout`; slot s is `owned()[s]`). Set by the
    # lowering when it makes the fragment.
    placement: FragmentLayout | None = None

    def read(self, slot: int) -> ir.Value:
        """The element in the lane's register `slot` (an `owned()` position)."""
        per_lane = self.layout.c_per_lane
        return vector.ExtractOp(self.values[slot // per_lane], [], [slot % per_lane]).result

    def write(self, slot: int, value: ir.Value) -> None:
        per_lane = self.layout.c_per_lane
        self.values[slot // per_lane] = vector.InsertOp(
            value, self.values[slot // per_lane], [], [slot % per_lane]).result


@dataclass
class RegisterFragment:
    """Any other fragment held in registers: per lane, one scalar SSA value per
    register slot of its layout (`placement`; `values`, replaced as the
    program writes them)."""

    placement: FragmentLayout
    element: ir.Type
    values: list[ir.Value] = field(default_factory=list)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.placement.shape

    def read(self, slot: int) -> ir.Value:
        return self.values[slot]

    def write(self, slot: int, value: ir.Value) -> None:
        self.values[slot] = value


Fragment = AccumulatorFragment | RegisterFragment


def fragment_values(fragments: Sequence[Fragment]) -> list[ir.Value]:
    """The registers of `fragments`, flat, in order (what a loop carries)."""
    return [value for fragment in fragments for value in fragment.values]


def rebind_fragments(fragments: Sequence[Fragment], values: Sequence[ir.Value]) -> None:
    """Gives `fragments` the registers `values` (flat, as `fragment_values`
    lists them; extra values are ignored), e.g. a loop's iter_args or results."""
    position = 0
    for fragment in fragments:
        count = len(fragment.values)
        fragment.values = list(values[position:position + count])
        position += count


@dataclass(frozen=True)
class LaneIds:
    """The thread's ids in its workgroup, as index values."""

    thread: ir.Value  # gpu.thread_id x
    lane: ir.Value  # thread % wave size
    wave: ir.Value  # thread / wave size


@dataclass
class GlobalOperand:
    """A gemm's A operand read from global memory into registers
    (`GemmOperands.a_global`): `load(row, k, count)` emits the read of
    `count` consecutive-K elements of the buffer's row `row` from its copy's
    source, as the gemm reads them (converted, 0 outside the source);
    `read` emits each once, before `anchor` (the outermost loop around the
    gemm that the copy is not in; None: where the gemm is), and keeps it in
    `reads`, which every gemm reading the buffer shares. `element`: the
    buffer's element type, which the gemm reads."""

    load: Callable[[ir.Value, ir.Value, int], ir.Value]
    anchor: ir.Operation | None
    reads: dict
    element: ir.Type

    def read(self, key: tuple, indices: Callable[[], tuple[ir.Value, ir.Value]], count: int) -> ir.Value:
        """The read `key` names, emitted on first use: `indices()` builds
        (row, k) where the read is emitted, from values defined before the
        anchor (the lane id, the hoisted wave position)."""
        if key not in self.reads:
            with ir.InsertionPoint(self.anchor) if self.anchor is not None else nullcontext():
                row, k = indices()
                value = self.load(row, k, count)
                self.reads[key] = vector.ExtractOp(value, [], [0]).result if count == 1 else value
        return self.reads[key]


@dataclass
class GemmOperands:
    """Everything a core needs to emit one tile.gemm, with lane ids computed:
    the accumulator, the chosen instruction, A and B as stored in shared memory
    (`transpose_*`: stored K-major for A, N-major for B, after any transposed
    storage), the block's K and the lane's wave position in the wave grid."""

    fragment: AccumulatorFragment
    choice: MmaChoice
    a_smem: ir.Value
    b_smem: ir.Value
    transpose_a: bool
    transpose_b: bool
    block_k: int
    lane: ir.Value
    wave_m: ir.Value
    wave_n: ir.Value
    # Operands read with LDS transpose reads (tile.smem_layout transpose_read, for a
    # use whose K runs down the stored columns: `shared_memory.use_reads_transposed`).
    transpose_read_a: bool = False
    transpose_read_b: bool = False
    # Their XOR swizzles (tile.smem_layout swizzle; 0: none).
    swizzle_a: int = 0
    swizzle_b: int = 0
    # A held in registers instead of `a_smem` (None then): a fragment laid out as
    # the accumulator of another gemm whose layout `MatrixCore.register_a`
    # accepted (flash attention's P = softmax(Q K^T) in O += P V).
    a_fragment: RegisterFragment | None = None
    # The accumulator layout of the gemm `a_fragment` was copied from (its
    # instruction tile: which register of a lane holds which element).
    a_source_layout: AccumulatorLayout | None = None
    # K steps of the instruction each operand read serves (tile.operand_read_steps,
    # `MatrixCore.k_steps_per_read`).
    k_steps_per_read: int = 1
    # A read from global memory instead of `a_smem` (None then): the buffer
    # was marked tile.read_from_global (`MatrixCore.reads_a_from_global`).
    a_global: GlobalOperand | None = None


# --------------------------------------------------------------------------
# What cores and hooks receive
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class FragmentRun:
    """Registers of a fragment that hold consecutive elements of one row:
    `values` (in the type stored), the first one's index in each dim
    (`indices`, fragment-relative: the thread's part plus `offsets`), and
    the static part of those indices (`offsets`, the slot's)."""

    values: tuple[ir.Value, ...]
    indices: tuple[ir.Value, ...]
    offsets: tuple[int, ...]


@runtime_checkable
class KernelLowering(Protocol):
    """One tile.kernel being lowered to a gpu.func, as a matrix core and a
    family's lowering hooks see it. Values of the tile-level kernel ("tile
    values") map to values of the gpu.func being built."""

    @property
    def kernel(self) -> ir.Operation:
        """The tile.kernel (read it; it is erased once lowered)."""

    @property
    def target(self) -> Any:
        """The target's descriptor (`tilemlir.backends.Target`)."""

    @property
    def threads(self) -> int:
        """Threads of the workgroup (all along x)."""

    @property
    def wave_size(self) -> int:
        """Lanes of a wave (the descriptor's compute.wave_size)."""

    @property
    def ids(self) -> LaneIds:
        """The thread's ids, computed at the kernel's entry."""

    @property
    def entry_block(self) -> ir.Block:
        """The gpu.func's entry block (for values made once per kernel)."""

    def option(self, name: str) -> object:
        """The value of a tile-lower-to-gpu option the family's hooks declare
        (`LoweringHooks.options`, by field name)."""

    def value_of(self, tile_value: ir.Value) -> ir.Value:
        """The lowered value bound to a tile value."""

    def bind(self, tile_value: ir.Value, value: ir.Value) -> None:
        """Binds a tile value (e.g. a loop's induction variable) to a lowered value."""

    def shared_buffer(self, tile_value: ir.Value) -> ir.Value | None:
        """The memref a shared tile value is stored in (None: not shared)."""

    def shared_layout(self, tile_value: ir.Value) -> SharedLayout:
        """How a shared tile value is stored (tile.smem_layout)."""

    def bind_shared(self, tile_value: ir.Value, buffer: ir.Value, layout: SharedLayout) -> None:
        """Places a shared tile value in `buffer`, stored as `layout` says."""

    def fragments(self) -> list[Fragment]:
        """The register fragments so far, in creation order (a loop carries them all)."""

    def lower_op(self, op: ir.Operation) -> None:
        """Lowers one op of the tile.kernel at the current insertion point."""

    def gemm_operands(self, gemm: ir.Operation) -> GemmOperands:
        """What `MatrixCore.emit_k_steps` needs for a tile.gemm, read from the op
        and the current bindings of its operands."""

    def record_lds_conflicts(self, gemm: ir.Operation) -> None:
        """Counts a lowered gemm's LDS bank conflicts (static model) in the report."""

    def note_shared(self, tile_value: ir.Value, **facts: object) -> None:
        """Records how the core or hooks stored or filled a shared tile value
        (a tile.alloc_shared's result or a stage view of it) beyond its
        tile.smem_layout, for the report's decisions
        (`attributes.SHARED_STORAGE`): `pad` (elements added to each row),
        `swizzle` (text), `fill` (the instruction that loads it straight from
        global memory, no registers in between)."""

    def add_kernel_argument(self, arg_type: ir.Type, metadata: dict) -> ir.Value:
        """Appends an argument to the gpu.func and returns it; `metadata`
        (JSON-able; lowered values in it become their argument positions) is
        what a launcher must pass, recorded in `attributes.KERNEL_ARGUMENTS`."""

    def set_launch_grid(self, grid: list[int]) -> None:
        """Launches the kernel with `grid` workgroups instead of the
        tile.kernel's grid, for a core that maps the kernel's grid onto fewer
        workgroups itself (a persistent kernel whose workgroups loop over the
        grid's tiles, rebinding the block ids: `bind`)."""

    def set_function_attribute(self, name: str, value: ir.Attribute) -> None:
        """Sets an attribute of the gpu.func being emitted (e.g. NVVM's
        `nvvm.minctasm`, which the NVPTX backend prints as `.minnctapersm`)."""

    def fragment_runs(self, fragment: Fragment, element: ir.Type, limit: int) -> tuple[ir.Value | None, list[FragmentRun]]:
        """What a copy of `fragment` to memory of `element` stores: the guard
        of the threads that store (i1, the first of each element's replicas;
        None: all) and the thread's registers in runs of at most `limit`
        consecutive columns of one row, converted to `element`."""


# --------------------------------------------------------------------------
# What a family provides
# --------------------------------------------------------------------------

class MatrixCore(ABC):
    """A family's lane-level matrix instructions (see the module docstring);
    one instance per kernel, so a core may keep per-kernel state."""

    # The target (`tilemlir.targets.model.Target`) being compiled for, set by
    # `matrix_core_for` before any other member is used: a core whose lane
    # layouts differ between its family's chips reads the descriptor here.
    target: Any = None

    @abstractmethod
    def supported(self, m: int, n: int, k: int, blocks: int, wave_size: int) -> bool:
        """Whether the lane layout of such an instruction is known."""

    @abstractmethod
    def accumulator_layout(self, m: int, n: int, k: int, wave_size: int,
                           c_bits: int = 32) -> AccumulatorLayout:
        """The accumulator layout of an m x n x k instruction (ValueError or a
        UserError when there is none)."""

    @abstractmethod
    def emit_k_steps(self, gemm: GemmOperands) -> None:
        """Operand loads and matrix instructions for one tile.gemm's block K."""

    def waves_per_instruction(self, name: str) -> int:
        """How many consecutive waves execute one instruction of this name
        together (1: every wave its own; NVIDIA's wgmma: a warpgroup of 4)."""
        return 1

    def min_stages(self, name: str) -> int:
        """The fewest pipeline stages (tile.num_stages) a K loop of this
        instruction's gemms lowers with (NVIDIA's wgmma: 2, its operands
        arrive by TMA into stage slots)."""
        return 1

    def operand_misfit(self, name: str, rows: int, cols: int, global_cols: int, element_bytes: int) -> str | None:
        """Why gemms of this instruction cannot take an operand tile of `rows` x
        `cols` elements copied from global rows of `global_cols` elements of
        `element_bytes` each in a pipelined loop; None when they can."""
        return None

    def preference(self, gemm: ir.Operation, threads: int, target: Any) -> str:
        """tile-select-mma's preference for a gemm of a kernel the cost model
        did not configure (one written with its own block sizes): the prefix
        of instruction names to rank first where the core can feed them (the
        nvidia core: `wgmma` in a K loop TMA can fill, on sm_90a); empty for
        the table's own ranking."""
        return ""

    # True: `emit_k_steps` issues an accumulator laid out `TransposedAccumulator`
    # (tile.layout's `transposed`) as C^T += B^T A^T; tile-infer-layout then
    # chooses that layout for every accumulator.
    transposes_accumulator: ClassVar[bool] = False

    # True: `emit_k_steps` reads an A operand given as `GemmOperands.a_global`
    # (a buffer tile-pipeline marked tile.read_from_global) from global memory
    # into registers, once, before the gemm's loop (`global_a_operand`), so
    # tile-pipeline may take such a buffer out of shared memory where the
    # loop's stages do not fit with it.
    reads_a_from_global: ClassVar[bool] = False

    # The bit widths of A elements `register_a` may accept; tile-select-mma
    # splits the waves of gemm chains with such an A along M only (a wave holds
    # whole rows of P). Empty: A is always staged.
    register_a_bits: ClassVar[frozenset[int]] = frozenset()

    def register_a(self, choice: MmaChoice, warps: tuple[int, int], source: MmaChoice,
                   source_warps: tuple[int, int], a_bits: int) -> bool:
        """Whether a gemm (`choice` over `warps`) can take its A operand, of
        `a_bits`-bit elements, straight from registers laid out as the
        accumulator of another gemm (`source` over `source_warps`): each lane
        already holds the A elements its instruction reads. False (the
        default): the operand is staged through shared memory
        (tile-stage-operands)."""
        return False

    def operand_lanes(self, m: int, n: int, k: int, wave_size: int, steps: int = 1):
        """For LDS layout choice: per lane, the (row of A, K index) and (column of
        B, K index) of its first operand element and the elements it reads, as
        ((rows_a, ks_a, count_a), (cols_b, ks_b, count_b)), for reads that
        serve `steps` K steps at once (`k_steps_per_read`); None when the core
        keeps the buffers as they are."""
        return

    def k_steps_per_read(self, gemm: ir.Operation, wave_size: int) -> int:
        """How many of its instruction's K steps a tile.gemm's operand reads
        from shared memory can serve at once. 1, the default: every step
        reads its operands. n > 1: a lane may read n steps' worth of K at
        once, the steps using the read's parts in order, K permuted alike in
        A and B, which leaves the sum unchanged (wider LDS reads, fewer of
        them). tile-infer-layout records where it is done
        (tile.operand_read_steps: gemms whose operands lie in XOR-swizzled
        rows), and `emit_k_steps` reads so (`GemmOperands.k_steps_per_read`)."""
        return 1

    # True: `emit_k_steps` reads operands along XOR-swizzled rows (tile.smem_layout
    # swizzle, `gpu_builders.swizzled_column`) with its ordinary vector reads,
    # not only with LDS transpose reads; tile-infer-layout may then swizzle a
    # buffer whose row padding it drops to fit the LDS (`fit_padding`).
    reads_swizzled_rows: ClassVar[bool] = False

    # True: the core places shared buffers itself (`place_shared`) instead of
    # workgroup attributions, e.g. in dynamic shared memory with padded rows.
    places_shared_memory: ClassVar[bool] = False

    def place_shared(self, lowering: KernelLowering, shared_ops: list) -> int:
        """Binds every tile.alloc_shared (`lowering.bind_shared`); returns the
        bytes of dynamic shared memory the launch must provide. Called only
        when `places_shared_memory` is set, which obliges the core to define it."""
        raise TypeError(f"{type(self).__name__} sets places_shared_memory but does not "
                        "define place_shared")

    def lower_loop(self, lowering: KernelLowering, op: ir.Operation) -> bool:
        """A chance to lower an scf.for itself (e.g. software pipelining);
        False leaves it to the generic lowering."""
        return False

    def fence_shared_writes(self, buffer: ir.Value) -> None:
        """Emitted by each thread after its writes of the shared `buffer` and
        before the workgroup barrier that publishes them: whatever else the
        core's readers of it need (NVIDIA: wgmma reads through the async
        proxy). The default: nothing, the barrier suffices."""

    def store_fragment(self, lowering: KernelLowering, op: ir.Operation, fragment: Fragment,
                       indices: list[ir.Value]) -> bool:
        """A chance to emit a tile.copy of a register fragment to global
        memory (`indices`: the window's origin there) itself, e.g. through
        shared memory and a bulk copy; False leaves it to the generic
        lowering (each thread stores its registers)."""
        return False

    def emit_kernel_body(self, lowering: KernelLowering, emit_body: Callable[[], None]) -> int:
        """Emits the kernel's body at the insertion point (after the lane ids
        and the shared-memory placement): `emit_body()` lowers the tile.kernel's
        block, once. Returns the threads per workgroup to launch. The default
        emits the body as it is: `lowering.threads`. A core may wrap it, e.g.
        NVIDIA's warp-specialized kernels run the body in the kernel's own
        threads and add a producer warpgroup after them, which issues the TMA
        loads of the K loop (backends/nvidia/warp_specialize.py); the lane ids
        of the body's threads stay as they were. A core may lower some of the
        body's ops again elsewhere (the producer's copy coordinates), which
        rebinds them in the value map: nothing may read the map after this."""
        emit_body()
        return lowering.threads


@dataclass(frozen=True)
class LoweringOption:
    """An option of tile-lower-to-gpu that a family's hooks read. The pass
    offers it under `name` with dashes (`direct_lds_loads` ->
    `tile-lower-to-gpu{direct-lds-loads=...}`) and hands its value to the
    kernels of that family (`KernelLowering.option`)."""

    name: str  # a Python identifier: the pass's dataclass field
    annotation: object  # bool, int, str or base.Switch
    default: object
    help: str = ""


class LoweringHooks:
    """A family's code at fixed points of the generic lowering. The base class
    does nothing at each point; one instance per kernel, made after the lane
    ids, so hooks may keep per-kernel state."""

    # The tile-lower-to-gpu options these hooks read.
    options: ClassVar[tuple[LoweringOption, ...]] = ()

    def __init__(self, lowering: KernelLowering):
        self.lowering = lowering

    def begin_kernel(self) -> None:
        """At the gpu.func's entry, after the lane ids."""

    def copy_prefetch(self, op: ir.Operation, source: ir.Value, offsets: list[ir.Value],
                      width: int) -> bool:
        """A prefetch tile.copy global -> shared inside a pipelined loop (its
        source lowered, `width` elements per access): True when the hooks
        emitted it, False to leave it to the generic copy through registers."""
        return False

    def byte_permute(self) -> BytePermute | None:
        """The family's permutation of the bytes of two dwords
        (gpu_builders.BytePermute: AMD's v_perm_b32), which transposes 8-bit
        tiles in registers (columns_of) in fewer instructions than the
        generic bit arithmetic; None (the default) for the arithmetic."""
        return None

    def begin_pipelined_iteration(self, body_ops: list) -> None:
        """At the top of a pipelined loop's body, before its one barrier;
        `body_ops` are the tile-level ops of the body."""

    def end_pipelined_iteration(self, body: ir.Block) -> None:
        """At the end of a pipelined loop's lowered body, before its yield."""

    def after_pipelined_loop(self, body_ops: list) -> None:
        """Right after a pipelined loop that prefetches (not a peeled tail);
        `body_ops` are the tile-level ops of its body. Its last iterations may
        have prefetched past the end, into stages the code after it (the next
        iteration of an outer loop) stores: a family whose prefetches land in
        shared memory asynchronously waits for them here."""

    def stage_barrier(self) -> None:
        """The barrier of a pipelined loop's iteration, which orders only the
        workgroup's shared-memory accesses (a stage is stored once every wave
        has read it): the default is gpu.barrier, which orders global memory
        too (a family may emit a barrier that waits for shared memory alone)."""
        gpu.BarrierOp()

    def prefetch_issued(self, op: ir.Operation) -> None:
        """Right after the global loads of a pipelined loop's prefetch copy
        `op` (emitted through registers; its LDS stores wait for the end of
        the iteration)."""

    def end_kernel(self, gpu_func: ir.Operation, shared_bytes: int) -> None:
        """When the gpu.func is complete; `shared_bytes` the bytes of its
        workgroup attributions (0 where the matrix core places shared memory)."""

    def reduce_across_lanes(self, value: ir.Value, bits: Sequence[int],
                            combine: Callable[[ir.Value, ir.Value], ir.Value]) -> ir.Value:
        """`value` combined over the lanes of a wave whose ids differ from this
        lane's only in `bits` (distinct powers of two below the wave size, in
        increasing order), with `combine` (one step of a tile.reduce kind:
        commutative, so a lane and its partner agree). Every lane of such a
        group must end with the same bits, so that replicas of a result agree.
        The default is a butterfly of xor shuffles (`shuffle_xor`), which every
        family lowers; a family overrides it with lane exchanges that need no
        trip through shared memory."""
        for bit in bits:
            value = combine(value, shuffle_xor(value, bit, self.lowering.wave_size))
        return value


# --------------------------------------------------------------------------
# Finding a family's core and hooks
# --------------------------------------------------------------------------

def matrix_core_for(target: Any) -> MatrixCore:
    """A new instance of the target's family's matrix core (`Backend.matrix_core`,
    as the family's resolved backend imported it: `resolve_backend`), its
    `target` set to `target`."""
    from tilemlir.targets.registry import resolve_backend

    core = resolve_backend(target.family).part("matrix_core")
    if core is None:
        raise UserError(f"the '{target.family}' family has no lane-level matrix lowering "
                        "(its Backend names no matrix_core)")
    instance = core()
    instance.target = target
    return instance


def lowering_hooks_for(family: str) -> type[LoweringHooks]:
    """The family's lowering hooks class (`Backend.lowering_hooks`, as its
    resolved backend imported it), or the base class, which adds nothing,
    when it names none."""
    from tilemlir.targets.registry import resolve_backend

    return resolve_backend(family).part("lowering_hooks") or LoweringHooks


# --------------------------------------------------------------------------
# Helpers for reading tile IR
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class ForLoopParts:
    """The pieces of an `scf.for` (its operands, block arguments and body)."""

    lower: ir.Value
    upper: ir.Value
    step: ir.Value
    inits: list[ir.Value]
    induction_variable: ir.Value
    iter_args: list[ir.Value]
    body_ops: list[ir.Operation]


def for_loop_parts(op: ir.Operation) -> ForLoopParts:
    body = op.regions[0].blocks[0]
    arguments = list(body.arguments)
    operands = list(op.operands)
    return ForLoopParts(operands[0], operands[1], operands[2], operands[3:],
                        arguments[0], arguments[1:], [o.operation for o in body.operations])


def copy_width(op: ir.Operation, cols: int, element: ir.Type) -> int:
    """Elements a thread moves per access in a tile.copy: tile-infer-layout's
    choice (tile.vector_width), or the same rule when it did not run."""
    width = attributes.VECTOR_WIDTH.read(op)
    if width is not None:
        return width
    return copy_vector_width(cols, bit_width(element))


# Ops that move or reinterpret fp8 values rather than compute with them.
_FP8_KEPT = frozenset({"arith.constant", "arith.bitcast", "arith.select"})
# Conversions between floats, which the chip's code generator lowers for the
# fp8 formats it converts in hardware (`native_fp8`) and `convert` gives in
# software for the others.
_FLOAT_CONVERSIONS = frozenset({"arith.extf", "arith.truncf"})
_INT_TO_FLOAT = frozenset({"arith.sitofp", "arith.uitofp"})


def widen_fp8_arithmetic(root: ir.Operation, native_fp8: tuple[str, ...] | None) -> int:
    """Every arith or math op under `root` that computes with 8-bit floats
    (a tile.reduce of an fp8 fragment, element-wise math over one) computed
    in f32 instead: its fp8 operands converted (`convert`, in hardware where
    the chip converts the format, else in software), the op on f32, its fp8
    results rounded back, as a per-op rounding to the type means; an extf
    or truncf of a format the chip does not convert becomes `convert`'s
    software conversion, and int <-> fp8 goes through f32 (to fp8 always in
    software). No chip has fp8 ALU instructions, and the LLVM dialect has no
    fp8 type. Returns the ops rewritten; with `native_fp8` None (no fp8
    encoding in kernels) an op with an fp8 result is a LoweringError at the
    op."""
    found = []

    def visit(op: ir.Operation):
        if op.name.split(".")[0] not in ("arith", "math") or op.name in _FP8_KEPT:
            return ir.WalkResult.ADVANCE
        fp8 = [str(element_of(v.type)) for v in [*op.operands, *op.results] if is_fp8(element_of(v.type))]
        if fp8 and not (op.name in _FLOAT_CONVERSIONS and all(f in (native_fp8 or ()) for f in fp8)):
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    f32 = ir.F32Type.get()
    for op in found:
        if native_fp8 is None and any(is_fp8(element_of(r.type)) for r in op.results):
            raise LoweringError(op, f"{op.name} computes {element_of(op.results[0].type)} values: the target's code "
                                    "generator encodes no fp8 format in a kernel; compute the fragment in "
                                    "f16, bf16 or f32")
        with ir.InsertionPoint(op), op.location:
            if op.name in _FLOAT_CONVERSIONS:
                (source,), (result,) = op.operands, op.results
                result.replace_all_uses_with(convert(source, element_of(source.type), element_of(result.type), native_fp8))
                op.erase()
                continue
            operands = [convert(v, element_of(v.type), f32, native_fp8) if is_fp8(element_of(v.type)) else v
                        for v in op.operands]
            types = [shaped_like(r.type, f32) if is_fp8(element_of(r.type)) else r.type for r in op.results]
            wide = ir.Operation.create(op.name, results=types, operands=operands,
                                       attributes={name: op.attributes[name] for name in op.attributes})
        # An integer's f32 rounded to fp8 in hardware would fold back into one
        # int -> fp8 sitofp (arith's canonicalization), which llc cannot lower.
        rounding = () if op.name in _INT_TO_FLOAT else native_fp8
        with ir.InsertionPoint.after(wide), op.location:
            for old, new in zip(op.results, wide.results):
                element = element_of(old.type)
                old.replace_all_uses_with(convert(new, f32, element, rounding) if is_fp8(element) else new)
        op.erase()
    return len(found)


def widened_to_32_bits(value: ir.Value) -> tuple[ir.Value, Callable[[ir.Value], ir.Value]]:
    """`value` widened exactly to f32 or i32 (lane exchanges move 32-bit
    registers; an 8-bit float as its bits in an i32) and the function that
    narrows an exchanged value back to its type. Wider types are refused
    (ValueError)."""
    original = value.type
    bits = bit_width(original)
    if bits > 32:
        raise ValueError(f"cross-lane reductions of {original} (wider than 32 bits) are not supported")
    if bits == 32:
        return value, lambda moved: moved
    if isinstance(original, ir.FloatType) and bits == 8:
        # fp8 moves as its bits: not every chip converts every fp8 format.
        i8, i32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32)
        return (arith.ExtUIOp(i32, arith.BitcastOp(i8, value).result).result,
                lambda moved: arith.BitcastOp(original, arith.TruncIOp(i8, moved).result).result)
    if isinstance(original, ir.FloatType):
        return (arith.ExtFOp(ir.F32Type.get(), value).result,
                lambda moved: arith.TruncFOp(original, moved).result)
    return (arith.ExtSIOp(ir.IntegerType.get_signless(32), value).result,
            lambda moved: arith.TruncIOp(original, moved).result)


def moved_by_words(value: ir.Value, move: Callable[[ir.Value], ir.Value]) -> ir.Value:
    """`move`, a lane exchange of one 32-bit register, applied to `value` of
    up to 64 bits: a narrower one widened exactly and narrowed back
    (`widened_to_32_bits`), a 64-bit one (i64, f64) moved as its two 32-bit
    halves. Wider types are refused (ValueError)."""
    original = value.type
    if bit_width(original) != 64:
        wide, narrow = widened_to_32_bits(value)
        return narrow(move(wide))
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    is_float = isinstance(original, ir.FloatType)
    whole = arith.BitcastOp(i64, value).result if is_float else value
    shift = arith.ConstantOp(i64, 32).result
    low = move(arith.TruncIOp(i32, whole).result)
    high = move(arith.TruncIOp(i32, arith.ShRUIOp(whole, shift).result).result)
    joined = arith.OrIOp(arith.ExtUIOp(i64, low).result,
                         arith.ShLIOp(arith.ExtUIOp(i64, high).result, shift).result).result
    return arith.BitcastOp(original, joined).result if is_float else joined


def shuffle_xor(value: ir.Value, offset: int, width: int) -> ir.Value:
    """`value` of the lane whose id differs in the bits of `offset`, by a
    `gpu.shuffle xor` over segments of `width` lanes (`moved_by_words`)."""
    i32 = ir.IntegerType.get_signless(32)
    return moved_by_words(value, lambda word: gpu.ShuffleOp(
        word, arith.ConstantOp(i32, offset).result, arith.ConstantOp(i32, width).result,
        gpu.ShuffleMode.XOR).results[0])


def guarded(guard: ir.Value | None, body: Callable[[], object]) -> None:
    """Emits `body()` under `scf.if guard` (unconditionally when guard is None)."""
    if guard is None:
        body()
        return
    branch = scf.IfOp(guard)
    with ir.InsertionPoint(branch.then_block):
        body()
        scf.YieldOp([])


def lane_operand(smem: ir.Value, outer: ir.Value, k: ir.Value, count: int, element: ir.Type,
                 k_contiguous: bool, swizzle: int = 0) -> ir.Value:
    """A lane's `count` consecutive-K elements of one row of A or column of B.
    `k_contiguous`: the buffer is indexed [outer, k] (one vector load), else
    [k, outer] (one load per element). `swizzle`: the buffer's rows are
    XOR-swizzled by 16-byte chunks (tile.smem_layout swizzle), so each read
    takes the column its row stores it at, one load per chunk the `count`
    elements span (they start at a multiple of `count`: a read of at most a
    chunk stays inside one, RDNA3's and fp8's 32-byte reads take two)."""
    row_elements = ir.MemRefType(smem.type).shape[-1]
    if k_contiguous:
        if count == 1:
            return memref.LoadOp(smem, [outer, swizzled_column(outer, k, swizzle, row_elements, element)]).result
        piece = min(count, SWIZZLE_CHUNK_BYTES * 8 // bit_width(element)) if swizzle else count
        return concatenated([vector.LoadOp(ir.VectorType.get([piece], element), smem, [
            outer, swizzled_column(outer, add(k, start), swizzle, row_elements, element)]).result
            for start in range(0, count, piece)])
    scalars = [memref.LoadOp(smem, [add(k, i), swizzled_column(add(k, i), outer, swizzle, row_elements,
                                                                   element)]).result
               for i in range(count)]
    if count == 1:
        return scalars[0]
    return vector.FromElementsOp(ir.VectorType.get([count], element), scalars).result


def concatenated(vectors: list[ir.Value]) -> ir.Value:
    """One vector of `vectors` end to end (1-D, one element type)."""
    while len(vectors) > 1:
        pairs = []
        for i in range(0, len(vectors) - 1, 2):
            left, right = (ir.VectorType(v.type).shape[0] for v in vectors[i:i + 2])
            pairs.append(vector.shuffle(vectors[i], vectors[i + 1], list(range(left + right))))
        vectors = pairs + vectors[len(vectors) - len(vectors) % 2:]
    return vectors[0]



__all__ = [
    "AccumulatorFragment",
    "AccumulatorLayout",
    "ForLoopParts",
    "Fragment",
    "FragmentRun",
    "GemmOperands",
    "GlobalOperand",
    "KernelLowering",
    "LaneIds",
    "LoweringError",
    "LoweringHooks",
    "LoweringOption",
    "MatrixCore",
    "RegisterFragment",
    "SharedLayout",
    "TransposedAccumulator",
    "add",
    "and_",
    "bit_width",
    "concatenated",
    "const_index",
    "constant_int",
    "copy_width",
    "for_loop_parts",
    "fragment_values",
    "guarded",
    "lane_operand",
    "lowering_hooks_for",
    "matrix_core_for",
    "moved_by_words",
    "mul",
    "rebind_fragments",
    "shuffle_xor",
    "sub",
    "swizzled_column",
    "udiv",
    "ult",
    "urem",
    "widened_to_32_bits",
]
