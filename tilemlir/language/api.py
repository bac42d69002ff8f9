"""The `T.*` names a kernel writer uses, as Python objects.

Kernel bodies are not executed: `@T.prim_func` and `@tilemlir.jit` read the
function's source and build tile IR from its syntax tree
(`tilemlir.language.builder`). The objects here are what the builder
recognises when a name in that tree resolves to them, so any import spelling
works (`import tilemlir.language as T`, `from tilemlir.language import copy`,
`import tilemlir.language as tl`). Called as ordinary Python, outside a kernel,
an intrinsic raises `TileLangError` saying where it may be used; the few that
mean something on plain Python values (`T.ceildiv(8, 3)`, `T.Tensor((M, K),
"float16")`, `T.min(2, 3)`) compute it.
"""

from __future__ import annotations

import builtins
import enum
import math
from dataclasses import dataclass

from tilemlir.diagnostics import UserError
from tilemlir.language.dtypes import dtype as to_dtype


class TileLangError(UserError):
    """A kernel written with `T.*` that tilemlir cannot build: the message names
    the user's file and line (`file.py:12:9: error: ...`)."""


class Intrinsic:
    """A `T.*` name with meaning only inside a kernel body (or, with `python`,
    also on plain Python values)."""

    def __init__(self, name: str, python=None):
        self.name = name
        self._python = python

    def __repr__(self) -> str:
        return f"T.{self.name}"

    def __call__(self, *args, **kwargs):
        if self._python is not None:
            return self._python(*args, **kwargs)
        raise TileLangError(f"T.{self.name} builds IR and is only meaningful inside a kernel body "
                            f"(a function decorated with @T.prim_func or @tilemlir.jit)")


# --------------------------------------------------------------------------
# Tensors
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class TensorSpec:
    """`T.Tensor((M, K), "float16")`: a global tensor's shape and dtype; with
    `data` (another tensor's `.data`) a view of that tensor's memory."""

    shape: tuple
    dtype: object
    data: object = None


class _TensorType:
    """`T.Tensor` (and `T.Buffer`): called, `T.Tensor((M, K), dtype)`; indexed,
    `T.Tensor[[M, K], dtype]` (an annotation of the direct style)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"T.{self.name}"

    def __call__(self, shape, dtype="float32", data=None, **_ignored) -> TensorSpec:
        return TensorSpec(_shape_tuple(shape), dtype, data)

    def __getitem__(self, item) -> TensorSpec:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TileLangError(f"T.{self.name}[shape, dtype] takes a shape and a dtype")
        return TensorSpec(_shape_tuple(item[0]), item[1])


def _shape_tuple(shape) -> tuple:
    if isinstance(shape, (list, tuple)):
        return tuple(shape)
    return (shape,)


Tensor = _TensorType("Tensor")
Buffer = _TensorType("Buffer")


class GemmWarpPolicy(enum.Enum):
    """How T.gemm spreads its warps; tile-select-mma chooses the warp grid from
    the target, so every policy is accepted and the choice stays the compiler's."""

    Square = 0
    FullRow = 1
    FullCol = 2


def _ceildiv(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    raise TileLangError("T.ceildiv on values other than Python ints is only meaningful inside a kernel body")


def _python_pair(function):
    def apply(a, b):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return function(a, b)
        raise TileLangError("this T.* function builds IR for non-constant values: use it inside a kernel body")
    return apply


def _infinity(dtype):
    to_dtype(dtype)
    return math.inf


# The intrinsics, by the name TileLang gives them. Aliases share one object.
INTRINSICS: dict[str, Intrinsic] = {}


def _intrinsic(name: str, python=None, aliases: tuple[str, ...] = ()) -> Intrinsic:
    obj = Intrinsic(name, python)
    for spelling in (name, *aliases):
        INTRINSICS[spelling] = obj
    return obj




Kernel = _intrinsic("Kernel")
const = _intrinsic("const")
empty = _intrinsic("empty")
alloc_shared = _intrinsic("alloc_shared")
alloc_fragment = _intrinsic("alloc_fragment")
alloc_var = _intrinsic("alloc_var")
alloc_local = _intrinsic("alloc_local")
fill = _intrinsic("fill")
clear = _intrinsic("clear")
copy = _intrinsic("copy")
atomic_add = _intrinsic("atomic_add")
gemm = _intrinsic("gemm")
Pipelined = _intrinsic("Pipelined")
Parallel = _intrinsic("Parallel")
serial = _intrinsic("serial", aliases=("Serial",))
Serial = serial
unroll = _intrinsic("unroll")
reduce_max = _intrinsic("reduce_max")
reduce_sum = _intrinsic("reduce_sum")
reduce_min = _intrinsic("reduce_min")
ceildiv = _intrinsic("ceildiv", _ceildiv)
min = _intrinsic("min", _python_pair(builtins.min))
max = _intrinsic("max", _python_pair(builtins.max))
exp = _intrinsic("exp")
exp2 = _intrinsic("exp2")
log = _intrinsic("log")
log2 = _intrinsic("log2")
rsqrt = _intrinsic("rsqrt")
sqrt = _intrinsic("sqrt")
abs = _intrinsic("abs")
tanh = _intrinsic("tanh")
if_then_else = _intrinsic("if_then_else")
infinity = _intrinsic("infinity", _infinity)
cast = _intrinsic("cast", aliases=("Cast",))
Cast = cast
im2col = _intrinsic("im2col", aliases=("c2d_im2col",))
c2d_im2col = im2col
use_swizzle = _intrinsic("use_swizzle")
