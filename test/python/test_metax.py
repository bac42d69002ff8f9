"""The MetaX target, proven on the CPU (issue 8).

Every GEMM of the list is compiled by the whole pipeline to MACA C++
(`tilemlir.compile(..., emit="maca")`), and that source is compiled with g++
against test/metax/maca_host.h (threads of a block as std::threads, the MMA
built-ins from MetaX's published lane layouts) and run; separately, the
GPU-level IR runs in the SIMT emulator with the MetaX instruction semantics
(runtime/emu_metax.py). Both must match the reference engine on the tile IR
within the tolerance of the output type, so the C++ printer and the
GPU-level lowering are each checked. All sources go into one C++ program,
compiled once per session.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import tilemlir
from tilemlir.passes.symbols import kernel_symbol
from tilemlir.runtime import load_module, run
from tilemlir.runtime.arguments import parameters, random_arguments
from tilemlir.runtime.dtypes import convert
from tilemlir.runtime.reference import Program

sys.path.insert(0, str(Path(__file__).resolve().parent))
import maca_programs
from kernel_text import Gemm, gemm_kernel, seed_kernel, whole_problem_gemm

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@dataclass(frozen=True)
class Case:
    name: str
    chip: str
    text: str
    k: int

    @property
    def target(self) -> str:
        return f"metax:{self.chip}"


def _gemm(name: str, chip: str, *args, **kwargs) -> Case:
    gemm = Gemm(*args, name=name, **kwargs)
    return Case(name, chip, gemm_kernel(gemm), gemm.k)


BLOCK = (64, 64, 32)
CASES = [
    # xcore1000 (C500): f16, bf16, i8 with K = 16; shapes not multiples of the blocks.
    # f16_c500: B's 128x64 tiles are stored transposed 4 rows per thread at a time
    # (vector.interleave and vector.shuffle in the C++), its K of 160 one and a part tiles.
    _gemm("f16_c500", "xcore1000", 64, 200, 160, block=(32, 64, 128), in_type="f16", out_type="f32",
          stages=2),
    _gemm("f16_tb_c500", "xcore1000", 100, 136, 72, block=(64, 64, 16), in_type="f16",
          out_type="f16", transpose_b=True, stages=2),
    _gemm("bf16_ta_c500", "xcore1000", 72, 100, 64, block=BLOCK, in_type="bf16", out_type="f32",
          transpose_a=True),
    _gemm("i8_c500", "xcore1000", 80, 72, 96, block=BLOCK, in_type="i8", acc_type="i32",
          out_type="i32"),
    # xcore1500 (C600): the seed's fp8 GEMM (its inputs re-typed OCP, the chip's fp8:
    # FNUZ does not convert exactly), fp8 at odd sizes, i8 with K = 32.
    Case("seed_fp8_c600", "xcore1500",
         seed_kernel(256, "seed_fp8_c600").replace("f8E4M3FNUZ", "f8E4M3FN"), 256),
    # fp8 with both operands transposed: A stored transposed for vector reads (8-bit
    # columns), B already K-contiguous (the seed covers fp8 B stored transposed).
    _gemm("fp8_c600", "xcore1500", 100, 72, 96, block=BLOCK, in_type="f8E4M3FN", out_type="f16",
          transpose_a=True, transpose_b=True),
    _gemm("i8_c600", "xcore1500", 72, 100, 128, block=(64, 64, 64), in_type="i8", acc_type="i32",
          out_type="i32", stages=2),
    # Whole-problem form: tile-tiling tiles for each chip, its unknown facts
    # assumed (test/Transforms/tiling-assumed-facts.mlir has the remarks).
    Case("whole_f16_c500", "xcore1000",
         whole_problem_gemm(96, 160, 64, "f16", "f32").replace("@gemm(", "@whole_f16_c500("), 64),
    Case("whole_bf16_c600", "xcore1500",
         whole_problem_gemm(128, 96, 96, "bf16", "f32", transpose_b=True, zero_fill=False)
         .replace("@gemm(", "@whole_bf16_c600("), 96),
    # Split-K (C in the accumulator type, too few C tiles for the chip): the
    # slices' atomicAdds into C, cleared by mcMemset first, or added onto C.
    Case("splitk_f16_c500", "xcore1000",
         whole_problem_gemm(32, 64, 1024, "f16", "f32").replace("@gemm(", "@splitk_f16_c500("), 1024),
    Case("splitk_i8_c600", "xcore1500",
         whole_problem_gemm(32, 64, 512, "i8", "i32", zero_fill=False, accum="i32")
         .replace("@gemm(", "@splitk_i8_c600("), 512),
]
SPLIT_K_CASES = [case for case in CASES if case.name.startswith("splitk")]

@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """(path of the compiled test program, {case: MACA source}, seconds to build)."""
    directory = tmp_path_factory.mktemp("metax")
    start = time.perf_counter()
    texts = {case.name: tilemlir.compile(case.text, target=case.target, emit="maca").artifact
             for case in CASES}
    binary = maca_programs.build(texts, directory)
    return binary, texts, time.perf_counter() - start


def _inputs(case: Case, seed: int = 0) -> list[np.ndarray]:
    entry = case.name
    program = Program(load_module(case.text)[0])
    return random_arguments(parameters(program.function(entry).op, program.dtype_of), seed)


def _reference(case: Case, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The reference engine on the tile IR after the tile passes that give the
    kernel its meaning on this chip (tile-legalize-precision's casts)."""
    tile_ir = tilemlir.compile(case.text, target=case.target, emit="tile").artifacts["tile"]
    arrays = [x.copy() for x in inputs]
    run(tile_ir, case.name, arrays)
    return arrays


