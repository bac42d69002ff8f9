"""From a TileLang kernel's Python syntax tree to tile IR.

Like TileLang, the kernel body is not executed: `build_prim_func` reads the
function's source, walks its syntax tree and builds a `func.func` holding one
`tile.kernel` through the MLIR Python bindings. Every op carries the location
of the Python expression it comes from, so tile-verify, the compiler and the
engines report errors at the user's file and line.

What each construct becomes (DESIGN.md section 3 is the dialect):

| Python | tile IR |
|---|---|
| parameters annotated `T.Tensor(shape, dtype)`, tensors bound at a call, `T.empty` | `memref` arguments of the function (global memory) |
| scalar parameters annotated `T.float32` / `T.int32` | `f32` / `i32` arguments |
| `with T.Kernel(gx, gy, threads=n) as (bx, by)` | `tile.kernel {grid, threads}`; bx, by its block arguments |
| `T.alloc_shared`, `T.alloc_fragment` | `tile.alloc_shared`, `tile.alloc_fragment` |
| `T.alloc_var(dtype[, init])` | an SSA value: loop-carried through `scf.for`, a result of `scf.if` |
| `T.copy(src, dst)` with `A[i, j]` offsets or `A[a:b, :]` slices | `tile.copy` (+ `tile.window` for `Q[b, rows, h, :]`) |
| `T.gemm(A, B, C, transpose_A, transpose_B)` | `tile.gemm`, accumulating in C's type |
| `T.fill`, `T.clear`, `T.reduce_{sum,max,min}` | `tile.fill`, `tile.reduce` |
| `for .. in T.Pipelined(n, num_stages=s)` / `T.serial` / `range` | `scf.for` (`tile.num_stages = s` when s >= 1) |
| `for i, j in T.Parallel(m, n)` | `scf.parallel` with `memref.load/store`, `arith`, `math` |
| `if` on a runtime condition, `T.if_then_else` | `scf.if` (results where values flow out), `arith.select` |
| `if` / `for` over compile-time values, arithmetic on them | evaluated here, in Python |
| `T.float32(1.0)`, `T.float16(x)`, ... (every dtype) | a typed constant (a NumPy scalar, `DType.constant`); of a runtime value, `arith` casts |
| `1.0 * bx`: a Python float with an index or integer | f32, the index through `arith.index_cast` to i64 and `arith.sitofp` (TVM's rule) |
| per-thread code (a kernel that calls `T.get_thread_binding`) | its statements without tile ops in `scf.parallel {tile.per_thread}` regions over the threads; `T.alloc_local` arrays `memref.alloca`; shuffles and votes `gpu.shuffle` |
| `T.alloc_reducer` updates in a `T.Parallel` | a fragment of the loop's shape, `tile.reduce`d into the reducer after the loop |
| `assert` / `T.device_assert` on runtime values | `cf.assert` |

A construct outside this table is refused with the file and line of the
Python source (`TileLangError`), never a traceback.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import math
import operator
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from mlir import ir
from mlir.dialects import arith, cf, func, gpu, memref, scf
from mlir.dialects import math as mathd

from tilemlir.diagnostics import UserError
from tilemlir.dialects import attributes, tile
from tilemlir.irutil import parent_ops
from tilemlir.language import api
from tilemlir.language.api import TensorSpec, TileLangError
from tilemlir.language.dtypes import DType, is_dtype
from tilemlir.language.dtypes import dtype as to_dtype
from tilemlir.passes.gpu_builders import bit_width
from tilemlir.passes.lower_to_gpu.api import moved_by_words

GLOBAL, SHARED, FRAGMENT, LOCAL = "global", "shared", "fragment", "local"
BLOCK_NAMES = ("bx", "by", "bz")  # block indices a kernel without T.Kernel may use
DEFAULT_THREADS = 128  # TileLang's T.Kernel default


# --------------------------------------------------------------------------
# Values the builder handles
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Affine:
    """sum(coefficient * variable) + const over index variables (block indices,
    loop variables): enough to tell a slice's extent and the grid a block
    index spans."""

    terms: tuple[tuple[str, int], ...]
    const: int

    @staticmethod
    def of(terms: dict[str, int], const: int) -> Affine:
        return Affine(tuple(sorted((k, v) for k, v in terms.items() if v)), const)

    def combine(self, other: Affine, sign: int) -> Affine:
        terms = dict(self.terms)
        for name, coeff in other.terms:
            terms[name] = terms.get(name, 0) + sign * coeff
        return Affine.of(terms, self.const + sign * other.const)

    def scale(self, factor: int) -> Affine:
        return Affine.of({k: v * factor for k, v in self.terms}, self.const * factor)


class Scalar:
    """An SSA scalar (index, integer or float), with its affine form when known."""

    __slots__ = ("affine", "unsigned", "value")

    def __init__(self, value: ir.Value, affine: Affine | None = None, unsigned: bool = False):
        self.value = value
        self.affine = affine
        # A uint32 value: an i64 in [0, 2^32) that arithmetic keeps there
        # (Builder.unsigned_binary), as C's unsigned int wraps.
        self.unsigned = unsigned

    @property
    def type(self) -> ir.Type:
        return self.value.type


@dataclass
class Buffer:
    """A memref the kernel reads or writes: a tensor (global), shared tile or fragment."""

    value: ir.Value
    shape: tuple[int, ...]
    dtype: DType
    scope: str
    name: str
    param: int | None = None  # its position among the function's parameters (tensors)
    provisional: bool = False  # named after the variable it is first assigned to
    reducer: str | None = None  # T.alloc_reducer: its reduction ("sum", "max", "min")

    @property
    def data(self) -> Buffer:
        return self


@dataclass
class Region:
    """`A[i, j]` / `A[a:b, :]` as an operand of T.copy: per dim, a start and
    the slice's extent (None for a single index)."""

    buffer: Buffer
    starts: list
    extents: list


@dataclass
class Var:
    """`T.alloc_var`: a scalar variable, held as the SSA value last assigned."""

    name: str
    dtype: DType
    value: Scalar | None = None
    depth: int = 0  # T.Parallel nesting where it was declared
    provisional: bool = True

    def __setattr__(self, name: str, value) -> None:
        # A uint32 variable's values are unsigned wherever they come from (a
        # loop's carried value, a branch's result).
        if name == "value" and isinstance(value, Scalar) and self.dtype == "uint32" and not value.unsigned:
            value = Scalar(value.value, value.affine, unsigned=True)
        object.__setattr__(self, name, value)


@dataclass(frozen=True)
class Pending:
    """Direct style, compiled without arrays: a tensor parameter whose shape and
    dtype its annotation in the body gives (`A: T.Tensor[[M, K], dtype]`)."""

    name: str


@dataclass(frozen=True)
class Sym:
    """A name declared by `T.const` whose value comes from a tensor's shape."""

    name: str


@dataclass(frozen=True)
class ThreadIndex:
    """`T.get_thread_binding(dim)`: the thread's index along `dim` (x, y, z),
    a value only inside per-thread code (a `tile.per_thread` region)."""

    dim: int


@dataclass
class ThreadRegion:
    """An open per-thread region: its scf.parallel (one iteration per thread)
    and the thread indices, x first (None along a dim of one thread)."""

    op: ir.Operation
    indices: list


@dataclass
class _ParallelBody:
    """The T.Parallel being built: its loop, induction variables and extents,
    and the reducer updates its body made (T.alloc_reducer: by the reducer's
    id, the reducer, the fragment of the loop's shape each iteration's value
    went into, and the loop dims the reducer is indexed by)."""

    op: ir.Operation
    ivs: list
    extents: list[int]
    updates: dict = field(default_factory=dict)
    reads: dict = field(default_factory=dict)  # reducers read in the body: id -> the first read's node


@dataclass
class _Loop:
    """What `for` iterates over, from T.Parallel / T.Pipelined / T.serial / range."""

    kind: str  # "parallel" or "serial"
    bounds: list  # (lower, upper, step) per dim
    num_stages: int | None = None


_CMP_F = {ast.Lt: "olt", ast.LtE: "ole", ast.Gt: "ogt", ast.GtE: "oge", ast.Eq: "oeq", ast.NotEq: "une"}
_CMP_I = {ast.Lt: "slt", ast.LtE: "sle", ast.Gt: "sgt", ast.GtE: "sge", ast.Eq: "eq", ast.NotEq: "ne"}
_PY_BINOPS: dict[type, Callable] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift,
}
_PY_CMPS: dict[type, Callable] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
# T.<name> -> the math dialect op it builds, and its value on a Python number.
_UNARY_MATH = {"exp": "ExpOp", "exp2": "Exp2Op", "log": "LogOp", "log2": "Log2Op", "log10": "Log10Op",
               "log1p": "Log1pOp", "rsqrt": "RsqrtOp", "sqrt": "SqrtOp", "tanh": "TanhOp", "sin": "SinOp",
               "cos": "CosOp", "tan": "TanOp", "erf": "ErfOp", "floor": "FloorOp", "ceil": "CeilOp",
               "trunc": "TruncOp", "round": "RoundOp"}


def _round_half_away(x: float) -> float:
    """C's round (TileLang's T.round on CUDA: roundf): halves away from zero."""
    return math.copysign(math.floor(builtins.abs(x) + 0.5), x)


_PY_MATH = {"exp": math.exp, "exp2": lambda x: 2.0 ** x, "log": math.log, "log2": math.log2,
            "log10": math.log10, "log1p": math.log1p, "rsqrt": lambda x: 1.0 / math.sqrt(x),
            "sqrt": math.sqrt, "tanh": math.tanh, "sin": math.sin, "cos": math.cos, "tan": math.tan,
            "erf": math.erf, "floor": lambda x: float(math.floor(x)), "ceil": lambda x: float(math.ceil(x)),
            "trunc": lambda x: float(math.trunc(x)), "round": _round_half_away}
LOG2_10 = math.log2(10.0)


def _compile_time(value) -> bool:
    return not isinstance(value, (Scalar, Buffer, Region, Var, ThreadIndex))


# --------------------------------------------------------------------------
# Source
# --------------------------------------------------------------------------

@dataclass
class PythonSource:
    """A function's source: its syntax tree, file and where it starts."""

    tree: ast.FunctionDef
    filename: str
    first_line: int  # line of the source's first line in the file
    indent: int  # columns removed by dedenting
    text: str  # the whole file's text (for error snippets)

    @staticmethod
    def of(function: Callable) -> PythonSource:
        try:
            lines, first_line = inspect.getsourcelines(function)
            filename = inspect.getsourcefile(function) or "<unknown>"
        except (OSError, TypeError) as error:
            raise TileLangError(f"cannot read the source of {getattr(function, '__name__', function)!r} "
                                f"({error}); a kernel must be defined in a file") from None
        source = "".join(lines)
        dedented = textwrap.dedent(source)
        indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != source else 0
        tree = ast.parse(dedented)
        node = tree.body[0]
        if not isinstance(node, ast.FunctionDef):
            raise TileLangError(f"{filename}:{first_line}: error: a kernel is a `def` function")
        try:
            with open(filename, encoding="utf-8") as handle:
                text = handle.read()
        except OSError:
            text = source
        return PythonSource(node, filename, first_line, indent, text)

    def position(self, node: ast.AST) -> tuple[int, int]:
        line = getattr(node, "lineno", 1) + self.first_line - 1
        col = getattr(node, "col_offset", 0) + self.indent + 1
        return line, col

    def error(self, node: ast.AST, message: str) -> TileLangError:
        line, col = self.position(node)
        return TileLangError(f"{self.filename}:{line}:{col}: error: {message}")


# --------------------------------------------------------------------------
# The built function
# --------------------------------------------------------------------------

@dataclass
class Parameter:
    """One argument of the built function, in order."""

    name: str
    kind: str  # "tensor" or "scalar"
    shape: tuple[int, ...] = ()
    dtype: DType | None = None
    output: bool = False  # created by T.empty (direct style): the call allocates and returns it
    workspace: bool = False  # created by T.alloc_global: the call allocates it and drops it


@dataclass
class BuiltFunction:
    """A kernel's tile IR: the module, its function's name and parameters."""

    module: ir.Module
    name: str
    params: list[Parameter]
    source: PythonSource
    returns: list[int] = field(default_factory=list)  # direct style: indices of returned tensors
    notes: list[str] = field(default_factory=list)  # what the builder decided for the user
    gemm_types: set[str] = field(default_factory=set)  # element types of T.gemm's A and B (MLIR spelling)

    def text(self, *, locations: bool = False) -> str:
        return self.module.operation.get_asm(enable_debug_info=locations)


# --------------------------------------------------------------------------
# The builder
# --------------------------------------------------------------------------

