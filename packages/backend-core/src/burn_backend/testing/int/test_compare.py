"""Int comparisons for every int dtype: tensors (broadcast), scalars, the *_elem forms and the
operators, including scalars outside the range of the dtype."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType
from burn_backend.testing import INT_DTYPES, check, make, require_dtype
from burn_backend.testing.core._common import LAYOUTS, ints, laid_out

COMPARISONS: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "equal": (operator.eq, np.equal),
    "not_equal": (operator.ne, np.not_equal),
    "greater": (operator.gt, np.greater),
    "greater_equal": (operator.ge, np.greater_equal),
    "lower": (operator.lt, np.less),
    "lower_equal": (operator.le, np.less_equal),
}


SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((0, 2), (1, 2)), ((), ())]


@pytest.mark.parametrize("op", list(COMPARISONS))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_compare_tensors(device: Device, rng: np.random.Generator, dtype: DType, op: str) -> None:
    require_dtype(device, dtype)
    symbol, reference = COMPARISONS[op]
    for lhs, rhs in SHAPES:
        a, b = ints(rng, lhs, dtype, -2, 2), ints(rng, rhs, dtype, -2, 2)
        expected = reference(a.astype(np.int64), b.astype(np.int64))
        check(getattr(make(a, device), op)(make(b, device)), expected, DType.BOOL)
        check(symbol(make(a, device), make(b, device)), expected, DType.BOOL)


@pytest.mark.parametrize("op", list(COMPARISONS))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_compare_with_a_scalar(device: Device, rng: np.random.Generator, dtype: DType, op: str) -> None:
    require_dtype(device, dtype)
    symbol, reference = COMPARISONS[op]
    a = ints(rng, (4, 5), dtype, -2, 3)
    expected = reference(a.astype(np.int64), 1)
    tensor = make(a, device)
    check(getattr(tensor, op)(1), expected, DType.BOOL)
    check(getattr(tensor, f"{op}_elem")(1), expected, DType.BOOL)
    check(symbol(tensor, 1), expected, DType.BOOL)
    check(symbol(1, tensor), reference(1, a.astype(np.int64)), DType.BOOL)


@pytest.mark.parametrize("op", list(COMPARISONS))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_compare_with_scalars_outside_the_dtype(
    device: Device, rng: np.random.Generator, dtype: DType, op: str
) -> None:
    require_dtype(device, dtype)
    _, reference = COMPARISONS[op]
    info = np.iinfo(dtype.numpy)
    a = ints(rng, (6,), dtype, -3, 3)
    tensor = make(a, device)
    for scalar in (int(info.max) + 1, int(info.min) - 1):
        expected = reference(a.astype(object), scalar).astype(bool)
        check(getattr(tensor, op)(scalar), expected, DType.BOOL)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("op", list(COMPARISONS))
def test_compare_laid_out_inputs(device: Device, rng: np.random.Generator, op: str, layout: str) -> None:
    dtype = device.backend.int_dtype
    _, reference = COMPARISONS[op]
    a, b = ints(rng, (4, 3), dtype, -2, 2), ints(rng, (4, 3), dtype, -2, 2)
    check(
        getattr(laid_out(a, device, layout), op)(laid_out(b, device, "swapped")), reference(a, b), DType.BOOL
    )