def _run_cpp(binary: Path, case: Case, inputs: list[np.ndarray], directory: Path) -> list[np.ndarray]:
    arrays = [np.ascontiguousarray(array) for array in inputs]
    maca_programs.run(binary, case.name, arrays, directory)
    return arrays


def _check_close(case: Case, inputs, expected, actual, what: str) -> None:
    """Same inputs, same output rounding; the accumulation order differs (one
    MMA sums its K products at once), so: one output ulp plus the f32
    accumulation bound K * 2^-23 * (K * max|a| * max|b|). Integers: exact."""
    out_ref, out = expected[-1], actual[-1]
    if np.issubdtype(out_ref.dtype, np.integer):
        assert np.array_equal(out, out_ref), f"{what}: {np.argwhere(out != out_ref)[:5]}"
        return
    ref64, got64 = convert(out_ref, np.float64), convert(out, np.float64)
    a, b = (convert(x, np.float64) for x in inputs[:2])
    k = case.k
    ulp = np.spacing(np.abs(out_ref).astype(out_ref.dtype)).astype(np.float64)
    bound = ulp + k * 2.0 ** -23 * np.abs(a).max() * np.abs(b).max() * k
    error = np.abs(got64 - ref64)
    assert np.all(error <= bound), f"{what}: max error {error.max()} at {np.unravel_index(error.argmax(), error.shape)}"
    assert np.abs(ref64).max() > 0


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_maca_source_runs_on_cpu(case, program, tmp_path):
    binary, _, _ = program
    inputs = _inputs(case)
    expected = _reference(case, inputs)
    actual = _run_cpp(binary, case, [x.copy() for x in inputs], tmp_path)
    _check_close(case, inputs, expected, actual, "MACA C++ on the CPU")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gpu_level_ir_runs_in_emulator(case):
    inputs = _inputs(case)
    expected = _reference(case, inputs)
    emulated = [x.copy() for x in inputs]
    run(case.text, case.name, emulated, engine="emulator", target=case.target)
    _check_close(case, inputs, expected, emulated, "emulator (MetaX MMA semantics)")


def test_emitted_sources_use_the_chips_instructions(program):
    """int8 is 16x16x16 on xcore1000 and 16x16x32 on xcore1500; fp8 only on xcore1500;
    B fragment first in every call."""
    _, texts, seconds = program
    assert "__builtin_mxc_mma_16x16x16i8(" in texts["i8_c500"]
    assert "__builtin_mxc_mma_16x16x32i8(" in texts["i8_c600"]
    assert "__builtin_mxc_mma_16x16x32f8(" in texts["seed_fp8_c600"]
    assert "__builtin_mxc_mma_16x16x16bf16(" in texts["bf16_ta_c500"]
    assert seconds < 60, f"building the CPU test program took {seconds:.1f} s"


# A vector load from shared memory: tm_vload<tm_f16x4>, tm_bf16x4, tm_i8x8, tm_f8e4m3x8, ...
SHARED_VECTOR_LOAD = re.compile(r"tm_vload<tm_[a-z]+(?P<bits>\d+)\w*?x(?P<count>\d+)>\(&smem")