class Builder:
    """Walks one function's syntax tree and builds its tile IR."""

    def __init__(self, source: PythonSource, namespace: dict, *, constants: dict | None = None,
                 arguments: dict | None = None):
        self.src = source
        self.namespace = namespace
        self.constants = dict(constants or {})  # T.const names already known (direct style)
        self.arguments = arguments or {}  # direct style: parameter name -> array or value
        self.scopes: list[dict] = [{}]
        self.params: list[Parameter] = []
        self.returns: list[int] = []
        self.notes: list[str] = []
        self.gemm_types: set[str] = set()
        self.kernel_op: ir.Operation | None = None
        self.in_kernel = False
        self.parallel_depth = 0
        self.thread_dims: list[int] = [DEFAULT_THREADS]  # the kernel's threads=, x first
        self.per_thread_code = False  # the kernel calls T.get_thread_binding: it has per-thread code
        self.thread_region: ThreadRegion | None = None
        self.parallel_body: _ParallelBody | None = None
        self.kernel_last: ast.stmt | None = None
        self.closed_thread_regions: list[ir.Operation] = []
        self.region_depth = 0
        self.grid_uses: dict[str, set[int]] = {}  # implicit kernel: block index -> grid extents seen
        self.keep_syms = False  # while reading a direct-style annotation, T.const names stay names
        self.macro_result = None  # inside a T.macro: _NO_RESULT, or what its `return` gave
        self.macro_depth = 0  # the loop and branch depth where the T.macro being built was called
        self.macro_stack: list = []  # the T.macros being built, outermost first
        self.context = tile.make_context()
        self.func_op = None
        self.entry_block = None

    # ---- locations and errors -------------------------------------------
    def loc(self, node: ast.AST) -> ir.Location:
        line, col = self.src.position(node)
        return ir.Location.file(self.src.filename, line, col)

    def error(self, node: ast.AST, message: str) -> TileLangError:
        return self.src.error(node, message)

    # ---- names ------------------------------------------------------------
    def lookup(self, name: str, node: ast.AST):
        for scope in reversed(self.scopes):
            if name in scope:
                value = scope[name][0]
                return self.resolve_sym(value, node)
        if name in self.namespace:
            return self.namespace[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.error(node, f"name '{name}' is not defined")

    def resolve_sym(self, value, node: ast.AST):
        if isinstance(value, Sym) and not self.keep_syms:
            if value.name not in self.constants:
                self.consts_from_later_annotations()
            if value.name not in self.constants:
                raise self.error(node, f"'{value.name}' (declared by T.const) is not known yet: annotate a "
                                       f"tensor whose shape gives it (`A: T.Tensor[[{value.name}, ...], dtype]`) "
                                       f"or pass it to compile()")
            return self.constants[value.name]
        return value

    def consts_from_later_annotations(self) -> None:
        """Direct style: a T.const name read before the annotation that binds it
        (`split = K // 4` above `A: T.Tensor[[M, K], dtype]`) takes its value from
        the tensor the call passed for that annotation; annotate_tensor checks it
        again when the annotation is reached."""
        for statement in _walk_statements(self.src.tree.body):
            if not (isinstance(statement, ast.AnnAssign) and statement.value is None
                    and isinstance(statement.target, ast.Name)):
                continue
            tensor = next((scope[statement.target.id][0] for scope in reversed(self.scopes)
                           if statement.target.id in scope), None)
            dims = _annotated_dims(statement.annotation)
            if not isinstance(tensor, Buffer) or tensor.scope != GLOBAL or dims is None \
                    or len(dims) != len(tensor.shape):
                continue
            for dim, extent in zip(dims, tensor.shape):
                symbol = next((scope[dim.id][0] for scope in reversed(self.scopes) if dim.id in scope), None) \
                    if isinstance(dim, ast.Name) else None
                if isinstance(symbol, Sym):
                    self.constants.setdefault(symbol.name, extent)

    def bind(self, name: str, value, node: ast.AST) -> None:
        if isinstance(value, (Buffer, Var)) and value.provisional:
            value.name, value.provisional = name, False
            if isinstance(value, Buffer) and value.param is not None:
                self.params[value.param].name = name
        for depth in range(len(self.scopes) - 1, -1, -1):
            if name in self.scopes[depth]:
                current = self.scopes[depth][name][0]
                if isinstance(current, Var) and not isinstance(value, Var):
                    self.assign_var(current, value, node)
                    return
                if depth < len(self.scopes) - 1 and not _compile_time(value) and self.region_depth:
                    raise self.error(node, f"'{name}' is assigned inside a loop or branch but defined outside "
                                           f"it; a value that changes this way is a T.alloc_var")
                break
        self.scopes[-1][name] = (value, len(self.scopes))

    # ---- entry points -----------------------------------------------------
    def build(self, *, direct: bool) -> BuiltFunction:
        fn = self.src.tree
        with self.context, self.loc(fn):
            module = ir.Module.create()
            with ir.InsertionPoint(module.body):
                self.func_op = func.FuncOp(fn.name, ir.FunctionType.get([], []))
            self.entry_block = self.func_op.add_entry_block()
            self.declare_parameters(fn, direct=direct)
            with ir.InsertionPoint(self.entry_block):
                body = [s for s in fn.body if not _is_docstring(s)]
                if not any(self.is_kernel_with(s) or self.opens_kernel_by_macro(s) for s in _walk_statements(body)):
                    self.implicit_kernel(body)
                else:
                    self.statements(body)
                if self.kernel_op is None:
                    raise self.error(fn, "this function has no kernel: write its body under "
                                         "`with T.Kernel(...) as (bx, by):`")
                func.ReturnOp([])
            self.func_op.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get([a.type for a in self.entry_block.arguments], []))
        return BuiltFunction(module, fn.name, self.params, self.src, self.returns, self.notes, self.gemm_types)

    def declare_parameters(self, fn: ast.FunctionDef, *, direct: bool) -> None:
        args = fn.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error(fn, "a kernel's parameters are plain positional ones (no *args, **kwargs, "
                                 "keyword-only or positional-only parameters)")
        for arg in args.args:
            if direct:
                self.declare_direct_parameter(arg)
                continue
            if arg.annotation is None:
                raise self.error(arg, f"parameter '{arg.arg}' needs an annotation: T.Tensor((M, K), dtype) "
                                      f"for a tensor, T.float32 / T.int32 for a scalar")
            annotation = self.eval(arg.annotation)
            self.declare_annotated(arg, arg.arg, annotation)

    def declare_annotated(self, node: ast.AST, name: str, annotation) -> None:
        if isinstance(annotation, TensorSpec):
            shape = self.static_shape(node, annotation.shape, f"the shape of '{name}'")
            self.bind(name, self.tensor_argument(node, name, shape, self.to_dtype(node, annotation.dtype)), node)
        elif is_dtype(annotation) and not isinstance(annotation, type):
            self.bind(name, self.scalar_argument(node, name, self.to_dtype(node, annotation)), node)
        else:
            raise self.error(node, f"parameter '{name}': expected T.Tensor(shape, dtype) or a scalar dtype, "
                                   f"got {annotation!r}")

    def declare_direct_parameter(self, arg: ast.arg) -> None:
        """Direct style: a parameter bound to an array is a tensor (its shape and
        dtype from the array, checked later against its annotation); one with no
        value is a tensor its annotation describes (compile() without arrays);
        any other value is a compile-time constant."""
        name = arg.arg
        if name not in self.arguments:
            self.bind(name, Pending(name), arg)
            return
        value = self.arguments[name]
        shape_dtype = _array_shape_dtype(value)
        if shape_dtype is None:
            self.bind(name, value, arg)
            return
        shape, dtype = shape_dtype
        self.bind(name, self.tensor_argument(arg, name, tuple(shape), self.to_dtype(arg, dtype)), arg)

    def tensor_argument(self, node, name: str, shape: tuple[int, ...], dtype: DType, *,
                        output: bool = False, workspace: bool = False) -> Buffer:
        if not dtype.tile_buffer:
            raise self.error(node, f"tensor '{name}': {dtype} is not an element type of tile buffers")
        element = ir.Type.parse(dtype.storage)
        value = self.entry_block.add_argument(ir.MemRefType.get(list(shape), element), self.loc(node))
        self.params.append(Parameter(name, "tensor", shape, dtype, output, workspace))
        return Buffer(value, shape, dtype, GLOBAL, name, param=len(self.params) - 1,
                      provisional=output or workspace)

    def scalar_argument(self, node, name: str, dtype: DType) -> Scalar:
        if dtype.mlir not in ("f32", "i32"):
            raise self.error(node, f"scalar parameter '{name}': {dtype} is not supported (float32 or int32)")
        value = self.entry_block.add_argument(ir.Type.parse(dtype.mlir), self.loc(node))
        self.params.append(Parameter(name, "scalar", (), dtype))
        return Scalar(value)

    def static_shape(self, node, shape, what: str) -> tuple[int, ...]:
        dims = []
        for extent in (shape if isinstance(shape, (tuple, list)) else (shape,)):
            extent = _plain_int(self.resolve_sym(extent, node))
            if isinstance(extent, Scalar) and extent.affine is not None and not extent.affine.terms:
                extent = extent.affine.const
            if not isinstance(extent, int) or isinstance(extent, bool) or extent <= 0:
                raise self.error(node, f"{what} must be positive compile-time integers, got {extent!r}")
            dims.append(extent)
        return tuple(dims)

    def to_dtype(self, node, value) -> DType:
        try:
            return to_dtype(value)
        except ValueError as error:
            raise self.error(node, str(error)) from None

    # ---- statements -------------------------------------------------------
    def statements(self, body: list[ast.stmt]) -> None:
        if not (self.per_thread_code and self.in_kernel and self.thread_region is None and not self.parallel_depth):
            for statement in body:
                self.statement(statement)
            return
        # A kernel with per-thread code: runs of per-thread statements go into
        # per-thread regions, block-level ones (tile ops) between them.
        with contextlib.ExitStack() as region:
            for statement in body:
                kind = self.statement_kind(statement)
                if kind == "block" and self.thread_region is not None:
                    region.close()
                    self.close_thread_region()
                elif kind == "thread" and self.thread_region is None:
                    region.enter_context(self.open_thread_region(statement))
                self.statement(statement)
            if self.thread_region is not None:
                region.close()
                self.close_thread_region()

    def statement_kind(self, node: ast.stmt) -> str:
        """In a kernel with per-thread code: "block" for a statement with tile
        ops (T.copy, T.gemm, T.Parallel, ...), which the block runs together;
        "neutral" for one that builds nothing per thread (a thread index
        named, a shared or fragment buffer allocated); "thread" for the rest,
        which each thread runs for itself."""
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call) and \
                _called_name(node.value.func) in _NEUTRAL_CALLS:
            return "neutral"
        if isinstance(node, ast.Pass) or _is_docstring(node):
            return "neutral"
        return "block" if self.has_block_ops(node, 0) else "thread"

    def has_block_ops(self, node: ast.AST, depth: int) -> bool:
        for call in ast.walk(node):
            if not isinstance(call, ast.Call):
                continue
            name = _called_name(call.func)
            if name in _BLOCK_CALLS:
                return True
            if name in ("fill", "clear") and call.args:
                target = call.args[0].value if isinstance(call.args[0], ast.Subscript) else call.args[0]
                try:
                    value = self.lookup(target.id, target) if isinstance(target, ast.Name) else None
                except TileLangError:
                    value = None
                if not isinstance(value, Var) and not (isinstance(value, Buffer) and value.scope == LOCAL):
                    return True
            if name in ("atomic_add", "atomic_max", "atomic_min") and len(call.args) > 1 and \
                    self.tile_operand(call.args[1]) is not None:
                return True
            callee = self.static_or_none(call.func)
            if isinstance(callee, api.Macro) and depth < MACRO_DEPTH:
                body = _macro_source(callee).tree.body
                if any(self.has_block_ops(statement, depth + 1) for statement in body):
                    return True
        return False

    @contextlib.contextmanager
    def open_thread_region(self, node: ast.stmt):
        """A `tile.per_thread` scf.parallel, one iteration per thread (its
        induction variables are the thread's x, y, z indices), where the
        statements that follow are built until `close_thread_region`."""
        # Over the dims of more than one thread (the canonicalizer folds unit
        # dims away, and with them the marker): an index along a unit dim is 0.
        extents = [d for d in self.thread_dims if d > 1] or [1]
        with self.loc(node):
            op, block = self.parallel_op(extents)
        attributes.PER_THREAD.mark(op)
        with ir.InsertionPoint(block):
            reduce = ir.Operation.create("scf.reduce", results=[], operands=[], regions=0)
        ivs = iter(block.arguments)
        self.thread_region = ThreadRegion(op, [next(ivs) if d > 1 else None for d in self.thread_dims])
        with ir.InsertionPoint(reduce):
            yield

    def close_thread_region(self) -> None:
        self.closed_thread_regions.append(self.thread_region.op)
        self.thread_region = None

    def refuse_fragment_per_thread(self, node: ast.AST, buffer: Buffer) -> None:
        """A fragment's elements are spread over the threads by a layout the
        compiler picks: per-thread code cannot name the ones it holds."""
        if self.thread_region is not None and not self.parallel_depth and buffer.scope == FRAGMENT:
            raise self.error(node, f"'{buffer.name}' is a fragment, whose elements tile-infer-layout spreads over "
                                   f"the threads: per-thread code (after T.get_thread_binding) reads and writes "
                                   f"T.alloc_local arrays and shared buffers instead")

    def thread_index(self, node: ast.AST, index: ThreadIndex) -> Scalar:
        """A thread index's value in the per-thread code being built."""
        if self.parallel_depth or self.thread_region is None:
            raise self.error(node, "a thread index (T.get_thread_binding) is used by block-level code here: "
                                   "T.Parallel, T.copy, T.gemm and the other tile ops are run by the block "
                                   "together, under no condition on the thread, and index no thread")
        if index.dim >= len(self.thread_region.indices) or self.thread_region.indices[index.dim] is None:
            return Scalar(self.index(0), Affine.of({}, 0))
        return Scalar(self.thread_region.indices[index.dim],
                      Affine.of({f"thread{index.dim}@{id(self.thread_region.op)}": 1}, 0))

    def check_not_escaped(self, node: ast.AST, name: str, value) -> None:
        """Refuses a value per-thread code computed, used after that code ended
        (a tile op ended it): each thread's copy is gone."""
        if not self.closed_thread_regions:
            return
        if isinstance(value, Var):
            value = value.value
        if isinstance(value, Scalar | Buffer):
            defined = value.value.owner
            operation = defined.owner if isinstance(defined, ir.Block) else defined
            if operation is None:
                return
            operation = operation.operation
            inside = [operation, *parent_ops(operation)]
            if any(op in self.closed_thread_regions for op in inside):
                raise self.error(node, f"'{name}' is per-thread (computed after T.get_thread_binding) and "
                                       f"the per-thread code that made it ended at a tile op (T.copy, "
                                       f"T.Parallel, ...): compute it again after that op")

    def statement(self, node: ast.stmt) -> None:
        with self.loc(node):
            handler = getattr(self, f"stmt_{type(node).__name__}", None)
            if handler is None:
                raise self.error(node, f"{_describe(node)} is not supported in a kernel")
            try:
                handler(node)
            except TileLangError:
                raise
            except (ValueError, TypeError, ir.MLIRError) as error:
                # The bindings refused an op the checks above let through: still the user's line.
                raise self.error(node, f"cannot build this statement: {error}") from None

    def stmt_Pass(self, node: ast.Pass) -> None:
        pass

    def stmt_Expr(self, node: ast.Expr) -> None:
        if _is_docstring(node):
            return
        self.eval(node.value)

    def stmt_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and self.reducer_target(node.targets[0]) is not None:
            self.reducer_assign(node, node.targets[0], node.value)
            return
        value = self.eval(node.value)
        for target in node.targets:
            self.assign(target, value, node)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.keep_syms = node.value is None
        try:
            annotation = self.eval(node.annotation)
        finally:
            self.keep_syms = False
        if node.value is None:
            if not isinstance(node.target, ast.Name):
                raise self.error(node, "an annotation without a value declares a tensor parameter by name")
            self.annotate_tensor(node, node.target.id, annotation)
            return
        self.assign(node.target, self.eval(node.value), node)

    def annotate_tensor(self, node, name: str, annotation) -> None:
        """Direct style `A: T.Tensor[[M, K], dtype]`: checks the bound tensor, and
        learns the T.const names of its shape."""
        if not isinstance(annotation, TensorSpec):
            raise self.error(node, f"'{name}: ...' must annotate a tensor as T.Tensor[[dims], dtype]")
        current = None
        for scope in reversed(self.scopes):
            if name in scope:
                current = scope[name][0]
                break
        if isinstance(current, Pending):
            shape = self.static_shape(node, [self.constants.get(d.name, d) if isinstance(d, Sym) else d
                                             for d in annotation.shape], f"the shape of '{name}'")
            self.bind(name, self.tensor_argument(node, name, shape, self.to_dtype(node, annotation.dtype)), node)
            return
        if not isinstance(current, Buffer) or current.scope != GLOBAL:
            raise self.error(node, f"'{name}' is not a tensor parameter of this kernel")
        if len(annotation.shape) != len(current.shape):
            raise self.error(node, f"'{name}' has {len(current.shape)} dims, annotated with "
                                   f"{len(annotation.shape)}")
        for position, (declared, actual) in enumerate(zip(annotation.shape, current.shape)):
            if isinstance(declared, Sym):
                known = self.constants.setdefault(declared.name, actual)
                if known != actual:
                    raise self.error(node, f"'{name}' dim {position} is {actual}, but {declared.name} = {known}")
                continue
            if declared != actual:
                raise self.error(node, f"'{name}' dim {position} is {actual}, annotated {declared!r}")
        dtype = self.to_dtype(node, annotation.dtype)
        if dtype != current.dtype:
            raise self.error(node, f"'{name}' holds {current.dtype}, annotated {dtype}")

    def assign(self, target: ast.expr, value, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, value, target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not _compile_time(value) or not hasattr(value, "__iter__"):
                raise self.error(target, "only a compile-time tuple unpacks into several names")
            values = list(value)
            if len(values) != len(target.elts):
                raise self.error(target, f"{len(target.elts)} names for {len(values)} values")
            for element, item in zip(target.elts, values):
                self.assign(element, item, node)
        elif isinstance(target, ast.Subscript):
            self.store(target, value)
        else:
            raise self.error(target, f"cannot assign to {_describe(target)}")

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        target = node.target
        reducer = self.reducer_target(target)
        if reducer is not None:
            if not isinstance(node.op, ast.Add) or reducer.reducer != "sum":
                raise self.error(node, f"a {reducer.reducer} reducer is updated as "
                                       f"{_REDUCER_FORMS[reducer.reducer]}")
            self.reducer_update(node, reducer, target, node.value)
            return
        if isinstance(target, ast.Subscript):
            load = ast.Subscript(target.value, target.slice, ast.Load())
        elif isinstance(target, ast.Name):
            load = ast.Name(target.id, ast.Load())
        else:
            raise self.error(node, f"cannot update {_describe(target)}")
        ast.copy_location(load, target)
        value = self.binary(node, node.op, self.eval(load), self.eval(node.value))
        self.assign(target, value, node)

    def stmt_Return(self, node: ast.Return) -> None:
        if self.macro_result is not None:  # a T.macro's value (inline_macro)
            if self.macro_result is not _NO_RESULT or self.region_depth != self.macro_depth:
                raise self.error(node, "a T.macro returns at its end only")
            self.macro_result = None if node.value is None else self.eval(node.value)
            return
        if node.value is None:
            if self.in_kernel and node is not self.kernel_last:
                raise self.error(node, "an early `return` in a kernel is not supported (the rest of the kernel "
                                       "would still run): put the rest under an `if` on the opposite condition")
            return
        value = self.eval(node.value)
        values = list(value) if isinstance(value, (tuple, list)) else [value]
        for item in values:
            if not isinstance(item, Buffer) or item.scope != GLOBAL:
                raise self.error(node, "a kernel returns tensors (parameters or T.empty results)")
            self.returns.append(item.param)

    def stmt_If(self, node: ast.If) -> None:
        condition = self.eval(node.test)
        if _compile_time(condition):
            self.statements(node.body if condition else node.orelse)
            return
        self.runtime_if(node, self.to_bool(node.test, condition))

    def runtime_if(self, node: ast.If, condition: Scalar) -> None:
        if not self.in_kernel:
            raise self.error(node, "a condition on a runtime value is only meaningful inside the kernel")
        changed = self.vars_assigned(node.body + node.orelse)
        for var in changed:
            self.check_not_escaped(node, var.name, var)
        before = {id(v): v.value for v in changed}
        for var in changed:
            if var.value is None:
                raise self.error(node, f"'{var.name}' is assigned in a branch before any value: give it one "
                                       f"before the `if`")
        if_op = scf.IfOp(condition.value, [v.value.type for v in changed], has_else=bool(changed or node.orelse))
        branches = [(if_op.then_block, node.body)]
        if if_op.else_block is not None:
            branches.append((if_op.else_block, node.orelse))
        for block, body in branches:
            for var in changed:
                var.value = before[id(var)]
            with ir.InsertionPoint(block):
                self.region(body)
                scf.YieldOp([v.value.value for v in changed])
        for var, result in zip(changed, if_op.results):
            var.value = Scalar(result)

    def region(self, body: list[ast.stmt], bindings: dict | None = None) -> None:
        self.scopes.append({name: (value, len(self.scopes) + 1) for name, value in (bindings or {}).items()})
        self.region_depth += 1
        try:
            self.statements(body)
        finally:
            self.region_depth -= 1
            self.scopes.pop()

    def vars_assigned(self, body: list[ast.stmt]) -> list[Var]:
        """The T.alloc_var variables a block of statements assigns (in order)."""
        found: list[Var] = []
        for statement in _walk_statements(body):
            targets = []
            if isinstance(statement, ast.Assign):
                targets = statement.targets
            elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
                targets = [statement.target]
            if isinstance(statement, ast.Expr | ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Return):
                for call in ast.walk(statement):
                    # T.fill / T.clear of a variable, and a variable handed to a
                    # T.macro (which may assign it), assign it too.
                    if isinstance(call, ast.Call) and (_called_name(call.func) in ("fill", "clear") or isinstance(
                            self.static_or_none(call.func), api.Macro)):
                        targets = [*targets, *call.args, *(k.value for k in call.keywords)]
            for target in targets:
                for name_node in ast.walk(target):
                    if isinstance(name_node, ast.Name):
                        try:
                            value = self.lookup(name_node.id, name_node)
                        except TileLangError:
                            continue
                        if isinstance(value, Var) and value not in found:
                            found.append(value)
        return found

    def stmt_With(self, node: ast.With) -> None:
        if not self.is_kernel_with(node):
            raise self.error(node, "the only `with` in a kernel is `with T.Kernel(...) as ...:`")
        if self.in_kernel or self.region_depth:
            raise self.error(node, "T.Kernel opens the kernel at the function's top level")
        item = node.items[0]
        call = item.context_expr
        grid = [self.eval(a) for a in call.args]
        grid = [self.static_int(call, g, "grid extents") for g in grid]
        if not 1 <= len(grid) <= 3:
            raise self.error(call, f"T.Kernel takes 1 to 3 grid extents, got {len(grid)}")
        threads = DEFAULT_THREADS
        for keyword in call.keywords:
            value = self.eval(keyword.value)
            if keyword.arg == "threads":
                threads = self.threads(keyword.value, value)
                self.thread_dims = [self.static_int(keyword.value, v, "threads") for v in value] \
                    if isinstance(value, (list, tuple)) else [threads]
            elif keyword.arg in ("is_cpu", "prelude") and not value:
                continue
            else:
                raise self.error(keyword, f"T.Kernel: '{keyword.arg}' is not supported (grid extents and threads=)")
        if "threads" not in [k.arg for k in call.keywords]:
            self.thread_dims = [threads]
        if not 1 <= len(self.thread_dims) <= 3:
            raise self.error(call, f"T.Kernel's threads= has 1 to 3 dims, got {len(self.thread_dims)}")
        names = self.kernel_names(item.optional_vars, len(grid))
        self.open_kernel(grid, threads, names, node.body,
                         threads_given="threads" in [k.arg for k in call.keywords])

    def threads(self, node, value) -> int:
        if isinstance(value, (list, tuple)):
            product = 1
            for v in value:
                product *= self.static_int(node, v, "threads")
            return product
        return self.static_int(node, value, "threads")

    def kernel_names(self, target, rank: int) -> list[str | None]:
        if target is None:
            return [None] * rank
        if isinstance(target, ast.Name):
            if rank != 1:
                raise self.error(target, f"the grid has {rank} dims: unpack them, `as ({', '.join(BLOCK_NAMES[:rank])})`")
            return [target.id]
        if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
            if len(target.elts) != rank:
                raise self.error(target, f"the grid has {rank} dims, unpacked into {len(target.elts)} names")
            return [e.id for e in target.elts]
        raise self.error(target, "T.Kernel binds its block indices to names: `as bx` or `as (bx, by)`")

    def open_kernel(self, grid: list[int], threads: int, names: list[str | None], body: list[ast.stmt],
                    threads_given: bool = True):
        """Builds the tile.kernel; one whose threads nobody gave and whose body
        never asks for its thread index is marked (attributes.DEFAULT_THREADS):
        tile-compile may launch it with more where its default spills."""
        self.kernel_op = tile.kernel(grid, threads)
        block = self.kernel_op.regions[0].blocks[0]
        bindings = {name: Scalar(arg, Affine.of({name: 1}, 0))
                    for name, arg in zip(names, block.arguments) if name is not None}
        for scope in self.scopes:
            for name, (value, _) in scope.items():
                if isinstance(value, Pending):
                    raise self.error(self.src.tree, f"tensor '{name}' has no shape: pass an array for it, or "
                                                    f"annotate it (`{name}: T.Tensor[[dims], dtype]`)")
        self.in_kernel = True
        self.kernel_last = body[-1] if body else None  # a bare `return` there ends the kernel as written
        self.per_thread_code = self.calls_thread_binding(body, 0)
        if not threads_given and not self.per_thread_code:
            attributes.DEFAULT_THREADS.mark(self.kernel_op)
        self.thread_region, self.closed_thread_regions = None, []
        with ir.InsertionPoint.at_block_terminator(block):
            self.scopes.append({name: (value, len(self.scopes) + 1) for name, value in bindings.items()})
            try:
                self.statements(body)
            finally:
                self.scopes.pop()
        self.in_kernel = False
        self.per_thread_code = False

    def calls_thread_binding(self, body: list[ast.stmt], depth: int) -> bool:
        """Whether a kernel body (or a T.macro it calls) asks for its thread's
        index: then it holds per-thread code."""
        for call in ast.walk(ast.Module(body, [])):
            if not isinstance(call, ast.Call):
                continue
            if _called_name(call.func) in _THREAD_BINDING_CALLS:
                return True
            callee = self.static_or_none(call.func)
            if isinstance(callee, api.Macro) and depth < MACRO_DEPTH and \
                    self.calls_thread_binding(_macro_source(callee).tree.body, depth + 1):
                return True
        return False

    def implicit_kernel(self, body: list[ast.stmt]) -> None:
        """A body with no T.Kernel (as the seed article writes it): the whole body
        is the kernel, bx/by/bz are its block indices, and the grid is what they
        index: `C[by * block_M + i, ...]` over C's M rows is ceildiv(M, block_M)
        blocks."""
        used = {n.id for n in ast.walk(ast.Module(body, [])) if isinstance(n, ast.Name) and n.id in BLOCK_NAMES}
        assigned = {n.id for n in ast.walk(ast.Module(body, [])) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Store)}
        params = {p.name for p in self.params} | set(self.arguments)
        free = sorted(used - assigned - params, key=BLOCK_NAMES.index)
        rank = BLOCK_NAMES.index(free[-1]) + 1 if free else 1
        names = list(BLOCK_NAMES[:rank])
        self.open_kernel([1] * rank, DEFAULT_THREADS, names, body, threads_given=False)
        grid = []
        for name in names:
            extents = self.grid_uses.get(name, set())
            if len(extents) > 1:
                raise self.error(self.src.tree, f"no T.Kernel, and '{name}' indexes tensors over different "
                                                f"block counts ({sorted(extents)}): write "
                                                f"`with T.Kernel(...) as ({', '.join(names)}):`")
            grid.append(extents.pop() if extents else 1)
        self.kernel_op.attributes["grid"] = ir.DenseI64ArrayAttr.get(grid)
        self.notes.append(f"no T.Kernel: launched as grid ({', '.join(map(str, grid))}) of {DEFAULT_THREADS} "
                          f"threads, the blocks {', '.join(names)} index")

    def is_kernel_with(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.With) or len(node.items) != 1:
            return False
        call = node.items[0].context_expr
        if not isinstance(call, ast.Call):
            return False
        try:
            return self.eval_static(call.func) is api.Kernel
        except TileLangError:
            return False

    def static_or_none(self, node: ast.expr):
        """`eval_static(node)`, or None where it is not a compile-time name."""
        try:
            return self.eval_static(node)
        except (TileLangError, AttributeError):
            return None

    def opens_kernel_by_macro(self, node: ast.stmt) -> bool:
        """A statement calling a T.macro whose body opens a kernel."""
        if not isinstance(node, ast.Expr) or not isinstance(node.value, ast.Call):
            return False
        callee = self.static_or_none(node.value.func)
        if not isinstance(callee, api.Macro):
            return False
        tree = _macro_source(callee).tree
        return any(isinstance(n, ast.With) and any(
            isinstance(item.context_expr, ast.Call) and _called_name(item.context_expr.func) == "Kernel"
            for item in n.items) for n in ast.walk(tree))

    def eval_static(self, node: ast.expr):
        """A name or attribute chain evaluated without building IR."""
        if isinstance(node, ast.Name):
            return self.lookup(node.id, node)
        if isinstance(node, ast.Attribute):
            base = self.eval_static(node.value)
            if not _compile_time(base):
                raise self.error(node, "not a compile-time value")
            return getattr(base, node.attr)
        raise self.error(node, "not a name")

    # ---- loops ------------------------------------------------------------
    def stmt_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error(node, "`for ... else` is not supported in a kernel")
        loop = self.loop_of(node.iter)
        if loop is None:
            iterable = self.eval(node.iter)
            if not _compile_time(iterable):
                raise self.error(node.iter, "a `for` loops over T.Parallel, T.Pipelined, T.serial, range or a "
                                            "compile-time sequence")
            for item in iterable:  # unrolled: a compile-time sequence
                self.assign(node.target, item, node)
                self.statements(node.body)
            return
        names = self.loop_names(node.target, len(loop.bounds))
        if loop.kind == "parallel":
            self.parallel_loop(node, loop, names)
        else:
            self.serial_loop(node, loop, names[0])

    def loop_of(self, node: ast.expr) -> _Loop | None:
        if not isinstance(node, ast.Call):
            return None
        try:
            callee = self.eval_static(node.func)
        except TileLangError:
            return None
        if callee is api.Parallel:
            extents = [self.eval(a) for a in node.args]
            if not extents:
                raise self.error(node, "T.Parallel takes one extent per loop variable")
            self.ignore_keywords(node, ("coalesced_width", "loop_layout", "prefer_async"))
            return _Loop("parallel", [(0, self.static_int(node, e, "T.Parallel extents"), 1) for e in extents])
        if callee in (api.Pipelined, api.serial, api.unroll, api.vectorized, builtins.range):
            what = {api.Pipelined: "T.Pipelined", api.serial: "T.serial", api.unroll: "T.unroll",
                    api.vectorized: "T.vectorized"}.get(callee, "range")
            args = [self.eval(a) for a in node.args]
            keywords = {k.arg: self.eval(k.value) for k in node.keywords}
            stages = keywords.pop("num_stages", None) if callee is api.Pipelined else None
            for name in ("order", "stage", "sync", "group", "explicit", "unroll_factor"):
                keywords.pop(name, None)
            if "step" in keywords:
                args.append(keywords.pop("step"))
            if keywords:
                raise self.error(node, f"{what}: '{next(iter(keywords))}' is not supported")
            if not 1 <= len(args) <= 3:
                raise self.error(node, f"{what} takes (stop), (start, stop) or (start, stop, step)")
            lower, upper, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3
                                                                          else 1)
            if not (isinstance(step, int) and step > 0):
                raise self.error(node, f"{what}: the step must be a positive compile-time integer")
            if stages is not None:
                stages = self.static_int(node, stages, "num_stages", allow_zero=True)
            return _Loop("serial", [(lower, upper, step)], stages)
        return None

    def ignore_keywords(self, node: ast.Call, names: tuple[str, ...]) -> None:
        for keyword in node.keywords:
            if keyword.arg not in names:
                raise self.error(keyword, f"'{keyword.arg}' is not an argument here")

    def loop_names(self, target: ast.expr, count: int) -> list[str]:
        elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        if not all(isinstance(e, ast.Name) for e in elements) or len(elements) != count:
            raise self.error(target, f"this loop binds {count} variable{'s' if count > 1 else ''}")
        return [e.id for e in elements]

    def parallel_loop(self, node: ast.For, loop: _Loop, names: list[str]) -> None:
        if not self.in_kernel:
            raise self.error(node, "T.Parallel belongs inside the kernel (under T.Kernel)")
        if self.parallel_depth:
            raise self.error(node, "T.Parallel loops do not nest: give one T.Parallel all the dims")
        if self.thread_region is not None:
            raise self.error(node, "T.Parallel in per-thread code (under a condition or loop on a thread index): "
                                   "the block runs a T.Parallel together; write it at the kernel's level")
        op, block = self.parallel_op([upper for _, upper, _ in loop.bounds])
        bindings = {name: Scalar(arg, Affine.of({f"{name}@{id(op)}": 1}, 0))
                    for name, arg in zip(names, block.arguments)}
        self.parallel_depth += 1
        self.parallel_body = body = _ParallelBody(op, list(block.arguments), [upper for _, upper, _ in loop.bounds])
        try:
            with ir.InsertionPoint(block):
                self.region(node.body, bindings)
                ir.Operation.create("scf.reduce", results=[], operands=[], regions=0)
        finally:
            self.parallel_depth -= 1
            self.parallel_body = None
        for key, read in body.reads.items():
            if key in body.updates:
                raise self.error(read, f"'{body.updates[key][0].name}' (T.alloc_reducer) is read in the "
                                       f"T.Parallel that updates it: every iteration's update counts only "
                                       f"after the loop; read it after T.finalize_reducer")
        for reducer, partial, kept in body.updates.values():
            if partial is not None:
                self.reduce_partials(node, reducer, partial, kept)

    def parallel_op(self, extents: list[int]) -> tuple[ir.Operation, ir.Block]:
        """An scf.parallel from 0 to `extents`, step 1, at the insertion point,
        and its body (one index argument per dim, no terminator yet)."""
        n = len(extents)
        zero, one = self.index(0), self.index(1)
        op = ir.Operation.create(
            "scf.parallel", results=[], operands=[zero] * n + [self.index(e) for e in extents] + [one] * n,
            attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([n, n, n, 0])}, regions=1)
        return op, op.regions[0].blocks.append(*([ir.IndexType.get()] * n))

    def serial_loop(self, node: ast.For, loop: _Loop, name: str) -> None:
        lower, upper, step = loop.bounds[0]
        lower_v, upper_v, step_v = (self.index_operand(node, v) for v in (lower, upper, step))
        carried = self.vars_assigned(node.body)
        for var in carried:
            self.check_not_escaped(node, var.name, var)
            if var.value is None:
                raise self.error(node, f"'{var.name}' is updated in the loop before any value: give it one "
                                       f"before the loop")
        for_op = scf.ForOp(lower_v, upper_v, step_v, [v.value.value for v in carried])
        if loop.num_stages:
            attributes.NUM_STAGES.write(for_op, loop.num_stages)
        induction = for_op.induction_variable
        with ir.InsertionPoint(for_op.body):
            for var, arg in zip(carried, for_op.inner_iter_args):
                var.value = Scalar(arg)
            self.region(node.body, {name: Scalar(induction, Affine.of({f"{name}@{id(for_op)}": 1}, 0))})
            scf.YieldOp([v.value.value for v in carried])
        for var, result in zip(carried, for_op.results):
            var.value = Scalar(result)

    def stmt_Assert(self, node: ast.Assert) -> None:
        """`assert cond[, message]` on compile-time values (shape checks, in
        the direct style after T.const sizes are bound): checked while
        building, a located error when false. On runtime values: a device
        assert (`device_assert`)."""
        condition = self.eval(node.test)
        if not _compile_time(condition):
            self.device_assert(node, condition, node.msg)
            return
        if not condition:
            message = None
            if node.msg is not None:
                try:
                    message = self.eval(node.msg)
                except TileLangError:  # an f-string, say: its text
                    message = ast.unparse(node.msg)
            raise self.error(node, "assertion failed" + (f": {message}" if message is not None else ""))

    def stmt_While(self, node: ast.While) -> None:
        """`while cond:` on runtime values (stream-K's `while start < last`):
        an scf.while whose condition is evaluated before each iteration from
        the T.alloc_var values the body assigns, which the loop carries. The
        condition must be the same for the whole block (it is block-level
        code); a condition known while building (`while True`) is refused:
        a fixed count is a T.serial."""
        if node.orelse:
            raise self.error(node, "`while ... else` is not supported in a kernel")
        if not self.in_kernel:
            raise self.error(node, "a `while` loop on runtime values belongs inside the kernel")
        carried = self.vars_assigned(node.body)
        for var in carried:
            self.check_not_escaped(node, var.name, var)
            if var.value is None:
                raise self.error(node, f"'{var.name}' is updated in the loop before any value: give it one "
                                       f"before the loop")
        initial = [var.value for var in carried]
        types = [value.type for value in initial]
        while_op = scf.WhileOp(types, [value.value for value in initial])
        before = while_op.before.blocks.append(*types)
        with ir.InsertionPoint(before):
            for var, argument in zip(carried, before.arguments):
                var.value = Scalar(argument)
            condition = self.eval(node.test)
            if _compile_time(condition):
                raise self.error(node.test, "a `while` condition known while building: a runtime condition "
                                            "ends the loop (for a fixed count, use T.serial)")
            scf.ConditionOp(self.to_bool(node.test, condition).value, list(before.arguments))
        after = while_op.after.blocks.append(*types)
        with ir.InsertionPoint(after):
            for var, argument in zip(carried, after.arguments):
                var.value = Scalar(argument)
            self.region(node.body)
            scf.YieldOp([var.value.value for var in carried])
        for var, result in zip(carried, while_op.results):
            var.value = Scalar(result)

    # ---- expressions ------------------------------------------------------
    def eval(self, node: ast.expr):
        with self.loc(node):
            handler = getattr(self, f"expr_{type(node).__name__}", None)
            if handler is None:
                raise self.error(node, f"{_describe(node)} is not supported in a kernel")
            return handler(node)

    def expr_Constant(self, node: ast.Constant):
        return node.value

    def expr_Name(self, node: ast.Name):
        value = self.lookup(node.id, node)
        if isinstance(value, ThreadIndex):
            return self.thread_index(node, value)
        self.check_not_escaped(node, node.id, value)
        if isinstance(value, Var):
            if value.value is None:
                raise self.error(node, f"'{node.id}' (T.alloc_var) is read before any value is assigned")
            return value.value
        return value

    def expr_Tuple(self, node: ast.Tuple):
        return tuple(self.eval(e) for e in node.elts)

    def expr_List(self, node: ast.List):
        return [self.eval(e) for e in node.elts]

    def expr_Attribute(self, node: ast.Attribute):
        base = self.eval(node.value)
        if isinstance(base, Buffer):
            if node.attr in ("shape", "dtype", "data", "name"):
                return getattr(base, node.attr)
            raise self.error(node, f"a buffer has no attribute '{node.attr}' here (shape, dtype, data)")
        if not _compile_time(base):
            raise self.error(node, f"'{node.attr}' of a runtime value")
        try:
            value = getattr(base, node.attr)
        except AttributeError:
            owner = base.__name__ if isinstance(base, types.ModuleType) else repr(base)
            raise self.error(node, f"{owner} has no attribute '{node.attr}'") from None
        if isinstance(value, api.Unsupported):
            raise self.error(node, value.message)
        return value

    def expr_Subscript(self, node: ast.Subscript):
        if isinstance(node.value, ast.Name) and self.is_var(node.value):
            self.check_var_index(node)
            return self.expr_Name(node.value)
        base = self.eval(node.value)
        if isinstance(base, Buffer):
            region = self.region_of(node, base)
            if any(e is not None for e in region.extents):
                return region
            return self.load(node, region)
        if _compile_time(base):
            index = self.eval(node.slice)
            if not _compile_time(index):
                raise self.error(node, "indexing a compile-time value with a runtime index")
            try:
                return base[index]
            except Exception as error:  # noqa: BLE001 - the user's Python value says why
                raise self.error(node, f"{type(error).__name__}: {error}") from None
        raise self.error(node, "only buffers and compile-time values can be indexed")

    def check_var_index(self, node: ast.Subscript) -> None:
        index = self.eval(node.slice)
        if not all(isinstance(i, int) and i == 0 for i in (index if isinstance(index, tuple) else (index,))):
            raise self.error(node, "a T.alloc_var holds one value: index it with [0], or not at all")

    def var_named(self, node: ast.expr) -> Var | None:
        """The T.alloc_var (or one-element T.alloc_local) a bare name or `x[0]`
        names, without reading it; else None."""
        if isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Name) and self.is_var(node):
            return self.lookup(node.id, node)
        return None

    def is_var(self, node: ast.Name) -> bool:
        for scope in reversed(self.scopes):
            if node.id in scope:
                return isinstance(scope[node.id][0], Var)
        return False

    def region_of(self, node: ast.Subscript, buffer: Buffer) -> Region:
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(items) > len(buffer.shape):
            raise self.error(node, f"'{buffer.name}' has {len(buffer.shape)} dims, indexed with {len(items)}")
        starts, extents = [], []
        for dim, item in enumerate(items):
            if isinstance(item, ast.Slice):
                if item.step is not None:
                    raise self.error(item, "slices with a step are not supported")
                start = self.eval(item.lower) if item.lower is not None else 0
                stop = self.eval(item.upper) if item.upper is not None else buffer.shape[dim]
                starts.append(self.as_index(item, start))
                extents.append(self.extent(item, start, stop))
            else:
                starts.append(self.as_index(item, self.eval(item)))
                extents.append(None)
        for dim in range(len(items), len(buffer.shape)):  # A[b] of a 3-D tensor: the rest whole
            starts.append(0)
            extents.append(buffer.shape[dim])
        return Region(buffer, starts, extents)

    def extent(self, node, start, stop) -> int:
        def affine(v):
            if isinstance(v, int):
                return Affine.of({}, v)
            return v.affine if isinstance(v, Scalar) else None

        a, b = affine(start), affine(stop)
        if a is None or b is None or b.combine(a, -1).terms:
            raise self.error(node, "a slice's extent must be a compile-time constant (stop - start)")
        size = b.combine(a, -1).const
        if size <= 0:
            raise self.error(node, f"empty slice (extent {size})")
        return size

    def load(self, node, region: Region) -> Scalar:
        if not self.in_kernel:
            raise self.error(node, "buffer elements are read inside the kernel")
        if region.buffer.reducer is not None and self.parallel_body is not None:
            self.parallel_body.reads.setdefault(id(region.buffer), node)
        self.refuse_fragment_per_thread(node, region.buffer)
        indices = [self.index_value(node, region.buffer, d, s) for d, s in enumerate(region.starts)]
        return self.loaded(region.buffer.dtype, memref.LoadOp(region.buffer.value, indices).result)

    def loaded(self, dtype: DType, stored: ir.Value) -> Scalar:
        """A value read from a buffer of `dtype` as the kernel sees it: a
        bool byte compared with 0, a uint8 byte zero-extended to i32, a
        uint32 zero-extended to i64."""
        if not dtype.is_converted:
            return Scalar(stored)
        value = ir.Type.parse(dtype.value)
        if value == _i1():
            return Scalar(arith.CmpIOp(arith.CmpIPredicate.ne, stored, self.constant(0, stored.type)).result)
        return Scalar(arith.ExtUIOp(value, stored).result, unsigned=dtype == "uint32")

    def to_value(self, node, value, dtype: DType) -> Scalar:
        """`value` converted to `dtype` (`T.cast`): a uint8 is an i32 in
        [0, 255], the value's low byte; a uint32 an i64 in [0, 2^32), its
        low 32 bits."""
        if dtype == "uint32":
            return self.as_unsigned(node, value)
        converted = self.convert(node, value, ir.Type.parse(dtype.value))
        if dtype.is_converted and converted.type != _i1():
            low = (1 << dtype.bits) - 1
            return Scalar(arith.AndIOp(converted.value, self.constant(low, converted.type)).result)
        return converted

    def as_unsigned(self, node, value) -> Scalar:
        """`value` as a uint32: an i64 holding its low 32 bits (a number
        modulo 2^32; a float truncated first, as T.cast does)."""
        if isinstance(value, Scalar) and value.unsigned:
            return value
        if _compile_time(value) and _typed_constant(value) is None and isinstance(value, int):
            return Scalar(self.constant(value % (1 << 32), _i64()), unsigned=True)
        wide = self.convert(node, value, _i64())
        return Scalar(arith.AndIOp(wide.value, self.constant(0xFFFFFFFF, _i64())).result, unsigned=True)

    def unsigned_operands(self, left, right) -> bool:
        """Whether C would compute `left op right` in unsigned int: one side
        a uint32, the other no float and no wider integer."""
        sides = (left, right)
        if not any(isinstance(v, Scalar) and v.unsigned for v in sides):
            return False
        for v in sides:
            if isinstance(v, (float, np.floating)):
                return False
            if isinstance(v, Scalar) and not v.unsigned and (_is_float(v.type) or v.type == _i64()):
                return False
        return True

    def to_storage(self, node, value, dtype: DType) -> Scalar:
        """`value` as a buffer of `dtype` stores it: converted to the type's
        values, then a bool as the byte 0 or 1, a uint8 or uint32 as its low
        bits."""
        converted = self.to_value(node, value, dtype)
        if not dtype.is_converted:
            return converted
        storage = ir.Type.parse(dtype.storage)
        if converted.type == _i1():
            return Scalar(arith.ExtUIOp(storage, converted.value).result)
        return Scalar(arith.TruncIOp(storage, converted.value).result)

    def store(self, target: ast.Subscript, value) -> None:
        if isinstance(target.value, ast.Name) and self.is_var(target.value):
            self.check_var_index(target)
            self.assign_var(self.lookup(target.value.id, target), value, target)
            return
        base = self.eval(target.value)
        if not isinstance(base, Buffer):
            raise self.error(target, "only buffer elements can be assigned")
        if not self.in_kernel:
            raise self.error(target, "buffer elements are written inside the kernel")
        region = self.region_of(target, base)
        if any(e is not None for e in region.extents):
            raise self.error(target, "assigning to a slice: use T.copy, T.fill or a T.Parallel loop")
        self.refuse_fragment_per_thread(target, base)
        converted = self.to_storage(target, value, base.dtype)
        indices = [self.index_value(target, base, d, s) for d, s in enumerate(region.starts)]
        memref.StoreOp(converted.value, base.value, indices)

    def index_value(self, node, buffer: Buffer, dim: int, start) -> ir.Value:
        scalar = start if isinstance(start, Scalar) else Scalar(self.index(start), Affine.of({}, start))
        if buffer.scope == GLOBAL and scalar.affine is not None:
            for name, coeff in scalar.affine.terms:
                if name in BLOCK_NAMES and coeff > 0:
                    self.grid_uses.setdefault(name, set()).add(-(-buffer.shape[dim] // coeff))
        return scalar.value

    def assign_var(self, var: Var, value, node) -> None:
        if self.parallel_depth > var.depth:
            raise self.error(node, f"'{var.name}' (T.alloc_var) is assigned in a T.Parallel, whose iterations "
                                   f"run in any order; keep per-element values in a fragment")
        var.value = self.to_value(node, value, var.dtype)

    def expr_BinOp(self, node: ast.BinOp):
        return self.binary(node, node.op, self.eval(node.left), self.eval(node.right))

    def expr_UnaryOp(self, node: ast.UnaryOp):
        operand = self.eval(node.operand)
        if _compile_time(operand):
            return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                    ast.Invert: operator.invert}[type(node.op)](operand)
        scalar = self.scalar(node, operand)
        if isinstance(node.op, ast.UAdd):
            return scalar
        if isinstance(node.op, ast.USub):
            if _is_float(scalar.type):
                return Scalar(arith.NegFOp(scalar.value).result)
            return self.binary(node, ast.Sub(), 0, scalar)
        if isinstance(node.op, ast.Not):
            return Scalar(arith.XOrIOp(self.to_bool(node, scalar).value, self.constant(True, _i1())).result)
        if scalar.unsigned:
            return Scalar(arith.XOrIOp(scalar.value, self.constant(0xFFFFFFFF, _i64())).result, unsigned=True)
        return Scalar(arith.XOrIOp(scalar.value, self.constant(-1, scalar.type)).result)

    def expr_BoolOp(self, node: ast.BoolOp):
        values = [self.eval(v) for v in node.values]
        if all(_compile_time(v) for v in values):
            result = values[0]
            for v in values[1:]:
                result = (result and v) if isinstance(node.op, ast.And) else (result or v)
            return result
        combine = arith.AndIOp if isinstance(node.op, ast.And) else arith.OrIOp
        result = self.to_bool(node, values[0])
        for v in values[1:]:
            result = Scalar(combine(result.value, self.to_bool(node, v).value).result)
        return result

    def expr_Compare(self, node: ast.Compare):
        left = self.eval(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node)
            if _compile_time(left) and _compile_time(right):
                value = _PY_CMPS[type(op)](left, right)
            else:
                value = self.compare(node, op, left, right)
            if result is None:
                result = value
            elif _compile_time(result) and _compile_time(value):
                result = result and value
            else:
                result = Scalar(arith.AndIOp(self.to_bool(node, result).value, self.to_bool(node, value).value).result)
            left = right
        return result

    def compare(self, node, op: ast.cmpop, left, right) -> Scalar:
        if type(op) not in _CMP_F:
            raise self.error(node, f"'{type(op).__name__}' on runtime values is not supported")
        # Bools compare as 0 and 1 (Python's and C's True > False); as i1, a
        # signed predicate would take True for -1. Only == and != keep them.
        if not (_is_bool(left) and _is_bool(right)) or type(op) not in (ast.Eq, ast.NotEq):
            left, right = self.widened_bool(left), self.widened_bool(right)
        if self.unsigned_operands(left, right):  # C compares as unsigned: -1 is the largest
            left, right = self.as_unsigned(node, left), self.as_unsigned(node, right)
        a, b = self.promote(node, left, right)
        if _is_float(a.type):
            predicate = _CMP_F[type(op)]
            return Scalar(arith.CmpFOp(getattr(arith.CmpFPredicate, predicate.upper()), a.value, b.value).result)
        predicate = _CMP_I[type(op)]
        return Scalar(arith.CmpIOp(getattr(arith.CmpIPredicate, predicate), a.value, b.value).result)

    def expr_IfExp(self, node: ast.IfExp):
        condition = self.eval(node.test)
        if _compile_time(condition):
            return self.eval(node.body if condition else node.orelse)
        return self.select(node, self.to_bool(node.test, condition), node.body, node.orelse)

    def select(self, node, condition: Scalar, then_node: ast.expr, else_node: ast.expr) -> Scalar:
        """`c ? a : b`. Branches that read memory are evaluated only when taken
        (an scf.if: a masked load must not read out of bounds); others are
        computed and selected (arith.select)."""
        if not any(isinstance(n, ast.Subscript) for n in (*ast.walk(then_node), *ast.walk(else_node))):
            then_value, else_value = self.eval(then_node), self.eval(else_node)
            if self.unsigned_operands(then_value, else_value):
                a, b = self.as_unsigned(node, then_value), self.as_unsigned(node, else_value)
                return Scalar(arith.SelectOp(condition.value, a.value, b.value).result, unsigned=True)
            a, b = self.promote(node, then_value, else_value)
            return Scalar(arith.SelectOp(condition.value, a.value, b.value).result)
        # Build both branches first (their types decide the result's), then
        # move them into an scf.if that yields the common type.
        probe = scf.IfOp(condition.value, [], has_else=True)
        values = []
        for block, branch in ((probe.then_block, then_node), (probe.else_block, else_node)):
            with ir.InsertionPoint(block):
                values.append(self.eval(branch))
        runtime = [v for v in values if not _compile_time(v)]
        if not runtime:
            raise self.error(node, "this conditional value has no runtime branch")
        unsigned = self.unsigned_operands(*values)
        if unsigned:  # both as uint32 values, each converted in its own branch
            for index, block in enumerate((probe.then_block, probe.else_block)):
                with ir.InsertionPoint(block):
                    values[index] = self.as_unsigned(node, values[index])
            runtime = values
        types = [self.scalar(node, v).type for v in runtime]
        common = types[0] if len(types) == 1 else _common_type(*types)
        chosen = scf.IfOp(condition.value, [common], has_else=True)
        for old, new, value in ((probe.then_block, chosen.then_block, values[0]),
                                (probe.else_block, chosen.else_block, values[1])):
            point = ir.InsertionPoint(new)
            for op in list(old.operations):
                op.detach_from_parent()
                point.insert(op)
            with point:
                scf.YieldOp([self.convert(node, value, common).value])
        probe.operation.erase()
        return Scalar(chosen.results[0], unsigned=unsigned)

    # ---- calls ------------------------------------------------------------
    def expr_Call(self, node: ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr == "astype":
            base = self.eval(node.func.value)
            if not _compile_time(base) and not isinstance(base, Buffer):
                return self.call_astype(node, base)  # `A_local[k].astype(accum_dtype)`
        callee = self.eval(node.func)
        if isinstance(callee, api.Unsupported):  # `from tilemlir.language import macro`
            raise self.error(node, callee.message)
        if isinstance(callee, api.Intrinsic):
            if callee.name in _UNARY_MATH:
                return self.unary_math(node, callee.name)
            handler = getattr(self, f"call_{callee.name}", None)
            if handler is None:
                raise self.error(node, f"T.{callee.name} is not supported")
            return handler(node)
        if isinstance(callee, api._TensorType):
            return self.call_Tensor(node)
        if isinstance(callee, DType):
            return self.construct(node, callee)
        if getattr(callee, "__tilemlir_prim_func__", False):
            raise self.error(node, "a prim_func is not called inside a kernel")
        if isinstance(callee, api.Macro):
            return self.inline_macro(node, callee)
        args = [self.eval(a) for a in node.args]
        keywords = {k.arg: self.eval(k.value) for k in node.keywords}
        if all(_compile_time(v) for v in (*args, *keywords.values())):
            try:
                return callee(*args, **keywords)
            except TileLangError:
                raise
            except Exception as error:  # noqa: BLE001 - the user's Python code says why
                raise self.error(node, f"{type(error).__name__}: {error}") from None
        if callee is builtins.float or callee is builtins.int:
            target = "f32" if callee is builtins.float else "i32"
            return self.convert(node, args[0], ir.Type.parse(target))
        if callee in (builtins.min, builtins.max, builtins.abs):
            return getattr(self, f"call_{callee.__name__}")(node)
        raise self.error(node, f"{getattr(callee, '__name__', callee)!r} is called on runtime values; only T.* "
                               f"functions build IR")

    def inline_macro(self, node: ast.Call, macro: api.Macro):
        """A `T.macro` call: its body built here, in its own source and names,
        its parameters bound to the evaluated arguments; the value of its
        `return` (None without one)."""
        if any(k.arg is None for k in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.error(node, f"T.macro '{macro.__name__}' is called with explicit arguments (no * or **)")
        args = [self.macro_argument(a) for a in node.args]
        keywords = {k.arg: self.macro_argument(k.value) for k in node.keywords}
        if len(self.macro_stack) >= MACRO_DEPTH:
            raise self.error(node, f"T.macro calls nest more than {MACRO_DEPTH} deep (a macro that calls "
                                   f"itself?)")
        try:
            bound = inspect.signature(macro.function).bind(*args, **keywords)
        except TypeError as error:
            raise self.error(node, f"T.macro '{macro.__name__}': {error}") from None
        bound.apply_defaults()
        source = _macro_source(macro)
        body = [s for s in source.tree.body if not _is_docstring(s)]
        if self.region_depth:
            assigned = {n.id for n in ast.walk(ast.Module(body, [])) if isinstance(n, ast.Name)
                        and isinstance(n.ctx, ast.Store)}
            for name, value in bound.arguments.items():
                if isinstance(value, Var) and name in assigned:
                    raise self.error(node, f"T.macro '{macro.__name__}' assigns the T.alloc_var passed as "
                                           f"'{name}' inside a loop or branch: assign it in the caller")
        for statement in _walk_statements(body):
            if isinstance(statement, ast.Return) and statement is not body[-1]:
                raise source.error(statement, "a T.macro returns at its end only (its last statement)")
        saved = (self.src, self.namespace, self.scopes, self.macro_result, self.macro_depth)
        self.src, self.namespace = source, macro.namespace()
        self.scopes = [{name: (value, 1) for name, value in bound.arguments.items()}]
        self.macro_result, self.macro_depth = _NO_RESULT, self.region_depth
        self.macro_stack.append(macro)
        try:
            self.statements(body)
            result = None if self.macro_result is _NO_RESULT else self.macro_result
        finally:
            self.macro_stack.pop()
            self.src, self.namespace, self.scopes, self.macro_result, self.macro_depth = saved
        return result

    def macro_argument(self, node: ast.expr):
        """A T.macro's argument: a variable named bare is passed as itself,
        so that the macro may assign it; anything else as its value."""
        var = self.var_named(node) if isinstance(node, ast.Name) else None
        return var if var is not None else self.eval(node)

    def arguments_of(self, node: ast.Call, names: tuple[str, ...], required: int, *,
                     ignored: tuple[str, ...] = (), what: str) -> dict:
        """Positional and keyword arguments of an intrinsic, by name (unevaluated)."""
        if len(node.args) > len(names):
            raise self.error(node, f"{what} takes at most {len(names)} positional arguments")
        bound = dict(zip(names, node.args))
        for keyword in node.keywords:
            if keyword.arg in ignored:
                continue
            if keyword.arg not in names:
                raise self.error(keyword, f"{what} has no argument '{keyword.arg}' (it takes "
                                          f"{', '.join(names)})")
            if keyword.arg in bound:
                raise self.error(keyword, f"{what}: '{keyword.arg}' given twice")
            bound[keyword.arg] = keyword.value
        missing = [n for n in names[:required] if n not in bound]
        if missing:
            raise self.error(node, f"{what} needs '{missing[0]}'")
        return bound

    def call_Tensor(self, node: ast.Call):
        spec = api.Tensor(*[self.eval(a) for a in node.args], **{k.arg: self.eval(k.value) for k in node.keywords})
        if spec.data is None:
            return spec
        source = spec.data
        if not isinstance(source, Buffer) or source.scope != GLOBAL:
            raise self.error(node, "T.Tensor(shape, dtype, X.data) views a tensor parameter's memory")
        if self.in_kernel:
            raise self.error(node, "a tensor view is made before T.Kernel")
        shape = self.static_shape(node, spec.shape, "a view's shape")
        dtype = self.to_dtype(node, spec.dtype)
        if dtype != source.dtype:
            raise self.error(node, f"a view of '{source.name}' as {dtype}: only views of the same element type "
                                   f"({source.dtype}) are supported")
        if math.prod(shape) > math.prod(source.shape):
            raise self.error(node, f"a view of {math.prod(shape)} elements of '{source.name}', which has "
                                   f"{math.prod(source.shape)}")
        strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
        result = ir.MemRefType.get(list(shape), ir.Type.parse(dtype.storage))
        op = memref.ReinterpretCastOp(result, source.value, [], [], [], static_offsets=[0],
                                      static_sizes=list(shape), static_strides=strides)
        return Buffer(op.result, shape, dtype, GLOBAL, f"view of {source.name}")

    def call_Kernel(self, node: ast.Call):
        raise self.error(node, "T.Kernel opens a kernel: `with T.Kernel(...) as (bx, by):`")

    def call_const(self, node: ast.Call):
        if self.in_kernel:
            raise self.error(node, "T.const declares names before T.Kernel")
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, "T.const takes one string of names: T.const('M, N, K')")
        text = self.eval(node.args[0])
        if not isinstance(text, str):
            raise self.error(node, "T.const takes a string of names: T.const('M, N, K')")
        names = [n.strip() for n in text.replace(",", " ").split()]
        if not names or not all(n.isidentifier() for n in names):
            raise self.error(node, f"T.const: {text!r} is not a list of names")
        symbols = tuple(self.constants[n] if n in self.constants else Sym(n) for n in names)
        return symbols[0] if len(symbols) == 1 else symbols

    def call_empty(self, node: ast.Call):
        if self.in_kernel:
            raise self.error(node, "T.empty allocates an output tensor before T.Kernel")
        args = self.arguments_of(node, ("shape", "dtype"), 1, what="T.empty")
        shape = self.static_shape(node, self.eval(args["shape"]), "T.empty's shape")
        dtype = self.to_dtype(node, self.eval(args["dtype"])) if "dtype" in args else to_dtype("float32")
        name = f"output{sum(p.output for p in self.params)}"
        return self.tensor_argument(node, name, shape, dtype, output=True)

    def call_alloc_global(self, node: ast.Call):
        """`T.alloc_global(shape, dtype)` before the kernels: a workspace in
        global memory the function's kernels share (split-KV's partial
        results for its combine kernel). It becomes a parameter of the built
        function that each call allocates (zeros; the GPU: uninitialised) and
        drops; `out_idx` does not count it."""
        if self.in_kernel:
            raise self.error(node, "T.alloc_global allocates a workspace before the kernels, outside T.Kernel")
        args = self.arguments_of(node, ("shape", "dtype", "scope"), 2, what="T.alloc_global")
        shape = self.static_shape(node, self.eval(args["shape"]), "T.alloc_global's shape")
        dtype = self.to_dtype(node, self.eval(args["dtype"]))
        name = f"workspace{sum(p.workspace for p in self.params)}"
        return self.tensor_argument(node, name, shape, dtype, workspace=True)

    def alloc(self, node: ast.Call, scope: str) -> Buffer:
        what = f"T.alloc_{scope}"
        args = self.arguments_of(node, ("shape", "dtype", "scope"), 2, what=what)
        if "scope" in args and self.eval(args["scope"]) == "local" and \
                math.prod(self.static_shape(node, self.eval(args["shape"]), f"{what}'s shape")) == 1:
            return self.call_alloc_local(node)  # T.alloc_fragment((1,), t, "local"): a scalar
        shape = self.static_shape(node, self.eval(args["shape"]), f"{what}'s shape")
        dtype = self.to_dtype(node, self.eval(args["dtype"]))
        if not self.in_kernel:
            raise self.error(node, f"{what} belongs inside the kernel (under T.Kernel)")
        if self.parallel_depth:
            raise self.error(node, f"{what} in a T.Parallel: allocate buffers outside it")
        if not dtype.tile_buffer:
            raise self.error(node, f"{what}: {dtype} is not an element type of tile buffers")
        element = ir.Type.parse(dtype.storage)
        with self.block_buffer_insertion():
            if scope == SHARED:
                value = tile.alloc_shared(tile.shared_memref_type(shape, element))
            else:
                value = tile.alloc_fragment(tile.fragment_memref_type(shape, element))
        return Buffer(value, shape, dtype, scope, what, provisional=True)

    def block_buffer_insertion(self):
        """Where the block's buffers are made: in place at the kernel's top
        level; at the kernel's start for one written in a loop or branch
        (TileLang allows it; it holds nothing on entry anyway); before the
        per-thread region for one written in per-thread code."""
        if self.region_depth:
            return ir.InsertionPoint.at_block_begin(self.kernel_op.regions[0].blocks[0])
        if self.thread_region is not None:
            return ir.InsertionPoint(self.thread_region.op)
        return contextlib.nullcontext()

    def call_alloc_shared(self, node: ast.Call):
        return self.alloc(node, SHARED)

    def call_alloc_fragment(self, node: ast.Call):
        return self.alloc(node, FRAGMENT)

    def call_alloc_local(self, node: ast.Call):
        """`T.alloc_local([1], dtype)` (TileLang's per-thread scalar, which
        every thread computes alike in block-level code): a T.alloc_var,
        indexed `[0]`, starting at 0. Larger local arrays hold per-thread data, which a
        kernel written per tile keeps in fragments."""
        args = self.arguments_of(node, ("shape", "dtype", "scope"), 2, what="T.alloc_local")
        shape = self.static_shape(node, self.eval(args["shape"]), "T.alloc_local's shape")
        dtype = self.to_dtype(node, self.eval(args["dtype"]))
        if math.prod(shape) != 1 and self.thread_region is not None and not self.region_depth:
            return self.local_array(node, shape, dtype)
        if math.prod(shape) != 1:
            raise self.error(node, f"T.alloc_local of {math.prod(shape)} elements (storage private to each "
                                   f"thread) is built in per-thread code (a kernel that calls "
                                   f"T.get_thread_binding), at the kernel's level; in a kernel written per "
                                   f"tile use T.alloc_fragment (a tile spread over the block's threads)")
        self.kernel_only(node, "T.alloc_local")
        var = Var("T.alloc_local", dtype, depth=self.parallel_depth)
        var.value = self.to_value(node, 0, dtype)  # TileLang leaves it undefined; a loop may carry it
        return var

    def local_array(self, node: ast.Call, shape: tuple[int, ...], dtype: DType) -> Buffer:
        """`T.alloc_local(shape, dtype)` in per-thread code: an array each
        thread has for itself (a memref.alloca in private memory, in the
        thread's iteration of its per-thread region), undefined until written."""
        if not dtype.tile_buffer:
            raise self.error(node, f"T.alloc_local: {dtype} is not an element type of tile buffers")
        element = ir.Type.parse(dtype.storage)
        memref_type = ir.MemRefType.get(list(shape), element, memory_space=ir.Attribute.parse(
            "#gpu.address_space<private>"))
        return Buffer(memref.AllocaOp(memref_type, [], []).result, shape, dtype, LOCAL, "T.alloc_local",
                      provisional=True)

    def fill_local(self, node: ast.Call, buffer: Buffer, value) -> None:
        """T.fill / T.clear of a per-thread array: each thread stores every element."""
        stored = self.to_storage(node, value, buffer.dtype)
        for point in np.ndindex(*buffer.shape):
            memref.StoreOp(stored.value, buffer.value, [self.index(i) for i in point])

    def call_get_thread_binding(self, node: ast.Call):
        """`T.get_thread_binding(dim=0)`: the thread's index along x, y or z."""
        dim = self.binding_dim(node, "T.get_thread_binding", "threads")
        self.kernel_only(node, "T.get_thread_binding")
        index = ThreadIndex(dim)
        return self.thread_index(node, index) if self.thread_region is not None else index

    def call_get_thread_bindings(self, node: ast.Call):
        """`T.get_thread_bindings()`: the thread's (x, y, z) indices."""
        self.arguments_of(node, (), 0, what="T.get_thread_bindings")
        self.kernel_only(node, "T.get_thread_bindings")
        indices = [ThreadIndex(dim) for dim in range(3)]
        if self.thread_region is not None:
            return [self.thread_index(node, index) for index in indices]
        return indices

    def call_device_assert(self, node: ast.Call):
        """`T.device_assert(cond, msg="")`: as `assert cond, msg` on a runtime
        value; a compile-time false condition is an error here."""
        args = self.arguments_of(node, ("condition", "msg"), 1, what="T.device_assert")
        condition = self.eval(args["condition"])
        if _compile_time(condition):
            if condition:
                return
            if not self.region_depth:  # reached whenever the kernel runs
                raise self.error(node, "T.device_assert: the condition is false")
            condition = Scalar(self.constant(0, _i1()))  # false where reached: under a branch, an `unreachable`
        self.device_assert(node, condition, args.get("msg"))

    def device_assert(self, node: ast.AST, condition, message_node: ast.expr | None) -> None:
        """A check on the device (`cf.assert`): the reference engine and the
        emulator stop with the user's line where a thread finds it false; the
        GPU traps (llvm.intr.trap: the launch fails)."""
        self.kernel_only(node, "assert on a runtime value")
        message = "assertion failed"
        if message_node is not None:
            try:
                text = self.eval(message_node)
            except TileLangError:  # an f-string of runtime values, say: its source
                text = ast.unparse(message_node)
            if not _compile_time(text):  # a runtime value: the message names it as written
                text = ast.unparse(message_node)
            message = f"assertion failed: {text}" if text else message
        cf.AssertOp(self.to_bool(node, condition).value, message)

    def call_get_block_binding(self, node: ast.Call):
        """`T.get_block_binding(dim=0)`: the block's index along x, y or z (0
        along a dim the grid does not have)."""
        return self.block_index(node, self.binding_dim(node, "T.get_block_binding", "blocks"))

    def binding_dim(self, node: ast.Call, what: str, whose: str) -> int:
        """The `dim` (0 when not given) of T.get_thread_binding / T.get_block_binding."""
        args = self.arguments_of(node, ("dim",), 0, what=what)
        dim = self.static_int(node, self.eval(args["dim"]), f"{what}'s dim", allow_zero=True) if "dim" in args else 0
        if dim > 2:
            raise self.error(node, f"{what}({dim}): {whose} have dims 0 (x), 1 (y) and 2 (z)")
        return dim

    def call_get_block_bindings(self, node: ast.Call):
        """`T.get_block_bindings()`: the block's (x, y, z) indices."""
        self.arguments_of(node, (), 0, what="T.get_block_bindings")
        return [self.block_index(node, dim) for dim in range(3)]

    def block_index(self, node: ast.Call, dim: int) -> Scalar:
        self.kernel_only(node, "T.get_block_binding")
        arguments = list(self.kernel_op.regions[0].blocks[0].arguments)
        if dim >= len(arguments):
            return Scalar(self.index(0), Affine.of({}, 0))
        return Scalar(arguments[dim], Affine.of({BLOCK_NAMES[dim]: 1}, 0))

    def call_shfl_xor(self, node: ast.Call):
        return self.shuffle(node, "shfl_xor", gpu.ShuffleMode.XOR)

    def call_shfl_down(self, node: ast.Call):
        return self.shuffle(node, "shfl_down", gpu.ShuffleMode.DOWN)

    def call_shfl_up(self, node: ast.Call):
        return self.shuffle(node, "shfl_up", gpu.ShuffleMode.UP)

    def call_shfl_sync(self, node: ast.Call):
        return self.shuffle(node, "shfl_sync", gpu.ShuffleMode.IDX)

    def shuffle(self, node: ast.Call, name: str, mode) -> Scalar:
        """`T.shfl_xor(v, mask)`, `T.shfl_down(v, delta)`, `T.shfl_up(v, delta)`,
        `T.shfl_sync(v, lane)` in per-thread code: `v` as another lane of the
        thread's warp of 32 holds it (CUDA's `__shfl_*_sync` over all 32
        lanes; on AMD's 64-lane waves each half is such a warp): lane ^ mask,
        lane + delta, lane - delta, or `lane` (mod 32); a lane whose source
        falls outside its warp keeps its own value. A `gpu.shuffle` of width
        32 per 32-bit word of `v`."""
        what = f"T.{name}"
        second = "src_lane" if name == "shfl_sync" else ("lane_mask" if name == "shfl_xor" else "delta")
        args = self.arguments_of(node, ("value", second, "width", "mask"), 2, what=what)
        if self.thread_region is None or self.parallel_depth:
            raise self.error(node, f"{what} exchanges values between the threads of a warp: it belongs in "
                                   f"per-thread code (a kernel that calls T.get_thread_binding), outside tile "
                                   f"ops and T.Parallel; in tile code use T.reduce_sum / T.reduce_max")
        if "width" in args and self.eval(args["width"]) != WARP_LANES:
            raise self.error(args["width"], f"{what}: shuffles run over warps of {WARP_LANES} lanes")
        value = self.scalar(node, self.eval(args["value"]))
        if isinstance(value.type, ir.IndexType):  # moved as the i64 it holds
            i64 = ir.IntegerType.get_signless(64)
            moved = self.shuffled(node, what, Scalar(arith.IndexCastOp(i64, value.value).result), second, args,
                                  mode)
            return Scalar(arith.IndexCastOp(ir.IndexType.get(), moved.value).result)
        return self.shuffled(node, what, value, second, args, mode)

    def shuffled(self, node: ast.Call, what: str, value: Scalar, second: str, args: dict, mode) -> Scalar:
        if bit_width(value.type) > 64:
            raise self.error(node, f"{what} of {value.type}: values of up to 64 bits move between lanes")
        i32 = ir.IntegerType.get_signless(32)
        offset = self.convert(node, self.eval(args[second]), i32).value
        if mode == gpu.ShuffleMode.IDX:  # CUDA takes the source lane modulo the width
            offset = arith.AndIOp(offset, self.constant(WARP_LANES - 1, i32)).result
        elif mode in (gpu.ShuffleMode.UP, gpu.ShuffleMode.DOWN):  # CUDA's delta is unsigned: a negative
            negative = arith.CmpIOp(arith.CmpIPredicate.slt, offset, self.constant(0, i32)).result  # one is far
            offset = arith.SelectOp(negative, self.constant(WARP_LANES, i32), offset).result
        width = self.constant(WARP_LANES, i32)

        def move(word: ir.Value) -> ir.Value:
            moved, valid = gpu.ShuffleOp(word, offset, width, mode).results
            return arith.SelectOp(valid, moved, word).result

        return Scalar(moved_by_words(value.value, move), unsigned=value.unsigned)

    def call_any_sync(self, node: ast.Call):
        return self.vote(node, "any_sync")

    def call_all_sync(self, node: ast.Call):
        return self.vote(node, "all_sync")

    def call_ballot_sync(self, node: ast.Call):
        return self.vote(node, "ballot_sync")

    def vote(self, node: ast.Call, name: str) -> Scalar:
        """`T.any_sync(p)`, `T.all_sync(p)` (int32 1 or 0) and
        `T.ballot_sync(p)` (a uint32, bit i set where lane i's p holds) over
        the thread's warp of 32 lanes, every lane taking part (the full
        mask): an or/and of the predicates by xor shuffles (T.shfl_xor)."""
        what = f"T.{name}"
        args = self.arguments_of(node, ("predicate", "mask"), 1, what=what)
        if "mask" in args and self.eval(args["mask"]) not in (0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, -1):
            raise self.error(args["mask"], f"{what}: only the full mask (every lane of the warp) is supported")
        if self.thread_region is None or self.parallel_depth:
            raise self.error(node, f"{what} votes across the threads of a warp: it belongs in per-thread code "
                                   f"(a kernel that calls T.get_thread_binding), outside tile ops and T.Parallel")
        i32 = ir.IntegerType.get_signless(32)
        bit = arith.ExtUIOp(i32, self.to_bool(node, self.eval(args["predicate"])).value).result
        if name == "ballot_sync":
            lane = arith.IndexCastOp(i32, self.warp_lane()).result
            bit = arith.ShLIOp(bit, lane).result
        combine = arith.AndIOp if name == "all_sync" else arith.OrIOp
        width = self.constant(WARP_LANES, i32)
        offset = WARP_LANES // 2
        while offset:
            moved = gpu.ShuffleOp(bit, self.constant(offset, i32), width, gpu.ShuffleMode.XOR).results[0]
            bit = combine(bit, moved).result
            offset //= 2
        if name == "ballot_sync":
            return self.as_unsigned(node, Scalar(bit))
        return Scalar(bit)

    def warp_lane(self) -> ir.Value:
        """The thread's lane in its warp of 32: its linear index (x fastest) mod 32."""
        linear, stride = self.index(0), 1
        for index, extent in zip(self.thread_region.indices, self.thread_dims):
            if index is not None:
                scaled = arith.MulIOp(index, self.index(stride)).result if stride > 1 else index
                linear = arith.AddIOp(linear, scaled).result
            stride *= extent
        return arith.RemUIOp(linear, self.index(WARP_LANES)).result

    def call_sync_threads(self, node: ast.Call):
        """`T.sync_threads()`: a workgroup barrier. In per-thread code it must
        be reached by every thread (not under a condition on a thread index);
        elsewhere the compiler orders shared memory itself and it is kept."""
        self.arguments_of(node, ("barrier_id", "arrive_count"), 0, what="T.sync_threads")
        self.kernel_only(node, "T.sync_threads")
        if self.parallel_depth:
            raise self.error(node, "T.sync_threads in a T.Parallel: the barrier goes between loops")
        gpu.BarrierOp()

    # ---- T.alloc_reducer ------------------------------------------------------

    def call_alloc_reducer(self, node: ast.Call):
        """`T.alloc_reducer(shape, dtype, op="sum", replication=...)`: a fragment
        that T.Parallel loops update as `R[i] += v` (sum) or
        `R[i] = T.max(R[i], v)` / `T.min` (max, min), every iteration
        counting, and that is read after `T.finalize_reducer(R)`. Each loop's
        values go into a fragment of the loop's shape (the reduction's
        identity where an iteration makes none), which tile.reduce combines
        into R after the loop; `replication` (how TileLang spreads the
        partial results over threads) does not change the result."""
        args = self.arguments_of(node, ("shape", "dtype", "op", "replication"), 2, what="T.alloc_reducer")
        shape = self.eval(args["shape"])
        shape = self.static_shape(node, (shape,) if isinstance(shape, int) else shape, "T.alloc_reducer's shape")
        dtype = self.to_dtype(node, self.eval(args["dtype"]))
        kind = self.eval(args["op"]) if "op" in args else "sum"
        if kind not in _REDUCER_FORMS:
            raise self.error(node, f"T.alloc_reducer: op is 'sum', 'max' or 'min', got {kind!r}")
        if "replication" in args and self.eval(args["replication"]) not in ("all", "none"):
            raise self.error(node, "T.alloc_reducer: replication is 'all' or 'none'")
        if not self.in_kernel or self.parallel_depth:
            raise self.error(node, "T.alloc_reducer belongs inside the kernel (under T.Kernel), outside T.Parallel")
        if not (dtype.is_float or dtype.mlir in ("i32", "i64")) or dtype.is_converted:
            raise self.error(node, f"T.alloc_reducer of {dtype}: a float or int32/int64 reducer")
        with self.block_buffer_insertion():
            value = tile.alloc_fragment(tile.fragment_memref_type(shape, ir.Type.parse(dtype.storage)))
        return Buffer(value, shape, dtype, FRAGMENT, "T.alloc_reducer", provisional=True, reducer=kind)

    def call_finalize_reducer(self, node: ast.Call):
        """`T.finalize_reducer(R)`: R holds every update already (each loop's
        are combined after it); with a second buffer, R is copied into it."""
        args = self.arguments_of(node, ("reducer", "dst"), 1, what="T.finalize_reducer")
        reducer = self.buffer_arg(args["reducer"], "T.finalize_reducer")
        if reducer.reducer is None:
            raise self.error(node, f"T.finalize_reducer of '{reducer.name}', which is not a T.alloc_reducer")
        if "dst" in args:
            tile.copy(reducer.value, self.buffer_arg(args["dst"], "T.finalize_reducer").value)

    def reducer_target(self, target: ast.expr) -> Buffer | None:
        """The reducer `target` (`R[i]`) updates in a T.Parallel, else None."""
        if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)):
            return None
        try:
            base = self.lookup(target.value.id, target.value)
        except TileLangError:
            return None
        return base if isinstance(base, Buffer) and base.reducer is not None else None

    def reducer_assign(self, node: ast.Assign, target: ast.Subscript, value: ast.expr) -> None:
        """`R[i] = T.max(R[i], v)` (either order), `T.min`, or `R[i] = R[i] + v`."""
        reducer = self.reducer_target(target)
        same = ast.dump(ast.Subscript(target.value, target.slice, ast.Load()))
        other = None
        if isinstance(value, ast.Call) and len(value.args) == 2 and not value.keywords:
            callee = self.static_or_none(value.func)
            kind = {api.INTRINSICS.get("max"): "max", api.INTRINSICS.get("min"): "min",
                    builtins.max: "max", builtins.min: "min"}.get(callee)
            dumps = [ast.dump(a) for a in value.args]
            if kind == reducer.reducer and same in dumps:
                other = value.args[1 - dumps.index(same)]
        elif isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and reducer.reducer == "sum":
            dumps = [ast.dump(value.left), ast.dump(value.right)]
            if same in dumps:
                other = (value.left, value.right)[1 - dumps.index(same)]
        if other is None:
            raise self.error(node, f"a {reducer.reducer} reducer is updated as {_REDUCER_FORMS[reducer.reducer]}")
        self.reducer_update(node, reducer, target, other)

    def reducer_update(self, node: ast.AST, reducer: Buffer, target: ast.Subscript, value_node: ast.expr) -> None:
        """One update `R[idx] op= v` in a T.Parallel: v goes into the loop's
        partial fragment at the iteration's indices; the loop's dims R is not
        indexed by are reduced after the loop (parallel_loop)."""
        body = self.parallel_body
        if body is None or self.parallel_depth != 1:
            raise self.error(node, f"'{reducer.name}' (T.alloc_reducer) is updated in a T.Parallel; elsewhere "
                                   f"write it as a fragment after T.finalize_reducer")
        if id(reducer) in body.updates:
            raise self.error(node, f"'{reducer.name}' (T.alloc_reducer) is updated once per T.Parallel "
                                   f"(add the values first)")
        items = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        if len(items) != len(reducer.shape):
            raise self.error(target, f"'{reducer.name}' has {len(reducer.shape)} dims, indexed with {len(items)}")
        kept = []
        for item, extent in zip(items, reducer.shape):
            index = self.eval(item)
            position = next((p for p, iv in enumerate(body.ivs) if isinstance(index, Scalar)
                             and index.value == iv), None)
            if position is not None and body.extents[position] == extent:
                kept.append(position)
            elif not (_compile_time(index) and index == 0 and extent == 1):
                raise self.error(item, f"a reducer is indexed by the T.Parallel's own variables over their whole "
                                       f"extent (or 0 along a unit dim): '{reducer.name}' along this dim is not")
        if kept != sorted(set(kept)):
            raise self.error(target, "a reducer's indices are the T.Parallel's variables in their loop order")
        value = self.to_storage(node, self.eval(value_node), reducer.dtype)
        element = ir.Type.parse(reducer.dtype.storage)
        if tuple(reducer.shape) == tuple(body.extents) and kept == list(range(len(kept))):
            # One iteration per element of R, indexed as the loop runs: each
            # combines its value with its own element.
            old = memref.LoadOp(reducer.value, body.ivs).result
            combined = _REDUCER_COMBINE[reducer.reducer, _is_float(element)](old, value.value).result
            memref.StoreOp(combined, reducer.value, body.ivs)
            body.updates[id(reducer)] = (reducer, None, kept)
            return
        # One iteration per element of R (with unit dims): a trailing unit dim
        # to reduce, so that the values still combine with what R holds.
        shape, indices = list(body.extents), list(body.ivs)
        if len(kept) == len(shape):
            shape, indices = [*shape, 1], [*indices, self.index(0)]
        with ir.InsertionPoint.at_block_begin(self.kernel_op.regions[0].blocks[0]), self.loc(node):
            partial = tile.alloc_fragment(tile.fragment_memref_type(shape, element))
        with ir.InsertionPoint(body.op), self.loc(node):  # every element starts at the identity
            tile.fill(partial, self.constant(_reducer_identity(reducer.reducer, reducer.dtype), element))
        memref.StoreOp(value.value, partial, indices)
        body.updates[id(reducer)] = (reducer, Buffer(partial, tuple(shape), reducer.dtype, FRAGMENT, "partial"),
                                     kept)

    def reduce_partials(self, node: ast.AST, reducer: Buffer, partial: Buffer, kept: list[int]) -> None:
        """After a T.Parallel: its partial values combined into the reducer,
        one tile.reduce per dim the reducer is not indexed by (innermost
        first), the last one keeping what the reducer held."""
        current, positions = partial, list(range(len(partial.shape)))
        element = ir.Type.parse(reducer.dtype.storage)
        dropped = [p for p in positions if p not in kept]
        for count, position in enumerate(reversed(dropped)):
            dim = positions.index(position)
            positions.pop(dim)
            if count == len(dropped) - 1:
                self.emit_reduce(node, current, reducer, reducer.reducer, dim, False)
                return
            shape = tuple(e for d, e in enumerate(current.shape) if d != dim)
            with ir.InsertionPoint.at_block_begin(self.kernel_op.regions[0].blocks[0]), self.loc(node):
                value = tile.alloc_fragment(tile.fragment_memref_type(shape, element))
            step = Buffer(value, shape, reducer.dtype, FRAGMENT, "partial")
            self.emit_reduce(node, current, step, reducer.reducer, dim, True)
            current = step

    def call_annotate_layout(self, node: ast.Call):
        """`T.annotate_layout({buffer: layout, ...})`: accepted and not
        followed (the layouts are not even evaluated): tilemlir lays out
        shared buffers by its bank model and fragments by tile-infer-layout,
        which the program's results do not depend on. One note says so."""
        self.kernel_only(node, "T.annotate_layout")
        args = self.arguments_of(node, ("layout_map",), 1, what="T.annotate_layout")
        mapping = args["layout_map"]
        if not isinstance(mapping, ast.Dict) or any(key is None for key in mapping.keys):
            raise self.error(node, "T.annotate_layout takes a dict literal {buffer: layout, ...}")
        for key in mapping.keys:
            if self.var_named(key) is None and not isinstance(self.eval(key), Buffer):
                raise self.error(key, "T.annotate_layout's keys are buffers")
        note = ("T.annotate_layout is accepted and not followed: tilemlir lays out shared memory by its bank "
                "model and fragments by tile-infer-layout")
        if note not in self.notes:
            self.notes.append(note)

    def call_alloc_var(self, node: ast.Call):
        args = self.arguments_of(node, ("dtype", "init", "scope"), 1, what="T.alloc_var")
        dtype = self.to_dtype(node, self.eval(args["dtype"]))
        if not self.in_kernel:
            raise self.error(node, "T.alloc_var belongs inside the kernel (under T.Kernel)")
        var = Var("T.alloc_var", dtype, depth=self.parallel_depth)
        if "init" in args:
            var.value = self.to_value(node, self.eval(args["init"]), dtype)
        return var

    def arithmetic_buffers(self, node, what: str, *buffers: Buffer) -> None:
        """Refuses bool, uint8 and uint32 buffers where a tile op would
        compute on their contents as signed integers."""
        for buffer in buffers:
            if buffer.dtype.is_converted:
                raise self.error(node, f"{what} of a {buffer.dtype} buffer is not supported: copy it into a "
                                       f"buffer of a number type in a T.Parallel loop first")

    def buffer_arg(self, node: ast.expr, what: str) -> Buffer:
        value = self.eval(node)
        if isinstance(value, Region) and self.whole(value):
            value = value.buffer
        if not isinstance(value, Buffer):
            raise self.error(node, f"{what} takes a whole buffer here")
        return value

    def whole(self, region: Region) -> bool:
        return all(extent == size and start == 0 for start, extent, size in
                   zip(region.starts, region.extents, region.buffer.shape))

    def kernel_only(self, node, what: str) -> None:
        if not self.in_kernel:
            raise self.error(node, f"{what} belongs inside the kernel (under T.Kernel)")

    def call_fill(self, node: ast.Call):
        self.kernel_only(node, "T.fill")
        args = self.arguments_of(node, ("buffer", "value"), 2, what="T.fill")
        var = self.var_named(args["buffer"])
        if var is not None:  # a T.alloc_local([1], ...)
            self.assign_var(var, self.eval(args["value"]), node)
            return
        buffer = self.buffer_arg(args["buffer"], "T.fill")
        if buffer.scope == LOCAL:
            self.fill_local(node, buffer, self.eval(args["value"]))
            return
        value = self.to_storage(node, self.eval(args["value"]), buffer.dtype)
        tile.fill(buffer.value, value.value)

    def call_clear(self, node: ast.Call):
        self.kernel_only(node, "T.clear")
        args = self.arguments_of(node, ("buffer",), 1, what="T.clear")
        var = self.var_named(args["buffer"])
        if var is not None:  # a T.alloc_local([1], ...)
            self.assign_var(var, 0, node)
            return
        buffer = self.buffer_arg(args["buffer"], "T.clear")
        if buffer.scope == LOCAL:
            self.fill_local(node, buffer, 0)
            return
        tile.fill(buffer.value, self.constant(0, ir.Type.parse(buffer.dtype.storage)))

    def call_copy(self, node: ast.Call):
        self.kernel_only(node, "T.copy")
        args = self.arguments_of(node, ("src", "dst"), 2, what="T.copy",
                                 ignored=("coalesced_width", "disable_tma", "eviction_policy", "loop_layout"))
        src, dst = self.copy_operand(args["src"]), self.copy_operand(args["dst"])
        if isinstance(src, Region) and isinstance(dst, Region):
            raise self.error(node, "T.copy indexes one side; the other is copied whole (its shape is the window)")
        self.fragment_copy_whole(node, src, dst)
        src_type, dst_type = (x.buffer.dtype if isinstance(x, Region) else x.dtype for x in (src, dst))
        if src_type != dst_type and (src_type.is_converted or dst_type.is_converted) and src_type != "bool":
            raise self.error(node, f"T.copy from {src_type} to {dst_type}: a tile copy converts {src_type} as "
                                   f"a signed type; convert element by element in a T.Parallel loop")
        if isinstance(src, Buffer) and isinstance(dst, Buffer):
            tile.copy(src.value, dst.value)
            return
        region, window = (src, dst) if isinstance(src, Region) else (dst, src)
        starts = [self.index_value(node, region.buffer, d, s) for d, s in enumerate(region.starts)]
        window_dims = self.window_dims(node, region, window)
        op = tile.copy(src.value if isinstance(src, Buffer) else src.buffer.value,
                       dst.value if isinstance(dst, Buffer) else dst.buffer.value,
                       starts if region is src else [], starts if region is dst else [])
        rank = len(region.buffer.shape)
        if window_dims != tuple(range(rank - len(window.shape), rank)):
            attributes.WINDOW.write(op, window_dims)

    def fragment_copy_whole(self, node: ast.Call, src, dst) -> None:
        """A copy between two fragments moves all of one into the other, in
        row-major order: their shapes equal up to unit dims, at offset 0 (a
        part goes through a T.Parallel loop)."""
        buffers = [x.buffer if isinstance(x, Region) else x for x in (src, dst)]
        if not all(b.scope == FRAGMENT for b in buffers):
            return
        starts = [start for x in (src, dst) if isinstance(x, Region) for start in x.starts]
        at_zero = all((_compile_time(st) and st == 0) or (isinstance(st, Scalar) and st.affine is not None
                                                         and not st.affine.terms and st.affine.const == 0)
                      for st in starts)
        squeezed = [tuple(e for e in b.shape if e != 1) for b in buffers]
        if not at_zero or squeezed[0] != squeezed[1]:
            raise self.error(node, f"T.copy between fragments ({list(buffers[0].shape)} and "
                                   f"{list(buffers[1].shape)}) copies all of one into the other, at offset 0, "
                                   f"their shapes equal up to unit dims; copy a part in a T.Parallel loop")

    def call_atomic_add(self, node: ast.Call):
        return self.atomic(node, "add")

    def call_atomic_max(self, node: ast.Call):
        return self.atomic(node, "max")

    def call_atomic_min(self, node: ast.Call):
        return self.atomic(node, "min")

    def atomic(self, node: ast.Call, kind: str) -> None:
        """`T.atomic_add/max/min(dst, value)`. With `value` a buffer (a
        fragment or shared tile; add only): the tile added into the global
        region at dst, each element atomically (the split-K epilogue), a
        `tile.copy` marked `tile.atomic_add` (tile-verify: global destination,
        f32 or i32, no conversion). With `value` a scalar expression and dst
        one element of a global tensor: one `memref.atomic_rmw`, run once per
        iteration of a T.Parallel, or once per block outside one."""
        what = f"T.atomic_{kind}"
        self.kernel_only(node, what)
        args = self.arguments_of(node, ("dst", "value", "memory_order", "return_prev", "use_tma"), 2, what=what)
        if "memory_order" in args and self.eval(args["memory_order"]) not in (None, "relaxed"):
            raise self.error(args["memory_order"], f"{what} is relaxed (atomic, ordered with nothing); "
                                                   "other memory orders are not supported")
        if "return_prev" in args and self.eval(args["return_prev"]) is not False:
            raise self.error(args["return_prev"], f"{what}: return_prev is not supported (the old value "
                                                  f"is not returned)")
        refusal = f"{what} takes an element or a region of a tensor"
        dst = self.copy_operand(args["dst"], refusal)
        value_node = args["value"]
        value = self.tile_operand(value_node)
        if value is not None:
            self.atomic_tile(node, kind, dst, value)
            return
        if not isinstance(dst, Region) or any(e is not None for e in dst.extents):
            raise self.error(node, f"{what} of a scalar value updates one element: index every dim of dst")
        buffer = dst.buffer
        if buffer.scope not in (GLOBAL, SHARED):
            raise self.error(node, f"{what} updates global or shared memory; {buffer.name} is a {buffer.scope} "
                                   f"buffer, private to each thread (add to it with +=)")
        self.arithmetic_buffers(node, what, buffer)
        element = ir.Type.parse(buffer.dtype.storage)
        allowed = attributes.ATOMIC_ELEMENT_TYPES[kind]
        if str(element) not in allowed:
            names = [to_dtype(name).name for name in allowed]
            raise self.error(node, f"{what} on {buffer.dtype}: element-wise atomic {kind} is built for "
                                   f"{', '.join(names[:-1])} and {names[-1]}")
        converted = self.convert(node, self.eval(value_node), element)
        rmw_kind = _ATOMIC_KINDS[kind, _is_float(element)]
        indices = [self.index_value(node, buffer, d, s) for d, s in enumerate(dst.starts)]
        memref.AtomicRMWOp(rmw_kind, converted.value, buffer.value, indices)

    def tile_operand(self, node: ast.expr):
        """A whole buffer (`acc`) or a slice of one (`S[0:16, :]`) that `node`
        names; None for anything else (an element, a variable, an expression:
        a scalar value)."""
        if isinstance(node, ast.Name) and not self.is_var(node):
            value = self.lookup(node.id, node)
            return value if isinstance(value, Buffer) else None
        if isinstance(node, ast.Subscript) and self.var_named(node) is None:
            base = self.eval(node.value)
            if isinstance(base, Buffer):
                region = self.region_of(node, base)
                return region if any(e is not None for e in region.extents) else None
        return None

    def atomic_tile(self, node: ast.Call, kind: str, dst, value) -> None:
        what = f"T.atomic_{kind}"
        if kind != "add" or not isinstance(value, Buffer):
            raise self.error(node, f"{what} of a tile: only T.atomic_add adds a whole buffer (a fragment or "
                                   f"shared tile) into a region of dst")
        self.arithmetic_buffers(node, what, value, dst if isinstance(dst, Buffer) else dst.buffer)
        if isinstance(dst, Buffer):
            op = tile.copy(value.value, dst.value)
        else:
            starts = [self.index_value(node, dst.buffer, d, s) for d, s in enumerate(dst.starts)]
            window_dims = self.window_dims(node, dst, value)
            op = tile.copy(value.value, dst.buffer.value, [], starts)
            rank = len(dst.buffer.shape)
            if window_dims != tuple(range(rank - len(value.shape), rank)):
                attributes.WINDOW.write(op, window_dims)
        attributes.ATOMIC_ADD.mark(op)

    def copy_operand(self, node: ast.expr, refusal: str = "T.copy copies buffers or buffer regions"):
        if isinstance(node, ast.Subscript):
            base = self.eval(node.value)
            if isinstance(base, Buffer):  # A[i, j]: the window's offset, not an element read
                region = self.region_of(node, base)
                return region.buffer if self.whole(region) else region
        value = self.eval(node)
        if not isinstance(value, Buffer):
            raise self.error(node, f"{refusal} (A[i, j], A[a:b, :])")
        return value

    def window_dims(self, node, region: Region, window: Buffer) -> tuple[int, ...]:
        """Which dims of the indexed side the window spans: the sliced ones when
        the copy reduces rank (`Q[b, rows, h, :]`), else the last ones."""
        rank, window_rank = len(region.buffer.shape), len(window.shape)
        if window_rank > rank:
            raise self.error(node, f"T.copy of a {window_rank}-D buffer through a {rank}-D region")
        sliced = tuple(d for d, e in enumerate(region.extents) if e is not None)
        if window_rank == rank or not sliced:
            dims = tuple(range(rank - window_rank, rank))
        elif len(sliced) == window_rank:
            dims = sliced
        else:
            raise self.error(node, f"T.copy: the region slices {len(sliced)} dims of '{region.buffer.name}', "
                                   f"the other side has {window_rank}")
        for dim, size in zip(dims, window.shape):
            extent = region.extents[dim]
            if extent is not None and extent != size:
                raise self.error(node, f"T.copy: the slice of '{region.buffer.name}' spans {extent} in dim {dim}, "
                                       f"the other side {size}")
        return dims

    def call_gemm(self, node: ast.Call):
        self.kernel_only(node, "T.gemm")
        args = self.arguments_of(
            node, ("A", "B", "C", "transpose_A", "transpose_B", "policy", "clear_accum", "k_pack", "wg_wait",
                   "accum_dtype"), 3, what="T.gemm")
        a, b, c = (self.buffer_arg(args[n], f"T.gemm's {n}") for n in ("A", "B", "C"))
        self.arithmetic_buffers(node, "T.gemm", a, b, c)
        flags = {n: self.eval(args[n]) if n in args else False for n in ("transpose_A", "transpose_B", "clear_accum")}
        for name, flag in flags.items():
            if not isinstance(flag, bool):
                raise self.error(node, f"T.gemm: {name} must be a compile-time bool")
        for name in ("policy", "k_pack", "wg_wait"):
            if name in args:
                self.eval(args[name])  # evaluated (a typo is an error); the compiler chooses
        if "accum_dtype" in args:
            accum = self.to_dtype(node, self.eval(args["accum_dtype"]))
            if accum != c.dtype:
                raise self.error(node, f"T.gemm accumulates in C's type ({c.dtype}), but accum_dtype={accum}: "
                                       f"allocate C as {accum}")
        self.gemm_types |= {a.dtype.mlir, b.dtype.mlir}
        if flags["clear_accum"]:
            tile.fill(c.value, self.constant(0, ir.Type.parse(c.dtype.mlir)))
        tile.gemm(a.value, b.value, c.value, accum_dtype=ir.Type.parse(c.dtype.mlir),
                  transpose_a=flags["transpose_A"], transpose_b=flags["transpose_B"])

    def reduce(self, node: ast.Call, kind: str):
        what = f"T.reduce_{kind}"
        self.kernel_only(node, what)
        args = self.arguments_of(node, ("buffer", "out", "dim", "clear"), 2, what=what)
        src, dst = self.buffer_arg(args["buffer"], what), self.buffer_arg(args["out"], what)
        self.arithmetic_buffers(node, what, src, dst)
        dim = self.eval(args["dim"]) if "dim" in args else -1
        clear = self.eval(args["clear"]) if "clear" in args else True
        if not isinstance(dim, int) or not -len(src.shape) <= dim < len(src.shape):
            raise self.error(node, f"{what}: dim must be a compile-time integer within the source's "
                                   f"{len(src.shape)} dims")
        if not isinstance(clear, bool):
            raise self.error(node, f"{what}: clear must be a compile-time bool")
        self.emit_reduce(node, src, dst, kind, dim % len(src.shape), clear)

    def emit_reduce(self, node: ast.AST, src: Buffer, dst: Buffer, kind: str, dim: int, clear: bool) -> None:
        """tile.reduce of `src` along `dim` into `dst`, whose shape may carry
        extra unit dims as TileLang writes them."""
        reduced = tuple(extent for d, extent in enumerate(src.shape) if d != dim)
        window = _unit_padded(reduced, dst.shape)
        if window is None or dst.scope != FRAGMENT:
            tile.reduce(src.value, dst.value, kind=kind, dim=dim, clear=clear)  # tile-verify judges the shapes
            return
        # TileLang's destinations with extra unit dims ((1,) for a 1-D source):
        # the reduction goes through a buffer of the reduced shape.
        with ir.InsertionPoint.at_block_begin(self.kernel_op.regions[0].blocks[0]), self.loc(node):
            element = ir.Type.parse(dst.dtype.storage)
            exact = tile.alloc_fragment(tile.fragment_memref_type(list(reduced), element))
        zeros = [self.index(0)] * len(dst.shape)
        if not clear:
            self.windowed_copy(dst.value, exact, zeros, [], window)
        tile.reduce(src.value, exact, kind=kind, dim=dim, clear=clear)
        self.windowed_copy(exact, dst.value, [], zeros, window)

    def windowed_copy(self, src: ir.Value, dst: ir.Value, src_indices, dst_indices, window: tuple[int, ...]):
        """tile.copy between a buffer and a window (dims `window`) of another
        one, indexed at the given starts."""
        op = tile.copy(src, dst, src_indices, dst_indices)
        rank = len(ir.MemRefType((src if src_indices else dst).type).shape)
        if window != tuple(range(rank - len(window), rank)):
            attributes.WINDOW.write(op, window)

    def call_reduce_max(self, node):
        return self.reduce(node, "max")

    def call_reduce_sum(self, node):
        return self.reduce(node, "sum")

    def call_reduce_min(self, node):
        return self.reduce(node, "min")

    def call_cumsum(self, node: ast.Call):
        """T.cumsum(src, dst=None, dim=0, reverse=False): inclusive prefix sums
        of a shared or global buffer of 1 or 2 dims along `dim` (into `dst`,
        else in place), as a program would write them: a T.Parallel over the
        other dim (one element for 1 dim; with fewer rows than threads, one
        thread per row), in it a serial loop carrying the sum (in the element
        type; f32 for 16- and 8-bit floats, rounded at each store). In place, the source is first copied into a shared
        buffer of its shape (the scan's reads then never race with its
        writes: a T.Parallel of fewer elements than threads has replicas)."""
        what = "T.cumsum"
        self.kernel_only(node, what)
        args = self.arguments_of(node, ("src", "dst", "dim", "reverse"), 1, what=what)
        src = self.buffer_arg(args["src"], what)
        dst = self.buffer_arg(args["dst"], what) if "dst" in args else src
        self.arithmetic_buffers(node, what, src, dst)
        dim = self.eval(args["dim"]) if "dim" in args else 0
        reverse = self.eval(args["reverse"]) if "reverse" in args else False
        for buffer in (src, dst):
            if buffer.scope not in (SHARED, GLOBAL):
                raise self.error(node, f"{what}: {buffer.name} is a {buffer.scope} buffer; prefix sums are "
                                       "built on shared and global buffers (T.copy a fragment into "
                                       "T.alloc_shared first)")
        if src.shape != dst.shape or len(src.shape) not in (1, 2):
            raise self.error(node, f"{what}: src and dst must have one shape of 1 or 2 dims, got "
                                   f"{list(src.shape)} and {list(dst.shape)}")
        if not isinstance(dim, int) or not -len(src.shape) <= dim < len(src.shape):
            raise self.error(node, f"{what}: dim must be a compile-time integer within the buffer's "
                                   f"{len(src.shape)} dims")
        if not isinstance(reverse, bool):
            raise self.error(node, f"{what}: reverse must be a compile-time bool")
        dim %= len(src.shape)
        extent = src.shape[dim]
        rows = 1 if len(src.shape) == 1 else src.shape[1 - dim]
        accumulate = "float32" if src.dtype.is_float and src.dtype.bits < 32 else src.dtype.name
        position = f"{extent - 1} - _k" if reverse else "_k"
        index = "_j" if len(src.shape) == 1 else ("_j, _i" if dim == 0 else "_i, _j")
        lines = []
        source = src
        if dst.value == src.value:
            with ir.InsertionPoint.at_block_begin(self.kernel_op.regions[0].blocks[0]), self.loc(node):
                element = ir.Type.parse(src.dtype.mlir)
                copy = tile.alloc_shared(tile.shared_memref_type(list(src.shape), element))
            source = Buffer(copy, src.shape, src.dtype, SHARED, f"{src.name} (T.cumsum's copy)")
            names = ", ".join(f"_c{d}" for d in range(len(src.shape)))
            lines += [f"for {names} in _Parallel({', '.join(str(e) for e in src.shape)}):",
                      f"    _copy[{names}] = _src[{names}]"]
        threads = ir.IntegerAttr(self.kernel_op.attributes["threads"]).value
        scan = [f"_sum = _alloc_var({accumulate!r}, init=0)",
                f"for _k in _serial({extent}):",
                f"    _j = {position}",
                f"    _sum = _sum + _copy[{index}]",
                f"    _dst[{index}] = _sum"]
        if rows < threads and threads % rows == 0:
            # One thread per row: the other threads of the loop skip it.
            lines += [f"for _i, _t in _Parallel({rows}, {threads // rows}):", "    if _t == 0:"]
            lines += ["        " + line for line in scan]
        else:
            lines += [f"for _i in _Parallel({rows}):"] + ["    " + line for line in scan]
        body = ast.parse("\n".join(lines)).body
        for statement in body:
            for inner in ast.walk(statement):
                ast.copy_location(inner, node)
                if hasattr(inner, "end_lineno"):
                    inner.end_lineno, inner.end_col_offset = node.end_lineno, node.end_col_offset
        self.region(body, {"_Parallel": api.Parallel, "_serial": api.serial, "_alloc_var": api.alloc_var,
                           "_src": src, "_copy": source, "_dst": dst})

    def call_reduce_absmax(self, node):
        return self.reduce(node, "absmax")

    def call_reduce_abssum(self, node):
        return self.reduce(node, "abssum")

    def call_use_swizzle(self, node: ast.Call):
        for a in node.args:
            self.eval(a)
        for k in node.keywords:
            self.eval(k.value)
        # A block-order (L2 rasterization) hint: tilemlir launches blocks in grid order.

    def call_ceildiv(self, node: ast.Call):
        a, b = (self.eval(x) for x in node.args) if len(node.args) == 2 else (None, None)
        if a is None or node.keywords:
            raise self.error(node, "T.ceildiv takes two arguments")
        if _compile_time(a) and _compile_time(b):
            return api.ceildiv(a, b)
        x, y = self.promote(node, a, b)
        if _is_float(x.type):
            raise self.error(node, "T.ceildiv divides integers")
        return Scalar(arith.CeilDivSIOp(x.value, y.value).result, _affine_div(x, y))

    def two_args(self, node: ast.Call, what: str):
        if len(node.args) != 2 or node.keywords:
            raise self.error(node, f"{what} takes two arguments")
        return self.eval(node.args[0]), self.eval(node.args[1])

    def extremum(self, node: ast.Call, which: str):
        """T.min / T.max: of Python numbers, the number; on floats a NaN
        operand loses to a number (arith.minnumf / maxnumf: CUDA's and HIP's
        fminf / fmaxf, what TileLang's T.min / T.max become), the same rule as
        T.reduce_min / T.reduce_max; integers compare signed."""
        a, b = self.two_args(node, f"T.{which}")
        return self.extremum_of(node, which, a, b)

    def extremum_of(self, node: ast.Call, which: str, a, b):
        if _compile_time(a) and _compile_time(b):
            return getattr(builtins, which)(a, b)
        unsigned = self.unsigned_operands(a, b)
        if unsigned:  # two values in [0, 2^32): the signed i64 extremum is the unsigned one
            a, b = self.as_unsigned(node, a), self.as_unsigned(node, b)
        x, y = self.promote(node, a, b)
        ops = {"min": (arith.MinNumFOp, arith.MinSIOp, arith.MinUIOp),
               "max": (arith.MaxNumFOp, arith.MaxSIOp, arith.MaxUIOp)}[which]
        # Of bools, True (1 as i1 unsigned, -1 signed) is the larger.
        kind = 0 if _is_float(x.type) else 2 if x.type == _i1() else 1
        return Scalar(ops[kind](x.value, y.value).result, unsigned=unsigned)

    def call_clamp(self, node: ast.Call):
        """T.clamp(x, lo, hi): T.max(T.min(x, hi), lo), as TileLang defines it."""
        if len(node.args) != 3 or node.keywords:
            raise self.error(node, "T.clamp takes a value, a lower and an upper bound")
        x, lo, hi = (self.eval(a) for a in node.args)
        return self.extremum_of(node, "max", self.extremum_of(node, "min", x, hi), lo)

    def float_operand(self, node: ast.Call, x) -> Scalar:
        """A runtime operand of a float function: integers convert to f32."""
        x = self.scalar(node, x)
        return x if _is_float(x.type) else self.convert(node, x, ir.F32Type.get())

    def call_sigmoid(self, node: ast.Call):
        """T.sigmoid(x) = 1 / (1 + exp(-x))."""
        x = self.one_arg(node, "T.sigmoid")
        if _compile_time(x):
            return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0
        x = self.float_operand(node, x)
        one = self.constant(1.0, x.type)
        exp = mathd.ExpOp(arith.NegFOp(x.value).result).result
        return Scalar(arith.DivFOp(one, arith.AddFOp(one, exp).result).result)

    def call_exp10(self, node: ast.Call):
        """T.exp10(x) = exp2(x * log2(10)) (the product's rounding grows the
        relative error with |x * log2(10)|, as CUDA's exp10f fast path)."""
        x = self.one_arg(node, "T.exp10")
        if _compile_time(x):
            return 10.0 ** x
        x = self.float_operand(node, x)
        scaled = arith.MulFOp(x.value, self.constant(LOG2_10, x.type)).result
        return Scalar(mathd.Exp2Op(scaled).result)

    def binary_float(self, node: ast.Call, name: str, python, build):
        a, b = self.two_args(node, f"T.{name}")
        if _compile_time(a) and _compile_time(b):
            return python(a, b)
        x, y = self.promote(node, a, b)
        if not _is_float(x.type):
            x, y = (self.convert(node, v, ir.F32Type.get()) for v in (x, y))
        return Scalar(build(x.value, y.value).result)

    def call_pow(self, node: ast.Call):
        """T.pow(x, y): x ** y in floats (math.powf, C's powf)."""
        return self.binary_float(node, "pow", lambda a, b: float(a) ** b, mathd.PowFOp)

    def call_fmod(self, node: ast.Call):
        """T.fmod(x, y): C's fmodf, the remainder with x's sign (arith.remf)."""
        return self.binary_float(node, "fmod", math.fmod, arith.RemFOp)

    def classify(self, node: ast.Call, name: str, python, predicate: str, against_infinity: bool):
        """T.isnan / T.isinf / T.isfinite: a bool of a float."""
        x = self.one_arg(node, f"T.{name}")
        if _compile_time(x):
            return python(x)
        x = self.float_operand(node, x)
        if not against_infinity:
            return Scalar(arith.CmpFOp(getattr(arith.CmpFPredicate, predicate), x.value, x.value).result)
        magnitude = mathd.AbsFOp(x.value).result
        return Scalar(arith.CmpFOp(getattr(arith.CmpFPredicate, predicate), magnitude,
                                   self.constant(math.inf, x.type)).result)

    def integers(self, node: ast.Call, name: str):
        """The two integer operands of T.floordiv and its kin, in one type."""
        a, b = self.two_args(node, f"T.{name}")
        if _compile_time(a) and _compile_time(b):
            return a, b
        if self.unsigned_operands(a, b):  # binary computes them as uint32
            return a, b
        x, y = self.promote(node, a, b)
        if _is_float(x.type) or _is_float(y.type):
            raise self.error(node, f"T.{name} takes integers")
        return x, y

    def integer_call(self, node: ast.Call, name: str, ast_op: ast.operator):
        """T.floordiv, T.bitwise_and, T.shift_left, ...: the operator's meaning."""
        a, b = self.integers(node, name)
        if _compile_time(a) and _compile_time(b):
            return getattr(api, name)(a, b)
        return self.binary(node, ast_op, a, b)

    def call_floordiv(self, node):
        return self.integer_call(node, "floordiv", ast.FloorDiv())

    def call_bitwise_and(self, node):
        return self.integer_call(node, "bitwise_and", ast.BitAnd())

    def call_bitwise_or(self, node):
        return self.integer_call(node, "bitwise_or", ast.BitOr())

    def call_bitwise_xor(self, node):
        return self.integer_call(node, "bitwise_xor", ast.BitXor())

    def call_shift_left(self, node):
        return self.integer_call(node, "shift_left", ast.LShift())

    def call_shift_right(self, node):
        """Arithmetic on signed integers, as TIR's shift_right."""
        return self.integer_call(node, "shift_right", ast.RShift())

    def call_bitwise_not(self, node):
        x = self.one_arg(node, "T.bitwise_not")
        if _compile_time(x):
            return api.bitwise_not(x)
        x = self.scalar(node, x)
        if _is_float(x.type):
            raise self.error(node, "T.bitwise_not takes an integer")
        if x.unsigned:
            return Scalar(arith.XOrIOp(x.value, self.constant(0xFFFFFFFF, _i64())).result, unsigned=True)
        return Scalar(arith.XOrIOp(x.value, self.constant(-1, x.type)).result)

    def call_truncdiv(self, node):
        """C's division: the quotient rounded toward zero."""
        return self.c_division(node, "truncdiv", arith.DivSIOp)

    def call_truncmod(self, node):
        """C's remainder: the sign of the dividend."""
        return self.c_division(node, "truncmod", arith.RemSIOp)

    def c_division(self, node: ast.Call, name: str, build):
        a, b = self.integers(node, name)
        if _compile_time(a) and _compile_time(b):
            return getattr(api, name)(a, b)
        return Scalar(build(a.value, b.value).result)

    def call_floormod(self, node):
        """Python's remainder: the sign of the divisor (C's remainder, plus the
        divisor where the two signs differ)."""
        a, b = self.integers(node, "floormod")
        if _compile_time(a) and _compile_time(b):
            return api.floormod(a, b)
        zero = self.constant(0, a.type)
        remainder = arith.RemSIOp(a.value, b.value).result
        nonzero = arith.CmpIOp(arith.CmpIPredicate.ne, remainder, zero).result
        signs = arith.XOrIOp(arith.CmpIOp(arith.CmpIPredicate.slt, remainder, zero).result,
                             arith.CmpIOp(arith.CmpIPredicate.slt, b.value, zero).result).result
        adjust = arith.SelectOp(arith.AndIOp(nonzero, signs).result, b.value, zero).result
        return Scalar(arith.AddIOp(remainder, adjust).result)

    def limit(self, node: ast.Call, name: str, largest: bool):
        """T.max_value(dtype) / T.min_value(dtype): a typed constant."""
        dtype = self.to_dtype(node, self.one_arg(node, f"T.{name}"))
        return getattr(api, name)(dtype)

    def call_max_value(self, node):
        return self.limit(node, "max_value", True)

    def call_min_value(self, node):
        return self.limit(node, "min_value", False)

    def call_isnan(self, node: ast.Call):
        return self.classify(node, "isnan", math.isnan, "UNO", False)

    def call_isinf(self, node: ast.Call):
        return self.classify(node, "isinf", math.isinf, "OEQ", True)

    def call_isfinite(self, node: ast.Call):
        return self.classify(node, "isfinite", math.isfinite, "OLT", True)

    def call_min(self, node: ast.Call):
        return self.extremum(node, "min")

    def call_max(self, node: ast.Call):
        return self.extremum(node, "max")

    def one_arg(self, node: ast.Call, what: str):
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, f"{what} takes one argument")
        return self.eval(node.args[0])

    def call_abs(self, node: ast.Call):
        x = self.one_arg(node, "T.abs")
        if _compile_time(x):
            return builtins.abs(x)
        x = self.scalar(node, x)
        return Scalar((mathd.AbsFOp if _is_float(x.type) else mathd.AbsIOp)(x.value).result)

    def unary_math(self, node: ast.Call, name: str):
        x = self.one_arg(node, f"T.{name}")
        if _compile_time(x):
            return _PY_MATH[name](x)
        x = self.scalar(node, x)
        if not _is_float(x.type):
            x = self.convert(node, x, ir.F32Type.get())
        return Scalar(getattr(mathd, _UNARY_MATH[name])(x.value).result)

    def call_infinity(self, node: ast.Call):
        dtype = self.to_dtype(node, self.one_arg(node, "T.infinity"))
        if not dtype.is_float:
            raise self.error(node, f"T.infinity of {dtype}: infinity is a float value")
        return Scalar(self.constant(math.inf, ir.Type.parse(dtype.mlir)))

    def call_cast(self, node: ast.Call):
        if len(node.args) != 2 or node.keywords:
            raise self.error(node, "T.cast takes a value and a dtype (T.Cast: a dtype and a value)")
        first, second = self.eval(node.args[0]), self.eval(node.args[1])
        value, dtype = (second, first) if _compile_time(first) and is_dtype(first) and not (
            _compile_time(second) and is_dtype(second)) and isinstance(first, (str, DType)) else (first, second)
        return self.to_value(node, value, self.to_dtype(node, dtype))

    def call_astype(self, node: ast.Call, value):
        """`x.astype(dtype)` of a runtime value: T.cast(x, dtype)."""
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, "astype takes one dtype")
        return self.to_value(node, value, self.to_dtype(node, self.eval(node.args[0])))

    def construct(self, node: ast.Call, dtype: DType):
        """`T.float32(x)`: of a number, a constant of that type (a typed
        constant, `DType.constant`); of a runtime value, a cast (`convert`)."""
        if len(node.args) != 1 or node.keywords:
            given = len(node.args) + len(node.keywords)
            raise self.error(node, f"T.{dtype.name}(value) takes one value, got {given} "
                                   f"argument{'s' * (given != 1)}")
        value = self.eval(node.args[0])
        if _compile_time(value):
            try:
                return dtype.constant(value)
            except UserError as error:
                raise self.error(node, str(error)) from None
        return self.to_value(node, value, dtype)

    def call_if_then_else(self, node: ast.Call):
        if len(node.args) != 3 or node.keywords:
            raise self.error(node, "T.if_then_else takes a condition and two values")
        condition = self.eval(node.args[0])
        if _compile_time(condition):
            return self.eval(node.args[1] if condition else node.args[2])
        return self.select(node, self.to_bool(node, condition), node.args[1], node.args[2])

    def call_im2col(self, node: ast.Call):
        """`T.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad)`:
        the im2col tile of an NHWC image into `col` ([block_M, block_K]): row m
        of the implicit matrix is output pixel (n, oh, ow), column k is (kh, kw,
        c) with k = (kh * kernel + kw) * C + c; taps in the padding read 0."""
        self.kernel_only(node, "T.im2col")
        args = self.arguments_of(node, ("img", "col", "nhw_step", "c_step", "kernel", "stride", "dilation",
                                        "pad"), 8, what="T.im2col")
        img, col = self.buffer_arg(args["img"], "T.im2col"), self.buffer_arg(args["col"], "T.im2col")
        self.arithmetic_buffers(node, "T.im2col", img, col)
        if img.scope != GLOBAL or len(img.shape) != 4 or len(col.shape) != 2:
            raise self.error(node, "T.im2col reads a 4-D NHWC tensor into a 2-D tile")
        kernel, stride, dilation, pad = (self.static_int(node, self.eval(args[n]), f"T.im2col's {n}",
                                                         allow_zero=(n == "pad"))
                                         for n in ("kernel", "stride", "dilation", "pad"))
        batch, height, width, channels = img.shape
        out_h = (height + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
        out_w = (width + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
        block_m, block_k = col.shape
        row0 = self.scalar(node, self.binary(node, ast.Mult(), self.eval(args["nhw_step"]), block_m))
        k0 = self.scalar(node, self.binary(node, ast.Mult(), self.eval(args["c_step"]), block_k))
        _, block = self.parallel_op([block_m, block_k])
        i, j = (Scalar(a) for a in block.arguments)
        with ir.InsertionPoint(block):
            m, k = self.binary(node, ast.Add(), row0, i), self.binary(node, ast.Add(), k0, j)
            n = self.binary(node, ast.FloorDiv(), m, out_h * out_w)
            hw = self.binary(node, ast.Mod(), m, out_h * out_w)
            oh, ow = self.binary(node, ast.FloorDiv(), hw, out_w), self.binary(node, ast.Mod(), hw, out_w)
            tap = self.binary(node, ast.FloorDiv(), k, channels)
            c = self.binary(node, ast.Mod(), k, channels)
            kh, kw = self.binary(node, ast.FloorDiv(), tap, kernel), self.binary(node, ast.Mod(), tap, kernel)

            def coordinate(out, tap_index):
                scaled = self.binary(node, ast.Mult(), out, stride)
                shifted = self.binary(node, ast.Add(), scaled, self.binary(node, ast.Mult(), tap_index, dilation))
                return self.binary(node, ast.Sub(), shifted, pad)

            ih, iw = coordinate(oh, kh), coordinate(ow, kw)
            checks = [self.compare(node, ast.Lt(), m, batch * out_h * out_w),
                      self.compare(node, ast.Lt(), k, kernel * kernel * channels),
                      self.compare(node, ast.GtE(), ih, 0), self.compare(node, ast.Lt(), ih, height),
                      self.compare(node, ast.GtE(), iw, 0), self.compare(node, ast.Lt(), iw, width)]
            inside = checks[0]
            for check in checks[1:]:
                inside = Scalar(arith.AndIOp(inside.value, check.value).result)
            element = ir.Type.parse(img.dtype.mlir)
            if_op = scf.IfOp(inside.value, [element], has_else=True)
            with ir.InsertionPoint(if_op.then_block):
                scf.YieldOp([memref.LoadOp(img.value, [n.value, ih.value, iw.value, c.value]).result])
            with ir.InsertionPoint(if_op.else_block):
                scf.YieldOp([self.constant(0, element)])
            value = self.convert(node, Scalar(if_op.results[0]), ir.Type.parse(col.dtype.mlir))
            memref.StoreOp(value.value, col.value, [i.value, j.value])
            ir.Operation.create("scf.reduce", results=[], operands=[], regions=0)

    # ---- scalars ----------------------------------------------------------
    def static_int(self, node, value, what: str, *, allow_zero: bool = False) -> int:
        value = _plain_int(self.resolve_sym(value, node))
        if isinstance(value, Scalar) and value.affine is not None and not value.affine.terms:
            value = value.affine.const
        if not isinstance(value, int) or isinstance(value, bool) or value < (0 if allow_zero else 1):
            raise self.error(node, f"{what} must be {'non-negative' if allow_zero else 'positive'} compile-time "
                                   f"integers, got {value!r}")
        return value

    def index(self, value: int) -> ir.Value:
        return arith.ConstantOp(ir.IndexType.get(), ir.IntegerAttr.get(ir.IndexType.get(), value)).result

    def as_index(self, node, value):
        """An index operand: a Python int stays one (folded later), a runtime
        integer becomes an index value."""
        value = _plain_int(self.resolve_sym(value, node))
        if isinstance(value, bool) or (_compile_time(value) and not isinstance(value, int)):
            raise self.error(node, f"an index must be an integer, got {value!r}")
        if isinstance(value, int):
            return value
        scalar = self.scalar(node, value)
        if _is_float(scalar.type):
            raise self.error(node, "an index must be an integer, not a float value")
        if not isinstance(scalar.type, ir.IndexType):
            return self.convert(node, scalar, ir.IndexType.get())  # a bool is 0 or 1
        return scalar

    def index_operand(self, node, value) -> ir.Value:
        """An index-typed ir.Value for a loop bound: a constant or a runtime integer."""
        index = self.as_index(node, value)
        return self.index(index) if isinstance(index, int) else index.value

    def constant(self, value, type_: ir.Type) -> ir.Value:
        if isinstance(type_, (ir.IndexType, ir.IntegerType)):
            return arith.ConstantOp(type_, ir.IntegerAttr.get(type_, int(value))).result
        return arith.ConstantOp(type_, ir.FloatAttr.get(type_, float(value))).result

    def scalar(self, node, value) -> Scalar:
        if isinstance(value, Scalar):
            return value
        typed = _typed_constant(value)
        if typed is not None:
            type_ = ir.Type.parse(typed.value)
            number = value.item() if not typed.is_float else float(value)
            affine = _literal_affine(number) if not typed.is_float and typed.value != "i1" else None
            return Scalar(self.constant(number, type_), affine)
        if isinstance(value, Var):
            return value.value
        if isinstance(value, bool):
            return Scalar(self.constant(int(value), _i1()))
        if isinstance(value, int):
            return Scalar(self.index(value), Affine.of({}, value))
        if isinstance(value, float):
            return Scalar(self.constant(value, ir.F32Type.get()))
        if isinstance(value, Region):
            raise self.error(node, f"a slice of '{value.buffer.name}' is not a value; index one element")
        if isinstance(value, Buffer):
            raise self.error(node, f"'{value.name}' is a buffer; index it to read an element")
        raise self.error(node, f"{value!r} is not a number")

    def widened_bool(self, value):
        """A runtime bool (i1) as the i32 0 or 1 (C's promotion); anything else
        as it is."""
        if isinstance(value, Var):
            value = value.value
        if isinstance(value, Scalar) and value.type == _i1():
            return Scalar(arith.ExtUIOp(ir.IntegerType.get_signless(32), value.value).result)
        return value

    def promote(self, node, a, b) -> tuple[Scalar, Scalar]:
        """Both operands in one type, TVM's rule: a Python number takes the other
        side's type, except that a Python float with an integer or index is an
        f32 (`1.0 * i`: i converted); a typed constant (`T.float16(0.5)`) keeps
        its type; floats win over integers (an index converts through i64); the
        wider float (f32 for f16 with bf16) and index over other integers."""
        if _compile_time(a) and not _compile_time(b) and _typed_constant(a) is None:
            b = self.scalar(node, b)
            a = Scalar(self.constant(a, _type_for_literal(a, b.type)), _literal_affine(a))
        elif _compile_time(b) and not _compile_time(a) and _typed_constant(b) is None:
            a = self.scalar(node, a)
            b = Scalar(self.constant(b, _type_for_literal(b, a.type)), _literal_affine(b))
        a, b = self.scalar(node, a), self.scalar(node, b)
        if a.type == b.type:
            return a, b
        common = _common_type(a.type, b.type)
        return self.convert(node, a, common), self.convert(node, b, common)

    def convert(self, node, value, to: ir.Type) -> Scalar:
        """`value` as type `to`: floats round to nearest even, floats to
        integers truncate toward zero, integers sign-extend; to a bool (i1),
        whether the value is not zero."""
        if _compile_time(value) and _typed_constant(value) is None:
            if isinstance(value, (DType, str)) or not isinstance(value, (int, float)):
                raise self.error(node, f"{value!r} is not a number")
            if to == _i1():
                return Scalar(self.constant(value != 0, to))
            if isinstance(to, ir.IntegerType) and isinstance(value, float) and not value.is_integer():
                raise self.error(node, f"{value} is not an integer")
            return Scalar(self.constant(value, to), _literal_affine(value) if isinstance(to, ir.IndexType) else None)
        scalar = self.scalar(node, value)
        source = scalar.type
        if source == to:
            return scalar
        if to == _i1():
            return self.to_bool(node, scalar)
        if _is_float(source) and _is_float(to):
            wider = _float_bits(to) > _float_bits(source)
            op = arith.ExtFOp if wider else arith.TruncFOp
            if _float_bits(to) == _float_bits(source):  # f16 <-> bf16: through f32
                return self.convert(node, self.convert(node, scalar, ir.F32Type.get()), to)
            return Scalar(op(to, scalar.value).result)
        if _is_float(to):
            integer = scalar
            if isinstance(source, ir.IndexType):
                integer = Scalar(arith.IndexCastOp(ir.IntegerType.get_signless(64), scalar.value).result)
            if integer.type.width == 1:
                return Scalar(arith.UIToFPOp(to, integer.value).result)
            return Scalar(arith.SIToFPOp(to, integer.value).result)
        if _is_float(source):
            if isinstance(to, ir.IndexType):
                wide = arith.FPToSIOp(ir.IntegerType.get_signless(64), scalar.value).result
                return Scalar(arith.IndexCastOp(to, wide).result)
            return Scalar(arith.FPToSIOp(to, scalar.value).result)
        if source == _i1():  # a bool is 0 or 1
            return Scalar(arith.IndexCastUIOp(to, scalar.value).result if isinstance(to, ir.IndexType)
                          else arith.ExtUIOp(to, scalar.value).result)
        if isinstance(source, ir.IndexType) or isinstance(to, ir.IndexType):
            return Scalar(arith.IndexCastOp(to, scalar.value).result, scalar.affine)
        width_from, width_to = source.width, to.width
        if width_to > width_from:
            op = arith.ExtUIOp if width_from == 1 else arith.ExtSIOp
            return Scalar(op(to, scalar.value).result)
        return Scalar(arith.TruncIOp(to, scalar.value).result)

    def to_bool(self, node, value) -> Scalar:
        scalar = self.scalar(node, value)
        if isinstance(scalar.type, ir.IntegerType) and scalar.type.width == 1:
            return scalar
        return self.compare(node, ast.NotEq(), scalar, 0)

    def binary(self, node, op: ast.operator, left, right):
        if _compile_time(left) and _compile_time(right):
            try:
                return _PY_BINOPS[type(op)](left, right)
            except Exception as error:  # noqa: BLE001 - the user's arithmetic says why
                raise self.error(node, f"{type(error).__name__}: {error}") from None
        if isinstance(op, ast.Pow):
            return self.power(node, left, right)
        if self.unsigned_operands(left, right):
            return self.unsigned_binary(node, op, left, right)
        logical = isinstance(op, ast.BitAnd | ast.BitOr | ast.BitXor)
        if not (logical and _is_bool(left) and _is_bool(right)):  # bools count as 0 and 1, as in C
            left, right = self.widened_bool(left), self.widened_bool(right)
        a, b = self.promote(node, left, right)
        is_float = _is_float(a.type)
        name = type(op).__name__
        float_ops = {"Add": arith.AddFOp, "Sub": arith.SubFOp, "Mult": arith.MulFOp, "Div": arith.DivFOp,
                     "Mod": arith.RemFOp}
        int_ops = {"Add": arith.AddIOp, "Sub": arith.SubIOp, "Mult": arith.MulIOp, "Div": arith.DivSIOp,
                   "FloorDiv": arith.FloorDivSIOp, "Mod": arith.RemSIOp, "BitAnd": arith.AndIOp,
                   "BitOr": arith.OrIOp, "BitXor": arith.XOrIOp, "LShift": arith.ShLIOp, "RShift": arith.ShRSIOp}
        table = float_ops if is_float else int_ops
        if name not in table:
            raise self.error(node, f"'{name}' on {'float' if is_float else 'integer'} values is not supported")
        result = Scalar(table[name](a.value, b.value).result)
        if not is_float and a.affine is not None and b.affine is not None:
            result.affine = _affine_binary(name, a.affine, b.affine)
        return result

    def unsigned_binary(self, node, op: ast.operator, left, right) -> Scalar:
        """uint32 arithmetic on the i64 values in [0, 2^32): both sides
        unsigned (a negative number wraps), the result of +, -, *, << kept to
        its low 32 bits; /, //, %, >>, &, |, ^ of two such values stay in
        range, and signed i64 ops give the unsigned results."""
        a, b = self.as_unsigned(node, left), self.as_unsigned(node, right)
        ops = {"Add": arith.AddIOp, "Sub": arith.SubIOp, "Mult": arith.MulIOp, "Div": arith.DivSIOp,
               "FloorDiv": arith.DivSIOp, "Mod": arith.RemSIOp, "BitAnd": arith.AndIOp, "BitOr": arith.OrIOp,
               "BitXor": arith.XOrIOp, "LShift": arith.ShLIOp, "RShift": arith.ShRSIOp}
        name = type(op).__name__
        if name not in ops:
            raise self.error(node, f"'{name}' on uint32 values is not supported")
        result = ops[name](a.value, b.value).result
        if name in ("Add", "Sub", "Mult", "LShift"):
            result = arith.AndIOp(result, self.constant(0xFFFFFFFF, _i64())).result
        return Scalar(result, unsigned=True)

    def power(self, node, base, exponent):
        if isinstance(exponent, int) and 0 < exponent <= 4:
            result = base
            for _ in range(exponent - 1):
                result = self.binary(node, ast.Mult(), result, base)
            return result
        a, b = self.promote(node, base, exponent)
        if not _is_float(a.type):
            raise self.error(node, "** on runtime integers is not supported")
        return Scalar(mathd.PowFOp(a.value, b.value).result)


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------

def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def _i1() -> ir.Type:
    return ir.IntegerType.get_signless(1)


def _is_float(type_: ir.Type) -> bool:
    return not (isinstance(type_, (ir.IndexType, ir.IntegerType)))


def _float_bits(type_: ir.Type) -> int:
    return type_.width


def _int_rank(type_: ir.Type) -> int:
    return 1000 if isinstance(type_, ir.IndexType) else type_.width


def _common_type(a: ir.Type, b: ir.Type) -> ir.Type:
    if _is_float(a) and _is_float(b):
        if _float_bits(a) == _float_bits(b):
            return ir.F32Type.get() if _float_bits(a) < 32 else a
        return a if _float_bits(a) > _float_bits(b) else b
    if _is_float(a) or _is_float(b):
        return a if _is_float(a) else b
    return a if _int_rank(a) >= _int_rank(b) else b


def _type_for_literal(value, other: ir.Type) -> ir.Type:
    if isinstance(value, float) and not _is_float(other):
        return ir.F32Type.get()
    return other


def _annotated_dims(annotation: ast.expr) -> list[ast.expr] | None:
    """The dims' syntax in `T.Tensor[[M, K], dtype]` or `T.Tensor((M, K), dtype)`."""
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.slice, ast.Tuple) \
            and annotation.slice.elts:
        shape = annotation.slice.elts[0]
    elif isinstance(annotation, ast.Call) and annotation.args:
        shape = annotation.args[0]
    else:
        return None
    return list(shape.elts) if isinstance(shape, (ast.List, ast.Tuple)) else [shape]


# T.atomic_* of one element: (kind, float?) -> memref.atomic_rmw's kind. max
# and min of floats ignore a NaN operand, as T.max and T.min do.
_ATOMIC_KINDS = {
    ("add", True): arith.AtomicRMWKind.addf, ("add", False): arith.AtomicRMWKind.addi,
    ("max", True): arith.AtomicRMWKind.maxnumf, ("max", False): arith.AtomicRMWKind.maxs,
    ("min", True): arith.AtomicRMWKind.minnumf, ("min", False): arith.AtomicRMWKind.mins,
}


def _typed_constant(value) -> DType | None:
    """The DType of a typed constant (`T.float16(0.5)`, a NumPy scalar), else
    None. NumPy's default scalars (float64, int64: what `np.sqrt(d)` or
    `np.log2(np.e)` give) count as Python numbers, as TVM takes them: they do
    not widen the arithmetic they meet."""
    if not isinstance(value, np.generic) or isinstance(value, (np.float64, np.int64)):
        return None
    try:
        return to_dtype(value.dtype)
    except ValueError:
        return None


def _plain_int(value):
    """A typed integer constant (`T.int32(4)`) as a Python int where a size or index is read."""
    if isinstance(value, np.integer):
        return int(value)
    return value


def _literal_affine(value) -> Affine | None:
    return Affine.of({}, value) if isinstance(value, int) and not isinstance(value, bool) else None


def _affine_binary(name: str, a: Affine, b: Affine) -> Affine | None:
    if name == "Add":
        return a.combine(b, 1)
    if name == "Sub":
        return a.combine(b, -1)
    if name == "Mult":
        if not a.terms:
            return b.scale(a.const)
        if not b.terms:
            return a.scale(b.const)
    return None


def _affine_div(a: Scalar, b: Scalar) -> Affine | None:
    if a.affine is not None and b.affine is not None and not a.affine.terms and not b.affine.terms:
        return Affine.of({}, -(-a.affine.const // b.affine.const))
    return None


def _array_shape_dtype(value):
    """(shape, dtype) of a NumPy array or torch tensor, else None."""
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is None or dtype is None or isinstance(value, (int, float)):
        return None
    return tuple(int(d) for d in shape), dtype


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


# The lanes T.shfl_* exchange values among (CUDA's warp, TileLang's default width).
WARP_LANES = 32

# T.alloc_reducer: how each kind is updated in a T.Parallel.
_REDUCER_FORMS = {"sum": "R[i] += v", "max": "R[i] = T.max(R[i], v)", "min": "R[i] = T.min(R[i], v)"}


# How a reducer's element and one iteration's value combine, by (kind, is float).
_REDUCER_COMBINE = {("sum", True): arith.AddFOp, ("sum", False): arith.AddIOp,
                    ("max", True): arith.MaxNumFOp, ("max", False): arith.MaxSIOp,
                    ("min", True): arith.MinNumFOp, ("min", False): arith.MinSIOp}


def _reducer_identity(kind: str, dtype: DType):
    """The value an iteration that makes no update leaves in a reducer's partials."""
    if kind == "sum":
        return 0.0 if dtype.is_float else 0
    if dtype.is_float:
        return -math.inf if kind == "max" else math.inf
    info = np.iinfo(dtype.numpy)
    return int(info.min if kind == "max" else info.max)


# Per-thread code (kernels that call T.get_thread_binding): the calls whose
# statements the block runs together (tile ops), the ones that build nothing
# per thread, and the ones that ask for the thread's index.
_BLOCK_CALLS = frozenset({"copy", "gemm", "reduce_max", "reduce_sum", "reduce_min", "reduce_absmax",
                          "reduce_abssum", "cumsum", "Parallel", "Pipelined", "im2col", "c2d_im2col",
                          "use_swizzle", "annotate_layout", "Kernel"})
_NEUTRAL_CALLS = frozenset({"get_thread_binding", "get_thread_bindings", "alloc_shared", "alloc_fragment",
                            "alloc_global", "alloc_reducer"})
_THREAD_BINDING_CALLS = frozenset({"get_thread_binding", "get_thread_bindings"})


def _called_name(node: ast.expr) -> str | None:
    """`Kernel` for `T.Kernel` or `Kernel`."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _unit_padded(shape: tuple[int, ...], padded: tuple[int, ...]) -> tuple[int, ...] | None:
    """Where `padded` is `shape` with unit dims inserted (and is not `shape`):
    the dims of `padded` that hold `shape`'s, in order; else None."""
    if len(padded) <= len(shape) or math.prod(padded) != math.prod(shape):
        return None
    dims, position = [], 0
    for d, extent in enumerate(padded):
        if position < len(shape) and extent == shape[position]:
            dims.append(d)
            position += 1
        elif extent != 1:
            return None
    return tuple(dims) if position == len(shape) else None


def _is_bool(value) -> bool:
    """A runtime bool value (a Scalar or T.alloc_var of type i1), or a Python bool."""
    if isinstance(value, Var):
        value = value.value
    if isinstance(value, Scalar):
        return value.type == _i1()
    return isinstance(value, bool | np.bool_)


def _macro_source(macro: api.Macro) -> PythonSource:
    """The macro's source, read once (kept on the macro)."""
    if macro.source is None:
        macro.source = PythonSource.of(macro.function)
    return macro.source


# How deep T.macro calls may nest (a macro calling itself is refused there).
MACRO_DEPTH = 32

# What a T.macro being built has returned so far: nothing.
_NO_RESULT = object()


def _walk_statements(body: list[ast.stmt]):
    for statement in body:
        yield statement
        for child in ast.iter_child_nodes(statement):
            if isinstance(child, ast.stmt):
                yield from _walk_statements([child])


def _describe(node: ast.AST) -> str:
    names = {"While": "a `while` loop", "Try": "`try`", "FunctionDef": "a nested `def`", "Lambda": "a lambda",
             "ClassDef": "a class", "Import": "`import`", "ImportFrom": "`import`", "Global": "`global`",
             "Nonlocal": "`nonlocal`", "Delete": "`del`", "Raise": "`raise`", "Assert": "`assert`",
             "ListComp": "a list comprehension", "DictComp": "a dict comprehension", "Dict": "a dict",
             "SetComp": "a set comprehension", "GeneratorExp": "a generator", "Yield": "`yield`",
             "Await": "`await`", "JoinedStr": "an f-string", "Starred": "`*` unpacking", "Match": "`match`",
             "Break": "`break`", "Continue": "`continue`", "AsyncFunctionDef": "an async def",
             "NamedExpr": "`:=`", "Set": "a set"}
    return names.get(type(node).__name__, f"`{type(node).__name__}`")
