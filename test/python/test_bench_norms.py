"""bench/norms.py --prepare: the row kernels it generates compile for sm_90a to
PTX with no local memory and only 128-bit global accesses (the row tiles and the
weight vectors), one row per block included, and their launch metadata matches
the case."""

from __future__ import annotations

import importlib.util
import json

import bench_modules
import pytest

needs_mlir = pytest.mark.skipif(importlib.util.find_spec("mlir") is None, reason="needs the MLIR bindings")


def _bench():
    return bench_modules.load("norms")


def test_candidates_hold_whole_rows_within_the_register_share():
    bench = _bench()
    for cols in (1024, 4096, 8192):
        found = bench.candidates(cols)
        assert found
        assert any(block_rows == 1 for block_rows, _ in found), cols  # one row per block is a candidate
        for block_rows, threads in found:
            assert block_rows * cols % threads == 0
            assert block_rows * cols // threads <= bench.MAX_VALUES_PER_THREAD


@needs_mlir
@pytest.mark.parametrize("block_rows", [1, 2])
def test_prepare_one_small_case_per_kernel(tmp_path, block_rows):
    bench = _bench()
    rows, cols, threads = 64, 1024, 128
    manifest = bench.prepare(tmp_path, only=f"*_r{block_rows}_t{threads}", shapes=[(rows, cols)])
    assert manifest["failed"] == []
    assert sorted((e["op"], e["dtype"]) for e in manifest["bench"]) == sorted(
        (op, dtype) for op in bench.OPS for dtype in bench.DTYPES)
    weights = {"softmax": 0, "layernorm": 2, "rmsnorm": 1}
    for entry in manifest["bench"]:
        assert entry["local_bytes"] == 0, entry["name"]
        assert entry.get("spill_store_bytes", 0) == 0, entry["name"]  # where ptxas is on the PATH
        # every global access is 16 bytes (8 elements): the row tile a thread
        # holds is read and written in share / 8 of them; each weight vector
        # adds whole 16-byte loads too (one per distinct 8-column chunk a thread holds)
        accesses = entry["global_accesses"]
        assert set(accesses) <= {"ld.global.v4.b32", "st.global.v4.b32"}, (entry["name"], accesses)
        chunks = block_rows * cols // threads // 8
        assert accesses["st.global.v4.b32"] == chunks, entry["name"]
        weight_loads = accesses["ld.global.v4.b32"] - chunks
        n = weights[entry["op"]]
        assert weight_loads % max(n, 1) == 0 and (n == 0) == (weight_loads == 0), (entry["name"], accesses)
        assert weight_loads <= n * chunks, (entry["name"], accesses)
        metadata = json.loads((tmp_path / entry["json"]).read_text())
        (function,) = metadata["functions"]
        assert function["entry"] == entry["op"]
        x = {"shape": [rows, cols], "dtype": entry["dtype"]}
        vec = {"shape": [cols], "dtype": entry["dtype"]}
        assert function["arguments"] == [x] + [vec] * n + [x]
        (launch,) = function["launches"]
        assert launch["grid"] == [rows // block_rows, 1, 1]
        assert launch["block"] == [threads, 1, 1]
