"""Kernels the frontend must refuse, one construct each. The line that must
be named ends in an "expect" comment with part of the message; test_language.py builds every
`bad_*` function here and checks the error names this file, that line and
that message (and that no traceback of tilemlir's own code comes with it)."""

import tilemlir
import tilemlir.language as T

N = 64


def bad_while():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            while True:  # expect: a `while` condition known while building
                pass
    return main


def bad_undefined_name():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            for i in T.Parallel(N):
                A[i] = undefined_thing  # expect: name 'undefined_thing' is not defined
    return main


def bad_nested_parallel():
    @T.prim_func
    def main(A: T.Tensor((N, N), "float32")):
        with T.Kernel(1) as bx:
            for i in T.Parallel(N):
                for j in T.Parallel(N):  # expect: T.Parallel loops do not nest
                    A[i, j] = 0.0
    return main


def bad_unknown_intrinsic():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            T.atomic_load(A[0])  # expect: T.atomic_load is not supported by tilemlir: T.atomic_add, T.atomic_max and T.atomic_min are built
    return main


def bad_alloc_local():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            x = T.alloc_local((4,), "float32")  # expect: T.alloc_local of 4 elements (storage private to each thread) is built in per-thread code
    return main


def bad_nested_kernels():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:  # noqa: SIM117 - the nesting is the error
            with T.Kernel(1) as by:  # expect: T.Kernel opens the kernel at the function's top level
                T.fill(A[0:N], 1.0)
    return main


def bad_alloc_global_in_a_kernel():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            W = T.alloc_global((N,), "float32")  # expect: T.alloc_global allocates a workspace before the kernels
    return main


def bad_accum_dtype():
    @T.prim_func
    def main(A: T.Tensor((N, N), "float16")):
        with T.Kernel(1) as bx:
            a = T.alloc_shared((N, N), "float16")
            c = T.alloc_fragment((N, N), "float32")
            T.gemm(a, a, c, accum_dtype="float16")  # expect: T.gemm accumulates in C's type (float32)
    return main


def bad_slice_extent():
    @T.prim_func
    def main(A: T.Tensor((N, N), "float16")):
        with T.Kernel(1) as bx:
            a = T.alloc_shared((32, N), "float16")
            T.copy(A[0:16, :], a)  # expect: spans 16 in dim 0, the other side 32
    return main


def bad_var_in_parallel():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            total = T.alloc_var("float32", init=0.0)
            for i in T.Parallel(N):
                total = total + A[i]  # expect: is assigned in a T.Parallel
    return main


def bad_reassigned_in_loop():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            for i in T.Parallel(N):
                x = A[i]
                for k in T.serial(4):
                    x = x * 2.0  # expect: a value that changes this way is a T.alloc_var
                A[i] = x
    return main


def bad_gemm_shapes():
    @T.prim_func
    def main(A: T.Tensor((N, N), "float16")):
        with T.Kernel(1) as bx:
            a = T.alloc_shared((64, 32), "float16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.gemm(a, b, c)  # expect: K of A (32) and K of B (64) differ
    return main


def bad_reduce_dim():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            x = T.alloc_fragment((N, N), "float32")
            r = T.alloc_fragment((N,), "float32")
            T.reduce_max(x, r, dim=2)  # expect: dim must be a compile-time integer within
    return main


def bad_runtime_grid():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            for i in T.Parallel(A[0]):  # expect: T.Parallel extents must be positive compile-time integers
                A[i] = 0.0
    return main


def bad_parameter():
    @T.prim_func
    def main(A):  # expect: parameter 'A' needs an annotation
        with T.Kernel(1) as bx:
            pass
    return main


def bad_python_error():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            for i in T.Parallel(N // 0):  # expect: ZeroDivisionError
                A[i] = 0.0
    return main


def bad_try():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            try:  # expect: `try` is not supported in a kernel
                pass
            finally:
                pass
    return main


def bad_no_kernel_shape():
    @tilemlir.jit
    def direct(A, block: int = 64):
        M = T.const("M")
        with T.Kernel(T.ceildiv(M, block)) as bx:  # expect: 'M' (declared by T.const) is not known yet
            pass
    return direct.compile()


def bad_unknown_dtype():
    @T.prim_func
    def main(A: T.Tensor((N,), "float42")):  # expect: unknown dtype 'float42'
        with T.Kernel(1) as bx:
            pass
    return main


def bad_atomic_add_element():
    @T.prim_func
    def main(A: T.Tensor((N, N), "float32")):
        with T.Kernel(1) as bx:
            T.atomic_add(A[0:4, 0], 1.0)  # expect: T.atomic_add of a scalar value updates one element: index every dim of dst
    return main


def bad_atomic_add_memory_order():
    @T.prim_func
    def main(A: T.Tensor((N, N), "float32")):
        with T.Kernel(1) as bx:
            acc = T.alloc_fragment((N, N), "float32")
            T.clear(acc)
            T.atomic_add(A[0, 0], acc, memory_order="seq_cst")  # expect: other memory orders are not supported
    return main


def bad_atomic_add_f16():
    @T.prim_func
    def main(A: T.Tensor((N, N), "float16")):
        with T.Kernel(1) as bx:
            acc = T.alloc_fragment((N, N), "float16")
            T.clear(acc)
            T.atomic_add(A[0, 0], acc)  # expect: tile.atomic_add of f16 is not supported
    return main


def bad_uint8_converting_copy():
    @T.prim_func
    def main(A: T.Tensor((N,), "uint8"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            T.copy(A, B)  # expect: T.copy from uint8 to float32: a tile copy converts uint8 as a signed type
    return main


def bad_gemm_of_bool():
    @T.prim_func
    def main(A: T.Tensor((16, 16), "bool"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1) as bx:
            a = T.alloc_shared((16, 16), "bool")
            c = T.alloc_fragment((16, 16), "float32")
            T.copy(A, a)
            T.gemm(a, a, c)  # expect: T.gemm of a bool buffer is not supported
    return main


def bad_atomic_max_of_a_tile():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            a = T.alloc_fragment((N,), "float32")
            T.fill(a, 1.0)
            T.atomic_max(A[0], a)  # expect: T.atomic_max of a tile: only T.atomic_add adds a whole buffer
    return main


def bad_atomic_max_of_f16():
    @T.prim_func
    def main(A: T.Tensor((N,), "float16")):
        with T.Kernel(1) as bx:
            for i in T.Parallel(N):
                T.atomic_max(A[i], 1.0)  # expect: T.atomic_max on float16: element-wise atomic max is built for float32 and int32
    return main


def bad_atomic_return_prev():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            for i in T.Parallel(N):
                T.atomic_add(A[i], 1.0, return_prev=True)  # expect: return_prev is not supported
    return main


def bad_macro_body():
    @T.macro
    def body(A):
        A[0] = undefined_in_macro  # expect: name 'undefined_in_macro' is not defined

    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            body(A)
    return main


def bad_macro_arguments():
    @T.macro
    def body(A, B):
        A[0] = B[0]

    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            body(A)  # expect: T.macro 'body': missing a required argument: 'B'
    return main



def bad_compile_time_assert():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        assert N % 3 == 0, "N must be a multiple of 3"  # expect: assertion failed: N must be a multiple of 3
        with T.Kernel(1) as bx:
            A[0] = 1.0
    return main


def bad_false_device_assert():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(1) as bx:
            T.device_assert(N < 0, "N is negative")  # expect: T.device_assert: the condition is false
    return main
