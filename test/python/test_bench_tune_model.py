"""bench/tune_model.py: the figures it reports (Spearman's rank correlation,
the model's top choice and the default as fractions of the best measured),
and its candidates being tile-tune's, compiled as tile-tune compiles them."""

from __future__ import annotations

import importlib.util
import json
import math

import bench_modules
import pytest

needs_mlir = pytest.mark.skipif(importlib.util.find_spec("mlir") is None, reason="needs the MLIR bindings")


def _bench():
    return bench_modules.load("tune_model")


def test_spearman_and_ranks():
    bench = _bench()
    assert bench.ranks([3.0, 1.0, 2.0, 1.0]) == [4.0, 1.5, 3.0, 1.5]
    assert bench.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert bench.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert bench.spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert math.isnan(bench.spearman([1, 2], [2, 1]))  # under 3 points
    assert math.isnan(bench.spearman([1, 1, 1], [1, 2, 3]))  # no spread


def test_summary_fractions():
    """The best measured, the model's fastest (top) and the default, over the
    candidates both measured correct and predicted."""
    bench = _bench()
    case = {"candidates": [{"name": n, "default": n == "b"} for n in "abcd"]}
    measured = {"a": 2.0, "b": 4.0, "c": 1.0}  # d: wrong, not timed
    predicted = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 0.5}
    figures = bench.summarise(case, measured, predicted)
    assert (figures["candidates"], figures["best"], figures["top"], figures["default"]) == (3, "c", "a", "b")
    assert (figures["top_fraction"], figures["default_fraction"]) == (0.5, 0.25)
    assert figures["spearman"] == pytest.approx(-0.5)  # ranks 1, 2, 3 against 2, 3, 1
    assert bench.summarise(case, {}, predicted) is None


def test_reports_saved_before_the_schema_are_read_as_schema_1():
    """--analyse re-reads saved reports: one --prepare wrote before the report
    had a schema_version (launch metadata only) gives the model its kernel's
    shared memory, its launches' dynamic shared memory; a new one is kept."""
    bench = _bench()
    launch = {"kernel": "gemm_kernel0", "grid": [4, 4, 1], "block": [128, 1, 1], "dynamic_shared_bytes": 9728}
    old = {"target": "nvidia:sm_90a", "functions": [{"entry": "gemm", "launches": [
        {"memset": {"argument": 2, "element_bytes": 4, "bits": 0}}, launch]}]}
    (kernel,) = bench.schema_1(old)["kernels"]
    assert (kernel["shared_bytes"], kernel["occupancy"], bench.schema_1(old)["family"]) == (9728, None, "nvidia")
    new = {**old, "schema_version": 1, "kernels": []}
    assert bench.schema_1(new) is new


@needs_mlir
def test_prepare_compiles_tile_tunes_candidates(tmp_path, monkeypatch):
    """One small case: every candidate tile-tune considers, compiled to PTX
    with its launch metadata and the model's prediction; the default first."""
    bench = _bench()
    monkeypatch.setattr(bench.gemm, "SHAPES", [(16, 64, 64)])
    monkeypatch.setattr(bench.gemm, "DTYPES", ["f16"])
    bench.prepare(tmp_path, 1)
    (case,) = json.loads((tmp_path / "manifest.json").read_text())["cases"]
    candidates = case["candidates"]
    _, _, _, _, chosen = bench.tuned_case("f16", 16, 64, 64)
    assert [c["describe"] for c in candidates] == [c.tuned().describe() for c in chosen]
    assert candidates[0]["default"] and not any(c["default"] for c in candidates[1:])
    assert all(c["compiled"] and c["predicted"] > 0 for c in candidates)
    assert ".entry gemm_kernel0" in (tmp_path / f"{candidates[0]['name']}.ptx").read_text()
    reports = json.loads((tmp_path / "reports.json").read_text())
    assert set(reports) == {c["name"] for c in candidates}


def test_split_k_cases_have_an_f32_c_and_split_k_candidates(monkeypatch, tmp_path):
    """`--cases split-k`: too few C tiles for the H200 and an f32 C, so some
    candidates split K; their memset reaches the launch metadata."""
    bench = _bench()
    assert all(c == "f32" for *_, c in bench.case_list("split-k"))
    assert bench.case_list("gemm")[0][-1] == "f16" and bench.case_key("f16", 16, 64, 64) == "f16_16x64x64"
    monkeypatch.setattr(bench, "SPLIT_K_CASES", [("f16", 16, 64, 1024)])
    whole = bench.tuned_case

    def fewer(*args):  # the default and two split-K candidates are what is checked: compile only those
        *rest, chosen = whole(*args)
        return (*rest, chosen[:1] + [c for c in chosen[1:] if c.tuned().split_k > 1][:2])

    monkeypatch.setattr(bench, "tuned_case", fewer)
    bench.prepare(tmp_path, 1, "split-k")
    (case,) = json.loads((tmp_path / "manifest.json").read_text())["cases"]
    assert (case["key"], case["c"]) == ("f16_16x64x1024_f32", "f32")
    split = [c for c in case["candidates"] if c["config"]["split_k"] > 1]
    assert split and all(c["compiled"] for c in split)
    launches = json.loads((tmp_path / split[0]["json"]).read_text())["functions"][0]["launches"]
    assert launches[0] == {"memset": {"argument": 2, "element_bytes": 4, "bits": 0}}
