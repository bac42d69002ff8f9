"""`tilelang.language.fp8`: the fp8 dtype a kernel's target computes in.

TileLang asks torch which GPU it runs on; tilemlir asks the kernel's target
(tile-compile's rule: `target=`, else TILEMLIR_TARGET, else this machine's
GPU, else the emulator's gfx942), so a program picks the encoding its
matrix unit reads: FNUZ on gfx942, OCP (FN) on NVIDIA and gfx950.
"""

from __future__ import annotations

from tilemlir.language.api import TileLangError

_SPELLINGS = {  # (format, FNUZ?) -> tilemlir.language dtype name
    ("e4m3", False): "float8_e4m3fn", ("e4m3", True): "float8_e4m3fnuz",
    ("e5m2", False): "float8_e5m2", ("e5m2", True): "float8_e5m2fnuz",
}


def determine_fp8_type(fp8_format: str = "e4m3", target=None) -> str:
    """`T.float8_e4m3fn`/`T.float8_e5m2`, or their FNUZ forms where the
    target's matrix unit reads FNUZ (its descriptor's `matrix.fp8_formats`)."""
    from tilemlir.language.kernel import resolve_target
    from tilemlir.targets.model import is_unknown

    if fp8_format not in ("e4m3", "e5m2"):
        raise TileLangError(f"determine_fp8_type: fp8_format {fp8_format!r} is not 'e4m3' or 'e5m2'")
    formats = resolve_target(target).matrix.fp8_formats
    fnuz = not is_unknown(formats) and any(f.endswith("FNUZ") for f in formats)
    return _SPELLINGS[(fp8_format, fnuz)]


def determine_torch_fp8_type(fp8_format: str = "e4m3", target=None):
    """The torch dtype of `determine_fp8_type`."""
    from tilemlir.language.tensor_utils import map_torch_type

    return map_torch_type(determine_fp8_type(fp8_format, target))
