"""Inputs that once killed a tool (an MLIR assertion, a fatal error, a stack
overflow) or escaped as an internal error; each must now be a located error
with exit status 1, as from stock mlir-opt. The fuzzer (fuzz_worker.py) found
most of them; every new crash class it finds gets a row here."""

from __future__ import annotations

import re

import pytest
from conftest import run_tool
from kernel_text import EXAMPLES

LOCATED = re.compile(r"^<stdin>:\d+:\d+: error: ", re.MULTILINE)
UNREGISTERED = "created with unregistered dialect"


def generic_op(name: str) -> str:
    return f'"{name}"() : () -> ()\n'


def in_func(attribute: str, prelude: str = "") -> str:
    return (f"{prelude}func.func @f() attributes {{a = {attribute}}} {{\n"
            "  return\n}\n")


def nested_regions(depth: int, *, generic: bool) -> str:
    """`depth` scf.execute_region ops, each in the previous one's region."""
    if generic:
        opening = ['"scf.execute_region"() ({'] * depth
        closing = ['"scf.yield"() : () -> ()', *(['}) : () -> ()\n"scf.yield"() : () -> ()'] * (depth - 1)),
                   "}) : () -> ()"]
    else:
        opening = ["scf.execute_region {"] * depth
        closing = ["scf.yield", *(["} scf.yield"] * (depth - 1)), "}"]
    return "\n".join(["func.func @f() {", *opening, *closing, "return", "}"]) + "\n"


def nested_loops(depth: int) -> str:
    """A kernel whose body is `depth` nested scf.for loops around one store."""
    loops = [f"      scf.for %i{k} = %c0 to %bx step %c1 {{" for k in range(depth)]
    return "\n".join([
        'module attributes {tile.target = "amdgpu:gfx942"} {',
        "  func.func @deep(%C: memref<16xf32>) {",
        '    "tile.kernel"() ({',
        "    ^bb0(%bx: index):",
        "      %c0 = arith.constant 0 : index",
        "      %c1 = arith.constant 1 : index",
        "      %v = arith.constant 1.0 : f32",
        *loops,
        "      memref.store %v, %C[%c0] : memref<16xf32>",
        *(["      }"] * depth),
        "      gpu.yield",
        "    }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()",
        "    return",
        "  }",
        "}",
    ]) + "\n"


# name -> (input, the error's position and message)
CRASHES = {
    # A generic op named like a loaded dialect: the op has no dialect, and the
    # bindings' MLIR (built with assertions) aborts creating it.
    **{f"op named {name!r}": (generic_op(name), f"<stdin>:1:1: error: '{name}' op {UNREGISTERED}")
       for name in ("tile", "tile.", "arith", "arith.", "func", "func.", "scf", "scf.", "gpu", "gpu.",
                    "builtin", "builtin.", "memref", "sparse_tensor")},
    "op named 'arith' through escapes": (generic_op("\\61rit\\68"), f"<stdin>:1:1: error: 'arith' op {UNREGISTERED}"),
    "op named 'tile' in a function": (
        'func.func @f() {\n  %0 = "tile"() : () -> i32\n  return\n}\n', f"<stdin>:2:8: error: 'tile' op {UNREGISTERED}"),
    "op named 'tile.' in a region": (
        'func.func @f() {\n  scf.execute_region {\n    "tile."() : () -> ()\n    scf.yield\n  }\n  return\n}\n',
        f"<stdin>:3:5: error: 'tile.' op {UNREGISTERED}"),
    # A dense array of index elements fails an assertion in the parser.
    "array of index": (in_func("array<index: 1, 2>"), "<stdin>:1:38: error: a dense array of 'index' elements"),
    "empty array of index": (in_func("array<index>"), "<stdin>:1:38: error: a dense array of 'index' elements"),
    "array of an index alias": (in_func("array<!i: 1>", "!j = index\n!i = !j\n"),
                                "<stdin>:3:38: error: a dense array of 'index' elements"),
    # A diagnostic quoting bytes that are not UTF-8 failed in the bindings (RuntimeError).
    "attribute name not UTF-8": ('module attributes {"\\ff\\fe" = 1} {\n}\n',
                                 ("<stdin>:1:1: error: 'builtin.module' op can only contain attributes "
                                  "with dialect-prefixed names, found: '??????'")),
    # Brackets deeper than MLIR's stack holds: refused, not a segmentation fault.
    "10000 nested regions": (nested_regions(10000, generic=False),
                             "<stdin>:8193:20: error: nesting deeper than 8192 levels is not supported"),
    "deep array attribute": (in_func("[" * 9000 + "]" * 9000), "error: nesting deeper than 8192 levels"),
    "deep tuple type": (in_func("tuple<" * 9000 + ">" * 9000), "error: nesting deeper than 8192 levels"),
    # tile-compile looked for loops tile-pipeline prefetches (its retry when
    # they spill) before the verifier, and read a string as the stage count.
    "tile.num_stages a string": (
        ("func.func @f() {\n  \"tile.kernel\"() ({\n  ^bb0(%bx: index):\n    %c0 = arith.constant 0 : index\n"
        "    %c1 = arith.constant 1 : index\n    scf.for %k = %c0 to %c1 step %c1 {\n    } {tile.num_stages = \"three\"}\n"
        "    gpu.yield\n  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()\n  return\n}\n"),
        '<stdin>:6:5: error: scf.for: tile.num_stages must be an integer from 1 to 64; got "three"'),
}


