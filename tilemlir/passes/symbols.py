"""Names that reach emitted text (MACA C++, AMDGPU assembly, PTX) are identifiers.

A symbol of the input (`func.func @"my kernel"`) may be any string; pasted into
C++ (`void NAME(`), an assembler directive (`.amdhsa_kernel NAME`) or PTX
(`.entry NAME(`) a space, a newline or a parenthesis changes what the output
says, and LLVM's NVPTX printer aborts the process on a name PTX cannot spell.
So every name the compiler *creates* from a source name goes through
`kernel_symbol`, and names the input *gives* (a hand-written gpu.module) must
already be identifiers (`passes/check_gpu_input.py` refuses others at their location).

`kernel_symbol(name)` is deterministic and injective, and it leaves a plain
name alone:

    kernel_symbol("gemm_kernel0")          == "gemm_kernel0"
    kernel_symbol("my kernel_kernel0")     == "tm_my_20kernel__kernel0"
    kernel_symbol("int")                   == "tm_int"        # a C++ keyword
    kernel_symbol("main")                  == "tm_main"       # the program's entry
    kernel_symbol("printf")                == "tm_printf"     # a C library function
    kernel_symbol("tm_gemm")               == "tm_tm__gemm"   # the mangled names' prefix

A name is left alone when it is an identifier in C++, in LLVM's AMDGPU
assembler and in PTX (`IDENTIFIER`), is not a reserved name (a leading `__` or
`_` + capital), is not in `TAKEN_NAMES` -- the one table of names the emitted
C++ already has: C and C++ keywords, the lower-case macros of the C headers, the
names the C/C++ headers declare at global scope (`printf`, `memcpy`, `time`),
`main`, and the MACA runtime's and device code's names (`mcMalloc`, `dim3`,
`threadIdx`, `atomicAdd`; any `mc` + capital) -- cannot be a preprocessor
macro (no name in capitals only, like `NAN` or `TM_CHECK`) and does not start
with `tm_` in any case (mangled names, and the MACA prelude's own names, start
with `tm_`). Any
other name becomes `tm_` + its UTF-8 bytes, letters and digits as they are,
`_` as `__`, every other byte as `_` + two lowercase hex digits. Reading `_`
then either `_` or two hex digits undoes that, so distinct names never meet;
and names left alone never start with `tm_`, so they never meet a mangled one.
"""

from __future__ import annotations

import re

from tilemlir.passes.host_names import C_LIBRARY_NAMES

# C++: [A-Za-z_][A-Za-z0-9_]*; PTX: [A-Za-z][A-Za-z0-9_$]* or [_$%][A-Za-z0-9_$]+
# (PTX ISA, "Identifiers"); the intersection, without `$` and `%`.
IDENTIFIER = re.compile(r"(?:[A-Za-z][A-Za-z0-9_]*|_[A-Za-z0-9_]+)\Z")

MANGLED_PREFIX = "tm_"

# C++20 keywords and alternative tokens ([lex.key], [lex.digraph]).
CXX_KEYWORDS = frozenset({
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
    "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
    "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
    "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
    "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
    "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
    "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
    "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
    "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
    "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"
})


# C keywords that C++ lacks (C23 6.4.1; the `_X` ones are reserved names anyway).
C_KEYWORDS = frozenset({"restrict", "typeof", "typeof_unqual"})

# Lower-case macros of the C and C++ headers the MACA prelude includes (the
# capitalised ones are caught by their spelling).
MACROS = frozenset({"assert", "errno", "offsetof", "stderr", "stdin", "stdout", "va_arg",
                    "va_copy", "va_end", "va_start", "setjmp"})

# The host program's and MACA's own names: the entry point (a launcher named
# `main` would replace it), the runtime calls and types the launchers use and
# the device built-ins of MACA C++ (CUDA-style, as in MetaX's maca-samples;
# test/metax/maca_host.h supplies the same names on the CPU).
HOST_NAMES = frozenset({
    "main", "std", "dim3", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize",
    "atomicAdd", "atomicSub", "atomicExch", "atomicMin", "atomicMax", "atomicInc", "atomicDec",
    "atomicCAS", "atomicAnd", "atomicOr", "atomicXor",
})
# Runtime API prefixes followed by a capital: MACA's `mcMalloc`, `mcError_t`,
# `mcMemcpyHostToDevice`, and the HIP/CUDA spellings MACA's headers also accept.
RUNTIME_PREFIX = re.compile(r"(?:mc|hip|cuda)[A-Z]")

