"""tilemlir: a tile-level GPU kernel compiler on upstream MLIR's Python bindings.

`tilemlir.compile(...)` (see tilemlir/compiler.py) is imported on first use,
so `import tilemlir` stays cheap.
"""

from tilemlir.version import __version__  # noqa: F401 - the package attribute

_LAZY = {
    "CompileError": "CompileError",
    "CompileOptions": "CompileOptions",
    "CompileResult": "CompileResult",
}


# `import tilemlir as tilelang`: TileLang's top-level names (docs/language.md, "TileLang's names").
_TILELANG = {
    "jit": ("tilemlir.language", "jit"),
    "cdiv": ("tilemlir.language.api", "ceildiv"),
    "PassConfigKey": ("tilemlir.language.api", "PassConfigKey"),
    "autotune": ("tilemlir.autotuner", "autotune"),
    "JITKernel": ("tilemlir.language.kernel", "JITKernel"),
    "TensorSupplyType": ("tilemlir.language.tensor_utils", "TensorSupplyType"),
}
_SUBMODULES = ("language", "autotuner", "profiler", "utils", "layout")


def compile(source, *args, **kwargs):
    """`tilemlir.compiler.compile(text_or_module, target=, emit=, options=,
    remarks=)`: tile IR or GPU-level IR compiled for a target (a CompileResult).
    Given a `@T.prim_func`, TileLang's `tilelang.compile(func, out_idx=...,
    target=..., pass_configs=...)`: `tilemlir.language.compile`, a JITKernel."""
    if getattr(source, "__tilemlir_prim_func__", False):
        from tilemlir.language.kernel import compile as compile_prim_func

        return compile_prim_func(source, *args, **kwargs)
    from tilemlir.compiler import compile as compile_ir

    return compile_ir(source, *args, **kwargs)


def disable_cache() -> None:
    """TileLang's `tilelang.disable_cache()`: jit kernels are no longer kept
    in (or read from) the disk cache in this process (TILEMLIR_CACHE=0)."""
    import os

    from tilemlir.runtime.cache import CACHE_SWITCH_ENV

    os.environ[CACHE_SWITCH_ENV] = "0"


def __getattr__(name: str):
    import importlib

    if name in _TILELANG:
        module, attribute = _TILELANG[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"tilemlir.{name}")
    if name in _LAZY:
        from tilemlir import compiler

        value = getattr(compiler, _LAZY[name])
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tilemlir' has no attribute {name!r}")


__all__ = ["CompileError", "CompileOptions", "CompileResult", "JITKernel", "PassConfigKey", "TensorSupplyType",
           "autotune", "cdiv", "compile", "disable_cache", "jit"]
