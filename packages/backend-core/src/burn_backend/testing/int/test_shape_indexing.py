"""Layout and indexing ops on Int tensors of every int dtype: reshape, swap_dims, permute, flip,
expand, unfold, repeat, transpose, tril, slice, slice_assign, gather, scatter and select_assign (which
add), select, mask_where, mask_fill."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from burn_backend import Device, DType, Slice, Tensor
from burn_backend.testing import INT_DTYPES, check, make, require_dtype
from burn_backend.testing.core._common import LAYOUTS, index_tensor, ints, laid_out

SHAPE = (3, 4, 2)

LAYOUT_OPS: dict[str, tuple[Callable[[Tensor], Tensor], Callable[[np.ndarray], Any]]] = {
    "reshape": (lambda t: t.reshape([4, -1]), lambda a: a.reshape(4, -1)),
    "swap_dims": (lambda t: t.swap_dims(0, 2), lambda a: np.swapaxes(a, 0, 2)),
    "permute": (lambda t: t.permute([1, 2, 0]), lambda a: np.transpose(a, (1, 2, 0))),
    "flip": (lambda t: t.flip([0, -1]), lambda a: np.flip(a, (0, 2))),
    "transpose": (lambda t: t.transpose(), lambda a: np.swapaxes(a, 1, 2)),
    "expand": (
        lambda t: t.slice([slice(0, 1)]).expand([5, 4, 2]),
        lambda a: np.broadcast_to(a[0:1], (5, 4, 2)),
    ),
    "unfold": (lambda t: t.unfold(1, 2, 2), lambda a: sliding_window_view(a, 2, axis=1)[:, ::2]),
    "repeat_dim": (lambda t: t.repeat_dim(2, 3), lambda a: np.tile(a, (1, 1, 3))),
    "cat": (lambda t: Tensor.cat([t, t.flip([1])], 1), lambda a: np.concatenate([a, np.flip(a, 1)], 1)),
    "stack": (lambda t: Tensor.stack([t, t], -1), lambda a: np.stack([a, a], -1)),
    "tril": (lambda t: t.tril(), lambda a: np.tril(a)),
    "triu": (lambda t: t.triu(1), lambda a: np.triu(a, 1)),
    "slice": (lambda t: t.slice([Slice(0, 3, -2), slice(1, None)]), lambda a: a[2::-2][:, 1:]),
    "getitem": (lambda t: t[1, ::-1], lambda a: a[1:2, ::-1]),
    "narrow": (lambda t: t.narrow(1, 1, 2), lambda a: a[:, 1:3]),
    "squeeze": (lambda t: t[0].squeeze_dim(0), lambda a: a[0]),
    "flatten": (lambda t: t.flatten(1, 2), lambda a: a.reshape(3, 8)),
}


@pytest.mark.parametrize("op", list(LAYOUT_OPS))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_layout(device: Device, rng: np.random.Generator, dtype: DType, op: str) -> None:
    require_dtype(device, dtype)
    method, reference = LAYOUT_OPS[op]
    a = ints(rng, SHAPE, dtype, -100, 100)
    check(method(make(a, device)), reference(a), dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("op", ["reshape", "swap_dims", "flip", "unfold", "repeat_dim", "cat", "slice"])
def test_layout_of_laid_out_inputs(device: Device, rng: np.random.Generator, op: str, layout: str) -> None:
    dtype = device.backend.int_dtype
    method, reference = LAYOUT_OPS[op]
    a = ints(rng, SHAPE, dtype, -100, 100)
    check(method(laid_out(a, device, layout)), reference(a), dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_slice_assign(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a, v = ints(rng, SHAPE, dtype, 0, 50), ints(rng, (2, 4, 1), dtype, 60, 90)
    expected = a.copy()
    expected[2::-2, :, 1:] = v
    result = make(a, device).slice_assign([Slice(0, 3, -2), slice(None), slice(1, 2)], make(v, device))
    check(result, expected, dtype)
    filled = a.copy()
    filled[1] = 7
    check(make(a, device).slice_fill(1, 7), filled, dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_gather_and_select(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = ints(rng, SHAPE, dtype, -100, 100)
    gather_indices = rng.integers(0, 4, (3, 6, 2))
    check(
        make(a, device).gather(1, index_tensor(gather_indices, device)),
        np.take_along_axis(a, gather_indices, 1),
        dtype,
    )
    select_indices = np.array([2, 0, 2, 1])
    check(make(a, device).select(0, index_tensor(select_indices, device)), a[select_indices], dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_scatter_and_select_assign_add(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = ints(rng, SHAPE, dtype, 0, 20)
    indices = rng.integers(0, 4, (3, 6, 2))
    v = ints(rng, (3, 6, 2), dtype, 0, 10)
    expected = a.astype(np.int64)
    for i, j, k in np.ndindex(*indices.shape):
        expected[i, indices[i, j, k], k] += int(v[i, j, k])
    check(make(a, device).scatter(1, index_tensor(indices, device), make(v, device)), expected, dtype)

    rows = np.array([1, 1, 0])
    w = ints(rng, (3, 4, 2), dtype, 0, 10)
    expected = a.astype(np.int64)
    for i, row in enumerate(rows):
        expected[row] += w[i].astype(np.int64)
    check(make(a, device).select_assign(0, index_tensor(rows, device), make(w, device)), expected, dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_masks(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a, v = ints(rng, SHAPE, dtype, 0, 50), ints(rng, (1, 4, 1), dtype, 60, 90)
    mask = rng.random((3, 1, 2)) < 0.5
    check(make(a, device).mask_where(make(mask, device), make(v, device)), np.where(mask, v, a), dtype)
    check(make(a, device).mask_fill(make(mask, device), 9), np.where(mask, 9, a), dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_indexing_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    dtype = device.backend.int_dtype
    a = ints(rng, (4, 3), dtype, -9, 9)
    mask = rng.random((4, 3)) < 0.5
    tensor = laid_out(a, device, layout)
    indices = rng.integers(0, 3, (4, 3))
    check(
        tensor.gather(1, laid_out(indices, device, layout, dtype)), np.take_along_axis(a, indices, 1), dtype
    )
    check(tensor.mask_fill(laid_out(mask, device, layout), 0), np.where(mask, 0, a), dtype)
    check(tensor.select(0, index_tensor([3, 1], device)), a[[3, 1]], dtype)


def test_argwhere_of_ints(device: Device) -> None:
    tensor = Tensor.from_data([[0, 3], [-1, 0]], device)
    check(tensor.argwhere(), [[0, 1], [1, 0]], device.backend.int_dtype)
