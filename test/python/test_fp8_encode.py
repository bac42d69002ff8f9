"""fp8 encoding in software (tilemlir/passes/fp8_decode.encode_from_f32), for
the formats a chip's hardware does not convert (OCP on gfx942, FNUZ on
gfx950): every one of the 65536 f16 patterns, NaN and infinities included,
rounded in the emulator bit for bit as the reference engine rounds it."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest
from tilelang_style.codec import round_to

from tilemlir.runtime.dtypes import convert


@pytest.mark.parametrize("target, dtype8", [
    ("amdgpu:gfx942", "float8_e4m3fn"), ("amdgpu:gfx942", "float8_e5m2"),
    ("amdgpu:gfx950", "float8_e4m3fnuz"), ("amdgpu:gfx950", "float8_e5m2fnuz"),
])
def test_every_f16_rounds_as_the_reference(target, dtype8, monkeypatch):
    monkeypatch.setenv("TILEMLIR_TARGET", target)
    round_to._cache.clear()
    patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).reshape(256, 256)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = round_to(dtype8)
    assert kernel.engine == "emulator"
    got = kernel(patterns)
    expected = convert(patterns, getattr(ml_dtypes, dtype8))
    assert np.array_equal(got.view(np.uint8), expected.view(np.uint8))
    assert "v_cvt_pk_fp8" not in kernel.get_isa() or dtype8 in ("float8_e4m3fnuz", "float8_e5m2fnuz")
