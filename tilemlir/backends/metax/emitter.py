"""GPU-level IR -> MACA C++: the MetaX backend's printer.

Input: what tile-lower-to-gpu produces for a metax target (after canonicalize
and cse): a `gpu.container_module` whose host `func.func`s only compute launch
sizes and `gpu.launch_func` kernels, and `gpu.module`s holding `gpu.func`
kernels (workgroup attributions = `__shared__` buffers) in upstream `arith`,
`math`, `scf`, `memref`, `vector`, `gpu` ops, plus `func.call`s of the MMA
built-ins declared in the gpu.module (backends/metax/matrix.py).

Output: one self-contained `.maca` source:

* a prelude for mxcc (guarded by `#ifndef TILEMLIR_MACA_HOST`, so a CPU test
  harness can supply the same names itself): the MACA runtime header, the
  element types (`_Float16`; bf16 and fp8 held as their bit patterns), vector
  types as clang `ext_vector_type`, and the conversions `tm_cvt_<from>_<to>`
  (round to nearest even), `tm_bitcast`, `tm_vload`/`tm_vstore`;
* one `extern "C" __global__ __launch_bounds__(threads)` function per
  gpu.func: one thread's program, `threadIdx`/`blockIdx`, `__shared__`
  arrays, `__syncthreads()`, `__builtin_mxc_mma_*` calls;
* one `extern "C" int <name>(...)` host launcher per host function: the
  arguments' device copies (`mcMalloc`, `mcMemcpy`), every launch through
  `mcLaunchKernel`, results copied back, `mcFree`; 0 on success.

No text of the input reaches the source unchecked: kernels keep their
gpu.func names, which must be identifiers C++ can use and no name of the C
library or the MACA runtime (`passes/check_gpu_input.py`;
tile-lower-to-gpu makes them with `symbols.kernel_symbol`), a launcher is
named `kernel_symbol(host function name)`, launches name their kernel as
`::NAME` (no local can shadow it), comments go through `comment_text`.

Vector values are printed element by element where C++ has no vector form
common to mxcc and the host harness (element-wise arithmetic, conversions);
narrow floats (f16, bf16, fp8) are converted to float for arithmetic and back.

Why not EmitC (yet): as far as we know upstream has no conversion of the
vector or gpu dialects to EmitC, and `convert-memref-to-emitc` targets
static-shape memrefs, so most of this printer would be needed anyway before
`--mlir-to-cpp` could run. That reading of upstream was not re-checked by
running the passes on our IR; doing so is the next step. This printer covers
exactly the ops the tile lowering emits and reports anything else at its
location.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

import numpy as np
from mlir import ir

from tilemlir.diagnostics import UserError
from tilemlir.dialects.attributes import ATOMIC_ELEMENT_TYPES, ATOMIC_RMW_KINDS
from tilemlir.dialects.element_types import dtype_of
from tilemlir.passes.check_gpu_input import gpu_input_problems
from tilemlir.passes.lower_to_gpu.api import constant_int
from tilemlir.passes.symbols import (
    comment_text,
    is_cxx_name,
    is_identifier,
    is_taken_name,
    kernel_symbol,
)

HOST_GUARD = "TILEMLIR_MACA_HOST"


def _is_positive_zero(value: ir.Value) -> bool:
    """An arith.constant of +0 (all bits clear)."""
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "arith.constant":
        return False
    attr = owner.attributes["value"]
    if isinstance(attr, ir.FloatAttr):
        number = ir.FloatAttr(attr).value
        return number == 0 and math.copysign(1.0, number) > 0
    return isinstance(attr, ir.IntegerAttr) and ir.IntegerAttr(attr).value == 0

# MLIR element type -> (C++ type, conversion tag)
_SCALARS = {
    "index": ("int64_t", "i64"), "i1": ("bool", "i1"), "i8": ("int8_t", "i8"),
    "i16": ("int16_t", "i16"), "i32": ("int32_t", "i32"), "i64": ("int64_t", "i64"),
    "f32": ("float", "f32"), "f64": ("double", "f64"), "f16": ("tm_f16", "f16"),
    "bf16": ("tm_bf16", "bf16"), "f8E4M3FN": ("tm_f8e4m3", "f8e4m3"),
    "f8E5M2": ("tm_f8e5m2", "f8e5m2"), "f8E4M3FNUZ": ("tm_f8e4m3fnuz", "f8e4m3fnuz"),
    "f8E5M2FNUZ": ("tm_f8e5m2fnuz", "f8e5m2fnuz"),
}
_NARROW = {"f16", "bf16", "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ"}
_UNSIGNED = {"index": "uint64_t", "i64": "uint64_t", "i32": "uint32_t", "i16": "uint16_t",
             "i8": "uint8_t", "i1": "bool"}

_INT_BINARY = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.andi": "&",
               "arith.ori": "|", "arith.xori": "^", "arith.divsi": "/", "arith.remsi": "%",
               "arith.shli": "<<", "arith.shrsi": ">>"}
_UNSIGNED_BINARY = {"arith.divui": "/", "arith.remui": "%", "arith.shrui": ">>"}
# Signed division rounded down / up (the prelude's helpers).
_SIGNED_ROUNDED_DIVISION = {"arith.floordivsi": "tm_floordiv", "arith.ceildivsi": "tm_ceildiv"}
# (comparison picking the first operand, signed?)
_INT_MIN_MAX = {"arith.minui": ("<", False), "arith.maxui": (">", False),
                "arith.minsi": ("<", True), "arith.maxsi": (">", True)}
_FLOAT_BINARY = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}
_FLOAT_CALLS = {"arith.maximumf": "tm_maximumf", "arith.minimumf": "tm_minimumf",
                "arith.maxnumf": "fmax", "arith.minnumf": "fmin", "math.exp": "exp",
                "math.sqrt": "sqrt", "math.absf": "fabs", "math.log": "log", "math.tanh": "tanh",
                "math.fma": "fma", "math.exp2": "exp2", "math.rsqrt": "tm_rsqrt", "math.log2": "log2",
                "math.log10": "log10", "math.log1p": "log1p", "math.expm1": "expm1", "math.erf": "erf",
                "math.powf": "pow", "math.sin": "sin", "math.cos": "cos", "math.floor": "floor",
                "math.ceil": "ceil", "math.trunc": "trunc", "math.roundeven": "rint", "math.copysign": "copysign",
                "math.atan2": "atan2", "math.tan": "tan", "math.round": "round", "arith.remf": "fmod"}
# gpu.shuffle modes -> the MACA wave shuffles and tm_shuffle_valid's mode code.
# MACA spells them as CUDA does, with a 64-bit lane mask for its 64-lane waves:
# `__shfl_xor_sync(0xffffffffffffffff, value, offset, 64)` (a MetaX-modified
# OpenPPL kernel, cudakernel/nn/softmax.cu under __MACACC__, MACA_WARP_SIZE 64).
_SHUFFLES = {"xor": ("__shfl_xor_sync", 0), "idx": ("__shfl_sync", 1), "down": ("__shfl_down_sync", 2),
             "up": ("__shfl_up_sync", 3)}
_CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
         "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}
_CMPF = {"oeq": "{a} == {b}", "ogt": "{a} > {b}", "oge": "{a} >= {b}", "olt": "{a} < {b}",
         "ole": "{a} <= {b}", "one": "({a} < {b} || {a} > {b})", "une": "!({a} == {b})",
         "ueq": "!({a} < {b} || {a} > {b})", "ugt": "!({a} <= {b})", "uge": "!({a} < {b})",
         "ult": "!({a} >= {b})", "ule": "!({a} > {b})", "ord": "({a} == {a} && {b} == {b})",
         "uno": "({a} != {a} || {b} != {b})", "true": "true", "false": "false"}
_GPU_IDS = {"gpu.thread_id": "threadIdx", "gpu.block_id": "blockIdx", "gpu.block_dim": "blockDim",
            "gpu.grid_dim": "gridDim"}
_CMPI_NAMES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
_CMPF_NAMES = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge",
               "ult", "ule", "une", "uno", "true"]


def mxcc_command(arch: str, source: str = "KERNEL.maca") -> str:
    """How to build the emitted source with MetaX's compiler (maca-samples'
    Makefile: `mxcc -x maca ... --maca-path`; --offload-arch per tilelang-metax)."""
    return (f"$MACA_PATH/mxgpu_llvm/bin/mxcc -x maca -O3 -std=c++17 --offload-arch={arch} "
            f"--maca-path=$MACA_PATH -shared -fPIC {source} -o lib{source.rsplit('.', 1)[0]}.so")


class EmitError(UserError):
    """A construct the MACA printer does not handle, reported at its op."""

    def __init__(self, op, message: str):
        super().__init__(message)
        self.op = op


def element_name(t: ir.Type) -> str:
    return str(t)


@dataclass
class KernelInfo:
    """Facts about one emitted kernel (for the report and the comments)."""

    name: str
    threads: int
    shared_bytes: int
    mma_per_iteration: dict[str, int] = field(default_factory=dict)
    mma_total: dict[str, int] = field(default_factory=dict)


@dataclass
class MacaSource:
    text: str
    kernels: list[KernelInfo]


@dataclass
class View:
    """A memref as C++ sees it: element `pointer[offset + sum(index_i * strides_i)]`."""

    pointer: str
    offset: str
    strides: list[str]
    sizes: list[str]

    @staticmethod
    def row_major(pointer: str, sizes: list[str]) -> View:
        strides, running = [], "1"
        for size in reversed(sizes):
            strides.insert(0, running)
            running = size if running == "1" else _product(running, size)
        return View(pointer, "0", strides, sizes)

    @staticmethod
    def of_parameter(name: str, t: ir.MemRefType) -> View:
        """A memref kernel parameter: its pointer `name` (the memref's base),
        with what the type does not fix taken from the parameters that
        `memref_extras` names."""
        sizes = [str(d) if d != DYNAMIC else f"{name}_d{axis}" for axis, d in enumerate(t.shape)]
        if _identity(t):
            return View.row_major(name, sizes)
        strides, offset = t.get_strides_and_offset()
        return View(name, str(offset) if offset != DYNAMIC_STRIDE else f"{name}_off",
                    [str(s) if s != DYNAMIC_STRIDE else f"{name}_s{axis}" for axis, s in enumerate(strides)],
                    sizes)


DYNAMIC = ir.ShapedType.get_dynamic_size()
DYNAMIC_STRIDE = ir.ShapedType.get_dynamic_stride_or_offset()


def _identity(t: ir.MemRefType) -> bool:
    layout = ir.MemRefType(t).layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(
        ir.MemRefType(t).rank, context=t.context)


def memref_extras(t: ir.MemRefType, name: str) -> list[str]:
    """The int64_t parameters that follow a memref's pointer, in this order:
    its dynamic extents (`NAME_dAXIS`), then, for a strided layout, a dynamic
    offset (`NAME_off`) and dynamic strides (`NAME_sAXIS`). The host launcher
    passes the same (MacaPrinter.launch)."""
    t = ir.MemRefType(t)
    extras = [f"{name}_d{axis}" for axis, d in enumerate(t.shape) if d == DYNAMIC]
    if not _identity(t):
        strides, offset = t.get_strides_and_offset()
        extras += [f"{name}_off"] if offset == DYNAMIC_STRIDE else []
        extras += [f"{name}_s{axis}" for axis, s in enumerate(strides) if s == DYNAMIC_STRIDE]
    return extras


def _product(a: str, b: str) -> str:
    if a.isdigit() and b.isdigit():
        return str(int(a) * int(b))
    return f"({a}) * ({b})"


def _sum(a: str, b: str) -> str:
    if a == "0":
        return b
    if b == "0":
        return a
    if a.isdigit() and b.isdigit():
        return str(int(a) + int(b))
    return f"{a} + {b}"


class _Function:
    """Printing state of one C++ function."""

    def __init__(self, printer: MacaPrinter):
        self.printer = printer
        self.names: dict = {}
        self.lines: list[str] = []
        self.depth = 1
        self.counter = 0
        self.memrefs: dict = {}  # memref value -> View
        # Pointer -> elements it points to, where static (attributions, kernel
        # parameters of static shape): `element_pointer` indexes those in 32 bits.
        self.elements: dict[str, int] = {}
        # Index values that have an exact int32_t form (thread and block ids, a
        # loop counter printed as an int32_t): `index32` and casts to i32 use it.
        self.narrow: dict = {}

    def fresh(self, stem: str = "v") -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)


class MacaPrinter:
    def __init__(self, module: ir.Operation, target):
        self.module = module
        self.target = target
        self.vector_types: dict[str, str] = {}  # C++ name -> typedef line
        self.kernels: list[KernelInfo] = []
        # C++ names of the file's functions -> (gpu.module, gpu.func) or the host function.
        self.globals: dict[str, tuple[str, str] | str] = {}

    # -- types ----------------------------------------------------------------

    def scalar(self, t: ir.Type, op=None) -> str:
        name = element_name(t)
        if name not in _SCALARS:
            raise EmitError(op, f"MACA emitter: element type {t} is not supported")
        return _SCALARS[name][0]

    def tag(self, t: ir.Type) -> str:
        return _SCALARS[element_name(t)][1]

    def type(self, t: ir.Type, op=None) -> str:
        if isinstance(t, ir.VectorType):
            if t.rank != 1:
                raise EmitError(op, f"MACA emitter: only 1-D vectors are supported, not {t}")
            element = t.element_type
            base = "uint8_t" if element_name(element) == "i1" else self.scalar(element, op)
            count = t.shape[0]
            name = f"tm_{self.tag(element)}x{count}"
            self.vector_types.setdefault(name, f"typedef TM_VECTOR({base}, {count}) {name};")
            return name
        return self.scalar(t, op)

    # -- the module -----------------------------------------------------------

    def print_module(self) -> MacaSource:
        body = self.module.regions[0].blocks[0]
        problems = gpu_input_problems(self.module)
        if problems:
            op, message = problems[0]
            raise EmitError(op, f"MACA emitter: {message}")
        kernels, launchers = [], []
        operations = [op.operation for op in body.operations]
        for op in operations:
            if op.name not in ("gpu.module", "func.func"):
                raise EmitError(op, f"MACA emitter: top-level {op.name} is not supported")
        # Kernels first, so a launcher's references can be checked against them.
        for op in operations:
            if op.name == "gpu.module":
                module_name = ir.StringAttr(op.attributes["sym_name"]).value
                for inner in op.regions[0].blocks[0].operations:
                    inner = inner.operation
                    if inner.name == "gpu.func":
                        kernels.append(self.kernel(inner, module_name))
                    elif inner.name == "func.func" and not inner.regions[0].blocks:
                        continue  # built-in declarations
                    else:
                        raise EmitError(inner, f"MACA emitter: {inner.name} in a gpu.module is "
                                               "not supported")
        for op in operations:
            if op.name == "func.func" and op.regions[0].blocks:
                launchers.append(self.launcher(op))
        typedefs = "\n".join(self.vector_types[name] for name in sorted(self.vector_types))
        parts = [self.header(), PRELUDE, typedefs, "", *kernels, *launchers]
        return MacaSource("\n".join(parts).rstrip("\n") + "\n", self.kernels)

    def header(self) -> str:
        products = ", ".join(self.target.products or ["?"])
        return "\n".join([
            "// " + comment_text(f"MACA C++ for {self.target} (MetaX {products}), written by "
                                 "tilemlir (tile-compile --emit maca)."),
            "// Kernels: extern \"C\" __global__ functions; host launchers: extern \"C\" int",
            "// functions taking host pointers (0 on success). Build with MetaX's mxcc",
            "// (maca-samples Makefile; --offload-arch as in tilelang-metax's mxcc.py):",
            "//   " + comment_text(mxcc_command(self.target.processor, "THIS.maca")),
            "",
        ])

    def global_name(self, op, name: str, owner: tuple[str, str] | str) -> str:
        """`name` claimed as a C++ function name of this file (once)."""
        if not is_cxx_name(name) or is_taken_name(name):
            raise EmitError(op, f"MACA emitter: C++ cannot name a function '{name}' (a keyword, "
                                "a reserved name or a name of the C library or MACA runtime); "
                                f"rename it, e.g. to @{kernel_symbol(name)}")
        if name in self.globals:
            raise EmitError(op, f"MACA emitter: two functions would be called '{name}' in C++")
        self.globals[name] = owner
        return name

    # -- kernels --------------------------------------------------------------

    def kernel(self, op: ir.Operation, module_name: str) -> str:
        name = ir.StringAttr(op.attributes["sym_name"]).value
        # An identifier already (gpu_input_problems); keywords and reserved names are refused.
        self.global_name(op, name, (module_name, name))
        fn = _Function(self)
        block = op.regions[0].blocks[0]
        inputs = len(ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value).inputs)
        workgroup = int(ir.IntegerAttr(op.attributes["workgroup_attributions"]).value) \
            if "workgroup_attributions" in op.attributes else 0
        arguments = list(block.arguments)
        params = []
        for index, argument in enumerate(arguments[:inputs]):
            params.extend(self.parameter(fn, argument, f"arg{index}", op))
        threads = 1
        if "known_block_size" in op.attributes:
            threads = math.prod(int(x) for x in op.attributes["known_block_size"])
        info = KernelInfo(name, threads, 0)
        shared_lines = []
        for index, attribution in enumerate(arguments[inputs:]):
            memref_type = ir.MemRefType(attribution.type)
            shape = list(memref_type.shape)
            element = self.scalar(memref_type.element_type, op)
            count = math.prod(shape)
            buffer = f"smem{index}" if index < workgroup else f"local{index - workgroup}"
            if index < workgroup:
                info.shared_bytes += count * _bytes(memref_type.element_type)
                shared_lines.append(f"__shared__ {element} {buffer}[{count}] __attribute__((aligned(16)));")
            else:
                shared_lines.append(f"{element} {buffer}[{count}];")
            fn.memrefs[attribution] = View.row_major(buffer, [str(d) for d in shape])
            fn.elements[buffer] = count
        limit = self.target.memory.shared_bytes_per_workgroup
        if info.shared_bytes > limit:  # GPU-level input skips tile-lower-to-gpu's check
            raise EmitError(op, f"kernel '{name}' needs {info.shared_bytes} bytes of shared memory, "
                                f"{self.target.name} allows {limit}")
        self.count_mmas(op, info)
        self.kernels.append(info)
        for text in shared_lines:
            fn.line(text)
        self.block(fn, block, skip_terminator=True)
        mma = ", ".join(f"{n} x {b}" for b, n in sorted(info.mma_per_iteration.items())) or "none"
        summary = "// " + comment_text(
            f"kernel {name}: {threads} threads; shared memory {info.shared_bytes} bytes "
            f"({self.target.name} allows {limit}); MMA built-ins per main-loop iteration: {mma}")
        head = [
            summary,
            f"extern \"C\" __global__ __launch_bounds__({threads}) void {name}({', '.join(params)}) {{",
        ]
        return "\n".join(head + fn.lines + ["}", ""])

    def parameter(self, fn: _Function, value: ir.Value, name: str, op) -> list[str]:
        t = value.type
        if isinstance(t, ir.MemRefType):
            params = [f"{self.scalar(t.element_type, op)}* __restrict__ {name}"]
            params += [f"int64_t {extra}" for extra in memref_extras(t, name)]
            fn.memrefs[value] = View.of_parameter(name, ir.MemRefType(t))
            if _identity(t) and DYNAMIC not in ir.MemRefType(t).shape:
                fn.elements[name] = math.prod(ir.MemRefType(t).shape)
            return params
        fn.names[value] = name
        return [f"{self.type(t, op)} {name}"]

    @staticmethod
    def require_identity(t: ir.MemRefType, op: ir.Operation | ir.Location) -> None:
        if not _identity(t):
            raise EmitError(op, f"MACA emitter: a host argument of type {t} (a non-identity layout) is "
                                "not supported: the launcher copies contiguous row-major arrays")

    def count_mmas(self, kernel: ir.Operation, info: KernelInfo) -> None:
        """Built-in calls in the whole kernel and in the body of its first
        top-level scf.for (the main loop), per thread."""
        def calls(op, into):
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        inner = inner.operation
                        if inner.name == "func.call":
                            callee = ir.FlatSymbolRefAttr(inner.attributes["callee"]).value
                            into[callee] = into.get(callee, 0) + 1
                        calls(inner, into)
        calls(kernel, info.mma_total)
        for inner in kernel.regions[0].blocks[0].operations:
            if inner.operation.name == "scf.for":
                calls(inner.operation, info.mma_per_iteration)
                if info.mma_per_iteration:
                    break

    # -- statements -------------------------------------------------------------

    def block(self, fn: _Function, block: ir.Block, skip_terminator: bool = False) -> None:
        for op in block.operations:
            op = op.operation
            if op.name in ("gpu.return", "func.return") and skip_terminator:
                continue
            self.statement(fn, op)

    def statement(self, fn: _Function, op: ir.Operation) -> None:
        name = op.name
        handler = getattr(self, "op_" + name.replace(".", "_"), None)
        if handler is not None:
            handler(fn, op)
            return
        if name in _INT_BINARY or name in _UNSIGNED_BINARY or name in _FLOAT_BINARY \
                or name in _INT_MIN_MAX or name in _SIGNED_ROUNDED_DIVISION \
                or name in _FLOAT_CALLS or name in ("arith.negf", "arith.cmpi", "arith.cmpf",
                                                    "arith.select", "arith.extf", "arith.truncf",
                                                    "arith.extsi", "arith.extui", "arith.trunci",
                                                    "arith.index_cast", "arith.index_castui",
                                                    "arith.sitofp", "arith.uitofp", "arith.fptosi",
                                                    "arith.fptoui", "arith.bitcast"):
            self.elementwise(fn, op)
            return
        raise EmitError(op, f"MACA emitter: '{name}' is not supported")

    def define(self, fn: _Function, value: ir.Value, expression: str, op) -> str:
        name = fn.fresh()
        fn.line(f"{self.type(value.type, op)} {name} = {expression};")
        fn.names[value] = name
        return name

    def use(self, fn: _Function, value: ir.Value, op) -> str:
        if value not in fn.names:
            raise EmitError(op, f"MACA emitter: {op.name} uses a value this printer has not produced")
        return fn.names[value]

    # -- elementwise arithmetic ---------------------------------------------------

    def elementwise(self, fn: _Function, op: ir.Operation) -> None:
        result = op.results[0]
        operands = [self.use(fn, v, op) for v in op.operands]
        if isinstance(result.type, ir.VectorType):
            count = result.type.shape[0]
            lanes = []
            for i in range(count):
                lane_operands = [f"{o}[{i}]" if isinstance(v.type, ir.VectorType) else o
                                 for o, v in zip(operands, op.operands)]
                lanes.append(self.scalar_expression(op, lane_operands, _element(result.type),
                                                    [_element(v.type) for v in op.operands]))
            self.define(fn, result, "{" + ", ".join(lanes) + "}", op)
            return
        expression = self.scalar_expression(op, operands, result.type, [v.type for v in op.operands])
        self.define(fn, result, expression, op)

    def scalar_expression(self, op, operands: list[str], result: ir.Type, types: list[ir.Type]) -> str:
        name = op.name
        res = element_name(result)
        src = element_name(types[0]) if types else res
        if name in _INT_BINARY:
            a, b = operands
            if res == "i1":
                return f"(bool)({a} {_INT_BINARY[name]} {b})"
            return f"({self.scalar(result, op)})({a} {_INT_BINARY[name]} {b})"
        if name in _SIGNED_ROUNDED_DIVISION:
            a, b = operands
            return f"({self.scalar(result, op)}){_SIGNED_ROUNDED_DIVISION[name]}((int64_t){a}, (int64_t){b})"
        if name in _INT_MIN_MAX:
            a, b = operands
            compare, signed = _INT_MIN_MAX[name]
            cast = self.scalar(result, op) if signed else _UNSIGNED[res]
            return (f"({self.scalar(result, op)})((({cast}){a} {compare} ({cast}){b}) "
                    f"? ({cast}){a} : ({cast}){b})")
        if name in _UNSIGNED_BINARY:
            a, b = operands
            unsigned = _UNSIGNED[res]
            return f"({self.scalar(result, op)})(({unsigned}){a} {_UNSIGNED_BINARY[name]} ({unsigned}){b})"
        if name in _FLOAT_BINARY:
            wide = [self.widen(o, t) for o, t in zip(operands, types)]
            return self.narrow(f"({wide[0]} {_FLOAT_BINARY[name]} {wide[1]})", result)
        if name in _FLOAT_CALLS:
            wide = [self.widen(o, t) for o, t in zip(operands, types)]
            return self.narrow(f"{_FLOAT_CALLS[name]}({', '.join(wide)})", result)
        if name == "arith.negf":
            return self.narrow(f"(-{self.widen(operands[0], types[0])})", result)
        if name == "arith.cmpi":
            predicate = _CMPI_NAMES[ir.IntegerAttr(op.attributes["predicate"]).value]
            a, b = operands
            if predicate.startswith("u"):
                unsigned = _UNSIGNED[src]
                a, b = f"({unsigned}){a}", f"({unsigned}){b}"
            return f"({a} {_CMPI[predicate]} {b})"
        if name == "arith.cmpf":
            predicate = _CMPF_NAMES[ir.IntegerAttr(op.attributes["predicate"]).value]
            a, b = (self.widen(o, t) for o, t in zip(operands, types))
            return "(" + _CMPF[predicate].format(a=a, b=b) + ")"
        if name == "arith.select":
            return f"({operands[0]} ? {operands[1]} : {operands[2]})"
        if name in ("arith.extf", "arith.truncf"):
            if src == res:
                return operands[0]
            if src in _NARROW and res != "f32":
                # Through f32, which holds every narrow value exactly (fp8 -> f16
                # of an fp8 gemm computed in f16): the one rounding is the last.
                wide = self.widen(operands[0], types[0])
                return self.narrow(wide, result) if res in _NARROW else f"({self.scalar(result, op)}){wide}"
            if src in _NARROW or res in _NARROW:
                if "f32" not in (src, res):  # f64 -> narrow through f32 would round twice
                    raise EmitError(op, f"MACA emitter: {name} from {src} to {res} is not supported")
                return f"tm_cvt_{_SCALARS[src][1]}_{_SCALARS[res][1]}({operands[0]})"
            return f"({self.scalar(result, op)}){operands[0]}"
        if name in ("arith.sitofp", "arith.uitofp"):
            value = operands[0] if name == "arith.sitofp" else f"({_UNSIGNED[src]}){operands[0]}"
            return self.narrow(f"(float){value}", result) if res in _NARROW \
                else f"({self.scalar(result, op)}){value}"
        if name in ("arith.fptosi", "arith.fptoui"):
            return f"({self.scalar(result, op)}){self.widen(operands[0], types[0])}"
        if name in ("arith.extsi", "arith.trunci", "arith.index_cast"):
            return f"({self.scalar(result, op)}){operands[0]}"
        if name in ("arith.extui", "arith.index_castui"):
            return f"({self.scalar(result, op)})({_UNSIGNED[src]}){operands[0]}"
        if name == "arith.bitcast":
            return f"tm_bitcast<{self.scalar(result, op)}>({operands[0]})"
        raise EmitError(op, f"MACA emitter: '{name}' is not supported")

    @staticmethod
    def widen(expression: str, t: ir.Type) -> str:
        """A float expression of `t` as float (narrow types) or as it is."""
        name = element_name(t)
        if name in _NARROW:
            return f"tm_cvt_{_SCALARS[name][1]}_f32({expression})"
        return expression

    @staticmethod
    def narrow(expression: str, t: ir.Type) -> str:
        name = element_name(t)
        if name in _NARROW:
            return f"tm_cvt_f32_{_SCALARS[name][1]}({expression})"
        return expression

    # -- constants ---------------------------------------------------------------

    def literal(self, attr: ir.Attribute, t: ir.Type, op) -> str:
        name = element_name(t)
        if name == "i1":
            return "true" if ir.IntegerAttr(attr).value else "false"
        if name in ("index", "i8", "i16", "i32", "i64"):
            value = ir.IntegerAttr(attr).value
            if name == "index" or name == "i64":
                return f"INT64_C({value})"
            return f"({self.scalar(t, op)}){value}"
        value = ir.FloatAttr(attr).value
        if name == "f32":
            return _float_literal(value, "f")
        if name == "f64":
            return _float_literal(value, "")
        if name in _NARROW:
            bits = np.array([value], dtype=dtype_of(name)).view(
                np.uint16 if name in ("f16", "bf16") else np.uint8)[0]
            return f"tm_bitcast<{self.scalar(t, op)}>(({'uint16_t' if bits.dtype == np.uint16 else 'uint8_t'}){int(bits)}u)"
        raise EmitError(op, f"MACA emitter: constant of type {t} is not supported")

    def op_arith_constant(self, fn: _Function, op) -> None:
        result = op.results[0]
        attr = op.attributes["value"]
        if isinstance(result.type, ir.VectorType):
            dense = ir.DenseElementsAttr(attr)
            element = result.type.element_type
            count = result.type.shape[0]
            if dense.is_splat:
                values = [self.literal(dense.get_splat_value(), element, op)] * count
            else:
                values = [self.literal(dense[i], element, op) for i in range(count)]
            self.define(fn, result, "{" + ", ".join(values) + "}", op)
            return
        fn.names[result] = self.literal(attr, result.type, op)

    # -- gpu ---------------------------------------------------------------------

    def gpu_id(self, fn, op) -> None:
        """thread_id/block_id/block_dim/grid_dim x|y|z as MACA's built-in variables."""
        variable = _GPU_IDS[op.name]
        fn.names[op.results[0]] = f"(int64_t){variable}.{_dimension(op)}"
        # Unsigned 32-bit built-ins: as an int32_t they are what a cast to i32 gives.
        fn.narrow[op.results[0]] = f"(int32_t){variable}.{_dimension(op)}"

    op_gpu_thread_id = op_gpu_block_id = op_gpu_block_dim = op_gpu_grid_dim = gpu_id

    def op_gpu_barrier(self, fn, op) -> None:
        fn.line("__syncthreads();")

    def linear_thread(self) -> str:
        return "(int64_t)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))"

    def op_gpu_lane_id(self, fn, op) -> None:
        fn.names[op.results[0]] = f"({self.linear_thread()} % {self.target.compute.wave_size})"

    def op_gpu_shuffle(self, fn, op) -> None:
        """A wave shuffle (32-bit values) and its `valid` flag: the source lane
        is inside the calling lane's segment of `width` lanes (tm_shuffle_valid)."""
        text = str(op.attributes["mode"])
        mode = text[text.rindex(" ") + 1:].rstrip(">")
        value, offset, width = (self.use(fn, v, op) for v in op.operands)
        t = op.operands[0].type
        if _bytes(t) != 4 or isinstance(t, ir.VectorType):
            raise EmitError(op, f"MACA emitter: gpu.shuffle of {t}: the wave shuffles move 32-bit values")
        function, code = _SHUFFLES[mode]
        wave = self.target.compute.wave_size
        lane = f"(int)({self.linear_thread()} % {wave})"
        self.define(fn, op.results[0],
                    f"{function}(TM_WAVE_MASK, {value}, (int){offset}, (int){width})", op)
        self.define(fn, op.results[1], f"tm_shuffle_valid({code}, {lane}, (int){offset}, (int){width})", op)

    # -- memory ------------------------------------------------------------------

    def element_pointer(self, fn: _Function, memref: ir.Value, indices, op) -> str:
        if memref not in fn.memrefs:
            raise EmitError(op, "MACA emitter: this memref is not a kernel argument, an attribution "
                                "or a subview of one")
        view = fn.memrefs[memref]
        narrow = [self.index32(fn, index) for index in indices]
        elements = fn.elements.get(view.pointer)
        if elements is not None and elements < 2 ** 31 and None not in narrow and \
                all(stride.isdigit() for stride in view.strides):
            # An access inside an allocation of fewer than 2^31 elements: its
            # element offset and every partial sum of it fit an int32_t
            # (indices and strides are not negative; an access outside the
            # allocation is undefined at the GPU level already).
            linear = view.offset if view.offset.isdigit() else f"(int32_t)({view.offset})"
            for stride, term in zip(view.strides, narrow):
                linear = _sum(linear, term if stride == "1" else f"{term} * {stride}")
            return f"{view.pointer}[{linear}]"
        linear = view.offset
        for stride, index in zip(view.strides, indices):
            term = self.use(fn, index, op)
            linear = _sum(linear, term if stride == "1" else f"{term} * {stride}")
        return f"{view.pointer}[{linear}]"

    @staticmethod
    def index32(fn: _Function, index: ir.Value) -> str | None:
        """An index operand as a 32-bit C++ expression, where it is one already:
        a cast of an i32 (the index arithmetic the metax stage narrowed,
        stages.NARROW_INDICES), a value with an int32_t form (`fn.narrow`) or
        a constant below 2^31; None otherwise."""
        if index in fn.narrow:
            return fn.narrow[index]
        owner = index.owner
        if not isinstance(owner, ir.OpView | ir.Operation):
            return None
        if owner.name in ("arith.index_castui", "arith.index_cast"):
            source = owner.operands[0]
            if isinstance(source.type, ir.IntegerType) and source.type.width == 32 and source in fn.names:
                return fn.names[source]
        if owner.name == "arith.constant":
            value = ir.IntegerAttr(owner.attributes["value"]).value
            return str(value) if 0 <= value < 2 ** 31 else None
        return None

    def op_arith_index_cast(self, fn, op) -> None:
        """The seams of the metax stage's 32-bit index arithmetic
        (stages.NARROW_INDICES) print no variables of their own. An i32
        widened to index is written where it is used: most such values are
        only memory indices, which `element_pointer` takes in 32 bits through
        `index32`, so a 64-bit variable would be dead. An index narrowed to
        i32 that has an int32_t form (`fn.narrow`) is that form."""
        source, result = op.operands[0], op.results[0]
        if isinstance(source.type, ir.VectorType):
            self.elementwise(fn, op)
        elif isinstance(result.type, ir.IndexType) and _is_i32(source.type):
            fn.names[result] = self.scalar_expression(op, [self.use(fn, source, op)], result.type,
                                                      [source.type])
        elif _is_i32(result.type) and source in fn.narrow:
            fn.names[result] = fn.narrow[source]
        else:
            self.elementwise(fn, op)

    op_arith_index_castui = op_arith_index_cast

    def op_memref_subview(self, fn, op) -> None:
        source = op.operands[0]
        if source not in fn.memrefs:
            raise EmitError(op, "MACA emitter: memref.subview of an unknown memref")
        view = fn.memrefs[source]
        small = fn.elements.get(view.pointer, 2 ** 31) < 2 ** 31
        # Offsets into an allocation of fewer than 2^31 elements in 32 bits
        # where they are (`element_pointer` says why that is exact).
        dynamic = iter((small and self.index32(fn, v)) or self.use(fn, v, op) for v in list(op.operands)[1:])
        marker = ir.ShapedType.get_dynamic_size()

        def values(name):
            return [next(dynamic) if x == marker else str(x) for x in op.attributes[name]]

        offsets, sizes, steps = values("static_offsets"), values("static_sizes"), values("static_strides")
        offset = view.offset
        for start, stride in zip(offsets, view.strides):
            if start != "0":
                offset = _sum(offset, start if stride == "1" else f"{start} * {stride}")
        strides = [stride if step == "1" else _product(stride, step) for stride, step in zip(view.strides, steps)]
        # Rank reduction drops unit dimensions the result type does not have (their index is 0).
        drop = len(sizes) - ir.MemRefType(op.results[0].type).rank
        kept_strides, kept_sizes = [], []
        for size, stride in zip(sizes, strides):
            if drop > 0 and size == "1":
                drop -= 1
                continue
            kept_strides.append(stride)
            kept_sizes.append(size)
        fn.memrefs[op.results[0]] = View(view.pointer, f"({offset})" if "+" in offset else offset,
                                         kept_strides, kept_sizes)

    def view_of(self, fn, value: ir.Value, op) -> View:
        if value not in fn.memrefs:
            raise EmitError(op, f"MACA emitter: {op.name} of a memref that is not an argument, an "
                                "attribution or a view of one")
        return fn.memrefs[value]

    def sizes_of(self, fn, result: ir.Value, dynamic: list[str]) -> list[str]:
        """The extents of `result`'s type, the dynamic ones from `dynamic` in order."""
        values = iter(dynamic)
        return [next(values) if d == DYNAMIC else str(d) for d in ir.MemRefType(result.type).shape]

    def op_memref_cast(self, fn, op) -> None:
        view = self.view_of(fn, op.operands[0], op)
        sizes = [size if d == DYNAMIC else str(d)
                 for size, d in zip(view.sizes, ir.MemRefType(op.results[0].type).shape)]
        fn.memrefs[op.results[0]] = View(view.pointer, view.offset, view.strides, sizes)

    @staticmethod
    def reassociation(op) -> list[list[int]]:
        return [[int(ir.IntegerAttr(i).value) for i in group] for group in op.attributes["reassociation"]]

    def op_memref_collapse_shape(self, fn, op) -> None:
        # Each group is contiguous (the op's verifier): its extent is the product,
        # its stride the innermost dimension's.
        view = self.view_of(fn, op.operands[0], op)
        sizes, strides = [], []
        for group in self.reassociation(op):
            size = "1"
            for axis in group:
                size = view.sizes[axis] if size == "1" else _product(size, view.sizes[axis])
            sizes.append(size)
            strides.append(view.strides[group[-1]] if group else "1")
        fn.memrefs[op.results[0]] = View(view.pointer, view.offset, strides, sizes)

    def op_memref_expand_shape(self, fn, op) -> None:
        view = self.view_of(fn, op.operands[0], op)
        sizes = self.sizes_of(fn, op.results[0], [self.use(fn, v, op) for v in list(op.operands)[1:]])
        strides = [""] * len(sizes)
        for source_axis, group in enumerate(self.reassociation(op)):
            running = view.strides[source_axis]
            for axis in reversed(group):  # innermost first: the source dimension's stride
                strides[axis] = running
                running = _product(running, sizes[axis]) if running != "1" else sizes[axis]
        fn.memrefs[op.results[0]] = View(view.pointer, view.offset, strides, sizes)

    def op_memref_reinterpret_cast(self, fn, op) -> None:
        # Offset, sizes and strides are given from the source's base pointer.
        view = self.view_of(fn, op.operands[0], op)
        dynamic = iter(self.use(fn, v, op) for v in list(op.operands)[1:])

        def values(name):
            return [next(dynamic) if x == DYNAMIC else str(x) for x in op.attributes[name]]

        (offset,), sizes, strides = values("static_offsets"), values("static_sizes"), values("static_strides")
        fn.memrefs[op.results[0]] = View(view.pointer, offset, strides, sizes)

    def op_memref_view(self, fn, op) -> None:
        # A typed row-major buffer at a byte shift of a 1-D i8 buffer.
        view = self.view_of(fn, op.operands[0], op)
        shift = self.use(fn, op.operands[1], op)
        result = ir.MemRefType(op.results[0].type)
        element = self.scalar(result.element_type, op)
        name = fn.fresh("view")
        fn.line(f"{element}* {name} = ({element}*)((int8_t*){view.pointer} + {view.offset} + {shift});")
        sizes = self.sizes_of(fn, op.results[0], [self.use(fn, v, op) for v in list(op.operands)[2:]])
        fn.memrefs[op.results[0]] = View.row_major(name, sizes)

    def op_llvm_intr_trap(self, fn, op) -> None:
        """A kernel's failed `assert` (tile-lower-to-gpu's trap)."""
        fn.line("__builtin_trap();")

    def op_memref_alloca(self, fn, op) -> None:
        """A thread's own array (per-thread code's T.alloc_local): a local C
        array of the static shape, row-major."""
        memref_type = ir.MemRefType(op.results[0].type)
        shape = list(memref_type.shape)
        if op.operands or any(d == DYNAMIC for d in shape):
            raise EmitError(op, "MACA emitter: memref.alloca of a dynamic shape is not supported")
        element = self.scalar(memref_type.element_type, op)
        name = fn.fresh("own")
        fn.line(f"{element} {name}[{max(1, math.prod(shape))}];")
        fn.memrefs[op.results[0]] = View.row_major(name, [str(d) for d in shape])
        fn.elements[name] = math.prod(shape)

    def op_memref_load(self, fn, op) -> None:
        self.define(fn, op.results[0], self.element_pointer(fn, op.operands[0], list(op.operands)[1:], op), op)

    def op_memref_store(self, fn, op) -> None:
        target = self.element_pointer(fn, op.operands[1], list(op.operands)[2:], op)
        fn.line(f"{target} = {self.use(fn, op.operands[0], op)};")

    def op_memref_atomic_rmw(self, fn, op) -> None:
        kind = ATOMIC_RMW_KINDS.get(ir.IntegerAttr(op.attributes["kind"]).value)
        element = str(ir.MemRefType(op.operands[1].type).element_type)
        if kind is None or element not in ATOMIC_ELEMENT_TYPES[kind]:
            raise EmitError(op, f"MACA emitter: memref.atomic_rmw {op.attributes['kind']} of {element} is "
                                "not supported (add of f32, i32, f16, bf16; max and min of f32, i32)")
        # MACA's atomicAdd/Max/Min (int, f32 add); float max/min and 16-bit
        # float adds: the prelude's CAS loops.
        target = self.element_pointer(fn, op.operands[1], list(op.operands)[2:], op)
        value = self.use(fn, op.operands[0], op)
        if element in ("f16", "bf16"):
            call = f"tm_atomic_add_16<tm_{element}, tm_cvt_{element}_f32, tm_cvt_f32_{element}>(&{target}, {value})"
        elif element == "f32" and kind != "add":
            call = f"tm_atomic_extremum_f32(&{target}, {value}, {'true' if kind == 'max' else 'false'})"
        else:
            call = f"{ {'add': 'atomicAdd', 'max': 'atomicMax', 'min': 'atomicMin'}[kind]}(&{target}, {value})"
        self.define(fn, op.results[0], call, op)

    def op_memref_dim(self, fn, op) -> None:
        memref, index = op.operands
        axis = self.use(fn, index, op)
        dims = fn.memrefs[memref].sizes
        try:
            fn.names[op.results[0]] = f"(int64_t){dims[int(axis.removeprefix('INT64_C(').rstrip(')'))]}"
        except (ValueError, IndexError):
            raise EmitError(op, "MACA emitter: memref.dim needs a constant axis of the memref") from None

    def op_vector_load(self, fn, op) -> None:
        address = "&" + self.element_pointer(fn, op.operands[0], list(op.operands)[1:], op)
        vector_type = self.type(op.results[0].type, op)
        self.define(fn, op.results[0], f"tm_vload<{vector_type}>({address})", op)

    def op_vector_store(self, fn, op) -> None:
        address = "&" + self.element_pointer(fn, op.operands[1], list(op.operands)[2:], op)
        fn.line(f"tm_vstore({address}, {self.use(fn, op.operands[0], op)});")

    # -- vectors -----------------------------------------------------------------

    def op_vector_from_elements(self, fn, op) -> None:
        values = [self.use(fn, v, op) for v in op.operands]
        self.define(fn, op.results[0], "{" + ", ".join(values) + "}", op)

    def op_vector_broadcast(self, fn, op) -> None:
        source = op.operands[0]
        if isinstance(source.type, ir.VectorType):
            raise EmitError(op, "MACA emitter: vector.broadcast of a vector is not supported")
        value = self.use(fn, source, op)
        count = op.results[0].type.shape[0]
        self.define(fn, op.results[0], "{" + ", ".join([value] * count) + "}", op)

    op_vector_splat = op_vector_broadcast

    def position(self, fn, op, fixed: int) -> str:
        """The one position of a 1-D vector.extract/insert (after `fixed` operands), static or not."""
        positions = [int(x) for x in op.attributes["static_position"]]
        dynamic = list(op.operands)[fixed:]
        if len(positions) != 1 or (positions[0] < 0 and positions[0] != DYNAMIC) or len(dynamic) > 1:
            raise EmitError(op, f"MACA emitter: {op.name} needs one position (1-D vectors)")
        return self.use(fn, dynamic[0], op) if positions[0] == DYNAMIC else str(positions[0])

    def op_vector_extract(self, fn, op) -> None:
        position = self.position(fn, op, 1)
        source = self.use(fn, op.operands[0], op)
        self.define(fn, op.results[0], f"{source}[{position}]", op)

    def op_vector_insert(self, fn, op) -> None:
        position = self.position(fn, op, 2)
        value, dest = (self.use(fn, v, op) for v in op.operands[:2])
        name = self.define(fn, op.results[0], dest, op)
        fn.line(f"{name}[{position}] = {value};")

    def op_vector_shuffle(self, fn, op) -> None:
        """Elements of two 1-D vectors picked by the mask (columns_of's
        interleavings for a transposed store into shared memory)."""
        first, second = op.operands
        if any(ir.VectorType(v.type).rank != 1 for v in (first, second, op.results[0])):
            raise EmitError(op, "MACA emitter: vector.shuffle of vectors that are not 1-D")
        names = [self.use(fn, v, op) for v in (first, second)]
        size = ir.VectorType(first.type).shape[0]
        picked = [f"{names[0]}[{i}]" if i < size else f"{names[1]}[{i - size}]"
                  for i in ir.DenseI64ArrayAttr(op.attributes["mask"])]
        self.define(fn, op.results[0], "{" + ", ".join(picked) + "}", op)

    def op_vector_interleave(self, fn, op) -> None:
        """[a0, b0, a1, b1, ...] of two 1-D vectors (what canonicalization makes
        of an interleaving vector.shuffle)."""
        first, second = op.operands
        if ir.VectorType(first.type).rank != 1:
            raise EmitError(op, "MACA emitter: vector.interleave of vectors that are not 1-D")
        a, b = (self.use(fn, v, op) for v in (first, second))
        picked = [f"{name}[{i}]" for i in range(ir.VectorType(first.type).shape[0]) for name in (a, b)]
        self.define(fn, op.results[0], "{" + ", ".join(picked) + "}", op)

    def op_vector_bitcast(self, fn, op) -> None:
        target = self.type(op.results[0].type, op)
        self.define(fn, op.results[0], f"tm_bitcast<{target}>({self.use(fn, op.operands[0], op)})", op)

    def op_func_call(self, fn, op) -> None:
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        if not callee.startswith("__builtin_mxc_mma_") or not is_identifier(callee):
            raise EmitError(op, f"MACA emitter: call of @{callee} (only the MMA built-ins are supported)")
        arguments = ", ".join(self.use(fn, v, op) for v in op.operands)
        self.define(fn, op.results[0], f"{callee}({arguments})", op)

    # -- control flow ------------------------------------------------------------

    def op_scf_for(self, fn, op) -> None:
        lb, ub, step = (self.use(fn, v, op) for v in list(op.operands)[:3])
        body = op.regions[0].blocks[0]
        iv, iter_args = body.arguments[0], list(body.arguments)[1:]
        carried = self.loop_variables(fn, "acc", iter_args, op.results, op, inits=list(op.operands)[3:])
        index = fn.fresh("i")
        fn.names[iv] = index
        lower, upper, increment = (constant_int(v) for v in list(op.operands)[:3])
        if isinstance(iv.type, ir.IndexType) and None not in (lower, upper, increment) and \
                lower >= 0 and increment > 0 and upper + increment < 2 ** 31:
            # Constant bounds: every value of the counter, up to the one that
            # ends the loop (below upper + step), fits an int32_t.
            fn.names[iv] = f"(int64_t){index}"
            fn.narrow[iv] = index
            fn.line(f"for (int32_t {index} = {lower}; {index} < {upper}; {index} += {increment}) {{")
        else:
            fn.line(f"for (int64_t {index} = {lb}; {index} < {ub}; {index} += {step}) {{")
        fn.depth += 1
        self.body_with_yield(fn, body, carried, op)
        fn.depth -= 1
        fn.line("}")

    def loop_variables(self, fn, prefix: str, arguments, results, op, inits=None) -> list[str]:
        """One C++ variable per block argument of a loop region (initialised
        from `inits` where given), named for the argument and the matching
        result alike; the names."""
        names = []
        for position, argument in enumerate(arguments):
            name = fn.fresh(prefix)
            initial = f" = {self.use(fn, inits[position], op)}" if inits is not None else ""
            fn.line(f"{self.type(argument.type, op)} {name}{initial};")
            fn.names[argument] = name
            if position < len(results):
                fn.names[results[position]] = name
            names.append(name)
        return names

    def body_with_yield(self, fn, block: ir.Block, targets: list[str], op) -> None:
        operations = [o.operation for o in block.operations]
        for inner in operations[:-1]:
            self.statement(fn, inner)
        terminator = operations[-1]
        if terminator.name != "scf.yield":
            raise EmitError(terminator, f"MACA emitter: unexpected terminator {terminator.name}")
        values = [self.use(fn, v, terminator) for v in terminator.operands]
        if not values:
            return
        # Through temporaries: a yield may pass one carried value into another's place.
        temporaries = []
        for value, target_value in zip(values, terminator.operands):
            name = fn.fresh("y")
            fn.line(f"{self.type(target_value.type, op)} {name} = {value};")
            temporaries.append(name)
        for target, temporary in zip(targets, temporaries):
            fn.line(f"{target} = {temporary};")

    def op_scf_while(self, fn, op) -> None:
        """`while (true) { condition region; if (!c) break; body }`: the carried
        values in variables the body's yield assigns, the forwarded ones in
        variables that are the loop's results and the body's arguments."""
        before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
        carried = self.loop_variables(fn, "w", before.arguments, [], op, inits=list(op.operands))
        forwarded = self.loop_variables(fn, "wr", after.arguments, op.results, op)
        fn.line("while (true) {")
        fn.depth += 1
        operations = [o.operation for o in before.operations]
        for inner in operations[:-1]:
            self.statement(fn, inner)
        condition = operations[-1]
        if condition.name != "scf.condition":
            raise EmitError(condition, f"MACA emitter: unexpected terminator {condition.name}")
        for target, value in zip(forwarded, list(condition.operands)[1:]):
            fn.line(f"{target} = {self.use(fn, value, condition)};")
        fn.line(f"if (!({self.use(fn, condition.operands[0], condition)})) break;")
        self.body_with_yield(fn, after, carried, op)
        fn.depth -= 1
        fn.line("}")

    def op_scf_if(self, fn, op) -> None:
        condition = self.use(fn, op.operands[0], op)
        targets = []
        for result in op.results:
            name = fn.fresh("r")
            fn.line(f"{self.type(result.type, op)} {name};")
            fn.names[result] = name
            targets.append(name)
        fn.line(f"if ({condition}) {{")
        fn.depth += 1
        self.body_with_yield(fn, op.regions[0].blocks[0], targets, op)
        fn.depth -= 1
        if op.regions[1].blocks and (len(list(op.regions[1].blocks[0].operations)) > 1 or targets):
            fn.line("} else {")
            fn.depth += 1
            self.body_with_yield(fn, op.regions[1].blocks[0], targets, op)
            fn.depth -= 1
        fn.line("}")

    # -- host launchers ------------------------------------------------------------

    # Host ops a launcher runs besides the launches: views of the arguments
    # (their device copies) and the index arithmetic that sizes them.
    HOST_VIEWS = frozenset({"memref.subview", "memref.collapse_shape", "memref.expand_shape",
                            "memref.reinterpret_cast", "memref.cast", "memref.dim"})

    def launcher(self, op: ir.Operation) -> str:
        source_name = ir.StringAttr(op.attributes["sym_name"]).value
        # A host function keeps its name when C++ can spell it (kernel_symbol).
        name = self.global_name(op, kernel_symbol(source_name), source_name)
        fn = _Function(self)
        block = op.regions[0].blocks[0]
        params, buffers = [], []
        for index, argument in enumerate(block.arguments):
            t = argument.type
            host = f"host{index}"
            if isinstance(t, ir.MemRefType):
                self.require_identity(t, argument.location)
                element = self.scalar(t.element_type, op)
                params.append(f"{element}* {host}")
                params += [f"int64_t {extra}" for extra in memref_extras(t, host)]
                dims = View.of_parameter(host, ir.MemRefType(t)).sizes
                device = f"dev{index}"
                size = " * ".join([*dims, f"sizeof({element})"])
                buffers.append((host, device, size, element))
                # Views and launches see the device copy.
                fn.memrefs[argument] = View.row_major(device, dims)
            else:
                params.append(f"{self.type(t, op)} {host}")
                fn.names[argument] = host
        for host, device, size, element in buffers:
            fn.line(f"{element}* {device} = nullptr;")
            fn.line(f"TM_CHECK(mcMalloc((void**)&{device}, {size}));")
            fn.line(f"TM_CHECK(mcMemcpy({device}, {host}, {size}, mcMemcpyHostToDevice));")
        for inner in block.operations:
            inner = inner.operation
            if inner.name == "gpu.launch_func":
                self.launch(fn, inner)
            elif inner.name == "gpu.memset":
                self.memset(fn, inner, block.arguments, buffers)
            elif inner.name == "func.return":
                continue
            elif inner.name.startswith("arith.") or inner.name in self.HOST_VIEWS:
                self.statement(fn, inner)
            else:
                raise EmitError(inner, f"MACA emitter: host code other than kernel launches, views of "
                                       f"the arguments and arith ('{inner.name}') is not supported in "
                                       "the launcher")
        fn.line("TM_CHECK(mcDeviceSynchronize());")
        for host, device, size, _element in buffers:
            fn.line(f"TM_CHECK(mcMemcpy({host}, {device}, {size}, mcMemcpyDeviceToHost));")
            fn.line(f"TM_CHECK(mcFree({device}));")
        fn.line("return 0;")
        head = ["// host launcher: copies every memref argument to the device and back",
                f"extern \"C\" int {name}({', '.join(params)}) {{"]
        return "\n".join(head + fn.lines + ["}", ""])

    def memset(self, fn, op, arguments, buffers) -> None:
        """A host `gpu.memset` of a whole memref argument to +0 (a split-K
        kernel's C): `mcMemset` of its device copy."""
        destination, value = op.operands[0], op.operands[-1]
        if len(op.operands) != 2 or len(op.results) or destination not in list(arguments) \
                or not _is_positive_zero(value):
            raise EmitError(op, "MACA emitter: gpu.memset is supported synchronously, of a whole memref "
                                "argument, to zero")
        memrefs = [a for a in arguments if isinstance(a.type, ir.MemRefType)]  # one buffer each, in order
        _host, device, size, _element = buffers[memrefs.index(destination)]
        fn.line(f"TM_CHECK(mcMemset({device}, 0, {size}));")

    def launch(self, fn, op) -> None:
        segments = [int(x) for x in op.attributes["operandSegmentSizes"]]
        operands, groups, start = list(op.operands), [], 0
        for size in segments:
            groups.append(operands[start:start + size])
            start += size
        if groups[0] or any(groups[7:10]) or (len(groups) > 12 and groups[12]):
            raise EmitError(op, "MACA emitter: gpu.launch_func with async tokens or clusters is not supported")
        grid = [self.use(fn, v, op) for g in groups[1:4] for v in g]
        block = [self.use(fn, v, op) for g in groups[4:7] for v in g]
        shared = self.use(fn, groups[10][0], op) if groups[10] else "0"
        path = ir.SymbolRefAttr(op.attributes["kernel"]).value
        kernel = path[-1]
        if self.globals.get(kernel) != tuple(path):
            raise EmitError(op, f"MACA emitter: gpu.launch_func of {op.attributes['kernel']}, "
                                "which is not a kernel of this module")
        fn.line("{")
        fn.depth += 1
        pointers = []
        for value in groups[11]:
            if not isinstance(value.type, ir.MemRefType):
                pointers.append(f"&{self.lvalue(fn, self.use(fn, value, op), self.type(value.type, op))}")
                continue
            # The kernel's parameters for a memref (View.of_parameter): its base
            # pointer, then what its type leaves dynamic.
            view = self.view_of(fn, value, op)
            element = self.scalar(ir.MemRefType(value.type).element_type, op)
            pointers.append(f"&{self.lvalue(fn, view.pointer, element + '*')}")
            t = ir.MemRefType(value.type)
            extras = {f"d{axis}": size for axis, size in enumerate(view.sizes)}
            extras["off"] = view.offset
            extras.update({f"s{axis}": stride for axis, stride in enumerate(view.strides)})
            for extra in memref_extras(t, ""):
                pointers.append(f"&{self.lvalue(fn, extras[extra.removeprefix('_')], 'int64_t')}")
        fn.line(f"void* args[] = {{{', '.join(pointers)}}};")
        grid_dims = ", ".join(_as_unsigned(g) for g in grid)
        block_dims = ", ".join(_as_unsigned(b) for b in block)
        fn.line(f"TM_CHECK(mcLaunchKernel(TM_KERNEL(::{kernel}), dim3({grid_dims}), "
                f"dim3({block_dims}), args, (size_t)({shared}), nullptr));")
        fn.depth -= 1
        fn.line("}")

    @staticmethod
    def lvalue(fn, expression: str, c_type: str) -> str:
        """`expression` as a variable (void* args[] points at each argument)."""
        if is_identifier(expression):
            return expression
        name = fn.fresh("arg")
        fn.line(f"{c_type} {name} = {expression};")
        return name


def _as_unsigned(expression: str) -> str:
    """A C expression cast to unsigned (mcLaunchKernel's dim3 takes unsigned extents)."""
    return f"(unsigned){expression}"


def _is_i32(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and t.width == 32


def _dimension(op) -> str:
    text = str(op.attributes["dimension"])
    return text[text.rindex(" ") + 1:].rstrip(">") if " " in text else text[-1]


def _element(t: ir.Type) -> ir.Type:
    return t.element_type if isinstance(t, ir.VectorType) else t


def _bytes(t: ir.Type) -> int:
    name = element_name(t)
    if name == "index":
        return 8
    width = ir.IntegerType(t).width if isinstance(t, ir.IntegerType) else ir.FloatType(t).width
    return max(1, width // 8)


def _float_literal(value: float, suffix: str) -> str:
    if math.isnan(value):
        return "NAN" if suffix else "(double)NAN"
    if math.isinf(value):
        return ("-" if value < 0 else "") + ("INFINITY" if suffix else "(double)INFINITY")
    if suffix:
        value = struct.unpack("f", struct.pack("f", value))[0]
    return f"{float(value).hex()}{suffix}"


def print_maca(module: ir.Operation, target) -> MacaSource:
    """The MACA C++ source of a GPU-level module for a metax `target`."""
    with module.context:
        return MacaPrinter(module, target).print_module()


PRELUDE = r"""#include <cstdint>
#include <cstdio>
#include <cmath>
#ifndef TILEMLIR_MACA_HOST
// ---- for mxcc (a CPU test harness defines TILEMLIR_MACA_HOST and these names itself)
#include <mc_runtime.h>
#define TM_VECTOR(element, lanes) element __attribute__((ext_vector_type(lanes)))
#define TM_KERNEL(kernel) ((const void*)(kernel))
#define TM_INLINE __device__ __host__ inline
typedef _Float16 tm_f16;
typedef uint16_t tm_bf16;       // bit patterns; converted by tm_cvt_* below
typedef uint8_t tm_f8e4m3;      // OCP E4M3 (no infinities, 0x7f/0xff NaN)
typedef uint8_t tm_f8e5m2;      // OCP E5M2 (IEEE-like)
typedef uint8_t tm_f8e4m3fnuz;  // FNUZ encodings: only as storage (decoded with integer ops)
typedef uint8_t tm_f8e5m2fnuz;
template <class To, class From> TM_INLINE To tm_bitcast(From from) {
  static_assert(sizeof(To) == sizeof(From), "tm_bitcast: sizes differ");
  To to; __builtin_memcpy(&to, &from, sizeof(To)); return to;
}
template <class V, class T> TM_INLINE V tm_vload(const T* p) { V v; __builtin_memcpy(&v, p, sizeof(V)); return v; }
template <class V, class T> TM_INLINE void tm_vstore(T* p, V v) { __builtin_memcpy(p, &v, sizeof(V)); }
TM_INLINE float tm_maximumf(float a, float b) { return (a != a || b != b) ? NAN : fmaxf(a, b); }
TM_INLINE float tm_minimumf(float a, float b) { return (a != a || b != b) ? NAN : fminf(a, b); }
TM_INLINE float tm_rsqrt(float a) { return 1.0f / sqrtf(a); }
// arith.floordivsi / ceildivsi: C's division truncates; a remainder of the
// other sign than the quotient's direction moves it one step.
TM_INLINE int64_t tm_floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
TM_INLINE int64_t tm_ceildiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q; }
TM_INLINE float tm_cvt_f16_f32(tm_f16 x) { return (float)x; }
TM_INLINE tm_f16 tm_cvt_f32_f16(float x) { return (tm_f16)x; }
TM_INLINE float tm_cvt_bf16_f32(tm_bf16 x) { return tm_bitcast<float>((uint32_t)x << 16); }
TM_INLINE tm_bf16 tm_cvt_f32_bf16(float x) {
  uint32_t u = tm_bitcast<uint32_t>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (tm_bf16)((u >> 16) | 0x40);  // quiet NaN
  return (tm_bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);                  // nearest even
}
// An 8-bit float with `e` exponent bits, bias 2^(e-1)-1; `ieee`: E5M2-style
// infinities and NaNs, else E4M3FN-style (S.1111.111 is NaN, no infinities).
TM_INLINE float tm_f8_to_f32(uint8_t x, int e, bool ieee) {
  int m = 7 - e, bias = (1 << (e - 1)) - 1;
  int exponent = (x >> m) & ((1 << e) - 1), mantissa = x & ((1 << m) - 1);
  float sign = (x & 0x80) ? -1.0f : 1.0f;
  if (ieee && exponent == (1 << e) - 1) return mantissa ? NAN : sign * INFINITY;
  if (!ieee && (x & 0x7f) == 0x7f) return NAN;
  if (exponent == 0) return sign * ldexpf((float)mantissa, 1 - bias - m);
  return sign * ldexpf((float)(mantissa | (1 << m)), exponent - bias - m);
}
TM_INLINE uint8_t tm_f32_to_f8(float f, int e, bool ieee) {
  int m = 7 - e, bias = (1 << (e - 1)) - 1;
  uint8_t sign = signbit(f) ? 0x80 : 0;
  float a = fabsf(f);
  uint8_t nan = ieee ? (uint8_t)(0x7e) : (uint8_t)0x7f;
  if (a != a) return sign | nan;
  float largest = ieee ? ldexpf((float)((2 << m) - 1), (1 << e) - 2 - bias - m)
                       : ldexpf((float)((2 << m) - 2), (1 << e) - 1 - bias - m);
  float step_above = ieee ? ldexpf(1.0f, (1 << e) - 2 - bias - m - 1)
                          : ldexpf(1.0f, (1 << e) - 1 - bias - m - 1);
  if (ieee ? a >= largest + step_above : a > largest + step_above)  // ties to even
    return sign | (ieee ? (uint8_t)(0x7c) : nan);   // inf / NaN
  int exponent; frexpf(a, &exponent);                  // a = 0.x * 2^exponent
  int scale = exponent - 1 - m;                         // ulp exponent for normals
  if (scale < 1 - bias - m) scale = 1 - bias - m;       // subnormals
  float q = rintf(ldexpf(a, -scale));                   // round to nearest even
  int units = (int)q;
  if (units == 0) return sign;
  int biased = scale + m + bias;
  if (units >= (2 << m)) { units >>= 1; biased += 1; }
  if (units < (1 << m)) return sign | (uint8_t)units;   // subnormal
  return sign | (uint8_t)((biased << m) | (units & ((1 << m) - 1)));
}
TM_INLINE float tm_cvt_f8e4m3_f32(tm_f8e4m3 x) { return tm_f8_to_f32(x, 4, false); }
TM_INLINE tm_f8e4m3 tm_cvt_f32_f8e4m3(float x) { return tm_f32_to_f8(x, 4, false); }
TM_INLINE float tm_cvt_f8e5m2_f32(tm_f8e5m2 x) { return tm_f8_to_f32(x, 5, true); }
TM_INLINE tm_f8e5m2 tm_cvt_f32_f8e5m2(float x) { return tm_f32_to_f8(x, 5, true); }
#endif
#ifndef TM_WAVE_MASK  // once per translation unit, which may hold several sources
// Every lane of a 64-lane MetaX wave takes part in a shuffle.
#define TM_WAVE_MASK 0xffffffffffffffffull
// gpu.shuffle's `valid`: the source lane (mode 0 xor, 1 idx, 2 down, 3 up) lies in
// the calling lane's segment of `width` lanes (what tilemlir's emulator executes).
static inline __device__ __host__ bool tm_shuffle_valid(int mode, int lane, int offset, int width) {
  int first = lane / width * width, own = lane - first;
  int source = mode == 0 ? (own ^ offset) : mode == 1 ? offset : mode == 2 ? own + offset : own - offset;
  return source >= 0 && source < width;
}
// memref.atomic_rmw maxnumf / minnumf of f32 (MACA's atomicMax/Min take
// integers): a compare-and-swap loop on the bits; a NaN operand loses (fmax).
static inline __device__ __host__ float tm_atomic_extremum_f32(float* address, float value, bool largest) {
  int* bits = (int*)address;
  int old = *bits, seen;
  do {
    seen = old;
    float current = tm_bitcast<float>(seen);
    float wanted = largest ? fmaxf(current, value) : fminf(current, value);
    if (tm_bitcast<int>(wanted) == seen) break;
    old = atomicCAS(bits, seen, tm_bitcast<int>(wanted));
  } while (old != seen);
  return tm_bitcast<float>(seen);
}
// memref.atomic_rmw addf of f16 / bf16: a compare-and-swap loop on the
// aligned 32-bit word holding the element, the sum rounded once per add.
template <class T, float (*Decode)(T), T (*Encode)(float)>
static inline __device__ __host__ T tm_atomic_add_16(T* address, T value) {
  unsigned int* word = (unsigned int*)((uintptr_t)address & ~(uintptr_t)3);
  unsigned int shift = (unsigned int)((uintptr_t)address & 2) * 8;
  unsigned int old = *word, seen;
  do {
    seen = old;
    T current = tm_bitcast<T>((uint16_t)(seen >> shift));
    uint16_t sum = tm_bitcast<uint16_t>(Encode(Decode(current) + Decode(value)));
    old = atomicCAS(word, seen, (seen & ~(0xFFFFu << shift)) | ((unsigned int)sum << shift));
  } while (old != seen);
  return tm_bitcast<T>((uint16_t)(seen >> shift));
}
#endif
#define TM_CHECK(call) do { mcError_t tm_status = (call); if (tm_status != mcSuccess) { \
    fprintf(stderr, "%s failed: %s\n", #call, mcGetErrorString(tm_status)); return 1; } } while (0)
"""
