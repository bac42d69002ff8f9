"""`@tilemlir.jit` and compiled kernels: TileLang's JIT, on tilemlir's compiler and engines.

Two styles, as in TileLang:

* a **factory** returns a `@T.prim_func`; calling the decorated factory with
  its compile-time arguments returns a `JITKernel` (cached per arguments);
* the **direct style** writes the kernel body in the decorated function
  (`T.const` shape names, `A: T.Tensor[[M, K], dtype]` annotations, `T.empty`
  outputs, `return C`); calling it on arrays compiles (cached by the source,
  the arrays' shapes and dtypes, the other arguments and the target) and
  runs, returning what the body returns; `f.compile(**consts)` returns the
  `JITKernel` without running it. A body that returns nothing (the seed
  article's kernel) returns the `Launch` that ran: `.run()` runs it again.

A kernel runs on numpy arrays (or torch tensors) on one engine: `engine=` or
`TILEMLIR_ENGINE` (`reference`, `emulator`, `device`; default: the device when
the target is NVIDIA and a GPU is present, else the emulator) for the target
tile-compile's rule picks (`tilemlir.targets.selection`; README.md, "Which
target, which artefact"): `target=`, else `TILEMLIR_TARGET`, else this
machine's GPU; with none of them the kernel runs in the emulator, compiled for
the emulator's own chip (unless the device engine is asked for: then it is an
error). TileLang's `"hip"`/`"rocm"` mean amdgpu, `"cuda"` nvidia, `"maca"`
metax (TILEMLIR_TARGET's chip when it is of that family, else this machine's
GPU's, else gfx942, sm_90a, xcore1000), and `"auto"` names nothing.
`pass_configs` sets tile passes' options as `{"tile-pass.option": value}`;
TileLang's `"tl.enable_fast_math": True` puts every `T.exp2` on the hardware's
exp2 unit (`fastmath<afn>`: results below 2^-126 may flush to zero); other
keys (TileLang's `tl.*`) are accepted with one warning.
"""

from __future__ import annotations

import ast
import functools
import inspect
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tilemlir.diagnostics import SourceBuffer, UserError
from tilemlir.language.api import TileLangError, namespace_of
from tilemlir.language.builder import Builder, BuiltFunction, PythonSource

ENGINE_ENV = "TILEMLIR_ENGINE"


class TileLangWarning(UserWarning):
    """Something the frontend decided or ignored that the user should know."""


# --------------------------------------------------------------------------
# @T.prim_func
# --------------------------------------------------------------------------

