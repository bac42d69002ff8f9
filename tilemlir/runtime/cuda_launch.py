"""Launching PTX compiled by the nvidia backend, through the CUDA driver API.

This module needs neither MLIR nor tilemlir's other modules: the device machine
has the GPU but not our MLIR wheels, so PTX is compiled elsewhere and travels
with its metadata (`tilemlir.backends.nvidia.toolchain.PtxKernel.save`):

    from tilemlir.runtime.cuda_launch import CudaModule
    module = CudaModule.load("out/gemm.json")   # gemm.ptx beside it; the driver JITs it
    module.launch("gemm", [a, b, c, 0.5])        # torch CUDA tensors (or raw device pointers),
                                                 # Python numbers for scalar arguments

Each kernel parameter is packed as its PTX type says (the metadata's
`params`, read from the PTX's `.entry`): pointers and 64-bit integers as 8
bytes, `.f32` as a float, `.u32` as 4 bytes, and so on; the dynamic extents
of dynamic-shape arguments come from the arrays' shapes (toolchain.launch_metadata).
A TMA tensor map is a 128-byte parameter (`.b8[128]`: the backend passes it
by value, nvidia-tensor-maps-by-value), encoded on the host from its
argument's pointer: nothing is allocated on the device for it.

It talks to libcuda through ctypes and works in the primary context of the
device, the one PyTorch uses, so torch tensors' pointers can be passed
directly and launches go on torch's current stream. Every driver call is
checked; failures raise `CudaError` with the driver's name for the error.
Import it by path where `import tilemlir` would pull in MLIR:
`importlib.util.spec_from_file_location("cuda_launch", ".../cuda_launch.py")`.
"""

from __future__ import annotations

import ctypes
import json
import threading
from pathlib import Path

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
LOG_BYTES = 16384

# MLIR element types -> torch dtype names (checked when torch tensors are passed).
TORCH_DTYPES = {
    "f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16",
    "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2", "i8": "int8", "i32": "int32", "i64": "int64",
}


# cuTensorMapEncodeTiled's enums (CUDA driver API, cuda.h: CUtensorMapDataType,
# CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill).
TENSOR_MAP_TYPES = {"f16": 6, "bf16": 9, "f32": 7, "f8E4M3FN": 0, "f8E5M2": 0, "i8": 0}
TENSOR_MAP_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
TENSOR_MAP_L2_PROMOTION_128B = 2
TENSOR_MAP_OOB_ZEROS = 0
TENSOR_MAP_BYTES, TENSOR_MAP_ALIGN = 128, 64
TENSOR_MAP_KIND = f"b8[{TENSOR_MAP_BYTES}]"  # its PTX parameter type (toolchain.entry_parameters)
TENSOR_MAP_ADDRESS_ALIGN = 16  # cuTensorMapEncodeTiled: globalAddress 16-byte aligned (CUDA Driver API)
# This module imports nothing of tilemlir (see above), so it keeps its own copy of
# the widths of tilemlir.dialects.element_types; test_element_types checks they agree.
ELEMENT_BYTES = {"f64": 8, "f32": 4, "i32": 4, "f16": 2, "bf16": 2, "f8E4M3FN": 1, "f8E5M2": 1, "i8": 1}


# A PTX parameter type -> the ctypes value cuLaunchKernel reads (PTX ISA,
# "Kernel Function Parameters": .param state space types).
PARAM_CTYPES = {
    "u64": ctypes.c_uint64, "s64": ctypes.c_int64, "b64": ctypes.c_uint64,
    "u32": ctypes.c_uint32, "s32": ctypes.c_int32, "b32": ctypes.c_uint32,
    "u16": ctypes.c_uint16, "s16": ctypes.c_int16, "b16": ctypes.c_uint16,
    "u8": ctypes.c_uint8, "s8": ctypes.c_int8, "b8": ctypes.c_uint8,
    "f32": ctypes.c_float, "f64": ctypes.c_double,
}
# Scalar argument types (toolchain.SCALAR_TYPES): integer ones and their ranges.
INTEGER_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64}


