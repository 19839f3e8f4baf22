"""Bool logic: and, or, xor, not (methods and operators), equal and not_equal with tensors and bool
scalars, broadcasting."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.testing import check, make, random_array
from burn_backend.testing.core._common import LAYOUTS, laid_out

SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 1, 3), (1, 4, 3)), ((0, 2), (1, 2)), ((), ())]
SHAPE_IDS = ["same", "outer", "rank3", "empty", "rank0"]

BINARY: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "bool_and": (operator.and_, np.logical_and),
    "bool_or": (operator.or_, np.logical_or),
    "bool_xor": (operator.xor, np.logical_xor),
    "equal": (operator.eq, np.equal),
    "not_equal": (operator.ne, np.not_equal),
}


@pytest.mark.parametrize(("lhs", "rhs"), SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary(
    device: Device, rng: np.random.Generator, op: str, lhs: tuple[int, ...], rhs: tuple[int, ...]
) -> None:
    symbol, reference = BINARY[op]
    a, b = random_array(rng, lhs, DType.BOOL), random_array(rng, rhs, DType.BOOL)
    expected = reference(a, b)
    check(getattr(make(a, device), op)(make(b, device)), expected, DType.BOOL)
    check(symbol(make(a, device), make(b, device)), expected, DType.BOOL)


def test_truth_tables(device: Device) -> None:
    a = Tensor.from_data([False, False, True, True], device)
    b = Tensor.from_data([False, True, False, True], device)
    check(a & b, [False, False, False, True], DType.BOOL)
    check(a | b, [False, True, True, True], DType.BOOL)
    check(a ^ b, [False, True, True, False], DType.BOOL)
    check(a == b, [True, False, False, True], DType.BOOL)
    check(a != b, [False, True, True, False], DType.BOOL)
    check(~a, [True, True, False, False], DType.BOOL)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 4), (0, 3), ()], ids=str)
def test_not(device: Device, rng: np.random.Generator, shape: tuple[int, ...]) -> None:
    a = random_array(rng, shape, DType.BOOL)
    check(make(a, device).bool_not(), ~a, DType.BOOL)
    check(~make(a, device), ~a, DType.BOOL)
    check(~~make(a, device), a, DType.BOOL)


@pytest.mark.parametrize("scalar", [True, False, 1, 0])
@pytest.mark.parametrize("op", ["equal", "not_equal"])
def test_compare_with_a_bool(device: Device, rng: np.random.Generator, op: str, scalar: object) -> None:
    symbol, reference = BINARY[op]
    a = random_array(rng, (3, 4), DType.BOOL)
    expected = reference(a, bool(scalar))
    tensor = make(a, device)
    check(getattr(tensor, op)(scalar), expected, DType.BOOL)
    check(getattr(tensor, f"{op}_elem")(scalar), expected, DType.BOOL)
    check(symbol(tensor, scalar), expected, DType.BOOL)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_of_laid_out_inputs(device: Device, rng: np.random.Generator, op: str, layout: str) -> None:
    symbol, reference = BINARY[op]
    a, b = random_array(rng, (4, 3), DType.BOOL), random_array(rng, (4, 3), DType.BOOL)
    check(symbol(laid_out(a, device, layout), laid_out(b, device, "swapped")), reference(a, b), DType.BOOL)
    check(~laid_out(a, device, layout), ~a, DType.BOOL)


def test_logic_leaves_inputs_alone(device: Device, rng: np.random.Generator) -> None:
    a, b = random_array(rng, (3, 3), DType.BOOL), random_array(rng, (3, 3), DType.BOOL)
    ta, tb = make(a, device), make(b, device)
    for result in (ta & tb, ~ta, ta ^ tb):
        assert result.dims() == [3, 3]
    check(ta, a, DType.BOOL)
    check(tb, b, DType.BOOL)


def test_comparisons_of_results(device: Device, rng: np.random.Generator) -> None:
    x = random_array(rng, (4, 5), DType.F32)
    tensor = make(x, device)
    between = (tensor > -0.5) & (tensor < 0.5)
    check(between, (x > -0.5) & (x < 0.5), DType.BOOL)
    check(between | tensor.is_nan(), (x > -0.5) & (x < 0.5), DType.BOOL)
