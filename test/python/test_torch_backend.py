"""torch.compile(model, backend="tilemlir") on small fp16 models in eval mode:
each compiled with TILEMLIR_TORCH_STRICT=1 (no node that computes values falls
back to torch), run on the reference engine (and the gfx942 emulator) for
amdgpu:gfx942, and compared with the model run in float64 by torch."""

from __future__ import annotations

import copy
import dataclasses
import logging

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tilemlir.cost.facts import model_facts
from tilemlir.targets.model import UNKNOWN
from tilemlir.torch_backend import TilemlirTorchError, backend, partition

RELATIVE = 2e-2  # of the largest magnitude of the float64 result


@pytest.fixture(autouse=True)
def _engine(monkeypatch):
    monkeypatch.setenv("TILEMLIR_TARGET", "amdgpu:gfx942")
    monkeypatch.setenv("TILEMLIR_ENGINE", "reference")
    monkeypatch.setenv("TILEMLIR_TORCH_STRICT", "1")
    torch._dynamo.reset()
    torch.manual_seed(0)


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class SwiGLU(nn.Module):
    """LLaMA's MLP block: RMSNorm, gate and up projections, SiLU(gate) * up, down, residual."""

    def __init__(self, dim=64, hidden=96):
        super().__init__()
        self.norm = RMSNorm(dim)
        self.gate, self.up = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        y = self.norm(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class CausalGQA(nn.Module):
    """Causal grouped-query attention, K and V repeated to the query heads explicitly."""

    def __init__(self, dim=64, heads=4, kv_heads=2):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * kv_heads * self.head_dim)
        self.o = nn.Linear(dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        q = self.q(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, s, 2, self.kv_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        repeat = self.heads // self.kv_heads
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(out.transpose(1, 2).reshape(b, s, d))


class RotaryQuery(nn.Module):
    """A query projection with rotary position embedding (rotate-half by
    `cat`, as LLaMA writes it), the input concatenated after it, a stack and
    a mean over every element."""

    def __init__(self, dim=32):
        super().__init__()
        self.q = nn.Linear(dim, dim)

    def forward(self, x):
        q = self.q(x)
        x1, x2 = q.chunk(2, -1)
        angles = torch.arange(x.shape[1], dtype=torch.float32)[:, None] * torch.arange(1, 33) * 0.01
        y = q * angles.cos().to(q.dtype) + torch.cat((-x2, x1), dim=-1) * angles.sin().to(q.dtype)
        z = torch.cat([y, x[:, :3], x], 1)
        return torch.stack([z, 2 * z], dim=2).sum(2) + x.mean()


class TinyBert(nn.Module):
    """Word, position and token-type embeddings, LayerNorm, an encoder layer, the pooler."""

    def __init__(self, vocab=50, dim=64, seq=40):
        super().__init__()
        self.words, self.positions, self.types = nn.Embedding(vocab, dim), nn.Embedding(seq, dim), nn.Embedding(2, dim)
        self.norm = nn.LayerNorm(dim)
        self.layer = nn.TransformerEncoderLayer(dim, 4, 128, dropout=0.0, batch_first=True, activation="gelu")
        self.pooler = nn.Linear(dim, dim)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1]).expand_as(ids)
        x = self.norm(self.words(ids) + self.positions(positions) + self.types(torch.zeros_like(ids)))
        return torch.tanh(self.pooler(self.layer(x)[:, 0]))


class ResNetStem(nn.Module):
    """A ResNet stem (7x7 stride-2 convolution, batch norm, ReLU, 3x3 max pool) and a
    bottleneck-style block with a strided 1x1 projection, average pool, classifier."""

    def __init__(self, c=16):
        super().__init__()
        self.stem, self.bn0 = nn.Conv2d(3, c, 7, 2, 3, bias=False), nn.BatchNorm2d(c)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, 2 * c, 1, stride=2), nn.BatchNorm2d(2 * c)
        self.down = nn.Conv2d(c, 2 * c, 1, stride=2, bias=False)
        self.fc = nn.Linear(2 * c, 10)
        for norm in (self.bn0, self.bn1, self.bn2):  # statistics a trained model would have
            norm.running_mean.uniform_(-0.5, 0.5)
            norm.running_var.uniform_(0.5, 2.0)
            norm.weight.data.uniform_(0.5, 1.5)
            norm.bias.data.uniform_(-0.5, 0.5)

    def forward(self, x):
        x = self.pool(F.relu(self.bn0(self.stem(x))))
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(F.relu(self.down(x) + y), 1), 1))


def check(model: nn.Module, *inputs, backend_name=backend, channels_last=False):
    """The compiled fp16 model against the float64 one; a second call's result is identical."""
    model = model.eval()
    with torch.no_grad():
        expected = model.double()(*[x.double() if x.is_floating_point() else x for x in inputs])
        model = model.half()
        half = [x.half() if x.is_floating_point() else x for x in inputs]
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
            half = [x.to(memory_format=torch.channels_last) for x in half]
        compiled = torch.compile(model, backend=backend_name)
        first = compiled(*half)
        second = compiled(*half)
    assert first.dtype == torch.float16
    error = (first.double() - expected).abs().max() / expected.abs().max()
    assert error <= RELATIVE, error
    assert torch.equal(first, second)


def conv_sources() -> list[str]:
    """The sources of the convolution kernels compiled in this process (dynamo._COMPILED)."""
    from tilemlir.torch_backend import dynamo

    return [key[0] for key in dynamo._COMPILED if "fused_conv" in key[0]]


def on_engine(monkeypatch, target: str, engine: str) -> None:
    """From here on the backend compiles for `target` and runs on `engine`,
    with no kernel compiled before kept (dynamo._COMPILED)."""
    from tilemlir.torch_backend import dynamo

    monkeypatch.setenv("TILEMLIR_TARGET", target)
    monkeypatch.setenv("TILEMLIR_ENGINE", engine)
    monkeypatch.setattr(dynamo, "_COMPILED", {})


def images_copied(monkeypatch) -> list:
    """The shapes of the images dynamo copies (each _copy_wide's source), as the test goes on."""
    from tilemlir.torch_backend import dynamo

    copied = []
    copy = dynamo._copy_wide
    monkeypatch.setattr(dynamo, "_copy_wide", lambda target, source: copied.append(source.shape) or copy(target, source))
    return copied


def test_transformer_encoder_layer():
    # nn.TransformerEncoderLayer in eval takes torch's fused fast path, which the backend decomposes.
    check(nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True), torch.randn(2, 24, 64))


def test_norm_first_encoder_layer_with_gelu():
    layer = nn.TransformerEncoderLayer(64, 4, 96, dropout=0.0, batch_first=True, norm_first=True, activation="gelu")
    check(layer, torch.randn(3, 20, 64))


def test_swiglu_mlp():
    check(SwiGLU(), torch.randn(2, 17, 64))


def test_causal_grouped_query_attention():
    check(CausalGQA(), torch.randn(2, 37, 64))


def test_concatenation_and_a_whole_mean():
    check(RotaryQuery(), torch.randn(2, 7, 32))


def test_concatenations_of_mixed_floats_and_of_integers():
    """cat promotes fp16 beside fp32 to fp32, as torch; integers stay exact."""
    a, b, i = torch.randn(3, 4).half(), torch.randn(3, 2), torch.arange(8, dtype=torch.int32).view(2, 4)

    def floats(a, b):
        return torch.cat([a, b], 1) * 2

    def integers(a, i):
        return torch.cat([a.int(), i], 0) + 1
    with torch.no_grad():
        got = torch.compile(floats, backend=backend)(a, b)
        assert got.dtype == torch.float32 and torch.equal(got, floats(a, b))
        assert torch.equal(torch.compile(integers, backend=backend)(a, i), integers(a, i))


def test_a_computed_operand_of_cat_used_after_it_is_stored_first():
    """z = 2w is both cat's operand and added after it: its group is not
    merged into the cat's (cat reads its operands from memory)."""
    def f(w, x):
        z = w * 2
        return torch.cat([z, x], 1) + z
    w, x = torch.randn(4, 1).half(), torch.randn(4, 5).half()
    with torch.no_grad():
        assert torch.equal(torch.compile(f, backend=backend)(w, x), f(w.float(), x.float()).half())


class GroupNormBlock(nn.Module):
    """A convolution, GroupNorm and SiLU (a diffusion U-Net's block), and the
    values of a max and a min along a dim."""

    def __init__(self):
        super().__init__()
        self.conv, self.norm = nn.Conv2d(8, 16, 3, padding=1), nn.GroupNorm(4, 16)

    def forward(self, x):
        y = F.silu(self.norm(self.conv(x)))
        return y + y.max(1, keepdim=True).values - y.min(-1).values.unsqueeze(-1)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
def test_group_norm_and_max_along_a_dim(channels_last):
    check(GroupNormBlock(), torch.randn(2, 8, 6, 5), channels_last=channels_last)


def test_max_of_booleans_with_its_indices_runs_in_torch(monkeypatch):
    """argmax refuses booleans: max(dim) of them is not decomposed, and runs in torch whole."""
    monkeypatch.setenv("TILEMLIR_TORCH_STRICT", "0")
    x = torch.randn(3, 4, 5) > 0
    got, expected = torch.compile(lambda y: torch.max(y, 1), backend=backend)(x), torch.max(x, 1)
    assert torch.equal(got.values, expected.values) and torch.equal(got.indices, expected.indices)


def test_argmax_and_argmin_are_reductions():
    """argmax and argmin (max(dim)'s and min(dim)'s indices too) as two
    reductions in one kernel: the first position of the extreme, a NaN
    counting as the extreme as in torch, over one dim, every dim, or with
    the dim kept; of integers too."""
    x = torch.randn(4, 6, 5).half()
    x[0, 2, :] = 1.0  # ties: the first one
    x[1, :, 3] = float("nan")
    x[2, 4, 1] = float("nan")
    compiled_matches(lambda x: (x.argmax(-1), x.argmin(1), x.argmax(0, keepdim=True)), x)
    compiled_matches(lambda x: (x.argmax(), x.argmin(keepdim=True), torch.max(x, 2).indices), x)
    compiled_matches(lambda x: (x.argmax(1), *torch.min(x, -1)), torch.randint(-3, 4, (5, 7)))


def test_booleans_order_as_zero_and_one():
    """True is the larger bool (as in torch and Python): ordered comparisons
    and extremes of bools (signed 1-bit integers would take True for -1)."""
    x = torch.tensor([[0.0, 0.5, -0.0, 3.0, -2.0]]).half()
    compiled_matches(lambda x: ((x > 0) > (x < 2), (x > 0) <= (x < 2), torch.maximum(x > 0, x < 2),
                                torch.minimum(x > 0, x < 2)), x)


def test_extremes_of_uint8_run_in_torch(monkeypatch, caplog):
    """uint8's amax, argmax and max(dim) have no kernel (the kernel language
    compares its elements as signed): they run in torch, listed; a sum of
    uint8 is a kernel."""
    monkeypatch.setenv("TILEMLIR_TORCH_STRICT", "0")
    x = torch.tensor([[0, 255, 7], [255, 0, 255]], dtype=torch.uint8)
    compiled_matches(lambda x: (x.amax(1), x.argmax(1), *torch.max(x, 0), x.sum(1)), x)
    assert "aten.argmax" in caplog.text and "aten.sum" not in caplog.text


def test_max_pooling_with_grad_enabled():
    """Called without no_grad (parameters that require grad), the forward
    graph keeps max pooling's indices for its backward: they are argmaxes,
    computed by kernels too (strict mode)."""
    model = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.MaxPool2d(3, 2, 1)).eval()
    x = torch.randn(2, 3, 15, 13)
    expected = model.double()(x.double()).detach()
    model = model.half()
    got = torch.compile(model, backend=backend)(x.half())
    assert got.requires_grad and got.dtype == torch.float16
    assert (got.detach().double() - expected).abs().max() <= RELATIVE * expected.abs().max()


@pytest.mark.parametrize("case", ["columns", "rows-negative", "adjacent-broadcast", "apart", "last-token",
                                  "upsample-x2", "upsample-size", "upsample-uneven"])
def test_indexing_by_tensors_and_nearest_upsampling(case):
    """x[..., index tensors, ...] reads the source at the indices' values
    (negative ones from the end; broadcast dims in place where the indexed
    dims are adjacent, first where they are not); nearest upsampling is
    such an index (or, by whole factors, a copy of an expanded view)."""
    x = torch.randn(3, 5, 4, 6).half()
    cases = {
        "columns": lambda x: x[:, torch.tensor([2, 0, -1, 4])] * 2,
        "rows-negative": lambda x: x[torch.tensor([2, 0, -1, 1])] + 1,
        "adjacent-broadcast": lambda x: x[:, :, torch.tensor([[1], [3]]), torch.tensor([0, 5, -2])] - 1,
        "apart": lambda x: x[torch.tensor([[1], [2]]), :, torch.tensor([0, 3, -2])] * 3,
        "last-token": lambda x: x[torch.arange(3), torch.tensor([2, 5, 3]) - 1] + 0,
        "upsample-x2": lambda x: F.interpolate(x, scale_factor=2, mode="nearest") * 1,
        "upsample-size": lambda x: F.interpolate(x, size=(8, 18), mode="nearest") * 1,
        "upsample-uneven": lambda x: F.interpolate(x, size=(7, 9), mode="nearest") * 1,
    }
    with torch.no_grad():
        got = torch.compile(cases[case], backend=backend)(x)
    assert torch.equal(got, cases[case](x.float()).half())


