"""Issue 17's acceptance kernels on an NVIDIA GPU, checked against float64.

Two steps, because the device machine has the GPU but not our MLIR wheels:

    .venv/bin/python bench/device_check.py --prepare build/devcheck   # here: PTX, inputs, expectations
    python3 bench/device_check.py --run build/devcheck                # there: launch, compare

`--prepare` compiles every kernel of examples/kernels (the cases of
test/python/general_kernel_cases.py), the flash-attention variants of
test/python/attention_cases.py (DEVICE_VARIANTS) and the TileLang-style kernels of
test/python/language_device_cases.py for nvidia:sm_90a, draws its inputs, and
computes what each output must be with the case's float64 NumPy model and the
bound allowed around it (derived from the dtypes); it saves the PTX with its
launch metadata, and the inputs, expectations and bounds as raw bytes.
`--run` needs NumPy and the CUDA driver only (tilemlir/runtime/cuda_launch.py,
loaded by path): it launches each kernel on the inputs (outputs poisoned with
NaN first), copies everything back, decodes the outputs and checks every
element against its bound. It prints one line per kernel and exits 1 if any
element of any output is outside its bound.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench folder's shared helpers
from bench_device import load_launcher

ROOT = Path(__file__).resolve().parents[1]
TARGET = "nvidia:sm_90a"

# Raw storage of each element type: (NumPy dtype of the bits, how --run decodes them).
STORAGE = {"f16": ("uint16", "f16"), "bf16": ("uint16", "bf16"), "f32": ("float32", "f32"),
           "f8E4M3FN": ("uint8", "raw"), "i8": ("int8", "raw"), "i32": ("int32", "raw")}


# --------------------------------------------------------------------------
# --prepare (needs tilemlir)
# --------------------------------------------------------------------------

def prepare(out: Path, only: str | None = None) -> int:
    import numpy as np

    sys.path.insert(0, str(ROOT / "test" / "python"))
    import re

    import attention_cases
    import language_device_cases
    from general_kernel_cases import CASES, inputs_for

    # (name, kernel text, entry, inputs, {output index: (float64 expectation, bound)}, outputs kept)
    jobs = [(name, case.text(TARGET), case.entry, (lambda case=case: inputs_for(case, TARGET)),
             case.model, set()) for name, case in sorted(CASES.items())]
    for variant in attention_cases.DEVICE_VARIANTS:
        jobs.append((variant.name, attention_cases.kernel_text(variant), variant.name,
                     (lambda variant=variant: attention_cases.inputs(variant)),
                     (lambda args, variant=variant: attention_cases.model(variant, args)), set()))
    for case in language_device_cases.CASES:
        if only and case.name != only:
            continue
        text = case.text()
        jobs.append((case.name, text, re.search(r"func\.func @(\w+)", text).group(1),
                     (lambda case=case: case.inputs(np.random.default_rng(0))), case.model, case.keep))

    from tilemlir.backends.nvidia.toolchain import compile_to_ptx
    from tilemlir.diagnostics import UserError
    from tilemlir.dialects import tile
    from tilemlir.targets import get_target

    out.mkdir(parents=True, exist_ok=True)
    manifest = {"target": TARGET, "kernels": [], "refused": []}
    for name, text, entry_name, make_inputs, expect, kept in jobs:
        if only and name != only:
            continue
        from mlir import ir

        context = tile.make_context()
        try:
            module = ir.Module.parse(text, context)
            kernel = compile_to_ptx(module.operation, get_target(TARGET), "", "", "")
        except (UserError, ir.MLIRError) as error:
            manifest["refused"].append({"name": name, "error": str(error)})
            print(f"refused {name}: {str(error).splitlines()[-1][:200]}")
            continue
        kernel.save(out / name)
        args = make_inputs()
        expected = expect([np.copy(a) for a in args])
        entry = {"name": name, "entry": entry_name, "json": f"{name}.json", "arguments": []}
        meta = json.loads((out / f"{name}.json").read_text())
        params = next(f for f in meta["functions"] if f["entry"] == entry_name)["arguments"]
        for index, (value, param) in enumerate(zip(args, params)):
            item = {"index": index}
            if "shape" in param:
                storage, _ = STORAGE[param["dtype"]]
                raw = np.ascontiguousarray(value).view(storage)
                raw.tofile(out / f"{name}.arg{index}.bin")
                item.update(dtype=param["dtype"], shape=param["shape"], storage=storage)
            else:
                item.update(scalar=float(value))
            if index in expected:
                want, bound = expected[index]
                # f32 keeps 13 more bits than the f16/bf16 outputs: enough to compare with
                # (the bound rounded down, so it never grows).
                np.asarray(want, np.float32).tofile(out / f"{name}.want{index}.bin")
                np.nextafter(np.asarray(bound, np.float32), np.float32(0)).tofile(out / f"{name}.bound{index}.bin")
                item["output"] = True
                item["keep"] = index in kept  # updated in place: not poisoned before the launch
            entry["arguments"].append(item)
        manifest["kernels"].append(entry)
        print(f"prepared {name}")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return 0


# --------------------------------------------------------------------------
# --run (needs NumPy and the CUDA driver)
# --------------------------------------------------------------------------

def decode(raw, how: str):
    """float64 values of raw element bits."""
    import numpy as np

    if how == "f16":
        return raw.view(np.float16).astype(np.float64)
    if how == "bf16":
        return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return raw.astype(np.float64)


NAN_BITS = {"f16": 0x7E00, "bf16": 0x7FC0}


def run(directory: Path) -> int:
    import numpy as np

    launcher = load_launcher()
    manifest = json.loads((directory / "manifest.json").read_text())
    failures = 0
    for refused in manifest["refused"]:
        print(f"REFUSED {refused['name']}: {refused['error'].splitlines()[-1][:200]}")
        failures += 1
    for kernel in manifest["kernels"]:
        name = kernel["name"]
        module = launcher.CudaModule.load(directory / kernel["json"])
        arrays, buffers, values = {}, [], []
        for item in kernel["arguments"]:
            if "scalar" in item:
                values.append(item["scalar"])
                continue
            raw = np.fromfile(directory / f"{name}.arg{item['index']}.bin", dtype=item["storage"])
            raw = raw.reshape(item["shape"])
            if item.get("output") and not item.get("keep"):  # poisoned: an element the kernel does not write fails
                raw[...] = NAN_BITS.get(item["dtype"], 0) if item["storage"] != "float32" else np.nan
            arrays[item["index"]] = (raw, item)
            buffer = launcher.DeviceArray(raw)
            buffers.append(buffer)
            values.append(buffer)
        try:
            module.launch(kernel["entry"], values, stream=0)
            for buffer in buffers:
                buffer.copy_back()
        finally:
            for buffer in buffers:
                buffer.free()
            module.close()
        worst, ok = 0.0, True
        for index, (raw, item) in arrays.items():
            if not item.get("output"):
                continue
            got = decode(raw, STORAGE[item["dtype"]][1]).reshape(-1)
            want = np.fromfile(directory / f"{name}.want{index}.bin", dtype=np.float32).astype(np.float64)
            bound = np.fromfile(directory / f"{name}.bound{index}.bin", dtype=np.float32).astype(np.float64)
            error = np.abs(got - want)
            with np.errstate(divide="ignore", invalid="ignore"):  # exact outputs: a bound of 0
                ratio = np.where(error == 0, 0.0, np.where(np.isfinite(error), error / bound, np.inf))
            worst = max(worst, float(ratio.max()))
            ok &= bool(np.all(error <= bound))
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}: worst error/bound {worst:.3f}")
    print(f"{len(manifest['kernels']) - failures + len(manifest['refused'])} of "
          f"{len(manifest['kernels']) + len(manifest['refused'])} kernels within their bounds")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--prepare", metavar="DIR", type=Path, help="compile and write the cases (here)")
    group.add_argument("--run", metavar="DIR", type=Path, help="launch and check them (on the GPU)")
    parser.add_argument("--only", metavar="NAME", help="with --prepare: one case")
    options = parser.parse_args(argv)
    if options.prepare is not None:
        return prepare(options.prepare, options.only)
    return run(options.run)


if __name__ == "__main__":
    sys.exit(main())