class CudaError(RuntimeError):
    """A CUDA driver call failed, or there is no CUDA driver or device."""


class _Driver:
    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as error:
            raise CudaError(f"no CUDA driver on this machine (libcuda.so.1: {error}); "
                            "the device engine needs an NVIDIA GPU") from None
        self.check("cuInit", ctypes.c_uint(0))
        count = ctypes.c_int()
        self.check("cuDeviceGetCount", ctypes.byref(count))
        if count.value < 1:
            raise CudaError("the CUDA driver sees no GPU")
        self.device = ctypes.c_int()
        self.check("cuDeviceGet", ctypes.byref(self.device), 0)
        self.context = ctypes.c_void_p()
        self.check("cuDevicePrimaryCtxRetain", ctypes.byref(self.context), self.device)
        self.check("cuCtxSetCurrent", self.context)

    def error_name(self, code: int) -> str:
        text = ctypes.c_char_p()
        if self.lib.cuGetErrorName(code, ctypes.byref(text)) == 0 and text.value:
            return text.value.decode()
        return f"error {code}"

    def check(self, name: str, *args) -> None:
        code = getattr(self.lib, name)(*args)
        if code != 0:
            raise CudaError(f"{name} failed: {self.error_name(code)}")


_DRIVER: _Driver | None = None


def driver() -> _Driver:
    global _DRIVER
    if _DRIVER is None:
        _DRIVER = _Driver()
    return _DRIVER


def gpu_available() -> bool:
    try:
        driver()
    except CudaError:
        return False
    return True


