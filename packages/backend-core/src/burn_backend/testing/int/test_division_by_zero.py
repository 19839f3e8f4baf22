"""Integer ``//`` and ``%`` by zero raise ``ZeroDivisionError`` naming the op (PyTorch raises too; NumPy
would return 0). A scalar divisor is checked on every backend; a tensor divisor where the backend
``validates_index_values`` (elsewhere the read would wait for the device). Float division by zero stays
IEEE: infinities and NaN."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.testing import INT_DTYPES, check, make, require_dtype

Op = Callable[[Tensor, Any], Tensor]

# name in the error -> the call
DIVISIONS: dict[str, Op] = {
    "div": lambda t, d: t // d,
    "remainder": lambda t, d: t % d,
}
SCALAR_DIVISIONS: dict[str, Op] = {
    **DIVISIONS,
    "div_scalar": lambda t, d: t.div_scalar(d),
    "remainder_scalar": lambda t, d: t.remainder_scalar(d),
}


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("op", list(SCALAR_DIVISIONS))
def test_int_division_by_a_zero_scalar_raises(device: Device, op: str, dtype: DType) -> None:
    require_dtype(device, dtype)
    tensor = make(np.array([[4, 5, 6]]), device, dtype)
    with pytest.raises(ZeroDivisionError, match=rf"^{op}: integer division by zero \(of the Int {dtype}"):
        SCALAR_DIVISIONS[op](tensor, 0)


@pytest.mark.parametrize(
    "divisor", [[1, 0, 2], [0, 0, 0], [[3], [0]]], ids=["one-zero", "all-zero", "broadcast"]
)
@pytest.mark.parametrize("op", list(DIVISIONS))
def test_int_division_by_a_tensor_holding_zero_raises(device: Device, op: str, divisor: list[int]) -> None:
    if not device.backend.validates_index_values:
        pytest.skip(f"{device.backend.stack_name} does not read values back (validates_index_values)")
    dtype = device.backend.int_dtype
    tensor = make(np.array([[4, 5, 6], [7, 8, 9]]), device, dtype)
    with pytest.raises(ZeroDivisionError, match=rf"^{op}: integer division by zero: the divisor.* holds a 0"):
        DIVISIONS[op](tensor, make(np.array(divisor), device, dtype))


@pytest.mark.parametrize("op", list(DIVISIONS))
def test_int_division_without_zeros_is_floor_division(device: Device, op: str) -> None:
    dtype = device.backend.int_dtype
    a, b = np.array([[-7, 7, 0], [9, -9, 5]]), np.array([[2, -2, 3], [-4, 4, 1]])
    reference = np.floor_divide if op == "div" else np.remainder
    check(DIVISIONS[op](make(a, device, dtype), make(b, device, dtype)), reference(a, b), dtype)
    check(DIVISIONS[op](make(a, device, dtype), 3), reference(a, 3), dtype)


def test_float_division_by_zero_stays_ieee(device: Device) -> None:
    tensor = make(np.array([1.0, -1.0, 0.0]), device, DType.F32)
    assert (tensor / 0.0).tolist()[:2] == [float("inf"), float("-inf")]
    assert np.isnan((tensor / 0.0).tolist()[2])
    assert np.isnan((tensor % 0.0).tolist()).all()
    zeros = Tensor.zeros([3], device, DType.F32)
    assert (tensor / zeros).tolist()[:2] == [float("inf"), float("-inf")]
