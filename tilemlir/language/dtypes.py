"""TileLang's dtypes (`T.float16`, `"bfloat16"`, `T.float8_e4m3fn`, ...) and the
MLIR element types they name.

A `DType` compares equal to its TileLang name, so `dtype == "float16"` and
`T.float16 == "float16"` both hold, as they do in TileLang. Every name maps to
one row of `tilemlir.dialects.element_types` (the one table of element types);
`bool`, `uint8` and `uint32` live in memory as signless integers (the tile
dialect has no unsigned or 1-bit buffers): a bool buffer holds the bytes 0
or 1 and its loads compare with 0; a uint8 load is zero-extended to i32, as
C promotes it, a uint32 load to i64 (so that comparisons, division, right
shifts and conversions see 0 .. 2^32 - 1), and a store keeps the low bits.

Called on a number, a DType makes a typed constant, as TileLang's
`T.float32(1.0)` makes a `FloatImm`: the NumPy (or ml_dtypes) scalar of that
type, the number rounded to it (floats to integers truncate toward zero, as
TVM's `const` does). A kernel body uses it as a constant of that type; called
there on a runtime value, `T.float16(x)` is a cast (`tilemlir.language.builder`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tilemlir.diagnostics import UserError
from tilemlir.dialects.element_types import ELEMENT_TYPES


@dataclass(frozen=True, eq=False)
class DType:
    """A TileLang dtype: its name (`"float16"`) and the MLIR element type (`f16`)."""

    name: str
    mlir: str

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"T.{self.name}"

    def __eq__(self, other) -> bool:
        if isinstance(other, DType):
            return self.mlir == other.mlir
        if isinstance(other, str):
            found = DTYPES.get(other)
            return found is not None and found.mlir == self.mlir
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.mlir)

    def __call__(self, *args, **kwargs) -> np.generic:
        """`T.float32(1.0)`: the number as a constant of this type."""
        if len(args) != 1 or kwargs:
            given = len(args) + len(kwargs)
            raise UserError(f"T.{self.name}(value) takes one number, got {given} argument{'s' * (given != 1)}")
        return self.constant(args[0])

    def constant(self, value) -> np.generic:
        """`value` (a Python or NumPy number) rounded to this type; a UserError
        if it is not a number or does not fit."""
        if isinstance(value, np.generic) and (value.dtype.kind in "biuf" or value.dtype in _BY_NUMPY):
            value = value.item() if value.dtype.kind in "biu" else float(value)  # a typed constant again
        if not isinstance(value, (int, float)):
            raise UserError(f"T.{self.name}({value!r}): a constant is made from a number")
        if not self.is_float:
            if self.mlir == "i1":  # a bool: whether the number is not zero (NaN is)
                return np.bool_(value != 0)
            if isinstance(value, float) and not math.isfinite(value):
                raise UserError(f"T.{self.name}({value!r}): {value} is not an integer value")
            value = math.trunc(value)
            info = np.iinfo(self.numpy)
            if not info.min <= value <= info.max:
                raise UserError(f"T.{self.name}({value!r}): out of {self.name}'s range [{info.min}, {info.max}]")
            return self.numpy.type(value)
        from tilemlir.runtime.dtypes import convert

        given = value
        try:
            value = float(value)
        except OverflowError:  # an int past every float
            value = math.inf
            result = self.numpy.type(value)
        else:  # rounded once, as the engines round (not through float32 first)
            with np.errstate(over="ignore", invalid="ignore"):
                result = convert(np.asarray(value, np.float64), self.numpy)[()]
        if not np.isfinite(result) and (math.isfinite(value) or value is math.inf):
            raise UserError(f"T.{self.name}({given!r}): beyond {self.name}'s largest value "
                            f"({ELEMENT_TYPES[self.mlir].finite_max})")
        return result

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype of a host array of this type."""
        converted = _CONVERTED.get(self.mlir)
        return converted.numpy if converted is not None else ELEMENT_TYPES[self.mlir].dtype

    @property
    def value(self) -> str:
        """The MLIR type of this type's values in a kernel (a load, a variable, a cast)."""
        converted = _CONVERTED.get(self.mlir)
        return converted.value if converted is not None else self.mlir

    @property
    def storage(self) -> str:
        """The MLIR element type of a buffer holding this type."""
        converted = _CONVERTED.get(self.mlir)
        return converted.storage if converted is not None else self.mlir

    @property
    def storage_numpy(self) -> np.dtype:
        """The NumPy dtype the engines read a buffer of this type as."""
        return ELEMENT_TYPES[self.storage].dtype

    @property
    def is_converted(self) -> bool:
        """bool, uint8 or uint32: stored as a signless integer, loaded and
        stored through a conversion."""
        return self.mlir in _CONVERTED

    @property
    def bits(self) -> int:
        return ELEMENT_TYPES[self.storage].bit_width

    @property
    def is_float(self) -> bool:
        return ELEMENT_TYPES[self.value].kind == "float"

    @property
    def tile_buffer(self) -> bool:
        """May a tile buffer (tensor, shared or fragment) hold this type?"""
        return ELEMENT_TYPES[self.storage].tile_buffer


