"""Sorting Float tensors: sort, sort_descending, sort_with_indices and argsort (stable, both
directions), topk, topk_with_indices and argtopk."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.testing import FLOAT_DTYPES, check, make, random_array, require_dtype
from burn_backend.testing.core._common import LAYOUTS, f64, laid_out

SHAPE = (3, 4, 5)
DIMS = [0, 1, 2, -1]


def ties(rng: np.random.Generator, shape: tuple[int, ...], dtype: DType) -> np.ndarray:
    """Values from a small set, so that sorting must be stable to give one answer."""
    return (rng.integers(-3, 4, shape) / 2).astype(dtype.numpy)


def distinct(rng: np.random.Generator, shape: tuple[int, ...], dtype: DType) -> np.ndarray:
    """Distinct values (exact in every dtype), so that the order of indices is unique."""
    count = int(np.prod(shape))
    return (rng.permutation(count) - count // 2).reshape(shape).astype(dtype.numpy)


def stable_order(a: np.ndarray, dim: int, descending: bool) -> np.ndarray:
    return np.argsort(-f64(a) if descending else f64(a), axis=dim, kind="stable")


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_sort_is_stable(
    device: Device, rng: np.random.Generator, dtype: DType, dim: int, descending: bool
) -> None:
    require_dtype(device, dtype)
    a = ties(rng, SHAPE, dtype)
    order = stable_order(a, dim, descending)
    expected = np.take_along_axis(f64(a), order, dim)
    int_dtype = device.backend.int_dtype
    tensor = make(a, device)
    check(tensor.sort(dim, descending), expected, dtype)
    found, indices = tensor.sort_with_indices(dim, descending)
    check(found, expected, dtype)
    check(indices, order, int_dtype)
    check(tensor.argsort(dim, descending), order, int_dtype)
    if descending:
        check(tensor.sort_descending(dim), expected, dtype)


def test_sort_defaults_to_the_last_dim_ascending(device: Device, rng: np.random.Generator) -> None:
    a = random_array(rng, (3, 4), DType.F32)
    check(make(a, device).sort(), np.sort(f64(a), -1), DType.F32)
    check(make(a, device).argsort(), np.argsort(f64(a), -1, kind="stable"), device.backend.int_dtype)
    check(make(a, device).sort_descending(), -np.sort(-f64(a), -1), DType.F32)


def test_descending_sort_keeps_ties_in_order(device: Device) -> None:
    tensor = Tensor.from_data([1.0, 3.0, 1.0, 3.0, 2.0], device, DType.F32)
    check(tensor.argsort(descending=True), [1, 3, 4, 0, 2], device.backend.int_dtype)
    check(tensor.argsort(), [0, 2, 4, 1, 3], device.backend.int_dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_sort_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    a = ties(rng, (6, 4), DType.F32)
    for dim in (0, 1):
        found, indices = laid_out(a, device, layout).sort_with_indices(dim, True)
        order = stable_order(a, dim, True)
        check(found, np.take_along_axis(f64(a), order, dim), DType.F32)
        check(indices, order, device.backend.int_dtype)


def test_sort_of_edge_shapes(device: Device) -> None:
    check(Tensor.zeros([2, 0], device).sort(1), np.zeros((2, 0)), device.backend.float_dtype)
    check(Tensor.zeros([0, 3], device).argsort(0), np.zeros((0, 3)), device.backend.int_dtype)
    check(Tensor.from_data([[2.0]], device).sort(0), [[2.0]], device.backend.float_dtype)


def test_sort_with_infinities(device: Device) -> None:
    tensor = Tensor.from_data([1.0, -np.inf, np.inf, 0.0], device, DType.F32)
    assert tensor.sort().to_numpy().tolist() == [-np.inf, 0.0, 1.0, np.inf]
    assert tensor.sort_descending().to_numpy().tolist() == [np.inf, 1.0, 0.0, -np.inf]


@pytest.mark.parametrize("k", [0, 1, 3, 5])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_topk(device: Device, rng: np.random.Generator, dtype: DType, k: int) -> None:
    require_dtype(device, dtype)
    a = distinct(rng, (4, 5), dtype)
    order = np.argsort(-f64(a), axis=-1)[:, :k]
    expected = np.take_along_axis(f64(a), order, -1)
    int_dtype = device.backend.int_dtype
    tensor = make(a, device)
    check(tensor.topk(k), expected, dtype)
    found, indices = tensor.topk_with_indices(k)
    check(found, expected, dtype)
    check(indices, order, int_dtype)
    check(tensor.argtopk(k), order, int_dtype)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_topk_along_a_dim(device: Device, rng: np.random.Generator, dtype: DType, dim: int) -> None:
    require_dtype(device, dtype)
    a = distinct(rng, SHAPE, dtype)
    k = 2
    order = np.take(np.argsort(-f64(a), axis=dim), range(k), axis=dim)
    int_dtype = device.backend.int_dtype
    found, indices = make(a, device).topk_with_indices(k, dim)
    check(found, np.take_along_axis(f64(a), order, dim), dtype)
    check(indices, order, int_dtype)
    check(make(a, device).argtopk(k, dim), order, int_dtype)
    check(make(a, device).topk(k, dim), np.take_along_axis(f64(a), order, dim), dtype)


def test_topk_values_with_ties(device: Device) -> None:
    tensor = Tensor.from_data([[1.0, 5.0, 5.0, 2.0], [0.0, 0.0, 0.0, 0.0]], device, DType.F32)
    check(tensor.topk(3, 1), [[5.0, 5.0, 2.0], [0.0, 0.0, 0.0]], DType.F32)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_topk_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    a = distinct(rng, (6, 4), DType.F32)
    order = np.argsort(-f64(a), axis=0)[:3]
    found, indices = laid_out(a, device, layout).topk_with_indices(3, 0)
    check(found, np.take_along_axis(f64(a), order, 0), DType.F32)
    check(indices, order, device.backend.int_dtype)
