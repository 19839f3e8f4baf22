"""The per-op cost of the Tensor API: the common case of a binary op (two tensors of one dtype, shape and
device, or a Float tensor and a Python float) runs no Python function of the API besides the op itself,
and attribute reads of tensors stay specializable by the interpreter."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from burn_backend import Device, DType, Tensor

from ..._dtype import KIND_OF_ID, KIND_OF_TYPE

API = Path(__file__).resolve().parents[2]  # burn_backend/


def api_calls(function: Callable[[], object]) -> list[str]:
    """The Python functions of the Tensor API's modules (``burn_backend/_tensor*.py``) that ``function``
    calls, in order."""
    calls: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        path = Path(frame.f_code.co_filename)
        if event == "call" and path.parent == API and path.name.startswith("_tensor"):
            calls.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        function()
    finally:
        sys.setprofile(None)
    return calls


def test_no_class_of_tensor_defines_getattr() -> None:
    # a class with __getattr__ has a custom attribute lookup: CPython then specializes no attribute read
    # of its instances, and every op of the API reads several (a 2x2 add: 1.59 -> 1.93 us)
    assert Tensor.__getattribute__ is object.__getattribute__
    assert not [cls.__name__ for cls in Tensor.__mro__ if "__getattr__" in vars(cls)]


@pytest.mark.parametrize(
    ("name", "call", "expected"),
    [
        ("a + b", lambda a, b: a + b, [6.0, 8.0, 10.0, 12.0]),
        ("a - b", lambda a, b: a - b, [-4.0, -4.0, -4.0, -4.0]),
        ("a * b", lambda a, b: a * b, [5.0, 12.0, 21.0, 32.0]),
        ("a / b", lambda a, b: a / b, [0.2, 1 / 3, 3 / 7, 0.5]),
        ("a % b", lambda a, b: a % b, [1.0, 2.0, 3.0, 4.0]),
        ("a.add(b)", lambda a, b: a.add(b), [6.0, 8.0, 10.0, 12.0]),
        ("a * 2.0", lambda a, b: a * 2.0, [2.0, 4.0, 6.0, 8.0]),
        ("2.0 + a", lambda a, b: 2.0 + a, [3.0, 4.0, 5.0, 6.0]),
    ],
)
def test_common_binary_ops_call_only_the_op(
    device: Device, name: str, call: Callable[[Tensor, Tensor], Tensor], expected: list[float]
) -> None:
    a = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], device)
    b = Tensor.from_data([[5.0, 6.0], [7.0, 8.0]], device)
    call(a, b)  # a first call may set up caches
    calls = api_calls(lambda: call(a, b))
    dtype = a.primitive.dtype
    if type(dtype) in KIND_OF_TYPE or id(dtype) in KIND_OF_ID:
        assert len(calls) == 1, f"{name} called {calls}"
    else:  # another library's dtype objects (array_api_strict's) take the checked path
        assert "_arith" in calls, f"{name} called {calls}"
    out = call(a, b)
    assert (out.device, out.dtype) == (device, a.dtype)
    assert out.to_data().to_numpy().ravel().tolist() == pytest.approx(expected, rel=1e-6)


def test_other_operands_take_the_checked_path(device: Device) -> None:
    ints = Tensor.from_data([[7, -7], [9, 4]], device)
    assert (ints + ints).tolist() == [[14, -14], [18, 8]]
    assert (ints % Tensor.from_data([[2, 2], [4, 3]], device)).tolist() == [[1, 1], [1, 1]]
    assert len(api_calls(lambda: ints % ints)) > 1  # the divisor is checked for zeros
    floats = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], device)
    assert (floats + Tensor.from_data([10.0, 20.0], device)).tolist() == [[11.0, 22.0], [13.0, 24.0]]
    assert (floats + 1).tolist() == [[2.0, 3.0], [4.0, 5.0]]
    other = DType.F64 if floats.dtype is not DType.F64 else DType.F32
    if device.backend.supports_dtype(device, other):
        with pytest.raises(TypeError, match="add: dtypes differ"):
            floats + floats.cast(other)
    with pytest.raises(TypeError, match="/: true division of an Int tensor"):
        ints / ints
    with pytest.raises(TypeError, match="sub: expected a Float or Int tensor"):
        floats.bool() - floats.bool()
