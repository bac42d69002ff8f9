# A lit configuration for testing tile IR kernels with tilemlir's tools, outside
# tilemlir's repository. Copy this file next to your .mlir tests and run
# `lit -v DIR` (docs/testing.md). It finds the tools on PATH, or in
# $TILEMLIR_BIN when set (e.g. TILEMLIR_BIN=/path/to/.venv/bin), and refuses
# to start, naming what is missing, when it cannot.
#
# `config` and `lit_config` are the objects lit injects when it runs this file.
# ruff: noqa: F821
import os
import re
import shutil

import lit.formats

config.name = "tile-kernels"
# lit's own shell: `not` and pipes work the same on every machine.
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

tool_dirs = [os.environ["TILEMLIR_BIN"]] if os.environ.get("TILEMLIR_BIN") else []
search_path = os.pathsep.join([*tool_dirs, os.environ.get("PATH", ""), "/usr/lib/llvm-22/bin"])


def find(*names):
    """The first of `names` found on the search path, as an absolute path."""
    for name in names:
        found = shutil.which(name, path=search_path)
        if found:
            return os.path.abspath(found)
    return None


# Each tool a RUN line names, and what it is replaced with. FileCheck: LLVM's
# (Debian's llvm-22 package) or the Python `filecheck` (pip install filecheck),
# which reads the same CHECK lines. `not` stays lit's builtin when LLVM's is absent.
tools = {
    "tile-opt": find("tile-opt"),
    "tile-compile": find("tile-compile"),
    "tile-run": find("tile-run"),
    "FileCheck": find("FileCheck", "FileCheck-22", "filecheck"),
    "not": find("not") or "not",
}
missing = sorted(name for name, path in tools.items() if path is None)
if missing:
    lit_config.fatal(
        f"cannot find {', '.join(missing)} on PATH or in TILEMLIR_BIN "
        "(install tilemlir and FileCheck, or set TILEMLIR_BIN to the folder holding the tools)")

# Replace a tool's name where it stands as a word of a RUN line, not inside
# a path or another name (`%s`'s file, a --check-prefix).
for name, path in tools.items():
    config.substitutions.append((rf"(?<![\w/.=-]){re.escape(name)}(?![\w.-])", path))

# What the tools read from the environment: nothing else leaks in. The tuning
# database tile-compile would read from the user's cache is left out, so a
# test sees the configuration the cost model chooses.
for name in ("HOME", "TMPDIR", "LANG"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
config.environment["XDG_CACHE_HOME"] = os.path.join(config.test_exec_root, "no-cache")
