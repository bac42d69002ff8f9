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
import operator
import sys
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


class MacroAnnotation:
    """`T.SharedTensor`, `T.LocalTensor`, `T.SharedBuffer`, ...: annotations
    of T.macro parameters (the macro binds whatever buffer it is called with),
    bare or called with a shape and dtype. A prim_func's parameters are
    T.Tensor; there the builder refuses these."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"T.{self.name}"

    def __call__(self, *_shape_and_dtype, **_options) -> MacroAnnotation:
        return self


SharedTensor = MacroAnnotation("SharedTensor")
LocalTensor = MacroAnnotation("LocalTensor")
FragmentTensor = MacroAnnotation("FragmentTensor")
SharedBuffer = MacroAnnotation("SharedBuffer")
LocalBuffer = MacroAnnotation("LocalBuffer")
FragmentBuffer = MacroAnnotation("FragmentBuffer")


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
alloc_global = _intrinsic("alloc_global")
annotate_layout = _intrinsic("annotate_layout")
fill = _intrinsic("fill")
clear = _intrinsic("clear")
copy = _intrinsic("copy")
atomic_add = _intrinsic("atomic_add")
atomic_max = _intrinsic("atomic_max")
atomic_min = _intrinsic("atomic_min")
gemm = _intrinsic("gemm")
Pipelined = _intrinsic("Pipelined")
Parallel = _intrinsic("Parallel")
serial = _intrinsic("serial", aliases=("Serial",))
Serial = serial
unroll = _intrinsic("unroll")
vectorized = _intrinsic("vectorized", aliases=("Vectorized",))  # a serial loop: the backends vectorise
Vectorized = vectorized
get_thread_binding = _intrinsic("get_thread_binding")
alloc_reducer = _intrinsic("alloc_reducer")
finalize_reducer = _intrinsic("finalize_reducer")
get_thread_bindings = _intrinsic("get_thread_bindings")
get_block_binding = _intrinsic("get_block_binding")
get_block_bindings = _intrinsic("get_block_bindings")
sync_threads = _intrinsic("sync_threads")
device_assert = _intrinsic("device_assert")
shfl_xor = _intrinsic("shfl_xor")
shfl_down = _intrinsic("shfl_down")
shfl_up = _intrinsic("shfl_up")
shfl_sync = _intrinsic("shfl_sync")
any_sync = _intrinsic("any_sync")
all_sync = _intrinsic("all_sync")
ballot_sync = _intrinsic("ballot_sync")
reduce_max = _intrinsic("reduce_max")
reduce_sum = _intrinsic("reduce_sum")
reduce_min = _intrinsic("reduce_min")
reduce_absmax = _intrinsic("reduce_absmax")
cumsum = _intrinsic("cumsum")
reduce_abssum = _intrinsic("reduce_abssum")
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
# TIR's math names; on Python numbers (a factory's own arithmetic) their value.
log10 = _intrinsic("log10", math.log10)
log1p = _intrinsic("log1p", math.log1p)
exp10 = _intrinsic("exp10", lambda x: 10.0 ** x)
sin = _intrinsic("sin", math.sin)
cos = _intrinsic("cos", math.cos)
tan = _intrinsic("tan", math.tan)
erf = _intrinsic("erf", math.erf)
sigmoid = _intrinsic("sigmoid", lambda x: 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0)
floor = _intrinsic("floor", lambda x: float(math.floor(x)))
ceil = _intrinsic("ceil", lambda x: float(math.ceil(x)))
trunc = _intrinsic("trunc", lambda x: float(math.trunc(x)))
round = _intrinsic("round", lambda x: math.copysign(math.floor(builtins.abs(x) + 0.5), x))  # C's roundf
pow = _intrinsic("pow", lambda x, y: float(x) ** y)
fmod = _intrinsic("fmod", math.fmod)
isnan = _intrinsic("isnan", math.isnan)
isinf = _intrinsic("isinf", math.isinf)
isfinite = _intrinsic("isfinite", math.isfinite)
clamp = _intrinsic("clamp", lambda x, lo, hi: builtins.max(builtins.min(x, hi), lo))
# TIR's integer arithmetic: floor (Python's) and truncating (C's) division and
# remainder, bitwise operations and shifts.
floordiv = _intrinsic("floordiv", operator.floordiv)
floormod = _intrinsic("floormod", operator.mod)
truncdiv = _intrinsic("truncdiv", lambda a, b: builtins.abs(a) // builtins.abs(b) * (1 if (a < 0) == (b < 0) else -1))
truncmod = _intrinsic("truncmod", lambda a, b: a - b * (builtins.abs(a) // builtins.abs(b) * (1 if (a < 0) == (b < 0) else -1)))
bitwise_and = _intrinsic("bitwise_and", operator.and_)
bitwise_or = _intrinsic("bitwise_or", operator.or_)
bitwise_xor = _intrinsic("bitwise_xor", operator.xor)
bitwise_not = _intrinsic("bitwise_not", operator.invert)
shift_left = _intrinsic("shift_left", operator.lshift)
shift_right = _intrinsic("shift_right", operator.rshift)


def _limit(largest: bool):
    """T.max_value(dtype) / T.min_value(dtype): the type's largest / least
    finite value, as a typed constant (`DType.constant`)."""
    def value(dtype):
        import numpy as np

        from tilemlir.dialects.element_types import ELEMENT_TYPES
        from tilemlir.language.dtypes import dtype as as_dtype

        resolved = as_dtype(dtype)
        if resolved.is_float:
            finite = float(ELEMENT_TYPES[resolved.mlir].finite_max)
            return resolved.constant(finite if largest else -finite)
        info = np.iinfo(resolved.numpy)
        return resolved.constant(int(info.max if largest else info.min))
    return value


max_value = _intrinsic("max_value", _limit(True))
min_value = _intrinsic("min_value", _limit(False))
if_then_else = _intrinsic("if_then_else")
infinity = _intrinsic("infinity", _infinity)
cast = _intrinsic("cast", aliases=("Cast",))
Cast = cast
im2col = _intrinsic("im2col", aliases=("c2d_im2col",))
c2d_im2col = im2col
use_swizzle = _intrinsic("use_swizzle")


# --------------------------------------------------------------------------
# TileLang's names that tilemlir does not build
# --------------------------------------------------------------------------

# TileLang's `tilelang.language` names tilemlir refuses, with what to use
# instead where there is something (the names: tilelang/language/__init__.py).
UNSUPPORTED: dict[str, str] = {
    "alloc_barrier": "NVIDIA-only (mbarriers); tilemlir's pipelining synchronises for you",
    "alloc_tmem": "NVIDIA-only (Blackwell tensor memory)",
    "alloc_descriptor": "NVIDIA-only (wgmma/tcgen05 descriptors); T.gemm picks the instruction",
    "alloc_wgmma_desc": "NVIDIA-only (wgmma descriptors); T.gemm picks the instruction",
    "alloc_tcgen05_smem_desc": "NVIDIA-only (tcgen05 descriptors)",
    "alloc_tcgen05_instr_desc": "NVIDIA-only (tcgen05 descriptors)",
    "Persistent": "use T.Kernel's grid (one block per tile)",
    "Unroll": "use T.unroll",
    "reduce": "use T.reduce_sum, T.reduce_max, T.reduce_min, T.reduce_absmax or T.reduce_abssum",
    "reduce_bitand": "only sum, max, min, absmax and abssum reductions are built",
    "reduce_bitor": "only sum, max, min, absmax and abssum reductions are built",
    "reduce_bitxor": "only sum, max, min, absmax and abssum reductions are built",
    "warp_reduce_sum": "use T.reduce_sum on a fragment",
    "warp_reduce_max": "use T.reduce_max on a fragment",
    "warp_reduce_min": "use T.reduce_min on a fragment",
    "warp_reduce_bitand": "only sum, max, min, absmax and abssum reductions are built",
    "warp_reduce_bitor": "only sum, max, min, absmax and abssum reductions are built",
    "atomic_addx2": "use T.atomic_add of a whole tile",
    "atomic_addx4": "use T.atomic_add of a whole tile",
    "atomic_load": "T.atomic_add, T.atomic_max and T.atomic_min are built",
    "atomic_store": "T.atomic_add, T.atomic_max and T.atomic_min are built",
    "annotate_safe_value": "out-of-bounds copies are masked with zeros",
    "annotate_l2_hit_ratio": "NVIDIA-only cache hint",
    "annotate_restrict_buffers": "parameters are already assumed not to alias",
    "Layout": "tilemlir chooses layouts itself",
    "Fragment": "use T.alloc_fragment; tilemlir chooses its layout",
    "make_tensor": "use T.Tensor(shape, dtype, X.data) to view a parameter's memory",
    "ptr": "pass tensors as T.Tensor parameters",
    "StridedTensor": "tensors are contiguous: pass T.Tensor parameters",
    "reshape": "copy into a tile of the new shape with T.copy / T.Parallel",
    "view": "use T.Tensor(shape, dtype, X.data) to view a parameter's memory",
    "dynamic": "shapes are compile-time values: the factory's arguments",
    "symbolic": "shapes are compile-time values: the factory's arguments",
    "ws": "warp specialisation is NVIDIA-only and chosen by the compiler",
    "print": "run the kernel in the reference engine (engine='reference') and inspect its outputs",
    "gemm_sp": "sparse gemm is not built; use T.gemm",
    "gemm_v1": "use T.gemm",
    "gemm_v2": "use T.gemm",
    "dp4a": "use T.gemm on int8 tiles",
    "loop_break": "loops run their full extent; mask the work with `if`",
    "any_of": "reduce a comparison with T.reduce_max",
    "all_of": "reduce a comparison with T.reduce_min",
    "rng_init": "generate random inputs outside the kernel",
    "rng_rand": "generate random inputs outside the kernel",
    "rng_rand_float": "generate random inputs outside the kernel",
    "pdl_trigger": "NVIDIA-only (programmatic dependent launch)",
    "pdl_sync": "NVIDIA-only (programmatic dependent launch)",
    "call_extern": "tilemlir emits no C: write the computation with T.* functions",
    "import_source": "tilemlir emits no C: write the computation with T.* functions",
    "alloc_buffer": "use T.alloc_shared, T.alloc_fragment or T.alloc_var",
    "block": "TVM script blocks are not built: use T.Kernel",
    "grid": "use T.Parallel or nested T.serial loops",
    "thread_binding": "use T.Kernel(..., threads=n) and T.Parallel",
    "launch_thread": "use T.Kernel(..., threads=n)",
}

# Other TileLang names (TIR math, hardware intrinsics) that tilemlir builds nothing for.
UNSUPPORTED_PLAIN = (
    "popcount", "clz", "Select",
    "reinterpret", "address_of", "access_ptr", "evaluate", "ptx_ldmatrix",
    "ptx_mma", "ptx_wgmma_ss", "ptx_wgmma_rs", "tma_load", "tma_store", "create_tma_descriptor",
    "fence_proxy_async", "mbarrier_wait_parity", "mbarrier_arrive", "barrier_wait", "barrier_arrive",
    "set_max_nreg", "inc_max_nreg", "dec_max_nreg", "no_set_max_nreg", "warpgroup_arrive", "warpgroup_commit_batch",
    "warpgroup_wait", "wait_wgmma", "shuffle_elect", "__ldg",
    "ldg32", "ldg64", "ldg128", "ldg256", "stg32", "stg64", "stg128", "stg256", "index_to_coordinates",
    "has_let_value", "get_let_value", "KernelLaunchFrame", "allocate", "tvm_thread_allreduce",
    "cp_async_barrier_noinc", "sync_global", "sync_grid", "stmatrix", "ldmatrix", "tcgen05_mma",
    "fast_exp", "fast_log", "ieee_add", "ieee_mul", "ieee_fmaf", "ieee_rsqrt", "ieee_sqrt", "ieee_frcp",
)


def namespace_of(function, caller_locals: dict | None = None) -> dict:
    """The names a function's body sees: its globals, then its closure, then
    (given) the locals of the function that defined it, where its globals do
    not already name them (a factory's arguments, also those only its
    annotations use)."""
    names = dict(function.__globals__)
    if function.__closure__:
        for name, cell in zip(function.__code__.co_freevars, function.__closure__):
            try:
                names[name] = cell.cell_contents
            except ValueError:
                pass
    if caller_locals is not None and caller_locals is not function.__globals__:
        names.update({k: v for k, v in caller_locals.items() if k not in names or k not in function.__globals__})
    return names


class Macro:
    """`@T.macro`: a function whose body is built in place wherever a
    prim_func or kernel body calls it, its parameters bound to the call's
    arguments (buffers, runtime values, Python values); it may open kernels
    (`with T.Kernel`) when called at a prim_func's top level, and may
    `return` a value as its last statement. Names in its body are its own
    module's globals, its closure and the locals of the function that defined
    it, as for a prim_func."""

    def __init__(self, function, caller_locals: dict):
        self.function = function
        self.caller_locals = caller_locals
        self.source = None  # its PythonSource, read by the builder when first built
        self.__name__ = function.__name__
        self.__doc__ = function.__doc__

    def namespace(self) -> dict:
        """The names its body sees, read when it is built (a macro it calls
        may be defined after it)."""
        return namespace_of(self.function, self.caller_locals)

    def __call__(self, *args, **kwargs):
        raise TileLangError(f"{caller_position(2)}: error: T.macro '{self.__name__}' is built where a prim_func "
                            f"or kernel body calls it, not called from Python")


class Unsupported:
    """What `T.x` is for a TileLang name tilemlir does not build: in a kernel
    body the builder reports it at its line; called (or used as a decorator)
    in ordinary Python it raises a TileLangError naming the caller's line."""

    def __init__(self, name: str, reason: str = ""):
        self.name = name
        self.reason = reason

    def __repr__(self) -> str:
        return f"T.{self.name}"

    @property
    def message(self) -> str:
        text = f"T.{self.name} is not supported by tilemlir"
        return f"{text}: {self.reason}" if self.reason else text

    def __call__(self, *args, **kwargs):
        raise TileLangError(f"{caller_position(2)}: error: {self.message}")

    def __getattr__(self, attribute: str):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise TileLangError(f"{caller_position(2)}: error: {self.message}")


