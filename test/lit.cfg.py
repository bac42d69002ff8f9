# lit configuration for tilemlir's .mlir tests (run with the Python `filecheck`).
# `config` is the object lit injects when it runs this file.
# ruff: noqa: F821
import os
import shutil

import lit.formats

config.name = "tilemlir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "lit_support", "lit.cfg.py", "lit.local.cfg"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

repo = os.path.dirname(config.test_source_root)
config.environment["PATH"] = os.pathsep.join(
    [os.path.join(repo, ".venv", "bin"), "/usr/lib/llvm-22/bin", os.environ.get("PATH", "")]
)
for name in ("HOME", "TMPDIR", "LANG", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    if name in os.environ:
        config.environment[name] = os.environ[name]

# tile-compile reads the user's tuning database (tile-tune's) from the cache
# folder when one exists there: the tests see none unless they give one.
config.environment["XDG_CACHE_HOME"] = os.path.join(config.test_exec_root, "no-cache")
# With no target named, a compile takes this machine's GPU (tilemlir.targets.selection):
# the tests see none unless they say so (TILEMLIR_TARGET is not passed on either).
config.environment["TILEMLIR_GPU"] = "none"

config.substitutions.append(("%repo", repo))
config.substitutions.append(("%tile_irdl", os.path.join(repo, "tilemlir", "dialects", "tile.irdl.mlir")))
config.substitutions.append(("%examples", os.path.join(repo, "examples")))
config.substitutions.append(("%python", os.path.join(repo, ".venv", "bin", "python")))

mlir_opt_22 = shutil.which("mlir-opt-22", path=config.environment["PATH"])
if mlir_opt_22:
    config.available_features.add("mlir-opt-22")