def test_remainders_and_index_select():
    """remainder has the divisor's sign, as Python's and torch's, in integers
    and floats; index_select is the index it is."""
    a = torch.tensor([-7, -3, 0, 3, 7, 8]).repeat(2, 1)
    b = torch.tensor([3, -3, 2, -2, 5, -4])
    x = torch.randn(2, 6).half() * 5

    def f(a, b, x):
        return (a % b) * 2 + (a % -3), torch.remainder(x, 1.5) + torch.remainder(x, b.half()), \
            x.index_select(1, torch.tensor([5, 0, 2])) + x[:, torch.arange(3) % 2]
    with torch.no_grad():
        got = torch.compile(f, backend=backend)(a, b, x)
    expected = f(a, b, x.float())
    assert torch.equal(got[0], expected[0])
    for g, e in zip(got[1:], expected[1:]):
        assert (g.float() - e).abs().max() <= 1e-2 * e.abs().max()


def test_vector_norms():
    def f(x):
        return F.normalize(x, dim=-1) + torch.linalg.vector_norm(x, 1, dim=1, keepdim=True) \
            + torch.linalg.vector_norm(x, float("inf"), dim=(1, 2), keepdim=True) + torch.linalg.vector_norm(x, 3.0)
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        got = torch.compile(f, backend=backend)(x.half())
        # Summed in f32 as torch sums it: 8 x 300^2 overflows fp16, its root does not.
        big = torch.full((2, 8), 300.0).half()
        norms = torch.compile(lambda h: torch.linalg.vector_norm(h, dim=1), backend=backend)(big)
    expected = f(x.double())
    assert (got.double() - expected).abs().max() <= RELATIVE * expected.abs().max()
    assert torch.equal(norms, torch.linalg.vector_norm(big, dim=1))


def test_tiny_bert_by_its_registered_name():
    check(TinyBert(), torch.randint(0, 50, (2, 40)), backend_name="tilemlir")


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
def test_resnet_stem_and_block(channels_last):
    # Convolutions as implicit GEMMs with batch norm, ReLU and the residual add
    # in their epilogues; pooling as reductions over strided windows.
    check(ResNetStem(), torch.randn(2, 3, 32, 29), channels_last=channels_last)


class PointwiseBottleneck(nn.Module):
    """1x1 convolutions of stride 1 (ResNet's bottleneck projections) with
    batch norm, ReLU and the residual add after them."""

    def __init__(self, c=16):
        super().__init__()
        self.expand, self.bn1 = nn.Conv2d(c, 3 * c, 1, bias=False), nn.BatchNorm2d(3 * c)
        self.reduce, self.bn2 = nn.Conv2d(3 * c, c, 1), nn.BatchNorm2d(c)
        for norm in (self.bn1, self.bn2):
            norm.running_mean.uniform_(-0.5, 0.5)
            norm.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        return F.relu(x + self.bn2(self.reduce(F.relu(self.bn1(self.expand(x))))))


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
def test_pointwise_convolutions_of_a_channels_last_image_are_gemms(monkeypatch, channels_last):
    """Channels-last, a 1x1 stride-1 convolution reads the image as its pixels'
    rows of channels and the weight as [out, in], tile by tile
    (codegen.pointwise_conv), and writes its channels-last output as tiles of
    those rows: 2 x 5 x 7 pixels, no multiple of the block. NCHW is passed
    as channels-last planes (a shifted convolution) and written element by
    element in its own strides."""
    from tilemlir.torch_backend import dynamo

    monkeypatch.setattr(dynamo, "_COMPILED", {})
    check(PointwiseBottleneck(), torch.randn(2, 16, 5, 7), channels_last=channels_last)
    sources = conv_sources()
    assert len(sources) == 2
    assert ["T.copy(O0_l, O0[bx * " in source for source in sources] == [channels_last] * 2
    # The residual, channels-last too, is read as tiles of its pixels' rows (codegen.PixelRows).
    assert sorted("T.copy(I0[bx * " in source for source in sources) == [False, channels_last]
    assert all("T.Pipelined" in source and "transpose_B=True" in source for source in sources)


class ReadResidual(nn.Module):
    """A 1x1 convolution plus a channels-last tensor of its output's shape,
    read at its own coordinates or at others (permuted channels or columns,
    shifted by a pad, gathered)."""

    def __init__(self, read: str, channels: int = 16):
        super().__init__()
        self.conv, self.read = nn.Conv2d(channels, channels, 1, bias=False), read
        self.register_buffer("channel_order", torch.randperm(channels))
        self.register_buffer("column_order", torch.arange(6).flip(0))

    def forward(self, x, r):
        y = self.conv(x)
        if self.read == "channels-permuted":
            return y + r[:, self.channel_order]
        if self.read == "columns-flipped":
            return y + r[:, :, :, self.column_order]
        if self.read == "shifted":
            return y + F.pad(r, (1, -1))
        if self.read == "gathered":
            return y + torch.gather(r, 1, torch.full_like(r, 3, dtype=torch.long))
        return y + r


@pytest.mark.parametrize("read", ["as-is", "channels-permuted", "columns-flipped", "shifted", "gathered"])
def test_a_residual_of_the_outputs_shape_read_anywhere(monkeypatch, read):
    """Read at the output's coordinates it is a tile of its pixels' rows
    (codegen.PixelRows); read at others, the same rows element by element."""
    from tilemlir.torch_backend import dynamo

    monkeypatch.setattr(dynamo, "_COMPILED", {})
    check(ReadResidual(read), torch.randn(2, 16, 5, 6), torch.randn(2, 16, 5, 6), channels_last=True)
    (source,) = conv_sources()
    assert "T.copy(I0[bx * " in source


@pytest.mark.parametrize("channels", [16, 24])
def test_pointwise_convolutions_with_sm90_steps_on_the_reference_engine(monkeypatch, channels):
    """The K loop an sm_90a kernel gets (block K 64 in 4 stages where K holds
    two steps, else 32 in 2), run by the reference engine: C below block K,
    and 200 output channels, no multiple of the block."""
    monkeypatch.setenv("TILEMLIR_TARGET", "nvidia:sm_90a")
    monkeypatch.setenv("TILEMLIR_ENGINE", "reference")
    model = nn.Sequential(nn.Conv2d(channels, 200, 1), nn.BatchNorm2d(200), nn.ReLU(),
                          nn.Conv2d(200, channels, 1))
    check(model, torch.randn(2, channels, 3, 5), channels_last=True)


class ConvBlock(nn.Module):
    """A convolution of any geometry, batch norm and ReLU after it."""

    def __init__(self, channels, kernel, stride, padding, dilation, out=40):
        super().__init__()
        self.conv = nn.Conv2d(channels, out, kernel, stride, padding, dilation=dilation)
        self.norm = nn.BatchNorm2d(out)
        self.norm.running_mean.uniform_(-0.5, 0.5)
        self.norm.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        return F.relu(self.norm(self.conv(x)))


@pytest.mark.parametrize("channels,kernel,stride,padding,dilation,channels_last", [
    (32, 3, 1, 1, 1, True), (24, 3, 2, 1, 1, False), (3, 7, 2, 3, 1, True), (16, 1, 2, 0, 1, True),
    (40, (3, 2), (2, 3), (2, 0), (1, 2), True), (32, 3, 1, 0, 2, False), (8, 2, 3, 1, 1, True),
], ids=["3x3", "3x3-stride-2-nchw", "stem-7x7-3-channels", "1x1-stride-2", "rectangular-dilated",
        "dilated-nchw", "stride-3"])
def test_convolutions_as_shifted_gemms(monkeypatch, channels, kernel, stride, padding, dilation, channels_last):
    """Every convolution of a 16-bit image is a pipelined loop of tile copies
    (codegen.shifted_conv): the image zero-padded, split into the stride's
    phase planes (or, of few channels, with column taps or whole windows
    folded into them) and its channels padded to a multiple of 16, each K
    step a tap's tile of rows at a fixed offset; 11 x 10 images, so that
    border rows of the planes are computed and not stored."""
    from tilemlir.torch_backend import dynamo

    monkeypatch.setattr(dynamo, "_COMPILED", {})
    check(ConvBlock(channels, kernel, stride, padding, dilation), torch.randn(2, channels, 11, 10),
          channels_last=channels_last)
    (source,) = conv_sources()
    assert "T.Pipelined" in source and "T.Parallel(64, 32)" not in source


def shifted_gemm(conv, rows: torch.Tensor, taps: torch.Tensor, out: tuple[int, int, int, int]) -> torch.Tensor:
    """The output [N, out channels, H, W] of a ShiftedConv over its image's rows and
    weight's taps, as its kernel computes it: each K step a tap's rows at its offset."""
    batch, _, out_h, out_w = out
    cells_h, cells_w = conv.cells
    kh, kw = conv.kernel
    channels = conv.image.channels
    grid = torch.arange(((batch - 1) * cells_h + out_h - 1) * cells_w + out_w)  # up to the last output pixel's row
    total = torch.zeros(batch * cells_h * cells_w, taps.shape[0], dtype=torch.float64)
    for tap in range(kh * kw):
        offset = eval(conv.tap_offset(str(tap)))
        total[grid] += rows[grid + offset].double() @ taps[:, tap * channels:(tap + 1) * channels].double().t()
    return total.view(batch, cells_h, cells_w, -1)[:, :out_h, :out_w].permute(0, 3, 1, 2)


def test_a_stems_windows_are_whole_words():
    """ResNet's stem (7x7, stride 2, 3 channels) as a 7 x 1 convolution over
    windows of its column taps every 2 columns, in 2 phase planes of rows:
    each pixel's channels widened to 4 (8 bytes), so the windows copy 8
    bytes an element, and 7 x 4 = 28 padded to 32, 7 K steps of 32; the
    rows (2 x 2 x 13 x 12 of 32, against 2 x 10 x 9 of 224 as whole
    windows) and the weight's taps give the convolution."""
    from tilemlir.torch_backend import codegen, dynamo

    x = torch.randn(2, 3, 20, 18).half().to(memory_format=torch.channels_last)
    w = torch.randn(8, 3, 7, 7).half()
    conv = codegen.shifted_conv(codegen.TensorSpec.of(x), codegen.TensorSpec.of(w), (2, 2), (3, 3), (1, 1),
                                (10, 9), 64)
    assert (conv.image.channels, conv.image.pixel_channels, conv.block_k) == (32, 4, 32)
    assert (conv.kernel, conv.stride, conv.cells, conv.image.planes) == ((7, 1), (2, 1), (13, 12), (2, 1))
    rows, taps = dynamo.phase_planes(x, conv.image), dynamo.conv_taps(w, conv.image)
    assert tuple(rows.shape) == (2 * 2 * 13 * 12, 32)
    expected = F.conv2d(x.double(), w.double(), stride=2, padding=3)
    got = shifted_gemm(conv, rows, taps, tuple(expected.shape))
    assert (got - expected).abs().max() <= 1e-9 * expected.abs().max()


@pytest.mark.parametrize("channels,kernel,stride,padding,dilation", [
    (3, (7, 7), (2, 2), (3, 3), (1, 1)), (3, (3, 5), (2, 3), (1, 2), (2, 1)), (8, (5, 3), (3, 2), (0, 1), (1, 2)),
    (16, (3, 3), (1, 2), (1, 1), (1, 1)), (3, (1, 3), (2, 2), (0, 1), (1, 1)), (3, (3, 1), (2, 2), (1, 0), (1, 1)),
    (24, (3, 3), (2, 2), (1, 1), (1, 1)), (5, (2, 2), (1, 1), (1, 0), (2, 2)), (12, (3, 5), (2, 2), (1, 3), (1, 2))])
def test_shifted_convolution_layouts(channels, kernel, stride, padding, dilation):
    """Every layout shifted_conv chooses (folded column taps at any stride, whole
    windows, phase planes, padded channels) gives the convolution, the K steps
    summed at their taps' offsets as the kernel sums them (13 x 11 images)."""
    from tilemlir.torch_backend import codegen, dynamo

    x = torch.randn(2, channels, 13, 11).half().to(memory_format=torch.channels_last)
    w = torch.randn(6, channels, *kernel).half()
    expected = F.conv2d(x.double(), w.double(), stride=stride, padding=padding, dilation=dilation)
    conv = codegen.shifted_conv(codegen.TensorSpec.of(x), codegen.TensorSpec.of(w), stride, padding, dilation,
                                tuple(expected.shape[2:]), 64)
    rows, taps = dynamo.phase_planes(x, conv.image), dynamo.conv_taps(w, conv.image)
    got = shifted_gemm(conv, rows, taps, tuple(expected.shape))
    assert (got - expected).abs().max() <= 1e-9 * expected.abs().max()


