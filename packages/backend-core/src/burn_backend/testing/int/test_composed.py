"""Composed ops on Int (and Bool) tensors: max_pair/min_pair, fmod (truncated, with the dividend's sign),
where, median and indexing by masks, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.testing import check, make, require_dtype


@pytest.mark.parametrize("dtype", [DType.I64, DType.I32, DType.I8, DType.U8], ids=str)
def test_pairwise_extrema(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    low = 0 if dtype.name.startswith("U") else -9
    a, b = rng.integers(low, 10, (3, 4)).astype(dtype.numpy), rng.integers(low, 10, (4,)).astype(dtype.numpy)
    check(make(a, device).max_pair(make(b, device)), np.maximum(a, b), dtype)
    check(make(a, device).min_pair(make(b, device)), np.minimum(a, b), dtype)
    check(make(a, device).max_pair(3), np.maximum(a, 3), dtype)


@pytest.mark.parametrize("dtype", [DType.I64, DType.I32, DType.I16], ids=str)
def test_fmod(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = rng.integers(-20, 20, (3, 4)).astype(dtype.numpy)
    b = (rng.integers(1, 6, (4,)) * np.array([1, -1, 1, -1])).astype(dtype.numpy)
    check(make(a, device).fmod(make(b, device)), np.fmod(a, b), dtype)
    check(make(a, device).fmod(-3), np.fmod(a, -3), dtype)
    with pytest.raises(ZeroDivisionError, match="fmod: integer division by zero"):
        make(a, device).fmod(0)


def test_fmod_by_a_zero_tensor(device: Device) -> None:
    x = Tensor.from_data([5, 7], device)
    if not device.backend.validates_index_values:
        pytest.skip(f"{device.backend.name} does not read divisors back")
    with pytest.raises(ZeroDivisionError, match="fmod: integer division by zero"):
        x.fmod(Tensor.from_data([1, 0], device))


def test_where_on_int_and_bool_tensors(device: Device, rng: np.random.Generator) -> None:
    cond = rng.random((2, 3)) < 0.5
    a, b = rng.integers(-5, 5, (2, 3)), rng.integers(-5, 5, (3,))
    x, y, c = Tensor.from_data(a, device), Tensor.from_data(b, device), make(cond, device)
    check(Tensor.where(c, x, y), np.where(cond, a, b), x.dtype)
    check(Tensor.where(c, x, 7), np.where(cond, a, 7), x.dtype)
    p, q = make(a > 0, device), make(b > 0, device)
    check(Tensor.where(c, p, q), np.where(cond, a > 0, b > 0), DType.BOOL)
    with pytest.raises(TypeError, match="where: expected an int"):
        Tensor.where(c, x, 0.5)


def test_indexing_int_and_bool_tensors_by_masks(device: Device, rng: np.random.Generator) -> None:
    a = rng.integers(-5, 5, (3, 4))
    mask = a > 0
    x = Tensor.from_data(a, device)
    check(x[make(mask, device)], a[mask], x.dtype)
    check(make(mask, device)[make(mask[:, 0], device)], mask[mask[:, 0]], DType.BOOL)
    check(x.median(0), np.sort(a, 0)[1:2], x.dtype)
