"""Int arithmetic for every int dtype: + - *, floor division and remainder (Python's signs), their
scalar forms, neg, abs, sign, square, clamp, powi and matmul, on values that never overflow."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.kit import ELEMENTWISE_OPS
from burn_backend.testing import INT_DTYPES, check, make, require_dtype
from burn_backend.testing.core._common import LAYOUTS, SIGNED_INT_DTYPES, ints, laid_out

BROADCASTS = [((2, 3), (2, 3)), ((3, 1), (1, 4)), ((2, 3, 4), (1, 3, 1)), ((0, 3), (1, 3)), ((), ())]
BROADCAST_IDS = ["same", "outer", "rank3", "empty", "rank0"]


def operands(
    rng: np.random.Generator, op: str, dtype: DType, lhs: Any, rhs: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Operands whose result fits every int dtype (|x| <= 10; unsigned differences stay >= 0)."""
    low = -10 if dtype.is_signed else 0
    if op == "sub" and not dtype.is_signed:
        b = ints(rng, rhs, dtype, 0, 10)
        return ints(rng, lhs, dtype, 10, 20), b
    return ints(rng, lhs, dtype, low, 10), ints(rng, rhs, dtype, low, 10)


SYMBOLS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}
# op -> (Tensor method, Python operator, int64 reference: the element-wise op table's)
BINARY: dict[str, tuple[Callable[[Tensor, Any], Tensor], Callable[[Any, Any], Any], Callable[..., Any]]] = {
    name: (getattr(Tensor, name), symbol, ELEMENTWISE_OPS[f"int_{name}"].reference)
    for name, symbol in SYMBOLS.items()
}


