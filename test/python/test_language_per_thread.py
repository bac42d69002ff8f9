"""Per-thread (SIMT) code in TileLang kernels (issue 30): kernels that call
T.get_thread_binding, with T.alloc_local arrays, T.vectorized loops,
shared-memory atomics, T.sync_threads and block-level tile ops around the
per-thread parts. Each runs on the reference engine (every thread in step)
and the gfx90a/gfx942/gfx950/MetaX emulators against float64, compiles for
sm_90a, and MetaX's C++ runs on the CPU; each refusal names the user's line."""

from __future__ import annotations

import re
import runpy
import textwrap
from pathlib import Path

import numpy as np
import pytest
from test_language import assert_within
from tilelang_style import kernels as K

import tilemlir
from tilemlir.language.api import TileLangError

RNG = np.random.default_rng(7)
ENGINES = [("reference", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx942"), ("emulator", "amdgpu:gfx950"),
           ("emulator", "amdgpu:gfx90a"), ("emulator", "metax:xcore1000")]
U32 = 2.0 ** -24


def gemv_inputs(n: int, k: int):
    a = RNG.uniform(-1, 1, k).astype(np.float16)
    b = RNG.uniform(-1, 1, (n, k)).astype(np.float16)
    exact = b.astype(np.float64) @ a.astype(np.float64)
    # Products exact in f32, k sums rounded in f32, the total rounded to f16.
    bound = k * U32 * (np.abs(b.astype(np.float64)) @ np.abs(a.astype(np.float64))) + 2.0 ** -11 * np.abs(exact)
    return a, b, exact, bound


def scan_expected(x: np.ndarray):
    exclusive = np.cumsum(x.astype(np.float64), axis=1) - x
    return exclusive, x.shape[1] * U32 * np.cumsum(np.abs(x.astype(np.float64)), axis=1)


# name -> (factory, N, K): 3 blocks of rows; K a few of each kernel's steps.
GEMVS = {
    "gemv_per_thread": (lambda: K.gemv_per_thread(96, 320, 32, 64), 96, 320),
    "gemv_split_threads": (lambda: K.gemv_split_threads(96, 384, 4, 16, 8), 96, 384),
}


@pytest.mark.parametrize("engine,target", ENGINES)
@pytest.mark.parametrize("name", sorted(GEMVS))
def test_per_thread_gemv_matches_float64(name, engine, target):
    factory, n, k = GEMVS[name]
    kernel = tilemlir.compile(factory(), out_idx=[-1], engine=engine, target=target)
    a, b, exact, bound = gemv_inputs(n, k)
    assert_within(kernel(a, b), exact, bound)


@pytest.mark.parametrize("engine,target", ENGINES)
def test_prefix_sums_mix_tile_ops_and_per_thread_sweeps(engine, target):
    x = RNG.uniform(-1, 1, (3, 128)).astype(np.float32)
    kernel = tilemlir.compile(K.prefix_sums_per_thread(3, 128), out_idx=[-1], engine=engine, target=target)
    exclusive, bound = scan_expected(x)
    assert_within(kernel(x), exclusive, bound)


@pytest.mark.parametrize("factory, expected", [(lambda: K.gemv_per_thread(64, 128, 32, 64), "bar.sync"),
                                               (lambda: K.gemv_split_threads(64, 128, 4, 16, 8), "bar.sync"),
                                               (lambda: K.prefix_sums_per_thread(2, 64), "bar.sync"),
                                               (lambda: K.warp_votes(64), "shfl.sync.bfly")])
def test_per_thread_kernels_compile_for_the_h200(factory, expected):
    source = tilemlir.language.compile(factory(), engine="reference").get_kernel_source()
    ptx = tilemlir.compile(source, target="nvidia:sm_90a").artifacts["ptx"]
    assert ".entry" in ptx and expected in ptx


def test_per_thread_tile_ir_barriers_and_regions():
    """The per-thread statements sit in tile.per_thread scf.parallel regions
    over the threads (x, y); tile-insert-barriers separates the zeroing of the
    row sums from the atomic adds and the adds from the reads."""
    kernel = tilemlir.compile(K.gemv_split_threads(8, 128, 4, 16, 8), out_idx=[-1], engine="reference")
    text = kernel.get_kernel_source()
    assert text.count("tile.per_thread") == 1 and "memref.alloca() : memref<8xf16, #gpu.address_space<private>>" \
        in text
    lowered = tilemlir.compile(text, target="amdgpu:gfx942").artifacts["gpu"]
    body = lowered[lowered.index("memref.atomic_rmw") - 2000:]
    atomic = body.index("memref.atomic_rmw")
    assert "gpu.barrier" in body[:atomic] and "gpu.barrier" in body[atomic:]


def test_per_thread_maca_cpp_runs_on_the_cpu(tmp_path):
    """MetaX's C++ of the split-thread GEMV (thread-own arrays, shared atomicAdd,
    every thread of a row storing its total), built with g++ and run."""
    import maca_programs

    source = tilemlir.language.compile(K.gemv_split_threads(32, 256, 4, 16, 8), engine="reference") \
        .get_kernel_source()
    name = re.search(r"func\.func @(\w+)", source).group(1)
    maca = tilemlir.compile(source, target="metax:xcore1000").artifacts["maca"]
    assert "atomicAdd(" in maca and re.search(r"tm_f16 own\d*\[8\];", maca)
    binary = maca_programs.build({name: maca}, tmp_path)
    a, b, exact, bound = gemv_inputs(32, 256)
    y = np.zeros(32, np.float16)
    maca_programs.run(binary, name, [a, b, y], tmp_path)
    assert_within(y, exact, bound)


def _kernel(directory, body: str, threads: str = "64"):
    """A one-block kernel over A and B (64 floats) whose body is `body`,
    written to per_thread.py in `directory` (kernels are read from files)."""
    text = textwrap.dedent("""
        import tilemlir.language as T


        def factory():
            @T.prim_func
            def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
                with T.Kernel(1, threads=THREADS) as bx:
                    tx = T.get_thread_binding()
                    s = T.alloc_shared((64,), "float32")
        BODY
            return main
        """).replace("THREADS", threads).replace("BODY", textwrap.indent(textwrap.dedent(body), " " * 12))
    path = directory / "per_thread.py"
    path.write_text(text)
    return runpy.run_path(str(path))["factory"]()


def test_sync_threads_and_thread_indexed_shared_memory(tmp_path):
    """A rotation through shared memory with an explicit T.sync_threads (kept)
    and y-threads unused: (64, 1) threads."""
    kernel = tilemlir.compile(_kernel(tmp_path, """
        s[tx] = A[tx] * 2.0
        T.sync_threads()
        B[tx] = s[(tx + 1) % 64]
        """, threads="(64, 1)"), out_idx=[-1], engine="emulator", target="amdgpu:gfx942")
    x = RNG.uniform(-1, 1, 64).astype(np.float32)
    np.testing.assert_array_equal(kernel(x), np.roll(x * 2, -1))


@pytest.mark.parametrize("body, message", [
    ("""
     if tx == 0:
         T.copy(A, s)
     """, "a thread index (T.get_thread_binding) is used by block-level code here"),
    ("""
     t = tx * 2
     T.copy(A, s)
     B[t // 2] = s[t // 2]
     """, ("'t' is per-thread (computed after T.get_thread_binding) and the per-thread code that made it "
           "ended at a tile op")),
    ("""
     for i in T.Parallel(64):
         B[i] = A[i] + tx
     """, "a thread index (T.get_thread_binding) is used by block-level code here"),
    ("""
     own = T.alloc_local((4,), "float32")
     T.copy(A, s)
     own[0] = s[tx]
     B[tx] = own[0]
     """, "'own' is per-thread"),
])
def test_per_thread_refusals_name_the_line(tmp_path, body, message):
    with pytest.raises(TileLangError) as raised:
        tilemlir.compile(_kernel(tmp_path, body), out_idx=[-1], engine="reference")
    assert message in str(raised.value) and f"{tmp_path / 'per_thread.py'}:" in str(raised.value)


def test_a_barrier_in_a_loop_whose_trip_count_varies_by_thread_is_refused(tmp_path):
    kernel = _kernel(tmp_path, """
        for i in T.serial(tx):
            s[i] = A[i]
            T.sync_threads()
        B[tx] = s[0]
        """)
    with pytest.raises(Exception, match="T.sync_threads under a condition on the thread .or in a loop whose trip "
                                        "count varies by thread.: not every thread would reach it"):
        tilemlir.compile(kernel, out_idx=[-1], engine="emulator", target="amdgpu:gfx942")(np.ones(64, np.float32))


@pytest.mark.parametrize("engine,target", ENGINES[:2] + ENGINES[-1:])
def test_loops_whose_trip_count_varies_by_thread(tmp_path, engine, target):
    """A prefix sum by a loop to the thread's own index, and a `while` that
    halves each thread's value until it is below 1: each thread loops its
    own number of times (the reference engine masks the finished ones)."""
    scan = _kernel(tmp_path, """
        total = T.alloc_local((1,), "float32")
        T.clear(total)
        for i in T.serial(tx + 1):
            total[0] += A[i]
        B[tx] = total[0]
        """)
    a = RNG.uniform(-1, 1, 64).astype(np.float32)
    wide = a.astype(np.float64)
    got = tilemlir.compile(scan, out_idx=[-1], engine=engine, target=target)(a)
    assert_within(got, np.cumsum(wide), 64 * U32 * np.cumsum(np.abs(wide)))
    halving = _kernel(tmp_path, """
        count = T.alloc_var("int32")
        count = 0
        x = T.alloc_var("float32")
        x = T.abs(A[tx]) * 64.0
        while x >= 1.0:
            x = x * 0.5
            count = count + 1
        B[tx] = T.cast(count, "float32")
        """)
    got = tilemlir.compile(halving, out_idx=[-1], engine=engine, target=target)(a)
    want = [0 if v < 1 else int(np.floor(np.log2(v))) + 1 for v in np.abs(a) * np.float32(64)]
    np.testing.assert_array_equal(got, want)


# -- T.alloc_reducer ------------------------------------------------------------

@pytest.mark.parametrize("engine,target", ENGINES)
def test_reducer_gemv_matches_float64(engine, target):
    m, n = 96, 256
    a = RNG.uniform(-1, 1, (m, n)).astype(np.float16)
    x = RNG.uniform(-1, 1, n).astype(np.float16)
    kernel = tilemlir.compile(K.gemv_reducer(m, n, 32, 64), out_idx=[-1], engine=engine, target=target)
    exact = a.astype(np.float64) @ x.astype(np.float64)
    assert_within(kernel(a, x), exact, 2 * n * U32 * (np.abs(a.astype(np.float64)) @ np.abs(x.astype(np.float64))))


@pytest.mark.parametrize("engine,target", ENGINES)
def test_reducer_statistics_and_masked_updates(engine, target):
    a = RNG.uniform(-1, 1, (16, 32)).astype(np.float32)
    a[:, 3] = -np.abs(a[:, 3])  # a column with no positive element keeps its initial -1
    kernel = tilemlir.compile(K.reducer_statistics(16, 32), out_idx=[-2, -1], engine=engine, target=target)
    stats, cols = kernel(a)
    wide = a.astype(np.float64)
    assert stats[0] == np.abs(a).max()
    assert_within(stats[1:], np.array([(wide ** 2).sum()]), np.array([2 * a.size * U32 * (wide ** 2).sum()]))
    np.testing.assert_array_equal(cols, np.where((a > 0).any(axis=0), np.where(a > 0, a, -1).max(axis=0), -1))


@pytest.mark.parametrize("body, message", [
    ("""
     r = T.alloc_reducer((64,), "float32", op="max")
     for i in T.Parallel(64):
         r[i] += A[i]
     """, "a max reducer is updated as R[i] = T.max(R[i], v)"),
    ("""
     r = T.alloc_reducer((64,), "float32")
     r[tx] += A[tx]
     """, "'r' (T.alloc_reducer) is updated in a T.Parallel"),
    ("""
     r = T.alloc_reducer((1,), "float32")
     for i in T.Parallel(64):
         r[0] += A[i]
         r[0] += B[i]
     """, "'r' (T.alloc_reducer) is updated once per T.Parallel"),
    ("""
     r = T.alloc_reducer((32,), "float32")
     for i in T.Parallel(64):
         r[i // 2] += A[i]
     """, "a reducer is indexed by the T.Parallel's own variables over their whole extent"),
    ("""
     r = T.alloc_reducer((4,), "float32", op="mean")
     """, "T.alloc_reducer: op is 'sum', 'max' or 'min', got 'mean'"),
    ("""
     s2 = T.alloc_shared((64,), "float32")
     T.finalize_reducer(s2)
     """, "T.finalize_reducer of 's2', which is not a T.alloc_reducer"),
])
def test_reducer_refusals_name_the_line(tmp_path, body, message):
    with pytest.raises(TileLangError) as raised:
        tilemlir.compile(_kernel(tmp_path, body), out_idx=[-1], engine="reference")
    assert message in str(raised.value) and f"{tmp_path / 'per_thread.py'}:" in str(raised.value)


# -- device asserts and block bindings ------------------------------------------

@pytest.mark.parametrize("engine,target", ENGINES)
def test_device_assert_stops_the_run_at_the_users_line(engine, target):
    kernel = tilemlir.compile(K.checked_double(64, 10.0), out_idx=[-1], engine=engine, target=target)
    x = RNG.uniform(-1, 1, 64).astype(np.float32)
    np.testing.assert_array_equal(kernel(x), x * 2)
    x[17] = 11.0
    with pytest.raises(Exception) as raised:
        kernel(x)
    lines = Path(K.__file__).read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "A is below the limit" in text)
    assert f"kernels.py:{line}:" in str(raised.value)
    assert ("device assertion failed: A is below the limit" if engine == "reference" else
            "device assert failed") in str(raised.value)


