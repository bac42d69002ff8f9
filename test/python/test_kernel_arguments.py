"""Scalar arguments and dynamic shapes on every backend (issue 17, item 5).

One tile kernel, `argument_kernels.scaled_gemm`: an f16 GEMM whose epilogue
scales by two f32 arguments and adds an i32 and an index argument, with M
static or dynamic (`memref<?x64xf16>`). It must

* compile for nvidia:sm_90a to PTX whose `.entry` takes the pointers, the
  scalars by value and (dynamic M) the extents, with launch metadata saying
  which host argument goes where; and run right on the H200 (the GPU test
  skips without a GPU and prepared PTX: `python test/python/test_kernel_arguments.py
  --prepare DIR` here, then `TILEMLIR_NVIDIA_PTX=DIR pytest test/python/test_kernel_arguments.py`
  on the GPU machine, where the launcher alone runs);
* run in the emulator for amdgpu:gfx942 and metax:xcore1000 and match float64 NumPy;
* give MACA C++ whose host launcher takes the scalars and extents, compiled
  with g++ against test/metax/maca_host.h and run (metax_program.py).

The launcher's packing of each parameter by its PTX type is checked without a
GPU through a recording stand-in for the CUDA driver.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import json
import os
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from argument_kernels import (
    HOST_VIEWS,
    scaled_gemm,
    scaled_gemm_expected,
    scaled_gemm_inputs,
    scaled_gemm_tolerance,
    viewed_gemm,
    viewed_gemm_arguments,
)

REPO = Path(__file__).resolve().parents[2]
PREPARED = os.environ.get("TILEMLIR_NVIDIA_PTX", "")
ROWS = 128  # the grid's rows; a dynamic M may be smaller
DYNAMIC_M = 100


@functools.cache
def _launcher():
    spec = importlib.util.spec_from_file_location("cuda_launch_for_tests",
                                                  REPO / "tilemlir" / "runtime" / "cuda_launch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _has_mlir() -> bool:
    return importlib.util.find_spec("mlir") is not None


needs_mlir = pytest.mark.skipif(not _has_mlir(), reason="needs the MLIR bindings")


def _compile_ptx(dynamic: bool):
    import tilemlir

    return tilemlir.compile(scaled_gemm(ROWS, dynamic), target="nvidia:sm_90a", emit="ptx",
                            options={"report": True})


@needs_mlir
def test_nvidia_scalar_arguments_are_passed_by_value():
    result = _compile_ptx(dynamic=False)
    (function,) = result.report["functions"]
    assert function["arguments"][3:] == [{"scalar": "f32"}, {"scalar": "f32"}, {"scalar": "i32"},
                                         {"scalar": "index"}]
    (launch,) = function["launches"]
    # The kernel's operands in the lowering's order: each a host argument.
    assert sorted(launch["arguments"]) == list(range(7))
    params = dict(zip(launch["arguments"], launch["params"]))
    assert [params[i] for i in range(7)] == ["u64.ptr", "u64.ptr", "u64.ptr", "f32", "f32", "u32", "u64"]
    assert result.artifact.count(".param .f32") == 2


@needs_mlir
def test_nvidia_dynamic_extents_follow_the_kernel_operands():
    result = _compile_ptx(dynamic=True)
    (function,) = result.report["functions"]
    assert function["arguments"][0] == {"shape": [None, 64], "dtype": "f16"}
    assert function["arguments"][2] == {"shape": [None, 128], "dtype": "f16"}
    (launch,) = function["launches"]
    own, extents = launch["arguments"][:7], launch["arguments"][7:]
    assert sorted(own) == list(range(7))
    # One extent per dynamic memref operand, in the order the operands come.
    order = [i for i in own if i in (0, 2)]
    assert extents == [{"extent": {"argument": i, "axis": 0}} for i in order]
    assert launch["params"][7:] == ["u64", "u64"]


@needs_mlir
def test_dynamic_memref_pass_keeps_the_results(tmp_path):
    """nvidia-dynamic-memref-arguments, checked by the emulator on the IR
    before and after it (it runs on GPU-level IR, beyond the reference engine)."""
    from mlir import ir

    from tilemlir.compiler import compile_module
    from tilemlir.dialects import tile
    from tilemlir.passes import build_pipeline
    from tilemlir.runtime.emulator import emulate
    from tilemlir.targets import get_target

    context = tile.make_context()
    module = ir.Module.parse(scaled_gemm(ROWS, dynamic=True), context)
    compile_module(module.operation, get_target("amdgpu:gfx942"), emit="gpu")
    before = module.operation.clone()
    build_pipeline("nvidia-dynamic-memref-arguments", context=context).run(module.operation)
    text = str(module)
    assert "memref.reinterpret_cast" in text and "memref<?x64xf16>)" not in text.split("gpu.func")[1]
    outputs = []
    for lowered in (before, module.operation):
        args = scaled_gemm_inputs(DYNAMIC_M, seed=3)
        emulate(lowered, "gemm", args, chip="gfx942")
        outputs.append(args[2])
    assert np.array_equal(outputs[0], outputs[1]) and not np.isnan(outputs[1]).any()


@needs_mlir
def test_dynamic_memref_pass_refuses_a_strided_dynamic_argument():
    from conftest import run_tool

    text = """module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: memref<?x4xf32, strided<[8, 1]>>) kernel {
      gpu.return
    }
  }
}
"""
    result = run_tool("tile-opt", "-", "-p", "builtin.module(nvidia-dynamic-memref-arguments)", stdin=text)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "<stdin>:3:5: error: nvidia: kernel argument 0 has type memref<?x4xf32, strided<[8, 1]>>" \
        in result.stderr


@pytest.mark.parametrize("target", ["amdgpu:gfx942", "metax:xcore1000"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@needs_mlir
def test_emulator_runs_scalars_and_dynamic_shapes(target, dynamic):
    from tilemlir import runtime

    args = scaled_gemm_inputs(DYNAMIC_M if dynamic else ROWS, seed=5)
    runtime.run(scaled_gemm(ROWS, dynamic), "gemm", args, engine="emulator", target=target)
    error = np.abs(args[2].astype(np.float64) - scaled_gemm_expected(args))
    assert (error <= scaled_gemm_tolerance(args)).all()


def _check_viewed(view: str, host: list, logical: list, rows: slice) -> None:
    """C's rows of the host output match NumPy; the rows around them are untouched (NaN)."""
    logical[2] = host[2][rows]
    error = np.abs(logical[2].astype(np.float64) - scaled_gemm_expected(logical))
    assert (error <= scaled_gemm_tolerance(logical)).all(), f"{view}: worst {np.nanmax(error)}"
    outside = np.delete(host[2], np.arange(rows.start, rows.stop), axis=0)
    assert np.isnan(outside).all(), f"{view}: wrote outside its view"