@pytest.mark.parametrize("channels,kernel,stride,padding,dilation", [
    (4, 1, 2, 0, 1), (3, 7, 2, 3, 1), (16, 3, 2, 1, 1), (8, 5, 1, 2, 1), (24, 3, 1, 1, 1), (8, 3, 2, 2, 2),
    (12, 5, 1, 4, 2)],
    ids=["1x1-stride-2", "stem", "planes", "folded-columns", "padded-channels", "folded-dilated",
         "folded-dilated-partial-taps"])
def test_a_pixel_no_tap_reads_never_reaches_an_output(channels, kernel, stride, padding, dilation):
    """An inf the window of an output does not cover leaves it finite, as in
    torch: the image as passed holds only pixels some tap reads or zeros, and
    every zero weight (a padded channel) meets a zero (never 0 x inf = NaN),
    the pixels a folded window reads past its fold included (dynamo._folded_rows)."""
    x = torch.randn(1, channels, 11, 10).half()
    x[0, 0, 1, 1] = float("inf")
    x[0, -1, 6, 5] = float("nan")
    w = torch.randn(8, channels, kernel, kernel).half()

    def conv(x, w):
        return F.conv2d(x, w, stride=stride, padding=padding, dilation=dilation)
    expected = conv(x.float(), w.float())
    with torch.no_grad():
        got = torch.compile(conv, backend=backend)(x.to(memory_format=torch.channels_last), w).float()
    assert torch.equal(got.isnan(), expected.isnan()) and torch.equal(got.isinf(), expected.isinf())
    finite = expected.isfinite()
    assert (got[finite] - expected[finite]).abs().max() <= RELATIVE * expected[finite].abs().max()


def test_a_weights_taps_are_read_in_place():
    """A channels-last weight whose channels need no padding is passed as a
    view of itself (dynamo.conv_taps): no copy at each call, and a weight
    changed in place, through `.data` too (which moves no version counter),
    is what the next call reads."""
    from tilemlir.torch_backend import codegen, dynamo

    model = nn.Sequential(nn.Conv2d(16, 24, 3, 1, 1), nn.ReLU(), nn.Conv2d(24, 16, 3, 2, 1)).eval().half()
    model = model.to(memory_format=torch.channels_last)
    x = torch.randn(2, 16, 11, 10).half().to(memory_format=torch.channels_last)
    weight = model[0].weight
    conv = codegen.shifted_conv(codegen.TensorSpec.of(x), codegen.TensorSpec.of(weight), (1, 1), (1, 1), (1, 1),
                                (11, 10), 32)
    assert dynamo.conv_taps(weight, conv.image).data_ptr() == weight.data_ptr()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        compiled(x)
        model[0].weight.data.mul_(-1)
        model[2].weight.data = model[2].weight.data * 2
        changed = compiled(x)
        expected = copy.deepcopy(model).double()(x.double())
    assert (changed.double() - expected).abs().max() <= RELATIVE * expected.abs().max()


@pytest.mark.parametrize("target", ["amdgpu:gfx942", "metax:xcore1000"])
@pytest.mark.parametrize("stride,out", [(2, 40), (1, 40), (1, 64)],
                         ids=["phase-planes", "channels-past-the-block", "whole-blocks"])
def test_shifted_convolution_in_the_emulator(monkeypatch, target, stride, out):
    """With output channels a whole number of blocks, the epilogue's stores
    are under a condition on the row alone (one vector store a run of a
    row's channels, fragment_ops.guarded_store); else on the channel too."""
    on_engine(monkeypatch, target, "emulator")
    check(ConvBlock(16, 3, stride, 1, 1, out=out), torch.randn(1, 16, 9, 7), channels_last=True)
    (source,) = conv_sources()
    if stride == 1:  # planes with a border: stored element by element where a row is an output pixel's
        assert ("+ j < 40:" in source) == (out == 40)


class ShiftedChain(nn.Module):
    """A 1x1 convolution, then two 3x3 ones (ResNet's bottleneck and basic
    blocks), of stride 1, the second dilated (or of stride 2: `strided`),
    each image read by the next convolution alone; with `shared`, the first
    image also added to the output (a second reader)."""

    def __init__(self, c=32, shared=False, strided=False):
        super().__init__()
        self.shared = shared
        self.a, self.bna = nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c)
        self.b, self.bnb = nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c)
        self.c = nn.Conv2d(c, c, 3, 2, 1) if strided else nn.Conv2d(c, c, 3, 1, 2, dilation=2)
        for norm in (self.bna, self.bnb):
            norm.running_mean.uniform_(-0.5, 0.5)
            norm.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        y = F.relu(self.bna(self.a(x)))
        z = self.c(F.relu(self.bnb(self.b(y))))
        return z + y if self.shared else z


@pytest.mark.parametrize("target,engine", [("amdgpu:gfx942", "reference"), ("amdgpu:gfx942", "emulator"),
                                           ("metax:xcore1000", "emulator"), ("nvidia:sm_90a", "reference")])
def test_images_written_in_place_for_shifted_convolutions(monkeypatch, target, engine):
    """A convolution whose output only a shifted convolution of stride 1
    reads writes it straight into the zeroed, padded rows that one reads
    (dynamo.plan_images_in_place, codegen.conv_kernel's `padded`): the 1x1
    convolution's and the first 3x3's images are copied by nobody. 2 x 5 x 7
    pixels: the 1x1 convolution's rows are no multiple of its block."""
    from tilemlir.torch_backend import dynamo

    on_engine(monkeypatch, target, engine)
    copied = images_copied(monkeypatch)
    check(ShiftedChain(), torch.randn(2, 32, 5, 7), channels_last=True)
    assert copied == []
    sources = conv_sources()
    # The padded rows: 2 images of (5 + 2) x (7 + 2) (the second 3x3's dilation 2: (5 + 4) x (7 + 4)).
    assert sum("O0: T.Tensor((126, 32)" in s for s in sources) == 1
    assert sum("O0: T.Tensor((198, 32)" in s for s in sources) == 1
    # Of stride 2, the second 3x3's image is written as its 2 x 2 phase planes of 4 x 5 pixels.
    monkeypatch.setattr(dynamo, "_COMPILED", {})
    torch._dynamo.reset()
    check(ShiftedChain(strided=True), torch.randn(2, 32, 5, 7), channels_last=True)
    assert copied == []
    sources = conv_sources()
    assert sum("O0: T.Tensor((160, 32)" in s for s in sources) == 1


class Projection(nn.Module):
    """A block's input read by a 1x1 convolution and by a strided 1x1
    projection (ResNet's first bottleneck of a stage)."""

    def __init__(self, c=32):
        super().__init__()
        self.a, self.norm = nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c)
        self.b, self.down = nn.Conv2d(c, c, 1), nn.Conv2d(c, 2 * c, 1, 2)

    def forward(self, x):
        y = F.relu(self.norm(self.a(x)))
        return self.down(y) + self.b(y)[:, :, ::2, ::2].repeat(1, 2, 1, 1)


@pytest.mark.parametrize("target,engine", [("amdgpu:gfx942", "reference"), ("amdgpu:gfx942", "emulator"),
                                           ("metax:xcore1000", "emulator")])
def test_a_strided_projections_pixels_are_stored_twice(monkeypatch, target, engine):
    """The image a strided 1x1 projection reads beside a 1x1 convolution is
    stored as traced and into the one phase plane the projection reads
    (its even pixels' rows alone), which it then copies from nobody."""
    from tilemlir.torch_backend import dynamo

    on_engine(monkeypatch, target, engine)
    copied = images_copied(monkeypatch)
    check(Projection(), torch.randn(2, 32, 5, 7), channels_last=True)
    assert copied == []
    sources = conv_sources()
    assert sum("E0: T.Tensor((24, 32)" in s for s in sources) == 1  # 2 images of 3 x 4 even pixels
    # 6 x 8: no padding, so every row is a stored pixel, and the rows are not filled first.
    torch._dynamo.reset()
    fills = []
    rows_fill = dynamo.rows_fill
    monkeypatch.setattr(dynamo, "rows_fill", lambda layout: fills.append(rows_fill(layout)) or fills[-1])
    check(Projection(), torch.randn(2, 32, 6, 8), channels_last=True)
    assert copied == [] and fills == [None, None]  # (at each of the two calls)


def test_an_output_that_leaves_the_graph_is_not_stored_twice(monkeypatch):
    """An image returned by a compiled graph may be changed in place before
    another reads it: its rows stored beside it would not follow, so such an
    output is stored once, and a later strided projection of it copies it."""
    from tilemlir.torch_backend import dynamo

    class First(nn.Module):
        def __init__(self, c=32):
            super().__init__()
            self.a, self.down = nn.Conv2d(c, c, 1), nn.Conv2d(c, 2 * c, 1, 2)

        def forward(self, x):
            y = F.relu(self.a(x))
            return self.down(y), y

    first = First().eval().half().to(memory_format=torch.channels_last)
    second = nn.Conv2d(32, 64, 1, 2).eval().half().to(memory_format=torch.channels_last)
    x = torch.randn(2, 32, 6, 8).half().to(memory_format=torch.channels_last)
    with torch.no_grad():
        _, y = torch.compile(first, backend=backend)(x)
        assert getattr(y, dynamo.IN_PLACE, None) is None
        y.mul_(-1.0).add_(5.0)
        got, expected = torch.compile(second, backend=backend)(y), second.float()(y.float())
    assert (got.float() - expected).abs().max() <= 1e-2 * expected.abs().max()


class StridedChain(nn.Module):
    """A 1x1 convolution, then two 3x3 ones of stride 2, each image read by
    the next convolution alone (two images written as phase planes)."""

    def __init__(self, c=32):
        super().__init__()
        self.a, self.b, self.c = nn.Conv2d(c, c, 1), nn.Conv2d(c, c, 3, 2, 1), nn.Conv2d(c, c, 3, 2, 1)

    def forward(self, x):
        return self.c(F.relu(self.b(F.relu(self.a(x)))))


def test_a_producer_refused_once_written_as_traced_is_refused_in_turn(monkeypatch):
    """The last convolution is refused, so the second, which wrote its image
    as phase planes, is written afresh as traced; refused so too, it runs in
    torch, and the first, which wrote the second's image as planes, is
    written as traced in turn (compile_graph: until none changes)."""
    from tilemlir.torch_backend import codegen, dynamo

    monkeypatch.setenv("TILEMLIR_TORCH_STRICT", "0")
    conv_kernel = codegen.conv_kernel

    def refusing(group, specs, name, steps, padded=None, copied=None):
        height = specs[group.inputs.index(group.anchor.args[0])].shape[2]
        if height == 4 or height == 7 and tuple(group.anchor.args[3]) == (2, 2) and not padded:
            raise dynamo.Unsupported("refused by the test")
        return conv_kernel(group, specs, name, steps, padded, copied)
    monkeypatch.setattr(codegen, "conv_kernel", refusing)
    check(StridedChain(), torch.randn(2, 32, 7, 9), channels_last=True)  # no NaN from the planes


@pytest.mark.parametrize("when", ["compiling", "calling"])
def test_phase_planes_a_refused_reader_would_read_are_not_written(monkeypatch, when):
    """Phase planes written in place are no view of the image: where the
    convolution reading them is refused when the graph is compiled, its
    image is written as traced (and copied by nobody, torch reads it); where
    it falls back at a call, torch gets the image made from the planes."""
    from tilemlir.torch_backend import codegen, dynamo

    monkeypatch.setenv("TILEMLIR_TORCH_STRICT", "0")
    monkeypatch.setattr(dynamo, "_COMPILED", {})
    conv_kernel = codegen.conv_kernel

    def refusing(group, specs, *args):
        image = specs[group.inputs.index(group.anchor.args[0])]
        strided = tuple(group.anchor.args[3]) == (2, 2)
        if strided and (when == "compiling" or image.stride == (0, 0, 0, 0)):
            raise dynamo.Unsupported("refused by the test")
        return conv_kernel(group, specs, *args)
    monkeypatch.setattr(codegen, "conv_kernel", refusing)
    materialized = []
    make = dynamo.materialized
    monkeypatch.setattr(dynamo, "materialized", lambda t: materialized.append(t is not make(t)) or make(t))
    check(ShiftedChain(strided=True), torch.randn(2, 32, 5, 7), channels_last=True)  # no NaN from the planes
    assert any(materialized) == (when == "calling")


@pytest.mark.parametrize("pad,stride,shape,fill", [
    ((1, 1, 1, 1), (1, 1), (2, 8, 5, 7), 0.0), ((2, 2, 2, 2), (1, 1), (1, 8, 4, 3), 0.0),
    ((1, 2, 1, 2), (2, 2), (2, 8, 5, 7), 0.0), ((1, 0, 0, 1), (2, 2), (1, 8, 5, 7), 0.0),
    ((0, 1, 1, 0), (3, 2), (2, 8, 8, 5), 0.0),
    # A pad's border: one plane of stride 1.
    ((1, 1, 1, 1), (1, 1), (2, 8, 5, 7), float("-inf")), ((2, 2, 2, 2), (1, 1), (1, 8, 4, 3), float("-inf"))])
