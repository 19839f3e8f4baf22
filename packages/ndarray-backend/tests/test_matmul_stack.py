"""NdArray's matrix products (``burn_ndarray._matmul``): a contiguous stack times one matrix is one GEMM
over the stack's rows (NumPy's ``matmul`` makes one per matrix), with NumPy's values within f32 rounding;
strided stacks, stacks of matrices and other dtypes keep NumPy's ``matmul``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from burn_backend import Tensor
from burn_ndarray import NdArray, _matmul


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    seen: list[tuple[tuple[int, ...], tuple[int, ...]]] = []

    def matmul(lhs: Any, rhs: Any) -> Any:
        seen.append((lhs.shape, rhs.shape))
        return np.matmul(lhs, rhs)

    monkeypatch.setattr(_matmul, "np", SimpleNamespace(matmul=matmul, broadcast_shapes=np.broadcast_shapes))
    return seen


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_stack_times_a_matrix_is_one_gemm_over_its_rows(calls: list[Any], dtype: type) -> None:
    rng = np.random.default_rng(0)
    lhs = rng.standard_normal((4, 3, 17, 9)).astype(dtype)
    rhs = rng.standard_normal((9, 5)).astype(dtype)
    device = NdArray().device()
    got = Tensor.from_data(lhs, device).matmul(Tensor.from_data(rhs, device)).to_numpy()
    assert calls == [((4 * 3 * 17, 9), (9, 5))]
    # a matrix of a higher rank than the stack: the result has its leading dims
    calls.clear()
    assert _matmul.matmul(lhs[0], rhs.reshape(1, 1, 9, 5)).shape == (1, 3, 17, 5)
    assert calls == [((3 * 17, 9), (9, 5))]
    want = lhs.astype(np.float64) @ rhs.astype(np.float64)
    assert got.shape == (4, 3, 17, 5)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


def test_other_products_keep_numpys_matmul(calls: list[Any]) -> None:
    rng = np.random.default_rng(1)
    strided = np.swapaxes(rng.standard_normal((2, 9, 6)).astype(np.float32), 1, 2)  # [2, 6, 9], strided
    matrix = rng.standard_normal((9, 4)).astype(np.float32)
    stack = rng.standard_normal((2, 9, 4)).astype(np.float32)
    for lhs, rhs in ((strided, matrix), (strided, stack), (strided[0], matrix)):
        np.testing.assert_array_equal(_matmul.matmul(lhs, rhs), np.matmul(lhs, rhs))
    assert calls == [(strided.shape, matrix.shape), (strided.shape, stack.shape), ((6, 9), (9, 4))]
    ints = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(_matmul.matmul(ints, np.eye(4, dtype=ints.dtype)), ints)
