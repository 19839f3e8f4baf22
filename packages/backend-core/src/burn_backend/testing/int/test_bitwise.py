"""Bitwise ops for every int dtype: and, or, xor, not and the shifts, with tensors and scalars and as
operators; references in Python ints."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.testing import INT_DTYPES, check, make, require_dtype
from burn_backend.testing.core._common import LAYOUTS, SIGNED_INT_DTYPES, ints, laid_out

LOGIC: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "bitwise_and": ("&", operator.and_),
    "bitwise_or": ("|", operator.or_),
    "bitwise_xor": ("^", operator.xor),
}


def full_range(rng: np.random.Generator, shape: tuple[int, ...], dtype: DType) -> np.ndarray:
    """Integers over the whole range of ``dtype`` (all bits in use, the sign bit too)."""
    info = np.iinfo(dtype.numpy)
    return rng.integers(int(info.min), int(info.max), shape, dtype=dtype.numpy, endpoint=True)


def python(op: Callable[..., Any], dtype: DType, *arrays: Any) -> np.ndarray:
    """``op`` applied to Python ints element by element (arrays broadcast)."""
    broadcast = np.broadcast_arrays(*[np.asarray(a) for a in arrays])
    flat = [op(*(int(v) for v in values)) for values in zip(*(b.ravel() for b in broadcast))]
    return np.array(flat, dtype=object).reshape(broadcast[0].shape).astype(dtype.numpy)


@pytest.mark.parametrize(
    ("lhs", "rhs"), [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((0, 2), (1, 2)), ((), ())], ids=str
)
@pytest.mark.parametrize("op", list(LOGIC))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_logic(
    device: Device,
    rng: np.random.Generator,
    dtype: DType,
    op: str,
    lhs: tuple[int, ...],
    rhs: tuple[int, ...],
) -> None:
    require_dtype(device, dtype)
    _, reference = LOGIC[op]
    a, b = full_range(rng, lhs, dtype), full_range(rng, rhs, dtype)
    expected = python(reference, dtype, a, b)
    check(getattr(make(a, device), op)(make(b, device)), expected, dtype)
    check(reference(make(a, device), make(b, device)), expected, dtype)


@pytest.mark.parametrize("scalar", [0, 5, 0x3C])
@pytest.mark.parametrize("op", list(LOGIC))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_logic_with_scalars(
    device: Device, rng: np.random.Generator, dtype: DType, op: str, scalar: int
) -> None:
    require_dtype(device, dtype)
    _, reference = LOGIC[op]
    a = full_range(rng, (3, 4), dtype)
    expected = python(reference, dtype, a, scalar)
    check(getattr(make(a, device), op)(scalar), expected, dtype)
    check(reference(make(a, device), scalar), expected, dtype)


@pytest.mark.parametrize("op", list(LOGIC))
@pytest.mark.parametrize("dtype", SIGNED_INT_DTYPES)
def test_logic_with_negative_scalars(device: Device, rng: np.random.Generator, dtype: DType, op: str) -> None:
    require_dtype(device, dtype)
    _, reference = LOGIC[op]
    a = full_range(rng, (3, 4), dtype)
    check(getattr(make(a, device), op)(-2), python(reference, dtype, a, -2), dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_not(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = full_range(rng, (4, 5), dtype)
    bits = dtype.size * 8
    if dtype.is_signed:
        expected = python(lambda x: -x - 1, dtype, a)
    else:
        expected = python(lambda x: (1 << bits) - 1 - x, dtype, a)
    check(make(a, device).bitwise_not(), expected, dtype)
    check(~make(a, device), expected, dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_not_of_edge_values(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    low, high = int(np.iinfo(dtype.numpy).min), int(np.iinfo(dtype.numpy).max)
    tensor = make(np.array([0, high, low], dtype=dtype.numpy), device)
    expected = [-1, low, high] if dtype.is_signed else [high, 0, high]
    check(~tensor, np.array(expected, dtype=dtype.numpy), dtype)


SHIFTS: dict[str, Callable[[Any, Any], Any]] = {
    "bitwise_left_shift": operator.lshift,
    "bitwise_right_shift": operator.rshift,
}


def shift_operands(
    rng: np.random.Generator, dtype: DType, shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Values and shift amounts for which a left shift never overflows the dtype."""
    low = -8 if dtype.is_signed else 0
    return ints(rng, shape, dtype, low, 15), ints(rng, shape, dtype, 0, 3)


@pytest.mark.parametrize("shape", [(3, 4), (2, 0), ()], ids=str)
@pytest.mark.parametrize("op", list(SHIFTS))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_shift(
    device: Device, rng: np.random.Generator, dtype: DType, op: str, shape: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    reference = SHIFTS[op]
    a, s = shift_operands(rng, dtype, shape)
    expected = python(reference, dtype, a, s)
    check(getattr(make(a, device), op)(make(s, device)), expected, dtype)
    check(reference(make(a, device), make(s, device)), expected, dtype)


@pytest.mark.parametrize("amount", [0, 1, 3])
@pytest.mark.parametrize("op", list(SHIFTS))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_shift_by_a_scalar(
    device: Device, rng: np.random.Generator, dtype: DType, op: str, amount: int
) -> None:
    require_dtype(device, dtype)
    reference = SHIFTS[op]
    a, _ = shift_operands(rng, dtype, (3, 4))
    expected = python(reference, dtype, a, amount)
    check(getattr(make(a, device), op)(amount), expected, dtype)
    check(reference(make(a, device), amount), expected, dtype)


@pytest.mark.parametrize("dtype", SIGNED_INT_DTYPES)
def test_right_shift_is_arithmetic_for_signed_dtypes(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    tensor = make(np.array([-8, -1, -7, 7, -128]), device, dtype)
    check(tensor >> 1, [-4, -1, -4, 3, -64], dtype)
    check(tensor >> 3, [-1, -1, -1, 0, -16], dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_shifts_reach_the_top_bit(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    bits = dtype.size * 8
    top = bits - 2 if dtype.is_signed else bits - 1
    one = make(np.array([1]), device, dtype)
    check(one << top, [1 << top], dtype)
    check((one << top) >> top, [1], dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_bitwise_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    dtype = device.backend.int_dtype
    a, b = full_range(rng, (4, 3), dtype), full_range(rng, (4, 3), dtype)
    check(laid_out(a, device, layout) ^ laid_out(b, device, "flipped"), a ^ b, dtype)
    check(~laid_out(a, device, layout), ~a, dtype)
    s = ints(rng, (4, 3), dtype, 0, 5)
    check(laid_out(a, device, layout) >> laid_out(s, device, layout), a >> s, dtype)


def test_bitwise_example(device: Device) -> None:
    a = Tensor.from_data([0b1100, 0b1010, 0], device)
    b = Tensor.from_data([0b1010, 0b0110, 0b1111], device)
    int_dtype = device.backend.int_dtype
    check(a & b, [0b1000, 0b0010, 0], int_dtype)
    check(a | b, [0b1110, 0b1110, 0b1111], int_dtype)
    check(a ^ b, [0b0110, 0b1100, 0b1111], int_dtype)
    check(a << 2, [0b110000, 0b101000, 0], int_dtype)