def test_device_asserts_trap_on_every_target():
    source = tilemlir.language.compile(K.checked_double(64, 10.0), engine="reference").get_kernel_source()
    assert 'cf.assert' in source
    assert "trap;" in tilemlir.compile(source, target="nvidia:sm_90a").artifacts["ptx"]
    assert "s_trap" in tilemlir.compile(source, target="amdgpu:gfx942").artifacts["isa"]
    assert "__builtin_trap();" in tilemlir.compile(source, target="metax:xcore1000").artifacts["maca"]


def test_device_assert_in_per_thread_code_and_a_false_constant(tmp_path):
    kernel = tilemlir.compile(_kernel(tmp_path, """
        T.device_assert(A[tx] >= 0, "negative input")
        B[tx] = A[tx] + 1.0
        """), out_idx=[-1], engine="emulator", target="amdgpu:gfx942")
    np.testing.assert_array_equal(kernel(np.zeros(64, np.float32)), 1.0)
    with pytest.raises(Exception, match="device assert failed"):
        kernel(-np.ones(64, np.float32))
    with pytest.raises(TileLangError, match="T.device_assert: the condition is false"):
        tilemlir.compile(_kernel(tmp_path, """
            T.device_assert(1 > 2)
            """), out_idx=[-1], engine="reference")