def test_operand_reads_are_64_bit_vectors(program):
    """Every gemm operand is read from shared memory as one vector per lane
    and instruction (issue 28): an operand whose K runs down its columns as
    written (B without transpose_b, A with transpose_a) is stored
    transposed, so no case reads shared memory element by element, and the
    reads are 64 bits wide (4 x 16-bit, 8 x 8-bit), except 16x16x16i8's
    operand, which is one 32-bit word."""
    _, texts, _ = program
    for name, text in texts.items():
        assert not re.search(r"= smem\d+\[", text), f"{name}: element-wise shared reads"
        widths = {int(m["bits"]) * int(m["count"]) for m in SHARED_VECTOR_LOAD.finditer(text)}
        assert widths == ({32} if name == "i8_c500" else {64}), f"{name}: shared reads of {widths} bits"


def test_fp8_on_xcore1000_computes_in_f16():
    """Whether the C500 has fp8 MMAs is not publicly known: assumed not, the
    gemm computes exactly in f16 (a remark says so); fp8-fallback=error refuses."""
    seed = (EXAMPLES / "seed_fp8_gemm.mlir").read_text().replace("f8E4M3FNUZ", "f8E4M3FN")
    maca = tilemlir.compile(seed, target="metax:xcore1000", emit="maca").artifacts["maca"]
    assert set(re.findall(r"__builtin_mxc_mma_\w+", maca)) == {"__builtin_mxc_mma_16x16x16f16"}
    with pytest.raises(tilemlir.compiler.CompileError, match="fp8 matrix instructions is not publicly known"):
        tilemlir.compile(seed, target="metax:xcore1000", emit="maca",
                         options={"passes": "tile-legalize-precision{fp8-fallback=error}"})


def _mixed_fp8_case() -> Case:
    """A's tiles e5m2, B's e4m3 (A is 64x64 and its tile 64x32, B 64x96 and 32x64)."""
    text = gemm_kernel(Gemm(64, 96, 64, block=(64, 64, 32), in_type="f8E4M3FN", out_type="f16",
                            name="mixed_fp8_c600"))
    mixed = text.replace("64x64xf8E4M3FN", "64x64xf8E5M2").replace("64x32xf8E4M3FN", "64x32xf8E5M2")
    assert mixed.count("xf8E5M2") == 5 and "32x64xf8E4M3FN" in mixed
    return Case("mixed_fp8_c600", "xcore1500", mixed, 64)


def test_mixed_fp8_on_xcore1500_computes_exactly_in_f16(tmp_path):
    """xcore1500 has e4m3 x e4m3 and e5m2 x e5m2 built-ins but none for
    e5m2 x e4m3: the gemm computes exactly in f16 (a remark says so), and the
    C++ gives what the reference engine computes in fp8 on the source;
    fp8-fallback=error refuses, naming the options."""
    case = _mixed_fp8_case()
    result = tilemlir.compile(case.text, target=case.target, emit="maca")
    said = " ".join(str(remark) for remark in result.remarks)
    assert ("metax:xcore1500 has no matrix instruction for f8E5M2 x f8E4M3FN -> f32 (its fp8 "
            "instructions take f8E4M3FN x f8E4M3FN, f8E5M2 x f8E5M2); this gemm is computed "
            "exactly in f16") in said
    maca = result.artifact
    assert set(re.findall(r"__builtin_mxc_mma_\w+", maca)) == {"__builtin_mxc_mma_16x16x16f16"}
    binary = maca_programs.build({case.name: maca}, tmp_path)
    inputs = _inputs(case)
    expected = [x.copy() for x in inputs]
    run(case.text, case.name, expected)  # the source, in fp8
    actual = _run_cpp(binary, case, [x.copy() for x in inputs], tmp_path)
    _check_close(case, inputs, expected, actual, "mixed fp8 in f16, MACA C++ on the CPU")
    with pytest.raises(tilemlir.compiler.CompileError,
                       match=r"no matrix instruction for f8E5M2 x f8E4M3FN -> f32 .*; compute it "
                             r"exactly in f16 with tile-legalize-precision\{fp8-fallback=auto\}"):
        tilemlir.compile(case.text, target=case.target, emit="maca",
                         options={"passes": "tile-legalize-precision{fp8-fallback=error}"})


