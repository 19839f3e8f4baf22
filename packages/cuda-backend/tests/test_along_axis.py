"""Indexing along one axis in one kernel (``burn_cuda._ops._along_axis``), against NumPy (on a GPU). The
conformance suite checks ``gather`` and ``scatter`` themselves on every Cuda stack."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

from burn_backend import IndexingUpdateOp
from burn_cuda._cupy import cp, unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")

SHAPE = (3, 5, 4)


def _indices(rng: np.random.Generator, dim: int, count: int, dtype: Any) -> np.ndarray[Any, Any]:
    shape = list(SHAPE)
    shape[dim] = count
    return rng.integers(0, SHAPE[dim], shape).astype(dtype)


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize(
    "dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int64, np.int32, np.uint8, np.bool_]
)
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_gather_takes_along_the_axis(dim: int, dtype: Any, index_dtype: Any) -> None:
    from burn_cuda._ops import _along_axis

    rng = np.random.default_rng(dim)
    x = (rng.standard_normal(SHAPE) * 10).astype(dtype)
    for count in (1, 3, 7):
        indices = _indices(rng, dim, count, index_dtype)
        assert _along_axis.fits(SHAPE, dim, cp.asarray(indices))
        out = _along_axis.gather(cp.asarray(x), dim, cp.asarray(indices))
        expected = np.take_along_axis(x, indices.astype(np.int64), axis=dim)
        assert out.dtype == x.dtype
        assert out.shape == expected.shape
        np.testing.assert_array_equal(cp.asnumpy(out).view(np.uint8), expected.view(np.uint8))


def test_gather_reads_strided_tensors_and_wraps_negative_indices() -> None:
    from burn_cuda._ops import _along_axis

    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    strided = cp.asarray(x.T.copy()).T  # x's values, column-major
    indices = rng.integers(-6, 6, (4, 9))
    out = _along_axis.gather(strided, 1, cp.asarray(indices))
    np.testing.assert_array_equal(cp.asnumpy(out), np.take_along_axis(x, indices % 6, axis=1))


def test_gather_of_no_indices_is_empty() -> None:
    from burn_cuda._ops import _along_axis

    out = _along_axis.gather(cp.ones((2, 3), dtype=np.float32), 1, cp.zeros((2, 0), dtype=np.int64))
    assert out.shape == (2, 0)


def test_fits_only_indices_with_the_tensors_shape_outside_the_axis() -> None:
    from burn_cuda._ops import _along_axis

    assert _along_axis.fits((3, 5), 1, cp.zeros((3, 2), dtype=np.int64))
    assert not _along_axis.fits((3, 5), 1, cp.zeros((2, 2), dtype=np.int64))  # fewer rows
    assert not _along_axis.fits((3, 5), 1, cp.zeros((3, 2), dtype=np.float32))  # not integers
    assert not _along_axis.fits((3, 0), 1, cp.zeros((3, 2), dtype=np.int64))  # nothing along dim
    assert not _along_axis.fits((3, 5), 1, cp.zeros((3, 5, 1), dtype=np.int64))  # another rank


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_positions_are_the_flat_c_order_positions(dim: int) -> None:
    from burn_cuda._ops import _along_axis

    rng = np.random.default_rng(10 + dim)
    indices = _indices(rng, dim, 6, np.int32)
    grid = list(np.indices(indices.shape))
    grid[dim] = indices
    expected = np.ravel_multi_index(tuple(grid), SHAPE).reshape(-1)
    out = _along_axis.positions(SHAPE, dim, cp.asarray(indices))
    np.testing.assert_array_equal(cp.asnumpy(out), expected)


@pytest.mark.parametrize("update", [IndexingUpdateOp.ADD, IndexingUpdateOp.ASSIGN, IndexingUpdateOp.MAX])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.float16])
def test_scatter_along_the_axis_combines_duplicates(update: IndexingUpdateOp, dtype: Any) -> None:
    from burn_cuda._ops import _scatter

    rng = np.random.default_rng(3)
    tensor = (rng.standard_normal((4, 6)) * 10).astype(dtype)
    indices = rng.integers(0, 6, (4, 9))  # nine updates into six places: duplicates in every row
    values = (rng.standard_normal((4, 9)) * 10).astype(dtype)
    out = _scatter.along_axis(cp.asarray(tensor), 1, cp.asarray(indices), cp.asarray(values), update)
    expected = tensor.astype(np.float64)  # the reference, from the same (rounded) inputs
    rows = np.broadcast_to(np.arange(4)[:, None], indices.shape)
    if update is IndexingUpdateOp.ASSIGN:
        for row, column, value in zip(rows.ravel(), indices.ravel(), values.ravel(), strict=True):
            expected[row, column] = value  # the last value wins
    else:
        ufunc = np.add if update is IndexingUpdateOp.ADD else np.maximum
        ufunc.at(expected, (rows, indices), values.astype(np.float64))
    bound = np.zeros_like(expected)  # assignments, maxima and int sums are exact
    if update is IndexingUpdateOp.ADD and dtype != np.int64:
        # atomic adds in no fixed order: each of at most nine roundings (f16 sums in f32) errs by at most
        # an ulp of the partial sum, no larger than the sum of magnitudes; f16 then rounds once more
        magnitude = np.abs(tensor).astype(np.float64)
        np.add.at(magnitude, (rows, indices), np.abs(values).astype(np.float64))
        bound = 9 * np.finfo(np.float32 if dtype == np.float16 else dtype).eps * magnitude
        if dtype == np.float16:
            bound += np.finfo(np.float16).eps * np.abs(expected)
    assert np.all(np.abs(cp.asnumpy(out).astype(np.float64) - expected) <= bound)
    assert out.dtype == dtype