@pytest.mark.parametrize("target", ["amdgpu:gfx942", "metax:xcore1000"])
@pytest.mark.parametrize("view", list(HOST_VIEWS))
@needs_mlir
def test_emulator_runs_host_views(target, view):
    from tilemlir import runtime

    host, logical, rows = viewed_gemm_arguments(view, seed=7)
    runtime.run(viewed_gemm(view), "gemm", host, engine="emulator", target=target)
    _check_viewed(view, host, logical, rows)


# Views the nvidia launcher passes (static layouts: the base pointer, the offset in the type).
NVIDIA_VIEWS = [view for view in HOST_VIEWS if view != "subview_dynamic"]


@pytest.mark.parametrize("view", NVIDIA_VIEWS)
@needs_mlir
def test_nvidia_host_views_pass_the_argument_itself(view):
    import tilemlir

    result = tilemlir.compile(viewed_gemm(view), target="nvidia:sm_90a", emit="ptx", options={"report": True})
    (launch,) = result.report["functions"][0]["launches"]
    assert sorted(launch["arguments"]) == list(range(7))


# -- MetaX: the launcher and kernels compiled with g++ and run -------------------------------

MACA_CASES = ["dynamic", *HOST_VIEWS]


@pytest.fixture(scope="module")
def maca_program(tmp_path_factory):
    import maca_programs

    import tilemlir

    texts = {"dynamic": scaled_gemm(ROWS, True, name="gemm_dynamic")}
    texts.update({view: viewed_gemm(view, name=f"gemm_{view}") for view in HOST_VIEWS})
    sources = {name: tilemlir.compile(text, target="metax:xcore1000", emit="maca").artifact
               for name, text in texts.items()}
    directory = tmp_path_factory.mktemp("maca_arguments")
    return maca_programs.build(sources, directory, ("-O0",)), sources, directory


