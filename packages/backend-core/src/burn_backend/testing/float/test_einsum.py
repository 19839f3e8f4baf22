"""``Tensor.einsum`` against ``np.einsum`` in float64: matrix and batched products, transposes,
traces, diagonals, outer products, contractions, implicit outputs, ellipses and broadcasting."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor
from burn_backend.testing import check, make

# equation -> operand shapes
CASES: dict[str, list[tuple[int, ...]]] = {
    "ij,jk->ik": [(2, 3), (3, 4)],
    "bij,bjk->bik": [(2, 3, 4), (2, 4, 5)],
    "ij->ji": [(2, 3)],
    "ii->": [(3, 3)],
    "ii->i": [(3, 3)],
    "i,j->ij": [(3,), (4,)],
    "i,i->": [(5,)] * 2,
    "ijk,ikl->jl": [(2, 3, 4), (2, 4, 5)],
    "ij,jk,kl->il": [(2, 3), (3, 4), (4, 2)],
    "ij,jk": [(2, 3), (3, 4)],
    "ba": [(2, 3)],
    "...ij,...jk->...ik": [(2, 1, 3, 4), (5, 4, 2)],
    "b...,b->b...": [(2, 3, 4), (2,)],
    "ijk->": [(2, 3, 4)],
    "iij->ji": [(3, 3, 2)],
    "bhqd,bhkd->bhqk": [(2, 3, 4, 5), (2, 3, 6, 5)],
    "ij,ij->ij": [(2, 3), (1, 3)],
}


@pytest.mark.parametrize("equation", list(CASES))
@pytest.mark.parametrize("dtype", [DType.F64, DType.F32], ids=str)
def test_einsum_matches_numpy(device: Device, rng: np.random.Generator, dtype: DType, equation: str) -> None:
    arrays = [rng.uniform(-1.0, 1.0, shape).astype(dtype.numpy) for shape in CASES[equation]]
    expected = np.einsum(equation, *[a.astype(np.float64) for a in arrays])
    result = Tensor.einsum(equation, *[make(a, device) for a in arrays])
    check(result, expected, dtype, scale=10)


def test_einsum_of_int_tensors(device: Device, rng: np.random.Generator) -> None:
    a, b = rng.integers(-4, 4, (2, 3)), rng.integers(-4, 4, (3, 2))
    x, y = Tensor.from_data(a, device), Tensor.from_data(b, device)
    check(Tensor.einsum("ij,jk->ik", x, y), a @ b, x.dtype)


@pytest.mark.parametrize(
    ("equation", "shapes", "error", "message"),
    [
        ("ij,jk->ik", [(2, 3), (4, 5)], ValueError, "label 'j' has sizes 3 and 4"),
        ("ij->ik", [(2, 3)], ValueError, r"output labels \['k'\] appear in no operand"),
        ("ijk->i", [(2, 3)], ValueError, "labels 3 dims of an operand of rank 2"),
        ("ij,jk->ik", [(2, 3)], ValueError, "names 2 operands, got 1 tensors"),
        ("i1->i", [(2, 3)], ValueError, "labels are letters"),
        ("ij->ii", [(2, 2)], ValueError, "repeats a label"),
    ],
)
def test_einsum_errors(device: Device, equation: str, shapes: list[Any], error: type, message: str) -> None:
    with pytest.raises(error, match=f"einsum: .*{message}"):
        Tensor.einsum(equation, *[Tensor.ones(list(s), device) for s in shapes])


def test_einsum_checks_operands(device: Device) -> None:
    with pytest.raises(TypeError, match="einsum: dtypes differ"):
        Tensor.einsum("i,i->", Tensor.ones([2], device, DType.F32), Tensor.ones([2], device, DType.F64))
    with pytest.raises(TypeError, match="einsum: expected a Float or Int tensor"):
        Tensor.einsum("i->i", Tensor.from_data([True], device))
