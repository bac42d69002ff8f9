"""TileLang-style kernels of tilemlir.language (tilelang_style/kernels.py) as
device-check cases: each kernel's tile IR, its inputs (every parameter of the
built function, T.alloc_global workspaces included, in order) and, per output
position, the float64 expectation and the bound around it. bench/device_check.py
runs them on an NVIDIA GPU next to the example kernels; the tests of
test_language.py run the same kernels on the engines and emulators.

An output whose initial value the kernel updates (an atomic's target) is
marked `keep`: the device check does not poison it before the launch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np
from tilelang_style import kernels as K

import tilemlir.language

U32 = 2.0 ** -24


@dataclass
class LanguageCase:
    name: str
    make: Callable[[], object]  # the prim_func (or a factory's JIT function result)
    inputs: Callable[[np.random.Generator], list]
    model: Callable[[list], dict]  # arguments -> {position: (want, bound)}
    keep: set = field(default_factory=set)  # outputs updated in place (not poisoned)

    def text(self) -> str:
        return tilemlir.language.compile(self.make(), engine="reference").get_kernel_source()


def _exact(values) -> tuple:
    values = np.asarray(values, np.float64)
    return values, np.full(values.shape, 0.0)


def _sums_bound(values, magnitudes, k) -> np.ndarray:
    return 2 * k * U32 * np.asarray(magnitudes, np.float64) + 1e-30


def _block_sparse_inputs(rng):
    m, n, k, bm, bn, bk = 64, 64, 64, 32, 32, 16
    a, b = (rng.uniform(-1, 1, shape).astype(np.float16) for shape in ((m, k), (k, n)))
    mask = rng.random((m // bm, n // bn, k // bk)) > 0.5
    mask[0, 0], mask[1, 1] = False, True
    return [a, b, mask.view(np.int8), np.zeros((m, n), np.float16)]


def _block_sparse_model(args):
    a, b, mask = args[0].astype(np.float64), args[1].astype(np.float64), args[2].astype(bool)
    want, magnitude = np.zeros((64, 64)), np.zeros((64, 64))
    for i, j, step in zip(*np.nonzero(mask)):
        rows, cols, ks = (slice(x * size, (x + 1) * size) for x, size in ((i, 32), (j, 32), (step, 16)))
        want[rows, cols] += a[rows, ks] @ b[ks, cols]
        magnitude[rows, cols] += np.abs(a[rows, ks]) @ np.abs(b[ks, cols])
    return {3: (want, 2.0 ** -11 * np.abs(want) + _sums_bound(want, magnitude, 64) + 2.0 ** -24)}


def _byte_inputs(rng):
    n = 64
    x = rng.uniform(-1, 1, n).astype(np.float32)
    x[:3] = (0.0, 0.5, -0.0)
    packed = rng.integers(0, 256, n).astype(np.uint8)
    packed[:2] = (200, 255)
    keep = rng.random(n) > 0.3
    return [x, packed.view(np.int8), keep.view(np.int8), np.zeros(n, np.int8), np.zeros((n, 2), np.float32),
            np.zeros(n, np.int8), np.zeros(n, np.float32)]


def _byte_model(args):
    x, packed, keep = args[0], args[1].view(np.uint8), args[2].view(bool)
    total = ((2 * packed.astype(np.int64) + 100) & 0xFF).astype(np.uint8)
    return {3: _exact(x > 0), 4: _exact(np.stack([packed & 0xF, (packed >> 4) + 16.0 * 200], axis=1)),
            5: _exact(total.view(np.int8)),
            6: _exact(np.where((x != 0) & keep, packed.astype(np.float64), -1.0))}


def _uint32_inputs(rng):
    words = rng.integers(0, 2 ** 32, 64, dtype=np.uint64).astype(np.uint32)
    words[:4] = (0, 1, 2 ** 31, 2 ** 32 - 1)
    return [words.view(np.int32), np.zeros(64, np.int32), np.zeros(64, np.int8), np.zeros(64, np.int32),
            np.zeros(64, np.float32), np.zeros(64, np.int32)]


def _as_stored(words) -> tuple:
    """Exact int32 words, as the device check keeps expectations: in float32,
    so a bound of the rounding of a word beyond 2^24 (one float32 ulp)."""
    values = np.asarray(words, np.float64)
    return values, np.abs(values) * 2.0 ** -23


def _uint32_model(args):
    wide = args[0].view(np.uint32).astype(np.int64)
    return {1: _exact(wide >> 28), 2: _exact(wide > 2 ** 31),
            3: _as_stored((wide // 2).astype(np.uint32).view(np.int32)),
            4: _exact(wide.astype(np.uint32).astype(np.float32)),
            5: _as_stored(((wide + 2 ** 32 - 1) % 2 ** 32).astype(np.uint32).view(np.int32))}


def _atomic_inputs(rng):
    n, bins, blocks = 96, 8, 3
    x = rng.uniform(-4, 4, (blocks, n)).astype(np.float32)
    x[1, 5] = np.nan
    index = rng.integers(0, 1000, (blocks, n)).astype(np.int32)
    return [x, index, np.zeros(bins, np.int32), np.array([-np.inf, np.inf], np.float32),
            np.array([1 << 30], np.int32), np.array([1.0], np.float32)]


def _atomic_model(args):
    x, index = args[0], args[1]
    return {2: _exact(np.bincount((index % 8).reshape(-1), minlength=8)),
            3: _exact([np.nanmax(x), np.nanmin(x)]),
            4: _exact([(index - np.arange(3)[:, None]).min()]), 5: _exact([1.0 + 0.5 * 3])}


def _decode_inputs(rng):
    batch, heads, seq, dim, splits = 1, 64, 128, 64, 2
    q = rng.standard_normal((batch, heads, dim)).astype(np.float16)
    k, v = (rng.standard_normal((batch, seq, dim)).astype(np.float16) for _ in range(2))
    return [q, k, v, np.zeros((batch, heads, dim), np.float32), np.zeros((batch, heads, splits), np.float32),
            np.zeros((batch, heads, splits, dim), np.float32)]


def _decode_model(args):
    q, k, v = (a.astype(np.float64) for a in args[:3])
    scores = np.einsum("bhd,bsd->bhs", q, k) / np.sqrt(q.shape[-1])
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    want = np.einsum("bhs,bsd->bhd", p, v)
    return {3: (want, 2.0 ** -10 * np.einsum("bhs,bsd->bhd", p, np.abs(v)) + 1e-5)}


def _scalar_inputs(rng):
    n = 64
    flags = rng.random(n) > 0.5
    return [flags.view(np.int8), np.array([10.0, 20.0], np.float32), np.zeros((n, 2), np.int32),
            np.zeros(n, np.float32), np.zeros(n, np.float32), np.array([1.0, 2.0, 5000.0], np.float32)]


def _scalar_model(args):
    n = 64
    flags = args[0].view(bool)
    total = n * (n - 1) / 2
    return {2: _exact(np.stack([flags + 1, 2 * flags.astype(np.int32)], axis=1)),
            3: _exact(args[1][flags.astype(int)]), 4: _exact(np.append(np.arange(n - 1), -5.0)),
            5: _exact([1.0 + 2 * total, 3.0, total])}


def _unit_inputs(rng):
    m, n = 8, 64
    return [rng.uniform(-1, 1, (m, n)).astype(np.float32), np.zeros(m, np.float32), np.zeros((m, 1), np.float32),
            np.zeros((m, n), np.float32)]


def _unit_model(args):
    a = args[0].astype(np.float64)
    m = a.shape[0]
    return {1: (a.sum(axis=1), 40 * U32 * (np.abs(a).sum(axis=1) + 1)),
            3: _exact(np.concatenate([2 * a[m // 2:], a[m // 2:]]))}


def _split_sum_inputs(rng):
    b, s, d, splits = 2, 32, 16, 4
    return [rng.uniform(-1, 1, (b, s, d)).astype(np.float32), np.zeros((b, splits), np.float32),
            np.zeros((b, d), np.float32), np.zeros((b, splits, d), np.float32)]


def _split_sum_model(args):
    x = args[0].astype(np.float64)
    chunks = x.reshape(2, 4, 8, 16)
    return {1: (2 * chunks.sum(axis=(2, 3)), 80 * U32 * (np.abs(chunks).sum(axis=(2, 3)) + 1)),
            2: (x.sum(axis=1), 40 * U32 * (np.abs(x).sum(axis=1) + 1))}


def _stream_k_inputs(rng):
    m, n, k = 32, 128, 128
    return [rng.uniform(-1, 1, (m, k)).astype(np.float16), rng.uniform(-1, 1, (k, n)).astype(np.float16),
            np.zeros((m, n), np.float16)]


def _stream_k_model(args):
    a, b = args[0].astype(np.float64), args[1].astype(np.float64)
    return {2: (a @ b, 3 * 2.0 ** -11 * (np.abs(a) @ np.abs(b)) + 2.0 ** -24)}


def _repeated_inputs(rng):
    return [rng.uniform(-1, 1, (16, 96)).astype(np.float16), rng.uniform(-1, 1, (96, 64)).astype(np.float16),
            np.zeros((2, 16, 64), np.float32)]


def _repeated_model(args):
    a, b = args[0].astype(np.float64), args[1].astype(np.float64)
    want = np.stack([a[:, :depth] @ b[:depth] for depth in (96, 64)])
    magnitude = np.stack([np.abs(a[:, :depth]) @ np.abs(b[:depth]) for depth in (96, 64)])
    return {2: (want, _sums_bound(want, magnitude, 96) + 2.0 ** -24)}


def _half_atomic_inputs(rng):
    return [rng.uniform(-1, 1, 64).astype(np.float32), np.zeros(4, np.float16), np.zeros(4, ml_dtypes.bfloat16)]


def _half_atomic_model(args):
    x = args[0].astype(np.float64)
    exact = np.array([x[i::4].sum() for i in range(4)])
    magnitude = np.array([np.abs(x[i::4]).sum() for i in range(4)])
    return {1: (exact, 16 * 2.0 ** -11 * magnitude), 2: (exact, 16 * 2.0 ** -8 * magnitude)}


def _gemv_inputs(n, k):
    def make(rng):
        return [rng.uniform(-1, 1, k).astype(np.float16), rng.uniform(-1, 1, (n, k)).astype(np.float16),
                np.zeros(n, np.float16)]
    return make


def _gemv_model(args):
    a, b = args[0].astype(np.float64), args[1].astype(np.float64)
    want = b @ a
    return {2: (want, len(a) * U32 * (np.abs(b) @ np.abs(a)) + 2.0 ** -11 * np.abs(want))}


def _reducer_inputs(rng):
    return [rng.uniform(-1, 1, (256, 512)).astype(np.float16), rng.uniform(-1, 1, 512).astype(np.float16),
            np.zeros(256, np.float32)]


def _reducer_model(args):
    a, x = args[0].astype(np.float64), args[1].astype(np.float64)
    return {2: (a @ x, 2 * a.shape[1] * U32 * (np.abs(a) @ np.abs(x)))}


def _shuffle_inputs(rng):
    return [rng.uniform(-1, 1, 128).astype(np.float32), np.zeros(4, np.float32), np.zeros(128, np.float32),
            np.zeros(128, np.float32), np.zeros(128, np.int32)]


def _shuffle_model(args):
    a = args[0]
    thread = np.arange(a.size)
    lane = thread % 32
    wide = a.astype(np.float64)
    return {1: (wide.reshape(-1, 32).sum(axis=1), 32 * U32 * np.abs(wide).reshape(-1, 32).sum(axis=1)),
            2: _exact(np.where(lane + 3 < 32, a[np.minimum(thread + 3, a.size - 1)], a)),
            3: _exact(np.where(lane >= 2, a[np.maximum(thread - 2, 0)], a)),
            4: _exact((thread - lane + 5) * 10)}


def _vote_inputs(rng):
    a = rng.uniform(-1, 1, 128).astype(np.float32)
    a[0:32] = np.abs(a[0:32]) + 0.5
    a[32:64] = -np.abs(a[32:64]) - 0.5
    return [a, np.zeros(128, np.int32), np.zeros(128, np.int32), np.zeros(128, np.int32)]


def _vote_model(args):
    positive = (args[0] > 0).reshape(-1, 32)
    bits = (positive * (1 << np.arange(32, dtype=np.uint64))).sum(axis=1).astype(np.uint32).view(np.int32)
    return {1: _exact(np.repeat(positive.any(axis=1), 32)), 2: _exact(np.repeat(positive.all(axis=1), 32)),
            3: _as_stored(np.repeat(bits, 32))}


def _scan_inputs(rng):
    return [rng.uniform(-1, 1, (3, 128)).astype(np.float32), np.zeros((3, 128), np.float32)]


def _scan_model(args):
    x = args[0].astype(np.float64)
    return {1: (np.cumsum(x, axis=1) - x, x.shape[1] * U32 * np.cumsum(np.abs(x), axis=1))}


CASES = [
    LanguageCase("lang_block_sparse_matmul", lambda: K.block_sparse_matmul(64, 64, 64, 32, 32, 16),
                 _block_sparse_inputs, _block_sparse_model),
    LanguageCase("lang_byte_types", lambda: K.byte_types(64), _byte_inputs, _byte_model),
    LanguageCase("lang_uint32_bits", lambda: K.uint32_bits(64), _uint32_inputs, _uint32_model),
    LanguageCase("lang_element_atomics", lambda: K.element_atomics(96, 8, 3), _atomic_inputs, _atomic_model,
                 keep={2, 3, 4, 5}),
    LanguageCase("lang_split_kv_decode", lambda: K.split_kv_decode.function(1, 64, 128, 64), _decode_inputs,
                 _decode_model),
    LanguageCase("lang_scalar_forms", lambda: K.scalar_forms(64), _scalar_inputs, _scalar_model, keep={5}),
    LanguageCase("lang_unit_dim_buffers", lambda: K.unit_dim_buffers.function(8, 64), _unit_inputs, _unit_model),
    LanguageCase("lang_stream_k_gemm", lambda: K.stream_k_gemm.function(32, 128, 128), _stream_k_inputs,
                 _stream_k_model, keep={2}),
    LanguageCase("lang_repeated_pipelined_loop", lambda: K.repeated_pipelined_loop.function(96), _repeated_inputs,
                 _repeated_model),
    LanguageCase("lang_half_atomics", lambda: K.half_atomics(64), _half_atomic_inputs, _half_atomic_model,
                 keep={1, 2}),
    LanguageCase("lang_split_sum_then_combine", lambda: K.split_sum_then_combine.function(2, 32, 16, 4),
                 _split_sum_inputs, _split_sum_model),
    LanguageCase("lang_gemv_per_thread", lambda: K.gemv_per_thread(256, 1024, 128, 128), _gemv_inputs(256, 1024),
                 _gemv_model),
    LanguageCase("lang_gemv_split_threads", lambda: K.gemv_split_threads(256, 1024, 2, 32, 8),
                 _gemv_inputs(256, 1024), _gemv_model),
    LanguageCase("lang_gemv_reducer", lambda: K.gemv_reducer(256, 512, 64, 128), _reducer_inputs, _reducer_model),
    LanguageCase("lang_warp_shuffles", lambda: K.warp_shuffles(128), _shuffle_inputs, _shuffle_model),
    LanguageCase("lang_warp_votes", lambda: K.warp_votes(128), _vote_inputs, _vote_model),
    LanguageCase("lang_prefix_sums_per_thread", lambda: K.prefix_sums_per_thread(3, 128), _scan_inputs,
                 _scan_model),
]