@needs_mlir
@pytest.mark.parametrize("case", MACA_CASES)
def test_maca_launcher_passes_scalars_extents_and_views(maca_program, case):
    import maca_programs

    binary, sources, directory = maca_program
    if case == "dynamic":
        args = scaled_gemm_inputs(DYNAMIC_M, seed=9)
        assert "tm_f16* host0, int64_t host0_d0, tm_f16* host1, tm_f16* host2, int64_t host2_d0, " \
            "float host3, float host4, int32_t host5, int64_t host6" in sources[case]
        maca_programs.run(binary, case, maca_programs.launcher_values(args, {0: [0], 2: [0]}), directory)
        error = np.abs(args[2].astype(np.float64) - scaled_gemm_expected(args))
        assert (error <= scaled_gemm_tolerance(args)).all()
        return
    host, logical, rows = viewed_gemm_arguments(case, seed=9)
    dynamic = {0: [0]} if case == "cast" else {}
    maca_programs.run(binary, case, maca_programs.launcher_values(host, dynamic), directory)
    _check_viewed(case, host, logical, rows)


# -- what the launchers cannot pass is an error at its place ----------------------------------

_COLLAPSED = viewed_gemm("collapse_shape")
REFUSED = [
    # nvidia passes extents of host arguments only, not of views computed from them.
    ("nvidia:sm_90a", _COLLAPSED.replace("memref<2x64x64xf16>", "memref<?x64x64xf16>")
     .replace("into memref<128x64xf16>", "into memref<?x64xf16>")
     .replace("(memref<128x64xf16>, memref<64x32", "(memref<?x64xf16>, memref<64x32"),
     "2:8: error: nvidia: a host view of dynamic shape (memref<?x64xf16>) reaches a kernel"),
    # A run-time offset cannot be folded into a bare pointer's type.
    ("nvidia:sm_90a", viewed_gemm("subview_dynamic"),
     "2:8: error: nvidia: a view with a dynamic offset or strides"),
    # bf16 is no scalar type the launcher packs.
    ("nvidia:sm_90a", scaled_gemm(ROWS).replace("%sa: f32", "%sa: bf16").replace(
        "%scale = arith.mulf %sa, %sb : f32", "%sa32 = arith.extf %sa : bf16 to f32\n    %scale = arith.mulf %sa32, %sb : f32"),
     "1:90: error: nvidia: argument 3 of @gemm has type bf16"),
    # Host arrays are contiguous and row-major.
    ("nvidia:sm_90a", scaled_gemm(ROWS).replace("%A: memref<128x64xf16>,", "%A: memref<128x64xf16, strided<[64, 1]>>,")
     .replace("(memref<128x64xf16>, memref<64x32", "(memref<128x64xf16, strided<[64, 1]>>, memref<64x32"),
     "1:17: error: nvidia: argument 0 of @gemm has type memref<128x64xf16, strided<[64, 1]>>"),
    ("metax:xcore1000", scaled_gemm(ROWS).replace("%A: memref<128x64xf16>,", "%A: memref<128x64xf16, strided<[64, 1]>>,")
     .replace("(memref<128x64xf16>, memref<64x32", "(memref<128x64xf16, strided<[64, 1]>>, memref<64x32"),
     "1:17: error: MACA emitter: a host argument of type memref<128x64xf16, strided<[64, 1]>>"),
    # Memory the host function allocates itself reaches no launcher.
    ("nvidia:sm_90a", scaled_gemm(ROWS).replace("%A: memref<128x64xf16>,", "%X: memref<1xf16>,").replace(
        '  "tile.kernel"() ({', '  %A = memref.alloc() : memref<128x64xf16>\n  "tile.kernel"() ({', 1),
     "3:3: error: nvidia: kernel operand 0 is computed on the host"),
    ("metax:xcore1000", scaled_gemm(ROWS).replace("%A: memref<128x64xf16>,", "%X: memref<1xf16>,").replace(
        '  "tile.kernel"() ({', '  %A = memref.alloc() : memref<128x64xf16>\n  "tile.kernel"() ({', 1),
     ("2:8: error: MACA emitter: host code other than kernel launches, views of the arguments and arith "
     "('memref.alloc')")),
]