# One crash of each kind (an MLIR assertion, a stack overflow) goes through the
# installed scripts in a fresh process; the others call the same main() in this
# one (conftest.run_in_process), as the fuzzer's workers do.
THROUGH_THE_SCRIPTS = ("op named 'tile'", "10000 nested regions")
assert set(THROUGH_THE_SCRIPTS) <= set(CRASHES)


@pytest.mark.parametrize("tool", ["tile-opt", "tile-compile"])
@pytest.mark.parametrize("case", sorted(CRASHES))
def test_crash_class_is_a_located_error(tool, case, run_in_process):
    text, message = CRASHES[case]
    runner = run_tool if case in THROUGH_THE_SCRIPTS else run_in_process
    result = runner(tool, "-", "--target", "amdgpu:gfx942", stdin=text)
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert message in result.stderr, result.stderr[-2000:]
    assert LOCATED.search(result.stderr)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("text", [
    in_func('"arith"'),  # a string that is not an op name
    'func.func @f() {\n  return loc("tile"("x.mlir":1:2))\n}\n',  # a location named like a dialect
    in_func("array<i64: 1>", "!i = index\n"),  # an index alias not used in an array
])
def test_lookalikes_still_parse(text, run_in_process):
    result = run_in_process("tile-opt", "-", stdin=text)
    assert result.returncode == 0, result.stderr


def test_dialect_named_op_with_unregistered_dialects_allowed(run_in_process):
    """As stock mlir-opt --allow-unregistered-dialect: accepted and printed."""
    result = run_in_process("tile-opt", "-", "--allow-unregistered-dialect", stdin=generic_op("arith"))
    assert result.returncode == 0, result.stderr
    assert '"arith"() : () -> ()' in result.stdout


@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
def test_two_thousand_nested_regions_work(generic, run_in_process):
    """Stock mlir-opt reads 2000 nested regions; tile-opt (parse, tile-verify,
    print) does too, within the bracket limit in generic form."""
    result = run_in_process("tile-opt", "-", "--tile-verify", "--mlir-print-op-generic",
                      stdin=nested_regions(2000, generic=generic))
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.count('"scf.execute_region"') == 2000