def test_large_rows_are_filled_at_their_border_alone(monkeypatch, pad, stride, shape, fill):
    """Rows of BORDER_FILL_BYTES or more (here: any) are filled only in the
    cell rows and columns around the image (dynamo.layout_rows): every cell no
    pixel of the image lands in holds the fill, whatever the new rows held
    (torch.empty poisoned with NaN), in every phase plane."""
    from tilemlir.torch_backend import codegen, dynamo

    batch, channels, height, width = shape
    layout = codegen.PhaseImage(channels, pad, stride, stride) if fill == 0.0 else codegen.Border(pad, fill)
    spec = codegen.TensorSpec((batch, channels, height, width), (0, 0, 0, 0), torch.float16)
    empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: empty(*a, **k).fill_(float("nan")))
    monkeypatch.setattr(dynamo, "BORDER_FILL_BYTES", 0)
    rows = dynamo.layout_rows(spec, layout, "cpu")
    # The cells the image's pixels land in: those phase_planes fills from an image of ones.
    ones = torch.ones(shape, dtype=torch.float16)
    landed = dynamo.phase_planes(ones, codegen.PhaseImage(channels, pad, layout.stride, layout.planes)) == 1
    assert rows.shape == landed.shape and landed.any() and not landed.all()
    assert torch.equal(rows[~landed], torch.full_like(rows[~landed], fill))


@pytest.mark.parametrize("target,engine", [("amdgpu:gfx942", "reference"), ("amdgpu:gfx942", "emulator"),
                                           ("metax:xcore1000", "emulator")])
def test_a_convolution_writes_inside_the_border_its_pad_makes(monkeypatch, target, engine):
    """A convolution whose output one 2-D pad alone reads (the max pooling
    after ResNet's stem pads with -inf) writes it inside a border of the
    fill (codegen.Border), and the pad passes those rows as they are: no
    pad kernel runs."""
    from tilemlir.torch_backend import dynamo

    monkeypatch.setenv("TILEMLIR_TARGET", target)
    monkeypatch.setenv("TILEMLIR_ENGINE", engine)
    passed = []
    call = dynamo.GroupKernel.__call__

    def spy(self, *tensors):
        results = call(self, *tensors)
        if self.border is not None:
            passed.append(results[0].data_ptr() == getattr(tensors[0], dynamo.IN_PLACE).rows.data_ptr())
        return results
    monkeypatch.setattr(dynamo.GroupKernel, "__call__", spy)
    check(ResNetStem(16), torch.randn(2, 3, 20, 18), channels_last=True)
    assert passed == [True, True]  # at each of the two calls


@pytest.mark.parametrize("model,shape", [(ResNetStem(16), (2, 3, 20, 18)), (ShiftedChain(strided=True), (2, 32, 5, 7)),
                                         (Projection(), (2, 32, 5, 7))], ids=["stem-and-pool", "phase-planes", "projection"])
def test_border_fills_in_the_emulator(monkeypatch, model, shape):
    """Every in-place image's rows filled at their border alone
    (BORDER_FILL_BYTES 0): the stem's -inf border, stride-2 phase planes and
    a projection's rows stored twice give the float64 result in the gfx942
    emulator."""
    from tilemlir.torch_backend import dynamo

    on_engine(monkeypatch, "amdgpu:gfx942", "emulator")
    monkeypatch.setattr(dynamo, "BORDER_FILL_BYTES", 0)
    check(model, torch.randn(*shape), channels_last=True)


@pytest.mark.parametrize("channels", [32, 24])
def test_an_image_with_another_reader_is_stored_twice(monkeypatch, channels):
    """An image that something besides shifted convolutions also reads is
    stored as traced and, where its channels need no padding, into the rows
    those convolutions read as well (codegen.PixelsAnd); else they copy it."""
    from tilemlir.torch_backend import dynamo

    monkeypatch.setattr(dynamo, "_COMPILED", {})
    copied = images_copied(monkeypatch)
    check(ShiftedChain(channels, shared=True), torch.randn(2, channels, 5, 7), channels_last=True)
    assert copied == ([] if channels == 32 else [(2, 5, 7, 24)] * 4)  # (two images, at each of the two calls)
    sources = conv_sources()
    assert any("E0: T.Tensor((126, 32)" in s for s in sources) == (channels == 32)


def test_an_operand_at_an_unaligned_address_is_copied():
    """TMA reads a GEMM's operands on sm_90a from 16-byte aligned addresses:
    a view starting 2 bytes in is passed as a copy, the same values."""
    from tilemlir.torch_backend import codegen, dynamo

    flat = torch.arange(65, dtype=torch.float16)
    view = flat[1:].view(8, 8)
    kernel = dynamo.GroupKernel.__new__(dynamo.GroupKernel)
    passed = kernel.operand(view, None, codegen.GemmOperand(False, (8, 8)))
    assert passed.data_ptr() % 16 == 0 and torch.equal(passed, view)
    assert kernel.operand(flat[:64].view(8, 8), None, codegen.GemmOperand(False, (8, 8))).data_ptr() == flat.data_ptr()


