"""`import tilemlir.language as T`: TileLang's kernel language on the tile dialect.

    import tilemlir
    import tilemlir.language as T

    @tilemlir.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=128, block_N=128, block_K=32, dtype="float16"):
        @T.prim_func
        def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
                ...
        return main

    kernel = matmul(256, 256, 256)
    c = kernel(a, b)                  # no target named, no GPU here: the emulator's amdgpu:gfx942
    print(kernel.get_kernel_source())  # its tile IR

Kernel bodies are read from their source, never executed
(`tilemlir.language.builder` says what each construct becomes);
`tilemlir.language.kernel` runs them. docs/language.md lists what is supported
and what is not.
"""

from tilemlir.language.api import (
    INTRINSICS,
    Buffer,
    FragmentBuffer,
    FragmentTensor,
    GemmWarpPolicy,
    LocalBuffer,
    LocalTensor,
    SharedBuffer,
    SharedTensor,
    Tensor,
    TensorSpec,
    TileLangError,
    Unsupported,
    caller_position,
    unsupported,
)
from tilemlir.language.dtypes import DTYPES, DType
from tilemlir.language.kernel import (
    JITFunction,
    JITKernel,
    Launch,
    PrimFunc,
    TileLangWarning,
    compile,
    jit,
    macro,
    prim_func,
)

dtype = DType
globals().update(INTRINSICS)
globals().update(DTYPES)

__all__ = [
    "Buffer",
    "DType",
    "FragmentBuffer",
    "FragmentTensor",
    "GemmWarpPolicy",
    "JITFunction",
    "JITKernel",
    "Launch",
    "LocalBuffer",
    "LocalTensor",
    "PrimFunc",
    "SharedBuffer",
    "SharedTensor",
    "Tensor",
    "TensorSpec",
    "TileLangError",
    "TileLangWarning",
    "Unsupported",
    "compile",
    "dtype",
    "jit",
    "macro",
    "prim_func",
]
__all__ += list(INTRINSICS) + list(DTYPES)


def __getattr__(name: str):
    """TileLang's names tilemlir does not build: a placeholder that reports
    the user's line when used (api.UNSUPPORTED says what to use instead)."""
    placeholder = unsupported(name)
    if placeholder is not None:
        return placeholder
    if name.startswith("__"):
        raise AttributeError(f"module 'tilemlir.language' has no attribute {name!r}")
    raise AttributeError(f"{caller_position(2)}: error: tilemlir.language has no attribute {name!r} "
                         f"(nor has TileLang's tilelang.language)")
