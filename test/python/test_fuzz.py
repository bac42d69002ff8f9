"""Mutation fuzzing of tile-opt over the test corpus (fixed seed, bounded count
and time): no traceback, no crash signal, exit status 0 or 1 only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import run_tool

WORKER = Path(__file__).with_name("fuzz_worker.py")
SEED, COUNT, SECONDS = 20261129, 1500, 60


def test_mutated_corpus_never_crashes(tmp_path: Path):
    result = subprocess.run(
        [sys.executable, str(WORKER), str(SEED), str(COUNT), str(SECONDS), str(tmp_path)],
        capture_output=True, text=True, timeout=SECONDS + 120, check=False,
    )
    if result.returncode != 0:
        progress = json.loads((tmp_path / "progress.json").read_text())
        raise AssertionError(
            f"the fuzz worker died with status {result.returncode} on {progress['argv']}\n"
            f"{result.stderr[-3000:]}"
        )
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["ran"] >= 50, "the time budget allowed too few cases to mean anything"
    assert report["failures"] == [], json.dumps(report["failures"][:3], indent=1)
    # Both outcomes occur, so the mutants reach past the parser and the test can fail.
    assert report["statuses"].get("0", 0) > 0 and report["statuses"].get("1", 0) > 0, report["statuses"]


def test_mutants_through_the_real_command(tmp_path: Path):
    """A few mutants end to end, through the installed console script."""
    sys.path.insert(0, str(WORKER.parent))
    import random

    from fuzz_worker import corpus, mutate

    rng = random.Random(SEED)
    texts = corpus()
    for _ in range(8):
        text = mutate(rng.choice(texts), rng)
        result = run_tool("tile-opt", "-", "--split-input-file", stdin=text)
        assert result.returncode in (0, 1), (text, result.stderr)
        assert "Traceback" not in result.stderr
