"""tilemlir's version: the one place it is written. pyproject.toml reads it
(`[tool.setuptools.dynamic]`), `tilemlir.__version__` and the tools'
--version print it, the --report JSON names it, and CHANGELOG.md has a
section for it (test/python/test_tool_command_line.py checks both). Nothing
is imported here, so --version stays cheap."""

__version__ = "0.2.0"

# The distribution of the MLIR Python bindings tilemlir runs on (DESIGN.md section 1):
# --version names its version, and the kernel cache's key includes it.
MLIR_BINDINGS_DISTRIBUTION = "xtc-mlir-python-bindings"
