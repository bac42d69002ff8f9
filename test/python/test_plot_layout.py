"""tile-compile --plot-layout FILE.png: a PNG of the kernel's lane layouts
and bank maps (its data is tested in test_decisions.py), an optional
dependency that fails clearly when missing, and no PNG when anything fails."""

from __future__ import annotations

import dataclasses
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from kernel_text import EXAMPLES

import tilemlir
from tilemlir.tools import plot_layout, tile_compile

SEED = str(EXAMPLES / "seed_fp8_gemm.mlir")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (the first, right after the magic)."""
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def compile_with(*args: str) -> int:
    return tile_compile.main([SEED, "--target", "amdgpu:gfx942", "-o", "/dev/null", *args])


def test_draws_every_fragment_and_buffer(tmp_path):
    """%C_local (whole and its labelled 32x32 corner), %A_shared and %B_shared:
    two columns of panels, two rows, each as large as the labelled corner
    needs; a bank map alone is one panel of the default size."""
    every, one = tmp_path / "all.png", tmp_path / "one.png"
    assert compile_with("--plot-layout", str(every)) == 0
    assert compile_with("--plot-layout", str(one), "--plot-buffer", "A_shared") == 0
    panel = round((32 * plot_layout.CELL_PIXELS / plot_layout.DPI + plot_layout.MARGIN_INCHES) * plot_layout.DPI)
    assert png_size(every.read_bytes()) == (2 * panel, 2 * panel)
    assert png_size(one.read_bytes()) == tuple(round(x * plot_layout.DPI) for x in plot_layout.PANEL_INCHES)
    assert every.stat().st_size > 50_000  # a drawing, not an empty canvas


@pytest.fixture(scope="module")
def seed_decisions():
    return tilemlir.compile(Path(SEED).read_text(), target="amdgpu:gfx942", emit="gpu").decisions


def labelled_panel(figure):
    (axes,) = [axes for axes in figure.axes if axes.texts]
    return axes


def test_zooms_to_one_instruction_tile(seed_decisions):
    """The seed's accumulator on gfx942 is laid out by v_mfma_f32_32x32x16_fp8:
    the labelled panel is one 32x32 tile, its labels at least 9 pixels high
    with two lines fitting in a cell, each cell coloured by its thread from
    the discrete palette (thread mod 20), so neighbouring threads differ."""
    figure = plot_layout.build_figure(seed_decisions, ["C_local"])
    whole, axes = figure.axes
    assert not whole.texts and whole.patches  # the outline of the zoomed tile
    assert axes.get_xlim() == (-0.5, 31.5) and axes.get_ylim() == (31.5, -0.5)
    assert len(axes.texts) == 32 * 32 and "one 32x32 instruction tile" in axes.get_title()
    label_pixels = {text.get_fontsize() * figure.dpi / 72 for text in axes.texts}
    (pixels,) = label_pixels
    box = axes.get_window_extent()
    assert pixels >= 9 and 2 * pixels <= min(box.width, box.height) / 32
    owner = seed_decisions[0].fragments[0].owners()[0][:32, :32]
    colours = np.array(plot_layout.palette())
    assert len({tuple(c) for c in colours}) == 20
    assert all(tuple(colours[i]) != tuple(colours[(i + 1) % 20]) for i in range(20))
    assert np.array_equal(axes.images[0].get_array(), colours[owner % 20])
    assert not np.array_equal(colours[owner[:, :-1] % 20], colours[owner[:, 1:] % 20])


@pytest.mark.parametrize("tile, window", [((16, 16), (16, 16)), ((64, 256), (32, 32)), (None, (32, 32))],
                         ids=["16x16-mfma", "wgmma-capped", "the-kernels-gemm"])
def test_zoom_follows_the_instruction(seed_decisions, tile, window):
    """A 16x16 instruction zooms to 16x16; a tile larger than MAX_DETAIL (64xN
    wgmma) is cut to 32x32; a fragment no instruction lays out takes the
    kernel's gemm's instruction tile (here 32x32)."""
    kernel = seed_decisions[0]
    fragment = dataclasses.replace(kernel.fragments[0], instruction_tile=tile)
    kernel = dataclasses.replace(kernel, fragments=[fragment])
    assert plot_layout.detail_window(kernel, fragment) == window
    axes = labelled_panel(plot_layout.build_figure([kernel], ["C_local"]))
    assert axes.get_xlim() == (-0.5, window[1] - 0.5) and len(axes.texts) == window[0] * window[1]


def test_zoom_without_any_instruction(seed_decisions):
    """No gemm, no instruction: the labelled corner is DEFAULT_DETAIL a side."""
    kernel = dataclasses.replace(seed_decisions[0], gemms=[])
    fragment = dataclasses.replace(kernel.fragments[0], instruction_tile=None)
    assert plot_layout.detail_window(kernel, fragment) == (16, 16)


def test_unknown_buffer_names_the_known_ones(tmp_path, capsys):
    png = tmp_path / "x.png"
    assert compile_with("--plot-layout", str(png), "--plot-buffer", "%nope") == 1
    assert ("error: --plot-buffer: no fragment or shared buffer named nope (this kernel has %A_shared, "
            "%B_shared, %C_local)") in capsys.readouterr().err
    assert not png.exists()


def test_without_matplotlib(tmp_path, capsys, monkeypatch):
    """`import matplotlib` fails (None in sys.modules makes it raise ImportError)."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    png = tmp_path / "x.png"
    assert compile_with("--plot-layout", str(png)) == 1
    err = capsys.readouterr().err
    assert err == "tile-compile: error: --plot-layout needs matplotlib: pip install tilemlir[plot]\n"
    assert not png.exists()


@pytest.mark.parametrize("args, message", [
    (["--plot-layout", "{tmp}/no/such/dir/x.png"], "error: "),
    (["--plot-layout", "-"], "error: --plot-layout writes a PNG file: give a file name"),
    (["--plot-buffer", "%A_shared"], "error: --plot-buffer selects what --plot-layout draws"),
    (["--plot-layout", "{tmp}/x.png", "--target", "metax:xcore1500"], "error: tile-legalize-precision"),
], ids=["missing-directory", "stdout", "buffer-without-plot", "failed-compile"])
def test_errors_write_no_png(tmp_path, capsys, args, message):
    args = [arg.format(tmp=tmp_path) for arg in args]
    assert compile_with(*args) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert list(tmp_path.rglob("*.png")) == []
