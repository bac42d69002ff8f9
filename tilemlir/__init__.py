"""tilemlir: a tile-level GPU kernel compiler on upstream MLIR's Python bindings.

`tilemlir.compile(...)` (see tilemlir/compiler.py) is imported on first use,
so `import tilemlir` stays cheap.
"""

from tilemlir.version import __version__  # noqa: F401 - the package attribute

_LAZY = {
    "compile": "compile",
    "CompileError": "CompileError",
    "CompileOptions": "CompileOptions",
    "CompileResult": "CompileResult",
}


def __getattr__(name: str):
    if name == "jit":  # @tilemlir.jit: the TileLang-style frontend (tilemlir.language)
        from tilemlir.language import jit

        globals()["jit"] = jit
        return jit
    if name in _LAZY:
        from tilemlir import compiler

        value = getattr(compiler, _LAZY[name])
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tilemlir' has no attribute {name!r}")


__all__ = ["CompileError", "CompileOptions", "CompileResult", "compile", "jit"]
