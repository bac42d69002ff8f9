"""What input can make the compiler write or read: names in emitted code
(passes/symbols.py), descriptor files and chip names (registry.py,
descriptor.py, llvm_processors.py, backends/nvidia/chips.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from mlir import ir

from tilemlir.backends.nvidia import chips as nvidia_chips
from tilemlir.passes.symbols import (
    MANGLED_PREFIX,
    comment_text,
    could_be_macro,
    is_cxx_name,
    is_emitted_symbol,
    is_identifier,
    is_plain_symbol,
    is_taken_name,
    kernel_symbol,
)
from tilemlir.targets import TargetError, get_target, llvm_processors
from tilemlir.targets.descriptor import DescriptorError, load_descriptor
from tilemlir.targets.registry import backend, target_from_attribute

ROOT = Path(__file__).resolve().parents[2]
MINIMAL = ROOT / "test" / "Backends" / "Inputs" / "minimal.toml"
MACA_HOST = ROOT / "test" / "metax" / "maca_host.h"

HOSTILE = [
    "k(){}\nint injected_global = 1;\nvoid z",
    "my kernel",
    "a b", "a_20b", "a__b", "a_b", "tm_a_20b", "tm_", "TM_CHECK", "tm_tm__x",
    "_", "__", "_x", "_X", "__builtin_x", "x$y", "x.y", "1st", "", " ", "\0", "*/", "é", "e\u0301",
    "int", "and", "void", "gemm", "gemm_kernel0", "Gemm2", "v0", "vcc",
]


def demangle(symbol: str) -> str:
    """The inverse of kernel_symbol on its mangled outputs (so the scheme is injective)."""
    if not symbol.startswith(MANGLED_PREFIX):
        return symbol
    body, out, i = symbol[len(MANGLED_PREFIX):], bytearray(), 0
    while i < len(body):
        if body[i] != "_":
            out.append(ord(body[i]))
            i += 1
        elif body[i + 1] == "_":
            out.append(ord("_"))
            i += 2
        else:
            out.append(int(body[i + 1:i + 3], 16))
            i += 3
    return out.decode("utf-8")


@pytest.mark.parametrize("name", HOSTILE, ids=repr)
def test_kernel_symbol_is_an_identifier_that_gives_the_name_back(name):
    symbol = kernel_symbol(name)
    assert is_identifier(symbol) and is_cxx_name(symbol)
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", symbol)
    assert demangle(symbol) == name
    assert kernel_symbol(name) == symbol  # deterministic


def test_kernel_symbol_keeps_plain_names_and_is_injective():
    for plain in ("gemm", "gemm_kernel0", "Gemm2", "v0", "vcc", "_x", "mixed_precision_gemm_kernels"):
        assert kernel_symbol(plain) == plain
    symbols = [kernel_symbol(n) for n in HOSTILE]
    assert len(set(symbols)) == len(set(HOSTILE))
    # Names that already look mangled are mangled again rather than kept.
    assert kernel_symbol("tm_my_20kernel") != kernel_symbol("my kernel")
    assert kernel_symbol("int") == "tm_int" and kernel_symbol("my kernel") == "tm_my_20kernel"


def test_comment_text_cannot_end_a_comment_or_a_line():
    text = comment_text("a\nb\r\u2028c */ d \\")
    assert "\n" not in text and "\r" not in text and "\u2028" not in text
    assert "*/" not in text and not text.endswith("\\")


# -- names the C++ around emitted code already has --------------------------------

# The headers the MACA prelude and the CPU harness (test/metax/maca_host.h) include.
HOST_HEADERS = ["<cstdint>", "<cstdio>", "<cmath>", "<cstdlib>", "<cstring>", "<atomic>",
                "<barrier>", "<thread>", "<memory>", "<functional>", "<vector>", "<exception>",
                "<type_traits>", "<utility>", f'"{MACA_HOST}"']
_NAME = re.compile(r"[A-Za-z_]\w*\Z")
_BALANCED = r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"


def _declared_name(statement: list[str], names: set[str]) -> None:
    """Add the names a top-level declaration (its tokens, without the final
    `;` or body) declares: a function, variables, a typedef, a tag."""
    if not statement or statement[0] in ("using", "static_assert") or "operator" in statement:
        return
    if statement[0] == "template":  # skip `template <...>`
        depth = 0
        for index, token in enumerate(statement[1:], 1):
            depth += (token == "<") - (token == ">")
            if depth == 0:
                break
        statement = statement[index + 1:]
    if len(statement) > 1 and statement[0] in ("struct", "class", "union", "enum", "namespace") \
            and _NAME.match(statement[1]):
        names.add(statement[1])
    if "(" in statement and statement[0] != "typedef":
        at = statement.index("(")
        if at and _NAME.match(statement[at - 1]) and (at < 2 or statement[at - 2] != "::"):
            names.add(statement[at - 1])
        return
    depth = 0
    for index, token in enumerate(statement):
        if token in ("(", "[", "{", "<"):
            depth += 1
        elif token in (")", "]", "}", ">"):
            depth -= 1
        if depth == 0 and token in (",", "[", "=") and index and _NAME.match(statement[index - 1]):
            names.add(statement[index - 1])
    if len(statement) > 1 and _NAME.match(statement[-1]):
        names.add(statement[-1])


def global_declarations(headers: list[str]) -> set[str]:
    """Names declared at global scope (in `extern "C"` blocks included) by
    `headers`, from g++'s preprocessed text: a scan of top-level statements,
    good enough for the C library and the harness, not a C++ parser."""
    source = "".join(f"#include {header}\n" for header in headers)
    text = subprocess.run([shutil.which("g++"), "-std=c++20", "-E", "-P", "-x", "c++", "-"],
                          input=source, capture_output=True, text=True, check=True).stdout
    text = re.sub(r"^#.*$", " ", text, flags=re.MULTILINE)
    text = re.sub(r"\b(?:__attribute__|__asm__|__asm|asm|alignas|noexcept|decltype|__typeof__)\s*"
                  + _BALANCED, " ", text)
    tokens = re.findall(r'extern\s+"C(?:\+\+)?"\s*\{|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\''
                        r"|[A-Za-z_]\w*|::|\S", text)
    names: set[str] = set()
    scopes: list[str] = []  # "C" for an extern "C" block (still global scope), "{" otherwise
    statement: list[str] = []
    for token in tokens:
        top = all(scope == "C" for scope in scopes)
        if token.startswith("extern") and token.endswith("{"):
            scopes.append("C")
            statement = []
        elif token == "{":
            if top:
                _declared_name(statement, names)
                # A function body or namespace ends the declaration; a class body does not.
                statement = [] if "(" in statement or statement[:1] == ["namespace"] else ["{}"]
            scopes.append("{")
        elif token == "}":
            if scopes:
                scopes.pop()
        elif top and token == ";":
            if statement != ["{}"]:
                _declared_name(statement, names)
            statement = []
        elif top:
            statement.append(token)
    return {name for name in names if not name.startswith("__")}


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ preprocesses the headers")
def test_no_global_name_of_the_host_headers_stays_plain():
    """Every name the headers around a MetaX launcher declare at global scope
    is mangled (else `extern "C" int NAME(...)` redeclares it); this also
    names what a different C library adds to host_names.py's list."""
    declared = global_declarations(HOST_HEADERS)
    assert {"printf", "memcpy", "malloc", "free", "exit", "abort", "time", "sqrtf", "FILE",
            "dim3", "threadIdx", "mcMalloc", "atomicAdd"} <= declared  # the scan sees them
    plain = sorted(name for name in declared if is_plain_symbol(name))
    assert not plain, f"add to tilemlir/passes/host_names.py: {' '.join(plain)}"


