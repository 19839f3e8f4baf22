"""Float arithmetic: + - * / % //, their scalar forms, neg, abs, sign, square, recip, clamp, the powers,
matmul, cross, atan2 and hypot, against NumPy in float64."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.kit import ELEMENTWISE_OPS
from burn_backend.testing import FLOAT_DTYPES, check, make, random_array, require_dtype
from burn_backend.testing.core._common import (
    LAYOUTS,
    accumulated,
    f64,
    index_tensor,
    laid_out,
    nonzero_floats,
    powers_of_two,
    values,
)

BROADCASTS = [
    ((2, 3), (2, 3)),
    ((3, 1), (1, 4)),
    ((2, 3, 4), (1, 3, 1)),
    ((1,), (5,)),
    ((0, 3), (1, 3)),
    ((), ()),
]
BROADCAST_IDS = ["same", "outer", "rank3", "rank1", "empty", "rank0"]

SYMBOLS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv}
# op -> (Tensor method, Python operator, float64 reference: the element-wise op table's)
BINARY: dict[str, tuple[Callable[[Tensor, Any], Tensor], Callable[[Any, Any], Any], Callable[..., Any]]] = {
    name: (getattr(Tensor, name), symbol, ELEMENTWISE_OPS[f"float_{name}"].reference)
    for name, symbol in SYMBOLS.items()
}


@pytest.mark.parametrize(("lhs_shape", "rhs_shape"), BROADCASTS, ids=BROADCAST_IDS)
@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_binary(
    device: Device,
    rng: np.random.Generator,
    dtype: DType,
    op: str,
    lhs_shape: tuple[int, ...],
    rhs_shape: tuple[int, ...],
) -> None:
    require_dtype(device, dtype)
    method, symbol, reference = BINARY[op]
    a = random_array(rng, lhs_shape, dtype)
    b = nonzero_floats(rng, rhs_shape, dtype)
    expected = reference(f64(a), f64(b))
    check(method(make(a, device), make(b, device)), expected, dtype)
    check(symbol(make(a, device), make(b, device)), expected, dtype)
    if op != "div":
        check(method(make(b, device), make(a, device)), reference(f64(b), f64(a)), dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_of_laid_out_inputs(device: Device, rng: np.random.Generator, op: str, layout: str) -> None:
    method, _, reference = BINARY[op]
    a, b = random_array(rng, (4, 3), DType.F32), nonzero_floats(rng, (4, 3), DType.F32)
    result = method(laid_out(a, device, layout), laid_out(b, device, "swapped"))
    check(result, reference(f64(a), f64(b)), DType.F32)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_binary_leaves_its_inputs_alone(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a, b = random_array(rng, (3, 4), dtype), random_array(rng, (3, 4), dtype)
    ta, tb = make(a, device), make(b, device)
    for result in (ta + tb, ta * 3.0, -ta, ta.clamp(-1, 1), ta.abs()):
        assert result.dims() == [3, 4]
    check(ta, f64(a), dtype)
    check(tb, f64(b), dtype)


SCALAR_OPS: dict[str, tuple[Callable[[Tensor, float], Tensor], Callable[[np.ndarray, float], Any]]] = {
    **{
        f"{name}_scalar": (
            getattr(Tensor, f"{name}_scalar"),
            ELEMENTWISE_OPS[f"float_{name}_scalar"].reference,
        )
        for name in SYMBOLS
    },
    "x+s": (lambda t, s: t + s, lambda a, s: a + s),
    "s+x": (lambda t, s: s + t, lambda a, s: s + a),
    "x-s": (lambda t, s: t - s, lambda a, s: a - s),
    "s-x": (lambda t, s: s - t, lambda a, s: s - a),
    "x*s": (lambda t, s: t * s, lambda a, s: a * s),
    "s*x": (lambda t, s: s * t, lambda a, s: s * a),
    "x/s": (lambda t, s: t / s, lambda a, s: a / s),
    "add(s)": (lambda t, s: t.add(s), lambda a, s: a + s),
    "div(s)": (lambda t, s: t.div(s), lambda a, s: a / s),
}


@pytest.mark.parametrize("op", list(SCALAR_OPS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_scalar(device: Device, rng: np.random.Generator, dtype: DType, op: str) -> None:
    require_dtype(device, dtype)
    method, reference = SCALAR_OPS[op]
    a = random_array(rng, (3, 4), dtype)
    for scalar in (1.25, -0.5, 3):
        check(method(make(a, device), scalar), reference(f64(a), scalar), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_scalar_divided_by_tensor(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = nonzero_floats(rng, (3, 4), dtype)
    check(1.5 / make(a, device), 1.5 / f64(a), dtype, scale=2)


def test_numpy_scalars_are_numbers(device: Device) -> None:
    tensor = Tensor.from_data([1.0, -2.0], device, DType.F32)
    check(tensor + np.float64(0.5), [1.5, -1.5], DType.F32)
    check(tensor * np.int32(3), [3.0, -6.0], DType.F32)


@pytest.mark.parametrize("shape", [(3, 4), (2, 0), ()], ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_remainder_takes_the_sign_of_the_divisor(
    device: Device, rng: np.random.Generator, dtype: DType, shape: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, shape, dtype, -6, 6)
    b = powers_of_two(rng, shape, dtype)
    expected = np.mod(f64(a), f64(b))
    check(make(a, device).remainder(make(b, device)), expected, dtype)
    check(make(a, device) % make(b, device), expected, dtype)


@pytest.mark.parametrize("divisor", [2.0, -2.0, 0.5, -4.0])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_remainder_by_a_scalar(
    device: Device, rng: np.random.Generator, dtype: DType, divisor: float
) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (5, 3), dtype, -6, 6)
    expected = np.mod(f64(a), divisor)
    check(make(a, device).remainder_scalar(divisor), expected, dtype)
    check(make(a, device) % divisor, expected, dtype)
    check(make(a, device).remainder(divisor), expected, dtype)


# NumPy's (and Python's) remainder where it is not a plain fmod: a zero result takes the divisor's sign,
# a finite dividend over an infinite divisor of the other sign is that infinity, NaN for an infinite
# dividend, a zero divisor or a NaN operand (the cases of ONNX's Mod node test with fmod=0)
REMAINDER_EDGES = (
    [0.0, -0.0, 0.0, -0.0, -3.0, 3.0, -1.0, 1.0, np.inf, -np.inf, 1.0, 1.0, np.nan, 1.0],
    [-2.0, 2.0, 2.0, -2.0, np.inf, np.inf, -np.inf, -np.inf, 2.0, 2.0, 0.0, -0.0, 2.0, np.nan],
)


def _same_values_and_signs(result: Tensor, expected: np.ndarray[Any, Any], dtype: DType) -> None:
    """``result`` equals ``expected`` exactly, NaN where it is NaN, zeros of the same sign."""
    assert result.dtype == dtype, f"dtype {result.dtype}, expected {dtype}"
    got = values(result).astype(np.float64)
    np.testing.assert_array_equal(got, expected)
    zeros = expected == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(expected[zeros]), "signs of zeros")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_remainder_edge_cases(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    a, b = (np.asarray(v, np.float64) for v in REMAINDER_EDGES)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.mod(a, b)
    lhs, rhs = make(a, device, dtype), make(b, device, dtype)
    _same_values_and_signs(lhs % rhs, expected, dtype)
    for _ in range(3):  # the chain run often enough to be fused where the backend fuses
        _same_values_and_signs((lhs % rhs) * 1.0, expected, dtype)
    for divisor in (np.inf, -np.inf, -2.0, 0.0):
        with np.errstate(invalid="ignore", divide="ignore"):
            by_scalar = np.mod(a, divisor)
        _same_values_and_signs(lhs.remainder_scalar(divisor), by_scalar, dtype)


def test_remainder_examples(device: Device) -> None:
    a = Tensor.from_data([5.5, -5.5, 5.5, -5.5, 4.0], device, DType.F32)
    b = Tensor.from_data([2.0, 2.0, -2.0, -2.0, 2.0], device, DType.F32)
    check(a % b, [1.5, 0.5, -0.5, -1.5, 0.0], DType.F32)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_floor_division(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (4, 5), dtype, -6, 6)
    b = powers_of_two(rng, (4, 5), dtype)
    check(make(a, device) // make(b, device), np.floor(f64(a) / f64(b)), dtype)
    check(make(a, device) // 2.0, np.floor(f64(a) / 2.0), dtype)
    check(make(a, device) // -0.5, np.floor(f64(a) / -0.5), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_division_by_zero_gives_infinities_and_nan(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    result = values(Tensor.from_data([1.0, -1.0, 0.0], device, dtype) / 0.0).astype(np.float64)
    assert result[0] == np.inf
    assert result[1] == -np.inf
    assert np.isnan(result[2])


# -- unary ----------------------------------------------------------------------------------------------
UNARY: dict[str, tuple[Callable[[Tensor], Tensor], Callable[[np.ndarray], Any]]] = {
    "neg": (Tensor.neg, ELEMENTWISE_OPS["float_neg"].reference),
    "-x": (operator.neg, ELEMENTWISE_OPS["float_neg"].reference),
    "abs": (Tensor.abs, ELEMENTWISE_OPS["float_abs"].reference),
    "abs()": (abs, ELEMENTWISE_OPS["float_abs"].reference),
    "sign": (Tensor.sign, ELEMENTWISE_OPS["float_sign"].reference),
    "square": (Tensor.square, np.square),
}


@pytest.mark.parametrize("shape", [(7,), (2, 3, 4), (0, 2), ()], ids=str)
@pytest.mark.parametrize("op", list(UNARY))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_unary(
    device: Device, rng: np.random.Generator, dtype: DType, op: str, shape: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    method, reference = UNARY[op]
    a = random_array(rng, shape, dtype)
    if a.size:
        a.flat[0] = 0.0
    check(method(make(a, device)), reference(f64(a)), dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("op", ["neg", "abs", "sign", "square"])
def test_unary_of_laid_out_inputs(device: Device, rng: np.random.Generator, op: str, layout: str) -> None:
    method, reference = UNARY[op]
    a = random_array(rng, (4, 3), DType.F32)
    check(method(laid_out(a, device, layout)), reference(f64(a)), DType.F32)


def test_sign_of_signed_zero_and_specials(device: Device) -> None:
    result = values(Tensor.from_data([-0.0, 0.0, -np.inf, np.inf, -3.0], device, DType.F32).sign())
    assert result.tolist() == [0.0, 0.0, -1.0, 1.0, -1.0]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_recip_and_rsqrt(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = nonzero_floats(rng, (3, 5), dtype)
    positive = random_array(rng, (3, 5), dtype, 0.25, 4.0)
    check(make(a, device).recip(), 1.0 / f64(a), dtype)
    check(make(positive, device).rsqrt(), 1.0 / np.sqrt(f64(positive)), dtype, scale=2)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_clamp(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (4, 5), dtype)
    check(make(a, device).clamp(-0.5, 0.75), np.clip(f64(a), -0.5, 0.75), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_clamp_min_and_max(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, (4, 5), dtype)
    check(make(a, device).clamp_min(-0.5), np.maximum(f64(a), -0.5), dtype)
    check(make(a, device).clamp_max(0.75), np.minimum(f64(a), 0.75), dtype)
    check(make(a, device).clamp_min(1), np.maximum(f64(a), 1.0), dtype)


def test_clamp_with_equal_bounds(device: Device, rng: np.random.Generator) -> None:
    a = random_array(rng, (6,), DType.F32)
    check(make(a, device).clamp(0.5, 0.5), np.full(6, 0.5), DType.F32)


# -- powers ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_powf_of_tensors(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    base = random_array(rng, (3, 4), dtype, 0.5, 2.0)
    exponent = random_array(rng, (3, 4), dtype, -2.0, 2.0)
    expected = np.power(f64(base), f64(exponent))
    check(make(base, device).powf(make(exponent, device)), expected, dtype, scale=2)
    check(make(base, device) ** make(exponent, device), expected, dtype, scale=2)


def test_powf_broadcasts(device: Device, rng: np.random.Generator) -> None:
    base = random_array(rng, (3, 1), DType.F32, 0.5, 2.0)
    exponent = random_array(rng, (1, 4), DType.F32, -2.0, 2.0)
    check(make(base, device).powf(make(exponent, device)), np.power(f64(base), f64(exponent)), DType.F32)


@pytest.mark.parametrize("exponent", [0.0, 0.5, 1.5, -1.0, 2.0, 3.0, -2.5])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_powf_scalar(device: Device, rng: np.random.Generator, dtype: DType, exponent: float) -> None:
    require_dtype(device, dtype)
    whole = float(exponent).is_integer()
    base = nonzero_floats(rng, (3, 4), dtype) if whole else random_array(rng, (3, 4), dtype, 0.5, 2.0)
    expected = np.power(f64(base), exponent)
    check(make(base, device).powf(exponent), expected, dtype, scale=2)
    check(make(base, device).powf_scalar(exponent), expected, dtype, scale=2)
    check(make(base, device) ** exponent, expected, dtype, scale=2)


@pytest.mark.parametrize("exponent", [0, 1, 2, 3, -1, -2])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_powi_scalar(device: Device, rng: np.random.Generator, dtype: DType, exponent: int) -> None:
    require_dtype(device, dtype)
    base = nonzero_floats(rng, (3, 4), dtype)
    expected = np.power(f64(base), float(exponent))
    check(make(base, device).powi(exponent), expected, dtype, scale=2)
    check(make(base, device).powi_scalar(exponent), expected, dtype, scale=2)
    check(make(base, device) ** exponent, expected, dtype, scale=2)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_powi_with_int_exponents(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    base = nonzero_floats(rng, (3, 4), dtype)
    exponent = rng.integers(-2, 4, (3, 4))
    result = make(base, device).powi(index_tensor(exponent, device))
    check(result, np.power(f64(base), exponent.astype(np.float64)), dtype, scale=2)


def test_powi_broadcasts_int_exponents(device: Device, rng: np.random.Generator) -> None:
    base = nonzero_floats(rng, (3, 4), DType.F32)
    exponent = np.array([[0, 1, 2, 3]])
    result = make(base, device).powi(index_tensor(exponent, device))
    check(result, np.power(f64(base), exponent.astype(np.float64)), DType.F32)


def test_pow_chooses_powi_for_int_exponent_tensors(device: Device, rng: np.random.Generator) -> None:
    base = nonzero_floats(rng, (2, 3), DType.F32)
    exponent = rng.integers(0, 4, (2, 3))
    expected = np.power(f64(base), exponent.astype(np.float64))
    check(make(base, device) ** index_tensor(exponent, device), expected, DType.F32)


@pytest.mark.parametrize("base", [2, 0.5, 3.0])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_scalar_to_the_power_of_a_tensor(
    device: Device, rng: np.random.Generator, dtype: DType, base: float
) -> None:
    require_dtype(device, dtype)
    exponent = random_array(rng, (2, 5), dtype, -2.0, 2.0)
    check(base ** make(exponent, device), np.power(float(base), f64(exponent)), dtype, scale=2)


def test_pow_of_negative_base_and_fractional_exponent_is_nan(device: Device) -> None:
    result = values(Tensor.from_data([-2.0, 4.0], device, DType.F32).powf(0.5))
    assert np.isnan(result[0])
    assert result[1] == 2.0


# -- matmul ---------------------------------------------------------------------------------------------
MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((1, 4), (4, 1)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (1, 3, 4, 2)),
    ((1, 3, 4), (2, 4, 2)),
    ((3, 0), (0, 2)),
    ((0, 3), (3, 2)),
]


@pytest.mark.parametrize(("lhs", "rhs"), MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_matmul(
    device: Device, rng: np.random.Generator, dtype: DType, lhs: tuple[int, ...], rhs: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    a, b = random_array(rng, lhs, dtype), random_array(rng, rhs, dtype)
    expected = np.matmul(f64(a), f64(b))
    magnitude = np.matmul(np.abs(f64(a)), np.abs(f64(b))).max(initial=0.0)
    tolerance = accumulated(dtype, magnitude)
    check(make(a, device).matmul(make(b, device)), expected, dtype, tolerance)
    check(make(a, device) @ make(b, device), expected, dtype, tolerance)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_matmul_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    a, b = random_array(rng, (4, 3), DType.F32), random_array(rng, (4, 5), DType.F32)
    result = laid_out(a, device, layout).transpose().matmul(laid_out(b, device, layout))
    check(result, f64(a).T @ f64(b), DType.F32, scale=4)


def test_matmul_with_a_transposed_operand(device: Device, rng: np.random.Generator) -> None:
    a, b = random_array(rng, (2, 5, 3), DType.F32), random_array(rng, (2, 4, 3), DType.F32)
    check(make(a, device) @ make(b, device).T, f64(a) @ np.swapaxes(f64(b), 1, 2), DType.F32, scale=4)


# -- cross, atan2, hypot --------------------------------------------------------------------------------
CROSS_CASES = [
    ((3,), (3,), 0),
    ((4, 3), (4, 3), -1),
    ((3, 5), (3, 5), 0),
    ((2, 3, 4), (2, 3, 4), 1),
    ((1, 3), (4, 3), 1),
]


@pytest.mark.parametrize(("lhs", "rhs", "dim"), CROSS_CASES, ids=[f"{a}x{b}@{d}" for a, b, d in CROSS_CASES])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_cross(
    device: Device,
    rng: np.random.Generator,
    dtype: DType,
    lhs: tuple[int, ...],
    rhs: tuple[int, ...],
    dim: int,
) -> None:
    require_dtype(device, dtype)
    a, b = random_array(rng, lhs, dtype), random_array(rng, rhs, dtype)
    expected = np.cross(f64(a), f64(b), axis=dim)
    check(make(a, device).cross(make(b, device), dim), expected, dtype, scale=8)


def test_cross_of_unit_vectors(device: Device) -> None:
    x = Tensor.from_data([1.0, 0.0, 0.0], device, DType.F32)
    y = Tensor.from_data([0.0, 1.0, 0.0], device, DType.F32)
    check(x.cross(y), [0.0, 0.0, 1.0], DType.F32)
    check(y.cross(x), [0.0, 0.0, -1.0], DType.F32)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_atan2(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    y, x = nonzero_floats(rng, (3, 4), dtype), nonzero_floats(rng, (3, 4), dtype)
    check(make(y, device).atan2(make(x, device)), np.arctan2(f64(y), f64(x)), dtype, scale=2)


def test_atan2_quadrants(device: Device) -> None:
    y = Tensor.from_data([1.0, 1.0, -1.0, -1.0, 0.0, 1.0], device, DType.F64)
    x = Tensor.from_data([1.0, -1.0, -1.0, 1.0, -1.0, 0.0], device, DType.F64)
    pi = np.pi
    check(y.atan2(x), [pi / 4, 3 * pi / 4, -3 * pi / 4, -pi / 4, pi, pi / 2], DType.F64)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_hypot(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a, b = random_array(rng, (3, 1), dtype), random_array(rng, (1, 4), dtype)
    check(make(a, device).hypot(make(b, device)), np.hypot(f64(a), f64(b)), dtype, scale=2)
