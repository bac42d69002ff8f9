"""Building and running emitted MACA C++ on the CPU, for any launcher signature.

`build(sources, directory)` compiles MACA sources (`{case: text}`, each with
one host launcher) with g++ against test/metax/maca_host.h into one program
whose `main` runs case argv[1]; `run(binary, case, values)` calls it: a NumPy
array goes through a file (written back after the launch, in place), a number
as text. The values follow the launcher's parameters: a memref's array, then
its dynamic extents, then scalars, as the emitter's `memref_extras` orders
them (`launcher_values` makes that list from the entry function's arguments).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
HEADER = ROOT / "test" / "metax" / "maca_host.h"
GXX = shutil.which("g++")
LAUNCHER = re.compile(r'^extern "C" int (\w+)\((.*)\) \{$', re.MULTILINE)


def _parameters(source: str) -> tuple[str, list[str]]:
    entry, params = LAUNCHER.search(source).groups()
    return entry, [p.rsplit(" ", 1)[0] for p in params.split(", ")] if params else []


def build(sources: dict[str, str], directory: Path, flags: tuple[str, ...] = ("-O1",)) -> Path:
    """One program running every source's launcher; fails the test if g++ does."""
    assert GXX is not None, "g++ is not on the PATH: `make setup` installs it (the MetaX tests build C++)"
    lines = ["#include <fstream>", "#include <iterator>", "#include <string>", "#include <vector>"]
    for name, text in sources.items():
        path = directory / f"{name}.maca"
        path.write_text(text)
        lines.append(f'#include "{path}"')
    lines += [
        "static std::vector<char> load(const char* path) {",
        "  std::ifstream in(path, std::ios::binary);",
        "  return std::vector<char>(std::istreambuf_iterator<char>(in), {});",
        "}",
        "static void save(const char* path, const std::vector<char>& data) {",
        "  std::ofstream(path, std::ios::binary).write(data.data(), data.size());",
        "}",
        "int main(int argc, char** argv) {",
        "  const std::string name = argv[1];",
    ]
    for name, text in sources.items():
        entry, types = _parameters(text)
        body, call, saves = [], [], []
        for i, t in enumerate(types):
            argument = f"argv[{i + 2}]"
            if t.endswith("*"):
                body.append(f"    std::vector<char> b{i} = load({argument});")
                call.append(f"({t})b{i}.data()")
                saves.append(f"    save({argument}, b{i});")
            elif t in ("float", "double"):
                call.append(f"({t})std::stod({argument})")
            else:
                call.append(f"({t})std::stoll({argument})")
        lines += [f'  if (name == "{name}") {{', *body, f"    int rc = {entry}({', '.join(call)});",
                  *saves, "    return rc;", "  }"]
    lines += ['  fprintf(stderr, "unknown case %s\\n", argv[1]);', "  return 2;", "}"]
    driver = directory / "driver.cpp"
    driver.write_text("\n".join(lines) + "\n")
    binary = directory / "driver"
    done = subprocess.run([GXX, "-std=c++20", *flags, "-w", "-include", str(HEADER), str(driver),
                           "-o", str(binary), "-pthread"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return binary


def launcher_values(arguments: list, dynamic_axes: dict[int, list[int]]) -> list:
    """The launcher's values for the entry function's `arguments`: each array
    followed by its extents along `dynamic_axes[i]`, scalars as they are."""
    values = []
    for index, argument in enumerate(arguments):
        values.append(argument)
        if isinstance(argument, np.ndarray):
            values += [argument.shape[axis] for axis in dynamic_axes.get(index, [])]
    return values


def run(binary: Path, name: str, values: list, directory: Path) -> None:
    """Runs case `name` on `values`; arrays are written in place."""
    words, files = [], []
    for index, value in enumerate(values):
        if isinstance(value, np.ndarray):
            path = directory / f"{name}.{index}.bin"
            np.ascontiguousarray(value).tofile(path)
            words.append(str(path))
            files.append((path, value))
        else:
            words.append(repr(float(value)) if isinstance(value, float) else str(int(value)))
    done = subprocess.run([str(binary), name, *words], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    for path, array in files:
        array[...] = np.fromfile(path, dtype=array.dtype).reshape(array.shape)
