"""bench/models.py's soak summary: drift, memory growth and recompilations over
time windows (the GPU run itself needs the device machine)."""

from __future__ import annotations

import bench_modules
import pytest


def _tool():
    return bench_modules.load("models")


def _window(median: float, p99: float, reserved: int, allocated: int, compiles: int) -> dict:
    return {"median_ms": median, "p99_ms": p99, "reserved": reserved, "allocated": allocated, "compiles": compiles}


def test_soak_summary_reports_drift_growth_and_recompiles():
    tool = _tool()
    windows = [_window(2.0, 2.2, 100, 50, 1), _window(2.1, 2.6, 100, 50, 1), _window(1.98, 2.1, 164, 60, 2)]
    summary = tool.soak_summary(windows)
    assert summary["window_count"] == 3
    assert summary["drift"] == pytest.approx(-0.01)
    assert summary["worst_drift"] == pytest.approx(0.05)
    assert summary["p99_over_median"] == pytest.approx(2.6 / 2.1)
    assert (summary["reserved_growth"], summary["allocated_growth"], summary["recompiles"]) == (64, 10, 1)


def test_percentile_is_the_nearest_rank():
    tool = _tool()
    values = [float(v) for v in range(1, 101)]
    assert tool.percentile(values, 0.99) == 99.0
    assert tool.percentile(values, 0.5) == 50.0
    assert tool.percentile([3.0], 0.99) == 3.0
    assert tool.percentile(list(reversed(values)), 1.0) == 100.0
