"""Issue 17's acceptance kernels (examples/kernels/*.mlir) as test cases:
each kernel's inputs and a float64 NumPy model of what it computes, written
here independently of the reference engine, with a bound per output derived
from the dtypes and the length of the f32 computation. Used by
test_general_kernels.py (compile everywhere, run in the emulator) and by
bench/device_check.py (run on an NVIDIA GPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tilemlir.runtime.dtypes import convert

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"
U32, U16, U_BF16 = 2.0 ** -24, 2.0 ** -11, 2.0 ** -8
# RDNA3 (gfx1100, wave32 WMMA of replicated operands, no fp8) and RDNA4 (gfx1201) too.
COMPILE_TARGETS = ("amdgpu:gfx90a", "amdgpu:gfx942", "amdgpu:gfx950", "amdgpu:gfx1100", "amdgpu:gfx1201",
                   "metax:xcore1000", "nvidia:sm_90a")
EMULATED_TARGETS = ("amdgpu:gfx90a", "amdgpu:gfx942", "amdgpu:gfx950", "amdgpu:gfx1100", "amdgpu:gfx1201",
                    "metax:xcore1000")
FP8 = {"amdgpu:gfx90a": "f8E4M3FNUZ", "amdgpu:gfx942": "f8E4M3FNUZ"}  # else OCP f8E4M3FN
NUMPY_FP8 = {"f8E4M3FNUZ": "float8_e4m3fnuz", "f8E4M3FN": "float8_e4m3fn"}


def as_f64(array: np.ndarray) -> np.ndarray:
    return convert(array, np.float64)


def typed(values: np.ndarray, dtype: str) -> np.ndarray:
    return convert(values, dtype)


@dataclass(frozen=True)
class Case:
    """A kernel file, its inputs, and its float64 model: `model(inputs)`
    returns {argument index: (expected float64, bound)}."""

    file: str
    entry: str
    inputs: object  # rng -> list of arrays / scalars (outputs filled with NaN)
    model: object

    replacements: tuple[tuple[str, str], ...] = ()

    def text(self, target: str) -> str:
        text = (KERNELS / self.file).read_text()
        for old, new in self.replacements:
            assert old in text, (self.file, old)
            text = text.replace(old, new)
        return text.replace("f8E4M3FNUZ", FP8.get(target, "f8E4M3FN"))


def _rows_bound(reference: np.ndarray, relative: float, out_unit: float) -> np.ndarray:
    return out_unit * np.abs(reference) + (1 + out_unit) * relative * np.abs(reference) + 2.0 ** -24


def softmax_model(args):
    x = as_f64(args[0])
    shifted = x - x.max(axis=1, keepdims=True)
    ref = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    # x - max, exp (with its argument's error), a sum of n terms, the division; then f16.
    relative = (2 * np.abs(shifted).max() + x.shape[1] + 4) * U32
    return {1: (ref, _rows_bound(ref, relative, U16))}


def layernorm_model(args):
    x, gamma, beta = (as_f64(a) for a in args[:3])
    n = x.shape[1]
    mean = x.mean(axis=1)
    centered = x - mean[:, None]
    var = (centered ** 2).mean(axis=1)
    rstd = 1 / np.sqrt(var + 1e-5)
    y = centered * rstd[:, None] * gamma + beta
    # Sums of n f32 terms (gamma_n), the rsqrt's few ulps; y's terms are O(|x| rstd |gamma| + |beta|).
    stats = (n + 8) * U32
    scale = (np.abs(centered) * rstd[:, None] + 1) * np.abs(gamma) + np.abs(beta)
    return {3: (y, U_BF16 * np.abs(y) + (1 + U_BF16) * stats * 4 * scale),
            4: (mean, stats * np.abs(x).max(axis=1)),
            5: (rstd, stats * 4 * rstd)}


def rmsnorm_model(args):
    x, weight = as_f64(args[0]), as_f64(args[1])
    rms = 1 / np.sqrt((x ** 2).mean(axis=1) + 1e-6)
    y = x * rms[:, None] * weight
    relative = (x.shape[1] + 8) * U32
    return {2: (y, U16 * np.abs(y) + (1 + U16) * relative * np.abs(y) + 2.0 ** -24)}


def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def add_gelu_model(args):
    x = as_f64(args[0]) + as_f64(args[1])
    y = gelu(x)
    # A dozen f32 operations and tanh's own error (a few ulps of O(1)).
    return {2: (y, U16 * np.abs(y) + 64 * U32 * (np.abs(x) + 1))}


def gemm_bound(product: np.ndarray, magnitude: np.ndarray, k: int, out_unit: float) -> np.ndarray:
    """An f32 sum of k products (gamma_k * sum |a||b|), then one rounding to the output."""
    gamma = (k + 1) * U32 / (1 - (k + 1) * U32)
    return out_unit * np.abs(product) + (1 + out_unit) * gamma * magnitude + 2.0 ** -24


def batched_model(args):
    a, b = as_f64(args[0]), as_f64(args[1])
    product = np.matmul(a, b)
    return {2: (product, gemm_bound(product, np.matmul(np.abs(a), np.abs(b)), a.shape[2], U16))}


def attention_model(args):
    q, k, v = (as_f64(a) for a in args[:3])
    scores = q @ k.T / np.sqrt(q.shape[1])
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    out = (p / p.sum(axis=1, keepdims=True)) @ v
    # P rounded to f16 before P V (each weight within U16, and they sum to 1: U16 * max|V|
    # per output, twice for the normalisation by the f32 row sum), the f32 sums of the
    # scores and of P V, then the output rounding.
    spread = np.abs(v).max()
    bound = U16 * np.abs(out) + (2 * U16 + (q.shape[1] + k.shape[0] + 16) * U32) * spread + 2.0 ** -24
    return {3: (out, bound)}


def conv_model(args):
    x, w = as_f64(args[0]), as_f64(args[1])
    n, h, wd, c = x.shape
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    columns = np.stack([padded[:, kh:kh + h, kw:kw + wd, :] for kh in range(3) for kw in range(3)], axis=3)
    a = columns.reshape(n * h * wd, 9 * c)
    return {2: (a @ w, gemm_bound(a @ w, np.abs(a) @ np.abs(w), 9 * c, U16))}


def w4a16_model(args):
    a, packed, scales = as_f64(args[0]), args[1].view(np.uint8), as_f64(args[2])
    low, high = (packed & 15).astype(np.float64) - 8, (packed >> 4).astype(np.float64) - 8
    values = np.empty((2 * packed.shape[0], packed.shape[1]))
    values[0::2], values[1::2] = low, high
    # The dequantised weight is (q - 8) * scale rounded to f16 (exact for |q - 8| <= 8 times
    # an f16 scale up to one rounding).
    b = as_f64(typed(values * scales, "float16"))
    return {3: (a @ b, gemm_bound(a @ b, np.abs(a) @ np.abs(b), a.shape[1], U16))}


def fp8_scaled_model(args):
    a, b = as_f64(args[0]), as_f64(args[1])
    scale = float(np.float32(args[3]) * np.float32(args[4]))
    product = a @ b * scale
    magnitude = np.abs(a) @ np.abs(b) * abs(scale)
    return {2: (product, gemm_bound(product, magnitude, a.shape[1], U16) + 2 * U32 * np.abs(product))}


def uniform(rng, shape, dtype, low=-1.0, high=1.0):
    return typed(rng.uniform(low, high, shape), dtype)


def nans(shape, dtype):
    return typed(np.full(shape, np.nan), dtype)


CASES = {
    "softmax": Case("softmax.mlir", "softmax",
                    lambda rng: [uniform(rng, (512, 1024), "float16", -4, 4), nans((512, 1024), "float16")],
                    softmax_model),
    # One row per workgroup: canonicalization folds the unit dims away.
    "softmax_one_row": Case("softmax.mlir", "softmax",
                            lambda rng: [uniform(rng, (512, 1024), "float16", -4, 4),
                                         nans((512, 1024), "float16")],
                            softmax_model,
                            (("4x1024xf32", "1x1024xf32"), ("memref<4xf32", "memref<1xf32"),
                             ("%bm = arith.constant 4", "%bm = arith.constant 1"),
                             ("array<i64: 128>", "array<i64: 512>"))),
    "online_softmax": Case("online_softmax.mlir", "online_softmax",
                           lambda rng: [uniform(rng, (256, 2048), "float16", -8, 8),
                                        nans((256, 2048), "float16")],
                           softmax_model),
    "layernorm": Case("layernorm.mlir", "layernorm",
                      lambda rng: [uniform(rng, (256, 1024), "bfloat16", -2, 3),
                                   uniform(rng, (1024,), "bfloat16", 0.5, 1.5),
                                   uniform(rng, (1024,), "bfloat16"), nans((256, 1024), "bfloat16"),
                                   nans((256,), "float32"), nans((256,), "float32")],
                      layernorm_model),
    "rmsnorm": Case("rmsnorm.mlir", "rmsnorm",
                    lambda rng: [uniform(rng, (128, 2048), "float16", -2, 2),
                                 uniform(rng, (2048,), "float16", 0.5, 1.5), nans((128, 2048), "float16")],
                    rmsnorm_model),
    "add_gelu": Case("add_gelu.mlir", "add_gelu",
                     lambda rng: [uniform(rng, (512, 1024), "float16", -3, 3),
                                  uniform(rng, (512, 1024), "float16", -3, 3), nans((512, 1024), "float16")],
                     add_gelu_model),
    "conv3x3_im2col": Case("conv3x3_im2col.mlir", "conv3x3",
                           lambda rng: [uniform(rng, (2, 16, 16, 32), "float16"),
                                        uniform(rng, (288, 64), "float16"), nans((512, 64), "float16")],
                           conv_model),
    "w4a16_gemm": Case("w4a16_gemm.mlir", "w4a16_gemm",
                       lambda rng: [uniform(rng, (128, 256), "float16"),
                                    rng.integers(-128, 128, (128, 128)).astype(np.int8),
                                    uniform(rng, (128,), "float16", 0.01, 0.1), nans((128, 128), "float16")],
                       w4a16_model),
    "flash_attention": Case("flash_attention.mlir", "flash_attention",
                            lambda rng: [uniform(rng, (256, 64), "float16", -2, 2),
                                         uniform(rng, (256, 64), "float16", -2, 2),
                                         uniform(rng, (256, 64), "float16"), nans((256, 64), "float16")],
                            attention_model),
    "batched_gemm": Case("batched_gemm.mlir", "batched_gemm",
                         lambda rng: [uniform(rng, (4, 128, 64), "float16"), uniform(rng, (4, 64, 96), "float16"),
                                      nans((4, 128, 96), "float16")],
                         batched_model),
    "fp8_gemm_scaled": Case("fp8_gemm_scaled.mlir", "fp8_gemm_scaled", None, fp8_scaled_model),
}


def fp8_inputs(target: str):
    def make(rng):
        fp8 = NUMPY_FP8[FP8.get(target, "f8E4M3FN")]
        return [uniform(rng, (200, 128), fp8, -2, 2), uniform(rng, (128, 160), fp8, -2, 2),
                nans((200, 160), "float16"), np.float32(0.75), np.float32(1.5)]
    return make


def inputs_for(case: Case, target: str, seed: int = 0) -> list:
    make = case.inputs if case.inputs is not None else fp8_inputs(target)
    return make(np.random.default_rng(seed))


