"""Masks and the indexing of Bool tensors: mask_where and mask_fill on every kind with Bool masks that
broadcast; on Bool tensors also gather, select, and scatter and select_assign (which or, where
numeric kinds add), slice_assign and slice_fill."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Slice, Tensor
from burn_backend.testing import FLOAT_DTYPES, INT_DTYPES, check, make, random_array, require_dtype
from burn_backend.testing.core._common import LAYOUTS, f64, index_tensor, laid_out

MASK_SHAPES = [((3, 4), (3, 4)), ((3, 4), (3, 1)), ((2, 3, 4), (1, 3, 1)), ((0, 4), (1, 4)), ((), ())]


@pytest.mark.parametrize(
    ("shape", "mask_shape"), MASK_SHAPES, ids=["same", "column", "rank3", "empty", "rank0"]
)
@pytest.mark.parametrize("dtype", [*FLOAT_DTYPES, *INT_DTYPES, DType.BOOL])
def test_mask_where_and_fill(
    device: Device,
    rng: np.random.Generator,
    dtype: DType,
    shape: tuple[int, ...],
    mask_shape: tuple[int, ...],
) -> None:
    require_dtype(device, dtype)
    a, v = random_array(rng, shape, dtype, 0, 50), random_array(rng, shape, dtype, 0, 50)
    mask = rng.random(mask_shape) < 0.5
    fill: bool | int = True if dtype is DType.BOOL else 7
    check(make(a, device).mask_where(make(mask, device), make(v, device)), np.where(mask, v, a), dtype)
    check(make(a, device).mask_fill(make(mask, device), fill), np.where(mask, fill, a), dtype)


@pytest.mark.parametrize("fill", [True, False, 1, 0])
def test_mask_fill_of_bool_tensors(device: Device, rng: np.random.Generator, fill: bool | int) -> None:
    a, mask = random_array(rng, (4, 5), DType.BOOL), random_array(rng, (4, 5), DType.BOOL)
    check(make(a, device).mask_fill(make(mask, device), fill), np.where(mask, bool(fill), a), DType.BOOL)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_bool_masks_of_laid_out_bool_tensors(device: Device, rng: np.random.Generator, layout: str) -> None:
    a, v, mask = (random_array(rng, (4, 3), DType.BOOL) for _ in range(3))
    tensor = laid_out(a, device, layout)
    check(
        tensor.mask_where(laid_out(mask, device, layout), laid_out(v, device, "swapped")),
        np.where(mask, v, a),
        DType.BOOL,
    )
    check(tensor.mask_fill(laid_out(mask, device, "flipped"), False), np.where(mask, False, a), DType.BOOL)


def test_masks_from_comparisons(device: Device, rng: np.random.Generator) -> None:
    x = random_array(rng, (4, 5), DType.F32)
    tensor = make(x, device)
    check(tensor.mask_fill(tensor < 0, 0.0), np.maximum(f64(x), 0.0), DType.F32)
    check(tensor.mask_where(tensor > 1, tensor * 0.5), np.where(x > 1, f64(x) * 0.5, f64(x)), DType.F32)


# -- indexing Bool tensors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(device: Device, rng: np.random.Generator, dim: int) -> None:
    a = random_array(rng, (3, 4, 5), DType.BOOL)
    shape = [3, 4, 5]
    shape[dim] = 6
    indices = rng.integers(0, a.shape[dim], shape)
    check(
        make(a, device).gather(dim, index_tensor(indices, device)),
        np.take_along_axis(a, indices, dim),
        DType.BOOL,
    )


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_ors(device: Device, rng: np.random.Generator, dim: int) -> None:
    a = random_array(rng, (3, 4, 5), DType.BOOL)
    shape = [3, 4, 5]
    shape[dim] = 6
    indices = rng.integers(0, a.shape[dim], shape)
    v = random_array(rng, shape, DType.BOOL)
    expected = a.copy()
    for position in np.ndindex(*shape):
        target = list(position)
        target[dim] = indices[position]
        expected[tuple(target)] |= v[position]
    check(make(a, device).scatter(dim, index_tensor(indices, device), make(v, device)), expected, DType.BOOL)


def test_scatter_never_clears(device: Device) -> None:
    tensor = Tensor.from_data([[True, False, True]], device)
    indices = index_tensor([[0, 1, 1]], device)
    check(
        tensor.scatter(1, indices, Tensor.from_data([[False, False, True]], device)),
        [[True, True, True]],
        DType.BOOL,
    )


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_select_and_select_assign(device: Device, rng: np.random.Generator, dim: int) -> None:
    a = random_array(rng, (3, 4, 5), DType.BOOL)
    indices = rng.integers(0, a.shape[dim], 4)
    check(make(a, device).select(dim, index_tensor(indices, device)), np.take(a, indices, dim), DType.BOOL)
    shape = [3, 4, 5]
    shape[dim] = 4
    v = random_array(rng, shape, DType.BOOL)
    expected = a.copy()
    for i, index in enumerate(indices):
        target: list[Any] = [slice(None)] * 3
        source: list[Any] = [slice(None)] * 3
        target[dim], source[dim] = index, i
        expected[tuple(target)] |= v[tuple(source)]
    check(
        make(a, device).select_assign(dim, index_tensor(indices, device), make(v, device)),
        expected,
        DType.BOOL,
    )


def test_slice_assign_and_fill(device: Device, rng: np.random.Generator) -> None:
    a, v = random_array(rng, (4, 5), DType.BOOL), random_array(rng, (2, 5), DType.BOOL)
    expected = a.copy()
    expected[3::-2] = v
    check(make(a, device).slice_assign([Slice(0, 4, -2)], make(v, device)), expected, DType.BOOL)
    filled = a.copy()
    filled[:, 1:3] = True
    check(make(a, device).slice_fill([slice(None), slice(1, 3)], True), filled, DType.BOOL)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_indexing_of_laid_out_bool_tensors(device: Device, rng: np.random.Generator, layout: str) -> None:
    a = random_array(rng, (4, 3), DType.BOOL)
    indices = rng.integers(0, 3, (4, 2))
    tensor = laid_out(a, device, layout)
    check(tensor.gather(1, index_tensor(indices, device)), np.take_along_axis(a, indices, 1), DType.BOOL)
    check(tensor.select(0, index_tensor([2, 2, 0], device)), a[[2, 2, 0]], DType.BOOL)
    check(tensor[1:, ::-1], a[1:, ::-1], DType.BOOL)
