"""The Burn Book's remaining tensor operations: arange_step, from_floats/ints/bools, into_primitive,
full-precision round trips and one_hot."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.testing import FLOAT_DTYPES, check, require_dtype


def test_arange_step(device: Device) -> None:
    check(Tensor.arange_step(5, 10, 2, device), np.array([5, 7, 9]), device.backend.int_dtype)
    check(Tensor.arange_step(3, -3, -2, device), np.array([3, 1, -1]), device.backend.int_dtype)


def test_from_floats_ints_and_bools_use_the_device_defaults(device: Device) -> None:
    check(Tensor.from_floats([1, 2], device), np.array([1.0, 2.0]), device.backend.float_dtype)
    check(Tensor.from_ints([[1, 2]], device), np.array([[1, 2]]), device.backend.int_dtype)
    check(Tensor.from_bools([True, False], device), np.array([True, False]), DType.BOOL)


def test_into_primitive_is_the_backend_value(device: Device) -> None:
    tensor = Tensor.ones([2], device)
    primitive = tensor.into_primitive()
    assert primitive is tensor.primitive
    assert tuple(primitive.shape) == (2,)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_full_precision_round_trip(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    tensor = Tensor.from_data([0.5, -1.25], device, dtype)
    full = tensor.to_full_precision()
    expected = DType.F32 if dtype in (DType.F16, DType.BF16) else dtype
    check(full, np.array([0.5, -1.25]), expected)
    check(Tensor.from_full_precision(full, dtype), np.array([0.5, -1.25]), dtype)


@pytest.mark.parametrize("kind", ["int", "float"])
def test_one_hot(device: Device, kind: str) -> None:
    indices = Tensor.from_data([[0, 2], [1, 1]], device)
    if kind == "float":
        indices = indices.float()
    expected = np.eye(3)[np.array([[0, 2], [1, 1]])]
    check(indices.one_hot(3), expected, indices.dtype)


def test_one_hot_out_of_range_indices(device: Device) -> None:
    out_of_range = Tensor.from_data([0, 3], device)
    if device.backend.validates_index_values:
        message = r"one_hot: indices must lie in \[0, 3\), got values in \[0, 3\]"
        with pytest.raises(ValueError, match=message):
            out_of_range.one_hot(3)
    else:  # not read back: the out-of-range index matches no class
        check(out_of_range.one_hot(3), np.array([[1, 0, 0], [0, 0, 0]]), out_of_range.dtype)
    with pytest.raises(ValueError, match="num_classes must be positive"):
        Tensor.from_data([0], device).one_hot(0)
    with pytest.raises(TypeError, match="one_hot: expected"):
        Tensor.from_data([True], device).one_hot(2)
