"""tile-verify: the semantic checks IRDL cannot express.

IRDL (LLVM 22.1.8) checks that operands are memrefs/indices and that required
attributes exist with the right kind. This pass checks everything else, each
with a located diagnostic: element types, memory spaces and layouts of every
tile buffer; the `tile.*` attributes the passes record (the table in
tilemlir/dialects/attributes.py) on their ops and in their documented forms;
and per op its placement (inside a `tile.kernel` or not), shapes, ranks,
indices and accumulator types.

Each rule is written once, as a `- ` item in the docstring of the check that
applies it: `RULES` (below) names an op's checks, `EVERY_OP_RULES` those of
every op. docs/dialect.md prints them per op (`python -m
tilemlir.tools.dialect_doc > docs/dialect.md`; a test fails when it is stale).

Input invariant: any module (tile IR at any stage before tile-lower-to-gpu).
Output invariant: the IR is unchanged; the pass fails if any check fails.

Options:
  allow-narrow-accumulator (bool, default false): accept accumulators
  narrower than `_check_accumulator`'s rule (e.g. f16 accumulation of f16
  inputs).

Example (fails):

    // expected-error@below {{K of A (32) and K of B (64) differ}}
    "tile.gemm"(%a, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false}
        : (memref<128x32xf16, #shared>, memref<64x128xf16, #shared>, memref<128x128xf32, #frag>) -> ()
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.dialects import attributes, tile
from tilemlir.dialects.element_types import FLOAT_TYPES, bit_width_of
from tilemlir.irutil import constant_int, enclosing, walk
from tilemlir.passes.base import PassState, TilePass
from tilemlir.passes.kernel_facts import element_span

# Bit widths of the float and integer buffer element types.
FLOAT_WIDTH = {name: bit_width_of(name) for name in tile.ELEMENT_TYPES if name in FLOAT_TYPES}
INT_WIDTH = {name: bit_width_of(name) for name in tile.ELEMENT_TYPES if name not in FLOAT_TYPES}


def shape_str(memref: ir.MemRefType) -> str:
    dims = ["?" if d == ir.ShapedType.get_dynamic_size() else str(d) for d in memref.shape]
    return "x".join(dims) if dims else "scalar"


@dataclass(frozen=True)
class TileVerify(TilePass):
    name: ClassVar[str] = "tile-verify"
    summary: ClassVar[str] = "Check tile IR semantics that IRDL cannot express"

    allow_narrow_accumulator: bool = False

    def run(self, module: ir.Operation, state: PassState) -> None:
        for op in walk(module):
            # Attributes first: the op checks below (and every later pass) read them.
            if not self._check_attributes(op, state):
                continue
            check = _CHECKS.get(op.name)
            if check is not None:
                check(self, op, state)

    def _check_attributes(self, op: ir.Operation, state: PassState) -> bool:
        """Attributes, checked before anything reads them. False after a diagnostic.

        - every attribute of a tile op can be read through the Python bindings
          (a `grid` of `array<f16>` cannot, and no pass could read it);
        - each `tile.*` attribute of the table in tilemlir/dialects/attributes.py
          sits on one of the ops it belongs on and has its documented form.
        """
        ok = True
        is_tile_op = op.name.startswith("tile.")
        for name in list(op.attributes):
            if not (is_tile_op or name.startswith("tile.")):
                continue
            try:
                attr = op.attributes[name]
            except (TypeError, ValueError):
                # e.g. array<f16>: the Python bindings cannot represent it, and no pass could read it.
                wanted = "array<i64: ...>" if name == "grid" else "an attribute the tile passes can read"
                state.error(op, f"{op.name}: {name} must be {wanted}, got {_describe(op, name)}")
                ok = False
                continue
            rule = attributes.BY_NAME.get(name)
            if rule is None:
                continue
            if op.name not in rule.on:
                state.error(op, f"{name} belongs on {' or '.join(rule.on)}, not on {op.name}")
                ok = False
                continue
            problem = rule.check(attr)
            if problem is not None:
                state.error(op, f"{op.name}: {name} must be {rule.form}; {problem}")
                ok = False
        return ok

    # -- helpers -----------------------------------------------------------

    @staticmethod
    def _kernel_of(op: ir.Operation) -> ir.Operation | None:
        return enclosing(op, "tile.kernel")

    def _memref(self, op, value: ir.Value, role: str, state: PassState) -> ir.MemRefType | None:
        """A tile buffer's type, or None after a diagnostic.

        - every buffer operand and result holds one of the tile element types;
        - a buffer's memory space is none (global memory),
          `#gpu.address_space<workgroup>` (shared) or `#gpu.address_space<private>`
          (fragment);
        - a buffer's layout is the identity or `strided<[...]>` with stride 1 in
          the last dimension.
        """
        memref = ir.MemRefType(value.type)
        element = str(memref.element_type)
        if element not in tile.ELEMENT_TYPES:
            state.error(
                op,
                f"{op.name}: {role} has element type {element}, which tile buffers cannot hold "
                f"(supported: {', '.join(tile.ELEMENT_TYPES)})",
            )
            return None
        if tile.memory_level(memref) is None:
            state.error(op, f"{op.name}: {role} is in memory space {memref.memory_space}; "
                            "tile buffers are global, #gpu.address_space<workgroup> or "
                            "#gpu.address_space<private>")
            return None
        layout_problem = _layout_problem(memref)
        if layout_problem is not None:
            state.error(op, f"{op.name}: {role} has layout {memref.layout}: {layout_problem}")
            return None
        return memref

    def _require_kernel(self, op, state: PassState) -> ir.Operation | None:
        kernel = self._kernel_of(op)
        if kernel is None:
            state.error(op, f"{op.name} is only valid inside a tile.kernel")
        return kernel

    # -- per-op checks -----------------------------------------------------

    def _check_per_thread(self, op: ir.Operation, state: PassState) -> None:
        """scf.parallel marked `attributes.PER_THREAD` (per-thread code):

        - inside a `tile.kernel` and no other scf.parallel, with no
          scf.parallel inside it;
        - from 0 to constant extents, step 1, whose product is the kernel's
          threads (one iteration per thread), and no reductions;
        - no tile op inside: tile ops run on the block together.
        """
        if not attributes.PER_THREAD.is_on(op):
            return
        kernel = self._kernel_of(op)
        rank = len(op.regions[0].blocks[0].arguments)
        operands = list(op.operands)
        if kernel is None or enclosing(op, "scf.parallel") is not None:
            state.error(op, f"{attributes.PER_THREAD.name}: per-thread code sits in a tile.kernel, outside any scf.parallel")
            return
        if len(operands) != 3 * rank or op.results:
            state.error(op, f"{attributes.PER_THREAD.name}: per-thread code has no reductions")
            return
        constants = [constant_int(v) for v in operands]
        lowers, extents, steps = constants[:rank], constants[rank:2 * rank], constants[2 * rank:]
        threads = ir.IntegerAttr(kernel.attributes["threads"]).value
        product = 1
        for extent in extents:
            product *= extent if extent is not None else 0
        if any(v != 0 for v in lowers) or any(v != 1 for v in steps) or product != threads:
            state.error(op, f"{attributes.PER_THREAD.name}: the loop runs once per thread: from 0 to constant extents, step "
                            f"1, whose product is the kernel's {threads} threads")
        for inner in walk(op):
            if inner != op and (inner.name.startswith("tile.") or inner.name == "scf.parallel"):
                state.error(inner, f"{attributes.PER_THREAD.name}: {inner.name} in per-thread code; tile ops and T.Parallel "
                                   "run on the block together, outside it")
                return

    def _check_kernel(self, op: ir.Operation, state: PassState) -> None:
        """tile.kernel:

        - not nested inside another `tile.kernel`;
        - `grid` is `array<i64: ...>` of 1 to 3 extents, each from 1 to 2^31-1
          (a target's own limits: tile-tiling, tile-lower-to-gpu);
        - `threads` is an integer (wider than i1, or index) from 1 to 2^31-1;
        - the body is one block whose arguments are one `index` per grid
          dimension (the block's indices), and it ends in `gpu.yield`.
        """
        if self._kernel_of(op) is not None:
            state.error(op, "tile.kernel cannot be nested inside another tile.kernel")
            return
        grid_attr = op.attributes["grid"]
        if not isinstance(grid_attr, ir.DenseI64ArrayAttr):
            state.error(op, f"tile.kernel: grid must be array<i64: ...>, got {grid_attr}")
            return
        grid = list(grid_attr)
        if not 1 <= len(grid) <= 3:
            state.error(op, f"tile.kernel: grid must have 1 to 3 dimensions, got {len(grid)}")
            return
        if any(extent <= 0 for extent in grid):
            state.error(op, f"tile.kernel: grid extents must be positive, got {grid}")
        elif any(extent > MAX_GRID_EXTENT for extent in grid):
            state.error(op, f"tile.kernel: grid extents must be at most 2^31 - 1 = {MAX_GRID_EXTENT} "
                            f"(no supported GPU launches more blocks along one dimension), got {grid}")
        threads_attr = op.attributes["threads"]
        if not isinstance(threads_attr, ir.IntegerAttr) or not _is_integer_type(threads_attr.type):
            state.error(op, f"tile.kernel: threads must be an integer such as 256 : i64, got {threads_attr}")
            return
        threads = threads_attr.value
        if threads <= 0:
            state.error(op, f"tile.kernel: threads must be positive, got {threads}")
        elif threads > MAX_GRID_EXTENT:
            state.error(op, f"tile.kernel: threads must be at most 2^31 - 1, got {threads}")
        region = op.regions[0]
        blocks = list(region.blocks)
        if len(blocks) != 1:
            state.error(op, f"tile.kernel: the body must be exactly one block, got {len(blocks)}")
            return
        arguments = list(blocks[0].arguments)
        if len(arguments) != len(grid):
            state.error(
                op,
                f"tile.kernel: the body has {len(arguments)} block arguments but the grid has "
                f"{len(grid)} dimensions (one index argument per grid dimension)",
            )
        for i, argument in enumerate(arguments):
            if not isinstance(argument.type, ir.IndexType):
                state.error(op, f"tile.kernel: block argument #{i} must be index, got {argument.type}")
        operations = list(blocks[0].operations)
        if not operations or operations[-1].name != "gpu.yield":
            state.error(op, "tile.kernel: the body must end with gpu.yield (add `gpu.yield` as its "
                            "last operation)")

    def _check_alloc(self, op: ir.Operation, state: PassState) -> None:
        """tile.alloc_shared and tile.alloc_fragment:

        - only inside a `tile.kernel`;
        - `tile.alloc_shared` makes a memref in `#gpu.address_space<workgroup>`,
          `tile.alloc_fragment` one in `#gpu.address_space<private>`;
        - the shape is static and no extent is 0.
        """
        if self._require_kernel(op, state) is None:
            return
        memref = self._memref(op, op.results[0], "the result", state)
        if memref is None:
            return
        wanted = tile.SHARED if op.name == "tile.alloc_shared" else tile.FRAGMENT
        space = "#gpu.address_space<workgroup>" if wanted == tile.SHARED else "#gpu.address_space<private>"
        if tile.memory_level(memref) != wanted:
            state.error(op, f"{op.name} must produce a memref in {space}, got {memref}")
        if not memref.has_static_shape:
            state.error(op, f"{op.name} needs a static shape, got {shape_str(memref)}")
        elif 0 in memref.shape:
            state.error(op, f"{op.name}: the buffer {shape_str(memref)} has no elements; every "
                            "dimension of a tile buffer must be at least 1")

    def _check_fill(self, op: ir.Operation, state: PassState) -> None:
        """tile.fill:

        - the value's type is the buffer's element type;
        - inside a `tile.kernel` the buffer is shared or a fragment; outside
          one (the whole-problem form) it is global.
        """
        buffer = self._memref(op, op.operands[0], "the buffer", state)
        if buffer is None:
            return
        value_type = op.operands[1].type
        if value_type != buffer.element_type:
            state.error(op, f"tile.fill: the value is {value_type} but the buffer holds {buffer.element_type}")
        self._check_level(op, [("the buffer", buffer)], state, inside=(tile.SHARED, tile.FRAGMENT))

    def _check_level(self, op, operands, state: PassState, inside: tuple[str, ...]) -> None:
        in_kernel = self._kernel_of(op) is not None
        for role, memref in operands:
            level = tile.memory_level(memref)
            if in_kernel and level not in inside:
                state.error(op, f"{op.name}: inside a tile.kernel {role} must be "
                                f"{' or '.join(inside)}, got {level} memory")
            if not in_kernel and level != tile.GLOBAL:
                state.error(op, f"{op.name}: outside a tile.kernel {role} must be global memory, "
                                f"got {level} memory")

    def _kernel_source_destination(self, op, state: PassState):
        """(source, destination) memref types of an in-kernel two-buffer op, or
        None after a diagnostic."""
        if self._require_kernel(op, state) is None:
            return None
        src = self._memref(op, op.operands[0], "the source", state)
        dst = self._memref(op, op.operands[1], "the destination", state)
        return None if src is None or dst is None else (src, dst)

    def _check_copy(self, op: ir.Operation, state: PassState) -> None:
        """tile.copy:

        - only inside a `tile.kernel`;
        - at most one side is indexed, with one index per dimension of that side;
        - neither side indexed: equal ranks and shapes, and no `tile.window`;
        - one side indexed: the other side, the window, has a static shape and
          a rank q no higher than the indexed side's rank r. When q < r (a
          rank-reducing copy: batched GEMM's `A[b, rows, cols]`, or a fragment
          stored into a 3-D tensor) the window spans the indexed side's last q
          dims, or the q dims `tile.window` names, with extent 1 in every other
          dim.
        """
        buffers = self._kernel_source_destination(op, state)
        if buffers is None:
            return
        src, dst = buffers
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        n_src, n_dst = segments[2], segments[3]
        if n_src and n_dst:
            state.error(op, "tile.copy: only one side may be indexed (the window has the shape "
                            "of the un-indexed side)")
            return
        if attributes.ATOMIC_ADD.is_on(op):
            self._check_atomic_add(op, src, dst, state)
        window_dims = attributes.WINDOW.read(op)
        if not n_src and not n_dst:
            if src.rank != dst.rank:
                state.error(op, f"tile.copy: source rank {src.rank} and destination rank {dst.rank} "
                                "differ and neither side is indexed (the higher-rank side takes one "
                                "index per dimension)")
            elif src.shape != dst.shape:
                state.error(op, f"tile.copy: shapes {shape_str(src)} and {shape_str(dst)} differ and "
                                "neither side is indexed")
            if window_dims is not None:
                state.error(op, f"tile.copy: {attributes.WINDOW.name} places the window in the "
                                "indexed side, but neither side is indexed")
            return
        indexed, role, n_indices = (src, "source", n_src) if n_src else (dst, "destination", n_dst)
        window, window_role = (dst, "destination") if n_src else (src, "source")
        if n_indices != indexed.rank:
            state.error(op, f"tile.copy: the {role} has rank {indexed.rank} but {n_indices} indices "
                            "were given")
            return
        if indexed.rank < window.rank:
            state.error(op, f"tile.copy: the indexed {role} ({shape_str(indexed)}) has rank "
                            f"{indexed.rank}, lower than the {window_role}'s ({shape_str(window)}, "
                            f"rank {window.rank}); the window, the un-indexed side's shape, is cut "
                            "from the indexed side, so it cannot have more dimensions")
            return
        if window_dims is not None:
            self._check_window_dims(op, window_dims, indexed, role, window, window_role, state)
        if not window.has_static_shape:
            state.error(op, f"tile.copy: the window side needs a static shape, got {shape_str(window)}")

    def _check_atomic_add(self, op, src, dst, state: PassState) -> None:
        """A copy marked tile.atomic_add:

        - a copy marked `tile.atomic_add` adds a fragment or shared tile into
          global memory of the same element type (no conversion), one every
          backend adds atomically: f32 or i32.
        """
        name = attributes.ATOMIC_ADD.name
        levels = tile.memory_level(src), tile.memory_level(dst)
        if levels[0] not in (tile.FRAGMENT, tile.SHARED) or levels[1] != tile.GLOBAL:
            state.error(op, f"tile.copy: {name} adds a fragment or shared tile into global memory, "
                            f"not {levels[0]} into {levels[1]}")
        elif src.element_type != dst.element_type:
            state.error(op, f"tile.copy: {name} adds without converting, but the source holds "
                            f"{src.element_type} and the destination {dst.element_type}")
        elif str(dst.element_type) not in attributes.ATOMIC_ADD_TYPES:
            state.error(op, f"tile.copy: {name} of {dst.element_type} is not supported (only "
                            f"{' and '.join(attributes.ATOMIC_ADD_TYPES)}, which every backend adds atomically)")

    def _check_window_dims(self, op, dims, indexed, role, window, window_role, state: PassState) -> None:
        """A copy with tile.window:

        - `tile.window` names one dim of the indexed side per dim of the window
          side, in increasing order, each below the indexed side's rank.
        """
        name = attributes.WINDOW.name
        if len(dims) != window.rank:
            state.error(op, f"tile.copy: {name} names {len(dims)} dim(s) but the {window_role} "
                            f"({shape_str(window)}) has rank {window.rank}: one dim of the {role} "
                            f"per dim of the {window_role}")
        elif dims and dims[-1] >= indexed.rank:
            state.error(op, f"tile.copy: {name} dim {dims[-1]} is out of range for the rank-"
                            f"{indexed.rank} {role} ({shape_str(indexed)})")

    def _check_gemm(self, op: ir.Operation, state: PassState) -> None:
        """tile.gemm:

        - inside a `tile.kernel` A and B are shared or fragments and C is a
          fragment; outside one (the whole-problem form) all three are global;
        - A, B and C are rank 2, and M, N, K agree under the transposes (A is
          MxK, or KxM with `transpose_a`; B is KxN, or NxK with `transpose_b`;
          C is MxN); none of them is 0;
        - C does not alias A or B (the same value, or overlapping views of one
          buffer; distinct function arguments are assumed not to alias).
        """
        a = self._memref(op, op.operands[0], "A", state)
        b = self._memref(op, op.operands[1], "B", state)
        c = self._memref(op, op.operands[2], "C", state)
        if a is None or b is None or c is None:
            return
        in_kernel = self._kernel_of(op) is not None
        if in_kernel:
            self._check_level(op, [("A", a), ("B", b)], state, inside=(tile.SHARED, tile.FRAGMENT))
            self._check_level(op, [("C", c)], state, inside=(tile.FRAGMENT,))
        else:
            self._check_level(op, [("A", a), ("B", b), ("C", c)], state, inside=())
        for role, memref in (("A", a), ("B", b), ("C", c)):
            if memref.rank != 2:
                state.error(op, f"tile.gemm: {role} must be rank 2, got {shape_str(memref)}")
                return
        transpose_a = ir.BoolAttr(op.attributes["transpose_a"]).value
        transpose_b = ir.BoolAttr(op.attributes["transpose_b"]).value
        m, k_a = (a.shape[1], a.shape[0]) if transpose_a else (a.shape[0], a.shape[1])
        k_b, n = (b.shape[1], b.shape[0]) if transpose_b else (b.shape[0], b.shape[1])
        dynamic = ir.ShapedType.get_dynamic_size()

        def disagree(x: int, y: int) -> bool:
            return x != dynamic and y != dynamic and x != y

        layout = f"A is {shape_str(a)}{' (transposed)' if transpose_a else ''}, " \
                 f"B is {shape_str(b)}{' (transposed)' if transpose_b else ''}, C is {shape_str(c)}"
        if disagree(k_a, k_b):
            state.error(op, f"tile.gemm: K of A ({k_a}) and K of B ({k_b}) differ: {layout}")
        if disagree(m, c.shape[0]):
            state.error(op, f"tile.gemm: M of A ({m}) and rows of C ({c.shape[0]}) differ: {layout}")
        if disagree(n, c.shape[1]):
            state.error(op, f"tile.gemm: N of B ({n}) and columns of C ({c.shape[1]}) differ: {layout}")
        for dim, extent, meaning in (("M", m, "C has no rows"), ("N", n, "C has no columns"),
                                     ("K", k_a, ("nothing to accumulate, C would be left as it is; "
                                                 "remove the tile.gemm"))):
            if extent == 0:
                state.error(op, f"tile.gemm: {dim} is 0: {meaning} ({layout})")
        for role, operand in (("A", op.operands[0]), ("B", op.operands[1])):
            if may_overlap(operand, op.operands[2]):
                state.error(op, f"tile.gemm: C must not alias {role}: C is written while {role} is "
                                f"still read, so the result would be wrong; accumulate into a "
                                "separate buffer")
        self._check_accumulator(op, a, b, c, in_kernel, state)

    def _check_accumulator(self, op, a, b, c, in_kernel: bool, state: PassState) -> None:
        """tile.gemm's accumulator:

        - A and B are both floating-point or both integer;
        - inside a `tile.kernel`, `accum_dtype` is C's element type;
        - `accum_dtype` is wide enough: f32 or f64 for float inputs, f64 for
          f64 inputs, i32 for i8, unless
          `tile-verify{allow-narrow-accumulator=true}`.
        """
        accum = ir.TypeAttr(op.attributes["accum_dtype"]).value
        accum_name = str(accum)
        a_name, b_name = str(a.element_type), str(b.element_type)
        float_inputs = a_name in FLOAT_WIDTH and b_name in FLOAT_WIDTH
        int_inputs = a_name in INT_WIDTH and b_name in INT_WIDTH
        if not (float_inputs or int_inputs):
            state.error(op, f"tile.gemm: A ({a_name}) and B ({b_name}) must both be floating-point "
                            "or both integer")
            return
        if in_kernel and accum != c.element_type:
            state.error(op, f"tile.gemm: accum_dtype {accum_name} must equal the element type of "
                            f"the accumulator fragment C ({c.element_type})")
        if float_inputs:
            needed = "f64" if "f64" in (a_name, b_name) else "f32"
            wide = accum_name == "f64" or (accum_name == "f32" and needed == "f32")
            kind_ok = accum_name in FLOAT_WIDTH
        else:
            needed = "i32"
            wide = accum_name == "i32"
            kind_ok = accum_name in INT_WIDTH
        if not kind_ok:
            state.error(op, f"tile.gemm: accum_dtype {accum_name} cannot accumulate "
                            f"{a_name} x {b_name} products (use {needed})")
        elif not wide and not self.allow_narrow_accumulator:
            state.error(
                op,
                f"tile.gemm: accum_dtype {accum_name} is too narrow to accumulate {a_name} x "
                f"{b_name} products; use {needed} (or tile-verify{{allow-narrow-accumulator=true}} "
                "to accept the precision loss)",
            )

    def _check_reduce(self, op: ir.Operation, state: PassState) -> None:
        """tile.reduce:

        - only inside a `tile.kernel`, from and into shared or fragment buffers;
        - `dim` is within the source's rank; the destination's shape is the
          source's without `dim`, and the element types are equal;
        - `kind` is one of sum, max, min, maximum, minimum, absmax, abssum
          (IRDL checks the spelling). On floats `max`/`min` are IEEE 754-2008
          maxNum/minNum: a NaN operand loses to a number, the result is NaN
          only when every operand is (TileLang's and Triton's default;
          v_max_f32 on AMD); `maximum`/`minimum` propagate NaN (arith.maximumf,
          Triton's `propagate_nan=ALL`). Signed zeros are unordered in both. On
          integers all four compare signed. `absmax`/`abssum` are `max`/`sum`
          of the elements' magnitudes |x| (TileLang's `T.reduce_absmax` /
          `T.reduce_abssum`); with clear = false the destination's value is
          combined as it is, not made absolute. A float `sum`'s order of
          additions is not specified (a backend adds in a tree, within a
          thread and across lanes, and the results differ from a sequential
          sum by rounding only).
        """
        buffers = self._kernel_source_destination(op, state)
        if buffers is None:
            return
        src, dst = buffers
        self._check_level(op, [("the source", src), ("the destination", dst)], state,
                          inside=(tile.SHARED, tile.FRAGMENT))
        dim = ir.IntegerAttr(op.attributes["dim"]).value
        if not 0 <= dim < src.rank:
            state.error(op, f"tile.reduce: dim {dim} is out of range for a rank-{src.rank} source")
            return
        expected = list(src.shape[:dim]) + list(src.shape[dim + 1:])
        if list(dst.shape) != expected:
            want = "x".join(str(d) for d in expected) or "scalar"
            state.error(op, f"tile.reduce: reducing {shape_str(src)} along dim {dim} gives {want}, "
                            f"but the destination is {shape_str(dst)}")
        if src.element_type != dst.element_type:
            state.error(op, f"tile.reduce: source ({src.element_type}) and destination "
                            f"({dst.element_type}) element types differ")


MAX_GRID_EXTENT = 2 ** 31 - 1  # gridDim.x on NVIDIA (CUDA C++ Programming Guide); per-target limits: tile-lower-to-gpu


def _is_integer_type(t: ir.Type) -> bool:
    return isinstance(t, ir.IndexType) or (isinstance(t, ir.IntegerType) and t.width > 1)


def _describe(op: ir.Operation, name: str) -> str:
    """The printed form of an attribute the bindings cannot hand out."""
    text = str(op)
    start = text.find(f"{name} = ")
    if start < 0:
        return "unprintable"
    end = start + len(name) + 3
    depth = 0
    while end < len(text):
        ch = text[end]
        if ch in "<[{(":
            depth += 1
        elif ch in ">]})":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            break
        end += 1
    return text[start + len(name) + 3:end].strip()


def _layout_problem(memref: ir.MemRefType) -> str | None:
    """Why the lowerings cannot address this memref's layout, or None: they
    take identity or strided<[...]> layouts whose last dimension is contiguous."""
    layout = memref.layout
    if isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(memref.rank):
        return None
    if not isinstance(layout, ir.StridedLayoutAttr):
        return "tile buffers take an identity or strided<[...]> layout (write the affine map as strides)"
    if memref.rank and layout.strides[-1] != 1:
        return "the last dimension must have stride 1 (use transpose_a/transpose_b for a transposed operand)"
    return None


# Ops that give a view of their first operand's memory: offsets of the view's
# layout count from the same base (memref.view shifts the base: not comparable).
VIEW_OPS = ("memref.subview", "memref.cast", "memref.reinterpret_cast", "memref.transpose",
            "memref.expand_shape", "memref.collapse_shape", "memref.assume_alignment")
SHIFTING_VIEW_OPS = ("memref.view",)


def root_of(value: ir.Value) -> tuple[ir.Value, bool]:
    """The buffer `value` is a view of, and whether the view's layout offsets
    count from that buffer's base."""
    same_base = True
    while True:
        owner = value.owner
        if not isinstance(owner, ir.OpView | ir.Operation) or (
                owner.name not in VIEW_OPS and owner.name not in SHIFTING_VIEW_OPS):
            return value, same_base
        same_base = same_base and owner.name in VIEW_OPS
        value = owner.operation.operands[0]


# Ops whose result is memory of its own, apart from every other buffer.
FRESH_BUFFER_OPS = ("tile.alloc_shared", "tile.alloc_fragment", "memref.alloc", "memref.alloca")


def _root_kind(value: ir.Value) -> str:
    owner = value.owner
    return owner.name if isinstance(owner, ir.OpView | ir.Operation) else "argument"


def _distinct_roots(x: ir.Value, y: ir.Value) -> bool:
    """Whether two different roots are known to be different memory: two
    arguments (the caller's promise, as for C's restrict), a fresh allocation
    and any other known root, two globals of different names. Anything else
    (a select, a call, an argument and a global) may be the same memory."""
    kinds = (_root_kind(x), _root_kind(y))
    if kinds == ("argument", "argument"):
        return True
    if kinds == ("memref.get_global", "memref.get_global"):
        return x.owner.attributes["name"] != y.owner.attributes["name"]
    known = ("argument", "memref.get_global", *FRESH_BUFFER_OPS)
    return all(kind in known for kind in kinds) and any(kind in FRESH_BUFFER_OPS for kind in kinds)


def may_overlap(x: ir.Value, y: ir.Value) -> bool:
    """Whether two memref values can share an element: views (VIEW_OPS) of
    one buffer whose element sets meet, or of roots that may be the same
    memory (`_distinct_roots`)."""
    (root_x, same_base_x), (root_y, same_base_y) = root_of(x), root_of(y)
    if root_x != root_y:
        return not _distinct_roots(root_x, root_y)
    if x == y:
        return True
    spans = element_span(ir.MemRefType(x.type)), element_span(ir.MemRefType(y.type))
    if None in spans or not (same_base_x and same_base_y):
        return True
    (first_x, last_x), (first_y, last_y) = spans
    if last_x < first_y or last_y < first_x:
        return False
    boxes = _box(ir.MemRefType(x.type)), _box(ir.MemRefType(y.type))
    if None in boxes or boxes[0][0] != boxes[1][0]:
        return True  # the spans meet and the element sets cannot be compared exactly
    (_, box_x), (_, box_y) = boxes
    return all(a < d and c < b for (a, b), (c, d) in zip(box_x, box_y))


def _box(memref: ir.MemRefType) -> tuple[tuple[int, ...], list[tuple[int, int]]] | None:
    """(strides, [start, end) per dimension) of a static view whose strides
    are a row-major radix (each dimension's run fits in the next outer
    stride), so that elements have unique coordinates; None otherwise."""
    strides, offset = memref.get_strides_and_offset()
    if not strides or strides[-1] != 1:
        return None
    box, rest = [], offset
    for i, (extent, stride) in enumerate(zip(memref.shape, strides)):
        if stride <= 0:
            return None
        start, rest = rest // stride, rest % stride
        if i and start + extent > strides[i - 1] // stride:
            return None
        box.append((start, start + extent))
    return (tuple(strides), box) if rest == 0 else None


_CHECKS = {
    "scf.parallel": TileVerify._check_per_thread,
    "tile.kernel": TileVerify._check_kernel,
    "tile.alloc_shared": TileVerify._check_alloc,
    "tile.alloc_fragment": TileVerify._check_alloc,
    "tile.fill": TileVerify._check_fill,
    "tile.copy": TileVerify._check_copy,
    "tile.gemm": TileVerify._check_gemm,
    "tile.reduce": TileVerify._check_reduce,
}

# Where the rules are written: the `- ` lists in the docstrings of the checks
# that apply them, so a rule and its code change together. docs/dialect.md
# prints them per op (`python -m tilemlir.tools.dialect_doc`; a test fails
# when the checked-in copy is stale).
EVERY_OP_RULES = (TileVerify._check_attributes, TileVerify._memref)
RULES = {
    "tile.kernel": (TileVerify._check_kernel,),
    "tile.alloc_shared": (TileVerify._check_alloc,),
    "tile.alloc_fragment": (TileVerify._check_alloc,),
    "tile.fill": (TileVerify._check_fill,),
    "tile.copy": (TileVerify._check_copy, TileVerify._check_window_dims, TileVerify._check_atomic_add),
    "tile.gemm": (TileVerify._check_gemm, TileVerify._check_accumulator),
    "tile.reduce": (TileVerify._check_reduce,),
}