@pytest.mark.parametrize("engine,target", ENGINES[:2])
def test_block_bindings_name_the_grid(engine, target):
    kernel = tilemlir.compile(K.block_bound_copy(3, 4, 32), out_idx=[-1], engine=engine, target=target)
    x = RNG.uniform(-1, 1, (3, 128)).astype(np.float32)
    np.testing.assert_array_equal(kernel(x), x)


@pytest.mark.parametrize("engine,target", ENGINES)
def test_uint32_words_are_unsigned(engine, target):
    words = RNG.integers(0, 2 ** 32, 64, dtype=np.uint64).astype(np.uint32)
    words[:4] = [0, 1, 2 ** 31, 2 ** 32 - 1]
    kernel = tilemlir.compile(K.uint32_bits(64), out_idx=[-5, -4, -3, -2, -1], engine=engine, target=target)
    nibble, big, half, as_float, wrapped = kernel(words)
    wide = words.astype(np.int64)
    np.testing.assert_array_equal(nibble, wide >> 28)
    np.testing.assert_array_equal(big, wide > 2 ** 31)
    np.testing.assert_array_equal(half, (wide // 2).astype(np.uint32))
    np.testing.assert_array_equal(as_float, words.astype(np.float32))
    np.testing.assert_array_equal(wrapped, ((wide + 2 ** 32 - 1) % 2 ** 32).astype(np.uint32))


def shuffle_expectations(a: np.ndarray):
    n = a.size
    thread = np.arange(n)
    lane = thread % 32
    sums = a.astype(np.float64).reshape(-1, 32).sum(axis=1)
    down = np.where(lane + 3 < 32, a[np.minimum(thread + 3, n - 1)], a)
    up = np.where(lane >= 2, a[np.maximum(thread - 2, 0)], a)
    return sums, down, up, (thread - lane + 37 % 32) * 10


@pytest.mark.parametrize("engine,target", ENGINES)
def test_warp_shuffles_in_per_thread_code(engine, target):
    a = RNG.uniform(-1, 1, 128).astype(np.float32)
    kernel = tilemlir.compile(K.warp_shuffles(128), out_idx=[-4, -3, -2, -1], engine=engine, target=target)
    sums, down, up, picked = kernel(a)
    want_sums, want_down, want_up, want_picked = shuffle_expectations(a)
    assert_within(sums, want_sums, 32 * U32 * np.abs(a.astype(np.float64)).reshape(-1, 32).sum(axis=1))
    np.testing.assert_array_equal(down, want_down)
    np.testing.assert_array_equal(up, want_up)
    np.testing.assert_array_equal(picked, want_picked)


def test_warp_shuffles_in_maca_cpp_and_ptx(tmp_path):
    import maca_programs

    source = tilemlir.language.compile(K.warp_shuffles(128), engine="reference").get_kernel_source()
    assert "shfl.sync.bfly.b32" in tilemlir.compile(source, target="nvidia:sm_90a").artifacts["ptx"]
    name = re.search(r"func\.func @(\w+)", source).group(1)
    maca = tilemlir.compile(source, target="metax:xcore1000").artifacts["maca"]
    binary = maca_programs.build({name: maca}, tmp_path)
    a = RNG.uniform(-1, 1, 128).astype(np.float32)
    outputs = [np.zeros(4, np.float32), np.zeros(128, np.float32), np.zeros(128, np.float32), np.zeros(128, np.int32)]
    maca_programs.run(binary, name, [a, *outputs], tmp_path)
    want_sums, want_down, want_up, want_picked = shuffle_expectations(a)
    assert_within(outputs[0], want_sums, 32 * U32 * np.abs(a.astype(np.float64)).reshape(-1, 32).sum(axis=1))
    for got, want in zip(outputs[1:], (want_down, want_up, want_picked)):
        np.testing.assert_array_equal(got, want)


def test_shuffles_outside_per_thread_code_are_refused(tmp_path):
    with pytest.raises(TileLangError, match="T.shfl_xor exchanges values between the threads of a warp"):
        tilemlir.compile(_kernel(tmp_path, """
            for i in T.Parallel(64):
                B[i] = T.shfl_xor(A[i], 1)
            """), out_idx=[-1], engine="reference")
    with pytest.raises(TileLangError, match="T.shfl_down: shuffles run over warps of 32 lanes"):
        tilemlir.compile(_kernel(tmp_path, """
            B[tx] = T.shfl_down(A[tx], 1, 64)
            """), out_idx=[-1], engine="reference")


# -- second reading: the cases a review found -----------------------------------

@pytest.mark.parametrize("engine,target", ENGINES)
def test_uint32_arithmetic_wraps_as_c_does(engine, target):
    words = np.array([1, 2463534242, 2 ** 32 - 1, 123456789, 0, 2 ** 31 + 1, 5, 6] * 8, np.uint32)
    kernel = tilemlir.compile(K.uint32_wrapping(64), out_idx=[-4, -3, -2, -1], engine=engine, target=target)
    shuffled, less, flags, low = kernel(words)
    x = words.astype(np.uint64)
    x ^= (x << 13) & 0xFFFFFFFF
    x ^= x >> 17
    x ^= (x << 5) & 0xFFFFFFFF
    np.testing.assert_array_equal(shuffled, x.astype(np.uint32))
    np.testing.assert_array_equal(less, (words - np.uint32(1)).astype(np.float32))
    np.testing.assert_array_equal(flags, (words * np.uint32(2) > 10) + 2 * (~words > 5))  # w > -1: never
    np.testing.assert_array_equal(low, (words << np.uint32(4)) >> np.uint32(4))


@pytest.mark.parametrize("engine,target", ENGINES)
def test_reducers_with_unit_dims_and_one_update_per_element(engine, target):
    a = RNG.uniform(-1, 1, (8, 16)).astype(np.float32)
    kernel = tilemlir.compile(K.reducer_edge_forms(8, 16), out_idx=[-2, -1], engine=engine, target=target)
    cols, least = kernel(a)
    wide = a.astype(np.float64)
    assert_within(cols[0], wide.sum(axis=0) + 1, 9 * U32 * (np.abs(wide).sum(axis=0) + 1))
    np.testing.assert_array_equal(least, np.minimum(a, 0.25))


def test_reading_a_reducer_in_the_loop_that_updates_it_is_refused(tmp_path):
    with pytest.raises(TileLangError, match=r"'r' \(T.alloc_reducer\) is read in the T.Parallel that updates it"):
        tilemlir.compile(_kernel(tmp_path, """
            r = T.alloc_reducer((64,), "float32")
            T.clear(r)
            for i in T.Parallel(64):
                B[i] = r[i]
                r[i] += A[i]
            """), out_idx=[-1], engine="reference")


@pytest.mark.parametrize("body, message", [
    ("""
     v = T.alloc_var("float32")
     v = A[tx]
     for k in T.serial(tx % 4):
         s[tx] = v
         T.sync_threads()
         v = v + s[(tx + 1) % 64]
     B[tx] = v
     """, "gpu.barrier (T.sync_threads) in divergent control flow"),
    ("""
     B[tx] = -1.0
     if tx % 32 < 20:
         B[tx] = T.shfl_down(A[tx], 8)
     """, "gpu.shuffle in divergent control flow"),
])
def test_the_reference_engine_refuses_what_a_gpu_cannot_run(tmp_path, body, message):
    """What the emulator refuses (a barrier some threads skip, a shuffle
    reading a thread a branch left out), the reference engine refuses too."""
    kernel = tilemlir.compile(_kernel(tmp_path, body), out_idx=[-1], engine="reference")
    with pytest.raises(Exception, match=re.escape(message)):
        kernel(np.ones(64, np.float32))


def test_assert_messages_of_runtime_values_name_the_source(tmp_path):
    kernel = tilemlir.compile(_kernel(tmp_path, """
        for i in T.Parallel(64):
            assert A[i] < 10.0, A[i]
            B[i] = A[i]
            if A[i] < 0.0:
                T.device_assert(False, "unreachable")
        """), out_idx=[-1], engine="reference")
    np.testing.assert_array_equal(kernel(np.ones(64, np.float32)), 1.0)
    with pytest.raises(Exception, match=re.escape("device assertion failed: A[i]")):
        kernel(np.full(64, 20.0, np.float32))
    with pytest.raises(Exception, match="device assertion failed: unreachable"):
        kernel(np.full(64, -5.0, np.float32))


@pytest.mark.parametrize("body, message", [
    ("""
     if tx >= 32:
         return
     B[tx] = A[tx]
     """, "an early `return` in a kernel is not supported"),
    ("""
     if tx < 64:
         s[tx] = A[tx]
         B[tx] = s[63 - tx]
     """, "under a condition on the thread, this access of memory conflicts with an earlier one"),
    ("""
     if tx < 32:
         T.sync_threads()
     B[tx] = A[tx]
     """, "T.sync_threads under a condition on the thread"),
    ("""
     acc = T.alloc_local((1,), "float32")
     T.clear(acc)
     for k in T.serial(2):
         T.copy(A, s)
         acc[0] += s[tx]
     B[tx] = acc[0]
     """, "is per-thread (computed after T.get_thread_binding) and the per-thread code that made it ended"),
    ("""
     f = T.alloc_fragment((64,), "float32")
     T.copy(A, f)
     B[tx] = f[tx]
     """, "'f' is a fragment, whose elements tile-infer-layout spreads over the threads"),
])
def test_per_thread_code_a_gpu_could_not_run_as_written_is_refused(tmp_path, body, message):
    with pytest.raises(Exception, match=re.escape(message)):
        tilemlir.compile(_kernel(tmp_path, body), out_idx=[-1], engine="emulator",
                         target="amdgpu:gfx942")(np.ones(64, np.float32))


@pytest.mark.parametrize("engine,target", ENGINES)
def test_per_thread_branches_global_memory_and_uniform_conditions(tmp_path, engine, target):
    """A thread's own element read and written under a branch (no barrier
    needed), a global element one thread writes and all then read (a
    barrier, global memory being ordered in per-thread code), and a branch
    every thread decides alike holding a shared exchange (a barrier inside)."""
    kernel = tilemlir.compile(_kernel(tmp_path, """
        if tx < 48:
            s[tx] = A[tx] * 2.0
            s[tx] = s[tx] + 1.0
        if tx == 0:
            A[0] = 7.0
        if bx == 0:
            s[tx] = A[tx]
            B[tx] = s[63 - tx] + A[0]
        """), out_idx=[-1], engine=engine, target=target)
    a = RNG.uniform(-1, 1, 64).astype(np.float32)
    got = kernel(a.copy())
    expected = a.copy()
    expected[0] = 7.0
    np.testing.assert_array_equal(got, expected[::-1] + np.float32(7.0))


@pytest.mark.parametrize("engine,target", ENGINES)
def test_warp_votes_in_per_thread_code(engine, target):
    a = RNG.uniform(-1, 1, 128).astype(np.float32)
    a[0:32] = np.abs(a[0:32]) + 0.5  # a warp all positive
    a[32:64] = -np.abs(a[32:64]) - 0.5  # a warp none positive
    kernel = tilemlir.compile(K.warp_votes(128), out_idx=[-3, -2, -1], engine=engine, target=target)
    some, every, ballot = kernel(a)
    positive = (a > 0).reshape(-1, 32)
    bits = (positive * (1 << np.arange(32, dtype=np.uint64))).sum(axis=1).astype(np.uint32)
    np.testing.assert_array_equal(some, np.repeat(positive.any(axis=1), 32))
    np.testing.assert_array_equal(every, np.repeat(positive.all(axis=1), 32))
    np.testing.assert_array_equal(ballot, np.repeat(bits, 32))


# -- third reading ------------------------------------------------------------------

@pytest.mark.parametrize("engine,target", ENGINES[:2] + ENGINES[-1:])
def test_uint32_through_builtins_stays_unsigned(engine, target):
    words = np.array([2 ** 32 - 1, 0, 5, 2 ** 31, 7, 2 ** 32 - 2, 1, 3] * 8, np.uint32)
    got = tilemlir.compile(K.uint32_builtins(64), out_idx=[-1], engine=engine, target=target)(words)
    w = words.astype(np.uint64)
    picked = np.where(np.arange(64) % 2 == 0, w, w[0])
    want = np.stack([(~words > 5).astype(np.uint64), ((w << 4) & 0xFFFFFFFF) >> 4, ((w + 1) & 0xFFFFFFFF) >> 1,
                     ((w + 1) & 0xFFFFFFFF) >> 1, ((picked + 1) & 0xFFFFFFFF) >> 1], axis=1).astype(np.uint32)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("engine,target", ENGINES[:2] + ENGINES[-1:])
def test_per_thread_atomics_views_and_uniform_branches(tmp_path, engine, target):
    """A shared-memory histogram by atomics under a branch on the thread
    (atomics are ordered among themselves), a global tensor written and read
    back by other threads (a barrier between), and a branch every thread
    decides alike in a loop holding a T.sync_threads."""
    kernel = tilemlir.compile(_kernel(tmp_path, """
        h = T.alloc_shared((8,), "float32")
        if tx < 8:
            h[tx] = 0.0
        if A[tx] > 0.0:
            T.atomic_add(h[tx % 8], A[tx])
        B[tx] = A[tx] * 2.0
        total = T.alloc_var("float32", 0.0)
        total = B[(tx + 1) % 64]
        s[tx] = A[tx]
        for i in T.serial(2):
            if A[0] > -10.0:
                v = T.alloc_var("float32", 0.0)
                v = s[(tx + 1) % 64]
                T.sync_threads()
                s[tx] = v + 1.0
        if tx < 8:
            B[tx] = h[tx]
        if tx >= 8:
            B[tx] = total
        """), out_idx=[-1], engine=engine, target=target)
    a = RNG.uniform(-1, 1, 64).astype(np.float32)
    got = kernel(a)
    wide = a.astype(np.float64)
    histogram = np.array([np.where(a[k::8] > 0, wide[k::8], 0).sum() for k in range(8)])
    assert_within(got[:8], histogram, 8 * U32 * np.abs(wide).reshape(8, 8).sum(axis=0) + 1e-7)
    np.testing.assert_array_equal(got[8:], (a * 2)[np.arange(9, 65) % 64])


def test_a_loop_variable_is_no_thread_offset_under_a_branch(tmp_path):
    """`s[tx + i]` in a loop under a branch on the thread: thread t's second
    iteration is thread t + 1's first element, a race no barrier can fix."""
    with pytest.raises(Exception, match="under a condition on the thread, this access of memory conflicts"):
        tilemlir.compile(_kernel(tmp_path, """
            s[tx] = A[tx]
            T.sync_threads()
            if tx < 32:
                for i in T.serial(2):
                    s[tx + i] = s[tx + i] + 1.0
            T.sync_threads()
            B[tx] = s[tx]
            """), out_idx=[-1], engine="emulator", target="amdgpu:gfx942")(np.ones(64, np.float32))


@pytest.mark.parametrize("engine,target", ENGINES[:2] + ENGINES[-1:])
def test_a_write_through_a_tensor_view_is_ordered_before_other_threads_read(engine, target):
    a = RNG.uniform(-1, 1, 64).astype(np.float32)
    kernel = tilemlir.compile(K.view_exchange(64), out_idx=[-1], engine=engine, target=target)
    np.testing.assert_array_equal(kernel(a, np.zeros(64, np.float32)), np.roll(a * 2, -1))


def test_a_fragment_copy_at_an_offset_is_refused_at_its_line(tmp_path):
    """The engines agree: the builder refuses what tile-lower-to-gpu cannot
    copy (a part of one fragment into another)."""
    with pytest.raises(TileLangError, match=re.escape("T.copy between fragments ([2, 32] and [32]) copies all")):
        tilemlir.compile(_kernel(tmp_path, """
            a = T.alloc_fragment((2, 32), "float32")
            b = T.alloc_fragment((32,), "float32")
            T.copy(a[1, :], b)
            """), out_idx=[-1], engine="reference")