def test_a_residual_at_an_unaligned_address_is_copied():
    """A residual read as its pixels' rows (vector loads) that starts 2 bytes
    in is passed as an aligned copy; an aligned one as a view."""
    from tilemlir.torch_backend import dynamo

    flat = torch.randn(1 + 2 * 16 * 5 * 6).half()
    residual = flat[1:].view(2, 5, 6, 16).permute(0, 3, 1, 2)
    rows = dynamo._pixel_rows(residual)
    assert rows.data_ptr() % 16 == 0 and torch.equal(rows, residual.permute(0, 2, 3, 1).reshape(-1, 16))
    aligned = flat[:-1].view(2, 5, 6, 16).permute(0, 3, 1, 2)
    assert dynamo._pixel_rows(aligned).data_ptr() == flat.data_ptr()


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels-last"])
def test_pooling_with_padding(channels_last):
    """Channels-last, the windows are reduced channels fastest and the result
    is channels-last, as torch's."""
    def f(x):
        return F.avg_pool2d(x, 3, 2, 1)[..., :4, :4] + F.max_pool2d(x, 2)

    x = torch.randn(2, 3, 9, 8)
    half = x.half().to(memory_format=torch.channels_last) if channels_last else x.half()
    with torch.no_grad():
        got = torch.compile(f, backend=backend)(half)
        pooled = torch.compile(lambda x: F.max_pool2d(x, 3, 2, 1), backend=backend)(half)
    assert (got.double() - f(x.double())).abs().max() <= 1e-2
    assert torch.equal(pooled, F.max_pool2d(half.float(), 3, 2, 1).half())
    assert pooled.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("kernel,stride,padding,ceil_mode,count_include_pad,divisor", [
    (3, 2, 1, True, True, None),  # the last window hangs past the padding: counted to its edge
    (3, 2, 1, True, False, None),  # padding not counted
    (2, 3, 0, True, True, None),  # windows with gaps between them, the last one cut short
    (3, 2, 1, False, False, None),
    (3, 1, 1, False, True, 5),  # a divisor given
])
def test_pooling_windows_as_torch_counts_them(kernel, stride, padding, ceil_mode, count_include_pad, divisor,
                                              channels_last):
    """ceil_mode, count_include_pad and divisor_override as torch's pooling:
    the output's size and each window's divisor."""
    def f(x):
        return (F.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor),
                F.max_pool2d(x, kernel, stride, padding, ceil_mode=ceil_mode))

    x = torch.randn(2, 3, 7, 10)
    half = x.half().to(memory_format=torch.channels_last) if channels_last else x.half()
    with torch.no_grad():
        average, largest = torch.compile(f, backend=backend)(half)
    expected = f(x.double())[0]
    assert average.shape == expected.shape
    assert (average.double() - expected).abs().max() <= 2e-3
    assert torch.equal(largest, F.max_pool2d(half, kernel, stride, padding, ceil_mode=ceil_mode))
    assert average.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_dilated_max_pooling(ceil_mode, channels_last):
    """Taps `dilation` apart: torch's output size, values and first indices."""
    def f(x):
        return F.max_pool2d(x, 3, 2, 1, 2, ceil_mode=ceil_mode)

    x = torch.randn(2, 3, 11, 8).half()
    x = x.to(memory_format=torch.channels_last) if channels_last else x
    with torch.no_grad():
        got = torch.compile(f, backend=backend)(x)
    assert torch.equal(got, f(x.float()).half())


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("size,out", [((10, 7), (3, 2)), ((5, 5), (2, 4))])
def test_adaptive_average_pooling_of_overlapping_windows(size, out, channels_last):
    """Output sizes that do not divide the input: torch's windows (floor(i H /
    oh) .. ceil((i + 1) H / oh)), which overlap, each averaged over its own size."""
    x = torch.randn(2, 3, *size)
    half = x.half().to(memory_format=torch.channels_last) if channels_last else x.half()
    with torch.no_grad():
        got = torch.compile(lambda t: F.adaptive_avg_pool2d(t, out), backend=backend)(half)
    expected = F.adaptive_avg_pool2d(x.double(), out)
    assert got.shape == expected.shape
    assert (got.double() - expected).abs().max() <= 2e-3
    assert got.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("channels,out,groups,kernel,stride,padding,dilation,bias", [
    (8, 8, 8, 3, 1, 1, 1, True),  # depthwise (MobileNet's)
    (8, 16, 8, 5, 2, 2, 1, False),  # depthwise with a channel multiplier of 2, strided
    (8, 12, 2, 3, 1, 2, 2, True),  # two groups, dilated
    (6, 6, 3, 1, 2, 0, 1, False),  # grouped 1x1 (ResNeXt's), strided
])
def test_grouped_convolutions(channels, out, groups, kernel, stride, padding, dilation, bias, channels_last):
    """A grouped convolution is a reduction over each group's channels and
    taps, summed in f32: torch's result within fp16's rounding, channels-last
    kept."""
    x, weight = torch.randn(2, channels, 9, 11), torch.randn(out, channels // groups, kernel, kernel) * 0.3
    b = torch.randn(out) if bias else None
    half = x.half().to(memory_format=torch.channels_last) if channels_last else x.half()

    def f(t, w, bb):
        return F.relu6(F.conv2d(t, w, bb, stride, padding, dilation, groups))

    with torch.no_grad():
        got = torch.compile(f, backend=backend)(half, weight.half(), None if b is None else b.half())
    expected = f(half.double(), weight.half().double(), None if b is None else b.half().double())
    assert got.shape == expected.shape
    assert (got.double() - expected).abs().max() <= 2e-3 * expected.abs().max()
    assert got.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


@pytest.mark.parametrize("channels,out,groups,kernel,stride,padding,dilation", [
    (8, 16, 1, 3, 1, 1, 1),  # one group: the implicit GEMM of an image one row high
    (8, 8, 8, 4, 2, 2, 1),  # depthwise, an even kernel, strided
    (6, 12, 3, 3, 1, 2, 2),  # grouped, dilated
])
def test_one_dimensional_convolutions(channels, out, groups, kernel, stride, padding, dilation):
    """A 1-D convolution is the 2-D one of an image one row high."""
    x, weight, bias = torch.randn(2, channels, 19), torch.randn(out, channels // groups, kernel) * 0.3, torch.randn(out)

    def f(t, w, b):
        return F.gelu(F.conv1d(t, w, b, stride, padding, dilation, groups))

    with torch.no_grad():
        got = torch.compile(f, backend=backend)(x.half(), weight.half(), bias.half())
    expected = f(x.half().double(), weight.half().double(), bias.half().double())
    assert got.shape == expected.shape
    assert (got.double() - expected).abs().max() <= 2e-3 * expected.abs().max()


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("channels,out,groups,kernel,stride,padding,output_padding,dilation", [
    (4, 6, 1, 2, 2, 0, 0, 1),  # a decoder's 2x upsampling
    (4, 6, 1, 3, 2, 1, 1, 1),  # padded, with output padding
    (6, 6, 3, 3, 3, 2, 0, 2),  # grouped, dilated, its padding larger than the kernel's reach (cropped)
])
def test_transposed_convolutions(channels, out, groups, kernel, stride, padding, output_padding, dilation,
                                 channels_last):
    """A transposed convolution is the direct one of the input spread by its
    stride, padded, by the flipped kernel."""
    x, weight, bias = torch.randn(2, channels, 5, 6), torch.randn(channels, out // groups, kernel, kernel) * 0.3, \
        torch.randn(out)
    half = x.half().to(memory_format=torch.channels_last) if channels_last else x.half()

    def f(t, w, b):
        return F.conv_transpose2d(t, w, b, stride, padding, output_padding, groups, dilation)

    with torch.no_grad():
        got = torch.compile(f, backend=backend)(half, weight.half(), bias.half())
    expected = f(half.double(), weight.half().double(), bias.half().double())
    assert got.shape == expected.shape
    assert (got.double() - expected).abs().max() <= 2e-3 * expected.abs().max()
    assert got.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


def test_a_one_dimensional_transposed_convolution():
    """nn.ConvTranspose1d: the 2-D transposed convolution of an image one row high."""
    x, weight, bias = torch.randn(2, 6, 7), torch.randn(6, 2, 4) * 0.3, torch.randn(6)

    def f(t, w, b):
        return F.conv_transpose1d(t, w, b, 2, 1, 1, 3)

    with torch.no_grad():
        got = torch.compile(f, backend=backend)(x.half(), weight.half(), bias.half())
    expected = f(x.half().double(), weight.half().double(), bias.half().double())
    assert got.shape == expected.shape
    assert (got.double() - expected).abs().max() <= 2e-3 * expected.abs().max()


class Decoder(nn.Module):
    """A U-Net decoder step: a 2x transposed convolution, a skip concatenated, a 3x3 convolution."""

    def __init__(self, c=8):
        super().__init__()
        self.up = nn.ConvTranspose2d(2 * c, c, 2, 2)
        self.conv = nn.Conv2d(2 * c, c, 3, padding=1)

    def forward(self, x):
        low = F.avg_pool2d(x, 2)
        deep = torch.cat([low, low], 1)
        return F.relu(self.conv(torch.cat([self.up(deep), x], 1)))


class DepthwiseBlock(nn.Module):
    """MobileNet's: a depthwise 3x3, ReLU6, a pointwise projection, batch norm, hardswish."""

    def __init__(self, c=8):
        super().__init__()
        self.depthwise = nn.Conv2d(c, c, 3, 2, 1, groups=c)
        self.pointwise, self.norm = nn.Conv2d(c, 2 * c, 1, bias=False), nn.BatchNorm2d(2 * c)
        self.norm.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        return F.hardswish(self.norm(self.pointwise(F.relu6(self.depthwise(x))))).mean((2, 3))


@pytest.mark.parametrize("norm", [nn.InstanceNorm2d(6, affine=True), nn.InstanceNorm2d(6),
                                  nn.BatchNorm2d(6, track_running_stats=False)], ids=["instance-affine", "instance",
                                                                                      "batch-without-running-stats"])
def test_norms_by_their_own_inputs_statistics(norm):
    """Batch norm over the statistics of its input (instance norm's, and a batch
    norm with no running statistics, in eval mode as in training): per
    channel mean and biased variance in f32."""
    if norm.affine:
        norm.weight.data.uniform_(0.5, 1.5)
        norm.bias.data.uniform_(-0.5, 0.5)
    check(nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), norm, nn.ReLU()), torch.randn(2, 3, 7, 5) * 3 + 1)


def test_pooling_and_grouped_convolutions_keep_torch_precision(monkeypatch):
    """Integer average pooling (torch divides exactly) stays whole, run by
    torch; f64 grouped convolutions and pooling sum in f64 as torch's do."""
    monkeypatch.setenv("TILEMLIR_TORCH_STRICT", "0")
    x = torch.tensor([[[[41, 82], [123, 10]]]])
    with torch.no_grad():
        got = torch.compile(lambda t: F.avg_pool2d(t, 1, divisor_override=41), backend=backend)(x)
    assert torch.equal(got, F.avg_pool2d(x, 1, divisor_override=41))

    def f(t, w):
        return F.avg_pool2d(F.conv2d(t, w, None, 1, 1, 1, 4), 3, 2, 1, True, False) + \
            F.adaptive_avg_pool2d(t, (3, 2)).sum()

    t, w = torch.randn(2, 4, 9, 7, dtype=torch.float64), torch.randn(8, 1, 3, 3, dtype=torch.float64)
    with torch.no_grad():
        got = torch.compile(f, backend=backend)(t, w)
    assert (got - f(t, w)).abs().max() <= 1e-12


class CeilPools(nn.Module):
    """Pooling past the input's edge and adaptive windows that overlap."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, 2, 1)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 3, 2, ceil_mode=True)
        return F.adaptive_avg_pool2d(F.avg_pool2d(x, 2, 2, 1, True, False), (2, 3))


@pytest.mark.parametrize("model,shape,channels_last", [
    (SwiGLU(), (2, 8, 64), False), (CausalGQA(), (1, 20, 64), False), (ResNetStem(8), (1, 3, 16, 16), True),
    (PointwiseBottleneck(8), (1, 8, 3, 5), True), (RotaryQuery(), (1, 5, 32), False),
    (GroupNormBlock(), (1, 8, 3, 5), False), (nn.Upsample(size=(5, 7)), (1, 2, 3, 4), False),
    (CausalGQA(dim=48, heads=6, kv_heads=2), (1, 13, 48), False), (CeilPools(), (1, 3, 17, 14), True),
    (DepthwiseBlock(), (1, 8, 7, 6), True), (Decoder(), (1, 8, 6, 4), False),
], ids=["mlp", "gqa", "resnet", "pointwise-conv", "rotary-cat", "group-norm", "upsample-index", "gqa-head-8",
        "ceil-pools", "depthwise", "decoder"])
def test_in_the_gfx942_emulator(monkeypatch, model, shape, channels_last):
    monkeypatch.setenv("TILEMLIR_ENGINE", "emulator")
    check(model, torch.randn(*shape), channels_last=channels_last)


def test_a_residual_read_as_tiles_in_the_metax_emulator(monkeypatch):
    monkeypatch.setenv("TILEMLIR_TARGET", "metax:xcore1000")
    monkeypatch.setenv("TILEMLIR_ENGINE", "emulator")
    check(PointwiseBottleneck(8), torch.randn(1, 8, 3, 5), channels_last=True)


def test_strided_broadcast_and_boolean_values():
    # Permuted and expanded operands are read in place; comparisons, where and
    # casts fuse into one kernel with the reduction after them.
    def f(x, y, bias):
        t = x.transpose(0, 1) * 2.0 + bias
        masked = torch.where(t > 0.5, t, torch.zeros_like(t)) - y.expand(37, 5)
        return masked.float().softmax(-1).half(), (t < 0).half().sum(-1)

    x, y, bias = torch.randn(5, 37).half(), torch.randn(1, 5).half(), torch.randn(5).half()
    with torch.no_grad():
        got, count = torch.compile(f, backend=backend)(x, y, bias)
    t = x.double().transpose(0, 1) * 2.0 + bias.double()
    expected = (torch.where(t > 0.5, t, 0.0) - y.double().expand(37, 5)).softmax(-1)
    assert (got.double() - expected).abs().max() <= 2e-3
    assert torch.equal(count, (t < 0).half().sum(-1))


def test_one_kernel_for_layer_norm_then_softmax():
    captured = {}

    def spy(gm, inputs):
        captured["groups"], captured["fallbacks"] = partition.partition(gm.graph)
        return gm

    from torch._dynamo.backends.common import aot_autograd

    from tilemlir.torch_backend.dynamo import decompositions

    def f(x, w, b):
        return F.layer_norm(x, (64,), w, b).softmax(-1)

    with torch.no_grad():
        torch.compile(f, backend=aot_autograd(fw_compiler=spy, decompositions=decompositions()))(
            torch.randn(8, 64), torch.randn(64), torch.randn(64))
    kinds = [(g.kind, g.reduces) for g in captured["groups"]]
    assert kinds == [("pointwise", True)]
    assert captured["fallbacks"] == []


def test_second_call_compiles_nothing(monkeypatch):
    from tilemlir.torch_backend import dynamo as module

    built = []
    original = module.GroupKernel.build
    monkeypatch.setattr(module.GroupKernel, "build", lambda self, specs: built.append(1) or original(self, specs))
    compiled = torch.compile(SwiGLU().eval().half(), backend=backend)
    x = torch.randn(2, 8, 64).half()
    with torch.no_grad():
        compiled(x)
        count = len(built)
        compiled(x)
    assert count > 0 and len(built) == count


def f_with_cumprod(x):
    return torch.cumprod(x, dim=-1) * 2.0


def test_a_fallback_is_listed_with_its_line(monkeypatch, caplog):
    monkeypatch.delenv("TILEMLIR_TORCH_STRICT")
    x = torch.randn(4, 8)
    with caplog.at_level(logging.WARNING, logger="tilemlir.torch"), torch.no_grad():
        got = torch.compile(f_with_cumprod, backend=backend)(x)
    assert torch.allclose(got, torch.cumprod(x, -1) * 2.0)
    line = f_with_cumprod.__code__.co_firstlineno + 1
    assert "1 node(s) run in torch: aten.cumprod (" in caplog.text
    assert f"test_torch_backend.py:{line} (f_with_cumprod)" in caplog.text


def test_strict_mode_names_the_node_and_line():
    line = f_with_cumprod.__code__.co_firstlineno + 1
    with pytest.raises(Exception) as raised, torch.no_grad():
        torch.compile(f_with_cumprod, backend=backend)(torch.randn(4, 8))
    error = getattr(raised.value, "inner_exception", raised.value)  # torch wraps a backend's error
    assert isinstance(error, TilemlirTorchError), raised.value
    assert "aten.cumprod" in str(error) and f"test_torch_backend.py:{line}" in str(error)
    assert "TILEMLIR_TORCH_STRICT=1" in str(error)


def test_strict_mode_says_why_attention_over_3d_tensors_has_no_kernel():
    attend = lambda q, k, v: F.scaled_dot_product_attention(q, k, v)
    q, k, v = (torch.randn(2, 70, 64).half() for _ in range(3))
    with pytest.raises(Exception) as raised, torch.no_grad():
        torch.compile(attend, backend=backend)(q, k, v)
    error = getattr(raised.value, "inner_exception", raised.value)
    assert isinstance(error, TilemlirTorchError), raised.value
    assert "tilemlir.attention" in str(error)
    assert "takes query, key and value of 4 dims [B, H, S, D]; this query has 3: [2, 70, 64]" in str(error)


def compiled_matches(f, *inputs, exact=False):
    """f compiled (strict) against f in float64 (integer and bool outputs exactly)."""
    with torch.no_grad():
        got = torch.compile(f, backend=backend)(*inputs)
        want = f(*[x.double() if x.is_floating_point() else x for x in inputs])
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        if exact or not w.is_floating_point():
            assert torch.equal(g.to(w.dtype), w), (g, w)
        else:
            assert torch.allclose(g.double(), w, atol=2e-3, rtol=2e-3, equal_nan=True), (g, w)


def test_two_groups_that_read_each_other_stay_apart():
    # sigmoid's group takes a * b and tanh's group b + a: one kernel each would
    # need the other's output first (a cycle); the partition refuses the second join.
    compiled_matches(lambda x, y: (x.sigmoid() * y.tanh(), y.tanh() + x.sigmoid()),
                     torch.randn(4, 8).half(), torch.randn(4, 8).half())
    compiled_matches(lambda x, w, z: ((x @ w) * z.sigmoid(), z.sigmoid() + x @ w),
                     torch.randn(8, 16).half(), torch.randn(16, 8).half(), torch.randn(8, 8).half())


def test_integer_division_rounds_as_torch():
    a = torch.tensor([-7, -3, -4, -5, 7, 5], dtype=torch.int64)
    compiled_matches(lambda a: (torch.div(a, 2, rounding_mode="floor"), a // 3, torch.div(a, 2, rounding_mode="trunc")),
                     a)


def test_nan_propagates_as_in_torch():
    x = torch.tensor([[float("nan"), 1.5, -1.0, 0.25], [0.5, -2.0, 3.0, 1.0]]).half()
    compiled_matches(lambda x: (F.relu(x), x.clamp(0.0, 1.0), torch.maximum(x, torch.zeros_like(x)),
                                x.amax(-1, keepdim=True), x.amin(-1)), x)


def test_integer_and_boolean_ops():
    x = torch.randn(6, 10).half()
    compiled_matches(lambda x: ((x > 0).long() + 2, F.leaky_relu(x, 0.2), torch.tensor(3) - (x < 0).int().abs()),
                     x)


@pytest.mark.parametrize("engine", ["reference", "emulator"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_comparisons_round_as_torch_promotes(monkeypatch, engine, dtype):
    """A 16-bit tensor compared with a Python number (or a 0-dim f32 tensor)
    is compared with that number rounded to the tensor's dtype, as torch's
    type promotion does; with an f32 tensor, in f32. The inputs are the
    rounded numbers themselves, where comparing with the unrounded f32
    constants gives other answers."""
    monkeypatch.setenv("TILEMLIR_ENGINE", engine)
    x = torch.tensor([0.7, 0.1, 0.3, 0.2, -0.7, 70000.0], dtype=dtype)
    wide = torch.tensor([0.7, 0.1, 0.3, 0.2, -0.7, 70000.0])  # f32

    def f(x, wide, third):
        return (x > 0.7, x == 0.1, x >= 0.3, x < -0.7, x != 0.2, x == 70000, x <= third, x > wide,
                torch.where(x > 0.3, x, -x))
    third = torch.tensor(0.3)  # 0-dim f32: rounded to x's dtype as a number is
    with torch.no_grad():
        torch._dynamo.reset()
        got = torch.compile(f, backend=backend)(x, wide, third)
    want = f(x, wide, third)
    for g, w in zip(got, want):
        assert torch.equal(g, w), (g, w)
    assert want[0].tolist()[:5] == [False] * 5 and want[1].tolist()[1]  # the premise: x[0] is 0.7 rounded


def test_a_variance_used_outside_its_group_is_written():
    compiled_matches(lambda x: ((x * 2).var(-1, keepdim=True), (x * 2).var(-1, keepdim=True) + x),
                     torch.randn(5, 33).half())


@pytest.mark.parametrize("dim,heads", [(48, 4), (40, 2), (20, 4)], ids=["head-12", "head-20", "head-5"])
def test_attention_heads_of_sizes_the_gemms_do_not_take(dim, heads):
    """Head sizes that are not multiples of 16 (codegen.padded_head_dim):
    Q, K and V are passed zero-padded, the output's padding dropped; the
    scale stays 1/sqrt of the real head size."""
    layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True)
    check(layer, torch.randn(2, 11, dim))
    q, k, v = (torch.randn(1, heads, 9, dim // heads).half() for _ in range(3))
    compiled_matches(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3), q, k, v)


class MaskedScores(nn.Module):
    """Boolean masks combined with ~, & and |, a slice assigned, a rotary
    frequency as 10000 ** x, ELU and SELU, a class token repeated."""

    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.token = nn.Parameter(torch.randn(1, 1, dim))

    def forward(self, x, keep, extra):
        y = self.proj(x)
        y = y.masked_fill(~keep, 0.0) + torch.where(keep & extra | (y > 1), y, -y)
        y[:, -1] = 0
        frequencies = 1.0 / (10000 ** (torch.arange(0, y.shape[-1], 2, dtype=torch.float32) / y.shape[-1]))
        y = y * frequencies.repeat(2).to(y.dtype)
        y = F.elu(y) + F.selu(y)
        return torch.cat([self.token.repeat(x.shape[0], 1, 1), y], 1)


def test_boolean_masks_powers_elu_repeat_and_slice_assignment():
    check(MaskedScores(), torch.randn(2, 7, 16), torch.rand(2, 7, 16) > 0.5, torch.rand(2, 7, 16) > 0.5)
    ints = torch.arange(12).view(3, 4)
    with pytest.raises(Exception) as raised:  # of integers: not built
        compiled_matches(lambda a, b: (a & b) + 1, ints, ints + 3)
    error = getattr(raised.value, "inner_exception", raised.value)  # torch wraps a backend's error
    assert isinstance(error, TilemlirTorchError) and "bitwise_and.Tensor of torch.int64" in str(error)


def _slice_assigned_mask(x):
    mask = torch.zeros(x.shape, dtype=torch.bool)
    mask[:, 2:] = True  # a padding mask as models often build one
    return x.masked_fill(mask, 0.0) * 2


def test_boolean_constants_and_copies_are_values_not_comparisons():
    """A bool tensor the graph makes (set by slice assignment, `torch.tensor(True)`,
    a list of bools, an empty one filled) and a copy of one: values, not
    comparisons (whose operands are compared in their type promotion)."""
    x = torch.randn(3, 5).half()
    compiled_matches(_slice_assigned_mask, x)
    compiled_matches(lambda x: x.masked_fill((x > 0) & torch.tensor(True), 0.0), x)
    compiled_matches(lambda x: x.masked_fill(torch.tensor([True, False, True, False, True]), 0.0), x)
    compiled_matches(lambda x: ((x > 0).clone(), x * 2), x)
    # empty_like's memory (aten.empty_permuted, no values), filled.
    compiled_matches(lambda x: (x.masked_fill(torch.empty_like(x > 0).fill_(True), 0.0),
                                torch.empty_like(x).fill_(2.0) * x), x)


@pytest.mark.parametrize("channels_last", [False, True])
def test_adaptive_max_pooling(channels_last):
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    check(model, torch.randn(2, 3, 9, 7), channels_last=channels_last)
    x = torch.randn(1, 2, 6, 4).half()
    compiled_matches(lambda x: F.adaptive_max_pool2d(x, (3, 2)), x, exact=True)


@pytest.mark.parametrize("engine", ["reference", "emulator"])
def test_reductions_of_integers_and_booleans(monkeypatch, engine):
    """sum, amax and amin of integers, sum of booleans (a count), in 64-bit
    integers as torch sums them: exact beyond 2^31; a last-token pooling by
    a mask's count, as a model writes it."""
    monkeypatch.setenv("TILEMLIR_ENGINE", engine)
    compiled_matches(lambda m: m.sum(-1), torch.rand(3, 37) > 0.5)
    compiled_matches(lambda x: (x.sum(-1), x.amax(-1), x.amin(0)), torch.randint(-2**40, 2**40, (2, 50)))
    compiled_matches(lambda x: x.sum(), torch.randint(0, 255, (5, 7), dtype=torch.uint8))
    h, mask = torch.randn(3, 13, 8).half(), torch.ones(3, 13, dtype=torch.long)
    mask[1, 9:] = 0
    compiled_matches(lambda h, m: h[torch.arange(h.shape[0]), m.sum(-1) - 1], h, mask)


def test_attention_rows_whose_first_keys_are_masked():
    # Left padding: the first key block of batch 1 is all masked; a fully masked row is 0, as torch's.
    q, k, v = torch.randn(2, 2, 40, 32).half(), torch.randn(2, 2, 130, 32).half(), torch.randn(2, 2, 130, 32).half()
    mask = torch.ones(2, 1, 1, 130, dtype=torch.bool)
    mask[1, ..., :70] = False
    additive = torch.zeros(2, 1, 1, 130).half().masked_fill(~mask, float("-inf"))
    attend = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    compiled_matches(attend, q, k, v, mask)
    compiled_matches(attend, q, k, v, additive)
    compiled_matches(attend, q[:, :, :3], k, v, torch.zeros(1, 1, 1, 130, dtype=torch.bool))


def test_attention_tilings_by_chip(monkeypatch):
    """On sm_90a, whose attention gemms run on wgmma, the kernel's blocks are
    64 query rows (one warpgroup) by 64 keys, by 128 over 2048 keys or more
    (measured on the H200 and an H100: codegen.GROUP_ATTENTION_BLOCKS); other chips of
    32-lane waves take 128 query rows (4 warps of 32) by 128 keys for head
    size 64 without a causal mask, else by 64; chips of 64-lane waves take
    four waves of 32 rows, by 64 keys in one stage up to head size 64, by
    128 in two stages up to 128. Each list ends with the 64x64 blocks of 128
    threads, which the kernel takes where the compiler refuses the others.
    Run by the reference engine: ragged query and key blocks, left
    padding, a causal mask."""
    from tilemlir.targets import get_target
    from tilemlir.torch_backend import codegen

    def blocks(target, dim, causal, keys=None):
        return [(t.block_m, t.block_n, t.threads, t.stages)
                for t in codegen.attention_tilings(target, dim, causal, keys)]

    default = (*codegen.ATTENTION_BLOCKS, codegen.THREADS, 2)
    hopper = get_target("nvidia:sm_90a")
    # sm_90a's gemms run on wgmma: one warpgroup's 64 rows, by 128 keys over 2048
    # keys or more (causal or not), else by 64 (as where the keys are not known).
    for causal in (False, True):
        for dim in (64, 128):
            assert blocks(hopper, dim, causal) == blocks(hopper, dim, causal, 2047) == [default]
            assert blocks(hopper, dim, causal, 2048) == blocks(hopper, dim, causal, 16384) == \
                [(64, 128, 128, 2), default]
    # Head rows that are not 128-byte multiples stay on mma.sync: 4 warps of 32 rows.
    assert blocks(hopper, 32, False) == [(128, 128, 128, 2), default]
    assert blocks(hopper, 96, False) == [(128, 64, 128, 2), default]
    # 32-lane waves without group-level instructions (RDNA3): 4 waves of 32 rows
    # where the tiles fit its 64 KiB of LDS.
    rdna3 = get_target("amdgpu:gfx1100")
    assert blocks(rdna3, 64, True) == [(128, 64, 128, 2), default]
    assert blocks(rdna3, 64, False) == [default]  # 128x128: 80 KiB
    for chip in ("amdgpu:gfx90a", "amdgpu:gfx942", "amdgpu:gfx950", "metax:xcore1000"):
        for causal in (False, True):
            assert blocks(get_target(chip), 64, causal) == [(128, 64, 256, 1), default]
            assert blocks(get_target(chip), 128, causal) == [(128, 64, 256, 2), (128, 64, 256, 1), default]
            assert blocks(get_target(chip), 256, causal) == [default]
    # Beyond head size 128 the output rows alone fill a thread's registers.
    assert blocks(hopper, 192, False) == blocks(hopper, 256, True) == [default]
    monkeypatch.setenv("TILEMLIR_TARGET", "nvidia:sm_90a")
    monkeypatch.setenv("TILEMLIR_ENGINE", "reference")
    q, k, v = torch.randn(1, 2, 150, 64).half(), torch.randn(1, 2, 200, 64).half(), torch.randn(1, 2, 200, 64).half()
    mask = torch.ones(1, 1, 1, 200, dtype=torch.bool)
    mask[..., :70] = False
    compiled_matches(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, mask)
    compiled_matches(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k[:, :, :150],
                     v[:, :, :150])


@pytest.mark.parametrize("target, dim", [("amdgpu:gfx942", 128), ("amdgpu:gfx942", 64), ("amdgpu:gfx950", 128),
                                         ("metax:xcore1000", 128)],
                         ids=["gfx942-d128", "gfx942-d64", "gfx950-d128", "metax-d128"])
def test_attention_tilings_of_64_lane_chips_in_the_emulator(monkeypatch, target, dim):
    """The attention kernel of 64-lane chips (codegen.attention_tilings'
    first tiling; on gfx942 at d 128, Q read from global memory so that two
    workgroups share a CU), run in the emulator: ragged query and key blocks
    under a causal mask (whose blocks before the diagonal are unmasked:
    tile-split-loops), a boolean mask, a negative scale (applied before the
    max, not folded into exp2)."""
    from tilemlir.targets import get_target
    from tilemlir.torch_backend import codegen

    monkeypatch.setenv("TILEMLIR_TARGET", target)
    monkeypatch.setenv("TILEMLIR_ENGINE", "emulator")
    tried = []
    write = codegen.attention_kernel

    def spy(group, specs, layouts, name, tiling):
        tried.append(tiling)
        return write(group, specs, layouts, name, tiling)

    monkeypatch.setattr(codegen, "attention_kernel", spy)
    q, k, v = (torch.randn(1, 2, 150, dim).half() for _ in range(3))
    compiled_matches(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v)
    assert tried == codegen.attention_tilings(get_target(target), dim, True)[:1]
    mask = torch.rand(1, 1, 150, 150) > 0.3
    compiled_matches(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=-0.05),
                     q, k, v, mask)


