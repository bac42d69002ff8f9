"""The torch.compile backend: AOT autograd to core ATen, fusion groups, kernels."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import math
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import fx

from tilemlir.diagnostics import UserError
from tilemlir.runtime.cuda_launch import TENSOR_MAP_ADDRESS_ALIGN
from tilemlir.torch_backend import codegen, graphs, ops, partition
from tilemlir.torch_backend.codegen import TensorSpec
from tilemlir.torch_backend.partition import Group
from tilemlir.torch_backend.pointwise import Unsupported

LOG = logging.getLogger("tilemlir.torch")
STRICT_ENV = "TILEMLIR_TORCH_STRICT"
aten = torch.ops.aten


class TilemlirTorchError(UserError):
    """A node the backend cannot compile, under TILEMLIR_TORCH_STRICT=1."""


def strict() -> bool:
    return os.environ.get(STRICT_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def where(node: fx.Node) -> str:
    """The model source line a node came from (the last frame of its trace)."""
    trace = node.meta.get("stack_trace") or ""
    lines = [line.strip() for line in trace.strip().splitlines() if line.strip().startswith("File ")]
    if not lines:
        return "no source line recorded"
    # 'File "x.py", line 12, in forward' -> 'x.py:12 (forward)'
    text = lines[-1]
    try:
        path = text.split('"')[1]
        line = text.split("line ")[1].split(",")[0]
        function = text.rsplit(" in ", 1)[1]
        return f"{path}:{line} ({function})"
    except IndexError:
        return text


def describe(node: fx.Node) -> str:
    target = node.target
    name = getattr(target, "__name__", str(target))
    if hasattr(target, "_schema"):
        name = target._schema.name.replace("::", ".")
        overload = getattr(target, "_overloadname", "default")
        if overload != "default":
            name += f".{overload}"
    return name


def decompositions() -> dict:
    """Core ATen, with softmax, log-softmax and layer norm decomposed (their
    reductions fuse with what surrounds them) and attention kept whole. A
    copy of one table built once per process: building it walks every
    registered operator (about 0.1 s a compile)."""
    return dict(_decomposition_table())


@functools.cache
def _decomposition_table() -> dict:
    from torch._decomp import core_aten_decompositions, get_decompositions

    table = dict(core_aten_decompositions())
    table.update(get_decompositions([aten._softmax, aten._log_softmax, aten.native_layer_norm,
                                     aten.native_group_norm, aten.isinf, aten.clamp.Tensor,
                                     aten.slice_scatter]))
    for op in list(table):
        if "scaled_dot_product" in str(op):
            del table[op]
    table[aten._transformer_encoder_layer_fwd.default] = _encoder_layer
    table[aten._native_batch_norm_legit_no_training.default] = _batch_norm_inference
    table[aten._native_batch_norm_legit.no_stats] = _batch_norm_of_the_batch
    table[aten.max_pool2d_with_indices.default] = _max_pool2d
    table[aten.max.dim] = _extreme_along(torch.amax, torch.argmax)
    table[aten.min.dim] = _extreme_along(torch.amin, torch.argmin)
    table[aten.argmax.default] = _first_extreme(torch.amax)
    table[aten.argmin.default] = _first_extreme(torch.amin)
    table[aten.linalg_vector_norm.default] = _vector_norm
    table[aten.index_select.default] = _index_select
    table[aten.upsample_nearest2d.default] = _upsample_nearest
    table[aten.upsample_nearest2d.vec] = _upsample_nearest_scaled
    table[aten.avg_pool2d.default] = _avg_pool2d
    table[aten.convolution.default] = _convolution
    table[aten._adaptive_avg_pool2d.default] = _adaptive_avg_pool2d
    table[aten.adaptive_max_pool2d.default] = _adaptive_max_pool2d
    table[aten.repeat.default] = _repeat
    table[aten.cumsum.default] = _cumsum
    table[aten.isnan.default] = _isnan
    for overload in (aten.any.default, aten.any.dim, aten.any.dims):
        table[overload] = _any
    return table


def _batch_norm_inference(x, weight, bias, running_mean, running_var, momentum, eps):
    """Eval-mode batch norm as element-wise ops on per-channel vectors: they
    fuse into the epilogue of the convolution before them."""
    shape = [1, x.shape[1]] + [1] * (x.dim() - 2)
    y = (x - running_mean.view(shape)) * torch.rsqrt(running_var.view(shape) + eps)
    # An fp16 input keeps fp16 beside fp32 statistics.
    return _channel_affine(y, weight, bias).to(x.dtype), x.new_empty(0), x.new_empty(0)


def _channel_affine(y, weight, bias):
    """y times a per-channel (dim 1) weight, plus a per-channel bias, either None."""
    shape = [1, y.shape[1]] + [1] * (y.dim() - 2)
    if weight is not None:
        y = y * weight.view(shape)
    if bias is not None:
        y = y + bias.view(shape)
    return y


def _batch_norm_of_the_batch(x, weight, bias, training, momentum, eps):
    """Batch norm by the statistics of its own input (no running ones: what
    nn.InstanceNorm2d and GroupNorm-like modules call in eval mode): the mean
    and the biased variance of each channel over every other dim, 16-bit
    inputs in f32, the variance from the centred values (two passes, as
    torch's), then the element-wise normalisation; with the mean and the
    reciprocal standard deviation per channel (f32 for 16-bit inputs)."""
    dims = [0] + list(range(2, x.dim()))
    wide = x.float() if x.element_size() < 4 else x
    mean = wide.mean(dims, keepdim=True)
    centred = wide - mean
    rstd = torch.rsqrt((centred * centred).mean(dims, keepdim=True) + eps)
    return _channel_affine(centred * rstd, weight, bias).to(x.dtype), mean.flatten(), rstd.flatten()


def _accumulator(dtype: torch.dtype) -> torch.dtype:
    """What a decomposition's sums and weights are computed in: f32, or f64 for
    an f64 input (whose torch op computes in f64)."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _pooled_size(size: int, kernel: int, stride: int, padding: int, ceil_mode: bool,
                 dilation: int = 1) -> tuple[int, int]:
    """Output positions along one dimension, as torch's pooling counts them
    (a window spans dilation x (kernel - 1) + 1; with `ceil_mode` a last
    window may hang past the padded input, but must start inside the input
    or its leading padding), and how far the last window reaches past the
    trailing padding."""
    span = dilation * (kernel - 1) + 1
    out = (size + 2 * padding - span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out, max(0, (out - 1) * stride + span - size - 2 * padding)


def _pool_windows(x, kernel, stride, padding, fill, ceil_mode=False, dilation=(1,)):
    """The windows of `x` padded with `fill` (a view of the padded tensor;
    with `ceil_mode` also past the trailing padding where the last window
    hangs over it; taps `dilation` apart), whether they are channels-last,
    and the (kernel, stride, padding) pairs. [N, C, Ho, Wo, kh, kw] windows;
    of a channels-last `x`, [N, Ho, Wo, C, kh, kw] (reduced, then permuted
    back to N, C, Ho, Wo), so that the reducing kernel runs over the
    channels fastest and writes a channels-last result, as torch's pooling
    does."""
    (kh, kw), (sh, sw), (ph, pw) = geometry = _pair(kernel), _pair(stride or kernel), _pair(padding)
    dh, dw = _pair(list(dilation))
    out_h, over_h = _pooled_size(x.shape[2], kh, sh, ph, ceil_mode, dh)
    out_w, over_w = _pooled_size(x.shape[3], kw, sw, pw, ceil_mode, dw)
    pads = (pw, pw + over_w, ph, ph + over_h)
    padded = torch.nn.functional.pad(x, pads, value=fill) if any(pads) else x
    n, c = padded.shape[:2]
    sn, sc, s_h, s_w = padded.stride()
    taps = (s_h * dh, s_w * dw)
    if x.is_contiguous(memory_format=torch.channels_last) and c > 1:
        return padded.as_strided((n, out_h, out_w, c, kh, kw), (sn, s_h * sh, s_w * sw, sc) + taps), True, geometry
    return padded.as_strided((n, c, out_h, out_w, kh, kw), (sn, sc, s_h * sh, s_w * sw) + taps), False, geometry


def _max_pool2d(x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    """Max pooling as the max over a strided view of windows of the input
    padded with -inf (taps `dilation` apart). The indices (the first
    maximum's place in its input plane, as torch's) are an argmax
    (`_first_extreme`); the graph drops them where nothing uses them, as in
    a model's forward under no_grad (with grad, the forward keeps them for
    max pooling's backward)."""
    if x.dim() != 4 or not x.is_floating_point():
        return NotImplemented
    windows, channels_last, ((kh, kw), (sh, sw), (ph, pw)) = _pool_windows(
        x, list(kernel_size), list(stride), list(padding), float("-inf"), ceil_mode, list(dilation))
    dh, dw = _pair(list(dilation))
    pooled, tap = windows.amax((-2, -1)), windows.reshape(*windows.shape[:4], kh * kw).argmax(-1)
    if channels_last:
        pooled, tap = pooled.permute(0, 3, 1, 2), tap.permute(0, 3, 1, 2)
    out_h, out_w = pooled.shape[2:]
    rows = torch.arange(out_h, device=x.device).view(1, 1, out_h, 1) * sh - ph + tap // kw * dh
    cols = torch.arange(out_w, device=x.device).view(1, 1, 1, out_w) * sw - pw + tap % kw * dw
    return pooled, rows * x.shape[3] + cols


def _convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """A 1-D convolution (transposed or not) as the 2-D one of an image one
    row high (its kernel one row high too); a transposed 2-D one as
    `_transposed_convolution`; a grouped 2-D one as `_grouped_convolution`;
    others whole (a 2-D one of one group: codegen's implicit GEMM) or
    falling back (3-D)."""
    if not x.is_floating_point():
        return NotImplemented
    if x.dim() == 3:
        y = aten.convolution.default(x.unsqueeze(2), weight.unsqueeze(2), bias, [1] + list(stride),
                                     [0] + list(padding), [1] + list(dilation), transposed,
                                     [0] + list(output_padding), groups)
        return y.squeeze(2)
    if transposed:
        return _transposed_convolution(x, weight, bias, stride, padding, dilation, output_padding, groups)
    return _grouped_convolution(x, weight, bias, stride, padding, dilation, groups)


def _transposed_convolution(x, weight, bias, stride, padding, dilation, output_padding, groups):
    """A transposed 2-D convolution (a decoder's upsampling) as the direct
    convolution it equals: of the input with stride - 1 zeros between its
    pixels (each pixel and its zeros one concatenation, flattened), padded
    by dilation x (kernel - 1) - padding on each side (cropped where that is
    negative) and output_padding more at the end, by the kernel flipped in
    both taps with its input and output channels swapped in each group,
    stride 1, the same dilation and groups; a channels-last input's spread
    channels-last too, so that the result is, as torch's. f64 stays whole
    (run by torch: no kernel takes it, and the spread input would cost its
    fallback stride x stride the work)."""
    if x.dim() != 4 or x.dtype == torch.float64:
        return NotImplemented
    (sh, sw), (ph, pw) = _pair(list(stride)), _pair(list(padding))
    (dh, dw), (oh, ow) = _pair(list(dilation)), _pair(list(output_padding))
    in_channels, outs, kh, kw = weight.shape
    spread = x
    for dim, step in ((3, sw), (2, sh)):
        if step > 1:
            shape = list(spread.shape)
            zeros = spread.new_zeros(shape + [step - 1])
            spread = torch.cat([spread.unsqueeze(-1), zeros], -1)
            spread = spread.movedim(-1, dim + 1).reshape(shape[:dim] + [shape[dim] * step] + shape[dim + 1:])
            spread = spread.narrow(dim, 0, (shape[dim] - 1) * step + 1)
    top, left = dh * (kh - 1) - ph, dw * (kw - 1) - pw
    spread = torch.nn.functional.pad(spread, (left, left + ow, top, top + oh))
    if x.is_contiguous(memory_format=torch.channels_last):
        spread = spread.contiguous(memory_format=torch.channels_last)
    flipped = weight.view(groups, in_channels // groups, outs, kh, kw).transpose(1, 2) \
        .reshape(groups * outs, in_channels // groups, kh, kw)
    for dim, taps in ((2, kh), (3, kw)):  # reversed by an index (a gather kernel), as aten.flip is not one
        if taps > 1:
            flipped = flipped.index_select(dim, torch.arange(taps - 1, -1, -1, device=weight.device))
    return aten.convolution.default(spread, flipped, bias, [1, 1], [0, 0], [dh, dw], False, [0, 0], groups)


def _grouped_convolution(x, weight, bias, stride, padding, dilation, groups):
    """A grouped 2-D convolution (depthwise: one input channel a group; ResNeXt's
    and MobileNet's) as the reduction it is: output channel o of group g sums
    its group's input channels x its taps over a strided view of windows of
    the zero-padded input, the products in f32 (f64 for f64), summed so and
    rounded once, the bias added before the rounding. Of a channels-last input the
    windows are (N, H, W, group, ...) and the result channels-last, as
    torch's."""
    if groups == 1 or x.dim() != 4:
        return NotImplemented
    n, _, h, w = x.shape
    out_channels, per_group, kh, kw = weight.shape
    (sh, sw), (ph, pw), (dh, dw) = _pair(list(stride)), _pair(list(padding)), _pair(list(dilation))
    padded = torch.nn.functional.pad(x, (pw, pw, ph, ph)) if ph or pw else x
    (out_h, _), (out_w, _) = _pooled_size(h, kh, sh, ph, False, dh), _pooled_size(w, kw, sw, pw, False, dw)
    outs = out_channels // groups
    sn, sc, s_h, s_w = padded.stride()
    taps = (per_group, kh, kw)
    tap_strides = (sc, s_h * dh, s_w * dw)
    channels_last = x.is_contiguous(memory_format=torch.channels_last)
    if channels_last:
        windows = padded.as_strided((n, out_h, out_w, groups, 1) + taps,
                                    (sn, s_h * sh, s_w * sw, sc * per_group, 0) + tap_strides)
        kernel = weight.view(groups, outs, *taps)
    else:
        windows = padded.as_strided((n, groups, 1, out_h, out_w) + taps,
                                    (sn, sc * per_group, 0, s_h * sh, s_w * sw) + tap_strides)
        kernel = weight.view(groups, outs, 1, 1, *taps)
    wide = _accumulator(x.dtype)
    summed = (windows.to(wide) * kernel.to(wide)).sum((-3, -2, -1))
    if channels_last:
        summed = summed.reshape(n, out_h, out_w, out_channels)
        if bias is not None:
            summed = summed + bias.to(wide)
        return summed.to(x.dtype).permute(0, 3, 1, 2)
    summed = summed.reshape(n, out_channels, out_h, out_w)
    if bias is not None:
        summed = summed + bias.to(wide).view(out_channels, 1, 1)
    return summed.to(x.dtype)


def _first_extreme(extreme):
    """argmax (argmin) as two reductions one kernel chains: the maximum
    (minimum) along `dim`, then the least position holding it or a NaN
    (torch's argmax and argmin take a NaN as the extreme: its first one,
    where the amax is NaN too and equals nothing). Over all elements when
    `dim` is None. Of bools (which torch refuses) and uint8 (whose extremes
    no kernel takes: partition.reducible) it stays whole."""
    def decomposed(x, dim=None, keepdim=False):
        if x.dtype in (torch.bool, torch.uint8) or x.numel() == 0:
            return NotImplemented
        if dim is None:
            found = decomposed(x.reshape(-1), 0)
            return found.reshape([1] * x.dim()) if keepdim else found
        if x.dim() == 0:
            return torch.zeros((), dtype=torch.int64, device=x.device)
        dim %= x.dim()
        size = x.shape[dim]
        positions = torch.arange(size, device=x.device).view([size if d == dim else 1 for d in range(x.dim())])
        holds = x == extreme(x, dim, True)
        if x.is_floating_point():
            holds = holds | torch.ne(x, x)  # a NaN, unequal to itself
        return torch.where(holds, positions, size).amin(dim, keepdim)
    return decomposed


def _extreme_along(values, indices):
    """max(dim) or min(dim): the values an amax (amin), the indices (the
    first extreme's, as torch's) an argmax (argmin), which `_first_extreme`
    decomposes in turn; the graph drops them where nothing uses them. Of
    bools (which argmax refuses) and uint8 it stays whole, run by torch."""
    def decomposed(x, dim, keepdim=False):
        if x.dtype in (torch.bool, torch.uint8):
            return NotImplemented
        return values(x, dim, keepdim), indices(x, dim, keepdim)
    return decomposed


def _vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """linalg.vector_norm (F.normalize's) of floats as its reduction: the
    p-th root of the sum of |x|^p, or the largest or smallest |x| for
    p = +-inf; p = 0 (a count) and a `dtype` stay whole, run by torch."""
    if dtype is not None or not x.is_floating_point() or ord == 0:
        return NotImplemented
    dims = [] if dim is None else dim
    if ord in (float("inf"), float("-inf")):
        reduce = torch.amax if ord > 0 else torch.amin
        return reduce(x.abs(), dims, keepdim)
    # Summed in f32 at least, rounded once at the end, as torch does (an fp16
    # sum of squares overflows where the norm does not).
    wide = x.float() if x.element_size() < 4 else x
    if ord == 2:
        norm = torch.sqrt(torch.sum(wide * wide, dims, keepdim))
    elif ord == 1:
        norm = torch.sum(wide.abs(), dims, keepdim)
    else:
        norm = torch.pow(torch.sum(torch.pow(wide.abs(), ord), dims, keepdim), 1.0 / ord)
    return norm.to(x.dtype)


def _upsample_nearest(x, output_size, scales_h=None, scales_w=None):
    """Nearest upsampling by whole factors (output a multiple of the input):
    each pixel repeated, an expanded view copied. Other sizes stay whole,
    run by torch."""
    if x.dim() != 4:
        return NotImplemented
    n, c, h, w = x.shape
    out_h, out_w = output_size
    if out_h % h or out_w % w or scales_h not in (None, out_h / h) or scales_w not in (None, out_w / w):
        return NotImplemented
    sh, sw = out_h // h, out_w // w
    return x[:, :, :, None, :, None].expand(n, c, h, sh, w, sw).reshape(n, c, out_h, out_w)


def _upsample_nearest_scaled(x, output_size, scale_factors):
    """F.interpolate's spelling: an output size, or scale factors."""
    if output_size is None:
        if scale_factors is None or x.dim() != 4:
            return NotImplemented
        output_size = [int(x.shape[2] * scale_factors[0]), int(x.shape[3] * scale_factors[1])]
        return _upsample_nearest(x, output_size, scale_factors[0], scale_factors[1])
    return _upsample_nearest(x, output_size)


def _index_select(x, dim, index):
    """index_select as the index it is (x[:, ..., index])."""
    return aten.index.Tensor(x, [None] * (dim % max(x.dim(), 1)) + [index])


def _pair(values: list) -> tuple:
    return (values[0], values[0]) if len(values) == 1 else tuple(values)


def _avg_pool2d(x, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True,
                divisor_override=None):
    """Average pooling: the mean of each window of the input padded with
    zeros where every window counts kh x kw elements; else (a last window
    past the padding with `ceil_mode`, padding not counted, a divisor given)
    each window's sum times 1 / its own count, as torch counts it: the
    window clipped to the padded input, or to the input without
    `count_include_pad`. The products are f32 (f64 for f64) and summed so,
    rounded once. Integer inputs (torch divides them exactly) stay whole."""
    if x.dim() != 4 or not x.is_floating_point():
        return NotImplemented
    windows, channels_last, geometry = _pool_windows(x, list(kernel_size), list(stride), list(padding), 0.0,
                                                     ceil_mode)
    (kh, kw), (sh, sw), (ph, pw) = geometry
    out_h, out_w = windows.shape[1:3] if channels_last else windows.shape[2:4]
    within = (out_h - 1) * sh + kh <= x.shape[2] + 2 * ph and (out_w - 1) * sw + kw <= x.shape[3] + 2 * pw
    if divisor_override is None and within and (count_include_pad or not (ph or pw)):
        pooled = windows.mean((-2, -1))
    else:
        wide = _accumulator(x.dtype)
        if divisor_override is not None:
            scale = torch.full((out_h, out_w), 1.0 / divisor_override, dtype=wide, device=x.device)
        else:
            rows = _window_counts(out_h, x.shape[2], kh, sh, ph, count_include_pad, x.device).to(wide)
            cols = _window_counts(out_w, x.shape[3], kw, sw, pw, count_include_pad, x.device).to(wide)
            scale = 1.0 / (rows[:, None] * cols[None, :])
        scale = scale[:, :, None, None, None] if channels_last else scale[:, :, None, None]
        pooled = (windows * scale).sum((-2, -1)).to(x.dtype)
    return pooled.permute(0, 3, 1, 2) if channels_last else pooled


def _window_counts(out: int, size: int, kernel: int, stride: int, padding: int, with_padding: bool, device):
    """The elements of each window along one dimension that average pooling
    divides by (torch's count): clipped to the padded input, or with
    `with_padding` false to the input itself; f32."""
    start = torch.arange(out, device=device) * stride - padding
    end = torch.clamp(start + kernel, max=size + padding)
    if not with_padding:
        start, end = torch.clamp(start, min=0), torch.clamp(end, max=size)
    return (end - start).to(torch.float32)


def _adaptive_max_pool2d(x, output_size):
    """Adaptive max pooling where the output divides the input: max pooling
    by the quotient (its indices as torch's, places in the input plane)."""
    if x.dim() != 4:
        return NotImplemented
    (h, w), (oh, ow) = x.shape[2:], _pair(list(output_size))
    if h % oh or w % ow:
        return NotImplemented
    return _max_pool2d(x, [h // oh, w // ow], [h // oh, w // ow])


def _repeat(x, repeats):
    """Tensor.repeat (and tile) as the copy of an expanded view: each dim d
    of size n repeated r times is [r, n] flattened, r the slower."""
    repeats = list(repeats)
    if len(repeats) < x.dim():
        return NotImplemented
    shape = [1] * (len(repeats) - x.dim()) + list(x.shape)
    interleaved = [v for n in shape for v in (1, n)]
    expanded = [v for r, n in zip(repeats, shape) for v in (r, n)]
    return x.reshape(interleaved).expand(expanded).reshape([r * n for r, n in zip(repeats, shape)])


def _cumsum(x, dim, *, dtype=None):
    """cumsum (a position id's count of the tokens before it, a packed
    sequence's index) as a masked sum: element i of a run is the sum of its
    elements j <= i, a reduction over an expanded [..., i, j] view of the run
    (the kernel reads each element n times: quadratic in the run's length, a
    short one's cost). As torch: integers and booleans sum in int64, 16-bit
    floats in f32, rounded once."""
    if x.dim() == 0 or x.is_complex():
        return NotImplemented
    dim %= x.dim()
    out = dtype or (x.dtype if x.is_floating_point() else torch.int64)
    wide = torch.float32 if out.is_floating_point and torch.finfo(out).bits < 32 else out
    run = x.movedim(dim, -1).to(wide)
    n = run.shape[-1]
    positions = torch.arange(n, device=x.device)
    taken = positions[None, :] <= positions[:, None]  # [i, j]: j <= i
    summed = torch.where(taken, run.unsqueeze(-2), torch.zeros((), dtype=wide, device=x.device)).sum(-1)
    return summed.to(out).movedim(-1, dim)


def _isnan(x):
    """isnan as the comparison it is (torch's decomposition is a prims op)."""
    return torch.ne(x, x)


def _any(x, dim=None, keepdim=False):
    """any (all is not-any-of-not): a count of the elements that are not
    zero, compared with 0 (a sum of booleans is a kernel's, their max is not)."""
    dims = [] if dim is None else [dim] if isinstance(dim, int) else list(dim)
    return torch.sum(x != 0, dims, keepdim) > 0


def _adaptive_avg_pool2d(x, output_size):
    """Adaptive average pooling: where the output divides the input (ResNet's
    1x1), the mean of equal windows; else output (i, j) averages rows
    floor(i H / oh) .. ceil((i + 1) H / oh) - 1 and the columns alike (torch's
    windows, which may overlap), as the sum over the whole plane of the input
    times separable f32 (f64 for f64) weights, 1 / the window's size inside
    it and 0 outside (each output reads the plane: small planes, as such
    outputs have); a channels-last input gives a channels-last result.
    Integer inputs stay whole."""
    if x.dim() != 4 or not x.is_floating_point():
        return NotImplemented
    n, c, h, w = x.shape
    oh, ow = _pair(list(output_size))
    if not h % oh and not w % ow:
        return x.view(n, c, oh, h // oh, ow, w // ow).permute(0, 1, 2, 4, 3, 5).mean((-2, -1))
    wide = _accumulator(x.dtype)
    weights = _adaptive_weights(oh, h, wide, x.device)[:, None, :, None] * \
        _adaptive_weights(ow, w, wide, x.device)[None, :, None, :]
    if x.is_contiguous(memory_format=torch.channels_last) and c > 1:
        plane = x.permute(0, 2, 3, 1)[:, None, None]  # [N, 1, 1, H, W, C]
        return (plane * weights[None, :, :, :, :, None]).sum((3, 4)).to(x.dtype).permute(0, 3, 1, 2)
    return (x[:, :, None, None] * weights[None, None]).sum((-2, -1)).to(x.dtype)


def _adaptive_weights(out: int, size: int, dtype: torch.dtype, device):
    """[out, size] of `dtype`: 1 / window i's length where position h lies in adaptive
    pooling's window i (floor(i size / out) .. ceil((i + 1) size / out) - 1), else 0."""
    i = torch.arange(out, device=device)
    start, end = torch.div(i * size, out, rounding_mode="floor"), torch.div((i + 1) * size + out - 1, out,
                                                                              rounding_mode="floor")
    positions = torch.arange(size, device=device)[None, :]
    inside = (positions >= start[:, None]) & (positions < end[:, None])
    return torch.where(inside, 1.0 / (end - start).to(dtype)[:, None], 0.0)


def _encoder_layer(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu, norm_first,
                   eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1,
                   ffn_weight_2, ffn_bias_2, mask=None, mask_type=None):
    """nn.TransformerEncoderLayer's inference fast path (batch first) in the
    ops it is made of, so that its GEMMs, attention and norms fuse like any
    model's. Its mask (merged by nn.MultiheadAttention.merge_masks) is True or
    -inf where a key is hidden: [L, L] (type 0), a key padding [B, L] (type 1),
    or [B, H, L, L] (type 2)."""
    functional = torch.nn.functional

    def attention(x):
        batch, seq, _ = x.shape
        qkv = functional.linear(x, qkv_weight, qkv_bias).view(batch, seq, 3, num_heads, embed_dim // num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        additive = None
        if mask is not None:
            additive = mask if mask.dtype != torch.bool else \
                torch.zeros(mask.shape, dtype=x.dtype, device=x.device).masked_fill(mask, float("-inf"))
            additive = additive.to(x.dtype)
            if mask_type == 1 or (mask_type is None and additive.shape == (batch, seq)):
                additive = additive.view(batch, 1, 1, seq)
        out = ops.attention(q, k, v, additive)
        return functional.linear(out.transpose(1, 2).reshape(batch, seq, embed_dim), proj_weight, proj_bias)

    def feed_forward(x):
        hidden = functional.linear(x, ffn_weight_1, ffn_bias_1)
        hidden = functional.gelu(hidden) if use_gelu else functional.relu(hidden)
        return functional.linear(hidden, ffn_weight_2, ffn_bias_2)

    def norm(x, weight, bias):
        return functional.layer_norm(x, (embed_dim,), weight, bias, eps)

    if norm_first:
        x = src + attention(norm(src, norm_weight_1, norm_bias_1))
        return x + feed_forward(norm(x, norm_weight_2, norm_bias_2))
    x = norm(src + attention(src), norm_weight_1, norm_bias_1)
    return norm(x + feed_forward(x), norm_weight_2, norm_bias_2)


# --------------------------------------------------------------------------
# Kernels of groups
# --------------------------------------------------------------------------

def _source_dir() -> Path:
    """Where generated kernel sources are written (read back by the kernel builder)."""
    from tilemlir.runtime import cache

    base = cache.cache_dir()
    folder = base / "torch" if base is not None else Path(tempfile.gettempdir()) / f"tilemlir-torch-{os.getuid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        folder = Path(tempfile.mkdtemp(prefix="tilemlir-torch-"))
    return folder


def load_prim_func(source: str, name: str):
    """The prim_func `name` of generated `source` (written to a file, so that
    errors and the kernel's locations name a real line)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    path = _source_dir() / f"{name}_{digest}.py"
    if not path.exists() or path.read_text() != source:
        partial = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        partial.write_text(source)
        os.replace(partial, path)
    spec = importlib.util.spec_from_file_location(f"tilemlir_torch_{name}_{digest}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


# Kernels compiled in this process, by source, target and engine: the twelve
# layers of a BERT share theirs.
_COMPILED: dict = {}


class GroupKernel:
    """One group's kernel: made for each distinct (shape, stride, dtype) of
    its inputs at their first call, then reused."""

    def __init__(self, group: Group, name: str, target=None, engine=None):
        group = group.detached()  # the model's graph loses these nodes when the call replaces them
        self.group = group
        self.name = self.__name__ = self.__qualname__ = name  # FX names the call by it
        self.kernel_name = f"fused_{group.kind}"  # the same group in another layer is the same kernel
        self.target, self.engine = target, engine
        self.variants: dict = {}  # by input specs: (kernel, views, layouts, loaded), or None where refused
        self.in_torch_module = None  # the group's own copy of its ops, made where a kernel is refused
        # What a call passes as a kernel's operands: positions in group.inputs.
        self.operands: tuple[int, ...] = ()  # a GEMM's A and B, a convolution's image and weight, Q, K, V
        anchor = group.anchor
        if group.kind == "gemm":
            self.operands = tuple(group.inputs.index(o) for o in codegen.gemm_operands(anchor))
        elif group.kind == "conv":
            self.operands = tuple(group.inputs.index(o) for o in anchor.args[:2])
        elif group.kind == "attention":
            call = codegen.attention_call(anchor)
            self.operands = tuple(group.inputs.index(o) for o in (call.query, call.key, call.value))
        self.results = [TensorSpec.of(n.meta["val"]) for n in group.outputs]
        # Where the graph was traced to put the outputs: a group with no tensor
        # input (arange, full) makes them on the model's device too.
        self.device = group.outputs[0].meta["val"].device if group.outputs else torch.device("cpu")
        self.moved_tensors: dict[int, tuple] = {}  # `moved`: input position -> (dtype, shape, bytes), copy
        # Outputs written straight into the image a shifted convolution or a
        # pad reads (plan_images_in_place): output index -> its PhaseImage or Border.
        self.padded: dict[int, codegen.PhaseImage | codegen.Border] = {}
        # Outputs also written into the rows a shifted convolution reads, beside other readers.
        self.copied: dict[int, codegen.PhaseImage] = {}
        # Of `padded`'s layouts that are no view of the image, the kernels that read them.
        self.opaque_readers: dict[int, list[GroupKernel]] = {}
        # A group of one 2-D pad: what it passes as it is where its input was written inside it.
        self.border = codegen.bordered(group.nodes[0]) if len(group.nodes) == 1 else None

    def moved(self, position: int, tensor: torch.Tensor) -> torch.Tensor:
        """`tensor` (a CPU scalar beside GPU tensors, as torch allows) on the
        kernel's device. The copy is kept per input position and reused while
        the scalar's bytes are the same (a graph's constants, made afresh or
        not at each call), so that such a call copies nothing from the host,
        which a CUDA graph capture refuses (graphs.py)."""
        if tensor.numel() != 1:
            return tensor.to(self.device)
        key = (tensor.dtype, tuple(tensor.shape), tensor.reshape(1).view(torch.uint8).tolist())
        entry = self.moved_tensors.get(position)
        if entry is None or entry[0] != key:
            entry = self.moved_tensors[position] = (key, tensor.to(self.device))
        return entry[1]

    def variant(self, specs: list[TensorSpec]):
        key = tuple(specs)
        if key in self.variants and self.variants[key] is None:
            raise Unsupported("refused before")
        found = self.variants.get(key)
        if found is None:
            found = self.variants[key] = self.build(specs)
        return found

    def build(self, specs: list[TensorSpec]):
        """(kernel, output views, operand layouts, positions of the inputs read at offsets)."""
        group = self.group
        layouts = None

        if group.kind == "gemm":
            # An operand of no dense layout is made contiguous first.
            layouts = tuple(codegen.gemm_layout(specs[i]) or codegen.GemmOperand(False, specs[i].shape)
                            for i in self.operands)
            source, views, loaded = codegen.gemm_kernel(group, specs, layouts, self.kernel_name,
                                                        self.steps(specs[self.operands[0]].shape[-1]))
        elif group.kind == "conv":  # K: the weight's taps (in channels x kernel height x width)
            weight = specs[self.operands[1]].shape
            source, loaded, layouts, views = codegen.conv_kernel(group, specs, self.kernel_name,
                                                                 self.steps(weight[1] * weight[2] * weight[3]),
                                                                 self.padded, self.copied)
        elif group.kind == "attention":
            refused = None
            for tiling, source, loaded, layouts in self.attention_candidates(specs):
                # Its exp2s are a softmax's: a term flushed below 2^-126 is lost in
                # a sum holding the row's 1 (docs/kernels.md).
                try:
                    kernel = self.compiled(source, self.kernel_name, fast_math=True)
                    compile_now(kernel)
                except UserError as error:
                    LOG.debug("%s: %s refused (%s); the next tiling", self.name, tiling, error)
                    refused = error
                    continue
                return kernel, [None], layouts, [_position(group, node) for node in loaded]
            raise refused
        elif group.split:  # more values a row than one block reduces: two kernels
            split, views, loaded = codegen.split_reduction(group, specs, self.kernel_name)
            kernel = SplitKernel(split, [self.compiled(stage.source, stage.name) for stage in split.stages])
            return kernel, views, layouts, [group.inputs.index(node) for node in loaded]
        else:
            source, views, loaded = codegen.pointwise_kernel(group, specs, self.kernel_name)
        return self.compiled(source, self.kernel_name), views, layouts, [_position(group, node) for node in loaded]

    def attention_candidates(self, specs: list[TensorSpec], tilings: list[codegen.AttentionTiling] | None = None):
        """(tiling, source, inputs read at offsets, operand layouts) of the
        attention group's kernel for each of `tilings` (by default
        codegen.attention_tilings on the chip compiled for, best first)."""
        from tilemlir.language.kernel import resolve_target

        dim = specs[self.operands[0]].shape[-1]
        if codegen.padded_head_dim(dim) != dim:  # every operand and the output zero-padded
            layouts = ("padded",) * (len(self.operands) + 1)
        else:
            layouts = tuple(codegen.head_layout(specs[i]) or "bhsd" for i in self.operands)
            layouts += (codegen.head_layout(self.results[0]) or "bhsd",)
        if tilings is None:
            keys = specs[self.operands[1]].shape[-2]
            tilings = codegen.attention_tilings(resolve_target(self.target, self.engine),
                                                codegen.padded_head_dim(dim),
                                                codegen.attention_call(self.group.anchor).causal,
                                                keys if isinstance(keys, int) else None)
        for tiling in tilings:
            source, loaded = codegen.attention_kernel(self.group, specs, layouts, self.kernel_name, tiling)
            yield tiling, source, loaded, layouts

    def steps(self, k: int) -> codegen.GemmSteps:
        """The K loop of K = k on the chip compiled for."""
        from tilemlir.language.kernel import resolve_target

        return codegen.gemm_steps(resolve_target(self.target, self.engine), k)

    def image_layout(self) -> codegen.PhaseImage | None:
        """The layout a shifted convolution reads its traced image in (None
        for another group or convolution)."""
        if self.group.kind != "conv":
            return None
        image, weight = (TensorSpec.of(self.group.inputs[p].meta["val"]) for p in self.operands)
        stride, padding, dilation, transposed, _, groups = self.group.anchor.args[3:9]
        if transposed or groups != 1 or len(image.shape) != 4 or image.dtype != weight.dtype \
                or codegen.pointwise_conv(image, weight, stride, padding):
            return None
        try:
            shifted = codegen.shifted_conv(image, weight, stride, padding, dilation, tuple(self.group.shape[2:]),
                                           self.steps(math.prod(weight.shape[1:])).block_k)
        except (UserError, Unsupported):  # refused when its kernel is written (prepare)
            return None
        return shifted.image if shifted else None

    def compiled(self, source: str, name: str, fast_math: bool = False):
        """The compiled prim_func `name` of `source` (once per process); with
        `fast_math`, its exp2s on the hardware's unit (FAST_MATH_KEY)."""
        import tilemlir
        from tilemlir.language.kernel import FAST_MATH_KEY

        # The target and engine as the jit resolves them now (the environment
        # may name others than when a kernel of the same source was made).
        key = (source, str(self.target or os.environ.get("TILEMLIR_TARGET")),
               self.engine or os.environ.get("TILEMLIR_ENGINE"), fast_math)
        kernel = _COMPILED.get(key)
        if kernel is None:
            prim = load_prim_func(source, name)
            kernel = _COMPILED[key] = tilemlir.compile(prim, target=self.target, engine=self.engine,
                                                       pass_configs={FAST_MATH_KEY: True} if fast_math else None)
        return kernel

    def in_torch(self, tensors, specs, error) -> tuple:
        """The group's ops run by torch (its own copy of them), listed as a
        fallback; an error under TILEMLIR_TORCH_STRICT=1."""
        message = f"{self.name}: no kernel for inputs {[(s.shape, s.stride) for s in specs]}: {error}"
        if strict():
            raise TilemlirTorchError(f"{message} ({STRICT_ENV}=1)")
        if tuple(specs) not in self.variants:
            LOG.warning("tilemlir: %s; its ops run in torch", message)
            self.variants[tuple(specs)] = None
        if self.in_torch_module is None:
            self.in_torch_module = fx.GraphModule(torch.nn.Module(), self.group.nodes[0].graph)
        return tuple(self.in_torch_module(*tensors))

    def operand(self, tensor: torch.Tensor, spec: TensorSpec, layout) -> torch.Tensor:
        """A GEMM or attention operand as the kernel reads it: dense, in its
        memory order; a convolution's, the memory it spans, a 1x1 one's as
        2-D views (codegen.pointwise_conv), a shifted one's as its image's
        planes and its weight's taps (codegen.PhaseImage, codegen.Taps)."""
        if layout is None:
            return _span(tensor, spec)
        if layout == "pixels":  # a channels-last image as its pixels' rows of channels (a view)
            dense = tensor.permute(0, 2, 3, 1).reshape(-1, tensor.shape[1])
        elif isinstance(layout, codegen.PhaseImage):  # a copy where padded or strided
            dense = phase_planes(tensor, layout)
        elif layout == "rows":  # a 1x1 convolution's weight as [out, in]
            dense = tensor.reshape(tensor.shape[0], -1)
        elif isinstance(layout, codegen.Taps):  # a convolution's weight as [out, (kh, kw, in)]
            dense = conv_taps(tensor, layout.image)
        elif layout == "bshd":
            dense = tensor.transpose(1, 2).contiguous()
        elif layout == "padded":  # an attention operand's head zero-padded (codegen.padded_head_dim)
            dim = tensor.shape[-1]
            dense = F.pad(tensor, (0, codegen.padded_head_dim(dim) - dim)).contiguous()
        elif layout == "bhsd":
            dense = tensor.contiguous()
        else:
            dense = (tensor.transpose(-1, -2) if layout.transposed else tensor).contiguous()
        # Read by TMA on sm_90a, whose tensor maps need 16-byte aligned
        # addresses: a view that starts elsewhere is copied.
        return dense.clone() if dense.data_ptr() % TENSOR_MAP_ADDRESS_ALIGN else dense

    def __call__(self, *tensors):
        device = self.device
        if any(t.device != device for t in tensors):  # a CPU scalar beside GPU tensors, as torch allows
            tensors = tuple(t if t.device == device else self.moved(i, t) for i, t in enumerate(tensors))
        if self.border is not None:
            padded = bordered_image(tensors[0], self.border)
            if padded is not None and TensorSpec.of(padded) == self.results[0]:
                return (padded,)
        specs = [TensorSpec.of(t) for t in tensors]
        try:
            kernel, views, layouts, loaded = self.variant(specs)
        except (UserError, Unsupported) as error:
            # Strides the graph was not traced with, and a kernel for them refused.
            return self.in_torch(tuple(materialized(t) for t in tensors), specs, error)
        operand_layouts = layouts if layouts is not None else (None,) * len(self.operands)
        args = [self.operand(tensors[position], specs[position], layout)
                for position, layout in zip(self.operands, operand_layouts)]
        args += [_pixel_rows(tensors[index[0]]) if isinstance(index, tuple) else _span(tensors[index], specs[index])
                 for index in loaded]
        results, restride, copies = [], [], []
        for result, view in zip(self.results, views):
            if view == "pixels" or isinstance(view, codegen.PixelsAnd):  # a channels-last convolution
                out = torch.empty_strided(result.shape, result.stride, dtype=result.dtype, device=device)
                results.append(out)  # output as its pixels' rows (a view)
                args.append(out.permute(0, 2, 3, 1).view(-1, result.shape[1]))
                if isinstance(view, codegen.PixelsAnd):  # and the rows a shifted convolution reads, too
                    args.append(layout_rows(result, view.image, device))
                    setattr(out, IN_PLACE, Written(view.image, args[-1]))
                continue
            if view in ("span", None):  # written in the traced strides: a convolution's through its
                out = torch.empty_strided(result.shape, result.stride, dtype=result.dtype, device=device)
                results.append(out)
                if view == "span":  # span, attention's in its [B, H, S, D] memory order
                    args.append(_span(out, result))
                elif layouts[3] == "padded":  # written padded, its head's columns copied out
                    padded = out.new_empty(*result.shape[:3], codegen.padded_head_dim(result.shape[3]))
                    args.append(padded)
                    copies.append((out, padded[..., :result.shape[3]]))
                else:
                    args.append(out.transpose(1, 2) if layouts[3] == "bshd" else out)
                continue
            if isinstance(view, (codegen.PhaseImage, codegen.Border)):  # into the rows a convolution or pad reads
                out, rows = image_in_place(result, view, device)
                results.append(out)
                args.append(rows)
                continue
            if isinstance(view, codegen.InMemoryOrder):  # dense as traced, written in its memory order
                out = torch.empty_strided(result.shape, result.stride, dtype=result.dtype, device=device)
                results.append(out)
                args.append(torch.as_strided(out, view.shape, _row_major(view.shape)))
                continue
            out = torch.empty(result.shape, dtype=result.dtype, device=device)
            args.append(out.view(view))
            results.append(out)
            if out.stride() != result.stride and out.numel() > 1:
                restride.append(len(results) - 1)
        kernel(*args)
        for out, written in copies:
            out.copy_(written)
        for index in restride:  # the layout the graph was traced with (a later view may need it)
            result = self.results[index]
            strided = torch.empty_strided(result.shape, result.stride, dtype=result.dtype, device=device)
            results[index] = strided.copy_(results[index])
        return tuple(results)


class SplitKernel:
    """A split reduction's kernels (codegen.SplitReduction) called as one:
    with the inputs it reads and its outputs' views, as a single kernel of
    the group would be; the buffers of partial results between its stages
    are made at each call, on the outputs' device."""

    def __init__(self, split: codegen.SplitReduction, kernels: list):
        self.split, self.kernels = split, kernels
        self.engine = kernels[0].engine
        self.inputs = 1 + max((k for stage in split.stages for kind, k in stage.arguments if kind == "input"),
                              default=-1)

    def loaded_device(self):
        return [kernel.loaded_device() for kernel in self.kernels]

    def lowered_for_emulator(self):
        return [kernel.lowered_for_emulator() for kernel in self.kernels]

    def __call__(self, *args):
        values = {"input": args[:self.inputs], "output": args[self.inputs:]}
        device = values["output"][0].device
        values["partials"] = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in self.split.partials]
        for stage, kernel in zip(self.split.stages, self.kernels):
            kernel(*[values[kind][k] for kind, k in stage.arguments])


# The attribute of an image written in place or copied as it was stored
# (image_in_place, GroupKernel.__call__): a Written.
IN_PLACE = "_tilemlir_rows"


@dataclass(frozen=True)
class Written:
    """The rows an image was written into as `layout` passes them; with
    `placeholder`, the image tensor is NaNs standing for them (phase planes)."""

    layout: codegen.PhaseImage | codegen.Border
    rows: torch.Tensor
    placeholder: bool = False


def rows_fill(layout: codegen.PhaseImage | codegen.Border) -> float | None:
    """What the rows of `layout` hold before a kernel stores an image into
    them: zeros (the Border's fill) where it pads the image; None (as they
    are made) with no padding, where each row is a pixel the kernel stores."""
    if not any(layout.pad):
        return None
    return layout.fill if isinstance(layout, codegen.Border) else 0.0


# Rows of at least this many bytes are filled at their border only
# (`layout_rows`): up to four fills of the cells around the image, where one
# fill of every row would write the image's pixels too, which its kernel then
# writes again. Below it the one fill takes about as long as the four's
# launches: measured on an H100 (devpack profile of ResNet-50 b32 with CUDA
# graphs, 2026-12-06), a 13.8 MB padded image filled in 4.8 us, the stem's
# 53 MB -inf border in 25.4 us, the smallest fills about 1 us.
BORDER_FILL_BYTES = 16 << 20


def layout_rows(result: TensorSpec, layout: codegen.PhaseImage | codegen.Border, device) -> torch.Tensor:
    """The rows of an image of `result` as `layout` passes them (each plane
    of the padded image's pixels), as rows_fill says: at least every cell a
    pixel of the image does not land in (large rows: only the rows and
    columns of cells where some phase's pixel is padding, BORDER_FILL_BYTES)."""
    batch, channels, height, width = result.shape
    top, _, left, _ = layout.pad
    (sh, sw), (planes_h, planes_w) = layout.stride, layout.planes
    cells_h, cells_w = codegen.layout_cells(layout, height, width)
    shape, fill = (planes_h * planes_w * batch * cells_h * cells_w, channels), rows_fill(layout)
    if fill is None:
        return torch.empty(shape, dtype=result.dtype, device=device)
    if math.prod(shape) * result.dtype.itemsize < BORDER_FILL_BYTES:
        return torch.full(shape, fill, dtype=result.dtype, device=device)
    rows = torch.empty(shape, dtype=result.dtype, device=device)
    cells = rows.view(planes_h, planes_w, batch, cells_h, cells_w, channels)
    # Cell rows [first_i, last_i) hold every phase's pixel inside the image's rows
    # (i * sh >= top, i * sh + sh <= top + height); the same for columns.
    first_i, last_i = -(-top // sh), (top + height) // sh
    first_j, last_j = -(-left // sw), (left + width) // sw
    for border in (cells[:, :, :, :first_i], cells[:, :, :, last_i:],
                   cells[:, :, :, first_i:last_i, :first_j], cells[:, :, :, first_i:last_i, last_j:]):
        if border.numel():
            border.fill_(fill)
    return rows


def image_in_place(result: TensorSpec, layout: codegen.PhaseImage | codegen.Border,
                   device) -> tuple[torch.Tensor, torch.Tensor]:
    """(the output, the rows its kernel writes) of an output a shifted
    convolution reads as `layout` (codegen.writable_in_place) or a pad
    makes (codegen.Border): the rows (layout_rows), and the output as the
    view of its pixels, which carries them (IN_PLACE) for phase_planes or
    the pad to pass as they are."""
    rows = layout_rows(result, layout, device)
    if isinstance(layout, codegen.PhaseImage) and not codegen.is_view(layout):
        # Phase planes: the output is no view of them. It is passed as NaNs, which only the
        # kernels that read the planes get (plan_images_in_place: through phase_planes), or
        # torch, through `materialized`.
        out = torch.full((1, 1, 1, 1), float("nan"), dtype=result.dtype, device=device).expand(result.shape)
        setattr(out, IN_PLACE, Written(layout, rows, placeholder=True))
        return out, rows
    top, _, left, _ = layout.pad
    _, _, height, width = result.shape
    out = padded_image(rows, result.shape, layout.pad)[:, :, top:top + height, left:left + width]
    setattr(out, IN_PLACE, Written(layout, rows))
    return out, rows


def padded_image(rows: torch.Tensor, shape, pad: tuple[int, int, int, int]) -> torch.Tensor:
    """Rows of one plane as the [N, C, H', W'] image (channels-last) they hold:
    an image of `shape` padded by `pad` (top, bottom, left, right)."""
    batch, channels, height, width = shape
    top, bottom, left, right = pad
    return rows.view(batch, top + height + bottom, left + width + right, channels).permute(0, 3, 1, 2)


def materialized(tensor: torch.Tensor) -> torch.Tensor:
    """The image an output written as phase planes (image_in_place) stands
    for, made from them, for torch to read; any other tensor as it is."""
    written = getattr(tensor, IN_PLACE, None)
    if written is None or not written.placeholder:
        return tensor
    (batch, channels, height, width), layout = tensor.shape, written.layout
    top, _, left, _ = layout.pad
    (sh, sw) = layout.stride
    cells_h, cells_w = codegen.layout_cells(layout, height, width)
    planes = written.rows.view(sh, sw, batch, cells_h, cells_w, channels)  # every phase (writable_in_place)
    padded = written.rows.new_empty(batch, cells_h * sh, cells_w * sw, channels)
    for a in range(sh):
        for b in range(sw):
            padded[:, a::sh, b::sw] = planes[a, b]
    return padded[:, top:top + height, left:left + width].permute(0, 3, 1, 2)


def bordered_image(image: torch.Tensor, border: codegen.Border) -> torch.Tensor | None:
    """The padded tensor an image written inside `border` (image_in_place)
    is the view of, channels-last; None for another image."""
    written = getattr(image, IN_PLACE, None)
    if written is None or written.layout != border:
        return None
    return padded_image(written.rows, image.shape, border.pad)


def plan_images_in_place(groups: list[Group], kernels: list[GroupKernel]) -> None:
    """Marks each convolution output whose every reader is a shifted
    convolution reading it in one layout that its producer can write
    (codegen.writable_in_place), or which one 2-D pad alone reads (a group
    of that pad: codegen.Border), to be written in that layout
    (GroupKernel.padded): the readers then copy nothing. A kernel that is
    refused later leaves values as torch makes them: a reader in torch reads
    the view, a producer in torch gives a tensor that phase_planes copies
    and the pad pads. Phase planes (a strided reader's) are no view of the
    image: their readers are listed (GroupKernel.opaque_readers) so that
    compile_graph writes the image as traced where one of them is refused,
    and a reader that falls back at a call gets the image made from them
    (`materialized`)."""
    readers = {}  # the model graph's convolution and pad nodes -> the layout each reads its image in
    reader_kernels = {}
    for group, kernel in zip(groups, kernels):
        layout = kernel.image_layout() if kernel.border is None else kernel.border
        if layout is not None:
            node = group.anchor if kernel.border is None else group.nodes[0]
            readers[node], reader_kernels[node] = layout, kernel
    for group, kernel in zip(groups, kernels):
        if group.kind != "conv":
            continue
        for index, node in enumerate(group.outputs):
            as_image = [user for user in node.users if user.args and user.args[0] is node
                        and node not in user.args[1:] and node not in user.kwargs.values()]
            layouts = {readers.get(user) if user in as_image else None for user in node.users}
            layout = layouts.pop() if len(layouts) == 1 else None
            spec = TensorSpec.of(node.meta["val"])
            read = {readers[user] for user in as_image if isinstance(readers.get(user), codegen.PhaseImage)}
            read = read.pop() if len(read) == 1 else None
            # Read by others as well: written twice, where the output stays in the graph (a
            # tensor that leaves it may be changed in place, and its rows would not follow).
            if layout is None and isinstance(read, codegen.PhaseImage) and len(spec.shape) == 4 \
                    and codegen.copyable(read, spec.shape[1]) and all(user.op != "output" for user in node.users):
                kernel.copied[index] = read
            if len(spec.shape) == 4 and (isinstance(layout, codegen.Border) and len(node.users) == 1
                                         or isinstance(layout, codegen.PhaseImage)
                                         and codegen.writable_in_place(layout, spec.shape[1])):
                kernel.padded[index] = layout
                if isinstance(layout, codegen.PhaseImage) and not codegen.is_view(layout):
                    kernel.opaque_readers[index] = [reader_kernels[user] for user in node.users]


def phase_planes(image: torch.Tensor, layout: codegen.PhaseImage) -> torch.Tensor:
    """An image as a shifted convolution reads it (codegen.PhaseImage): in
    channels-last order, zero-padded, split by the stride's phases, taps
    folded in, as rows of channels. An image written in that layout in place
    (image_in_place) is passed as its rows; any other is copied, each pixel
    once: windows and folds by one strided copy of the padded image, phase
    planes into one zeroed buffer, each phase's pixels in one copy."""
    written = getattr(image, IN_PLACE, None)
    if written is not None and written.layout == layout:
        return written.rows
    image = materialized(image)  # planes of another layout (the target changed since they were planned)
    batch, channels, height, width = image.shape
    top, bottom, left, right = layout.pad
    pixels = image.permute(0, 2, 3, 1)
    if layout.patches or layout.fold > 1:
        # Padded, each pixel's channels to whole 8-byte words, in one copy (a fold's
        # last windows reach span pixels past the padded width: zeros too).
        widen = layout.pixel_channels - channels
        span = (_window_taps(layout) - 1) * layout.fold_step if layout.fold > 1 else 0
        pixels = F.pad(pixels, (0, widen, left, right + span, top, bottom)) \
            if any(layout.pad) or widen or span else pixels
    if layout.patches:  # each output pixel's window (r, t, c), in one copy
        (kh, kw, dh, dw), (sh, sw) = layout.patches, layout.stride
        windows = pixels.unfold(1, (kh - 1) * dh + 1, sh).unfold(2, (kw - 1) * dw + 1, sw)[..., ::dh, ::dw]
        return _into_channels(windows.permute(0, 1, 2, 4, 5, 3), layout.channels)
    if layout.fold > 1:
        return _folded_rows(pixels, layout)
    # The planes (a, b) one after the other, as if more images: pixel (i, j)
    # of plane (a, b) is the padded image's (i * sh + a, j * sw + b).
    (sh, sw), (planes_h, planes_w) = layout.stride, layout.planes
    cells_h, cells_w = codegen.layout_cells(layout, height, width)
    planes = pixels.new_zeros(planes_h, planes_w, batch, cells_h, cells_w, layout.channels)
    for a in range(planes_h):
        for b in range(planes_w):
            first_i, first_j = max(0, -(-(top - a) // sh)), max(0, -(-(left - b) // sw))
            phase = pixels[:, first_i * sh + a - top::sh, first_j * sw + b - left::sw]
            _copy_wide(planes[a, b, :, first_i:first_i + phase.shape[1], first_j:first_j + phase.shape[2],
                              :channels], phase)
    return planes.view(-1, layout.channels)


def _window_taps(layout: codegen.PhaseImage) -> int:
    """The pixels each of a folded layout's rows reads: where its zero
    channels are whole pixels, the taps they span as well (read, then
    selected away: _folded_rows), else its fold's."""
    taps, spare = divmod(layout.channels, layout.pixel_channels)
    return layout.fold if spare else taps


def _folded_rows(pixels: torch.Tensor, layout: codegen.PhaseImage) -> torch.Tensor:
    """A folded layout's rows (codegen.PhaseImage) from the padded pixels
    [N, H, W, pixel_channels] (W reaching the last window's last tap,
    _window_taps): the rows' phase planes one after the other, as if more
    images; in each, every sw-th pixel and the fold - 1 fold_step apart to
    its right, (tap, channel), then zeros. Each window is read straight from
    the pixels in 8-byte words (a pixel's channels are whole words) through
    a strided view. Where the zeros are whole taps of the window one select
    writes whole rows, the taps past the fold read and replaced by zeros
    (selected, never multiplied: an inf there is no NaN); else one copy
    writes the windows and one fill the zeros."""
    batch, high, wide, _ = pixels.shape
    (sh, sw), fold, step, planes = layout.stride, layout.fold, layout.fold_step, layout.planes[0]
    taps = _window_taps(layout)
    cells_h, cells_w = high // sh, (wide - (taps - 1) * step) // sw
    words, row = layout.pixel_channels // 4, wide * layout.pixel_channels // 4  # 8-byte words: a pixel's, a row's
    source = pixels.contiguous().view(torch.int64)
    cells = (planes, batch, cells_h, cells_w)
    windows = source.as_strided(cells + (taps, words), (row, high * row, sh * row, sw * words, step * words, 1),
                                source.storage_offset())
    rows = pixels.new_empty(planes * batch * cells_h * cells_w, layout.channels)
    target = rows.view(torch.int64).view(*cells, layout.channels // 4)
    if taps > fold:  # whole rows selected
        kept = (torch.arange(taps, device=pixels.device) < fold).view(taps, 1)
        torch.where(kept, windows, source.new_zeros(()), out=target.view(cells + (taps, words)))
        return rows
    target[..., :fold * words].unflatten(-1, (fold, words)).copy_(windows)
    target[..., fold * words:].zero_()
    return rows


def _into_channels(taps: torch.Tensor, channels: int) -> torch.Tensor:
    """[B, H, W, ...] values as rows of `channels` (the trailing dims flattened,
    then zeros), one copy."""
    rows = taps.new_empty(*taps.shape[:3], channels)
    used = math.prod(taps.shape[3:])
    rows[..., used:].zero_()
    _copy_wide(rows[..., :used].view(taps.shape), taps)
    return rows.view(-1, channels)


def _copy_wide(target: torch.Tensor, source: torch.Tensor) -> None:
    """`target.copy_(source)` of the same dtype, 8 bytes an element where
    both views' rows allow it (a strided copy moves an element per thread,
    so 16-bit channels moved four at a time take a quarter of the
    instructions)."""
    try:
        wide_target, wide_source = target.view(torch.int64), source.view(torch.int64)
    except RuntimeError:  # a row of a size or at an offset not a multiple of 8 bytes
        target.copy_(source)
        return
    wide_target.copy_(wide_source)


def conv_taps(weight: torch.Tensor, layout: codegen.PhaseImage) -> torch.Tensor:
    """A convolution's weight as [out, taps x channels] in the order of its
    image's channels as phase_planes passes them (codegen.Taps): a view of a
    channels-last weight whose channels need no padding (read in place at
    every call, so a weight changed in place is seen), else a copy."""
    taps = weight.permute(0, 2, 3, 1)
    if layout.pixel_channels > taps.shape[3]:  # as the image's pixels were widened (phase_planes)
        taps = F.pad(taps, (0, layout.pixel_channels - taps.shape[3]))
    if layout.patches:  # the whole window: (r, t, c)
        taps = taps.flatten(1).unsqueeze(1).unsqueeze(1)
    elif layout.fold > 1:  # a row's column taps side by side: (t, c)
        taps = taps.flatten(2).unsqueeze(2)
    if layout.channels > taps.shape[3]:
        taps = F.pad(taps, (0, layout.channels - taps.shape[3]))
    return taps.reshape(weight.shape[0], -1)


def _pixel_rows(tensor: torch.Tensor) -> torch.Tensor:
    """A dense channels-last tensor as its pixels' rows of channels (a view;
    a copy where it starts off the alignment the kernel's vector loads need)."""
    rows = tensor.permute(0, 2, 3, 1).reshape(-1, tensor.shape[1])
    return rows.clone() if rows.data_ptr() % TENSOR_MAP_ADDRESS_ALIGN else rows


def _position(group: Group, node) -> int | tuple[int, str]:
    """Where a kernel's loaded input is among the group's inputs; a
    codegen.PixelRows one's with "pixels" (passed as its pixels' rows)."""
    if isinstance(node, codegen.PixelRows):
        return group.inputs.index(node.node), "pixels"
    return group.inputs.index(node)


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides of a dense row-major tensor of `shape`."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def _span(tensor: torch.Tensor, spec: TensorSpec) -> torch.Tensor:
    """A 1-D view of the memory a tensor (of `spec`) reaches, from its first element."""
    return torch.as_strided(tensor, (max(spec.span, 1),), (1,), tensor.storage_offset())


# --------------------------------------------------------------------------
# The graph
# --------------------------------------------------------------------------

def compile_graph(gm: fx.GraphModule, example_inputs, *, target=None, engine=None) -> fx.GraphModule:
    """The ATen graph with each fusion group replaced by a call of its kernel."""
    graph = gm.graph
    partition.reductions_to_trailing_dims(graph)
    groups, fallbacks = partition.partition(graph)
    kernels = [GroupKernel(group, f"fused_{index}_{group.kind}", target, engine)
               for index, group in enumerate(groups)]
    plan_images_in_place(groups, kernels)
    def prepared(group: Group, kernel: GroupKernel) -> bool:
        try:
            prepare(group, kernel)
        except Unsupported as reason:
            fallbacks.extend(group.nodes)
            LOG.debug("%s refused: %s", kernel.name, reason)
            for node in group.nodes:
                node.meta["tilemlir_refused"] = str(reason)
            return False
        return True
    kept = [(group, kernel) for group, kernel in zip(groups, kernels) if prepared(group, kernel)]
    # Outputs planned as phase planes (no view of the image, which torch cannot
    # read) that a refused kernel would read, run by torch, are written as traced.
    # Until none changes: a producer written afresh may be refused in turn.
    running, changed = {id(kernel) for _, kernel in kept}, True
    while changed:
        changed = False
        for group, kernel in kept:
            refused = [index for index, readers in kernel.opaque_readers.items()
                       if any(id(reader) not in running for reader in readers)]
            for index in refused:
                del kernel.padded[index], kernel.opaque_readers[index]
            if refused and id(kernel) in running:
                changed = True
                kernel.variants.clear()
                if not prepared(group, kernel):
                    running.discard(id(kernel))
    kept = [(group, kernel) for group, kernel in kept if id(kernel) in running]
    # A node whose result has no elements (`torch.tensor([])`, a cache's
    # first value) computes nothing: torch makes it, strict or not.
    computing = [n for n in fallbacks if n.target not in partition.METADATA and not _no_elements(n)]
    if computing:
        symbolic = any(isinstance(n.meta.get("val"), torch.Tensor) and partition.shape_of(n) is None
                       for n in graph.nodes if n.op == "placeholder")
        listed = ("the graph has symbolic shapes, which no kernel takes (compile with dynamic=False); "
                  if symbolic else "") + ", ".join(f"{describe(n)} ({where(n)}"
                           + (f"; {n.meta['tilemlir_refused']}" if "tilemlir_refused" in n.meta else "") + ")"
                           for n in computing)
        if strict():
            raise TilemlirTorchError(f"{len(computing)} node(s) have no tile kernel ({STRICT_ENV}=1): {listed}")
        LOG.warning("tilemlir: %d node(s) run in torch: %s", len(computing), listed)
    replaced: dict[fx.Node, fx.Node] = {}
    for group, kernel in kept:
        rewrite(graph, group, kernel, replaced)
    topological_order(graph)
    graph.eliminate_dead_code()
    graph.lint()
    gm.recompile()
    return gm


def _no_elements(node: fx.Node) -> bool:
    shape = partition.shape_of(node)
    return shape is not None and 0 in shape


def prepare(group: Group, kernel: GroupKernel) -> None:
    """Writes the group's kernel for the traced inputs (so that an op no
    kernel can express is refused now, and the fallback decided per graph)."""
    specs = [TensorSpec.of(node.meta["val"]) for node in group.inputs]
    try:
        # Compiled now, not at the first call: a kernel the compiler refuses falls back.
        compile_now(kernel.variant(specs)[0])
    except UserError as error:
        raise Unsupported(f"its kernel did not compile: {error}") from None


def compile_now(kernel) -> None:
    """Compiles `kernel` (a JITKernel or SplitKernel) for the engine it runs
    on, where that engine runs the target's code (the reference engine
    compiles nothing); raises the compiler's UserError where it refuses."""
    if kernel.engine == "device":
        kernel.loaded_device()
    elif kernel.engine == "emulator":
        kernel.lowered_for_emulator()


def rewrite(graph: fx.Graph, group: Group, kernel: GroupKernel, replaced: dict) -> None:
    """The group's nodes replaced by one call of its kernel and an item per output."""
    with graph.inserting_after(group.nodes[-1]):
        call = graph.call_function(kernel, tuple(replaced.get(n, n) for n in group.inputs))
    cursor = call
    for index, node in enumerate(group.outputs):
        with graph.inserting_after(cursor):
            item = cursor = graph.call_function(_item, (call, index))
        item.meta["val"] = node.meta.get("val")
        node.replace_all_uses_with(item, delete_user_cb=lambda user, members=set(group.nodes): user not in members)
        replaced[node] = item
    for node in reversed(group.nodes):
        if not node.users:
            graph.erase_node(node)


def topological_order(graph: fx.Graph) -> None:
    """Moves nodes after what they use (a group's call sits after its last
    node, and a user of an earlier output may precede it), keeping the order
    otherwise."""
    order, placed, entered = [], set(), set()
    for root in list(graph.nodes):
        stack = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if node in placed:
                continue
            if ready:
                placed.add(node)
                order.append(node)
                continue
            if node in entered:  # partition never makes one; never loop on one
                raise TilemlirTorchError(f"internal error: the fused graph has a cycle through {node.name}")
            entered.add(node)
            stack.append((node, True))
            stack.extend((source, False) for source in reversed(node.all_input_nodes) if source not in placed)
    cursor = None
    for node in order:
        if cursor is not None and cursor.next is not node:
            cursor.append(node)
        cursor = node


def _item(values, index):
    return values[index]


def keep_attention_whole(gm: fx.GraphModule, example_inputs) -> None:
    """Dynamo's calls of scaled_dot_product_attention, as tilemlir::attention
    (an inference graph only: the op has no backward)."""
    if torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in example_inputs):
        return
    functional = torch.nn.functional.scaled_dot_product_attention
    calls = [node for node in gm.graph.nodes if node.op == "call_function"
             and node.target in (functional, torch._C._nn.scaled_dot_product_attention)]
    for node in calls:
        node.target = ops.attention_op()
    if calls:
        gm.recompile()


# torch.compile's modes, as they set CUDA graph replay (graphs.py): the
# others leave it at its default.
MODES = {"default": None, "reduce-overhead": True, "max-autotune": None, "max-autotune-no-cudagraphs": False}
OPTIONS = ("target", "engine", "cudagraphs")


def settings(keywords: dict) -> dict:
    """The backend's settings from what torch.compile passes it:
    `options={...}` (as `options`) and `mode=`; also accepted as keywords
    of their own (`functools.partial(backend, target=...)`). Unknown ones
    are errors, as Inductor's are."""
    keywords = dict(keywords)
    given = dict(keywords.pop("options", None) or {})
    mode = keywords.pop("mode", "default")
    given.update(keywords)
    unknown = sorted(set(given) - set(OPTIONS))
    if unknown:
        raise TilemlirTorchError(f"unknown option(s) {', '.join(map(repr, unknown))} of the tilemlir backend "
                                 f"(known: {', '.join(OPTIONS)})")
    if mode not in MODES:
        raise TilemlirTorchError(f"unknown mode {mode!r} (torch.compile's modes: {', '.join(MODES)})")
    if MODES[mode] is not None:
        given.setdefault("cudagraphs", MODES[mode])
    return given


def backend(gm: fx.GraphModule, example_inputs, **options):
    """The entry point torch.compile calls (`backend="tilemlir"`)."""
    from torch._dynamo.backends.common import aot_autograd

    given = settings(options)
    keep_attention_whole(gm, example_inputs)

    target, engine = given.get("target"), given.get("engine")
    replay = graphs.wanted(given)
    # Kernels are made per shape: a new shape recompiles the graph rather
    # than making it symbolic (which no kernel here takes).
    torch._dynamo.config.automatic_dynamic_shapes = False

    def forward(module, inputs):
        compiled = compile_graph(module, inputs, target=target, engine=engine)
        if replay and any(isinstance(t, torch.Tensor) and t.is_cuda for t in inputs):
            # The parameters and buffers among the inputs, as AOT autograd knows them.
            context = torch._guards.TracingContext.try_get()
            metadata = getattr(context, "fw_metadata", None)
            return graphs.GraphedForward(compiled, getattr(metadata, "static_input_indices", None))
        return compiled

    def backward(module, inputs):  # no graph replay: the forward's static inputs are not the backward's
        return compile_graph(module, inputs, target=target, engine=engine)

    return aot_autograd(fw_compiler=forward, bw_compiler=backward, decompositions=decompositions())(gm, example_inputs)
