"""The element types tilemlir knows, as MLIR prints them, with their NumPy
dtype and bit width: the one table every layer reads (the dialect's buffer
types, the passes' widths, the backends' constants, the engines' arrays).

The tile buffer types are DESIGN.md section 3's; i1, i16, i64 and index are
the scalars the arith/index code around them uses. ml_dtypes supplies only
the NumPy containers of the narrow floats (bf16, fp8); their values are
defined by `tilemlir.runtime.dtypes.NARROW_FORMATS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import ml_dtypes
import numpy as np
from mlir import ir


@dataclass(frozen=True)
class ElementTypeRow:
    """One MLIR element type: its spelling, NumPy dtype, width and kind."""

    name: str  # as MLIR prints it: "f8E4M3FNUZ", "index"
    dtype: np.dtype
    bit_width: int
    kind: Literal["float", "int", "index"]
    tile_buffer: bool  # may a tile buffer (memref of a tile op) hold it?

    @property
    def finite_max(self) -> float:
        """The largest finite value of a float type (ml_dtypes' finfo for the narrow ones)."""
        return float(ml_dtypes.finfo(self.dtype).max)

    @property
    def byte_width(self) -> int:
        """Bytes one element takes in memory (i1 takes a byte)."""
        return max(1, self.bit_width // 8)


def _row(name: str, dtype, bit_width: int, kind: str, tile_buffer: bool = True) -> ElementTypeRow:
    return ElementTypeRow(name, np.dtype(dtype), bit_width, kind, tile_buffer)


ELEMENT_TYPES: dict[str, ElementTypeRow] = {
    row.name: row
    for row in (
        _row("f64", np.float64, 64, "float"),
        _row("f32", np.float32, 32, "float"),
        _row("f16", np.float16, 16, "float"),
        _row("bf16", ml_dtypes.bfloat16, 16, "float"),
        _row("f8E4M3FN", ml_dtypes.float8_e4m3fn, 8, "float"),
        _row("f8E5M2", ml_dtypes.float8_e5m2, 8, "float"),
        _row("f8E4M3FNUZ", ml_dtypes.float8_e4m3fnuz, 8, "float"),
        _row("f8E5M2FNUZ", ml_dtypes.float8_e5m2fnuz, 8, "float"),
        _row("i1", np.bool_, 1, "int", tile_buffer=False),
        _row("i8", np.int8, 8, "int"),
        _row("i16", np.int16, 16, "int"),
        _row("i32", np.int32, 32, "int"),
        _row("i64", np.int64, 64, "int"),
        _row("index", np.int64, 64, "index", tile_buffer=False),
    )
}

# Element types a tile buffer may hold, in the table's order.
TILE_BUFFER_TYPES: tuple[str, ...] = tuple(name for name, row in ELEMENT_TYPES.items() if row.tile_buffer)
FLOAT_TYPES: tuple[str, ...] = tuple(name for name, row in ELEMENT_TYPES.items() if row.kind == "float")
# bf16 and the fp8 formats: NumPy has no arithmetic of its own for them. (Not
# told by dtype.kind: ml_dtypes gives float8_e5m2 kind "f", the others "V".)
NARROW_FLOAT_TYPES: tuple[str, ...] = tuple(
    name for name in FLOAT_TYPES
    if ELEMENT_TYPES[name].dtype not in (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.float16)))

# dtype -> row; int64 is i64 (index shares its dtype).
_BY_DTYPE = {row.dtype: row for row in ELEMENT_TYPES.values() if row.kind != "index"}


def dtype_of(name: str) -> np.dtype:
    """The NumPy dtype of the element type MLIR prints as `name` (KeyError if unknown)."""
    return ELEMENT_TYPES[name].dtype


def bit_width_of(name: str) -> int:
    """The bit width of the element type MLIR prints as `name` (KeyError if unknown)."""
    return ELEMENT_TYPES[name].bit_width


def row_of_dtype(dtype) -> ElementTypeRow:
    """The element type stored as NumPy `dtype` (KeyError if none)."""
    return _BY_DTYPE[np.dtype(dtype)]


def bit_width(element: ir.Type) -> int:
    """The bit width of an integer or float `ir.Type` (any width MLIR has, not
    only the table's), as MLIR defines it."""
    if isinstance(element, ir.IntegerType):
        return element.width
    return ir.FloatType(element).width