def test_an_attention_tiling_the_compiler_refuses_gives_way_to_the_next(monkeypatch):
    """GroupKernel.build takes the first tiling the compiler accepts: 512
    keys a block do not fit gfx942's LDS, 64 do (in the emulator)."""
    from tilemlir.torch_backend import codegen

    monkeypatch.setenv("TILEMLIR_ENGINE", "emulator")
    tilings = [codegen.AttentionTiling(128, 512, 256, 1), codegen.AttentionTiling(64, 64)]
    monkeypatch.setattr(codegen, "attention_tilings", lambda target, dim, causal, keys=None: tilings)
    tried = []
    write = codegen.attention_kernel
    monkeypatch.setattr(codegen, "attention_kernel",
                        lambda group, specs, layouts, name, tiling: tried.append(tiling) or write(
                            group, specs, layouts, name, tiling))
    q, k, v = (torch.randn(1, 1, 70, 64).half() for _ in range(3))
    compiled_matches(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), q, k, v)
    assert tried == tilings


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # the emulator's inf - inf
@pytest.mark.parametrize("engine", ["reference", "emulator"])
def test_attention_of_infinite_and_nan_scores_as_torch(monkeypatch, engine):
    """A NaN or inf product with a key the causal mask hides stays hidden; a
    key block whose scores are all -inf (from the inputs) gives nothing and
    poisons nothing; a row of only -inf scores is 0, as torch's; a positive
    scale below f32's normal numbers is not folded past the max."""
    monkeypatch.setenv("TILEMLIR_ENGINE", engine)
    attend = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    q, k, v = (torch.randn(1, 1, 70, 64).half() for _ in range(3))
    for poison in (float("nan"), float("inf"), -float("inf")):
        hidden = k.clone()
        hidden[0, 0, 50, 3] = poison
        compiled_matches(attend, q, hidden, v)
    q, k, v = torch.randn(1, 1, 40, 64).half(), torch.randn(1, 1, 130, 64).half(), torch.randn(1, 1, 130, 64).half()
    q[..., 0] = q[..., 0].abs() + 0.1
    k[:, :, :64, 0] = -float("inf")  # the first key block scores -inf
    compiled_matches(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), q, k, v)
    q[0, 0, 5, 0], q[0, 0, 5, 1:] = -float("inf"), 0
    k[..., 0] = k[..., 0].abs() + 0.1  # row 5 scores -inf at every key
    compiled_matches(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), q, k, v)
    q, k, v = (torch.randn(1, 1, 70, 64).half() for _ in range(3))
    compiled_matches(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1e-46), q, k, v)


def test_a_new_shape_recompiles():
    f = torch.compile(lambda a: torch.softmax(a * 2, -1), backend=backend)
    with torch.no_grad():
        for shape in ((4, 8), (6, 8), (3, 20)):
            x = torch.randn(*shape).half()
            assert torch.allclose(f(x).double(), torch.softmax(x.double() * 2, -1), atol=2e-3)


