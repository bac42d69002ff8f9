"""The `tile` dialect, v1 (DESIGN.md section 3), defined through IRDL from Python.

LLVM 22.1.8 has no class-based Python dialects, so the dialect is a table of
`OpSpec` rows turned into an `irdl.dialect` module by `build_irdl_module` and
loaded into a context by `register_dialect`. IRDL checks operand/result kinds
and required attributes; everything else (shapes, memory spaces, placement) is
checked by the `tile-verify` pass.

The same IRDL module, printed, is checked in as `tile.irdl.mlir` so that stock
`mlir-opt-22 --irdl-file=...` can read tile IR (`tile-opt --export-irdl`
regenerates it; a lit test fails when the checked-in copy is stale).

Buffers are builtin memrefs; the memory space marks the level:

* no memory space: global memory,
* `#gpu.address_space<workgroup>`: shared memory (LDS),
* `#gpu.address_space<private>`: a fragment held in registers.

Each op has a snake_case builder following the upstream binding conventions
(keyword-only `loc=None, ip=None` last).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from mlir import ir
from mlir.dialects import gpu, irdl

from tilemlir.dialects.element_types import TILE_BUFFER_TYPES

DIALECT_NAME = "tile"
IRDL_FILE = Path(__file__).with_name("tile.irdl.mlir")

# Element types a tile buffer may hold (DESIGN.md section 3), as printed by MLIR.
ELEMENT_TYPES: tuple[str, ...] = TILE_BUFFER_TYPES

# tile.reduce's kinds. On floats `max`/`min` are IEEE 754-2008 maxNum/minNum
# (a NaN operand loses to a number; NaN only when both are NaN: arith.maxnumf,
# C's fmaxf), the default of TileLang's T.reduce_max (CUDA/HIP fmaxf) and of
# Triton's tl.max (propagate_nan=NONE); `maximum`/`minimum` propagate NaN
# (arith.maximumf/minimumf, Triton's propagate_nan=ALL), which costs a
# compare and select per step on AMD. On integers all four compare signed.
# `absmax`/`abssum` reduce the elements' magnitudes (TileLang's
# T.reduce_absmax / T.reduce_abssum): max / sum of |x|; with clear = false the
# destination's value is combined as it is.
REDUCE_KINDS: tuple[str, ...] = ("sum", "max", "min", "maximum", "minimum", "absmax", "abssum")
# The kind each magnitude reduction combines |x| with.
MAGNITUDE_KINDS: dict[str, str] = {"absmax": "max", "abssum": "sum"}

# The discardable `tile.*` attributes (tile.num_stages, tile.target, ...) are
# defined in tilemlir/dialects/attributes.py.


# --------------------------------------------------------------------------
# The dialect as data.
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Constraint:
    """An IRDL constraint: `base` names a builtin type/attribute kind, `one_of`
    lists exact attribute/type spellings (any of them), `anything` accepts all."""

    base: str | None = None
    one_of: tuple[str, ...] = ()
    anything: bool = False


MEMREF = Constraint(base="!builtin.memref")
INDEX = Constraint(one_of=("index",))
ANY = Constraint(anything=True)
BOOL_ATTR = Constraint(one_of=("true", "false"))
TYPE_ATTR = Constraint(base="#builtin.type")
INT_ATTR = Constraint(base="#builtin.integer")
DENSE_ARRAY_ATTR = Constraint(base="#builtin.dense_array")


@dataclass(frozen=True)
class Value:
    name: str
    constraint: Constraint
    variadic: bool = False


@dataclass(frozen=True)
class OpSpec:
    """One op of the dialect: its IRDL signature and its one-line meaning."""

    name: str
    summary: str
    operands: tuple[Value, ...] = ()
    results: tuple[Value, ...] = ()
    attributes: tuple[tuple[str, Constraint], ...] = ()
    regions: tuple[str, ...] = ()


OPS: tuple[OpSpec, ...] = (
    OpSpec(
        "kernel",
        "one launch; block indices are the body's arguments; ends in gpu.yield",
        attributes=(("grid", DENSE_ARRAY_ATTR), ("threads", INT_ATTR)),
        regions=("body",),
    ),
    OpSpec(
        "alloc_shared",
        "a buffer in shared memory (LDS), one per block",
        results=(Value("result", MEMREF),),
    ),
    OpSpec(
        "alloc_fragment",
        "a tile held in registers, distributed over the block's threads",
        results=(Value("result", MEMREF),),
    ),
    OpSpec(
        "fill",
        "every element of the buffer becomes the scalar value",
        operands=(Value("buffer", MEMREF), Value("value", ANY)),
    ),
    OpSpec(
        "copy",
        "copies the window of the un-indexed side's shape, converting the element type",
        operands=(
            Value("src", MEMREF),
            Value("dst", MEMREF),
            Value("src_indices", INDEX, variadic=True),
            Value("dst_indices", INDEX, variadic=True),
        ),
    ),
    OpSpec(
        "gemm",
        "C += op(A) * op(B), products and sums in accum_dtype",
        operands=(Value("a", MEMREF), Value("b", MEMREF), Value("c", MEMREF)),
        attributes=(
            ("accum_dtype", TYPE_ATTR),
            ("transpose_a", BOOL_ATTR),
            ("transpose_b", BOOL_ATTR),
        ),
    ),
    OpSpec(
        "reduce",
        "reduces src along dim into dst (sum; max/min ignore NaN, maximum/minimum propagate it); "
        "clear=false folds dst in",
        operands=(Value("src", MEMREF), Value("dst", MEMREF)),
        attributes=(
            ("kind", Constraint(one_of=tuple(f'"{k}"' for k in REDUCE_KINDS))),
            ("dim", INT_ATTR),
            ("clear", BOOL_ATTR),
        ),
    ),
)

OP_NAMES: tuple[str, ...] = tuple(f"{DIALECT_NAME}.{spec.name}" for spec in OPS)


# --------------------------------------------------------------------------
# IRDL construction.
# --------------------------------------------------------------------------

def _emit_constraint(c: Constraint, *, is_type: bool) -> ir.Value:
    if c.anything:
        return irdl.any()
    if c.base is not None:
        return irdl.base(base_name=c.base)
    parse = ir.Type.parse if is_type else ir.Attribute.parse
    choices = []
    for spelling in c.one_of:
        parsed = parse(spelling)
        choices.append(irdl.is_(ir.TypeAttr.get(parsed) if is_type else parsed))
    return choices[0] if len(choices) == 1 else irdl.any_of(choices)


def _variadicity(values: Sequence[Value]) -> ir.Attribute:
    kinds = ", ".join("variadic" if v.variadic else "single" for v in values)
    return ir.Attribute.parse(f"#irdl<variadicity_array[{kinds}]>")


def build_irdl_module(context: ir.Context | None = None) -> ir.Module:
    """Builds the `irdl.dialect @tile` module from the `OPS` table."""
    context = context or ir.Context.current
    with context, ir.Location.name("tile.irdl"):
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            dialect = irdl.dialect(DIALECT_NAME)
        with ir.InsertionPoint(dialect.body):
            for spec in OPS:
                op = irdl.operation_(spec.name)
                with ir.InsertionPoint(op.body):
                    _emit_op_body(spec)
    return module


def _emit_op_body(spec: OpSpec) -> None:
    # One constraint value per operand: IRDL unifies uses of the same value, so
    # sharing one `irdl.base` between A and B would force them to one type.
    def names(values: Sequence[Value]) -> ir.ArrayAttr:
        return ir.ArrayAttr.get([ir.StringAttr.get(v.name) for v in values])

    if spec.operands:
        args = [_emit_constraint(v.constraint, is_type=True) for v in spec.operands]
        irdl.operands_(args, names(spec.operands), _variadicity(spec.operands))
    if spec.results:
        args = [_emit_constraint(v.constraint, is_type=True) for v in spec.results]
        irdl.results_(args, names(spec.results), _variadicity(spec.results))
    if spec.attributes:
        args = [_emit_constraint(c, is_type=False) for _, c in spec.attributes]
        irdl.attributes_(args, ir.ArrayAttr.get([ir.StringAttr.get(n) for n, _ in spec.attributes]))
    if spec.regions:
        regions = [irdl.region([]) for _ in spec.regions]
        # An empty entry-argument list with no `constrainedArguments` leaves the
        # arity free; tile-verify checks it against the grid rank.
        irdl.regions_(regions, ir.ArrayAttr.get([ir.StringAttr.get(n) for n in spec.regions]))


IRDL_HEADER = (
    "// The tile dialect (tilemlir), as IRDL. Generated by `tile-opt --export-irdl`;\n"
    "// do not edit. Lets stock tools read tile IR: mlir-opt-22 --irdl-file=<this file>.\n"
)


def irdl_text(context: ir.Context | None = None) -> str:
    """The printed IRDL module, as checked in at `tile.irdl.mlir`."""
    module = build_irdl_module(context or ir.Context())
    return IRDL_HEADER + str(module)


def register_dialect(context: ir.Context) -> None:
    """Loads the tile dialect into `context` (idempotent)."""
    if context.is_registered_operation(OP_NAMES[0]):
        return
    module = build_irdl_module(context)
    irdl.load_dialects(module)


def make_context() -> ir.Context:
    """A context with every upstream dialect and the tile dialect loaded.

    MLIR's multithreading is off: nested pass pipelines (e.g. func.func(...))
    would otherwise run on worker threads and call back into Python (our passes,
    our diagnostic handler) without the GIL, which aborts the process. Callers
    embedding the tile passes in their own context should do the same."""
    context = ir.Context()
    context.enable_multithreading(False)
    register_dialect(context)
    return context


# --------------------------------------------------------------------------
# Builders.
# --------------------------------------------------------------------------

def _bool(value: bool) -> ir.BoolAttr:
    return ir.BoolAttr.get(bool(value))


def _create(name: str, *, operands=(), results=(), attributes=None, regions=0, loc=None, ip=None):
    return ir.Operation.create(
        f"{DIALECT_NAME}.{name}",
        results=list(results),
        operands=list(operands),
        attributes=attributes or {},
        regions=regions,
        loc=loc,
        ip=ip,
    )


def kernel(grid: Sequence[int], threads: int, *, loc=None, ip=None) -> ir.Operation:
    """Creates `tile.kernel` with a body block of len(grid) index arguments,
    already terminated by `gpu.yield`. Insert into it with `kernel_body`."""
    op = _create(
        "kernel",
        attributes={
            "grid": ir.DenseI64ArrayAttr.get(list(grid)),
            "threads": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), threads),
        },
        regions=1,
        loc=loc,
        ip=ip,
    )
    index = ir.IndexType.get()
    block = op.regions[0].blocks.append(*([index] * len(grid)))
    with ir.InsertionPoint(block):
        gpu.YieldOp([], loc=loc)
    return op


@contextlib.contextmanager
def kernel_body(op: ir.Operation) -> Iterator[tuple[ir.Value, ...]]:
    """`with kernel_body(k) as (bx, by): ...` inserts before the body's gpu.yield."""
    block = op.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_terminator(block):
        yield tuple(block.arguments)