@pytest.mark.parametrize("name", ["main", "printf", "memcpy", "malloc", "free", "exit", "abort",
                                  "mcMalloc", "mcLaunchKernel", "hipMalloc", "dim3", "blockIdx",
                                  "restrict", "std"])
def test_host_and_library_names_are_mangled(name):
    assert is_taken_name(name) and not is_plain_symbol(name)
    assert kernel_symbol(name) == f"tm_{name}" and demangle(kernel_symbol(name)) == name
    assert is_emitted_symbol(kernel_symbol(name)) and not is_emitted_symbol(name)


# -- descriptor files: only from the command line --------------------------------


@pytest.mark.parametrize("value", ["/dev/zero", str(MINIMAL), "x.toml", "../gfx942.toml", "a\\b"])
def test_tile_target_attribute_never_names_a_file(value):
    with ir.Context():
        attribute = ir.StringAttr.get(value)
        with pytest.raises(TargetError, match="must name a target .* not a file"):
            target_from_attribute(attribute)


def test_tile_target_attribute_names_a_target():
    with ir.Context():
        assert str(target_from_attribute(ir.StringAttr.get("amdgpu:gfx942"))) == "amdgpu:gfx942"
        assert str(target_from_attribute(ir.StringAttr.get("gfx942"))) == "amdgpu:gfx942"


