"""Devices the backend does not have are refused by creation ops, ``from_inner`` adopts only tensors of
the autodiff device's inner device, and the error for two devices that print alike (backends of one
name with other settings) says what differs."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import AutodiffBackend, Backend, Device, Distribution, DType, Tensor

CREATION: dict[str, Callable[[Device], Tensor]] = {
    "zeros": lambda d: Tensor.zeros([2], d),
    "ones": lambda d: Tensor.ones([2], d),
    "empty": lambda d: Tensor.empty([2], d),
    "full": lambda d: Tensor.full([2], 1.5, d),
    "random": lambda d: Tensor.random([2], Distribution.default(), d),
    "arange": lambda d: Tensor.arange(3, device=d),
    "linspace": lambda d: Tensor.linspace(0.0, 1.0, 3, d),
    "eye": lambda d: Tensor.eye(2, d),
    "from_data": lambda d: Tensor.from_data([1.0, 2.0], d),
}


@pytest.mark.parametrize("where", ["minus-1", "past-the-count"])
@pytest.mark.parametrize("op", list(CREATION))
def test_creation_refuses_a_device_the_backend_does_not_have(device: Device, op: str, where: str) -> None:
    backend = device.backend
    index = -1 if where == "minus-1" else backend.device_count()
    missing = Device(backend, index)
    with pytest.raises(
        ValueError, match=rf"^{op}: {re.escape(backend.stack_name)}:{index} is not a device: .*no device"
    ):
        CREATION[op](missing)


def test_to_device_refuses_a_device_the_backend_does_not_have(device: Device) -> None:
    missing = Device(device.backend, device.backend.device_count())
    with pytest.raises(ValueError, match=rf"^to_device: {re.escape(str(missing))} is not a device"):
        Tensor.ones([2], device).to_device(missing)


def test_creation_accepts_an_equal_device_handle(device: Device) -> None:
    """A handle built by hand for a device that exists is as good as the backend's own."""
    handle = Device(device.backend, device.index)
    assert Tensor.zeros([2], handle).device == device


def similar_backend(backend: Backend, float_dtype: DType) -> Backend:
    """A backend of ``backend``'s class (decorators around an inner one of its class, a router around
    its inner ones) whose default float dtype is ``float_dtype``; the test skips where the class cannot
    be built so."""
    try:
        inner: Any = getattr(backend, "inner", None)
        build: Any = type(backend)
        several = getattr(backend, "backends", None)
        if backend.is_decorator and isinstance(several, tuple):
            return build(*(similar_backend(b, float_dtype) for b in several))  # type: ignore[no-any-return]
        if backend.is_decorator and isinstance(inner, Backend):
            return build(similar_backend(inner, float_dtype))  # type: ignore[no-any-return]
        return build(float_dtype=float_dtype)  # type: ignore[no-any-return]
    except TypeError as error:
        pytest.skip(f"{type(backend).__name__} cannot be built with another float dtype: {error}")


def other_float_dtype(device: Device) -> DType:
    other = DType.F64 if device.backend.float_dtype is not DType.F64 else DType.F32
    if not device.backend.supports_dtype(device, other):
        pytest.skip(f"{device.backend.stack_name} does not support {other}")
    return other


def test_the_device_mismatch_of_backends_that_print_alike_says_what_differs(device: Device) -> None:
    other_dtype = other_float_dtype(device)
    backend = device.backend
    other = similar_backend(backend, other_dtype).device(device.index)
    assert str(other) == str(device)
    assert other != device
    a = Tensor.ones([2], device, DType.F32)
    b = Tensor.ones([2], other, DType.F32)
    differs = rf"float_dtype {backend.float_dtype} vs {other_dtype}"
    name = re.escape(str(device))
    mismatch = rf"add: tensors are on different devices, {name} and {name} \(.*{differs}"
    with pytest.raises(ValueError, match=mismatch):
        a + b
    with pytest.raises(ValueError, match=rf"mask_fill: tensors are on different devices.*{differs}"):
        a.mask_fill(Tensor.ones([2], other, DType.BOOL), 0.0)


def test_from_inner_adopts_only_tensors_of_the_inner_device(device: Device) -> None:
    backend = device.backend
    if not isinstance(backend, AutodiffBackend):
        pytest.skip(f"{backend.stack_name} has no inner backend")
    inner = backend.inner.device(device.index)
    lifted = Tensor.from_inner(Tensor.from_data(np.array([1.0, 2.0]), inner), device)
    assert lifted.device == device
    assert lifted.tolist() == [1.0, 2.0]

    own = Tensor.ones([2], device)
    with pytest.raises(
        ValueError, match=rf"from_inner: the tensor must live on the inner device of {re.escape(str(device))}"
    ):
        Tensor.from_inner(own, device)
    stranger = similar_backend(backend.inner, other_float_dtype(device)).device(device.index)
    with pytest.raises(ValueError, match=r"from_inner: .*backends with different settings: float_dtype"):
        Tensor.from_inner(Tensor.ones([2], stranger, DType.F32), device)
    with pytest.raises(TypeError, match="from_inner: expected a Tensor, got ndarray"):
        Tensor.from_inner(np.ones(2), device)  # type: ignore[arg-type]
