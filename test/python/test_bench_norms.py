"""bench/norms.py --prepare: the row kernels it generates compile for sm_90a to
PTX with no local memory, and their launch metadata matches the case."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

needs_mlir = pytest.mark.skipif(importlib.util.find_spec("mlir") is None, reason="needs the MLIR bindings")


def _bench():
    spec = importlib.util.spec_from_file_location("bench_norms", REPO / "bench" / "norms.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_candidates_hold_whole_rows_within_the_register_share():
    bench = _bench()
    for cols in (1024, 4096, 8192):
        found = bench.candidates(cols)
        assert found
        for block_rows, threads in found:
            assert block_rows * cols % threads == 0
            assert block_rows * cols // threads <= bench.MAX_VALUES_PER_THREAD


@needs_mlir
def test_prepare_one_small_case_per_kernel(tmp_path):
    bench = _bench()
    rows, cols, block_rows, threads = 64, 1024, 2, 128
    manifest = bench.prepare(tmp_path, only=f"*_r{block_rows}_t{threads}", shapes=[(rows, cols)], diagnostic=False)
    assert manifest["failed"] == []
    assert sorted((e["op"], e["dtype"]) for e in manifest["bench"]) == sorted(
        (op, dtype) for op in bench.OPS for dtype in bench.DTYPES)
    weights = {"softmax": 0, "layernorm": 2, "rmsnorm": 1}
    for entry in manifest["bench"]:
        assert entry["local_bytes"] == 0, entry["name"]
        assert entry.get("spill_store_bytes", 0) == 0, entry["name"]  # where ptxas is on the PATH
        # one 16-bit load per element of the row tile a thread holds, and one store
        share = block_rows * cols // threads
        assert entry["global_accesses"].get("st.global.b16", 0) + 8 * entry["global_accesses"].get(
            "st.global.v4.b32", 0) == share, entry["name"]
        metadata = json.loads((tmp_path / entry["json"]).read_text())
        (function,) = metadata["functions"]
        assert function["entry"] == entry["op"]
        x = {"shape": [rows, cols], "dtype": entry["dtype"]}
        vec = {"shape": [cols], "dtype": entry["dtype"]}
        assert function["arguments"] == [x] + [vec] * weights[entry["op"]] + [x]
        (launch,) = function["launches"]
        assert launch["grid"] == [rows // block_rows, 1, 1]
        assert launch["block"] == [threads, 1, 1]
