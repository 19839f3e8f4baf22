"""Sorting Int tensors for every int dtype: sort, argsort, sort_with_indices (stable, both
directions), topk, topk_with_indices and argtopk."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.testing import INT_DTYPES, check, make, require_dtype
from burn_backend.testing.core._common import LAYOUTS, ints, laid_out


def stable_order(a: np.ndarray, dim: int, descending: bool) -> np.ndarray:
    x = a.astype(np.int64)
    return np.argsort(-x if descending else x, axis=dim, kind="stable")


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_sort_is_stable(
    device: Device, rng: np.random.Generator, dtype: DType, dim: int, descending: bool
) -> None:
    require_dtype(device, dtype)
    a = ints(rng, (4, 6), dtype, -3, 3)
    order = stable_order(a, dim, descending)
    expected = np.take_along_axis(a, order, dim)
    int_dtype = device.backend.int_dtype
    tensor = make(a, device)
    check(tensor.sort(dim, descending), expected, dtype)
    found, indices = tensor.sort_with_indices(dim, descending)
    check(found, expected, dtype)
    check(indices, order, int_dtype)
    check(tensor.argsort(dim, descending), order, int_dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_sort_of_the_whole_range(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    info = np.iinfo(dtype.numpy)
    a = np.array([int(info.max), 0, int(info.min), 1, int(info.max) - 1], dtype=dtype.numpy)
    check(make(a, device).sort(), np.sort(a), dtype)
    check(make(a, device).sort_descending(), np.sort(a)[::-1], dtype)


@pytest.mark.parametrize("k", [0, 2, 6])
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_topk(device: Device, rng: np.random.Generator, dtype: DType, k: int) -> None:
    require_dtype(device, dtype)
    a = np.stack([rng.permutation(6) * (1 if i % 2 else 2) for i in range(3)]).astype(dtype.numpy)
    order = np.argsort(-a.astype(np.int64), axis=1)[:, :k]
    expected = np.take_along_axis(a, order, 1)
    int_dtype = device.backend.int_dtype
    tensor = make(a, device)
    check(tensor.topk(k, 1), expected, dtype)
    found, indices = tensor.topk_with_indices(k, 1)
    check(found, expected, dtype)
    check(indices, order, int_dtype)
    check(tensor.argtopk(k, 1), order, int_dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_sort_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    dtype = device.backend.int_dtype
    a = ints(rng, (6, 4), dtype, -3, 3)
    for dim in (0, 1):
        found, indices = laid_out(a, device, layout).sort_with_indices(dim)
        order = stable_order(a, dim, False)
        check(found, np.take_along_axis(a, order, dim), dtype)
        check(indices, order, device.backend.int_dtype)


def test_sort_example(device: Device) -> None:
    tensor = Tensor.from_data([3, 1, 3, 2, 1], device)
    int_dtype = device.backend.int_dtype
    check(tensor.sort(), [1, 1, 2, 3, 3], int_dtype)
    check(tensor.argsort(descending=True), [0, 2, 3, 1, 4], int_dtype)
    check(tensor.topk(2), [3, 3], int_dtype)