@pytest.mark.parametrize("masks", ["padding", "causal"])
def test_encoder_layer_with_masks(masks):
    layer = nn.TransformerEncoderLayer(64, 4, 96, dropout=0.0, batch_first=True).eval()
    x = torch.randn(2, 20, 64)
    padding = torch.zeros(2, 20, dtype=torch.bool)
    padding[1, 14:] = True

    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = layer

        def forward(self, x):
            if masks == "padding":
                return self.layer(x, src_key_padding_mask=padding)
            return self.layer(x, src_mask=nn.Transformer.generate_square_subsequent_mask(20), is_causal=True)

    check(Masked(), x)


def test_cases_that_run_in_torch_run_correctly(monkeypatch):
    # Not kernels of ours (each listed in the log line), and still right: max
    # pooling's indices, attention over a broadcast batch or another value head
    # size, integer max pooling, an unbatched adaptive pool.
    monkeypatch.delenv("TILEMLIR_TORCH_STRICT")
    x = torch.randn(1, 2, 4, 4).half()
    compiled_matches(lambda x: F.max_pool2d(x, 2, return_indices=True), x)
    q, k = torch.randn(2, 4, 16, 32).half(), torch.randn(1, 4, 16, 32).half()
    compiled_matches(lambda q, k: F.scaled_dot_product_attention(q, k, k), q, k)
    v = torch.randn(2, 4, 16, 64).half()
    compiled_matches(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), q, q, v)
    compiled_matches(lambda x: F.max_pool2d(x, 3, 2, 1), torch.randint(-50, 50, (1, 2, 7, 7)))
    compiled_matches(lambda x: F.adaptive_avg_pool2d(x, 2), torch.randn(3, 8, 8).half())


def test_fp16_convolution_with_fp32_batch_norm_keeps_fp16():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Conv2d(8, 4, 1)).eval()
    model[0].half()
    model[2].half()
    x = torch.randn(1, 3, 10, 10).half()
    with torch.no_grad():
        expected = model(x)
        got = torch.compile(model, backend=backend)(x)
    assert got.dtype == torch.float16
    assert (got.double() - expected.double()).abs().max() <= 2e-2 * expected.double().abs().max()


def test_attention_compiles_with_parameters_that_require_grad(monkeypatch):
    layer = nn.Linear(32, 32).half()

    def f(x):
        q = layer(x).view(1, 8, 2, 16).transpose(1, 2)
        return F.scaled_dot_product_attention(q, q, q)

    monkeypatch.delenv("TILEMLIR_TORCH_STRICT")  # with grad on, the forward is not an inference graph
    x = torch.randn(1, 8, 32).half()
    got = torch.compile(f, backend=backend)(x)
    assert torch.allclose(got.float(), f(x).float(), atol=2e-3)


def test_a_refused_kernel_for_new_strides_runs_the_groups_ops_in_torch(monkeypatch, caplog):
    # The graph is traced for contiguous inputs; a kernel for the transposed
    # strides of a later call is refused (here, by a patched writer): the
    # group's own copy of its ops runs in torch, once listed, and strict mode refuses.
    from tilemlir.torch_backend import codegen
    from tilemlir.torch_backend import dynamo as module

    monkeypatch.delenv("TILEMLIR_TORCH_STRICT")
    kernel = {}
    original = module.GroupKernel.__init__

    def keep(self, *args, **kwargs):
        original(self, *args, **kwargs)
        kernel["it"] = self
    monkeypatch.setattr(module.GroupKernel, "__init__", keep)

    def f(x):
        return (x * 2.0).sigmoid()

    x = torch.randn(6, 10).half()
    with torch.no_grad():
        torch.compile(f, backend=backend)(x)
    group_kernel = kernel["it"]
    written = codegen.pointwise_kernel

    def refuse(group, specs, name):
        if specs[0].stride != (10, 1):
            raise codegen.Unsupported("not these strides")
        return written(group, specs, name)
    monkeypatch.setattr(codegen, "pointwise_kernel", refuse)
    transposed = torch.randn(10, 6).half().t()
    with caplog.at_level(logging.WARNING, logger="tilemlir.torch"):
        (got,) = group_kernel(transposed)
        group_kernel(transposed)
    assert torch.allclose(got.float(), f(transposed.float()), atol=2e-3)
    assert caplog.text.count("its ops run in torch") == 1
    monkeypatch.setenv("TILEMLIR_TORCH_STRICT", "1")
    with pytest.raises(TilemlirTorchError, match="not these strides"):
        group_kernel(torch.randn(10, 6).half()[::2].t())


def test_reductions_over_leading_and_middle_dims():
    # A permuted view puts the reduced dims last; a kept dim is permuted back.
    x = torch.randn(3, 5, 7).half()
    compiled_matches(lambda x: (x.mean(1), x.sum((0, 2), keepdim=True), x.amax(0), (x * 2).var(1, keepdim=True),
                                x.softmax(1)), x)


def test_reductions_over_more_values_than_a_block_are_split():
    """A reduction over more than MAX_COLUMNS values a row runs in two
    kernels (codegen.split_reduction): partial results per chunk of a row,
    in f32 for fp16, then their reduction; over every element and along a
    dim whose extent is no multiple of the chunk, a variance from its
    chunks' means and squared deviations, NaN kept by amax and amin."""
    from tilemlir.torch_backend import codegen

    assert codegen.MAX_COLUMNS == partition.MAX_COLUMNS == 16384
    y = torch.randn(4, 256, 64).half()  # 65536 values
    compiled_matches(lambda y: (y.sum(), y.mean(), y.pow(2).sum() / 1000, *torch.var_mean(y)), y)
    x = torch.randn(3, 20000).half()
    compiled_matches(lambda x: (x.var(-1, keepdim=True), *torch.var_mean(x, -1, correction=0),
                                (x * 3).sum((0, 1)) / 1000), x)
    x[1, 19999], x[2, 7] = float("nan"), float("-inf")  # the last chunk's last column, the first's
    compiled_matches(lambda x: (x.sum(-1), x.mean(-1, keepdim=True), x.amax(-1), x.amin(1) * 2 + 1), x)
    compiled_matches(lambda z: z.sum((0, 2)), torch.randn(130, 3, 140).half())  # a middle dim kept


def test_split_any_counts_and_integer_sums():
    """any and all over a split reduction are counts in int64 (T5's fp16
    clamp over a large tensor); integer sums exact beyond 2^31."""
    def clamped(x):
        bound = torch.where(torch.isinf(x).any(), 60000.0 - 1000, 60000.0)
        return torch.clamp(x * 3, min=-bound, max=bound)

    x = torch.randn(4, 256, 64).half()
    compiled_matches(clamped, x)
    x[2, 100, 5] = float("inf")
    compiled_matches(clamped, x)
    rows = x.view(2, 32768)
    compiled_matches(lambda x: (x.isinf().any(-1), (x > -9).all(), torch.any(x.t() > 2, 0)), rows)
    big = torch.randint(-2**40, 2**40, (2, 20000))
    compiled_matches(lambda a, m: (a.sum(-1), a.sum(), a.amax(-1), a.amin(), m.sum()), big, big > 0)


def test_softmax_and_layer_norm_over_rows_longer_than_a_block():
    """A split group's full values come before its reductions: a softmax
    over longer rows is the max, the sum of exponentials, the division; a
    layer norm the statistics, then the normalization. Each group computes
    the element-wise values before them again from the input (no group
    writes a full value but the last)."""
    from torch._dynamo.backends.common import aot_autograd

    from tilemlir.torch_backend.dynamo import decompositions

    x = torch.randn(2, 20000).half()
    weight, bias = torch.rand(20000).half() + 0.5, torch.randn(20000).half()
    compiled_matches(lambda x, w, b: (F.softmax(x, -1), F.layer_norm(x, (20000,), w, b)), x, weight, bias)
    captured = {}

    def spy(gm, inputs):
        captured["groups"], captured["fallbacks"] = partition.partition(gm.graph)
        return gm
    for f, splits in ((lambda x: F.softmax(x, -1), [True, True, False]),
                      (lambda x: F.layer_norm(x, (20000,)), [True, False])):
        torch._dynamo.reset()
        with torch.no_grad():
            torch.compile(f, backend=aot_autograd(fw_compiler=spy, decompositions=decompositions()))(x)
        groups = captured["groups"]
        assert [g.split for g in groups] == splits and captured["fallbacks"] == []
        assert all(partition.shape_of(n) != (2, 20000) for g in groups[:-1] for n in g.outputs)


@pytest.mark.parametrize("engine", ["reference", "emulator"])
def test_split_reductions_in_each_engine(monkeypatch, engine):
    monkeypatch.setenv("TILEMLIR_ENGINE", engine)
    x = torch.randn(2, 8500).half()  # 17000 values: four whole chunks and a ragged one
    compiled_matches(lambda x: (x.sum(), x.mean(), *torch.var_mean(x, (0, 1)), x.amax((0, 1))), x)
    compiled_matches(lambda a: a.sum(), torch.randint(-2**40, 2**40, (2, 8500)))


def test_split_chunks_keep_each_stage_within_a_block():
    from tilemlir.torch_backend import codegen
    from tilemlir.torch_backend.pointwise import Unsupported

    assert codegen.split_chunk(16385) == codegen.split_chunk(65536) == codegen.ROW_ELEMENTS
    assert codegen.split_chunk(2**27) == 8192  # 16384 chunks
    assert codegen.split_chunk(codegen.MAX_COLUMNS ** 2) == codegen.MAX_COLUMNS
    with pytest.raises(Unsupported, match="at most 268435456 in two stages"):
        codegen.split_chunk(codegen.MAX_COLUMNS ** 2 + 1)


def test_options_and_modes_reach_the_backend():
    """torch.compile passes `options=` and `mode=` on: CUDA graphs follow the
    option, else the mode (reduce-overhead on, max-autotune-no-cudagraphs
    off); unknown options and modes are errors naming the known ones, through
    torch.compile too."""
    from tilemlir.torch_backend.dynamo import TilemlirTorchError, settings

    assert settings({"options": {"cudagraphs": False}, "mode": "reduce-overhead"}) == {"cudagraphs": False}
    assert settings({"mode": "reduce-overhead"}) == {"cudagraphs": True}
    assert settings({"mode": "max-autotune-no-cudagraphs"}) == {"cudagraphs": False}
    assert settings({"target": "amdgpu:gfx942"}) == {"target": "amdgpu:gfx942"}
    with pytest.raises(TilemlirTorchError, match=r"unknown option\(s\) 'graphs' .*known: target, engine, cudagraphs"):
        settings({"options": {"graphs": True}})
    with pytest.raises(TilemlirTorchError, match="unknown mode 'fast'"):
        settings({"mode": "fast"})
    compiled = torch.compile(SwiGLU().eval().half(), backend=backend, options={"graphs": True})
    with torch.no_grad(), pytest.raises(Exception, match="unknown option"):
        compiled(torch.randn(2, 8, 64).half())


def test_graph_replay_passes_cpu_calls_through():
    """A forward whose tensors are not on one CUDA device runs as compiled,
    each call (graphs.GraphedForward)."""
    from tilemlir.torch_backend.graphs import GraphedForward, wanted

    seen = []
    graphed = GraphedForward(lambda *args: seen.append(args) or (args[0] * 2,))
    x = torch.ones(3)
    for _ in range(3):
        assert torch.equal(graphed(x, 4)[0], x * 2)
    assert len(seen) == 3 and graphed.graph is None
    assert wanted({}) and not wanted({"cudagraphs": False})


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_graph_replay_on_the_gpu(monkeypatch, caplog):
    """On a GPU the third call replays the captured graph: no kernel is
    called, new input values are read, outputs of earlier calls keep their
    values, and the results are the compiled forward's."""
    from tilemlir.torch_backend import dynamo as module

    calls = []
    original = module.GroupKernel.__call__
    monkeypatch.setattr(module.GroupKernel, "__call__", lambda self, *t: calls.append(1) or original(self, *t))
    model = SwiGLU().eval().half().cuda()
    on_gpu = {"target": "nvidia:sm_90a", "engine": "device"}  # the suite hides the GPU from target detection
    compiled = torch.compile(model, backend=backend, options=on_gpu)
    unreplayed = torch.compile(model, backend=backend, options={**on_gpu, "cudagraphs": False})
    with torch.no_grad():
        x, y = (torch.randn(2, 8, 64, device="cuda").half() for _ in range(2))
        first, second = compiled(x), compiled(x)
        calls.clear()
        third = compiled(y)
        assert not calls, [r.getMessage()[-300:] for r in caplog.records if r.name == "tilemlir.torch"]
        assert torch.equal(first, second) and torch.equal(third, unreplayed(y))
        assert torch.equal(first, unreplayed(x))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_replayed_graph_follows_a_parameter_changed_in_place():
    """The captured graph reads a convolution's weight in place (its taps a
    view of it): a weight changed in place, through `.data` too, is seen by
    the next replay and every later one."""
    model = ConvBlock(32, 3, 1, 1, 1).eval().half().cuda().to(memory_format=torch.channels_last)
    on_gpu = {"target": "nvidia:sm_90a", "engine": "device"}
    compiled = torch.compile(model, backend=backend, options=on_gpu)
    x = torch.randn(4, 32, 14, 14, device="cuda").half().to(memory_format=torch.channels_last)
    with torch.no_grad():
        for _ in range(3):
            before = compiled(x)
        model.conv.weight.data.mul_(-1)
        expected = copy.deepcopy(model).double()(x.double())
        for _ in range(3):
            after = compiled(x)
            assert (after.double() - expected).abs().max() <= RELATIVE * expected.abs().max()
    assert not torch.equal(before, after)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("model,shape", [
    (ShiftedChain(), (4, 32, 14, 10)), (ResNetStem(16), (2, 3, 40, 36)), (StridedChain(), (4, 32, 14, 10)),
    (ShiftedChain(shared=True), (4, 32, 14, 10)), (Projection(), (4, 32, 14, 10))],
    ids=["shifted-chain", "stem-and-pool", "phase-planes", "stored-twice", "projection"])