def test_wrong_kernel_is_caught():
    """A test that cannot fail is a defect: swapping the operands of the MMA
    built-in (A first, as if the layouts were AMD's) must break the result."""
    case = CASES[0]
    gpu = tilemlir.compile(case.text, target=case.target, emit="gpu").artifacts["gpu"]
    swapped = re.sub(r"(func\.call @__builtin_mxc_mma_\w+\()(%[\w#]+), (%[\w#]+), ",
                     r"\1\3, \2, ", gpu)
    assert swapped != gpu
    inputs = _inputs(case)
    expected = _reference(case, inputs)
    emulated = [x.copy() for x in inputs]
    run(swapped, case.name, emulated, engine="emulator", target=case.target)
    with pytest.raises(AssertionError):
        _check_close(case, inputs, expected, emulated, "swapped operands")


# A function name that, pasted into C++, declared a global of its own.
HOSTILE_NAME = "k(){}\nint injected_global = 1;\nvoid z"


def test_source_names_never_reach_the_cpp_verbatim(tmp_path):
    """The launcher of a function with any name is `kernel_symbol(name)`: the
    source builds with g++, defines no injected global, and the launcher
    computes the GEMM as the reference engine does on the source."""
    base = CASES[0]
    quoted = '"k(){}\\0Aint injected_global = 1;\\0Avoid z"'
    text = base.text.replace(f"@{base.name}", f"@{quoted}")
    assert text != base.text
    maca = tilemlir.compile(text, target=base.target, emit="maca").artifact
    launcher = kernel_symbol(HOSTILE_NAME)
    assert maca_programs.LAUNCHER.findall(maca) == [(launcher, "tm_f16* host0, tm_f16* host1, float* host2")]
    assert "injected_global = 1" not in maca and "\nint injected_global" not in maca
    runner = Case("named", base.chip, text, base.k)  # the driver selects it by this name
    binary = maca_programs.build({runner.name: maca}, tmp_path)
    nm = shutil.which("nm")
    if nm is not None:
        symbols = subprocess.run([nm, str(binary)], capture_output=True, text=True, check=True).stdout
        assert launcher in symbols and "injected_global" not in symbols
    source_case = Case(HOSTILE_NAME, base.chip, text, base.k)
    inputs = _inputs(source_case)
    expected = _reference(source_case, inputs)
    actual = _run_cpp(binary, runner, [x.copy() for x in inputs], tmp_path)
    _check_close(source_case, inputs, expected, actual, "MACA C++ of a strangely named function")


# Function names the C++ around a launcher already has: the program's entry,
# C library functions, the MACA runtime.
HOST_NAMED = ["main", "printf", "memcpy", "malloc", "mcMalloc"]


def test_functions_named_like_host_symbols_get_their_own_launchers(tmp_path):
    """A function called `main`, `printf`, `memcpy`, `malloc` or `mcMalloc`
    gets a mangled launcher (`tm_main`, ...): the sources build with g++ into
    one program (which has its own `main`), and each launcher computes the
    GEMM as the reference engine does."""
    base = CASES[0]
    cases = [Case(name, base.chip, base.text.replace(f"@{base.name}", f"@{name}"), base.k)
             for name in HOST_NAMED]
    sources = {}
    for case in cases:
        maca = tilemlir.compile(case.text, target=case.target, emit="maca").artifact
        assert [entry for entry, _ in maca_programs.LAUNCHER.findall(maca)] == [f"tm_{case.name}"]
        sources[case.name] = maca
    binary = maca_programs.build(sources, tmp_path)
    for case in cases:
        inputs = _inputs(case)
        expected = _reference(case, inputs)
        actual = _run_cpp(binary, case, [x.copy() for x in inputs], tmp_path)
        _check_close(case, inputs, expected, actual, f"the launcher of @{case.name}")


@pytest.mark.parametrize("case", SPLIT_K_CASES, ids=[c.name for c in SPLIT_K_CASES])
def test_split_k_cases_are_split(case, program):
    """The split-K cases above are split-K kernels (so the runs above check
    MACA's atomicAdd and mcMemset): a z grid of slices, C cleared by mcMemset
    where it was zero-filled."""
    _binary, texts, _seconds = program
    tile_ir = tilemlir.compile(case.text, target=case.target, emit="tile").artifacts["tile"]
    assert "split_k = 1 :" not in tile_ir and "tile.atomic_add" in tile_ir
    assert "atomicAdd(&" in texts[case.name]
    assert ("mcMemset(" in texts[case.name]) == ("tile.fill" in case.text)