def caller_position(depth: int) -> str:
    """`file:line:col` of the frame `depth` levels above the caller (col 1
    where Python does not record it)."""
    frame = sys._getframe(depth)
    line, col = frame.f_lineno, 1
    positions = list(frame.f_code.co_positions())
    index = frame.f_lasti // 2
    if 0 <= index < len(positions) and positions[index][0] == line and positions[index][2] is not None:
        col = positions[index][2] + 1
    return f"{frame.f_code.co_filename}:{line}:{col}"


def unsupported(name: str) -> Unsupported | None:
    """The placeholder for a TileLang name tilemlir does not build, else None."""
    if name in UNSUPPORTED:
        return Unsupported(name, UNSUPPORTED[name])
    if name in UNSUPPORTED_PLAIN:
        return Unsupported(name)
    return None


class PassConfigKey(enum.StrEnum):
    """TileLang's `tilelang.PassConfigKey`: TileLang's own pass options. tilemlir
    honours TL_ENABLE_FAST_MATH (T.exp2 on the hardware's exp2 unit,
    language/kernel.py's FAST_MATH_KEY) and accepts the others in
    `pass_configs`, ignoring them (one warning); its own options are
    `"tile-pass.option"` keys (tile-opt --list-passes)."""

    TL_SIMPLIFY = "tl.Simplify"
    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    TL_CONFIG_INDEX_BITWIDTH = "tl.config_index_bitwidth"
    TL_DISABLE_DYNAMIC_TAIL_SPLIT = "tl.disable_dynamic_tail_split"
    TL_DYNAMIC_ALIGNMENT = "tl.dynamic_alignment"
    TL_DISABLE_SAFE_MEMORY_ACCESS = "tl.disable_safe_memory_legalize"
    TL_DISABLE_VECTORIZE_256 = "tl.disable_vectorize_256"
    TL_DISABLE_FAST_MATH = "tl.disable_fast_math"
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_PTXAS_REGISTER_USAGE_LEVEL = "tl.ptxas_register_usage_level"
    TL_ENABLE_PTXAS_VERBOSE_OUTPUT = "tl.enable_ptxas_verbose_output"
    TL_DISABLE_THREAD_STORAGE_SYNC = "tl.disable_thread_storage_sync"
    TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE = "tl.enable_aggressive_shared_memory_merge"
    TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS = "tl.debug_merge_shared_memory_allocations"
    TL_FORCE_LET_INLINE = "tl.force_let_inline"
    TL_LAYOUT_VISUALIZATION_ENABLE = "tl.layout_visualization_enable"
    TL_LAYOUT_VISUALIZATION_FORMATS = "tl.layout_visualization_formats"
    TL_AST_PRINT_ENABLE = "tl.ast_print_enable"
    TL_STORAGE_REWRITE_DETECT_INPLACE = "tl.storage_rewrite_detect_inplace"
    TIR_ENABLE_EQUIV_TERMS_IN_CSE = "tir.enable_equiv_terms_in_cse_tir"
    TIR_DISABLE_CSE = "tir.disable_cse_tir"
    TIR_SIMPLIFY = "tir.Simplify"
    TIR_DISABLE_STORAGE_REWRITE = "tir.disable_storage_rewrite"
    TIR_DISABLE_VECTORIZE = "tir.disable_vectorize"
    TIR_USE_ASYNC_COPY = "tir.use_async_copy"
    TIR_ENABLE_DEBUG = "tir.enable_debug"
    TIR_MERGE_STATIC_SMEM = "tir.merge_static_smem"
    TIR_ADD_LOWER_PASS = "tir.add_lower_pass"
    TIR_NOALIAS = "tir.noalias"
    CUDA_KERNELS_OUTPUT_DIR = "cuda.kernels_output_dir"