class CudaModule:
    """One PTX module and the launches of its entry functions (metadata JSON)."""

    def __init__(self, ptx: str, metadata: dict):
        self.metadata = metadata
        self.driver = driver()
        self.handle = ctypes.c_void_p()
        log = ctypes.create_string_buffer(LOG_BYTES)
        options = (ctypes.c_int * 2)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        values = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p).value, LOG_BYTES)
        code = self.driver.lib.cuModuleLoadDataEx(ctypes.byref(self.handle), ptx.encode() + b"\0",
                                                  2, options, values)
        if code != 0:
            raise CudaError(f"cuModuleLoadDataEx failed: {self.driver.error_name(code)}\n"
                            f"{log.value.decode(errors='replace')}")
        self.functions: dict[str, ctypes.c_void_p] = {}
        self._launchers: dict[str, _TensorLauncher | None] = {}
        for function in metadata["functions"]:
            for launch in function["launches"]:
                if "kernel" in launch:
                    self._function(launch)

    @classmethod
    def load(cls, json_path: str | Path) -> CudaModule:
        json_path = Path(json_path)
        metadata = json.loads(json_path.read_text(encoding="utf-8"))
        ptx_path = json_path.with_name(metadata.get("ptx", json_path.with_suffix(".ptx").name))
        return cls(ptx_path.read_text(encoding="utf-8"), metadata)

    def _function(self, launch: dict) -> ctypes.c_void_p:
        name = launch["kernel"]
        if name not in self.functions:
            handle = ctypes.c_void_p()
            self.driver.check("cuModuleGetFunction", ctypes.byref(handle), self.handle, name.encode())
            # Always: without it static + dynamic shared memory must stay under 48 KiB.
            if launch["dynamic_shared_bytes"] > 0:
                self.driver.check("cuFuncSetAttribute", handle,
                                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  ctypes.c_int(launch["dynamic_shared_bytes"]))
            self.functions[name] = handle
        return self.functions[name]

    def entry(self, name: str | None = None) -> dict:
        functions = self.metadata["functions"]
        if name is None and len(functions) == 1:
            return functions[0]
        for function in functions:
            if function["entry"] == name:
                return function
        raise CudaError(f"no entry '{name}' (entries: {', '.join(f['entry'] for f in functions)})")

    def launch(self, entry: str | None, arguments: list, stream: int | None = None) -> None:
        """Runs every launch of `entry` in order on `stream` (default: torch's
        current stream if torch is loaded, else the default stream). Arguments
        are, for memrefs, torch tensors (checked against the metadata's shapes
        and dtypes), DeviceArrays or device pointers as ints, and for scalars
        Python or NumPy numbers."""
        function = self.entry(entry)
        params = function["arguments"]
        if len(arguments) != len(params):
            raise CudaError(f"{function['entry']} takes {len(params)} arguments, got {len(arguments)}")
        # A device pointer per memref, a checked number per scalar.
        values = [_scalar_value(a, p, i) if "scalar" in p else _device_pointer(a, p, i)
                  for i, (a, p) in enumerate(zip(arguments, params))]
        if stream is None:
            stream = torch_stream()
        for launch in function["launches"]:
            if "memset" in launch:
                self._memset(launch["memset"], values, arguments, params, stream)
                continue
            kinds = launch.get("params") or ["u64"] * len(launch["arguments"])
            packed = []
            for n, (spec, kind) in enumerate(zip(launch["arguments"], kinds)):
                if isinstance(spec, dict) and "tensor_map" in spec:
                    value = _tensor_map_parameter(kind, launch["kernel"], n)
                    value.encode(self.driver, spec["tensor_map"], values)
                else:
                    value = _packed(self._argument(spec, values, arguments), kind, launch["kernel"], n)
                packed.append(value)
            array = (ctypes.c_void_p * max(1, len(packed)))(*map(_address, packed))
            (gx, gy, gz), (bx, by, bz) = launch["grid"], launch["block"]
            self.driver.check("cuLaunchKernel", self._function(launch), gx, gy, gz, bx, by, bz,
                              launch["dynamic_shared_bytes"], ctypes.c_void_p(stream), array, None)

    def tensor_launcher(self, entry: str | None):
        """A callable `(tensors, stream)` that runs `entry` as `launch` does, on
        contiguous torch CUDA tensors of the compiled shapes and dtypes, with
        the parameter buffers built once: a call checks each tensor, writes its
        pointer (and its tensor maps') in place and launches. None when the
        entry takes scalars or dynamic shapes, or clears memory first (then
        `launch` serves)."""
        function = self.entry(entry)
        key = function["entry"]
        if key not in self._launchers:
            static = all("scalar" not in p and None not in p["shape"] for p in function["arguments"]) \
                and all("kernel" in launch for launch in function["launches"])
            self._launchers[key] = _TensorLauncher(self, function) if static else None
        return self._launchers[key]

    def _memset(self, spec: dict, values: list, arguments: list, params: list, stream: int) -> None:
        """Clears a whole memref argument to `bits` (toolchain.launch_metadata's
        memset entries: a split-K kernel's C before its partial sums are added)."""
        index = spec["argument"]
        shape = params[index]["shape"]
        if None in shape:
            shape = getattr(arguments[index], "shape", None)
            if shape is None:
                raise CudaError(f"argument {index} has a dynamic shape: pass an array or tensor "
                                "(a raw pointer has no extents)")
        count = 1
        for extent in shape:
            count *= int(extent)
        name = {1: "cuMemsetD8Async", 2: "cuMemsetD16Async", 4: "cuMemsetD32Async"}[spec["element_bytes"]]
        value = {1: ctypes.c_ubyte, 2: ctypes.c_ushort, 4: ctypes.c_uint}[spec["element_bytes"]](spec["bits"])
        self.driver.check(name, ctypes.c_uint64(values[index]), value, ctypes.c_size_t(count),
                          ctypes.c_void_p(stream))

    def _argument(self, spec, values: list, arguments: list):
        """The value of one kernel parameter (toolchain.launch_metadata's forms)."""
        if isinstance(spec, int):
            return values[spec]
        if "constant" in spec:
            return spec["constant"]
        extent = spec["extent"]
        argument = arguments[extent["argument"]]
        shape = getattr(argument, "shape", None)
        if shape is None:
            raise CudaError(f"argument {extent['argument']} has a dynamic shape: pass an array or "
                            "tensor (a raw pointer has no extents)")
        return int(shape[extent["axis"]])

    def close(self) -> None:
        """Unloads the module."""
        self._launchers.clear()
        if self.handle.value:
            self.driver.check("cuModuleUnload", self.handle)
            self.handle = ctypes.c_void_p()
            self.functions.clear()


