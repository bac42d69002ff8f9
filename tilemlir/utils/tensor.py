"""`tilelang.utils.tensor`'s path for the helpers of tilemlir.language.tensor_utils."""

from tilemlir.language.tensor_utils import (
    TensorSupplyType,
    map_torch_type,
    to_float64,
    torch_assert_close,
)

__all__ = ["TensorSupplyType", "map_torch_type", "to_float64", "torch_assert_close"]