def test_deep_loops_are_refused_before_code_generation(run_in_process):
    """LLVM's loop passes grow faster than linearly with depth (2000 nested loops
    exhausted 24 GB): tile-compile refuses depth beyond 256 regions at once."""
    result = run_in_process("tile-compile", "-", "--emit", "isa", stdin=nested_loops(2000))
    assert result.returncode == 1
    assert re.search(r"^<stdin>:262:7: error: 'scf.for' is nested in more than 256 regions", result.stderr,
                     re.MULTILINE), result.stderr
    shallow = run_in_process("tile-compile", "-", "--emit", "gpu", stdin=nested_loops(30))
    assert shallow.returncode == 0, shallow.stderr[-2000:]


# A hand-written tile.layout naming an instruction the family has no lane layout
# for (fuzz seed 1, case 2694): a located error, not an internal one.
METAX_FOREIGN_LAYOUT = """func.func @f() {
  "tile.kernel"() ({
  ^bb0(%b: index):
    %c = "tile.alloc_fragment"() {tile.layout = {instruction = array<i64: 32, 32, 8>, kind = "mma_accumulator", warps = array<i64: 64, 2>}} : () -> memref<64x64xf32, #gpu.address_space<private>>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 256 : i64} : () -> ()
  return
}
"""


AMDGPU_BAD_LAYOUT = METAX_FOREIGN_LAYOUT.replace("32, 32, 8>", "32, 359, 8>").replace("64, 2>", "2, 2>")


@pytest.mark.parametrize("target,text", [("metax:xcore1000", METAX_FOREIGN_LAYOUT),
                                         ("amdgpu:gfx942", AMDGPU_BAD_LAYOUT)], ids=["metax", "amdgpu"])
def test_hand_written_fragment_layout(target, text, run_in_process):
    result = run_in_process("tile-compile", "-", "--target", target, "--emit", "gpu", stdin=text)
    assert result.returncode == 1
    assert LOCATED.search(result.stderr)
    assert "internal error" not in result.stderr
    # tile-infer-layout reads every fragment's layout first and says which is wrong.
    assert "tile-infer-layout: tile.layout {" in result.stderr, result.stderr


def test_scalar_host_argument_on_nvidia_compiles(run_in_process):
    # A scalar f32 argument reached the nvidia launch metadata, which read
    # every argument as a memref (found by the fuzzer through a new test file);
    # scalars are now passed by value (test_kernel_arguments.py runs them).
    seed = (EXAMPLES / "seed_fp8_gemm.mlir").read_text().replace("f8E4M3FNUZ", "f16")
    text = seed.replace("%C: memref<1024x1024xf16>) {", "%C: memref<1024x1024xf16>, %scale: f32) {")
    text = text.replace("%out = arith.truncf %acc : f32 to f16",
                        "%scaled = arith.mulf %acc, %scale : f32\n        %out = arith.truncf %scaled : f32 to f16")
    assert "%scaled" in text
    result = run_in_process("tile-compile", "-", "--target", "nvidia:sm_90a", "--emit", "ptx", stdin=text)
    assert result.returncode == 0, result.stderr
    assert ".param .f32" in result.stdout


def test_hand_written_shared_layout_over_the_lds(run_in_process):
    """A hand-written tile.smem_layout whose padding overflows the LDS and
    that has none of the bank model's entries (found by the fuzzer, seed
    20261201, case 2996): the padding is dropped as for a computed one and
    said in a remark, no KeyError."""
    text = """func.func @f(%out: memref<8xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index):
    %b = "tile.alloc_shared"() {tile.smem_layout = {pad = 1024 : i64, swizzle = 1 : i64, transposed = false}} : () -> memref<64x32xf16, #gpu.address_space<workgroup>>
    gpu.yield
  }) {grid = array<i64: 1>, threads = 64 : i64} : () -> ()
  return
}
"""
    result = run_in_process("tile-compile", "-", "--target", "amdgpu:gfx942", "--emit", "tile", stdin=text)
    assert result.returncode == 0, result.stderr
    assert "remark: tile-infer-layout: row padding of 1024 elements dropped" in result.stderr
    assert "dropped_pad = 1024 : i64, pad = 0 : i64" in result.stdout
