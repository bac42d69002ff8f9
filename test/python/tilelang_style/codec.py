"""A kernel that rounds f16 to an fp8 format and stores it: every f16 pattern
through tile.copy's conversion (test_fp8_encode.py)."""

import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[1])
def round_to(dtype8):
    @T.prim_func
    def main(X: T.Tensor((256, 256), "float16"), Y: T.Tensor((256, 256), dtype8)):
        with T.Kernel(4, threads=256) as bx:
            narrow = T.alloc_fragment((64, 256), dtype8)
            T.copy(X[bx * 64, 0], narrow)
            T.copy(narrow, Y[bx * 64, 0])

    return main
