"""Element-wise math composed of other ops: max_pair/min_pair, the ternary where, log2, log10, exp2,
expm1, deg2rad/rad2deg, lerp, fmod and nan_to_num, against NumPy in float64."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, Tolerance
from burn_backend.testing import check, make, random_array, require_dtype

DTYPES = (DType.F64, DType.F32, DType.F16)
Array = np.ndarray[Any, Any]


def f64(a: Array) -> Array:
    return np.asarray(a, dtype=np.float64)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", ["max_pair", "min_pair"])
def test_pairwise_extrema_broadcast(device: Device, rng: np.random.Generator, dtype: DType, op: str) -> None:
    require_dtype(device, dtype)
    a, b = random_array(rng, (3, 1, 4), dtype), random_array(rng, (5, 1), dtype)
    reference = np.maximum if op == "max_pair" else np.minimum
    check(getattr(make(a, device), op)(make(b, device)), reference(f64(a), f64(b)), dtype)
    check(getattr(make(a, device), op)(0.5), reference(f64(a), 0.5), dtype)


@pytest.mark.parametrize("op", ["max_pair", "min_pair"])
def test_pairwise_extrema_propagate_nan(device: Device, op: str) -> None:
    a = make(np.array([1.0, math.nan, 3.0], np.float32), device)
    b = make(np.array([math.nan, 2.0, 1.0], np.float32), device)
    reference = np.maximum if op == "max_pair" else np.minimum
    expected = reference(np.array([1.0, math.nan, 3.0]), np.array([math.nan, 2.0, 1.0]))
    np.testing.assert_array_equal(getattr(a, op)(b).to_numpy(), expected.astype(np.float32))


def test_pairwise_extrema_check_operands(device: Device) -> None:
    x = Tensor.from_data([1.0, 2.0], device, DType.F32)
    with pytest.raises(TypeError, match="max_pair: dtypes differ"):
        x.max_pair(Tensor.from_data([1.0, 2.0], device, DType.F64))
    with pytest.raises(ValueError, match="min_pair"):
        x.min_pair(Tensor.from_data([1.0, 2.0, 3.0], device, DType.F32))
    with pytest.raises(TypeError, match="max_pair: expected a Float or Int tensor"):
        Tensor.from_data([True], device).max_pair(Tensor.from_data([False], device))


def test_where_class_and_instance_forms(device: Device, rng: np.random.Generator) -> None:
    a, b = random_array(rng, (2, 3), DType.F32), random_array(rng, (3,), DType.F32)
    cond = rng.random((2, 1)) < 0.5
    x, y, c = make(a, device), make(b, device), make(cond, device)
    check(Tensor.where(c, x, y), np.where(cond, f64(a), f64(b)), DType.F32)
    check(x.where(c, y), np.where(cond, f64(a), f64(b)), DType.F32)
    check(Tensor.where(c, x, -1.0), np.where(cond, f64(a), -1.0), DType.F32)
    check(Tensor.where(c, 2.0, y), np.where(cond, 2.0, f64(b)), DType.F32)
    ints = Tensor.where(c, 1, 0)
    check(ints, np.where(cond, 1, 0).astype(np.int64), device.backend.int_dtype)


def test_where_checks(device: Device) -> None:
    x = Tensor.from_data([1.0, 2.0], device)
    with pytest.raises(TypeError, match="where: the condition must be a Bool tensor"):
        Tensor.where(x, x, x)
    with pytest.raises(ValueError, match="where"):
        Tensor.where(x > 1.0, x, Tensor.from_data([1.0, 2.0, 3.0], device))
    with pytest.raises(TypeError, match="where: dtypes differ"):
        Tensor.where(x > 1.0, x, Tensor.from_data([1, 2], device))


# name -> (reference, low, high, tolerance scale)
UNARY: dict[str, tuple[Callable[[Array], Array], float, float, float]] = {
    "log2": (np.log2, 0.1, 4.0, 2.0),
    "log10": (np.log10, 0.1, 4.0, 2.0),
    "exp2": (np.exp2, -3.0, 3.0, 2.0),
    "expm1": (np.expm1, -2.0, 2.0, 2.0),
    "deg2rad": (np.deg2rad, -360.0, 360.0, 1.0),
    "rad2deg": (np.rad2deg, -3.0, 3.0, 1.0),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", list(UNARY))
def test_unary(device: Device, rng: np.random.Generator, dtype: DType, op: str) -> None:
    require_dtype(device, dtype)
    reference, low, high, scale = UNARY[op]
    a = random_array(rng, (4, 5), dtype, low, high)
    check(getattr(make(a, device), op)(), reference(f64(a)), dtype, scale=scale)


@pytest.mark.parametrize("dtype", [DType.F64, DType.F32], ids=str)
def test_expm1_is_accurate_near_zero(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = np.array([1e-10, -3e-8, 1e-5, 0.0, -0.4, 0.49, 0.51, 30.0], dtype.numpy)
    tolerance = Tolerance(Tolerance.for_dtype(dtype).relative * 4, 0.0)
    check(make(a, device).expm1(), np.expm1(f64(a)), dtype, tolerance)


@pytest.mark.parametrize("op", ["log2", "log10", "exp2", "expm1", "lerp", "nan_to_num"])
def test_float_only(device: Device, op: str) -> None:
    x = Tensor.from_data([1, 2], device)
    args: tuple[Any, ...] = (1, 0.5) if op == "lerp" else ()
    with pytest.raises(TypeError, match=f"{op}: expected a Float tensor"):
        getattr(x, op)(*args)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lerp(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a, b, w = (random_array(rng, shape, dtype) for shape in [(2, 3), (3,), (2, 1)])
    x = make(a, device)
    check(x.lerp(make(b, device), make(w, device)), f64(a) + f64(w) * (f64(b) - f64(a)), dtype, scale=4)
    check(x.lerp(1.5, 0.25), f64(a) + 0.25 * (1.5 - f64(a)), dtype, scale=4)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_fmod_takes_the_sign_of_the_dividend(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (3, 4), dtype, -10.0, 10.0)
    b = (random_array(rng, (4,), dtype, 0.5, 3.0) * np.array([1, -1, 1, -1])).astype(dtype.numpy)
    x = make(a, device)
    scale = 10.0 if dtype is DType.F16 else 4.0  # the magnitude of a is up to 10 times that of b
    check(x.fmod(make(b, device)), np.fmod(f64(a), f64(b)), dtype, scale=scale)
    check(x.fmod(-2.5), np.fmod(f64(a), -2.5), dtype, scale=scale)
    check(x.fmod_scalar(2.5), np.fmod(f64(a), 2.5), dtype, scale=scale)


def test_fmod_of_special_values(device: Device) -> None:
    x = make(np.array([5.5, -5.5, 0.0, 7.0], np.float64), device)
    result = x.fmod(make(np.array([2.0, 2.0, 3.0, 0.0], np.float64), device)).to_numpy()
    np.testing.assert_array_equal(result[:3], [1.5, -1.5, 0.0])
    assert math.isnan(result[3])
    with pytest.raises(TypeError, match="fmod_scalar: expected a number"):
        x.fmod_scalar(x)  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", [DType.F64, DType.F32, DType.F16, DType.BF16], ids=str)
def test_nan_to_num(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = np.array([math.nan, math.inf, -math.inf, 1.5, -2.0]).astype(dtype.numpy)
    x = make(a, device)
    info = np.finfo(np.float32) if dtype is DType.BF16 else np.finfo(dtype.numpy)
    result = x.nan_to_num().to_numpy().astype(np.float64)
    np.testing.assert_array_equal(result[[0, 3, 4]], [0.0, 1.5, -2.0])
    if dtype is not DType.BF16:
        np.testing.assert_array_equal(result[1:3], [float(info.max), float(info.min)])
    assert np.isfinite(result).all()
    check(x.nan_to_num(1.0, 9.0, -9.0), np.array([1.0, 9.0, -9.0, 1.5, -2.0]), dtype)