@pytest.mark.parametrize("border_fills", [False, True], ids=["whole-fills", "border-fills"])
def test_images_written_in_place_in_replayed_graphs(monkeypatch, model, shape, border_fills):
    """On the GPU, in replayed graphs: images written into a shifted
    convolution's padded rows or inside a pad's border (their fills made at
    each replay, of every row or, as large rows are, of the border alone:
    dynamo.BORDER_FILL_BYTES) give the float64 result for every new input."""
    from tilemlir.torch_backend import dynamo

    if border_fills:
        monkeypatch.setattr(dynamo, "BORDER_FILL_BYTES", 0)
    model = model.eval().half().cuda().to(memory_format=torch.channels_last)
    reference = copy.deepcopy(model).double()
    compiled = torch.compile(model, backend=backend, options={"target": "nvidia:sm_90a", "engine": "device"})
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(*shape, device="cuda").half().to(memory_format=torch.channels_last)
            expected = reference(x.double())
            assert (compiled(x).double() - expected).abs().max() <= RELATIVE * expected.abs().max()


class TokenTypes(nn.Module):
    """transformers' BertEmbeddings with no token type ids: a buffer of
    zeros gathered at the position ids, then embedded."""

    def __init__(self):
        super().__init__()
        self.types = nn.Embedding(2, 16)
        self.register_buffer("token_type_ids", torch.zeros(1, 32, dtype=torch.long))

    def forward(self, x):
        positions = torch.arange(x.shape[1]).unsqueeze(0)
        buffered = torch.gather(self.token_type_ids.expand(positions.shape[0], -1), dim=1, index=positions)
        return x + self.types(buffered.expand(x.shape[0], x.shape[1]))


def test_gather_along_a_dim():
    x = torch.randn(4, 6).half()
    along_rows, along_columns = torch.randint(0, 6, (4, 3)), torch.randint(0, 4, (2, 6))
    compiled_matches(lambda x, i, j: (torch.gather(x, 1, i) * 2 + 1, torch.gather(x, 0, j), torch.gather(x, -1, i)),
                     x, along_rows, along_columns)
    check(TokenTypes(), torch.randn(3, 10, 16))


def test_a_gather_of_a_computed_value_reads_it_from_memory():
    """A gather (cross-entropy's pick of log-softmax) starts a group of its
    own rather than joining the one that computes its source."""
    x, t = torch.randn(6, 10).half(), torch.randint(0, 10, (6, 1))
    compiled_matches(lambda x, t: (torch.gather(torch.log_softmax(x, -1), 1, t),
                                   torch.gather(x * 2, 1, t)), x, t)


def test_scalars_are_moved_once_per_value_and_position():
    """GroupKernel.moved: a CPU scalar's device copy is reused while its bytes
    are the same at that position (-0.0 is not 0.0; NaN is itself)."""
    from types import SimpleNamespace

    from tilemlir.torch_backend.dynamo import GroupKernel

    kernel = SimpleNamespace(device=torch.device("cpu"), moved_tensors={})
    zero, negative = torch.tensor(0.0), torch.tensor(-0.0)
    first = GroupKernel.moved(kernel, 0, zero)
    assert GroupKernel.moved(kernel, 0, torch.tensor(0.0)) is first
    assert torch.copysign(torch.tensor(1.0), GroupKernel.moved(kernel, 0, negative)) == -1
    nan = GroupKernel.moved(kernel, 1, torch.tensor(float("nan")))
    assert GroupKernel.moved(kernel, 1, torch.tensor(float("nan"))) is nan and len(kernel.moved_tensors) == 2


def test_replayed_inputs_copy_the_memory_their_views_span():
    """graphs._span: an expanded bias spans its own elements only, and a copy
    through the span reproduces the view."""
    from tilemlir.torch_backend.graphs import _span, _span_view

    bias = torch.randn(8, 1).expand(8, 128)
    assert _span(bias) == 8 and _span(torch.empty(0, 3)) == 0
    base = torch.empty(_span(bias))
    base.copy_(_span_view(bias))
    assert torch.equal(base.as_strided(bias.shape, bias.stride()), bias)
    strided = torch.randn(6, 10)[::2, 1:9]
    base = torch.empty(_span(strided))
    base.copy_(_span_view(strided))
    assert torch.equal(base.as_strided(strided.shape, strided.stride()), strided)


def test_gemm_groups_take_longer_deeper_k_loops_where_a_producer_feeds_them(monkeypatch):
    """On sm_90a a GEMM group's K loop is TMA-fed with a producer warpgroup:
    block K 64 in 4 stages and, where M and N allow, 128x256 blocks of two
    consumer warpgroups (codegen.PRODUCER_FED_STEPS, measured on the H200)
    where K holds two such steps (one step takes no TMA pipeline); elsewhere
    32 in 2, which every shipped chip's shared memory holds. Run by the
    reference engine: 130 rows and 520 columns, ragged 128x256 blocks."""
    from tilemlir.targets import get_target
    from tilemlir.torch_backend import codegen

    hopper = get_target("nvidia:sm_90a")
    assert codegen.gemm_steps(hopper, 768) == codegen.GemmSteps(64, 4, 256, 256, hopper.compute.compute_units)
    assert codegen.PRODUCER_FED_STEPS == codegen.GemmSteps(64, 4, 256, 256)
    assert codegen.gemm_steps(hopper, 128) == codegen.gemm_steps(hopper, 768)
    assert codegen.gemm_steps(hopper, 64) == codegen.GemmSteps(32, 2)
    # A descriptor that does not state its SMs: the cost model's assumption.
    unstated = dataclasses.replace(hopper, compute=dataclasses.replace(hopper.compute, compute_units=UNKNOWN))
    assert codegen.gemm_steps(unstated, 768).wide_tiles == model_facts(unstated).compute_units > 0
    for chip in ("amdgpu:gfx942", "amdgpu:gfx950", "metax:xcore1000"):
        assert codegen.gemm_steps(get_target(chip), 768) == codegen.GemmSteps(32, 2)
    monkeypatch.setenv("TILEMLIR_TARGET", "nvidia:sm_90a")
    monkeypatch.setenv("TILEMLIR_ENGINE", "reference")
    sources = []
    original = codegen.gemm_kernel
    monkeypatch.setattr(codegen, "gemm_kernel", lambda *a, **k: sources.append(original(*a, **k)) or sources[-1])
    model = nn.Sequential(nn.Linear(128, 520), nn.GELU())
    check(model, torch.randn(130, 128))  # 2 x 3 blocks of 128x256, fewer than the SMs: 128x128
    assert "threads=128" in sources[-1][0] and "C_l = T.alloc_fragment((128, 128), 'float32')" in sources[-1][0]
    steps = codegen.gemm_steps
    # 6 CUs: the 6 wide blocks take one wave, 10 narrow ones two.
    monkeypatch.setattr(codegen, "gemm_steps", lambda target, k: dataclasses.replace(steps(target, k), wide_tiles=6))
    torch._dynamo.reset()
    check(model, torch.randn(130, 128))
    assert "threads=256" in sources[-1][0] and "C_l = T.alloc_fragment((128, 256), 'float32')" in sources[-1][0]


def test_wide_blocks_only_where_their_waves_are_no_slower():
    """128x256 blocks take about 1.9 narrow blocks' time (codegen.WIDE_BLOCK_TIME):
    ResNet-50's 3x3 convolutions at 7x7, b128 (81 x 2 wide blocks: two
    waves of 132 CUs; 81 x 4 narrow: three) keep 128x128; BERT-base's
    GEMMs at 32x512 take the wide blocks."""
    from tilemlir.torch_backend import codegen

    steps = dataclasses.replace(codegen.PRODUCER_FED_STEPS, wide_tiles=132)
    assert codegen.gemm_blocks(128 * 81, 512, 1, steps) == (128, 128, 128)
    for n in (768, 2304, 3072):
        assert codegen.gemm_blocks(32 * 512, n, 1, steps) == (128, 256, 256)
    assert codegen.gemm_blocks(32 * 512, 768, 1, codegen.GemmSteps()) == (128, 128, 128)
    assert codegen.gemm_blocks(40, 48, 1, steps) == (64, 64, 128)


class PaddedPositions(nn.Module):
    """RoBERTa's position ids (a running count of the tokens that are not
    padding), a packed sequence's index (a running count of the places its
    positions restart, as transformers' masks find them), both embedded, and
    a running sum of floats along a middle dim."""

    def __init__(self, vocab=20, dim=32, pad=1):
        super().__init__()
        self.pad = pad
        self.words, self.positions = nn.Embedding(vocab, dim), nn.Embedding(40, dim)
        self.segments = nn.Embedding(8, dim)

    def forward(self, ids, position_ids):
        mask = ids.ne(self.pad).int()
        positions = torch.cumsum(mask, dim=1).type_as(mask) * mask + self.pad
        starts = (torch.diff(position_ids, prepend=position_ids[:, :1] - 1) != 1).cumsum(-1)
        x = self.words(ids) + self.positions(positions) + self.segments(starts)
        return x + x.cumsum(1) * 0.1


@pytest.mark.parametrize("engine", ["reference", "emulator"])
def test_cumulative_sums(monkeypatch, engine):
    """cumsum is a masked sum over an expanded view (its element i sums the
    run's elements j <= i): of integers and booleans in int64, of fp16 in f32
    rounded once, as torch's; along any dim."""
    monkeypatch.setenv("TILEMLIR_ENGINE", engine)
    ids = torch.randint(2, 20, (2, 11))
    ids[1, 7:] = 1  # padding
    position_ids = torch.cat([torch.arange(6), torch.arange(5)]).repeat(2, 1)  # two packed sequences
    check(PaddedPositions(), ids, position_ids)
    if engine == "reference":
        compiled_matches(lambda m, b, s: (m.cumsum(0), b.cumsum(-1), torch.cumsum(s, 1, dtype=torch.float32)),
                         torch.randint(-2**40, 2**40, (5, 3)), torch.rand(2, 3, 9) > 0.5,
                         torch.randint(-99, 99, (5, 3)), exact=True)
        x = torch.randn(3, 6, 4).half()
        with torch.no_grad():
            got = torch.compile(lambda x: x.cumsum(1), backend=backend)(x)
        assert torch.equal(got, x.float().cumsum(1).half())


def test_slice_assignment_of_a_tensor():
    """`y[:, 1:] = x[:, :-1]` (a slice_scatter: BART's shift of the decoder's
    tokens) and a strided one; the result reads the source where the slice
    covers it."""
    def shift(ids):
        shifted = ids.new_zeros(ids.shape)
        shifted[:, 1:] = ids[:, :-1].clone()
        shifted[:, 0] = 2
        return shifted.masked_fill(shifted == -100, 1)

    def strided(x):
        y = x.clone()
        y[:, 1::3, 1:3] = x[:, :3, 2:4] * 2
        return y
    ids = torch.randint(0, 9, (3, 7))
    ids[0, 2] = -100
    compiled_matches(shift, ids)
    compiled_matches(strided, torch.randn(2, 9, 5).half(), exact=True)


def test_infinities_nans_any_and_clamp_by_tensors():
    """T5's fp16 clamp (a bound chosen by whether any value is inf, clamp by
    tensor bounds), isnan, and any / all along dims and over every element."""
    def clamped(x):
        bound = torch.where(torch.isinf(x).any(), 60000.0 - 1000, 60000.0)
        return torch.clamp(x * 3, min=-bound, max=bound) + torch.isnan(x)

    def tests(x):
        return x.isinf().all(-1, keepdim=True), torch.any(x > 0.5, 1), (x > 3).any(), (x > -9).all()
    x = torch.randn(2, 5, 8).half()
    compiled_matches(clamped, x)
    compiled_matches(tests, x)
    x[1, 2, 3], x[0, 4, 1] = float("inf"), float("nan")
    compiled_matches(clamped, x)
    compiled_matches(tests, x)


def test_an_empty_constant_and_an_alias_of_an_expanded_view():
    """A constant of no elements (a cache's first value, `torch.tensor([])`)
    computes nothing: torch makes it, strict or not; an alias is a view, not
    a copy (an expanded one's memory overlaps: no kernel could write it)."""
    def f(x, m):
        keys = torch.tensor([], dtype=x.dtype)
        mask = (m[:, None, None, :] > 0).expand(2, 1, 6, 6)
        return torch.cat([keys, x], -2) * 2, keys, torch.ops.aten.alias(mask)
    compiled_matches(f, torch.randn(2, 3, 5, 4).half(), torch.randn(2, 6))
