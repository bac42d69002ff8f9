"""Lane layouts of register fragments: which thread holds which element.

A fragment of shape S (rank 0, 1 or 2) is held in registers spread over the
block's threads. Its layout says, for every thread t and every register
("slot") s of that thread, which element it holds:

    index[d] = part[d](t) + slots[s][d]          for each dim d

`part[d]` is the thread-dependent part of dim d's index, `slots` the static
offsets of the thread's registers. Two fragments hold matching elements in
the same registers' threads exactly when their parts are the same function of
t (`ThreadPart.key`) and their slot offsets agree: that is what lets a
`T.Parallel` body read `S[i, j]` and `m[i]` from registers with no data
movement.

Most parts are sums of bit fields of the thread id,
`((t // div) % mod) * scale` with power-of-two `div` and `mod` (`terms`).
Then the layout knows which thread-id bits a dim's index depends on: a
reduction along dim d combines across the bits of d's terms (shuffles within a
wave, shared memory across waves), and threads that differ only in bits no
part uses hold the same elements (replicas: only the one with those bits 0
writes to memory).

Layouts (the `kind` of `tile.layout`, written by tile-infer-layout):

* `mma_accumulator`: a gemm accumulator, the matrix instruction's C layout
  (the family's `AccumulatorLayout`) tiled over the waves of the warp grid;
* `blocked`: every other fragment by default. The columns of a row are
  spread over `threads_per_row` consecutive threads, `vector` consecutive
  elements each (up to 128 bits: one vector access to global memory), rows
  over the `rows_per_pass` groups of threads; a thread holds the rest in
  further slots. Like TileLang's default fragment layout, consecutive
  threads hold consecutive memory.
* any of these *projected* onto some of its dims (`dims`): the layout of a
  fragment indexed by a subset of another's loop indices, e.g. the row
  maxima of a softmax (`tile.reduce` along dim 1) follow the source's rows
  and are replicated over the threads that held the columns.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from mlir import ir

from tilemlir.passes.gpu_builders import add, const_index, mul, udiv, urem

Term = tuple[int, int, int]  # ((thread // div) % mod) * scale
# In tile.layout's `dims`: an extent-1 dim of the fragment that is not a dim
# of the base layout (every thread's index there is 0).
UNIT_DIM = -1


@dataclass(frozen=True)
class ThreadPart:
    """The thread-dependent part of one dim's index. Equal keys: the same
    function of the thread id. `terms` are its bit fields where known; else
    `build` emits it from the lane ids."""

    key: tuple
    terms: tuple[Term, ...] | None = field(compare=False)
    build: Callable | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        # Known bit fields are the function: two parts with the same fields are
        # the same part, whichever layout they come from (the rows of two gemm
        # accumulators of one warp grid and instruction height, say).
        if self.terms is not None:
            fields = tuple(sorted((div, mod, scale) for div, mod, scale in self.terms if mod > 1))
            object.__setattr__(self, "key", ("terms", fields))

    def value(self, ids) -> ir.Value:
        if self.terms is None:
            return self.build(ids)
        total = None
        for div, mod, scale in self.terms:
            piece = mul(urem(udiv(ids.thread, div), mod), scale) if mod > 1 else None
            if piece is None:
                continue
            total = piece if total is None else add(total, piece)
        return const_index(0) if total is None else total

    def bits(self) -> int | None:
        """The mask of thread-id bits this part depends on (None: unknown)."""
        if self.terms is None:
            return None
        mask = 0
        for div, mod, _ in self.terms:
            if mod > 1:
                mask |= (mod - 1) * div
        return mask


UNIT_PART = ThreadPart(("unit",), ())


@dataclass(frozen=True)
class FragmentLayout:
    shape: tuple[int, ...]
    parts: tuple[ThreadPart, ...]
    slots: tuple[tuple[int, ...], ...]
    threads: int
    kind: str = field(default="blocked", compare=False)
    # The parts of the dims a projection dropped: a thread whose dropped parts
    # are all 0 is the first of the replicas holding its elements (what
    # `replica_mask` cannot say when some part's bits are unknown).
    dropped: tuple[ThreadPart, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        # An extent-1 dim every thread indexes at 0 is the same dim whatever
        # layout it came from: one canonical part, so that layouts compare equal.
        parts = tuple(UNIT_PART if extent == 1 and part.bits() == 0 else part
                      for extent, part in zip(self.shape, self.parts))
        object.__setattr__(self, "parts", parts)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def project(self, dims: tuple[int, ...]) -> FragmentLayout:
        """The layout of a fragment indexed by the dims `dims` of this one's
        (a reduction's result, a row vector read next to a tile)."""
        slots = list(dict.fromkeys(tuple(slot[d] for d in dims) for slot in self.slots))
        dropped = self.dropped + tuple(self.parts[d] for d in range(self.rank) if d not in dims)
        return FragmentLayout(tuple(self.shape[d] for d in dims), tuple(self.parts[d] for d in dims),
                              tuple(slots), self.threads, self.kind, dropped)

    def with_unit_dims(self, positions: tuple[int, ...]) -> FragmentLayout:
        """This layout with extent-1 dims inserted at `positions` of the
        result (every thread's index there is 0): the layout of a fragment
        whose unit dims a loop does not index."""
        if not positions:
            return self
        rank = self.rank + len(positions)
        others = iter(range(self.rank))
        order = [None if d in positions else next(others) for d in range(rank)]
        return FragmentLayout(
            tuple(1 if o is None else self.shape[o] for o in order),
            tuple(UNIT_PART if o is None else self.parts[o] for o in order),
            tuple(tuple(0 if o is None else slot[o] for o in order) for slot in self.slots),
            self.threads, self.kind, self.dropped)

    def used_bits(self) -> int | None:
        mask = 0
        for part in self.parts:
            bits = part.bits()
            if bits is None:
                return None
            mask |= bits
        return mask

    def replica_mask(self) -> int | None:
        """Thread-id bits no part depends on: threads differing only there hold
        the same elements. None when some part's bits are unknown (such
        layouts, the accumulators of cores without `lane_terms`, have no
        replicas)."""
        used = self.used_bits()
        if used is None:
            return None
        return (self.threads - 1) & ~used

    @functools.cached_property
    def slot_index(self) -> dict[tuple[int, ...], int]:
        """The register slot of each element offset (built once per layout)."""
        return {offsets: s for s, offsets in enumerate(self.slots)}

    def runs(self, limit: int) -> list[list[int]]:
        """The slots in groups of at most `limit` whose offsets differ only in
        the last dim, by +1 each: the elements one vector access may move."""
        groups: list[list[int]] = []
        for s, offsets in enumerate(self.slots):
            if groups and len(groups[-1]) < limit and self.rank:
                last = self.slots[groups[-1][-1]]
                if last[:-1] == offsets[:-1] and last[-1] + 1 == offsets[-1]:
                    groups[-1].append(s)
                    continue
            groups.append([s])
        return groups

    def vector_length(self) -> int:
        """Consecutive last-dim elements a thread holds in a row (1 when its
        slots do not come in such runs)."""
        if not self.rank or not self.slots:
            return 1
        length = 1
        while length < len(self.slots):
            first, nxt = self.slots[length - 1], self.slots[length]
            if first[:-1] != nxt[:-1] or first[-1] + 1 != nxt[-1]:
                break
            length += 1
        return length

    def describe(self) -> str:
        shape = "x".join(str(d) for d in self.shape) or "scalar"
        return f"{self.kind} layout of a {shape} fragment ({len(self.slots)} registers per thread)"


def is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _largest_power_of_two_dividing(value: int, cap: int) -> int:
    result = 1
    while result * 2 <= cap and value % (result * 2) == 0:
        result *= 2
    return result


@dataclass(frozen=True)
class BlockedParams:
    """A `blocked` layout of a rows x cols base shape (rank-1 fragments are
    one row): `threads_per_row` threads hold `vector` consecutive columns
    each, `rows_per_pass` groups of them hold consecutive rows."""

    rows: int
    cols: int
    threads_per_row: int
    vector: int
    rows_per_pass: int


def blocked_params(shape: tuple[int, ...], element_bits: int, threads: int) -> BlockedParams:
    rows, cols = (1, shape[0]) if len(shape) == 1 else (shape[0], shape[1]) if shape else (1, 1)
    vector = _largest_power_of_two_dividing(cols, max(1, 128 // max(8, element_bits)))
    per_row = _largest_power_of_two_dividing(cols // vector, threads)
    rows_per_pass = _largest_power_of_two_dividing(rows, threads // per_row)
    return BlockedParams(rows, cols, per_row, vector, rows_per_pass)


def blocked_layout(shape: tuple[int, ...], params: BlockedParams, threads: int,
                   dims: tuple[int, ...] | None = None) -> FragmentLayout:
    """The blocked layout of `params` for a fragment of `shape` (its dims of
    the base shape: `dims`, default all of it)."""
    g, v, p = params.threads_per_row, params.vector, params.rows_per_pass
    key = ("blocked", params)
    row = ThreadPart(key + (0,), ((g, p, 1),))
    col = ThreadPart(key + (1,), ((1, g, v),))
    slots = tuple((rr * p, cc * g * v + e) for rr in range(params.rows // p)
                  for cc in range(params.cols // (g * v)) for e in range(v))
    base = FragmentLayout((params.rows, params.cols), (row, col), slots, threads, "blocked")
    if dims is None:
        dims = () if not shape else (1,) if len(shape) == 1 else (0, 1)
    return base.project(dims) if dims != (0, 1) else base


def accumulator_layout(shape: tuple[int, int], lanes, warps: tuple[int, int], wave_size: int,
                       threads: int, instruction: tuple[int, int, int]) -> FragmentLayout:
    """The register layout of a gemm accumulator: the instruction's C layout
    (`lanes`, an `AccumulatorLayout`) tiled over the warp grid. Slot s is
    element s % c_per_lane of instruction tile s // c_per_lane
    (`AccumulatorFragment.owned` order).

    Where `lanes.group` waves issue one instruction (the warp grid is then
    waves x 1), a group of waves holds a contiguous band of rows, and inside
    it wave w of the group holds rows [w m, (w + 1) m) of every group m-row
    instruction tile: with g = group and wave tile height wtm,

        row = (wave // g) * g wtm + tm * g m + (wave % g) * m + lane_row
    """
    wm, wn = warps
    wtm, wtn = shape[0] // wm, shape[1] // wn
    tiles_m, tiles_n = wtm // lanes.m, wtn // lanes.n
    group = getattr(lanes, "group", 1)
    if group > 1 and (wn != 1 or wm % group):
        raise ValueError(f"instructions of {group} waves stack their groups along M: the warp grid must be "
                         f"a multiple of {group} waves by 1, not {wm}x{wn}")
    key = ("mma_accumulator", tuple(shape), instruction, tuple(warps), wave_size, group,
           getattr(lanes, "issued_transposed", False))
    lane_terms = lanes.lane_terms() if hasattr(lanes, "lane_terms") else None
    # The row's wave part (docstring formula; with g = 1 its second field is empty).
    row_terms = ((wave_size * wn * group, wm // group, wtm * group), (wave_size * wn, group, lanes.m))
    wave_terms = row_terms, ((wave_size, wn, wtn),)

    def part(dim: int) -> ThreadPart:
        def build(ids, dim=dim):
            if dim == 1:
                return add(mul(urem(ids.wave, wn), wtn), lanes.lane_col(ids.lane))
            wave = udiv(ids.wave, wn)
            start = mul(udiv(wave, group), wtm * group)
            if group > 1:
                start = add(start, mul(urem(wave, group), lanes.m))
            return add(start, lanes.lane_row(ids.lane))
        known = lane_terms is not None and wave_size * wm * wn == threads
        terms = wave_terms[dim] + tuple(lane_terms[dim]) if known else None
        return ThreadPart(key + (dim,), terms, build)

    slots = tuple((tm * lanes.m * group + lanes.row_offset(j), tn * lanes.n + lanes.col_offset(j))
                  for tm in range(tiles_m) for tn in range(tiles_n) for j in range(lanes.c_per_lane))
    return FragmentLayout(tuple(shape), (part(0), part(1)), slots, threads, "mma_accumulator")


# --------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class ReducePlan:
    """How a tile.reduce along `dim` of a fragment laid out as `source`
    combines: within a thread (its slots), across the lanes of a wave
    (`shuffle_bits`: xor shuffles), across waves (`wave_bits`, through
    shared memory); or, when the layout does not separate the reduced dim's
    threads from the others', `through_memory`: the whole source through
    shared memory and a loop per result element."""

    result: FragmentLayout
    shuffle_bits: tuple[int, ...] = ()
    wave_bits: tuple[int, ...] = ()
    through_memory: bool = False

    def scratch_elements(self, source: FragmentLayout) -> int:
        if self.through_memory:
            return math.prod(source.shape)
        if self.wave_bits:
            # One partial per thread whose in-wave reduced bits are 0 (their
            # ids packed without those bits), per result register.
            return (source.threads >> len(self.shuffle_bits)) * len(self.result.slots)
        return 0


def reduce_plan(source: FragmentLayout, dim: int, wave_size: int) -> ReducePlan:
    kept = tuple(d for d in range(source.rank) if d != dim)
    result = source.project(kept)
    reduced_bits = source.parts[dim].bits()
    kept_bits = result.used_bits()
    if reduced_bits is None or kept_bits is None or reduced_bits & kept_bits \
            or not is_power_of_two(source.threads):
        return ReducePlan(result, through_memory=True)
    bits = [1 << b for b in range(source.threads.bit_length()) if reduced_bits & (1 << b)]
    return ReducePlan(result, tuple(b for b in bits if b < wave_size),
                      tuple(b for b in bits if b >= wave_size))


# --------------------------------------------------------------------------
# tile.layout <-> FragmentLayout
# --------------------------------------------------------------------------

def layout_attribute_entries(kind: str, values: dict[str, object]) -> dict[str, ir.Attribute]:
    """The entries of a tile.layout dictionary."""
    entries = {"kind": ir.StringAttr.get(kind)}
    for name, value in values.items():
        if isinstance(value, tuple | list):
            entries[name] = ir.DenseI64ArrayAttr.get([int(v) for v in value])
        else:
            entries[name] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))
    return entries


def blocked_entries(params: BlockedParams, dims: tuple[int, ...]) -> dict[str, ir.Attribute]:
    return layout_attribute_entries("blocked", {
        "base_shape": (params.rows, params.cols), "threads_per_row": params.threads_per_row,
        "vector": params.vector, "rows_per_pass": params.rows_per_pass, "dims": dims})


def read_layout(attr: ir.DictAttr, shape: tuple[int, ...], threads: int, wave_size: int,
                accumulator_lanes: Callable | None = None) -> FragmentLayout:
    """The FragmentLayout a tile.layout describes. `accumulator_lanes(m, n,
    k)` gives the family's AccumulatorLayout (for `mma_accumulator`; read
    through its `transposed()` where the attribute's `transposed` is true).
    ValueError when the attribute does not describe a layout of `shape`."""
    kind = ir.StringAttr(attr["kind"]).value

    def ints(name: str) -> tuple[int, ...]:
        return tuple(ir.DenseI64ArrayAttr(attr[name]))

    def integer(name: str) -> int:
        return ir.IntegerAttr(attr[name]).value

    dims = ints("dims") if "dims" in attr else None
    units = tuple(position for position, d in enumerate(dims or ()) if d == UNIT_DIM)
    if dims is not None:
        dims = tuple(d for d in dims if d != UNIT_DIM)
        if any(not 0 <= d < 2 for d in dims):
            raise ValueError(f"dims {list(dims)} are not dims of a 2-D base layout")
    if kind == "blocked":
        rows, cols = ints("base_shape")
        params = BlockedParams(rows, cols, integer("threads_per_row"), integer("vector"),
                               integer("rows_per_pass"))
        g, v, p = params.threads_per_row, params.vector, params.rows_per_pass
        if (not all(is_power_of_two(x) for x in (g, v, p)) or cols % (g * v) or rows % p
                or g * p > threads):
            raise ValueError(f"a blocked layout of {rows}x{cols} with {g} threads per row, "
                             f"{v} elements each and {p} rows per pass does not tile it over "
                             f"{threads} threads")
        dims = dims if dims is not None else (0, 1)
        layout = blocked_layout(shape, params, threads, dims)
    elif kind == "mma_accumulator":
        m, n, k = ints("instruction")
        warps = ints("warps")
        base = ints("base_shape") if "base_shape" in attr else shape
        lanes = accumulator_lanes(m, n, k)
        if "transposed" in attr and ir.BoolAttr(attr["transposed"]).value:
            lanes = lanes.transposed()
        layout = accumulator_layout(base, lanes, warps, wave_size, threads, (m, n, k))
        if dims is not None:
            layout = layout.project(dims)
    else:
        raise ValueError(f"unknown layout kind '{kind}'")
    layout = layout.with_unit_dims(units)
    if layout.shape != tuple(shape):
        raise ValueError(f"it describes a {'x'.join(map(str, layout.shape)) or 'scalar'} fragment")
    return layout
