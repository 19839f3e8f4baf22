"""Conversions from and to Bool tensors: int() and float() to every dtype (1 for true), bool() of
every kind (true where non-zero, NaN included), cast(), and Bool creation."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Bool, Device, DType, Tensor
from burn_backend.testing import FLOAT_DTYPES, INT_DTYPES, check, make, random_array, require_dtype
from burn_backend.testing.core._common import LAYOUTS, laid_out


@pytest.mark.parametrize("shape", [(3, 4), (0,), ()], ids=str)
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_bool_to_int(device: Device, rng: np.random.Generator, dtype: DType, shape: tuple[int, ...]) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, shape, DType.BOOL)
    check(make(a, device).int(dtype), a.astype(np.int64), dtype)
    check(make(a, device).cast(dtype), a.astype(np.int64), dtype)


@pytest.mark.parametrize("shape", [(3, 4), (0,), ()], ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_bool_to_float(
    device: Device, rng: np.random.Generator, dtype: DType, shape: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, shape, DType.BOOL)
    check(make(a, device).float(dtype), a.astype(np.float64), dtype)
    check(make(a, device).cast(dtype), a.astype(np.float64), dtype)


def test_bool_conversions_default_to_the_backend_dtypes(device: Device) -> None:
    tensor = Tensor.from_data([True, False], device)
    check(tensor.int(), [1, 0], device.backend.int_dtype)
    check(tensor.float(), [1.0, 0.0], device.backend.float_dtype)
    assert tensor.bool() is tensor
    assert tensor.cast(DType.BOOL) is tensor
    assert tensor.cast("bool") is tensor


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_to_bool(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = np.array([0.0, -0.0, 1.5, -2.0, np.nan, np.inf, 1e-3])
    expected = [False, False, True, True, True, True, True]
    check(make(a, device, dtype).bool(), expected, DType.BOOL)
    check(make(a, device, dtype).cast(DType.BOOL), expected, DType.BOOL)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_conversions_of_laid_out_bool_tensors(device: Device, rng: np.random.Generator, layout: str) -> None:
    a = random_array(rng, (4, 3), DType.BOOL)
    tensor = laid_out(a, device, layout)
    check(tensor.int(), a.astype(np.int64), device.backend.int_dtype)
    check(tensor.float(), a.astype(np.float64), device.backend.float_dtype)


def test_round_trips(device: Device, rng: np.random.Generator) -> None:
    a = random_array(rng, (3, 5), DType.BOOL)
    tensor = make(a, device)
    check(tensor.int().bool(), a, DType.BOOL)
    check(tensor.float().bool(), a, DType.BOOL)
    check(tensor.float().sum(), [a.sum()], device.backend.float_dtype)
    check(tensor.int().sum_dim(1), a.sum(1, keepdims=True), device.backend.int_dtype)


@pytest.mark.parametrize("shape", [(2, 3), (0, 4), ()], ids=str)
def test_bool_creation(device: Device, shape: tuple[int, ...]) -> None:
    check(Tensor.zeros(shape, device, Bool), np.zeros(shape, bool), DType.BOOL)
    check(Tensor.ones(shape, device, DType.BOOL), np.ones(shape, bool), DType.BOOL)
    check(Tensor.full(shape, True, device), np.ones(shape, bool), DType.BOOL)
    check(Tensor.full(shape, 0, device, DType.BOOL), np.zeros(shape, bool), DType.BOOL)
    empty = Tensor.empty(shape, device, DType.BOOL)
    assert empty.dims() == list(shape)
    assert empty.dtype is DType.BOOL
