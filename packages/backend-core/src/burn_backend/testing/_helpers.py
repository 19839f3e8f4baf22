"""Helpers the conformance tests share: dtypes, random inputs and checks against NumPy references."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from .._backend import Backend
from .._data import TensorData, Tolerance
from .._decorator import BackendDecorator
from .._device import Device
from .._dtype import DType
from .._tensor import Tensor

FLOAT_DTYPES = (DType.F64, DType.F32, DType.F16, DType.BF16)
INT_DTYPES = (DType.I64, DType.I32, DType.I16, DType.I8, DType.U64, DType.U32, DType.U16, DType.U8)


def require_dtype(device: Device, dtype: DType) -> None:
    """Skip the test if ``device`` does not support ``dtype``."""
    if not device.backend.supports_dtype(device, dtype):
        pytest.skip(f"{device.backend.name} does not support {dtype}")


def fusion_layer(backend: Backend) -> BackendDecorator | None:
    """The stack's ``Fusion`` layer, found by name (backend-core does not import burn-fusion), or
    ``None`` where no layer of the stack fuses ops lazily."""
    while isinstance(backend, BackendDecorator):
        if backend.name == "fusion" and hasattr(backend, "executor"):
            return backend
        backend = backend.inner
    return None


def random_array(
    rng: np.random.Generator, shape: Sequence[int], dtype: DType, low: float = -2.0, high: float = 2.0
) -> np.ndarray[Any, Any]:
    """Random values of ``dtype``: uniform floats in [low, high), integers in [low, high] (clipped to
    the dtype's range), or fair booleans."""
    shape = tuple(shape)
    if dtype is DType.BOOL:
        return rng.random(shape) < 0.5
    if dtype.is_int:
        info = np.iinfo(dtype.numpy)
        lo, hi = max(int(low), int(info.min)), min(int(high), int(info.max))
        return rng.integers(lo, hi, shape, endpoint=True).astype(dtype.numpy)
    return rng.uniform(low, high, shape).astype(dtype.numpy)


def make(values: Any, device: Device, dtype: DType | None = None) -> Tensor:
    """A tensor of ``values`` (a NumPy array keeps its dtype unless ``dtype`` is given)."""
    array = np.asarray(values)
    if dtype is None:
        dtype = DType.of(array.dtype)
    return Tensor.from_data(TensorData(array, dtype), device, dtype)


def check(
    result: Any,
    expected: Any,
    dtype: DType | None = None,
    tolerance: Tolerance | None = None,
    scale: float = 1.0,
) -> None:
    """Assert ``result`` is a Tensor of ``expected``'s shape, of ``dtype`` (by default ``expected``'s
    dtype), with values equal (ints, bools) or within the dtype's tolerance (floats) times ``scale``.

    ``expected`` is usually computed in float64 from the same inputs; it is compared in float64.
    """
    assert isinstance(result, Tensor), f"expected a Tensor, got {type(result).__name__}"
    expected_array = np.asarray(expected)
    if dtype is None:
        dtype = DType.of(expected_array.dtype)
    assert result.dtype is dtype, f"dtype: got {result.dtype}, expected {dtype}"
    assert result.dims() == list(expected_array.shape), (
        f"shape: got {result.dims()}, expected {list(expected_array.shape)}"
    )
    data = result.to_data()
    assert data.dtype is dtype, f"the data's dtype {data.dtype} differs from the tensor's {dtype}"
    if dtype.is_float:
        tol = tolerance if tolerance is not None else Tolerance.for_dtype(dtype).scaled(scale)
        data.assert_approx_eq(TensorData(expected_array.astype(np.float64)), tol)
    else:
        data.assert_eq(TensorData(expected_array.astype(dtype.numpy)), strict=False)
