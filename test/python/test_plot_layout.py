"""tile-compile --plot-layout FILE.png: a PNG of the kernel's lane layouts
and bank maps (its data is tested in test_decisions.py), an optional
dependency that fails clearly when missing, and no PNG when anything fails."""

from __future__ import annotations

import struct
import sys

import pytest
from kernel_text import EXAMPLES

from tilemlir.tools import tile_compile

SEED = str(EXAMPLES / "seed_fp8_gemm.mlir")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (the first, right after the magic)."""
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def compile_with(*args: str) -> int:
    return tile_compile.main([SEED, "--target", "amdgpu:gfx942", "-o", "/dev/null", *args])


def test_draws_every_fragment_and_buffer(tmp_path):
    """%C_local (whole and its labelled corner), %A_shared and %B_shared: two
    columns of panels, two rows; one panel alone is one column wide."""
    every, one = tmp_path / "all.png", tmp_path / "one.png"
    assert compile_with("--plot-layout", str(every)) == 0
    assert compile_with("--plot-layout", str(one), "--plot-buffer", "A_shared") == 0
    (width, height), (one_width, one_height) = png_size(every.read_bytes()), png_size(one.read_bytes())
    assert (width, height) == (2 * one_width, 2 * one_height) and one_width >= 400
    assert every.stat().st_size > 50_000  # a drawing, not an empty canvas


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
