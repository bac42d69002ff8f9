"""Performance baselines kept per version, and the comparison that names regressions.

    python bench/baselines.py record  RESULT.json... --baseline bench/baselines/h200.json --commit SHA [--device NAME]
    python bench/baselines.py compare RESULT.json... --baseline bench/baselines/h200.json [--against PEER]

RESULT files are what the GPU benches write: bench/models.py's models.json
(milliseconds per forward of each model and variant) and
bench/call_overhead.py's call_overhead.json (microseconds per call). Each
measurement becomes an entry keyed `models/<model>/<variant>` or
`call/<case>`, with its unit (lower is better for every one), the commit and
date it was measured at, and the peers measured in the same run (eager,
Inductor, torch) so that a later reader sees the ratio as well as the time.

`record` adds the files' values to the baseline: several files of the same
commit (repeated runs, as the benches are meant to be run) give each entry a
median and a noise, the relative spread (max - min) / median of its samples.
`compare` reads new results and reports, for every entry both hold, the new
value over the baseline's median; an entry is a regression when it is slower
by more than its noise, and at least by MIN_NOISE (one run of a GPU bench moves
by a few percent from process to process, see bench/results). The exit status
is 1 when any entry regressed, and each regression is named on stderr.

With `--against PEER` (a variant or peer of the same run, e.g. "inductor
graphs") each entry is judged by its ratio to that peer in its own run,
which cancels what the machine moves alike for both: between two H200
machines of this project's runs, the host-bound variants (eager, Inductor
without graphs, BERT 8x128's) moved by 16-34% together while the replayed
graphs moved by 1%. Compare CUDA-graph variants against a CUDA-graph peer,
host-bound ones against eager. Entries without that peer in both runs (the
peer itself among them) are listed and not judged.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from pathlib import Path

MIN_NOISE = 0.05
FORMAT = 1


def measurements(path: Path) -> dict[str, dict]:
    """{key: {"value", "unit", "peers"}} of one result file."""
    data = json.loads(path.read_text())
    found = {}
    if isinstance(data, list):  # bench/models.py
        for row in data:
            times = row.get("ms", {})
            for variant, value in times.items():
                peers = {v: t for v, t in times.items() if v != variant}
                found[f"models/{row['model']}/{variant}"] = {"value": value, "unit": "ms", "peers": peers}
    elif isinstance(data, dict) and "rows" in data:  # bench/call_overhead.py
        for row in data["rows"]:
            found[f"call/{row['case']}"] = {"value": row["call_us"], "unit": "us",
                                           "peers": {"kernel_us": row["kernel_us"],
                                                     "kernel_loop_us": row.get("kernel_loop_us")}}
    else:
        raise SystemExit(f"{path}: not a result file of bench/models.py or bench/call_overhead.py")
    return found


def load(path: Path) -> dict:
    if not path.exists():
        return {"format": FORMAT, "entries": {}}
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT:
        raise SystemExit(f"{path}: baseline format {data.get('format')!r}, this tool reads {FORMAT}")
    return data


def record(files: list[Path], baseline: Path, commit: str, device: str) -> int:
    data = load(baseline)
    samples: dict[str, list] = {}
    for path in files:
        for key, found in measurements(path).items():
            samples.setdefault(key, []).append(found)
    today = datetime.date.today().isoformat()
    for key, found in samples.items():
        values = [f["value"] for f in found]
        median = statistics.median(values)
        data["entries"][key] = {
            "median": median, "unit": found[0]["unit"], "samples": values,
            "noise": (max(values) - min(values)) / median if median else 0.0,
            "peers": found[0]["peers"], "commit": commit, "date": today, "device": device,
        }
    baseline.parent.mkdir(parents=True, exist_ok=True)
    baseline.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"{baseline}: {len(samples)} entries recorded at {commit}")
    return 0


def compare(files: list[Path], baseline: Path, against: str | None = None) -> int:
    entries = load(baseline)["entries"]
    new: dict[str, list] = {}
    for path in files:
        for key, found in measurements(path).items():
            new.setdefault(key, []).append(found)
    regressions = []
    measure = f"new / baseline, each over {against} in its run" if against else "new / baseline"
    print(f"| entry | baseline | new | {measure} | allowed | verdict |")
    print("|---|---:|---:|---:|---:|---|")
    for key in sorted(set(new) & set(entries)):
        entry = entries[key]
        value = statistics.median(found["value"] for found in new[key])
        ratio = value / entry["median"]
        if against is not None:
            peers = [found["peers"].get(against) for found in new[key]]
            if entry["peers"].get(against) is None or None in peers:
                print(f"| {key} | {entry['median']:.3g} {entry['unit']} | {value:.3g} | - | - | "
                      f"no {against} in both runs |")
                continue
            ratio = (value / statistics.median(peers)) / (entry["median"] / entry["peers"][against])
        allowed = max(entry["noise"], MIN_NOISE)
        verdict = "regression" if ratio > 1 + allowed else ("faster" if ratio < 1 - allowed else "same")
        if verdict == "regression":
            regressions.append(f"{key}: {value:.3g} {entry['unit']} against {entry['median']:.3g} at "
                               f"{entry['commit']} ({ratio:.2f}x{f' over {against}' if against else ''}, "
                               f"noise allows {1 + allowed:.2f}x)")
        print(f"| {key} | {entry['median']:.3g} {entry['unit']} | {value:.3g} | {ratio:.2f} | {1 + allowed:.2f} | "
              f"{verdict} |")
    for key in sorted(set(new) - set(entries)):
        print(f"| {key} | - | {statistics.median(found['value'] for found in new[key]):.3g} | - | - | "
              "not in the baseline |")
    for line in regressions:
        print(f"regression: {line}", file=sys.stderr)
    return 1 if regressions else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("record", "compare"):
        command = sub.add_parser(name)
        command.add_argument("results", nargs="+", type=Path)
        command.add_argument("--baseline", type=Path, default=Path(__file__).parent / "baselines" / "h200.json")
        if name == "record":
            command.add_argument("--commit", required=True)
            command.add_argument("--device", default="NVIDIA H200")
        else:
            command.add_argument("--against", metavar="PEER",
                                 help="judge each entry by its ratio to this peer of its own run")
    args = parser.parse_args(argv)
    if args.command == "record":
        return record(args.results, args.baseline, args.commit, args.device)
    return compare(args.results, args.baseline, args.against)


if __name__ == "__main__":
    raise SystemExit(main())
