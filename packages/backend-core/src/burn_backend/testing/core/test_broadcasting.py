"""Broadcasting by NumPy's rule across ranks: dims aligned from the right, missing leading dims and dims
of size 1 stretch, in every family of binary ops (arithmetic, comparisons, powers, atan2 and hypot,
logic and bits, masks, cross, matmul's batch dims). Values against NumPy in float64."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.kit import ELEMENTWISE_OPS
from burn_backend.testing import check, make

Array = np.ndarray[Any, Any]

# pairs of shapes of different ranks, the lower rank on either side
RANK_PAIRS = [
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((2, 1, 3), (4, 1)),
    ((4, 1), (2, 1, 3)),
    ((2, 3), ()),
    ((), (2, 3)),
    ((2, 3), (1,)),
    ((5,), (2, 1, 5)),
]
RANK_PAIR_IDS = ["-".join("x".join(map(str, s)) or "scalar" for s in pair) for pair in RANK_PAIRS]


def positive(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    return rng.uniform(0.5, 2.0, shape)


def signed(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    """Magnitudes in [0.5, 2] with random signs: no zeros, where division and remainders jump."""
    values: Array = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    return values


def coarse(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    """Values from a small set, so that comparisons meet equal pairs."""
    return rng.choice([-1.0, 0.5, 2.0], shape)


# name -> (ours, NumPy's, sampler of the left operand, sampler of the right one)
FLOAT_BINARY: dict[str, tuple[Callable[..., Any], Callable[..., Any], Any, Any]] = {
    "add": (lambda a, b: a + b, np.add, signed, signed),
    "sub": (lambda a, b: a - b, np.subtract, signed, signed),
    "mul": (lambda a, b: a * b, np.multiply, signed, signed),
    "div": (lambda a, b: a / b, np.divide, signed, signed),
    "remainder": (lambda a, b: a % b, np.remainder, signed, signed),
    "powf": (lambda a, b: a.powf(b), np.power, positive, signed),
    "atan2": (lambda a, b: a.atan2(b), np.arctan2, signed, signed),
    "hypot": (lambda a, b: a.hypot(b), np.hypot, signed, signed),
    "is_close": (lambda a, b: a.is_close(b), lambda a, b: np.isclose(a, b, 1e-5, 1e-8), coarse, coarse),
    "equal": (lambda a, b: a == b, np.equal, coarse, coarse),
    "not_equal": (lambda a, b: a != b, np.not_equal, coarse, coarse),
    "greater": (lambda a, b: a > b, np.greater, coarse, coarse),
    "greater_equal": (lambda a, b: a >= b, np.greater_equal, coarse, coarse),
    "lower": (lambda a, b: a < b, np.less, coarse, coarse),
    "lower_equal": (lambda a, b: a <= b, np.less_equal, coarse, coarse),
}


@pytest.mark.parametrize(("lhs", "rhs"), RANK_PAIRS, ids=RANK_PAIR_IDS)
@pytest.mark.parametrize("op", list(FLOAT_BINARY))
def test_float_binary_ops_broadcast_across_ranks(
    device: Device, rng: np.random.Generator, op: str, lhs: tuple[int, ...], rhs: tuple[int, ...]
) -> None:
    ours, reference, left, right = FLOAT_BINARY[op]
    a, b = left(rng, lhs), right(rng, rhs)
    x, y = make(a, device, DType.F32), make(b, device, DType.F32)
    expected = reference(a.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64))
    result = ours(x, y)
    if expected.dtype == np.bool_:
        check(result, expected, DType.BOOL)
    else:
        # the op's own bound, as its same-shape test uses: broadcasting changes no rounding
        check(result, expected, DType.F32, scale=ELEMENTWISE_OPS[f"float_{op}"].tolerance_scale)


INT_BINARY: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "add": (lambda a, b: a + b, np.add),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a // b, np.floor_divide),
    "remainder": (lambda a, b: a % b, np.remainder),
    "powi": (lambda a, b: a.powi(b.abs()), lambda a, b: np.power(a, np.abs(b))),
    "greater": (lambda a, b: a > b, np.greater),
    "bitwise_and": (lambda a, b: a & b, np.bitwise_and),
    "bitwise_or": (lambda a, b: a | b, np.bitwise_or),
    "bitwise_xor": (lambda a, b: a ^ b, np.bitwise_xor),
    "bitwise_left_shift": (lambda a, b: a << b.abs(), lambda a, b: np.left_shift(a, np.abs(b))),
    "bitwise_right_shift": (lambda a, b: a >> b.abs(), lambda a, b: np.right_shift(a, np.abs(b))),
}


@pytest.mark.parametrize(("lhs", "rhs"), RANK_PAIRS[:4], ids=RANK_PAIR_IDS[:4])
@pytest.mark.parametrize("op", list(INT_BINARY))
def test_int_binary_ops_broadcast_across_ranks(
    device: Device, rng: np.random.Generator, op: str, lhs: tuple[int, ...], rhs: tuple[int, ...]
) -> None:
    ours, reference = INT_BINARY[op]
    dtype = device.backend.int_dtype
    a = rng.integers(-20, 20, lhs)
    b = rng.integers(1, 4, rhs) * rng.choice([-1, 1], rhs)
    expected = reference(a, b)
    check(
        ours(make(a, device, dtype), make(b, device, dtype)),
        expected,
        None if expected.dtype == np.bool_ else dtype,
    )


def test_powi_broadcasts_an_int_exponent_over_a_float_base(device: Device, rng: np.random.Generator) -> None:
    base = signed(rng, (2, 3))
    for exponents in ([2, 3, 1], [[1, 2, 3], [0, 1, 2]]):
        e = np.array(exponents)
        result = make(base, device, DType.F32).powi(make(e, device, device.backend.int_dtype))
        check(result, np.power(base.astype(np.float32).astype(np.float64), e), DType.F32)
    lower = make(np.array([1.5, -2.0]), device, DType.F32).powi(
        make(np.array([[2], [3]]), device, device.backend.int_dtype)
    )
    check(lower, np.power(np.array([1.5, -2.0]), np.array([[2], [3]])), DType.F32)


@pytest.mark.parametrize("op", ["bool_and", "bool_or", "bool_xor"])
@pytest.mark.parametrize(("lhs", "rhs"), RANK_PAIRS[:4], ids=RANK_PAIR_IDS[:4])
def test_logic_broadcasts_across_ranks(
    device: Device, rng: np.random.Generator, op: str, lhs: tuple[int, ...], rhs: tuple[int, ...]
) -> None:
    a, b = rng.random(lhs) < 0.5, rng.random(rhs) < 0.5
    reference = {"bool_and": np.logical_and, "bool_or": np.logical_or, "bool_xor": np.logical_xor}[op]
    result = getattr(make(a, device, DType.BOOL), op)(make(b, device, DType.BOOL))
    check(result, reference(a, b), DType.BOOL)


MASK_SHAPES = [
    ((2, 3), (3,), (2, 3)),
    ((3,), (2, 3), (3,)),
    ((2, 3), (2, 3), (3,)),
    ((4, 1), (2, 1, 3), ()),
    ((2, 1, 3), (4, 1), (1,)),
]


@pytest.mark.parametrize(("tensor", "mask", "values"), MASK_SHAPES)
def test_mask_where_broadcasts_its_three_operands(
    device: Device,
    rng: np.random.Generator,
    tensor: tuple[int, ...],
    mask: tuple[int, ...],
    values: tuple[int, ...],
) -> None:
    x, m, v = signed(rng, tensor), rng.random(mask) < 0.5, signed(rng, values)
    result = make(x, device, DType.F32).mask_where(make(m, device, DType.BOOL), make(v, device, DType.F32))
    check(result, np.where(m, v.astype(np.float32), x.astype(np.float32)), DType.F32)


@pytest.mark.parametrize(("tensor", "mask"), [((2, 3), (3,)), ((3,), (2, 3)), ((2, 1, 3), (4, 1))])
def test_mask_fill_broadcasts_across_ranks(
    device: Device, rng: np.random.Generator, tensor: tuple[int, ...], mask: tuple[int, ...]
) -> None:
    x, m = signed(rng, tensor), rng.random(mask) < 0.5
    result = make(x, device, DType.F32).mask_fill(make(m, device, DType.BOOL), 7.0)
    check(result, np.where(m, 7.0, x.astype(np.float32)), DType.F32)


@pytest.mark.parametrize("mask", [(3,), (1, 3), (2, 1), (1,), ()], ids=["3", "1x3", "2x1", "1", "scalar"])
def test_mask_select_broadcasts_a_mask_to_the_tensor(
    device: Device, rng: np.random.Generator, mask: tuple[int, ...]
) -> None:
    x = signed(rng, (2, 3))
    m = rng.random(mask) < 0.5
    result = make(x, device, DType.F32).mask_select(make(m, device, DType.BOOL))
    check(result, x.astype(np.float32)[np.broadcast_to(m, (2, 3))], DType.F32)


@pytest.mark.parametrize(
    ("lhs", "rhs"),
    [((4, 2, 3), (3, 5)), ((2, 3), (4, 3, 5)), ((2, 1, 2, 3), (4, 3, 2)), ((3, 2, 3), (1, 3, 2))],
    ids=["batched-matrix", "matrix-batched", "rank4-rank3", "same-rank"],
)
def test_matmul_broadcasts_batch_dims_across_ranks(
    device: Device, rng: np.random.Generator, lhs: tuple[int, ...], rhs: tuple[int, ...]
) -> None:
    a, b = signed(rng, lhs), signed(rng, rhs)
    result = make(a, device, DType.F32) @ make(b, device, DType.F32)
    expected = np.matmul(a.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64))
    check(result, expected, DType.F32, scale=10.0)  # sums of products round once per term


def test_cross_broadcasts_across_ranks(device: Device, rng: np.random.Generator) -> None:
    a, b = signed(rng, (3,)), signed(rng, (4, 3))
    x, y = make(a, device, DType.F32), make(b, device, DType.F32)
    a64, b64 = a.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64)
    # differences of products: cancellation amplifies the products' rounding
    check(x.cross(y), np.cross(a64, b64), DType.F32, scale=10.0)
    check(y.cross(x, -1), np.cross(b64, a64), DType.F32, scale=10.0)


def test_broadcasting_keeps_the_operands_unchanged(device: Device) -> None:
    x = Tensor.from_data([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device)
    row = Tensor.from_data([10.0, 20.0, 30.0], device)
    assert (x + row).tolist() == [[11.0, 22.0, 33.0], [14.0, 25.0, 36.0]]
    assert (row - x).tolist() == [[9.0, 18.0, 27.0], [6.0, 15.0, 24.0]]
    assert row.dims() == [3]
    assert x.dims() == [2, 3]