@needs_mlir
@pytest.mark.parametrize(("target", "text", "message"), REFUSED)
def test_what_a_launcher_cannot_pass_is_refused_where_it_is(target, text, message, run_in_process):
    result = run_in_process("tile-compile", "-", "--target", target, "-o", os.devnull, stdin=text)
    assert result.returncode == 1 and "Traceback" not in result.stderr and "internal" not in result.stderr
    assert f"<stdin>:{message}" in result.stderr, result.stderr


# -- the launcher, without a GPU ------------------------------------------------------------


class RecordingDriver:
    """Stands in for cuda_launch's driver: records cuLaunchKernel's parameters
    as bytes; its cuTensorMapEncodeTiled writes the global address, the data
    type and the box into the map's first 16 bytes, and counts the encodings."""

    def __init__(self):
        self.launches, self.encodings = [], 0

    def check(self, name, *args):
        if name == "cuLaunchKernel":
            array, sizes = args[-2], self.sizes
            self.launches.append([ctypes.string_at(array[i], size) for i, size in enumerate(sizes)])
        elif name == "cuTensorMapEncodeTiled":
            address, dtype, _, pointer, _, _, box = args[:7]
            assert address.value % 64 == 0  # CUtensorMap's alignment
            fields = (pointer.value, dtype.value, box[0], box[1])
            ctypes.memmove(address.value, struct.pack("<QIHH", *fields), 16)
            self.encodings += 1


def parameter_sizes(launcher, kinds: list[str]) -> list[int]:
    """The bytes of each PTX parameter type, as the launcher packs them."""
    return [launcher.TENSOR_MAP_BYTES if kind == launcher.TENSOR_MAP_KIND
            else ctypes.sizeof(launcher.PARAM_CTYPES[kind.split(".")[0]]) for kind in kinds]


def _recorded_launch(metadata: dict, arguments: list) -> list[bytes]:
    launcher = _launcher()
    module = launcher.CudaModule.__new__(launcher.CudaModule)
    module.metadata, module.functions = metadata, {}
    module.driver = RecordingDriver()
    (launch,) = metadata["functions"][0]["launches"]
    module.driver.sizes = parameter_sizes(launcher, launch["params"])
    module.functions[launch["kernel"]] = ctypes.c_void_p(1)
    module.launch(None, arguments, stream=0)
    return module.driver.launches[0]


METADATA = {"functions": [{
    "entry": "f",
    "arguments": [{"shape": [None, 4], "dtype": "f32"}, {"scalar": "f32"}, {"scalar": "index"},
                  {"scalar": "i32"}, {"scalar": "f16"}],
    "launches": [{"kernel": "k", "grid": [1, 1, 1], "block": [64, 1, 1], "dynamic_shared_bytes": 0,
                  "arguments": [0, 3, 1, 2, 4, {"extent": {"argument": 0, "axis": 0}}, {"constant": 7}],
                  "params": ["u64.ptr", "u32", "f32", "u32", "b16", "u64", "u64"]}]}]}


class FakeArray:
    def __init__(self, shape):
        self.shape, self.dtype, self.is_cuda = shape, "torch.float32", True

    def is_contiguous(self):
        return True

    def data_ptr(self):
        return 0x1000