@pytest.mark.parametrize(("lhs", "rhs"), BROADCASTS, ids=BROADCAST_IDS)
@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_binary(
    device: Device,
    rng: np.random.Generator,
    dtype: DType,
    op: str,
    lhs: tuple[int, ...],
    rhs: tuple[int, ...],
) -> None:
    require_dtype(device, dtype)
    method, symbol, reference = BINARY[op]
    a, b = operands(rng, op, dtype, lhs, rhs)
    expected = reference(a.astype(np.int64), b.astype(np.int64))
    check(method(make(a, device), make(b, device)), expected, dtype)
    check(symbol(make(a, device), make(b, device)), expected, dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_of_laid_out_inputs(device: Device, rng: np.random.Generator, op: str, layout: str) -> None:
    dtype = device.backend.int_dtype
    method, _, reference = BINARY[op]
    a, b = operands(rng, op, dtype, (4, 3), (4, 3))
    result = method(laid_out(a, device, layout), laid_out(b, device, "swapped"))
    check(result, reference(a.astype(np.int64), b.astype(np.int64)), dtype)


SCALARS: dict[str, tuple[Callable[[Tensor, int], Tensor], Callable[[Any, int], Any]]] = {
    "add_scalar": (Tensor.add_scalar, lambda a, s: a + s),
    "sub_scalar": (Tensor.sub_scalar, lambda a, s: a - s),
    "mul_scalar": (Tensor.mul_scalar, lambda a, s: a * s),
    "x+s": (lambda t, s: t + s, lambda a, s: a + s),
    "s+x": (lambda t, s: s + t, lambda a, s: s + a),
    "x-s": (lambda t, s: t - s, lambda a, s: a - s),
    "s-x": (lambda t, s: s - t, lambda a, s: s - a),
    "x*s": (lambda t, s: t * s, lambda a, s: a * s),
    "s*x": (lambda t, s: s * t, lambda a, s: s * a),
}


@pytest.mark.parametrize("op", list(SCALARS))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_scalar(device: Device, rng: np.random.Generator, dtype: DType, op: str) -> None:
    require_dtype(device, dtype)
    method, reference = SCALARS[op]
    a = ints(rng, (3, 4), dtype, 0, 10)
    scalar = 12 if op == "s-x" else 3  # s - x stays >= 0 for unsigned dtypes: x <= 10
    check(method(make(a, device), scalar), reference(a.astype(np.int64), scalar), dtype)


@pytest.mark.parametrize("dtype", SIGNED_INT_DTYPES)
def test_negative_scalars(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = ints(rng, (3, 4), dtype, -10, 10)
    x = a.astype(np.int64)
    check(make(a, device) + (-7), x - 7, dtype)
    check(make(a, device) * (-3), x * -3, dtype)
    check(make(a, device) - (-5), x + 5, dtype)
    check(-4 - make(a, device), -4 - x, dtype)


def test_numpy_integers_are_scalars(device: Device) -> None:
    tensor = Tensor.from_data([1, -2], device)
    check(tensor + np.int8(3), [4, 1], device.backend.int_dtype)
    check(tensor * np.uint16(2), [2, -4], device.backend.int_dtype)


# -- floor division and remainder ------------------------------------------------------------------------
def division_operands(
    rng: np.random.Generator, dtype: DType, shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    if dtype.is_signed:
        divisor = rng.choice([-5, -3, -2, -1, 1, 2, 3, 7], shape).astype(dtype.numpy)
        return ints(rng, shape, dtype, -20, 20), divisor
    return ints(rng, shape, dtype, 0, 40), rng.choice([1, 2, 3, 5, 7], shape).astype(dtype.numpy)


def python_floor_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([int(x) // int(y) for x, y in zip(a.ravel(), b.ravel())], dtype=np.int64).reshape(a.shape)


def python_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([int(x) % int(y) for x, y in zip(a.ravel(), b.ravel())], dtype=np.int64).reshape(a.shape)


@pytest.mark.parametrize("shape", [(4, 5), (0,), ()], ids=str)
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_floor_division_and_remainder(
    device: Device, rng: np.random.Generator, dtype: DType, shape: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    a, b = division_operands(rng, dtype, shape)
    quotient, remainder = python_floor_div(a, b), python_mod(a, b)
    ta, tb = make(a, device), make(b, device)
    check(ta.div(tb), quotient, dtype)
    check(ta // tb, quotient, dtype)
    check(ta.remainder(tb), remainder, dtype)
    check(ta % tb, remainder, dtype)
    check((ta // tb) * tb + ta % tb, a, dtype)


@pytest.mark.parametrize("divisor", [1, 2, 3, 7])
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_floor_division_and_remainder_by_scalars(
    device: Device, rng: np.random.Generator, dtype: DType, divisor: int
) -> None:
    require_dtype(device, dtype)
    a = ints(rng, (4, 5), dtype, -30, 30)
    b = np.full(a.shape, divisor)
    quotient, remainder = python_floor_div(a, b), python_mod(a, b)
    tensor = make(a, device)
    check(tensor.div_scalar(divisor), quotient, dtype)
    check(tensor // divisor, quotient, dtype)
    check(tensor.remainder_scalar(divisor), remainder, dtype)
    check(tensor % divisor, remainder, dtype)


@pytest.mark.parametrize("divisor", [-1, -2, -3, -7])
@pytest.mark.parametrize("dtype", SIGNED_INT_DTYPES)
def test_floor_division_by_negative_scalars(
    device: Device, rng: np.random.Generator, dtype: DType, divisor: int
) -> None:
    require_dtype(device, dtype)
    a = ints(rng, (4, 5), dtype, -30, 30)
    b = np.full(a.shape, divisor)
    check(make(a, device) // divisor, python_floor_div(a, b), dtype)
    check(make(a, device) % divisor, python_mod(a, b), dtype)


@pytest.mark.parametrize("dtype", SIGNED_INT_DTYPES)
def test_signs_of_floor_division_and_remainder(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = make(np.array([7, -7, 7, -7, 6, -6, 0]), device, dtype)
    b = make(np.array([2, 2, -2, -2, 3, -3, -5]), device, dtype)
    check(a // b, [3, -4, -4, 3, 2, 2, 0], dtype)
    check(a % b, [1, 1, -1, -1, 0, 0, 0], dtype)


# -- unary -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(7,), (2, 3, 4), (0, 2), ()], ids=str)
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_abs_sign_and_square(
    device: Device, rng: np.random.Generator, dtype: DType, shape: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    a = ints(rng, shape, dtype, -10, 10)
    x = a.astype(np.int64)
    tensor = make(a, device)
    check(tensor.abs(), np.abs(x), dtype)
    check(abs(tensor), np.abs(x), dtype)
    check(tensor.sign(), np.sign(x), dtype)
    check(tensor.square(), x * x, dtype)


@pytest.mark.parametrize("dtype", SIGNED_INT_DTYPES)
def test_neg(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = ints(rng, (3, 5), dtype, -100, 100)
    check(make(a, device).neg(), -a.astype(np.int64), dtype)
    check(-make(a, device), -a.astype(np.int64), dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_unary_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    dtype = device.backend.int_dtype
    a = ints(rng, (4, 3), dtype, -10, 10)
    tensor = laid_out(a, device, layout)
    check(tensor.abs(), np.abs(a), dtype)
    check(-tensor, -a, dtype)
    check(tensor.sign(), np.sign(a), dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_clamp(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    low = -20 if dtype.is_signed else 0
    a = ints(rng, (4, 6), dtype, low, 20)
    x = a.astype(np.int64)
    lo, hi = (-5, 7) if dtype.is_signed else (3, 12)
    tensor = make(a, device)
    check(tensor.clamp(lo, hi), np.clip(x, lo, hi), dtype)
    check(tensor.clamp_min(lo), np.maximum(x, lo), dtype)
    check(tensor.clamp_max(hi), np.minimum(x, hi), dtype)


# -- powers ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("exponent", [0, 1, 2, 3])
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_powi_scalar(device: Device, rng: np.random.Generator, dtype: DType, exponent: int) -> None:
    require_dtype(device, dtype)
    a = ints(rng, (3, 4), dtype, -4, 4)
    expected = a.astype(np.int64) ** exponent
    tensor = make(a, device)
    check(tensor.powi(exponent), expected, dtype)
    check(tensor.powi_scalar(exponent), expected, dtype)
    check(tensor**exponent, expected, dtype)
    check(tensor.pow(exponent), expected, dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_powi_with_int_exponents(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = ints(rng, (3, 4), dtype, -4, 4)
    e = ints(rng, (3, 4), dtype, 0, 3)
    expected = a.astype(np.int64) ** e.astype(np.int64)
    check(make(a, device).powi(make(e, device)), expected, dtype)
    check(make(a, device) ** make(e, device), expected, dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_int_base_to_the_power_of_a_tensor(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    e = ints(rng, (2, 5), dtype, 0, 6)
    check(2 ** make(e, device), 2 ** e.astype(np.int64), dtype)


def test_powi_of_large_values_is_exact(device: Device) -> None:
    require_dtype(device, DType.I64)
    tensor = Tensor.from_data([3, -3, 2], device, DType.I64)
    check(tensor.powi(39), [3**39, (-3) ** 39, 2**39], DType.I64)
    # the interface promises exact int_powi below 2**53
    check(
        tensor.powi(Tensor.from_data([33, 33, 52], device, DType.I64)), [3**33, (-3) ** 33, 2**52], DType.I64
    )


# -- matmul ----------------------------------------------------------------------------------------------
MATMUL_SHAPES = [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 2)), ((2, 1, 2, 3), (1, 2, 3, 2)), ((3, 0), (0, 2))]


@pytest.mark.parametrize(("lhs", "rhs"), MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_matmul(
    device: Device, rng: np.random.Generator, dtype: DType, lhs: tuple[int, ...], rhs: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    low = -3 if dtype.is_signed else 0
    a, b = ints(rng, lhs, dtype, low, 3), ints(rng, rhs, dtype, low, 3)
    expected = np.matmul(a.astype(np.int64), b.astype(np.int64))
    check(make(a, device).matmul(make(b, device)), expected, dtype)
    check(make(a, device) @ make(b, device), expected, dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_matmul_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    dtype = device.backend.int_dtype
    a, b = ints(rng, (4, 3), dtype, -5, 5), ints(rng, (4, 2), dtype, -5, 5)
    check(laid_out(a, device, layout).T @ laid_out(b, device, layout), a.T @ b, dtype)


def test_arithmetic_leaves_inputs_alone(device: Device, rng: np.random.Generator) -> None:
    dtype = device.backend.int_dtype
    a, b = ints(rng, (3, 3), dtype, 1, 9), ints(rng, (3, 3), dtype, 1, 9)
    ta, tb = make(a, device), make(b, device)
    for result in (ta + tb, ta // tb, ta % 2, -ta):
        assert result.dims() == [3, 3]
    check(ta, a, dtype)
    check(tb, b, dtype)
