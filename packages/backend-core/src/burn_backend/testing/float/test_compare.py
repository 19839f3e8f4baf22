"""Float comparisons: equal, not_equal, greater, greater_equal, lower, lower_equal with tensors
(broadcast), scalars, the *_elem forms and the operators; NaN and infinities; Bool results."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.kit import ELEMENTWISE_OPS
from burn_backend.testing import FLOAT_DTYPES, check, make, require_dtype
from burn_backend.testing.core._common import LAYOUTS, laid_out

SYMBOLS = {
    "equal": operator.eq,
    "not_equal": operator.ne,
    "greater": operator.gt,
    "greater_equal": operator.ge,
    "lower": operator.lt,
    "lower_equal": operator.le,
}
# op -> (Python operator, reference: the element-wise op table's)
COMPARISONS: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    name: (symbol, ELEMENTWISE_OPS[f"float_{name}"].reference) for name, symbol in SYMBOLS.items()
}
SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 1, 3), (2, 4, 1)), ((0, 2), (1, 2)), ((), ())]


def ties(rng: np.random.Generator, shape: tuple[int, ...], dtype: DType) -> np.ndarray:
    """Values from {-1, -0.5, 0, 0.5, 1}: exact in every dtype, and equal often."""
    return (rng.integers(-2, 3, shape) / 2).astype(dtype.numpy)


@pytest.mark.parametrize(("lhs", "rhs"), SHAPES, ids=["same", "outer", "rank3", "empty", "rank0"])
@pytest.mark.parametrize("op", list(COMPARISONS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_compare_tensors(
    device: Device,
    rng: np.random.Generator,
    dtype: DType,
    op: str,
    lhs: tuple[int, ...],
    rhs: tuple[int, ...],
) -> None:
    require_dtype(device, dtype)
    symbol, reference = COMPARISONS[op]
    a, b = ties(rng, lhs, dtype), ties(rng, rhs, dtype)
    expected = reference(a, b)
    check(getattr(make(a, device), op)(make(b, device)), expected, DType.BOOL)
    check(symbol(make(a, device), make(b, device)), expected, DType.BOOL)


@pytest.mark.parametrize("scalar", [0.5, 0, -1])
@pytest.mark.parametrize("op", list(COMPARISONS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_compare_with_a_scalar(
    device: Device, rng: np.random.Generator, dtype: DType, op: str, scalar: float
) -> None:
    require_dtype(device, dtype)
    symbol, reference = COMPARISONS[op]
    a = ties(rng, (4, 5), dtype)
    expected = reference(a, scalar)
    tensor = make(a, device)
    check(getattr(tensor, op)(scalar), expected, DType.BOOL)
    check(getattr(tensor, f"{op}_elem")(scalar), expected, DType.BOOL)
    check(symbol(tensor, scalar), expected, DType.BOOL)


@pytest.mark.parametrize("op", list(COMPARISONS))
def test_scalar_on_the_left(device: Device, rng: np.random.Generator, op: str) -> None:
    symbol, reference = COMPARISONS[op]
    a = ties(rng, (6,), DType.F32)
    check(symbol(0.5, make(a, device)), reference(0.5, a), DType.BOOL)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("op", list(COMPARISONS))
def test_compare_laid_out_inputs(device: Device, rng: np.random.Generator, op: str, layout: str) -> None:
    _, reference = COMPARISONS[op]
    a, b = ties(rng, (4, 3), DType.F32), ties(rng, (4, 3), DType.F32)
    check(
        getattr(laid_out(a, device, layout), op)(laid_out(b, device, "flipped")), reference(a, b), DType.BOOL
    )


@pytest.mark.parametrize(
    ("dtype", "op"),
    [(d, op) for d in FLOAT_DTYPES for op in COMPARISONS],
)
def test_nan_compares_false_except_not_equal(device: Device, dtype: DType, op: str) -> None:
    require_dtype(device, dtype)
    _, reference = COMPARISONS[op]
    a = np.array([np.nan, np.nan, 1.0, np.inf, -np.inf, np.inf])
    b = np.array([np.nan, 1.0, np.nan, np.inf, np.inf, 1e4])
    check(getattr(make(a, device, dtype), op)(make(b, device, dtype)), reference(a, b), DType.BOOL)
    check(getattr(make(a, device, dtype), op)(np.nan), reference(a, np.nan), DType.BOOL)


def test_comparisons_with_signed_zero(device: Device) -> None:
    a = Tensor.from_data([0.0, -0.0], device, DType.F32)
    check(a == 0.0, [True, True], DType.BOOL)
    check(a.equal(Tensor.from_data([-0.0, 0.0], device, DType.F32)), [True, True], DType.BOOL)
    check(a < 0.0, [False, False], DType.BOOL)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_scalars_compare_in_the_dtype_of_the_tensor(device: Device, dtype: DType) -> None:
    require_dtype(device, dtype)
    third = np.array([1 / 3]).astype(dtype.numpy)
    tensor = make(third, device)
    rounded = float(third[0])
    check(tensor.equal_elem(rounded), [True], DType.BOOL)
    check(tensor >= rounded, [True], DType.BOOL)
    check(tensor < rounded, [False], DType.BOOL)


def test_comparisons_leave_inputs_alone(device: Device, rng: np.random.Generator) -> None:
    a, b = ties(rng, (3, 3), DType.F32), ties(rng, (3, 3), DType.F32)
    ta, tb = make(a, device), make(b, device)
    for result in (ta > tb, ta != 0.5):
        assert result.dtype is DType.BOOL
    check(ta, a, DType.F32)
    check(tb, b, DType.F32)
