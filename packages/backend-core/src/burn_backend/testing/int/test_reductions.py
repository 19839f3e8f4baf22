"""Int reductions for every int dtype: sum, mean (floored), prod, max, min, max_abs, arg extrema,
any, all, running reductions; whole tensors give shape [1], *_dim keep the dim."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.testing import INT_DTYPES, check, make, require_dtype
from burn_backend.testing.core._common import LAYOUTS, ints, laid_out

SHAPE = (3, 4)
DIMS = [0, 1, -1]


def small(rng: np.random.Generator, shape: tuple[int, ...], dtype: DType) -> np.ndarray:
    """Values whose sums over SHAPE fit an i8 / u8."""
    return ints(rng, shape, dtype, -5, 9)


def floor_mean(total: np.ndarray, count: int) -> np.ndarray:
    floored: np.ndarray = np.vectorize(lambda t: int(t) // count, otypes=[np.int64])(total)
    return floored


DIM_REDUCTIONS: dict[str, Callable[[np.ndarray, int], Any]] = {
    "sum_dim": lambda a, d: a.sum(d, keepdims=True),
    "mean_dim": lambda a, d: floor_mean(a.sum(d, keepdims=True), a.shape[d]),
    "max_dim": lambda a, d: a.max(d, keepdims=True),
    "min_dim": lambda a, d: a.min(d, keepdims=True),
    "max_abs_dim": lambda a, d: np.abs(a).max(d, keepdims=True),
}


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("op", list(DIM_REDUCTIONS))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_reduce_dim(device: Device, rng: np.random.Generator, dtype: DType, op: str, dim: int) -> None:
    require_dtype(device, dtype)
    a = small(rng, SHAPE, dtype)
    check(getattr(make(a, device), op)(dim), DIM_REDUCTIONS[op](a.astype(np.int64), dim), dtype)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_prod_dim(device: Device, rng: np.random.Generator, dtype: DType, dim: int) -> None:
    require_dtype(device, dtype)
    a = ints(rng, SHAPE, dtype, -2, 2)
    check(make(a, device).prod_dim(dim), a.astype(np.int64).prod(dim, keepdims=True), dtype)


WHOLE: dict[str, Callable[[np.ndarray], Any]] = {
    "sum": np.sum,
    "mean": lambda a: int(a.sum()) // a.size,
    "max": np.max,
    "min": np.min,
    "max_abs": lambda a: np.abs(a).max(),
}


@pytest.mark.parametrize("shape", [SHAPE, (5,), ()], ids=str)
@pytest.mark.parametrize("op", list(WHOLE))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_reduce_to_shape_1(
    device: Device, rng: np.random.Generator, dtype: DType, op: str, shape: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    a = small(rng, shape, dtype)
    check(getattr(make(a, device), op)(), [WHOLE[op](a.astype(np.int64))], dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_prod(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = ints(rng, (2, 3), dtype, -2, 2)
    check(make(a, device).prod(), [a.astype(np.int64).prod()], dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_mean_floors(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    if dtype.is_signed:
        tensor = make(np.array([[-1, -2, -4], [1, 2, 4]]), device, dtype)
        check(tensor.mean(), [0], dtype)
        check(tensor.mean_dim(1), [[-3], [2]], dtype)
    else:
        tensor = make(np.array([[1, 2, 4], [9, 9, 9]]), device, dtype)
        check(tensor.mean(), [5], dtype)
        check(tensor.mean_dim(1), [[2], [9]], dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_sums_of_nothing(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    empty = Tensor.zeros([0, 3], device, dtype)
    check(empty.sum(), [0], dtype)
    check(empty.prod(), [1], dtype)
    check(empty.sum_dim(0), [[0, 0, 0]], dtype)
    check(empty.prod_dim(0), [[1, 1, 1]], dtype)
    check(empty.sum_dim(1), np.zeros((0, 1)), dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_reductions_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    dtype = device.backend.int_dtype
    a = small(rng, (6, 4), dtype)
    tensor = laid_out(a, device, layout)
    check(tensor.sum(), [a.sum()], dtype)
    for dim in (0, 1):
        check(tensor.sum_dim(dim), a.sum(dim, keepdims=True), dtype)
        check(tensor.max_dim(dim), a.max(dim, keepdims=True), dtype)
        check(tensor.argmin(dim), a.argmin(dim, keepdims=True), dtype)


# -- arg extrema ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_arg_extrema(device: Device, rng: np.random.Generator, dtype: DType, dim: int) -> None:
    require_dtype(device, dtype)
    a = small(rng, SHAPE, dtype)
    x = a.astype(np.int64)
    int_dtype = device.backend.int_dtype
    tensor = make(a, device)
    check(tensor.argmax(dim), x.argmax(dim, keepdims=True), int_dtype)
    check(tensor.argmin(dim), x.argmin(dim, keepdims=True), int_dtype)
    values, indices = tensor.max_dim_with_indices(dim)
    check(values, x.max(dim, keepdims=True), dtype)
    check(indices, x.argmax(dim, keepdims=True), int_dtype)
    values, indices = tensor.min_dim_with_indices(dim)
    check(values, x.min(dim, keepdims=True), dtype)
    check(indices, x.argmin(dim, keepdims=True), int_dtype)


def test_arg_extrema_take_the_first_of_ties(device: Device) -> None:
    tensor = Tensor.from_data([[4, 9, 9, 1, 1]], device)
    int_dtype = device.backend.int_dtype
    check(tensor.argmax(1), [[1]], int_dtype)
    check(tensor.argmin(1), [[3]], int_dtype)
    check(tensor.max_dim_with_indices(1)[1], [[1]], int_dtype)


# -- any, all ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_any_and_all(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = ints(rng, (4, 5), dtype, -1, 3)
    a[0] = 1
    tensor = make(a, device)
    check(tensor.any(), [a.any()], DType.BOOL)
    check(tensor.all(), [a.all()], DType.BOOL)
    for dim in DIMS:
        check(tensor.any_dim(dim), a.any(dim, keepdims=True), DType.BOOL)
        check(tensor.all_dim(dim), a.all(dim, keepdims=True), DType.BOOL)
    check(Tensor.zeros([3], device, dtype).any(), [False], DType.BOOL)
    check(Tensor.ones([3], device, dtype).all(), [True], DType.BOOL)


# -- running reductions --------------------------------------------------------------------------------------
RUNNING: dict[str, tuple[Callable[..., Any], int, int]] = {
    "cumsum": (np.cumsum, -5, 9),
    "cumprod": (np.cumprod, -2, 2),
    "cummin": (np.minimum.accumulate, -50, 50),
    "cummax": (np.maximum.accumulate, -50, 50),
}


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("op", list(RUNNING))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_running(device: Device, rng: np.random.Generator, dtype: DType, op: str, dim: int) -> None:
    require_dtype(device, dtype)
    reference, low, high = RUNNING[op]
    a = ints(rng, SHAPE, dtype, low, high)
    check(getattr(make(a, device), op)(dim), reference(a.astype(np.int64), axis=dim), dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("op", list(RUNNING))
def test_running_of_laid_out_inputs(device: Device, rng: np.random.Generator, op: str, layout: str) -> None:
    dtype = device.backend.int_dtype
    reference, low, high = RUNNING[op]
    a = ints(rng, (5, 3), dtype, low, high)
    for dim in (0, 1):
        check(getattr(laid_out(a, device, layout), op)(dim), reference(a, axis=dim), dtype)