def test_launcher_packs_each_parameter_by_its_ptx_type():
    packed = _recorded_launch(METADATA, [FakeArray((5, 4)), 1.5, 9, -2, 0.5])
    assert packed == [(0x1000).to_bytes(8, "little"), (-2 % 2**32).to_bytes(4, "little"),
                      np.float32(1.5).tobytes(), (9).to_bytes(4, "little"),
                      np.float16(0.5).tobytes(), (5).to_bytes(8, "little"), (7).to_bytes(8, "little")]


@pytest.mark.parametrize(("arguments", "message"), [
    ([FakeArray((5, 3)), 1.5, 9, -2, 0.5], r"argument 0: shape \[5, 3\], the kernel was compiled for \[\?, 4\]"),
    ([0x1000, 1.5, 9, -2, 0.5], r"argument 0: a dynamic shape \[\?, 4\] needs an array"),
    ([FakeArray((5, 4)), "x", 9, -2, 0.5], "argument 1: expected a f32 scalar, got str"),
    ([FakeArray((5, 4)), 1.5, 2.5, -2, 0.5], "argument 2: expected an integer for index, got 2.5"),
    ([FakeArray((5, 4)), 1.5, 9, 2**31, 0.5], "argument 3: 2147483648 is out of range for i32"),
    ([FakeArray((5, 4)), 1.5, 9], "f takes 5 arguments, got 3"),
])
def test_launcher_refuses_arguments_that_do_not_fit(arguments, message):
    launcher = _launcher()
    with pytest.raises(launcher.CudaError, match=message):
        _recorded_launch(METADATA, arguments)


@needs_mlir
def test_entry_parameters_read_from_ptx():
    from tilemlir.backends.nvidia.toolchain import entry_parameters

    ptx = """.visible .entry k0(
	.param .u64 .ptr .align 1 k0_param_0,
	.param .f32 k0_param_1,
	.param .align 64 .b8 k0_param_2[128]
)
.visible .entry k1()
"""
    assert entry_parameters(ptx) == {"k0": ["u64.ptr", "f32", "b8[128]"], "k1": []}


# -- on the H200 -----------------------------------------------------------------------------

CASES = {"static": (False, ROWS), "dynamic": (True, DYNAMIC_M)}
VIEW_CASES = ["collapse_shape", "subview"]


def prepare(directory: Path) -> None:
    """PTX, metadata and inputs of each case, for the GPU machine (no MLIR there)."""
    from tilemlir.backends.nvidia.toolchain import PtxKernel

    directory.mkdir(parents=True, exist_ok=True)
    for name, (dynamic, _) in CASES.items():
        result = _compile_ptx(dynamic)
        metadata = {key: result.report[key] for key in ("target", "functions")}
        PtxKernel(result.artifact, metadata).save(directory / name)
    import tilemlir

    for view in VIEW_CASES:
        result = tilemlir.compile(viewed_gemm(view), target="nvidia:sm_90a", emit="ptx", options={"report": True})
        metadata = {key: result.report[key] for key in ("target", "functions")}
        PtxKernel(result.artifact, metadata).save(directory / view)


def _gpu() -> bool:
    return _launcher().gpu_available()


@pytest.mark.skipif(not PREPARED or not _gpu(),
                    reason="needs an NVIDIA GPU and TILEMLIR_NVIDIA_PTX (--prepare DIR)")
@pytest.mark.parametrize("case", list(CASES))
def test_scaled_gemm_on_the_gpu(case):
    launcher = _launcher()
    _, m = CASES[case]
    module = launcher.CudaModule.load(Path(PREPARED) / f"{case}.json")
    for seed in (1, 2):
        args = scaled_gemm_inputs(m, seed)
        buffers = [launcher.DeviceArray(a) for a in args[:3]]
        module.launch("gemm", [*buffers, *args[3:]], stream=0)
        buffers[2].copy_back()
        for buffer in buffers:
            buffer.free()
        error = np.abs(args[2].astype(np.float64) - scaled_gemm_expected(args))
        assert (error <= scaled_gemm_tolerance(args)).all(), f"worst {np.nanmax(error)}"