def _user_errors(function):
    """At the API boundary a UserError (a TileLangError, a CompileError) is
    raised without tilemlir's own frames: the message names the user's file
    and line, and the traceback ends at the user's call."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except UserError as error:
            raise error.with_traceback(None) from None
    return wrapper


class PrimFunc:
    """A `@T.prim_func`: the tile IR built from the function's source when
    first needed (a factory may define prim_funcs it does not return, as
    TileLang's split and non-split variants: those are never built)."""

    __tilemlir_prim_func__ = True

    def __init__(self, build: Callable[[], BuiltFunction], name: str):
        self._build = build
        self._built: BuiltFunction | None = None
        self.__name__ = name

    @property
    def built(self) -> BuiltFunction:
        """The tile IR (built and verified on first access; errors name the
        Python lines)."""
        if self._built is None:
            self._built = _build_prim_func(self._build)
        return self._built

    def script(self) -> str:
        return self.built.text()

    def __str__(self) -> str:
        return self.built.text()

    def __call__(self, *args, **kwargs):
        raise TileLangError(f"prim_func '{self.__name__}' is compiled before it runs: "
                            f"tilemlir.jit(out_idx=...) on its factory, or tilemlir.language.compile({self.__name__})")


def prim_func(function=None, **_options):
    """`@T.prim_func`: builds the function's tile IR now, from its source. The
    names it uses are its module's globals, the locals of the function that
    defines it (a factory's arguments, also those only its annotations use) and
    its closure."""
    caller = sys._getframe(1).f_locals
    if function is None:
        return lambda f: _prim_func(f, sys._getframe(1).f_locals)
    return _prim_func(function, caller)


@_user_errors
def _prim_func(function, caller_locals: dict) -> PrimFunc:
    namespace = namespace_of(function, caller_locals)
    source = PythonSource.of(function)  # read now: the file may change before the build

    def build() -> BuiltFunction:
        built = Builder(source, namespace).build(direct=False)
        verify(built)
        return built

    return PrimFunc(build, function.__name__)


def macro(function=None, **_options):
    """`@T.macro`: the function's body is built in place at each call in a
    prim_func or kernel body (`tilemlir.language.api.Macro`)."""
    caller = sys._getframe(1).f_locals
    if function is None:
        return lambda f: _macro(f, sys._getframe(1).f_locals)
    return _macro(function, caller)


def _macro(function, caller_locals: dict):
    from tilemlir.language.api import Macro

    return Macro(function, caller_locals)


@_user_errors
def _build_prim_func(build: Callable[[], BuiltFunction]) -> BuiltFunction:
    return build()


def verify(built: BuiltFunction) -> None:
    """tile-verify on the built IR: its errors name the user's Python lines."""
    from mlir import ir

    from tilemlir.backends.driver import CompileError
    from tilemlir.diagnostics import collect_diagnostics, mlir_error_diags
    from tilemlir.passes import build_pipeline

    context = built.module.context
    source = python_source_buffer(built)
    diags: list = []
    with context, collect_diagnostics(context, diags, source):
        try:
            build_pipeline("tile-verify", context=context).run(built.module.operation)
        except ir.MLIRError as error:
            diags.extend(mlir_error_diags(error, source))
    errors = [d for d in diags if d.severity == "error"]
    if errors:
        raise CompileError(errors, source)


def python_source_buffer(built: BuiltFunction) -> SourceBuffer:
    return SourceBuffer(built.source.filename, built.source.text)


# --------------------------------------------------------------------------
# Targets, engines, options
# --------------------------------------------------------------------------

def resolve_target(target, engine=None):
    """The kernel's Target by tile-compile's rule (`select_target`: `target=`,
    else TILEMLIR_TARGET, else this machine's GPU; TileLang's family names
    included). A kernel that runs in the emulator or the reference engine
    (`engine`, else TILEMLIR_ENGINE) takes the emulator's own chip in place of
    the GPU. So does one nothing names a target for, unless engine="device",
    when this machine's GPU cannot run it: no GPU, a GPU no shipped descriptor
    describes, or an NVIDIA GPU the CUDA driver does not give this process
    (CUDA_VISIBLE_DEVICES=); the device engine takes no such default."""
    from tilemlir.runtime.emulator import emulator_target
    from tilemlir.targets import get_target
    from tilemlir.targets.model import TargetError
    from tilemlir.targets.selection import TARGET_ENVIRONMENT, select_target

    engine = engine or os.environ.get(ENGINE_ENV)
    if engine and engine != "device":
        return select_target(target, engine_default=emulator_target())
    named = target not in (None, "auto") or bool(os.environ.get(TARGET_ENVIRONMENT))
    try:
        chosen = select_target(target)
    except TargetError:
        if named or engine == "device":
            raise
        return get_target(emulator_target())
    if named or engine == "device":
        return chosen
    from tilemlir.backends.driver import backend_stages
    from tilemlir.runtime import cuda_launch

    if "ptx" in [stage.name for stage in backend_stages(chosen.family)] and not cuda_launch.gpu_available():
        return get_target(emulator_target())
    return chosen


# TileLang's key for fast math (nvcc's --use_fast_math): here, T.exp2 on the
# hardware's exp2 unit (`fastmath<afn>`, docs/kernels.md).
FAST_MATH_KEY = "tl.enable_fast_math"


def pass_options(pass_configs: dict | None) -> tuple[dict[str, dict[str, str]], list[str]]:
    """({pass: {option: value}}, ignored keys) from `{"tile-pass.option": value}`
    (FAST_MATH_KEY is neither: JITKernel reads it)."""
    from tilemlir.passes import pass_names

    known = set(pass_names())
    options: dict[str, dict[str, str]] = {}
    ignored = []
    for key, value in (pass_configs or {}).items():
        if key == FAST_MATH_KEY:
            continue
        pass_name, _, option = str(key).partition(".")
        if pass_name in known and option:
            text = str(value).lower() if isinstance(value, bool) else str(value)
            options.setdefault(pass_name, {})[option] = text
        else:
            ignored.append(str(key))
    return options, ignored


def options_text(options: dict[str, dict[str, str]]) -> str:
    return ",".join(f"{name}{{{' '.join(f'{k}={v}' for k, v in opts.items())}}}" for name, opts in options.items())


def with_fast_exp2(built: BuiltFunction) -> BuiltFunction:
    """A copy of `built` whose `math.exp2` ops (T.exp2's, and T.exp10's,
    which is built on exp2) carry `fastmath<afn>` beside their other flags:
    the hardware's exp2 unit as it is, which may flush results below 2^-126
    to zero (docs/kernels.md). The PrimFunc's own module is left as it is."""
    import dataclasses

    from mlir import ir

    from tilemlir.irutil import approximate_function, fastmath_flags, walk

    context = built.module.context
    module = ir.Module.parse(built.text(locations=True), context=context)
    with context:
        for op in walk(module.operation):
            if op.name == "math.exp2" and not approximate_function(op):
                flags = ",".join(sorted(fastmath_flags(op) | {"afn"}))
                op.attributes["fastmath"] = ir.Attribute.parse(f"#arith.fastmath<{flags}>")
    return dataclasses.replace(built, module=module)


def fast_math_asked(pass_configs: dict | None) -> bool:
    """Whether `pass_configs` turns FAST_MATH_KEY on: True, or a string
    spelling it ("true", "1", as TileLang's config parser reads them)."""
    value = (pass_configs or {}).get(FAST_MATH_KEY, False)
    return value is True or (isinstance(value, (int, str)) and str(value).strip().lower() in ("true", "1"))


# --------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------

class JITKernel:
    """A compiled kernel: call it on arrays (inputs in order); it returns its
    outputs (per `out_idx`, or what the direct-style body returns)."""

    def __init__(self, built: BuiltFunction, *, target=None, engine=None, pass_configs=None,
                 out_idx=None):
        from tilemlir.compiler import CompileOptions

        self.built = with_fast_exp2(built) if fast_math_asked(pass_configs) else built
        try:
            self.target = resolve_target(target, engine)
        except UserError as error:
            raise TileLangError(f"target: {error}") from None
        self.engine = engine or os.environ.get(ENGINE_ENV) or self.default_engine()
        from tilemlir.runtime import check_engine

        check_engine(self.engine)
        options, ignored = pass_options(pass_configs)
        if ignored:
            self.warn(f"pass_configs keys tilemlir does not use (ignored): {', '.join(ignored)}; its own are "
                      f"'tile-pass.option' (tile-opt --list-passes)")
        self.fp8_note = self.fp8_fallback(options)
        if self.fp8_note:
            self.warn(self.fp8_note)
        for note in built.notes:
            self.warn(note)
        self.options = CompileOptions(passes=options_text(options))
        self.outputs = self.output_positions(out_idx)
        # T.alloc_global workspaces: made by each call, neither passed nor returned.
        self.workspaces = [i for i, p in enumerate(built.params) if p.workspace]
        self._lowered = None
        self._device = None
        self._compiled: dict = {}

    def warn(self, message: str) -> None:
        """A TileLangWarning located at the kernel's definition in the user's file."""
        source = self.built.source
        warnings.warn_explicit(message, TileLangWarning, source.filename, source.first_line)

    # -- what runs where --
    def default_engine(self) -> str:
        """The device when the target's code runs on the GPU here (its backend
        emits PTX and the CUDA driver finds a GPU), else the emulator."""
        if "ptx" in self.stage_names():
            from tilemlir.runtime import cuda_launch

            if cuda_launch.gpu_available():
                return "device"
        return "emulator"

    def stage_names(self) -> list[str]:
        from tilemlir.backends.driver import backend_stages

        return [stage.name for stage in backend_stages(self.target.family)]

    def fp8_fallback(self, options: dict) -> str | None:
        """A gemm on an fp8 encoding the chip's matrix unit does not read is
        computed exactly in f16 (every fp8 value is an f16 value), unless the
        user set tile-legalize-precision's fp8 options."""
        from tilemlir.targets.model import is_unknown

        formats = self.target.matrix.fp8_formats
        legalize = options.setdefault("tile-legalize-precision", {})
        if is_unknown(formats) or "fp8-fallback" in legalize or "allow-fp8-rounding" in legalize:
            if not legalize:
                del options["tile-legalize-precision"]
            return None
        foreign = sorted(t for t in self.built.gemm_types if t.startswith("f8") and t not in formats)
        if not foreign:
            del options["tile-legalize-precision"]
            return None
        legalize["fp8-fallback"] = "f16"
        reads = f"reads fp8 as {', '.join(formats)}" if formats else "has no fp8 instructions"
        return (f"{self.target}'s matrix unit {reads}; the gemms on "
                f"{', '.join(foreign)} compute exactly in f16 (set pass_configs="
                f"{{'tile-legalize-precision.fp8-fallback': 'error'}} to refuse instead)")

    def output_positions(self, out_idx) -> list[int]:
        params = self.built.params
        if self.built.returns or any(p.output for p in params):
            return [i for i, p in enumerate(params) if p.output]
        if out_idx is None:
            return []
        indices = [out_idx] if isinstance(out_idx, int) else list(out_idx)
        declared = [i for i, p in enumerate(params) if not p.workspace]  # what out_idx counts
        positions = []
        for index in indices:
            if not isinstance(index, int) or not -len(declared) <= index < len(declared):
                raise TileLangError(f"out_idx {index!r} is not a parameter position of '{self.built.name}' "
                                    f"({len(declared)} parameters)")
            position = declared[index % len(declared)]
            if params[position].kind != "tensor":
                raise TileLangError(f"out_idx {index}: parameter '{params[position].name}' is not a tensor")
            positions.append(position)
        return positions

    # -- source and artefacts --
    def get_kernel_source(self, *, locations: bool = False) -> str:
        """The kernel's tile IR (what tile-opt and tile-compile read)."""
        return self.built.text(locations=locations)

    def compile(self, emit: str | None = None, *, report: bool = False, remarks: str | None = None):
        """The CompileResult for `emit` (default: the backend's default stage, as
        tile-compile's and `tilemlir.compile`'s), cached; `remarks` chooses its
        remarks as `tilemlir.compile`'s does."""
        import dataclasses

        from tilemlir.compiler import compile_module
        from tilemlir.diagnostics import remarks_configured

        key = (emit, report, remarks)
        if key not in self._compiled:
            module = self.built.module.operation.clone()
            options = dataclasses.replace(self.options, report=report)
            with remarks_configured(remarks):
                result = compile_module(module.operation, self.target, emit, options,
                                        source=python_source_buffer(self.built))
            # tile-compile's own choices after a failed first compile (more
            # threads, another configuration) change what runs: said once.
            said = any(r.origin == "tile-compile" for c in self._compiled.values() for r in c.remarks)
            for remark in result.remarks if not said else ():
                if remark.origin == "tile-compile":
                    self.warn(remark.message.removeprefix("tile-compile: "))
            self._compiled[key] = result
        return self._compiled[key]

    @property
    def artifact(self):
        """The backend's default artefact, as tile-compile prints it: ISA (amdgpu;
        `compile("hsaco").artifact` is the code object), MACA C++ (metax) or PTX (nvidia)."""
        return self.compile().artifact

    def get_isa(self) -> str:
        """The ISA text, for targets whose backend has an `isa` stage (AMD)."""
        if "isa" not in self.stage_names():
            raise TileLangError(f"{self.target}'s backend emits no ISA text; its artefact is "
                                f"`kernel.artifact` ({', '.join(self.stage_names())})")
        return self.compile("isa").artifact

    @property
    def report(self) -> dict:
        """tile-compile's --report JSON, as a dict."""
        return self.compile(report=True).report

    def get_profiler(self, tensor_supply_type=None):
        """TileLang's profiler: `do_bench(...)` and `assert_allclose(reference, rtol=, atol=)`
        on inputs made from the parameters' shapes and dtypes (tilemlir.language.profiler)."""
        from tilemlir.language.profiler import Profiler
        from tilemlir.language.tensor_utils import TensorSupplyType

        return Profiler(self, tensor_supply_type or TensorSupplyType.Auto)

    # -- running --
    @_user_errors
    def __call__(self, *args):
        params = self.built.params
        inputs = self.input_positions()
        if len(args) != len(inputs):
            names = ", ".join(params[i].name for i in inputs)
            raise TileLangError(f"kernel '{self.built.name}' takes {len(inputs)} arguments ({names}), "
                                f"got {len(args)}")
        full = [None] * len(params)
        for position, value in zip(inputs, args):
            full[position] = value
        if self.engine == "device":
            gpu = _cuda_device(full, params)
            if gpu is not None:
                return self.call_on_gpu(full, gpu)
        for position in self.outputs + self.workspaces:
            p = params[position]
            full[position] = np.zeros(p.shape, p.dtype.numpy)
        converted, writeback = self.to_numpy(full)
        self.launch(converted)
        for position, original in writeback:
            _copy_into(original, converted[position].view(params[position].dtype.numpy))
        wanted = self.built.returns or self.outputs
        results = [full[position] for position in wanted]
        if not results:
            return None
        return results[0] if len(results) == 1 else tuple(results)

    def run(self, *args):
        return self(*args)

    def input_positions(self) -> list[int]:
        """The parameters a call passes, in order: neither outputs nor workspaces."""
        return [i for i in range(len(self.built.params)) if i not in self.outputs and i not in self.workspaces]

    def call_on_gpu(self, full: list, gpu) -> object:
        """A call whose tensor arguments are all torch CUDA tensors: they reach
        the kernel as they are (a non-contiguous one through a contiguous copy,
        written back), outputs are made on their device with `torch.empty` as
        TileLang makes them (uninitialised: the emulator and the reference
        engine start them at zero), and the kernel runs on torch's current
        stream; nothing is copied to the host and nothing waits for the GPU."""
        import torch

        params = self.built.params
        for position in self.outputs + self.workspaces:
            p = params[position]
            full[position] = torch.empty(p.shape, dtype=_torch_dtype(p.dtype), device=gpu)
        staged = []
        arguments = list(full)
        for position, value in enumerate(full):
            if params[position].kind != "scalar" and not value.is_contiguous():
                arguments[position] = value.contiguous()
                staged.append((value, arguments[position]))
            if params[position].kind != "scalar" and params[position].dtype.is_converted:
                if value.dtype != _torch_dtype(params[position].dtype):  # checked here: the view hides it
                    raise TileLangError(f"argument '{params[position].name}': expected a tensor of "
                                        f"{params[position].dtype}, got {value.dtype}")
                signless = torch.int8 if params[position].dtype.storage == "i8" else torch.int32
                arguments[position] = arguments[position].view(signless)  # the kernel's signless integers
        from tilemlir.runtime import device

        device.launch_tensors(self.loaded_device(), self.built.name, arguments, stream=_raw_stream(torch, gpu))
        for original, copy in staged:
            original.copy_(copy)
        wanted = self.built.returns or self.outputs
        if not wanted:
            return None
        return full[wanted[0]] if len(wanted) == 1 else tuple(full[position] for position in wanted)

    def to_numpy(self, values: list) -> tuple[list, list]:
        params = self.built.params
        converted, writeback = [], []
        for position, (p, value) in enumerate(zip(params, values)):
            if p.kind == "scalar":
                converted.append(value)
                continue
            array = _as_numpy(value)
            if array is None:
                raise TileLangError(f"argument '{p.name}': expected an array of shape {p.shape} ({p.dtype}), "
                                    f"got {type(value).__name__}")
            if tuple(array.shape) != tuple(p.shape) or array.dtype != p.dtype.numpy:
                raise TileLangError(f"argument '{p.name}': expected shape {tuple(p.shape)} of {p.dtype}, got "
                                    f"{tuple(array.shape)} of {array.dtype}")
            contiguous = np.ascontiguousarray(array)
            if contiguous is not value:  # a torch tensor, or a strided array: written back after the run
                writeback.append((position, value))
            converted.append(contiguous.view(p.dtype.storage_numpy))  # bool, uint8, uint32: signless
        return converted, writeback

    def launch(self, args: list) -> None:
        from tilemlir import runtime

        entry = self.built.name
        if self.engine == "reference":
            runtime.run(self.built.module, entry, args, engine="reference")
        elif self.engine == "emulator":
            from tilemlir.runtime.emulator import emulate

            lowered, chip = self.lowered_for_emulator()
            emulate(lowered, entry, args, chip=chip)
        else:
            from tilemlir.runtime import device

            device.launch(self.loaded_device(), entry, args)

    def cache_key(self, stage: str) -> str:
        from tilemlir.runtime import cache

        return cache.kernel_key(self.built.text(locations=True), self.target, self.options, stage)

    def loaded_device(self):
        """The kernel's PTX loaded by the CUDA driver (compiled once, kept in the disk cache)."""
        if self._device is None:
            from tilemlir.runtime import device

            self._device = device.load(self.built.module.operation, self.target, self.options,
                                       cache_key=self.cache_key("ptx"))
        return self._device

    def lowered_for_emulator(self):
        """(GPU-level module, chip) for the emulator (compiled once, kept in the disk cache)."""
        if self._lowered is None:
            from mlir import ir

            from tilemlir import runtime
            from tilemlir.runtime import cache

            key = self.cache_key("gpu")
            cached = cache.load(key, ("kernel.gpu.mlir", "chip"))
            if cached is not None:
                try:
                    module = ir.Module.parse(cached["kernel.gpu.mlir"], context=self.built.module.context)
                    self._lowered = (module.operation, cached["chip"])
                except ir.MLIRError:
                    cached = None
            if cached is None:
                lowered, chip = runtime.lower_for_emulator(self.built.module.operation, self.target, self.options)
                text = lowered.get_asm(enable_debug_info=True, print_generic_op_form=True)
                cache.store(key, {"kernel.gpu.mlir": text, "chip": chip})
                self._lowered = (lowered, chip)
        return self._lowered


@dataclass
class Launch:
    """A direct-style call whose body returns nothing: the kernel and the
    arguments it ran on; `run()` runs it again on them."""

    kernel: JITKernel
    args: tuple

    def run(self):
        return self.kernel(*self.args)

    def get_kernel_source(self, **kwargs) -> str:
        return self.kernel.get_kernel_source(**kwargs)


def _cuda_device(values: list, params: list):
    """The torch device of the call's tensors when every tensor argument is a
    torch CUDA tensor on one device, else None (the copying path runs)."""
    found = None
    for p, value in zip(params, values):
        if p.kind == "scalar" or value is None:
            continue
        if getattr(value, "is_cuda", False) is not True or not type(value).__module__.startswith("torch"):
            return None
        if found is None:
            found = value.device
        elif value.device != found:
            raise TileLangError(f"argument '{p.name}' is on {value.device}, the others on {found}: "
                                "a kernel runs on one GPU")
    if found is not None and (found.index or 0) != 0:
        # cuda_launch works in the primary context of the CUDA driver's device 0.
        raise TileLangError(f"the arguments are on {found}; the device engine runs kernels on cuda:0 "
                            "only (CUDA_VISIBLE_DEVICES chooses which GPU that is)")
    return found


def _raw_stream(torch, gpu) -> int:
    """torch's current stream on `gpu`, as the CUDA handle (the private call
    Triton's launcher uses where torch has it: no Stream object made)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(gpu.index or 0) if raw is not None else torch.cuda.current_stream(gpu).cuda_stream


def _torch_dtype(dtype):
    import torch

    from tilemlir.runtime.cuda_launch import TORCH_DTYPES

    name = dtype.name if dtype.is_converted else TORCH_DTYPES.get(dtype.mlir)  # bool, uint8, uint32
    if name is None or not hasattr(torch, name):
        raise TileLangError(f"torch has no tensor type for {dtype}: call the kernel on NumPy arrays")
    return getattr(torch, name)


def _as_numpy(value):
    """A NumPy view of an array or a (CPU copy of a) torch tensor; None otherwise."""
    if isinstance(value, np.ndarray):
        return value
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        return _torch_to_numpy(value)
    return None


def _torch_to_numpy(tensor):
    from tilemlir.language.dtypes import dtype as to_dtype

    target = to_dtype(tensor.dtype).numpy
    host = tensor.detach().cpu().contiguous()
    if host.dtype.itemsize == 2 and target.kind not in "fiu":  # bf16: NumPy has no such type
        import torch

        return host.view(torch.int16).numpy().view(target).copy()
    if host.dtype.itemsize == 1 and target.kind not in "iu":  # fp8
        import torch

        return host.view(torch.uint8).numpy().view(target).copy()
    return host.numpy().copy()


def _copy_into(original, array: np.ndarray) -> None:
    """Writes a result back into the array or torch tensor it came from."""
    if isinstance(original, np.ndarray):
        np.copyto(original, array)
        return
    import torch

    raw = np.ascontiguousarray(array)
    if raw.dtype.itemsize == 2 and raw.dtype.kind not in "fiu":
        tensor = torch.from_numpy(raw.view(np.int16)).view(original.dtype)
    elif raw.dtype.itemsize == 1 and raw.dtype.kind not in "iu":
        tensor = torch.from_numpy(raw.view(np.uint8)).view(original.dtype)
    else:
        tensor = torch.from_numpy(raw)
    original.copy_(tensor.to(original.device))


# --------------------------------------------------------------------------
# @tilemlir.jit
# --------------------------------------------------------------------------

_JIT_OPTIONS = ("out_idx", "target", "engine", "pass_configs")


class JITFunction:
    """What `@tilemlir.jit` makes of a function (see the module docstring)."""

    def __init__(self, function, *, out_idx=None, target=None, engine=None, pass_configs=None):
        functools.update_wrapper(self, function)
        self.function = function
        self.out_idx = out_idx
        self.target = target
        self.engine = engine
        self.pass_configs = pass_configs
        self.source = PythonSource.of(function)
        self.factory = _returns_prim_func(self.source.tree)
        self._cache: dict = {}

    def _kernel(self, built: BuiltFunction) -> JITKernel:
        return JITKernel(built, target=self.target, engine=self.engine, pass_configs=self.pass_configs,
                         out_idx=self.out_idx)

    @_user_errors
    def __call__(self, *args, **kwargs):
        if self.factory:
            key = _cache_key(args, kwargs)
            if key is None or key not in self._cache:
                produced = self.function(*args, **kwargs)
                if not isinstance(produced, PrimFunc):
                    raise TileLangError(f"'{self.function.__name__}' returned {type(produced).__name__}, not "
                                        f"a @T.prim_func")
                kernel = self._kernel(produced.built)
                if key is None:
                    return kernel
                self._cache[key] = kernel
            return self._cache[key]
        bound = self._bind(args, kwargs)
        kernel = self._build_direct(bound, {})
        arrays = [bound[p.name] for p in kernel.built.params if not p.output]
        result = kernel(*arrays)
        if kernel.built.returns:
            return result
        return Launch(kernel, tuple(arrays))

    @_user_errors
    def compile(self, **constants) -> JITKernel:
        """Direct style: the kernel for these compile-time values (T.const names
        and other parameters), without running it."""
        if self.factory:
            raise TileLangError(f"'{self.function.__name__}' is a factory: call it with its arguments")
        signature = inspect.signature(self.function)
        arguments = {name: p.default for name, p in signature.parameters.items()
                     if p.default is not inspect.Parameter.empty}
        t_consts = {k: v for k, v in constants.items() if k not in signature.parameters}
        arguments.update({k: v for k, v in constants.items() if k in signature.parameters})
        return self._build_direct(arguments, t_consts)

    def _bind(self, args, kwargs) -> dict:
        signature = inspect.signature(self.function)
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TileLangError(f"{self.function.__name__}: {error}") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def _build_direct(self, arguments: dict, constants: dict) -> JITKernel:
        key_parts = []
        for name, value in arguments.items():
            shape = getattr(value, "shape", None)
            if shape is not None and hasattr(value, "dtype"):
                key_parts.append((name, "tensor", tuple(shape), str(value.dtype)))
            else:
                key_parts.append((name, "value", _hashable(value)))
        key = (tuple(key_parts), _hashable(constants), resolve_target(self.target, self.engine))
        if None in key or any(None in part for part in key_parts):
            key = None
        if key is not None and key in self._cache:
            return self._cache[key]
        builder = Builder(self.source, namespace_of(self.function), constants=constants, arguments=arguments)
        built = builder.build(direct=True)
        verify(built)
        kernel = self._kernel(built)
        if key is not None:
            self._cache[key] = kernel
        return kernel


def jit(function=None, *, out_idx=None, target=None, engine=None, pass_configs=None, **other):
    """`@tilemlir.jit` or `@tilemlir.jit(out_idx=..., target=..., engine=..., pass_configs=...)`.
    TileLang's other options (execution_backend, verbose, ...) are accepted with a warning."""
    if other:
        warnings.warn(f"tilemlir.jit ignores {', '.join(sorted(other))} (it takes {', '.join(_JIT_OPTIONS)})",
                      TileLangWarning, stacklevel=2)

    def decorate(f):
        return JITFunction(f, out_idx=out_idx, target=target, engine=engine, pass_configs=pass_configs)

    return decorate if function is None else decorate(function)


def compile(function: PrimFunc, out_idx=None, target=None, engine=None, pass_configs=None, **other) -> JITKernel:
    """`tilemlir.language.compile(prim_func, out_idx=...)`, as `tilelang.compile`
    (also reached as `tilemlir.compile(prim_func, ...)`). TileLang's other
    options (execution_backend, verbose, ...) are accepted with a warning."""
    if other:
        warnings.warn(f"compile ignores {', '.join(sorted(other))} (it takes {', '.join(_JIT_OPTIONS)})",
                      TileLangWarning, stacklevel=2)
    if not isinstance(function, PrimFunc):
        raise TileLangError(f"compile() takes a @T.prim_func, got {type(function).__name__}")
    return JITKernel(function.built, target=target, engine=engine, pass_configs=pass_configs, out_idx=out_idx)


def _returns_prim_func(tree: ast.FunctionDef) -> bool:
    """A factory: the function defines a nested function decorated `prim_func`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node is not tree:
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                if name == "prim_func":
                    return True
    return False


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        if isinstance(value, dict):
            items = tuple((k, _hashable(v)) for k, v in sorted(value.items()))
            return None if any(v is None for _, v in items) else items
        if isinstance(value, (list, tuple)):
            items = tuple(_hashable(v) for v in value)
            return None if any(v is None for v in items) else items
        return None
    return value


def _cache_key(args, kwargs):
    key = (_hashable(args), _hashable(kwargs))
    return None if None in key else key