def alloc_shared(memref_type: ir.Type, *, loc=None, ip=None) -> ir.Value:
    return _create("alloc_shared", results=[memref_type], loc=loc, ip=ip).result


def alloc_fragment(memref_type: ir.Type, *, loc=None, ip=None) -> ir.Value:
    return _create("alloc_fragment", results=[memref_type], loc=loc, ip=ip).result


def fill(buffer: ir.Value, value: ir.Value, *, loc=None, ip=None) -> ir.Operation:
    return _create("fill", operands=[buffer, value], loc=loc, ip=ip)


def copy(
    src: ir.Value,
    dst: ir.Value,
    src_indices: Sequence[ir.Value] = (),
    dst_indices: Sequence[ir.Value] = (),
    *,
    loc=None,
    ip=None,
) -> ir.Operation:
    segments = ir.DenseI32ArrayAttr.get([1, 1, len(src_indices), len(dst_indices)])
    return _create(
        "copy",
        operands=[src, dst, *src_indices, *dst_indices],
        attributes={"operandSegmentSizes": segments},
        loc=loc,
        ip=ip,
    )


def gemm(
    a: ir.Value,
    b: ir.Value,
    c: ir.Value,
    *,
    accum_dtype: ir.Type,
    transpose_a: bool = False,
    transpose_b: bool = False,
    loc=None,
    ip=None,
) -> ir.Operation:
    return _create(
        "gemm",
        operands=[a, b, c],
        attributes={
            "accum_dtype": ir.TypeAttr.get(accum_dtype),
            "transpose_a": _bool(transpose_a),
            "transpose_b": _bool(transpose_b),
        },
        loc=loc,
        ip=ip,
    )


