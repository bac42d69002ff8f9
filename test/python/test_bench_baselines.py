"""bench/baselines.py: recording GPU bench results as a versioned baseline and
naming regressions beyond an entry's measured noise."""

from __future__ import annotations

import json
from pathlib import Path

import bench_modules

REPO = Path(__file__).resolve().parents[2]


def _tool():
    return bench_modules.load("baselines")


def _models(path: Path, tilemlir_ms: float, eager_ms: float = 4.0) -> Path:
    path.write_text(json.dumps([{"model": "resnet50-b32", "ms": {"eager": eager_ms, "tilemlir": tilemlir_ms}}]))
    return path


def _calls(path: Path, call_us: float) -> Path:
    path.write_text(json.dumps({"rows": [{"case": "softmax", "call_us": call_us, "kernel_us": 6.0}]}))
    return path


def test_repeated_runs_set_the_noise_and_a_slower_run_is_named(tmp_path, capsys):
    tool = _tool()
    baseline = tmp_path / "h200.json"
    runs = [_calls(tmp_path / f"c{i}.json", us) for i, us in enumerate((16.0, 20.0, 18.0))]
    assert tool.main(["record", *map(str, runs), "--baseline", str(baseline), "--commit", "abc1234"]) == 0
    assert tool.main(["record", str(_models(tmp_path / "m.json", 10.0)), "--baseline", str(baseline),
                      "--commit", "def5678"]) == 0
    entries = json.loads(baseline.read_text())["entries"]
    assert entries["call/softmax"]["median"] == 18.0 and abs(entries["call/softmax"]["noise"] - 4 / 18) < 1e-12
    assert entries["models/resnet50-b32/tilemlir"]["peers"] == {"eager": 4.0}
    assert entries["models/resnet50-b32/tilemlir"]["commit"] == "def5678"
    capsys.readouterr()

    # Within the noise (22%) and within MIN_NOISE (5%): no regression.
    same = [_calls(tmp_path / "n1.json", 21.0), _models(tmp_path / "n2.json", 10.4)]
    assert tool.main(["compare", *map(str, same), "--baseline", str(baseline)]) == 0
    # 12 ms against 10 (no noise recorded: 5% allowed) is a regression, named.
    slower = [_calls(tmp_path / "s1.json", 21.0), _models(tmp_path / "s2.json", 12.0)]
    assert tool.main(["compare", *map(str, slower), "--baseline", str(baseline)]) == 1
    err = capsys.readouterr().err
    assert "regression: models/resnet50-b32/tilemlir: 12 ms against 10 at def5678" in err
    assert "call/softmax" not in err


def test_a_run_is_judged_against_a_peer_of_its_own(tmp_path, capsys):
    """--against PEER: each entry's ratio to that peer in its run, so a run
    whose every variant is slower alike (a slower host) is no regression,
    and one whose entry lost ground on the peer is, even where faster."""
    tool = _tool()
    baseline = tmp_path / "h200.json"
    tool.main(["record", str(_models(tmp_path / "m.json", 2.0, eager_ms=4.0)), "--baseline", str(baseline),
               "--commit", "abc1234"])
    capsys.readouterr()
    slower_host = _models(tmp_path / "n.json", 2.4, eager_ms=4.8)
    assert tool.main(["compare", str(slower_host), "--baseline", str(baseline)]) == 1
    assert tool.main(["compare", str(slower_host), "--baseline", str(baseline), "--against", "eager"]) == 0
    out = capsys.readouterr().out
    assert "| models/resnet50-b32/eager | 4 ms | 4.8 | - | - | no eager in both runs |" in out
    lost_ground = _models(tmp_path / "l.json", 1.9, eager_ms=3.0)
    assert tool.main(["compare", str(lost_ground), "--baseline", str(baseline), "--against", "eager"]) == 1
    assert "1.9 ms against 2 at abc1234 (1.27x over eager, noise allows 1.05x)" in capsys.readouterr().err


def test_the_shipped_baseline_reads_back():
    tool = _tool()
    entries = tool.load(REPO / "bench" / "baselines" / "h200.json")["entries"]
    assert any(key.startswith("models/") for key in entries) and any(key.startswith("call/") for key in entries)