# The one table: every name a source name may not keep in emitted C++.
TAKEN_NAMES = CXX_KEYWORDS | C_KEYWORDS | MACROS | HOST_NAMES | C_LIBRARY_NAMES


def is_identifier(name: str) -> bool:
    """True when `name` can be pasted into C++, AMDGPU assembly and PTX as one token."""
    return IDENTIFIER.match(name) is not None


def is_cxx_name(name: str) -> bool:
    """True when C++ can name a function `name`: an identifier, not a keyword,
    not reserved to the implementation (`__x`, `_X`)."""
    return (
        is_identifier(name)
        and name not in CXX_KEYWORDS
        and not name.startswith("__")
        and not (name[0] == "_" and name[1].isupper())
    )


def could_be_macro(name: str) -> bool:
    """True for names a C header may define as a macro: capitals only (digits
    and `_` aside), or a lower-case macro of the C library (`MACROS`)."""
    return name in MACROS or (any(c.isalpha() for c in name) and name.upper() == name)


def is_taken_name(name: str) -> bool:
    """True when the emitted C++ already has `name` (`TAKEN_NAMES`, a runtime
    API prefix), so a source name spelled so would collide with it."""
    return name in TAKEN_NAMES or RUNTIME_PREFIX.match(name) is not None


def is_library_name(name: str) -> bool:
    """True for a name only C++ output must avoid: a C/C++ library name,
    `main` or a MACA runtime or device name -- not a keyword, a macro or a
    reserved name. Assembly and PTX take such a kernel name as it is; the MetaX
    emitter refuses it where C++ would declare it."""
    return (is_cxx_name(name) and not could_be_macro(name) and name not in CXX_KEYWORDS | C_KEYWORDS
            and not name.lower().startswith(MANGLED_PREFIX)
            and (name in HOST_NAMES | C_LIBRARY_NAMES or RUNTIME_PREFIX.match(name) is not None))


def is_plain_symbol(name: str) -> bool:
    """True when `kernel_symbol` leaves `name` as it is."""
    return (is_cxx_name(name) and not could_be_macro(name) and not is_taken_name(name)
            and not name.lower().startswith(MANGLED_PREFIX))


def is_emitted_symbol(name: str) -> bool:
    """True for the names `kernel_symbol` can return: plain names, and `tm_`
    names that decode to a source name mangling back to them exactly."""
    if is_plain_symbol(name):
        return True
    if not name.startswith(MANGLED_PREFIX):
        return False
    decoded, rest = bytearray(), name[len(MANGLED_PREFIX):]
    while rest:
        if rest[0] != "_":
            decoded.append(ord(rest[0]))
            rest = rest[1:]
        elif rest[1:2] == "_":
            decoded.append(ord("_"))
            rest = rest[2:]
        elif len(rest) >= 3 and all(c in "0123456789abcdef" for c in rest[1:3]):
            decoded.append(int(rest[1:3], 16))
            rest = rest[3:]
        else:
            return False
    try:
        return kernel_symbol(decoded.decode("utf-8")) == name
    except UnicodeDecodeError:
        return False


def kernel_symbol(name: str) -> str:
    """The identifier that stands for source name `name` in emitted code
    (see the module docstring for the scheme)."""
    if is_plain_symbol(name):
        return name
    parts = [MANGLED_PREFIX]
    for byte in name.encode("utf-8"):
        char = chr(byte)
        if char == "_":
            parts.append("__")
        elif char.isascii() and char.isalnum():
            parts.append(char)
        else:
            parts.append(f"_{byte:02x}")
    return "".join(parts)


def comment_text(text: str) -> str:
    """`text` made safe inside a `//` or `/* */` comment of emitted C++: no
    line breaks or other control characters, no `*/`, no trailing backslash
    (which would continue the comment onto the next line)."""
    cleaned = "".join(c if c.isprintable() else "?" for c in text)
    return cleaned.replace("*/", "* /").replace("\\", "/")
