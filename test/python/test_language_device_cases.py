"""The device-check cases of tilemlir.language kernels (language_device_cases.py,
run on the H200 by bench/device_check.py) hold on the reference engine: their
inputs fit the built functions and their float64 models and bounds agree with
what the kernels compute. They also run in the emulator for the shipped chips
test_language.py's own tests leave out (gfx90a, xcore1500)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from language_device_cases import CASES
from mlir import ir

from tilemlir import runtime
from tilemlir.dialects import tile

pytestmark = pytest.mark.filterwarnings("ignore::tilemlir.language.TileLangWarning")


@pytest.mark.parametrize("engine,target", [("reference", None), ("emulator", "amdgpu:gfx90a"),
                                           ("emulator", "metax:xcore1500")])
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case_model_holds(case, engine, target):
    text = case.text()
    entry = re.search(r"func\.func @(\w+)", text).group(1)
    args = case.inputs(np.random.default_rng(0))
    expected = case.model([np.copy(a) for a in args])
    assert set(case.keep) <= set(expected)
    runtime.run(ir.Module.parse(text, tile.make_context()), entry, args, engine=engine, target=target)
    for position, (want, bound) in expected.items():
        error = np.abs(np.asarray(args[position], np.float64) - np.asarray(want, np.float64))
        assert np.all(error <= np.asarray(bound, np.float64)), (case.name, position)
