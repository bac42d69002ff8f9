"""Times tile-tune's candidates on an NVIDIA GPU: the measuring half of `tile-tune --measure device`.

    tile-tune gemm.mlir --target nvidia:sm_90a --prepare DIR   # here: PTX per candidate, inputs
    python3 DIR/measure.py DIR                                 # there: check, time -> DIR/timings.json
    tile-tune --merge DIR --db tuning.json                     # here: the best into the database

It needs Python, NumPy and the CUDA driver only: `--prepare` copies this file
into the folder as measure.py, and the launcher beside it
(tilemlir/runtime/cuda_launch.py), which this script loads by path; nothing of
tilemlir or MLIR is imported. `tile-tune --measure device` on a machine with
both runs the same `measure` in process.

For every compiled candidate of DIR/manifest.json, in order: its PTX is
loaded; the inputs of DIR (raw bits, `tilemlir.runtime.gemm_inputs`) are
copied to the GPU, the output filled with NaN (or with its initial value when
the GEMM reads it); one launch; then every element of the output is checked
against the float64 reference within its bound, and a candidate outside it
is recorded as wrong and not timed. A correct one is launched WARMUP times,
then ROUNDS rounds of BATCH back-to-back launches between two CUDA events;
its time is the median round over BATCH. (A kernel shorter than the host's
launch overhead is timed at that overhead.)

Each result is added to DIR/timings.json as soon as it is known (written to
a temporary file and renamed), so an interrupted run keeps what it measured,
and running again measures only the candidates it has no result for.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

MANIFEST_FORMAT = "tilemlir-tuning-candidates"
TIMINGS_FORMAT = "tilemlir-tuning-timings"
VERSION = 1
WARMUP, ROUNDS, BATCH = 10, 15, 20

# Output element types -> how the raw bits become float64 (NumPy alone).
DECODERS = {
    "f16": lambda raw, np: raw.view(np.float16).astype(np.float64),
    "bf16": lambda raw, np: (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64),
    "f32": lambda raw, np: raw.view(np.float32).astype(np.float64),
}
NAN_BITS = {"f16": 0x7E00, "bf16": 0x7FC0, "f32": 0x7FC00000}


class MeasureError(Exception):
    """The folder cannot be measured (printed as `measure: error: ...`, exit 1)."""


def load_launcher():
    """cuda_launch.py, from beside this file."""
    path = Path(__file__).resolve().with_name("cuda_launch.py")
    if not path.exists():
        raise MeasureError(f"{path} is missing: run the measure.py that tile-tune --prepare wrote")
    spec = importlib.util.spec_from_file_location("cuda_launch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_manifest(folder: Path) -> dict:
    """DIR/manifest.json, checked to be a tile-tune folder this script reads."""
    path = folder / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MeasureError(f"{path} does not exist: prepare the folder with tile-tune --prepare") from None
    except (OSError, ValueError) as error:
        raise MeasureError(f"{path}: cannot be read: {error}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise MeasureError(f'{path}: not a tile-tune folder (no "format": "{MANIFEST_FORMAT}")')
    if manifest.get("version") != VERSION:
        raise MeasureError(f"{path}: format version {manifest.get('version')!r}, this script reads {VERSION}")
    return manifest


def read_timings(folder: Path) -> dict:
    """The results DIR/timings.json holds so far, by candidate name."""
    path = folder / "timings.json"
    if not path.exists():
        return {}
    try:
        timings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise MeasureError(f"{path}: cannot be read: {error}") from None
    if not isinstance(timings, dict) or timings.get("format") != TIMINGS_FORMAT \
            or not isinstance(timings.get("results"), dict):
        raise MeasureError(f'{path}: not a timings file (no "format": "{TIMINGS_FORMAT}")')
    return timings["results"]


def write_timings(folder: Path, results: dict, device: str) -> None:
    text = json.dumps({"format": TIMINGS_FORMAT, "version": VERSION, "device": device,
                       "results": results}, indent=1, sort_keys=True) + "\n"
    fd, temporary = tempfile.mkstemp(prefix=".timings.", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, folder / "timings.json")


def to_measure(manifest: dict, results: dict, only: str | None = None) -> list[dict]:
    """The compiled candidates without a result yet (or just `only`)."""
    chosen = [c for c in manifest["candidates"] if c.get("compiled")]
    if only is not None:
        chosen = [c for c in chosen if c["name"] == only]
        if not chosen:
            raise MeasureError(f"no compiled candidate named '{only}' in the manifest")
        return chosen
    return [c for c in chosen if c["name"] not in results]


class Timer:
    """CUDA events around launches on the default stream."""

    def __init__(self, driver):
        self.driver = driver
        self.start, self.end = ctypes.c_void_p(), ctypes.c_void_p()
        driver.check("cuEventCreate", ctypes.byref(self.start), 0)
        driver.check("cuEventCreate", ctypes.byref(self.end), 0)

    def seconds(self, launch, count: int) -> float:
        """Seconds per launch over `count` back-to-back launches."""
        self.driver.check("cuEventRecord", self.start, ctypes.c_void_p(0))
        for _ in range(count):
            launch()
        self.driver.check("cuEventRecord", self.end, ctypes.c_void_p(0))
        self.driver.check("cuEventSynchronize", self.end)
        milliseconds = ctypes.c_float()
        self.driver.check("cuEventElapsedTime", ctypes.byref(milliseconds), self.start, self.end)
        return milliseconds.value / 1e3 / count

    def close(self) -> None:
        self.driver.check("cuEventDestroy_v2", self.start)
        self.driver.check("cuEventDestroy_v2", self.end)


def measure_one(folder: Path, candidate: dict, inputs: dict, launcher, np) -> dict:
    """Checks one candidate against the reference, then times it."""
    arrays, buffers = {}, []
    for item in inputs["arguments"]:
        raw = np.load(folder / item["file"])
        if item["index"] == inputs["output"] and not inputs["output_read"]:
            raw[...] = NAN_BITS[item["dtype"]]  # an element the kernel does not write fails
        arrays[item["index"]] = raw
    module = launcher.CudaModule.load(folder / candidate["json"])
    try:
        buffers = [launcher.DeviceArray(arrays[i]) for i in sorted(arrays)]
        output = buffers[inputs["output"]]
        try:
            def launch():
                module.launch(inputs["entry"], buffers, stream=0)

            launch()
            output.copy_back()
            got = DECODERS[next(a["dtype"] for a in inputs["arguments"]
                                if a["index"] == inputs["output"])](output.array, np).reshape(-1)
            want = np.load(folder / inputs["want"]).astype(np.float64).reshape(-1)
            bound = np.load(folder / inputs["bound"]).astype(np.float64).reshape(-1)
            error = np.abs(got - want)
            ratio = np.where(np.isfinite(error), error / np.where(bound > 0, bound, 1.0), np.inf)
            worst = float(ratio.max(initial=0.0))
            if not bool(np.all(error <= bound)):
                return {"ok": False, "error": f"wrong results: worst error/bound {worst:.3g}",
                        "worst_error_ratio": worst}
            timer = Timer(launcher.driver())
            try:
                for _ in range(WARMUP):
                    launch()
                rounds = [timer.seconds(launch, BATCH) for _ in range(ROUNDS)]
            finally:
                timer.close()
            return {"ok": True, "seconds": statistics.median(rounds), "worst_error_ratio": worst}
        finally:
            for buffer in buffers:
                buffer.free()
    finally:
        module.close()


def device_name(launcher) -> str:
    driver = launcher.driver()
    name = ctypes.create_string_buffer(256)
    driver.check("cuDeviceGetName", name, 256, driver.device)
    return name.value.decode(errors="replace")


def measure(folder: Path, only: str | None = None, say=print) -> dict:
    """Measures the folder's candidates that have no result yet; returns all
    results by name. Needs the GPU (the launcher's CudaError without one)."""
    try:
        import numpy as np
    except ImportError:
        raise MeasureError("measuring needs NumPy: pip install numpy") from None

    manifest = read_manifest(folder)
    results = read_timings(folder)
    pending = to_measure(manifest, results, only)
    launcher = load_launcher()
    device = device_name(launcher)
    say(f"{device}: {len(pending)} candidate{'s' if len(pending) != 1 else ''} to measure")
    for candidate in pending:
        started = time.perf_counter()
        try:
            result = measure_one(folder, candidate, manifest["inputs"], launcher, np)
        except launcher.CudaError as error:
            result = {"ok": False, "error": f"CUDA: {error}"}
        results[candidate["name"]] = result
        write_timings(folder, results, device)
        shown = f"{result['seconds'] * 1e6:.3f} us" if result["ok"] else result["error"]
        say(f"{candidate['name']}: {shown} ({candidate['describe']}; {time.perf_counter() - started:.1f} s)")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="measure", description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the folder tile-tune --prepare wrote")
    parser.add_argument("--only", metavar="NAME", help="measure (again) just this candidate")
    options = parser.parse_args(argv)
    try:
        measure(options.folder, options.only)
    except MeasureError as error:
        sys.stderr.write(f"measure: error: {error}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("measure: interrupted; timings.json keeps what was measured\n")
        return 130
    except Exception as error:  # noqa: BLE001 - the launcher's CudaError without a GPU, and the like
        sys.stderr.write(f"measure: error: {type(error).__name__}: {error}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