@pytest.mark.skipif(not PREPARED or not _gpu(),
                    reason="needs an NVIDIA GPU and TILEMLIR_NVIDIA_PTX (--prepare DIR)")
@pytest.mark.parametrize("view", VIEW_CASES)
def test_host_views_on_the_gpu(view):
    launcher = _launcher()
    module = launcher.CudaModule.load(Path(PREPARED) / f"{view}.json")
    host, logical, rows = viewed_gemm_arguments(view, seed=4)
    buffers = [launcher.DeviceArray(a) for a in host[:3]]
    module.launch("gemm", [*buffers, *host[3:]], stream=0)
    buffers[2].copy_back()
    for buffer in buffers:
        buffer.free()
    _check_viewed(view, host, logical, rows)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--prepare":
        sys.exit("usage: test_kernel_arguments.py --prepare DIR")
    prepare(Path(sys.argv[2]))
    print(json.dumps(sorted(os.listdir(sys.argv[2]))))


class RecordingLib:
    """Stands in for libcuda under the tensor launcher: records cuLaunchKernel's
    grid, block, shared bytes, stream and parameters as bytes."""

    def __init__(self, sizes):
        self.sizes, self.launches = sizes, []

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, array, extra):
        dims = [d.value for d in (gx, gy, gz, bx, by, bz)]
        self.launches.append((dims, shared.value, stream.value,
                              [ctypes.string_at(array[i], size) for i, size in enumerate(self.sizes)]))
        return 0


STATIC = {"functions": [{
    "entry": "g",
    "arguments": [{"shape": [5, 4], "dtype": "f32"}, {"shape": [8, 16], "dtype": "f16"}],
    "launches": [{"kernel": "k", "grid": [3, 2, 1], "block": [128, 1, 1], "dynamic_shared_bytes": 4096,
                  "arguments": [1, 0, {"extent": {"argument": 1, "axis": 1}}, {"constant": 7},
                                {"tensor_map": {"source": {"argument": 1}, "shape": [8, 16], "box": [8, 16],
                                                "dtype": "f16", "swizzle": 0}}, 1],
                  "params": ["u64.ptr", "u64.ptr", "u32", "u64", "b8[128]", "u64.ptr"]}]}]}


class FakeTensor(FakeArray):
    def __init__(self, shape, dtype, pointer):
        self.shape, self.dtype, self.is_cuda, self.pointer = shape, dtype, True, pointer

    def data_ptr(self):
        return self.pointer


def test_tensor_launcher_packs_what_the_general_launch_packs():
    """CudaModule.tensor_launcher (buffers built once, pointers written per
    call) against CudaModule.launch on the same metadata: the same bytes per
    parameter, grid, block, shared memory and stream, call after call."""
    launcher = _launcher()
    module = launcher.CudaModule.__new__(launcher.CudaModule)
    module.metadata, module.functions, module._launchers = STATIC, {}, {}
    module.driver = RecordingDriver()
    (launch,) = STATIC["functions"][0]["launches"]
    module.driver.sizes = parameter_sizes(launcher, launch["params"])
    module.driver.lib = RecordingLib(module.driver.sizes)
    module.functions["k"] = ctypes.c_void_p(1)
    fast = module.tensor_launcher(None)
    # The dtypes it expects: torch's own where torch is loaded, their names otherwise.
    f32, f16 = (dtype for _, dtype in fast.expected)
    for pointers in ((0x1000, 0x2000), (0x3000, 0x4000)):
        tensors = [FakeTensor((5, 4), f32, pointers[0]), FakeTensor((8, 16), f16, pointers[1])]
        module.launch(None, tensors, stream=0x77)
        fast(tensors, 0x77)
        dims, shared, stream, packed = module.driver.lib.launches[-1]
        assert packed == module.driver.launches[-1]
        assert (dims, shared, stream) == ([3, 2, 1, 128, 1, 1], 4096, 0x77)
        assert packed[0] == pointers[1].to_bytes(8, "little") and packed[2] == (16).to_bytes(4, "little")
        # The tensor map of argument 1 travels by value: 128 bytes, encoded
        # for this call's pointer (f16 is CUtensorMapDataType 6; box 16 x 8).
        assert len(packed[4]) == 128 and packed[4][:16] == struct.pack("<QIHH", pointers[1], 6, 16, 8)
    # The same pointers again: the fast launcher's map is not encoded again.
    encodings = module.driver.encodings
    fast(tensors, 0x77)
    assert module.driver.encodings == encodings and module.driver.lib.launches[-1][3] == packed
    with pytest.raises(launcher.CudaError, match=r"argument 1: shape \[8, 8\], the kernel was compiled for \[8, 16\]"):
        fast([FakeTensor((5, 4), f32, 1), FakeTensor((8, 8), f16, 2)], 0)
    with pytest.raises(launcher.CudaError, match="argument 0: dtype torch.float16, the kernel was compiled for"):
        fast([FakeTensor((5, 4), f16, 1), FakeTensor((8, 16), f16, 2)], 0)
    # Scalars, dynamic shapes or a memset first: the general launch serves.
    module._launchers.clear()
    module.metadata = METADATA
    assert module.tensor_launcher(None) is None


