"""Reductions over several dims at once (sum_dims, mean_dims, prod_dims, max_dims, min_dims,
max_abs_dims, sum_dims_squeeze), logsumexp, std and the order statistics (median, kthvalue, quantile),
against NumPy in float64."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.testing import check, make, random_array, require_dtype

DTYPES = (DType.F64, DType.F32, DType.F16)
Array = np.ndarray[Any, Any]


def f64(a: Array) -> Array:
    return np.asarray(a, dtype=np.float64)


MULTI: dict[str, Any] = {
    "sum_dims": lambda a, d: a.sum(d, keepdims=True),
    "mean_dims": lambda a, d: a.mean(d, keepdims=True),
    "prod_dims": lambda a, d: a.prod(d, keepdims=True),
    "max_dims": lambda a, d: a.max(d, keepdims=True),
    "min_dims": lambda a, d: a.min(d, keepdims=True),
    "max_abs_dims": lambda a, d: np.abs(a).max(d, keepdims=True),
    "sum_dims_squeeze": lambda a, d: a.sum(d),
}


@pytest.mark.parametrize("dims", [[0, 2], [-1], [2, 0, 1], []], ids=str)
@pytest.mark.parametrize("op", list(MULTI))
@pytest.mark.parametrize("dtype", [DType.F64, DType.F32], ids=str)
def test_several_dims(
    device: Device, rng: np.random.Generator, dtype: DType, op: str, dims: list[int]
) -> None:
    require_dtype(device, dtype)
    low = 0.7 if op == "prod_dims" else -2.0
    a = random_array(rng, (2, 3, 4), dtype, low, 1.3 if op == "prod_dims" else 2.0)
    expected = MULTI[op](f64(a), tuple(dims))
    check(getattr(make(a, device), op)(dims), expected, dtype, scale=24)


def test_several_dims_on_int_tensors(device: Device, rng: np.random.Generator) -> None:
    a = rng.integers(-5, 5, (2, 3, 4))
    x = Tensor.from_data(a, device)
    check(x.sum_dims([0, 2]), a.sum((0, 2), keepdims=True), x.dtype)
    check(x.max_dims([1, 2]), a.max((1, 2), keepdims=True), x.dtype)


def test_several_dims_reject_repeats_and_bad_dims(device: Device) -> None:
    x = Tensor.ones([2, 3], device)
    with pytest.raises(ValueError, match=r"sum_dims: repeated dims in \[0, -2\]"):
        x.sum_dims([0, -2])
    with pytest.raises(IndexError, match="mean_dims"):
        x.mean_dims([2])
    with pytest.raises(TypeError, match="max_dims: expected a Float or Int tensor"):
        Tensor.from_data([[True]], device).max_dims([0])


def logsumexp(a: Array, dim: int) -> Array:
    peak = np.max(a, axis=dim, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        return np.asarray(np.log(np.exp(a - peak).sum(dim, keepdims=True)) + peak, dtype=np.float64)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_logsumexp(device: Device, rng: np.random.Generator, dtype: DType, dim: int) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (3, 5), dtype, -3.0, 3.0)
    check(make(a, device).logsumexp(dim), logsumexp(f64(a), dim), dtype, scale=4)


def test_logsumexp_does_not_overflow(device: Device) -> None:
    a = np.array([[1000.0, 1000.0], [-math.inf, -math.inf], [math.inf, 1.0], [-1000.0, -1000.0]], np.float32)
    expected = np.array([[1000.0 + math.log(2.0)], [-math.inf], [math.inf], [-1000.0 + math.log(2.0)]])
    check(make(a, device).logsumexp(1), expected, DType.F32)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_std(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (3, 6), dtype)
    x = make(a, device)
    check(x.std(1), np.std(f64(a), 1, ddof=1, keepdims=True), dtype, scale=8)
    check(x.std_bias(0), np.std(f64(a), 0, keepdims=True), dtype, scale=8)


@pytest.mark.parametrize("size", [5, 6])
@pytest.mark.parametrize("dtype", [DType.F64, DType.F32], ids=str)
def test_median_is_the_lower_middle_value(
    device: Device, rng: np.random.Generator, dtype: DType, size: int
) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (3, size), dtype)
    values, indices = make(a, device).median_with_indices(1)
    lower = np.sort(f64(a), 1)[:, (size - 1) // 2 : (size - 1) // 2 + 1]
    check(values, lower, dtype)
    check(make(a, device).median(0), np.sort(f64(a), 0)[1:2], dtype)
    np.testing.assert_array_equal(np.take_along_axis(a, indices.to_numpy(), 1), lower.astype(a.dtype))


def test_median_propagates_nan(device: Device) -> None:
    a = np.array([[1.0, math.nan, 2.0], [3.0, 1.0, 2.0]], np.float32)
    values, indices = make(a, device).median_with_indices(1)
    result = values.to_numpy()
    assert math.isnan(result[0, 0])
    assert result[1, 0] == 2.0
    assert indices.to_numpy().tolist() == [[1], [2]]


def test_median_and_kthvalue_of_int_tensors(device: Device, rng: np.random.Generator) -> None:
    a = rng.permutation(12).reshape(3, 4)
    x = Tensor.from_data(a, device)
    check(x.median(1), np.sort(a, 1)[:, 1:2], x.dtype)
    check(x.kthvalue(3, 1), np.sort(a, 1)[:, 2:3], x.dtype)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_kthvalue(device: Device, rng: np.random.Generator, k: int) -> None:
    a = random_array(rng, (4, 5), DType.F32)
    values, indices = make(a, device).kthvalue_with_indices(k, -1)
    expected = np.sort(f64(a), 1)[:, k - 1 : k]
    check(values, expected, DType.F32)
    np.testing.assert_array_equal(np.take_along_axis(a, indices.to_numpy(), 1), expected.astype(np.float32))
    check(make(a, device).kthvalue(2, 0), np.sort(f64(a), 0)[1:2], DType.F32)
    with pytest.raises(ValueError, match=r"kthvalue: k=6 is outside \[1, 5\]"):
        make(a, device).kthvalue(6)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
@pytest.mark.parametrize("dtype", [DType.F64, DType.F32], ids=str)
def test_quantile(device: Device, rng: np.random.Generator, dtype: DType, method: Any) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (3, 7), dtype)
    levels = [0.0, 0.1, 0.5, 0.75, 1.0]
    x = make(a, device)
    expected = np.moveaxis(np.quantile(f64(a), levels, axis=1, method=method), 0, 1)
    check(x.quantile(levels, 1, method), expected, dtype, scale=2)
    check(
        x.quantile(0.3, 0, method),
        np.quantile(f64(a), 0.3, axis=0, method=method, keepdims=True),
        dtype,
        scale=2,
    )


def test_quantile_checks_and_nan(device: Device) -> None:
    x = Tensor.from_data([[1.0, math.nan, 3.0], [1.0, 2.0, 4.0]], device)
    result = x.quantile(0.5, 1).to_numpy()
    assert math.isnan(result[0, 0])
    assert result[1, 0] == 2.0
    with pytest.raises(ValueError, match=r"quantile: q must be in \[0, 1\]"):
        x.quantile(1.5, 1)
    with pytest.raises(ValueError, match="quantile: interpolation must be"):
        x.quantile(0.5, 1, "cubic")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="quantile: expected a Float tensor"):
        Tensor.from_data([1, 2], device).quantile(0.5, 0)
