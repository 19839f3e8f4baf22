"""Float reductions: sum, mean, prod, max, min, max_abs, arg extrema, any, all (whole and along a dim,
which is kept with size 1), running reductions and the variance family."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, Tolerance
from burn_backend.testing import FLOAT_DTYPES, check, make, random_array, require_dtype
from burn_backend.testing.core._common import LAYOUTS, accumulated, f64, index_tensor, laid_out, values

SHAPE = (3, 4, 5)
DIMS = [0, 1, 2, -1, -3]


def with_zeros(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: DType, low: float = -2.0
) -> np.ndarray:
    """Random values with about a fifth of them exactly zero (for any/all and sign changes)."""
    a = random_array(rng, shape, dtype, low, 2.0)
    a[rng.random(shape) < 0.2] = 0
    return a


# -- along a dim -----------------------------------------------------------------------------------------
# name -> (reference keeping the dim, low, high): prod's inputs stay near 1, where it is well conditioned
DIM_REDUCTIONS: dict[str, tuple[Callable[[np.ndarray, int], Any], float, float]] = {
    "sum_dim": (lambda a, d: a.sum(d, keepdims=True), -2.0, 2.0),
    "mean_dim": (lambda a, d: a.mean(d, keepdims=True), -2.0, 2.0),
    "prod_dim": (lambda a, d: a.prod(d, keepdims=True), 0.5, 1.5),
    "max_dim": (lambda a, d: a.max(d, keepdims=True), -2.0, 2.0),
    "min_dim": (lambda a, d: a.min(d, keepdims=True), -2.0, 2.0),
    "max_abs_dim": (lambda a, d: np.abs(a).max(d, keepdims=True), -2.0, 2.0),
}


def dim_tolerance(op: str, dtype: DType, a: np.ndarray, dim: int) -> Tolerance:
    if op == "sum_dim":
        return accumulated(dtype, np.abs(a).sum(dim).max(initial=0.0))
    if op == "mean_dim":
        return accumulated(dtype, np.abs(a).mean(dim).max(initial=0.0))
    return Tolerance.for_dtype(dtype).scaled(a.shape[dim] if op == "prod_dim" else 1)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("op", list(DIM_REDUCTIONS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_reduce_dim_keeps_the_dim(
    device: Device, rng: np.random.Generator, dtype: DType, op: str, dim: int
) -> None:
    require_dtype(device, dtype)
    reference, low, high = DIM_REDUCTIONS[op]
    a = random_array(rng, SHAPE, dtype, low, high)
    expected = reference(f64(a), dim)
    check(getattr(make(a, device), op)(dim), expected, dtype, dim_tolerance(op, dtype, f64(a), dim))


@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("op", list(DIM_REDUCTIONS))
def test_reduce_dim_of_laid_out_inputs(
    device: Device, rng: np.random.Generator, op: str, layout: str
) -> None:
    reference, low, high = DIM_REDUCTIONS[op]
    a = random_array(rng, (4, 6), DType.F32, low, high)
    for dim in (0, 1):
        result = getattr(laid_out(a, device, layout), op)(dim)
        check(result, reference(f64(a), dim), DType.F32, dim_tolerance(op, DType.F32, f64(a), dim))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_sum_dim_of_a_long_dim(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (3, 500), dtype)
    check(
        make(a, device).sum_dim(1),
        f64(a).sum(1, keepdims=True),
        dtype,
        accumulated(dtype, np.abs(f64(a)).sum(1).max()),
    )


@pytest.mark.parametrize(
    ("op", "expected"),
    [("sum_dim", 0.0), ("prod_dim", 1.0)],
)
def test_reduce_dim_over_an_empty_dim(device: Device, op: str, expected: float) -> None:
    result = getattr(Tensor.zeros([0, 3], device), op)(0)
    check(result, np.full((1, 3), expected), device.backend.float_dtype)


def test_reduce_dim_of_a_tensor_with_an_empty_other_dim(device: Device) -> None:
    tensor = Tensor.zeros([0, 3], device)
    check(tensor.sum_dim(1), np.zeros((0, 1)), device.backend.float_dtype)
    check(tensor.max_dim(1), np.zeros((0, 1)), device.backend.float_dtype)
    check(tensor.argmax(1), np.zeros((0, 1)), device.backend.int_dtype)


def test_mean_of_nothing_is_nan(device: Device) -> None:
    assert np.isnan(values(Tensor.zeros([0], device).mean())).all()


def test_mean_dim_over_an_empty_dim_is_nan(device: Device) -> None:
    result = Tensor.zeros([0, 2], device).mean_dim(0)
    assert result.dims() == [1, 2]
    assert np.isnan(values(result)).all()


# -- whole tensor ----------------------------------------------------------------------------------------
WHOLE: dict[str, tuple[Callable[[np.ndarray], Any], float, float]] = {
    "sum": (np.sum, -2.0, 2.0),
    "mean": (np.mean, -2.0, 2.0),
    "prod": (np.prod, 0.8, 1.25),
    "max": (np.max, -2.0, 2.0),
    "min": (np.min, -2.0, 2.0),
    "max_abs": (lambda a: np.abs(a).max(), -2.0, 2.0),
}


@pytest.mark.parametrize("shape", [(7,), SHAPE, (1, 1), ()], ids=str)
@pytest.mark.parametrize("op", list(WHOLE))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_reduce_to_shape_1(
    device: Device, rng: np.random.Generator, dtype: DType, op: str, shape: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    reference, low, high = WHOLE[op]
    a = random_array(rng, shape, dtype, low, high)
    expected = np.array([reference(f64(a))])
    if op == "sum":
        tolerance = accumulated(dtype, np.abs(f64(a)).sum())
    elif op == "mean":
        tolerance = accumulated(dtype, np.abs(f64(a)).mean())
    else:
        tolerance = Tolerance.for_dtype(dtype).scaled(a.size / 4 + 1 if op == "prod" else 1)
    check(getattr(make(a, device), op)(), expected, dtype, tolerance)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_whole_reductions_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    a = random_array(rng, (6, 5), DType.F32)
    tensor = laid_out(a, device, layout)
    check(tensor.sum(), [f64(a).sum()], DType.F32, accumulated(DType.F32, np.abs(f64(a)).sum()))
    check(tensor.max(), [f64(a).max()], DType.F32)
    check(tensor.min(), [f64(a).min()], DType.F32)


def test_sum_and_prod_of_nothing(device: Device) -> None:
    check(Tensor.zeros([0], device).sum(), [0.0], device.backend.float_dtype)
    check(Tensor.zeros([2, 0], device).prod(), [1.0], device.backend.float_dtype)


def test_max_and_min_with_infinities(device: Device) -> None:
    tensor = Tensor.from_data([1.0, np.inf, -np.inf, 2.0], device, DType.F32)
    assert values(tensor.max()).tolist() == [np.inf]
    assert values(tensor.min()).tolist() == [-np.inf]
    assert values(tensor.max_abs()).tolist() == [np.inf]


# -- arg extrema, with indices ---------------------------------------------------------------------------
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_argmax_and_argmin(device: Device, rng: np.random.Generator, dtype: DType, dim: int) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, SHAPE, dtype)
    int_dtype = device.backend.int_dtype
    check(make(a, device).argmax(dim), np.argmax(f64(a), dim, keepdims=True), int_dtype)
    check(make(a, device).argmin(dim), np.argmin(f64(a), dim, keepdims=True), int_dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_arg_extrema_take_the_first_of_ties(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    tensor = make(np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, -1.0]]), device, dtype)
    int_dtype = device.backend.int_dtype
    check(tensor.argmax(1), [[1], [0]], int_dtype)
    check(tensor.argmin(1), [[3], [2]], int_dtype)
    check(tensor.argmax(0), [[1, 0, 0, 0]], int_dtype)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("which", ["max", "min"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_dim_with_indices(
    device: Device, rng: np.random.Generator, dtype: DType, which: str, dim: int
) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (4, 5), dtype)
    found, indices = getattr(make(a, device), f"{which}_dim_with_indices")(dim)
    arg = np.argmax if which == "max" else np.argmin
    expected_indices = arg(f64(a), dim, keepdims=True)
    check(found, np.take_along_axis(f64(a), expected_indices, dim), dtype)
    check(indices, expected_indices, device.backend.int_dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_arg_extrema_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    a = random_array(rng, (6, 4), DType.F32)
    tensor = laid_out(a, device, layout)
    int_dtype = device.backend.int_dtype
    for dim in (0, 1):
        check(tensor.argmax(dim), np.argmax(a, dim, keepdims=True), int_dtype)
        check(tensor.min_dim_with_indices(dim)[1], np.argmin(a, dim, keepdims=True), int_dtype)


# -- any, all --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_any_and_all(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = with_zeros(rng, (4, 6), dtype)
    tensor = make(a, device)
    check(tensor.any(), [a.any()], DType.BOOL)
    check(tensor.all(), [a.all()], DType.BOOL)
    for dim in (0, 1, -1):
        check(tensor.any_dim(dim), a.any(dim, keepdims=True), DType.BOOL)
        check(tensor.all_dim(dim), a.all(dim, keepdims=True), DType.BOOL)


def test_any_and_all_of_edge_values(device: Device) -> None:
    zeros, ones = Tensor.zeros([3], device), Tensor.ones([3], device)
    nan = Tensor.from_data([0.0, np.nan], device)
    empty = Tensor.zeros([0, 2], device)
    assert values(zeros.any()).tolist() == [False]
    assert values(ones.all()).tolist() == [True]
    assert values(nan.any()).tolist() == [True]
    assert values(Tensor.from_data([-0.0], device).any()).tolist() == [False]
    assert values(empty.any()).tolist() == [False]
    assert values(empty.all()).tolist() == [True]
    check(empty.all_dim(0), [[True, True]], DType.BOOL)


# -- running reductions ----------------------------------------------------------------------------------
RUNNING: dict[str, tuple[Callable[..., Any], float, float]] = {
    "cumsum": (np.cumsum, -2.0, 2.0),
    "cumprod": (np.cumprod, 0.5, 1.5),
    "cummin": (np.minimum.accumulate, -2.0, 2.0),
    "cummax": (np.maximum.accumulate, -2.0, 2.0),
}


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("op", list(RUNNING))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_running(device: Device, rng: np.random.Generator, dtype: DType, op: str, dim: int) -> None:
    require_dtype(device, dtype)
    reference, low, high = RUNNING[op]
    a = random_array(rng, SHAPE, dtype, low, high)
    expected = reference(f64(a), axis=dim)
    if op == "cumsum":
        tolerance = accumulated(dtype, np.cumsum(np.abs(f64(a)), axis=dim).max())
    else:
        tolerance = Tolerance.for_dtype(dtype).scaled(SHAPE[dim] if op == "cumprod" else 1)
    check(getattr(make(a, device), op)(dim), expected, dtype, tolerance)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("op", list(RUNNING))
def test_running_of_laid_out_inputs(device: Device, rng: np.random.Generator, op: str, layout: str) -> None:
    reference, low, high = RUNNING[op]
    a = random_array(rng, (5, 3), DType.F32, low, high)
    for dim in (0, 1):
        check(getattr(laid_out(a, device, layout), op)(dim), reference(f64(a), axis=dim), DType.F32, scale=4)


def test_running_over_empty_and_rank_1(device: Device) -> None:
    check(Tensor.zeros([0, 2], device).cumsum(0), np.zeros((0, 2)), device.backend.float_dtype)
    check(Tensor.from_data([3.0, 1.0, 2.0], device).cummax(0), [3.0, 3.0, 3.0], device.backend.float_dtype)
    check(Tensor.from_data([3.0, 1.0, 2.0], device).cummin(0), [3.0, 1.0, 1.0], device.backend.float_dtype)


# -- variance --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_variance_family(device: Device, rng: np.random.Generator, dtype: DType, dim: int) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (5, 6), dtype)
    x = f64(a)
    unbiased, biased, mean = (
        x.var(dim, ddof=1, keepdims=True),
        x.var(dim, keepdims=True),
        x.mean(dim, keepdims=True),
    )
    tolerance = accumulated(dtype, (x**2).mean(dim).max())
    tensor = make(a, device)
    check(tensor.var(dim), unbiased, dtype, tolerance)
    check(tensor.var_bias(dim), biased, dtype, tolerance)
    var, mean_of = tensor.var_mean(dim)
    check(var, unbiased, dtype, tolerance)
    check(mean_of, mean, dtype, accumulated(dtype, np.abs(x).mean(dim).max()))
    var_bias, mean_bias = tensor.var_mean_bias(dim)
    check(var_bias, biased, dtype, tolerance)
    check(mean_bias, mean, dtype, accumulated(dtype, np.abs(x).mean(dim).max()))


def test_variance_of_one_value(device: Device) -> None:
    tensor = Tensor.from_data([[2.0], [3.0]], device)
    assert np.isnan(values(tensor.var(1))).all()
    check(tensor.var_bias(1), [[0.0], [0.0]], device.backend.float_dtype)


def test_variance_of_a_constant_is_zero(device: Device) -> None:
    check(Tensor.full([3, 4], 2.5, device).var(1), np.zeros((3, 1)), device.backend.float_dtype)


def test_reductions_keep_the_inputs(device: Device, rng: np.random.Generator) -> None:
    a = random_array(rng, (3, 4), DType.F32)
    tensor = make(a, device)
    tensor.sum()
    tensor.cumsum(1)
    tensor.max_dim_with_indices(0)
    tensor.var(1)
    tensor.gather(1, index_tensor(np.zeros((3, 1), np.int64), device))
    check(tensor, f64(a), DType.F32)