def test_descriptor_must_be_a_small_regular_file(tmp_path):
    fifo = tmp_path / "target.toml"
    os.mkfifo(fifo)
    with pytest.raises(DescriptorError, match="not a regular file"):
        get_target(str(fifo))  # the command line may name one; it is not opened for reading
    with pytest.raises(DescriptorError, match="not a regular file"):
        load_descriptor("/dev/zero", backend)
    big = tmp_path / "big.toml"
    big.write_bytes(MINIMAL.read_bytes() + b"#" * (1 << 20))
    with pytest.raises(DescriptorError, match="larger than"):
        load_descriptor(big, backend)


# -- chip names ------------------------------------------------------------------


def _renamed(tmp_path, family_file: str, old: str, new: str) -> Path:
    text = (ROOT / "tilemlir" / "backends" / family_file).read_text()
    path = tmp_path / f"{new.strip() or 'blank'}.toml"
    path.write_text(text.replace(f'name = "{old}"', f'name = "{new}"', 1))
    return path


@pytest.mark.skipif(llvm_processors.find_llc() is None, reason="llc-22 lists the processors")
def test_chip_names_are_llvm_processors(tmp_path):
    with pytest.raises(DescriptorError, match="'sm_999' is not a processor LLVM 22 knows"):
        load_descriptor(_renamed(tmp_path, "nvidia/targets/sm_90a.toml", "sm_90a", "sm_999"), backend)
    with pytest.raises(DescriptorError, match="PTX version 8.5 does not support target 'sm_120'"):
        load_descriptor(_renamed(tmp_path, "nvidia/targets/sm_90a.toml", "sm_90a", "sm_120"), backend)
    with pytest.raises(DescriptorError, match="'gfx1' is not a processor LLVM 22 knows"):
        load_descriptor(_renamed(tmp_path, "amdgpu/targets/gfx942.toml", "gfx942", "gfx1"), backend)
    # sm_90 is a chip NVPTX knows, but without sm_90a's wgmma: its rows are refused.
    sm_90 = _renamed(tmp_path, "nvidia/targets/sm_90a.toml", "sm_90a", "sm_90")
    with pytest.raises(DescriptorError, match="wgmma needs sm_90a, not sm_90"):
        load_descriptor(sm_90, backend)
    sm_90.write_text("".join(line for line in sm_90.read_text().splitlines(keepends=True)
                             if "wgmma.mma_async" not in line))
    assert load_descriptor(sm_90, backend).name == "sm_90"


def test_chip_names_without_llc(tmp_path, monkeypatch):
    """Without llc-22 the names' shape is checked, and NVPTX chips against the
    table of chips PTX 8.5 targets (an in-process fatal error otherwise)."""
    monkeypatch.setattr(llvm_processors, "find_llc", lambda: None)
    llvm_processors.llvm_processors.cache_clear()
    nvidia_chips.nvptx_fatal_error.cache_clear()
    try:
        with pytest.raises(DescriptorError, match="PTX 8.5 cannot target 'sm_999'"):
            load_descriptor(_renamed(tmp_path, "nvidia/targets/sm_90a.toml", "sm_90a", "sm_999"),
                            backend)
        with pytest.raises(DescriptorError, match=r"'gfx94x' is not a processor name of LLVM 22 \(expected gfx"):
            load_descriptor(_renamed(tmp_path, "amdgpu/targets/gfx942.toml", "gfx942", "gfx94x"), backend)
        assert load_descriptor(_renamed(tmp_path, "amdgpu/targets/gfx942.toml", "gfx942", "gfx908"),
                               backend).name == "gfx908"
    finally:
        llvm_processors.llvm_processors.cache_clear()
        nvidia_chips.nvptx_fatal_error.cache_clear()


@pytest.mark.parametrize("name", ["NAN", "TM_CHECK", "INT64_C", "K1", "stderr", "errno"])
def test_names_a_header_may_define_as_macros_are_mangled(name):
    assert could_be_macro(name) and not is_plain_symbol(name)
    assert kernel_symbol(name) == "tm_" + name.replace("_", "__")


@pytest.mark.parametrize("name", ["gemm", "my kernel", "tm_gemm", "NAN", "int", "é", "a_b__c"])
def test_every_emitted_name_is_recognised_and_nothing_else(name):
    assert is_emitted_symbol(kernel_symbol(name))
    if kernel_symbol(name) != name:
        assert not is_emitted_symbol(name) or name.startswith("tm_")


def test_hand_written_prefixed_names_that_no_source_name_gives_are_not_emitted_names():
    assert not is_emitted_symbol("tm_gemm")        # kernel_symbol("gemm") is "gemm"
    assert not is_emitted_symbol("tm_bitcast")     # a prelude helper's name
    assert not is_emitted_symbol("tm_a_zz")        # not an escape