def reduce(
    src: ir.Value,
    dst: ir.Value,
    *,
    kind: str,
    dim: int,
    clear: bool = True,
    loc=None,
    ip=None,
) -> ir.Operation:
    if kind not in REDUCE_KINDS:
        raise ValueError(f"reduce kind must be one of {', '.join(REDUCE_KINDS)}, got {kind!r}")
    return _create(
        "reduce",
        operands=[src, dst],
        attributes={
            "kind": ir.StringAttr.get(kind),
            "dim": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim),
            "clear": _bool(clear),
        },
        loc=loc,
        ip=ip,
    )


# Memory-space helpers shared by the verifier and later passes.

GLOBAL, SHARED, FRAGMENT = "global", "shared", "fragment"


def memory_level(memref_type: ir.Type) -> str | None:
    """'global', 'shared' or 'fragment' for a memref type; None for any other space."""
    space = ir.MemRefType(memref_type).memory_space
    if space is None:
        return GLOBAL
    text = str(space)
    if text == "#gpu.address_space<workgroup>":
        return SHARED
    if text == "#gpu.address_space<private>":
        return FRAGMENT
    return None


def shared_memref_type(shape: Sequence[int], element: ir.Type) -> ir.MemRefType:
    space = ir.Attribute.parse("#gpu.address_space<workgroup>")
    return ir.MemRefType.get(list(shape), element, memory_space=space)


def fragment_memref_type(shape: Sequence[int], element: ir.Type) -> ir.MemRefType:
    space = ir.Attribute.parse("#gpu.address_space<private>")
    return ir.MemRefType.get(list(shape), element, memory_space=space)
