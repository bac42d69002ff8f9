"""tile-verify: the semantic checks IRDL cannot express.

IRDL (LLVM 22.1.8) checks that operands are memrefs/indices and that required
attributes exist with the right kind. This pass checks everything else, each
with a located diagnostic:

* element types: every tile buffer holds one of DESIGN.md section 3's types;
* placement: `alloc_*`, `copy` and `reduce` only inside a `tile.kernel`;
  kernels not nested; `tile.num_stages` only on `scf.for`, an integer >= 1;
* `tile.kernel`: grid of 1 to 3 positive extents, positive `threads`, one
  block whose arguments are one `index` per grid dimension, ending in `gpu.yield`;
* memory spaces: inside a kernel, gemm A/B are shared or fragment and C is a
  fragment; `alloc_shared` makes workgroup memrefs, `alloc_fragment` private
  ones, both of static shape; outside a kernel (the whole-problem form) every
  operand is global;
* `tile.copy`: at most one side indexed, one index per dimension of that side,
  equal ranks, and equal shapes when neither side is indexed;
* `tile.gemm`: rank-2 operands whose M, N, K agree under the transposes;
  `accum_dtype` wide enough (f32 or f64 for float inputs, f64 for f64 inputs,
  i32 for i8) unless `allow-narrow-accumulator`; A and B both float or both
  integer; inside a kernel `accum_dtype` is C's element type;
* `tile.fill`: the value's type is the buffer's element type;
* `tile.reduce`: `dim` within the source rank, destination shape = source
  shape without `dim`, equal element types.

Input invariant: any module (tile IR at any stage before tile-lower-to-gpu).
Output invariant: the IR is unchanged; the pass fails if any check fails.

Options:
  allow-narrow-accumulator (bool, default false): accept accumulators
  narrower than the rule above (e.g. f16 accumulation of f16 inputs).

Example (fails):

    // expected-error@below {{K of A (32) and K of B (64) differ}}
    "tile.gemm"(%a, %b, %c) {accum_dtype = f32, transpose_a = false, transpose_b = false}
        : (memref<128x32xf16, #shared>, memref<64x128xf16, #shared>, memref<128x128xf32, #frag>) -> ()
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.dialects import tile
from tilemlir.irutil import enclosing, walk
from tilemlir.passes.base import PassState, TilePass

FLOAT_WIDTH = {"f64": 64, "f32": 32, "f16": 16, "bf16": 16,
               "f8E4M3FN": 8, "f8E5M2": 8, "f8E4M3FNUZ": 8, "f8E5M2FNUZ": 8}
INT_WIDTH = {"i8": 8, "i32": 32}


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
            check = _CHECKS.get(op.name)
            if check is not None:
                check(self, op, state)
            if tile.NUM_STAGES_ATTR in op.attributes:
                self._check_num_stages(op, state)

    # -- helpers -----------------------------------------------------------

    @staticmethod
    def _kernel_of(op: ir.Operation) -> ir.Operation | None:
        return enclosing(op, "tile.kernel")

    def _memref(self, op, value: ir.Value, role: str, state: PassState) -> ir.MemRefType | None:
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
        return memref

    def _require_kernel(self, op, state: PassState) -> ir.Operation | None:
        kernel = self._kernel_of(op)
        if kernel is None:
            state.error(op, f"{op.name} is only valid inside a tile.kernel")
        return kernel

    # -- per-op checks -----------------------------------------------------

    def _check_kernel(self, op: ir.Operation, state: PassState) -> None:
        if self._kernel_of(op) is not None:
            state.error(op, "tile.kernel cannot be nested inside another tile.kernel")
            return
        try:
            grid = list(ir.DenseI64ArrayAttr(op.attributes["grid"]))
        except (ValueError, TypeError):
            state.error(op, f"tile.kernel: grid must be array<i64: ...>, got {op.attributes['grid']}")
            return
        if not 1 <= len(grid) <= 3:
            state.error(op, f"tile.kernel: grid must have 1 to 3 dimensions, got {len(grid)}")
            return
        if any(extent <= 0 for extent in grid):
            state.error(op, f"tile.kernel: grid extents must be positive, got {grid}")
        threads_attr = op.attributes["threads"]
        threads = ir.IntegerAttr(threads_attr).value
        if threads <= 0:
            state.error(op, f"tile.kernel: threads must be positive, got {threads}")
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
            state.error(op, "tile.kernel: the body must end with gpu.yield")

    def _check_alloc(self, op: ir.Operation, state: PassState) -> None:
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

    def _check_fill(self, op: ir.Operation, state: PassState) -> None:
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
        if src.rank != dst.rank:
            state.error(op, f"tile.copy: source rank {src.rank} and destination rank {dst.rank} differ")
            return
        if n_src and n_src != src.rank:
            state.error(op, f"tile.copy: the source has rank {src.rank} but {n_src} indices were given")
        if n_dst and n_dst != dst.rank:
            state.error(op, f"tile.copy: the destination has rank {dst.rank} but {n_dst} indices "
                            "were given")
        if not n_src and not n_dst and src.shape != dst.shape:
            state.error(op, f"tile.copy: shapes {shape_str(src)} and {shape_str(dst)} differ and "
                            "neither side is indexed")
        window = dst if n_src else src
        if not window.has_static_shape:
            state.error(op, f"tile.copy: the window side needs a static shape, got {shape_str(window)}")

    def _check_gemm(self, op: ir.Operation, state: PassState) -> None:
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
        self._check_accumulator(op, a, b, c, in_kernel, state)

    def _check_accumulator(self, op, a, b, c, in_kernel: bool, state: PassState) -> None:
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

    def _check_num_stages(self, op: ir.Operation, state: PassState) -> None:
        if op.name != "scf.for":
            state.error(op, f"{tile.NUM_STAGES_ATTR} is only valid on scf.for, not on {op.name}")
            return
        attr = op.attributes[tile.NUM_STAGES_ATTR]
        if not isinstance(attr, ir.IntegerAttr):
            state.error(op, f"{tile.NUM_STAGES_ATTR} must be an integer, got {attr}")
            return
        stages = ir.IntegerAttr(attr).value
        if stages < 1:
            state.error(op, f"{tile.NUM_STAGES_ATTR} must be at least 1, got {stages}")


_CHECKS = {
    "tile.kernel": TileVerify._check_kernel,
    "tile.alloc_shared": TileVerify._check_alloc,
    "tile.alloc_fragment": TileVerify._check_alloc,
    "tile.fill": TileVerify._check_fill,
    "tile.copy": TileVerify._check_copy,
    "tile.gemm": TileVerify._check_gemm,
    "tile.reduce": TileVerify._check_reduce,
}