class _TensorMapParameter:
    """One CUtensorMap kernel parameter (`.param .align 64 .b8 [128]`): the
    map of `spec` (a TMA box over a row-major 2-D argument, see
    tilemlir.backends.nvidia.wgmma) in 64-byte aligned host memory, encoded
    again only when its argument's pointer changes. cuLaunchKernel copies
    it into the kernel's parameters, and a CUDA graph keeps that copy."""

    def __init__(self):
        self.raw = ctypes.create_string_buffer(TENSOR_MAP_BYTES + TENSOR_MAP_ALIGN)
        self.address = -(-ctypes.addressof(self.raw) // TENSOR_MAP_ALIGN) * TENSOR_MAP_ALIGN
        self.pointer: int | None = None

    def encode(self, driver: _Driver, spec: dict, pointers: list[int]) -> None:
        pointer = pointers[spec["source"]["argument"]]
        if pointer == self.pointer:
            return
        if pointer % TENSOR_MAP_ADDRESS_ALIGN:
            raise CudaError(f"argument {spec['source']['argument']}: the kernel reads or writes it by TMA, "
                            f"which needs its address {TENSOR_MAP_ADDRESS_ALIGN}-byte aligned (it is "
                            f"{pointer:#x}); pass a tensor that starts on such an address (a fresh one does)")
        rows, cols = spec["shape"]
        box_rows, box_cols = spec["box"]
        size = ELEMENT_BYTES[spec["dtype"]]
        u64, u32 = ctypes.c_uint64, ctypes.c_uint32
        self.pointer = None  # until the driver has encoded it
        driver.check("cuTensorMapEncodeTiled", ctypes.c_void_p(self.address),
                     ctypes.c_int(TENSOR_MAP_TYPES[spec["dtype"]]), u32(2),
                     ctypes.c_void_p(pointer), (u64 * 2)(cols, rows), (u64 * 1)(cols * size),
                     (u32 * 2)(box_cols, box_rows), (u32 * 2)(1, 1), ctypes.c_int(0),
                     ctypes.c_int(TENSOR_MAP_SWIZZLE[spec["swizzle"]]),
                     ctypes.c_int(TENSOR_MAP_L2_PROMOTION_128B),
                     ctypes.c_int(TENSOR_MAP_OOB_ZEROS))
        self.pointer = pointer


def _tensor_map_parameter(kind: str, kernel: str, position: int) -> _TensorMapParameter:
    if kind != TENSOR_MAP_KIND:
        raise CudaError(f"{kernel}: parameter {position} is a TMA tensor map of PTX type .{kind}, but this "
                        f"launcher passes tensor maps by value (.{TENSOR_MAP_KIND}); the PTX comes from an "
                        "earlier tilemlir: compile the kernel again")
    return _TensorMapParameter()


def _address(value) -> int:
    """Where cuLaunchKernel reads a packed parameter from."""
    return value.address if isinstance(value, _TensorMapParameter) else ctypes.addressof(value)


class _TensorLauncher:
    """`CudaModule.tensor_launcher`: one entry's launches with their parameter
    buffers made once. Per call: each tensor's shape, dtype, device and
    layout checked against the compiled ones, its pointer written where the
    kernels read it, its tensor maps encoded again where it moved, one
    cuLaunchKernel per launch."""

    def __init__(self, module: CudaModule, function: dict):
        import sys

        torch = sys.modules.get("torch")  # loaded: its tensors are what this launches
        self.module, self.name = module, function["entry"]
        params = function["arguments"]
        self.expected = []
        for p in params:
            name = TORCH_DTYPES.get(p["dtype"], p["dtype"])
            dtype = getattr(torch, name, None) if torch is not None else f"torch.{name}"
            self.expected.append((tuple(p["shape"]), dtype if dtype is not None else f"({p['dtype']}: no torch type)"))
        self.lock = threading.Lock()  # the buffers are shared: one call writes and launches at a time
        self.pointers: list[list] = [[] for _ in params]   # the buffers each argument's pointer goes to
        self.maps: list[tuple[dict, _TensorMapParameter]] = []  # tensor-map parameters, by spec
        self.launches = []
        for launch in function["launches"]:
            kinds = launch.get("params") or ["u64"] * len(launch["arguments"])
            values = []
            for n, (spec, kind) in enumerate(zip(launch["arguments"], kinds)):
                if isinstance(spec, int):
                    value = _packed(0, kind, launch["kernel"], n)
                    self.pointers[spec].append(value)
                elif "tensor_map" in spec:
                    value = _tensor_map_parameter(kind, launch["kernel"], n)
                    self.maps.append((spec["tensor_map"], value))
                elif "constant" in spec:
                    value = _packed(spec["constant"], kind, launch["kernel"], n)
                else:  # an extent of a static shape: known now
                    extent = spec["extent"]
                    value = _packed(int(params[extent["argument"]]["shape"][extent["axis"]]), kind,
                                    launch["kernel"], n)
                values.append(value)
            array = (ctypes.c_void_p * max(1, len(values)))(*map(_address, values))
            (gx, gy, gz), (bx, by, bz) = launch["grid"], launch["block"]
            dims = [ctypes.c_uint(d) for d in (gx, gy, gz, bx, by, bz)]
            self.launches.append((module._function(launch), dims, ctypes.c_uint(launch["dynamic_shared_bytes"]),
                                  values, array))
        self.call = module.driver.lib.cuLaunchKernel

    def __call__(self, tensors: list, stream: int) -> None:
        if len(tensors) != len(self.expected):
            raise CudaError(f"{self.name} takes {len(self.expected)} arguments, got {len(tensors)}")
        pointers = []
        for index, (tensor, (shape, dtype)) in enumerate(zip(tensors, self.expected)):
            if tensor.shape != shape or tensor.dtype != dtype or not tensor.is_cuda \
                    or not tensor.is_contiguous():
                raise CudaError(_tensor_problem(tensor, index, shape, dtype))
            pointers.append(tensor.data_ptr())
        handle = ctypes.c_void_p(stream)
        with self.lock:
            for index, pointer in enumerate(pointers):
                for value in self.pointers[index]:
                    value.value = pointer
            for spec, parameter in self.maps:
                parameter.encode(self.module.driver, spec, pointers)
            for function, dims, shared, _, array in self.launches:
                code = self.call(function, *dims, shared, handle, array, None)
                if code != 0:
                    raise CudaError(f"cuLaunchKernel failed: {self.module.driver.error_name(code)}")


def _tensor_problem(tensor, index: int, shape: tuple, dtype) -> str:
    if tuple(tensor.shape) != shape:
        return f"argument {index}: shape {list(tensor.shape)}, the kernel was compiled for {list(shape)}"
    if tensor.dtype != dtype:
        return f"argument {index}: dtype {tensor.dtype}, the kernel was compiled for {dtype}"
    return f"argument {index}: needs a contiguous CUDA tensor"


class DeviceArray:
    """Device memory holding a copy of a NumPy array (for callers without torch)."""

    def __init__(self, array):
        self.array = array
        self.driver = driver()
        self.pointer = ctypes.c_uint64()
        self.driver.check("cuMemAlloc_v2", ctypes.byref(self.pointer), ctypes.c_size_t(max(1, array.nbytes)))
        self.driver.check("cuMemcpyHtoD_v2", self.pointer, array.ctypes.data_as(ctypes.c_void_p),
                          ctypes.c_size_t(array.nbytes))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    def copy_back(self) -> None:
        """Synchronizes, then copies device memory into the NumPy array."""
        self.driver.check("cuCtxSynchronize")
        self.driver.check("cuMemcpyDtoH_v2", self.array.ctypes.data_as(ctypes.c_void_p), self.pointer,
                          ctypes.c_size_t(self.array.nbytes))

    def free(self) -> None:
        if self.pointer.value:
            self.driver.check("cuMemFree_v2", self.pointer)
            self.pointer = ctypes.c_uint64()


def _shape_text(shape: list) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _device_pointer(argument, param: dict, index: int) -> int:
    if isinstance(argument, int):
        if None in param["shape"]:
            raise CudaError(f"argument {index}: a dynamic shape {_shape_text(param['shape'])} needs "
                            "an array or tensor, not a raw pointer")
        return argument
    shape = list(getattr(argument, "shape", []))
    if len(shape) != len(param["shape"]) or any(want is not None and want != got
                                                for want, got in zip(param["shape"], shape)):
        raise CudaError(f"argument {index}: shape {shape}, the kernel was compiled for "
                        f"{_shape_text(param['shape'])}")
    if isinstance(argument, DeviceArray):
        return argument.pointer.value
    dtype = str(getattr(argument, "dtype", "")).removeprefix("torch.")
    wanted = TORCH_DTYPES.get(param["dtype"], param["dtype"])
    if dtype != wanted:
        raise CudaError(f"argument {index}: dtype {dtype}, the kernel was compiled for {wanted}")
    if not argument.is_cuda or not argument.is_contiguous():
        raise CudaError(f"argument {index}: needs a contiguous CUDA tensor")
    return argument.data_ptr()


def _scalar_value(argument, param: dict, index: int):
    """A scalar argument as a Python int or float, checked against its type."""
    kind = param["scalar"]
    if isinstance(argument, bool) or not isinstance(argument, (int, float)) and not hasattr(argument, "item"):
        raise CudaError(f"argument {index}: expected a {kind} scalar, got {type(argument).__name__}")
    value = argument.item() if hasattr(argument, "item") else argument
    bits = INTEGER_BITS.get(kind)
    if bits is None:
        return float(value)
    if not isinstance(value, int):
        raise CudaError(f"argument {index}: expected an integer for {kind}, got {value!r}")
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise CudaError(f"argument {index}: {value} is out of range for {kind}")
    return value


def _packed(value, kind: str, kernel: str, position: int):
    """`value` as the ctypes object of PTX parameter type `kind` ("u64.ptr", "f32", ...)."""
    base = kind.split(".")[0].split("[")[0]
    if "[" in kind:  # a byte array (a TMA descriptor passed by value): not made here
        raise CudaError(f"{kernel}: parameter {position} is a .{kind} array, which this launcher "
                        "does not pass")
    ctype = PARAM_CTYPES.get(base)
    if ctype is None:
        raise CudaError(f"{kernel}: parameter {position} has PTX type .{kind}, which this launcher "
                        "does not pass")
    if base == "b16" and isinstance(value, float):  # an f16 scalar: its bit pattern
        import struct

        return ctype(struct.unpack("<H", struct.pack("<e", value))[0])
    if ctype in (ctypes.c_float, ctypes.c_double):
        return ctype(float(value))
    if isinstance(value, float):
        raise CudaError(f"{kernel}: parameter {position} is .{kind}, got the float {value!r}")
    return ctype(value)  # ctypes keeps the low bits: two's complement for .u/.b types


def torch_stream() -> int:
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    return torch.cuda.current_stream().cuda_stream