@dataclass(frozen=True)
class _Converted:
    storage: str      # the MLIR element type of its buffers
    value: str        # the MLIR type a load gives
    numpy: np.dtype   # the host arrays' dtype


# The types a buffer holds as signless integers, by their DType.mlir spelling
# ("ui8", "ui32": MLIR's unsigned types, which no IR of ours contains: the
# names only).
_CONVERTED: dict[str, _Converted] = {
    "i1": _Converted("i8", "i1", np.dtype(np.bool_)),
    "ui8": _Converted("i8", "i32", np.dtype(np.uint8)),
    "ui32": _Converted("i32", "i64", np.dtype(np.uint32)),
}


# TileLang's names (and the aliases its examples use) -> MLIR element types.
_NAMES: dict[str, str] = {
    "float64": "f64", "double": "f64",
    "float32": "f32", "float": "f32",
    "float16": "f16", "half": "f16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "f8E4M3FN", "float8_e4m3": "f8E4M3FN", "e4m3_float8": "f8E4M3FN",
    "float8_e5m2": "f8E5M2", "e5m2_float8": "f8E5M2",
    "float8_e4m3fnuz": "f8E4M3FNUZ",
    "float8_e5m2fnuz": "f8E5M2FNUZ",
    "int8": "i8",
    "int16": "i16",
    "uint8": "ui8",
    "uint32": "ui32",
    "int32": "i32", "int": "i32",
    "int64": "i64",
    "bool": "i1",
}

# One DType object per name; aliases share the canonical (first) name's printing.
_CANONICAL: dict[str, str] = {}
for _name, _mlir in _NAMES.items():
    _CANONICAL.setdefault(_mlir, _name)
DTYPES: dict[str, DType] = {name: DType(_CANONICAL[mlir], mlir) for name, mlir in _NAMES.items()}
# The MLIR spelling is accepted too ("f16", "bf16", "f8E4M3FNUZ").
_BY_MLIR: dict[str, DType] = {d.mlir: d for d in DTYPES.values()}
_BY_NUMPY: dict[np.dtype, DType] = {}
for _d in DTYPES.values():
    _BY_NUMPY.setdefault(_d.numpy, _d)


def dtype(value) -> DType:
    """The DType a TileLang dtype spelling names: a DType, `"float16"`, `"f16"`,
    a NumPy / ml_dtypes dtype, or a torch dtype. Raises ValueError otherwise."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        found = DTYPES.get(value) or _BY_MLIR.get(value)
        if found is None:
            raise ValueError(f"unknown dtype '{value}' (known: {', '.join(sorted(DTYPES))})")
        return found
    torch_name = _torch_dtype_name(value)
    if torch_name is not None:
        return dtype(torch_name)
    try:
        found = _BY_NUMPY.get(np.dtype(value))
    except TypeError:
        found = None
    if found is None:
        raise ValueError(f"{value!r} is not a dtype tilemlir knows")
    return found


def _torch_dtype_name(value) -> str | None:
    """'float16' for torch.float16 (without importing torch)."""
    if type(value).__name__ == "dtype" and type(value).__module__ == "torch":
        name = str(value).removeprefix("torch.")
        return {"float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}.get(name, name)
    return None


def is_dtype(value) -> bool:
    try:
        dtype(value)
    except ValueError:
        return False
    return True
