"""The one table of MLIR element types <-> NumPy dtypes and bit widths
(tilemlir.dialects.element_types), and that every other layer reads it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from mlir import ir

from tilemlir.dialects import element_types, tile
from tilemlir.dialects.element_types import ELEMENT_TYPES, bit_width, dtype_of, row_of_dtype

PACKAGE = Path(__file__).resolve().parents[2] / "tilemlir"


@pytest.mark.parametrize("name", [n for n in ELEMENT_TYPES if n != "index"])
def test_row_agrees_with_mlir_and_numpy(name):
    """MLIR parses the name back to itself with the row's width; the dtype holds
    exactly that many bits (i1 in a byte)."""
    row = ELEMENT_TYPES[name]
    with ir.Context():
        parsed = ir.Type.parse(name)
        assert str(parsed) == name
        assert bit_width(parsed) == row.bit_width
    assert row.dtype.itemsize == row.byte_width
    assert row_of_dtype(row.dtype) is row


def test_index_is_64_bit_and_int64_means_i64():
    assert element_types.bit_width_of("index") == 64 and dtype_of("index") == np.int64
    assert row_of_dtype(np.int64).name == "i64"


def test_kinds_follow_the_dtypes():
    for name, row in ELEMENT_TYPES.items():
        is_float = name in element_types.FLOAT_TYPES
        assert is_float == (row.kind == "float")
        numpy_float = row.dtype.type in (np.float64, np.float32, np.float16)
        assert numpy_float == (is_float and name not in element_types.NARROW_FLOAT_TYPES)
    assert element_types.NARROW_FLOAT_TYPES == ("bf16", "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ")


def test_dialect_and_runtime_read_the_table():
    from tilemlir.runtime import dtypes
    from tilemlir.targets.model import ELEMENT_BITS

    assert tile.ELEMENT_TYPES == element_types.TILE_BUFFER_TYPES
    assert list(dtypes.ELEMENT_TYPES) == list(ELEMENT_TYPES)
    for name, converted in dtypes.ELEMENT_TYPES.items():
        assert converted.dtype == dtype_of(name)
    for name, fmt in dtypes.NARROW_FORMATS.items():
        assert fmt.dtype == dtype_of(name) and fmt.width == element_types.bit_width_of(name)
    for name in element_types.TILE_BUFFER_TYPES:
        assert ELEMENT_BITS[name] == element_types.bit_width_of(name)


def test_standalone_cuda_launcher_copy_agrees():
    """cuda_launch.py imports nothing of tilemlir (it runs where MLIR is not
    installed), so it keeps a copy of the widths: the copy must agree."""
    from tilemlir.runtime import cuda_launch

    for name, size in cuda_launch.ELEMENT_BYTES.items():
        assert size == ELEMENT_TYPES[name].byte_width
    assert set(cuda_launch.TORCH_DTYPES) <= set(ELEMENT_TYPES)


def test_no_other_module_spells_the_narrow_dtypes():
    """ml_dtypes' types are named in the table alone (one definition)."""
    spelled = re.compile(r"^\s*(import ml_dtypes|from ml_dtypes)", re.MULTILINE)
    offenders = [str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                 if path.name != "element_types.py" and spelled.search(path.read_text())]
    assert offenders == []
