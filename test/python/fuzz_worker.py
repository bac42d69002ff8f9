"""Fuzz worker: mutates the .mlir test corpus and feeds each mutant to
tile-opt's entry point in this process (much faster than a process per case).

Before each case it records the case in a progress file, so that if native
code kills the process with a signal the parent test can name the input.
Each case's stdout/stderr (file descriptors 1 and 2, so native output too) are
captured; a case fails if the exit status is not 0 or 1 or if a Python
traceback appears. Usage: fuzz_worker.py SEED COUNT SECONDS WORKDIR
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

TOKENS = [
    "{", "}", "(", ")", "<", ">", ",", ":", "=", "%0", "%arg0", "^bb1:", "\"", "\\",
    '"tile.gemm"', '"tile.copy"', '"tile.kernel"', '"tile.fill"', '"tile.reduce"',
    '"tile.alloc_shared"() : () -> memref<4xf16, #gpu.address_space<workgroup>>',
    "memref<", "memref<?x4xf16>", "index", "f8E4M3FNUZ", "i1", "bf16", "vector<4xf16>",
    "#gpu.address_space<private>", "#gpu.address_space<workgroup>", "// -----",
    "// expected-error@below {{x}}", "// expected-note@-3 {{y}}", "{tile.num_stages = 0 : i64}",
    "gpu.yield", "scf.reduce", "array<i64: 0>", "array<i64: 1, 2, 3, 4>", "-1",
    "9223372036854775807", "operandSegmentSizes = array<i32: 9, 9, 9, 9>", "module {",
    "dense<1.0> : tensor<2xf32>", "accum_dtype = i1", "transpose_a = true", "kind = \"min\"",
    "#map = affine_map<(d0) -> (d0)>", "\x00", "\u00e9",
]

FLAGS = [
    [],
    ["--split-input-file"],
    ["--split-input-file", "--verify-diagnostics"],
    ["-p", "builtin.module(tile-verify,canonicalize,cse)"],
    ["-p", "builtin.module(func.func(canonicalize,tile-verify))"],
    ["--mlir-print-op-generic"],
    ["--tile-verify{allow-narrow-accumulator=true}"],
]


def corpus() -> list[str]:
    files = sorted((REPO / "test").rglob("*.mlir")) + sorted((REPO / "examples").glob("*.mlir"))
    return [f.read_text(encoding="utf-8", errors="replace") for f in files if "Output" not in f.parts]


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 4)):
        if not text:
            return rng.choice(TOKENS)
        kind = rng.randrange(6)
        at = rng.randrange(len(text))
        if kind == 0:  # delete a span
            text = text[:at] + text[at + rng.randint(1, 24):]
        elif kind == 1:  # insert a token
            text = text[:at] + rng.choice(TOKENS) + text[at:]
        elif kind == 2:  # duplicate or drop a line
            lines = text.split("\n")
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i]) if rng.random() < 0.5 else lines.pop(i)
            text = "\n".join(lines)
        elif kind == 3:  # swap two lines
            lines = text.split("\n")
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif kind == 4:  # change a number
            digits = [i for i, c in enumerate(text) if c.isdigit()]
            if digits:
                i = rng.choice(digits)
                text = text[:i] + rng.choice(["0", "-1", "3", "65536", "99999999999"]) + text[i + 1:]
        else:  # truncate
            text = text[:at]
    return text


def run_case(argv: list[str], capture: Path) -> tuple[int, str]:
    from tilemlir.tools import tile_opt

    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(capture, "w+b") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            status = tile_opt.main(argv)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        sink.seek(0)
        output = sink.read().decode("utf-8", errors="replace")
    return status, output


def main() -> int:
    seed, count, seconds, workdir = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4])
    rng = random.Random(seed)
    texts = corpus()
    deadline = time.monotonic() + seconds
    failures, ran = [], 0
    statuses: dict[str, int] = {}
    progress = workdir / "progress.json"
    for index in range(count):
        if time.monotonic() > deadline:
            break
        case = workdir / f"case{index}.mlir"
        case.write_text(mutate(rng.choice(texts), rng), encoding="utf-8", errors="surrogatepass")
        argv = [str(case), "-o", str(workdir / "out.mlir"), *rng.choice(FLAGS)]
        progress.write_text(json.dumps({"index": index, "argv": argv}))
        status, output = run_case(argv, workdir / "capture.txt")
        ran += 1
        statuses[str(status)] = statuses.get(str(status), 0) + 1
        if status not in (0, 1) or "Traceback" in output:
            kept = workdir / f"failure{index}.mlir"
            case.rename(kept)
            failures.append({"argv": [str(kept), *argv[1:]], "status": status, "output": output[-2000:]})
        else:
            case.unlink()
    (workdir / "report.json").write_text(json.dumps({"ran": ran, "statuses": statuses, "failures": failures}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
