"""Element-wise Float math: exp, log, the trigonometric and hyperbolic functions and their inverses,
erf and its inverse, rounding, recip (every unary float op of the element-wise op table, against its
reference); special values; is_nan, is_inf, is_finite, is_close."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.kit import ELEMENTWISE_OPS, ElementwiseOp
from burn_backend.testing import FLOAT_DTYPES, check, make, random_array, require_dtype
from burn_backend.testing.core._common import LAYOUTS, f64, laid_out, values

_erf = np.vectorize(math.erf, otypes=[np.float64])

# the element-wise op table's float ops from a tensor to a tensor of its dtype, by Tensor method name:
# each with its float64 reference, the domain where it is well conditioned and its tolerance scale
UNARY: dict[str, ElementwiseOp] = {
    name.removeprefix("float_"): op
    for name, op in ELEMENTWISE_OPS.items()
    if name.startswith("float_") and op.arity == 1 and op.scalars == 0 and not op.bool_result
}


@pytest.mark.parametrize("shape", [(7,), (2, 3, 4), (0, 5), ()], ids=str)
@pytest.mark.parametrize("op", list(UNARY))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_unary(
    device: Device, rng: np.random.Generator, dtype: DType, op: str, shape: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    entry = UNARY[op]
    a = random_array(rng, shape, dtype, *entry.domain[0])
    check(getattr(make(a, device), op)(), entry.reference(f64(a)), dtype, scale=entry.tolerance_scale)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("op", list(UNARY))
def test_unary_of_laid_out_inputs(device: Device, rng: np.random.Generator, op: str, layout: str) -> None:
    entry = UNARY[op]
    a = random_array(rng, (4, 3), DType.F32, *entry.domain[0])
    result = getattr(laid_out(a, device, layout), op)()
    check(result, entry.reference(f64(a)), DType.F32, scale=entry.tolerance_scale)


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_leaves_its_input_alone(device: Device, rng: np.random.Generator, op: str) -> None:
    a = random_array(rng, (5,), DType.F32, *UNARY[op].domain[0])
    tensor = make(a, device)
    getattr(tensor, op)()
    check(tensor, f64(a), DType.F32)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_round_halves_to_even(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    halves = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.25, -0.75, 1.75]
    result = make(np.array(halves), device, dtype).round()
    check(result, [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 4.0, 0.0, -1.0, 2.0], dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_rounding_of_negative_values(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    tensor = make(np.array([-1.5, -0.25, 0.25, 1.5, -3.0]), device, dtype)
    check(tensor.floor(), [-2.0, -1.0, 0.0, 1.0, -3.0], dtype)
    check(tensor.ceil(), [-1.0, -0.0, 1.0, 2.0, -3.0], dtype)
    check(tensor.trunc(), [-1.0, -0.0, 0.0, 1.0, -3.0], dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_erf_in_its_tails(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = np.array([-6.0, -4.0, -2.6, -2.4, 2.4, 2.6, 4.0, 6.0, 1e-3, -1e-3])
    check(make(a, device, dtype).erf(), _erf(f64(a.astype(dtype.numpy))), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_exp_and_log_are_inverses(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (20,), dtype, -2.0, 2.0)
    check(make(a, device).exp().log(), f64(a), dtype, scale=4)


def test_log1p_is_accurate_near_zero(device: Device) -> None:
    a = np.array([1e-10, -1e-12, 3e-8], dtype=np.float64)
    check(make(a, device).log1p(), np.log1p(a), DType.F64)
    check(make(a, device, DType.F32).log1p(), np.log1p(f64(a.astype(np.float32))), DType.F32)


# -- special values -------------------------------------------------------------------------------------
SPECIALS: dict[str, tuple[list[float], list[float]]] = {
    "exp": ([-np.inf, np.inf, np.nan, 0.0], [0.0, np.inf, np.nan, 1.0]),
    "log": ([0.0, -1.0, np.inf, 1.0], [-np.inf, np.nan, np.inf, 0.0]),
    "log1p": ([-1.0, -2.0, np.inf, 0.0], [-np.inf, np.nan, np.inf, 0.0]),
    "sqrt": ([-1.0, np.inf, 0.0, np.nan], [np.nan, np.inf, 0.0, np.nan]),
    "tanh": ([-np.inf, np.inf, np.nan, 0.0], [-1.0, 1.0, np.nan, 0.0]),
    "acos": ([2.0, 1.0, -1.0, np.nan], [np.nan, 0.0, np.pi, np.nan]),
    "atanh": ([1.0, -1.0, 2.0, 0.0], [np.inf, -np.inf, np.nan, 0.0]),
    "erf": ([-np.inf, np.inf, np.nan, 0.0], [-1.0, 1.0, np.nan, 0.0]),
    "erfinv": ([-1.0, 1.0, 1.5, np.nan, 0.0, -2.0], [-np.inf, np.inf, np.nan, np.nan, 0.0, np.nan]),
    "recip": ([0.0, -0.0, np.inf, -np.inf], [np.inf, -np.inf, 0.0, -0.0]),
    "floor": ([np.inf, -np.inf, np.nan, -0.5], [np.inf, -np.inf, np.nan, -1.0]),
    "abs": ([-np.inf, np.nan, -0.0, -2.0], [np.inf, np.nan, 0.0, 2.0]),
}


def same_values(actual: np.ndarray, expected: np.ndarray) -> bool:
    """Equal where finite (within the dtype's rounding), and NaN and infinities exactly where expected."""
    actual, expected = f64(actual), f64(expected)
    nan = np.isnan(expected)
    if not np.array_equal(np.isnan(actual), nan):
        return False
    if not np.array_equal(actual[np.isinf(expected)], expected[np.isinf(expected)]):
        return False
    finite = np.isfinite(expected)
    return bool(
        np.all(np.isfinite(actual[finite])) and np.allclose(actual[finite], expected[finite], atol=1e-2)
    )


@pytest.mark.parametrize("op", list(SPECIALS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_special_values(device: Device, dtype: DType, op: str) -> None:
    require_dtype(device, dtype)
    inputs, expected = SPECIALS[op]
    result = getattr(make(np.array(inputs), device, dtype), op)()
    assert result.dtype is dtype
    assert same_values(values(result), np.array(expected)), f"{op}({inputs}) = {values(result)}"


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_exp_overflows_to_infinity(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    result = f64(values(make(np.array([1000.0, -1000.0]), device, dtype).exp()))
    assert result.tolist() == [np.inf, 0.0]


INF, NAN = np.inf, np.nan
# op -> (inputs, expected): each input and result is an IEEE special or an overflow
SILENT: dict[str, tuple[Callable[[Tensor], Tensor], list[float], list[Any]]] = {
    "sin": (Tensor.sin, [INF, -INF, NAN, 0.0], [NAN, NAN, NAN, 0.0]),
    "cos": (Tensor.cos, [INF, -INF, NAN, 0.0], [NAN, NAN, NAN, 1.0]),
    "tan": (Tensor.tan, [INF, -INF, NAN, 0.0], [NAN, NAN, NAN, 0.0]),
    "add": (lambda t: t + t, [INF, -INF, NAN, 1.0], [INF, -INF, NAN, 2.0]),
    "sub": (lambda t: t - t, [INF, -INF, NAN, 1.0], [NAN, NAN, NAN, 0.0]),
    "mul-overflow": (lambda t: t * t, [1e300, -1e300, 2.0, 0.5], [INF, INF, 4.0, 0.25]),
    "mul_scalar-overflow": (lambda t: t * 1e300, [1e300, -1e300, 2.0, 0.0], [INF, -INF, 2e300, 0.0]),
    "add_scalar-overflow": (lambda t: t + 1.7e308, [1.7e308, -1.0, 0.0, NAN], [INF, 1.7e308, 1.7e308, NAN]),
    "sum": (Tensor.sum, [INF, -INF, 1.0, 2.0], [NAN]),
    "cumsum": (lambda t: t.cumsum(0), [1.0, INF, -INF, 2.0], [1.0, INF, NAN, NAN]),
    "hypot-overflow": (
        lambda t: t.hypot(t),
        [1e308, 3.0, 0.0, INF],
        [1e308 * np.sqrt(2.0), 3.0 * np.sqrt(2.0), 0.0, INF],
    ),
    "matmul": (lambda t: t.reshape([1, 4]) @ t.reshape([4, 1]), [INF, 0.0, 1.0, 1.0], [[INF]]),
    "cast-overflow": (lambda t: t.float(DType.F32), [1e300, -1e300, NAN, 0.5], [INF, -INF, NAN, 0.5]),
}


@pytest.mark.parametrize("op", list(SILENT))
def test_ieee_specials_propagate_silently(device: Device, op: str) -> None:
    method, inputs, expected = SILENT[op]
    result = method(make(np.array(inputs), device, DType.F64))
    assert same_values(values(result), np.array(expected)), f"{op}({inputs}) = {values(result)}"


# -- is_nan, is_inf, is_finite, is_close --------------------------------------------------------------------
SPECIAL_INPUT = [1.0, np.nan, np.inf, -np.inf, 0.0, -2.5, np.nan]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_nan_and_inf_predicates(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = np.array(SPECIAL_INPUT)
    tensor = make(a, device, dtype)
    check(tensor.is_nan(), np.isnan(a), DType.BOOL)
    check(tensor.is_inf(), np.isinf(a), DType.BOOL)
    check(tensor.is_finite(), np.isfinite(a), DType.BOOL)
    assert tensor.contains_nan() is True
    assert make(np.array([1.0, np.inf]), device, dtype).contains_nan() is False


@pytest.mark.parametrize("shape", [(2, 0), (), (3, 1, 2)], ids=str)
def test_predicates_keep_the_shape(device: Device, rng: np.random.Generator, shape: tuple[int, ...]) -> None:
    a = random_array(rng, shape, DType.F32)
    tensor = make(a, device)
    check(tensor.is_nan(), np.zeros(shape, dtype=bool), DType.BOOL)
    check(tensor.is_inf(), np.zeros(shape, dtype=bool), DType.BOOL)
    check(tensor.is_finite(), np.ones(shape, dtype=bool), DType.BOOL)


@pytest.mark.parametrize(("rtol", "atol"), [(1e-5, 1e-8), (1e-2, 0.0), (0.0, 0.1)])
@pytest.mark.parametrize("dtype", [DType.F64, DType.F32])
def test_is_close(device: Device, rng: np.random.Generator, dtype: DType, rtol: float, atol: float) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (40,), dtype, -3.0, 3.0)
    noise = rng.choice([0.0, 1e-9, 1e-4, 1e-2, 0.05, 0.5], 40)
    b = (f64(a) + noise).astype(dtype.numpy)
    expected = np.abs(f64(a) - f64(b)) <= atol + rtol * np.abs(f64(b))
    result = make(a, device).is_close(make(b, device), rtol, atol)
    check(result, expected, DType.BOOL)
    assert make(a, device).all_close(make(b, device), rtol, atol) is bool(expected.all())


def test_all_close_of_equal_tensors(device: Device, rng: np.random.Generator) -> None:
    a = make(random_array(rng, (3, 3), DType.F32), device)
    assert a.all_close(a) is True
    assert a.all_close(a + 1.0) is False