def test_tensor_map_of_an_unaligned_address_is_refused_with_its_argument():
    # TMA needs the tensor's address 16-byte aligned: a view starting 2 bytes
    # in is refused before the driver is asked, naming the argument.
    launcher = _launcher()
    spec = {"source": {"argument": 2}, "dtype": "f16", "shape": [256, 256], "box": [128, 64], "swizzle": 128}
    parameter = launcher._tensor_map_parameter(launcher.TENSOR_MAP_KIND, "k", 3)
    with pytest.raises(launcher.CudaError, match=r"argument 2: .*TMA.*16-byte aligned \(it is 0x1002\)"):
        parameter.encode(RecordingDriver(), spec, [0x1000, 0x2000, 0x1002])
    assert parameter.pointer is None


def test_tensor_map_that_failed_to_encode_is_encoded_again():
    # A map is encoded again only when its tensor moves, so one whose encoding
    # failed must not pass for the pointer it was being encoded for.
    launcher = _launcher()
    spec = {"source": {"argument": 0}, "dtype": "f16", "shape": [256, 256], "box": [128, 64], "swizzle": 128}
    parameter = launcher._tensor_map_parameter(launcher.TENSOR_MAP_KIND, "k", 1)
    driver = RecordingDriver()
    parameter.encode(driver, spec, [0x1000])
    parameter.encode(driver, spec, [0x1000])
    assert driver.encodings == 1 and parameter.pointer == 0x1000

    class FailingDriver(RecordingDriver):
        def check(self, name, *args):
            if name == "cuTensorMapEncodeTiled":
                raise launcher.CudaError("cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE")
            super().check(name, *args)

    with pytest.raises(launcher.CudaError, match="cuTensorMapEncodeTiled failed"):
        parameter.encode(FailingDriver(), spec, [0x2000])
    assert parameter.pointer is None
    parameter.encode(driver, spec, [0x1000])  # the map holds 0x2000's half-made encoding: encode again
    assert driver.encodings == 2 and parameter.pointer == 0x1000
    assert ctypes.string_at(parameter.address, 8) == (0x1000).to_bytes(8, "little")


def test_tensor_map_passed_as_a_pointer_is_refused_as_earlier_ptx():
    # PTX from before nvidia-tensor-maps-by-value took the map's address (.u64):
    # the launcher says to compile again rather than pass what the kernel does not read.
    launcher = _launcher()
    with pytest.raises(launcher.CudaError, match=r"k: parameter 4 is a TMA tensor map of PTX type \.u64, "
                                                 r"but this launcher passes tensor maps by value \(\.b8\[128\]\)"
                                                 r".*compile the kernel again"):
        launcher._tensor_map_parameter("u64", "k", 4)
