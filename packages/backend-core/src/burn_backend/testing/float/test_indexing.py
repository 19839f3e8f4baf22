"""Indexing Float tensors: slice (Python and Burn semantics), __getitem__, slice_assign, slice_fill,
gather, scatter and select_assign (both add, as in Burn), select, mask_where, mask_fill, argwhere."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Slice, Tensor
from burn_backend.testing import FLOAT_DTYPES, check, make, random_array, require_dtype
from burn_backend.testing.core._common import LAYOUTS, f64, index_tensor, laid_out

SHAPE = (4, 5, 3)


def burn_positions(piece: Any, size: int) -> list[int]:
    """The positions a range selects from a dim of ``size``, written out independently of the library:
    an int keeps its dim, Python slices and ranges follow Python, ``Slice`` walks its clamped range by
    its step (backwards from the end for a negative step)."""
    if isinstance(piece, Slice):

        def bound(index: int) -> int:
            return min(max(index + size if index < 0 else index, 0), size)

        first, last = bound(piece.start), size if piece.end is None else bound(piece.end)
        return list(range(first, last))[:: piece.step]
    if isinstance(piece, (slice, range)):
        return list(range(size))[slice(piece.start, piece.stop, piece.step)]
    index = piece + size if piece < 0 else piece
    return [index]


def reference_slice(array: np.ndarray, ranges: list[Any]) -> np.ndarray:
    out = array
    for dim, piece in enumerate(ranges):
        out = np.take(out, burn_positions(piece, array.shape[dim]), axis=dim)
    return out


RANGES = [
    [slice(1, 3)],
    [slice(None), slice(0, 5, 2)],
    [1],
    [-1, 2],
    [slice(None, None, -1)],
    [slice(3, 0, -2), slice(None), 0],
    [Slice(0, 4, -1)],
    [Slice(1, None, -2), Slice(-3, None)],
    [Slice(0, 5, 2), Slice(1, 4, -1), Slice()],
    [range(0, 4, 3), range(4, -1, -1)],
    [slice(2, 2)],
    [slice(5, 10)],
    [slice(-10, 10), slice(1, -1)],
    [Slice(-10, 10, 3)],
]
RANGE_IDS = [
    "rows", "step", "int", "ints", "reverse", "python-negative-step", "burn-reverse", "burn-negative-steps",
    "burn-mixed", "ranges", "empty", "past-the-end", "clamped", "burn-clamped",
]  # fmt: skip


@pytest.mark.parametrize("ranges", RANGES, ids=RANGE_IDS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_slice(device: Device, rng: np.random.Generator, dtype: DType, ranges: list[Any]) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, SHAPE, dtype)
    check(make(a, device).slice(ranges), reference_slice(f64(a), ranges), dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("ranges", RANGES[:9], ids=RANGE_IDS[:9])
def test_slice_of_laid_out_inputs(
    device: Device, rng: np.random.Generator, ranges: list[Any], layout: str
) -> None:
    a = random_array(rng, SHAPE, DType.F32)
    check(laid_out(a, device, layout).slice(ranges), reference_slice(f64(a), ranges), DType.F32)


def test_slice_takes_a_single_range(device: Device, rng: np.random.Generator) -> None:
    a = random_array(rng, SHAPE, DType.F32)
    check(make(a, device).slice(slice(1, 3)), f64(a)[1:3], DType.F32)
    check(make(a, device).slice(Slice(0, 4, -1)), f64(a)[::-1], DType.F32)
    check(make(a, device).slice(2), f64(a)[2:3], DType.F32)


def test_negative_step_walks_the_range_backwards(device: Device) -> None:
    tensor = Tensor.arange(6, device=device)
    int_dtype = device.backend.int_dtype
    check(tensor.slice(Slice(0, 5, -1)), [4, 3, 2, 1, 0], int_dtype)
    check(tensor.slice(Slice(1, None, -2)), [5, 3, 1], int_dtype)
    check(tensor.slice(Slice(0, 6, -4)), [5, 1], int_dtype)
    check(tensor.slice(slice(4, 0, -2)), [4, 2], int_dtype)


KEYS = [
    (1, lambda a: a[1:2]),
    (-1, lambda a: a[-1:]),
    ((1, 2), lambda a: a[1:2, 2:3]),
    ((slice(None), 1), lambda a: a[:, 1:2]),
    ((Ellipsis, 0), lambda a: a[..., 0:1]),
    ((0, Ellipsis), lambda a: a[0:1]),
    ((0, Ellipsis, 1), lambda a: a[0:1, :, 1:2]),
    (slice(None, None, 2), lambda a: a[::2]),
    (slice(None, None, -1), lambda a: a[::-1]),
    ((slice(1, None), slice(None, None, -2)), lambda a: a[1:, ::-2]),
    (Slice(0, 4, -1), lambda a: a[::-1]),
    (Ellipsis, lambda a: a),
]


@pytest.mark.parametrize(("key", "reference"), KEYS, ids=[str(k) for k, _ in KEYS])
def test_getitem_keeps_every_dim(device: Device, rng: np.random.Generator, key: Any, reference: Any) -> None:
    a = random_array(rng, SHAPE, DType.F32)
    result = make(a, device)[key]
    assert result.rank == len(SHAPE)
    check(result, reference(f64(a)), DType.F32)


# -- slice_assign, slice_fill ---------------------------------------------------------------------------
ASSIGNS = [
    [slice(1, 3)],
    [0, slice(None), 1],
    [slice(None, None, 2), slice(0, 5, 3)],
    [Slice(0, 4, -2)],
    [slice(3, None, -1), Slice(1, 4, -1)],
    [slice(2, 2)],
]


@pytest.mark.parametrize(
    "ranges", ASSIGNS, ids=["rows", "ints", "steps", "burn-reverse", "reversed", "empty"]
)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_slice_assign(device: Device, rng: np.random.Generator, dtype: DType, ranges: list[Any]) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, SHAPE, dtype)
    positions = [burn_positions(r, s) for r, s in zip(ranges, SHAPE)]
    positions += [list(range(s)) for s in SHAPE[len(ranges) :]]
    region = tuple(len(p) for p in positions)
    v = random_array(rng, region, dtype, 5.0, 9.0)
    expected = f64(a).copy()
    for index in itertools.product(*(range(n) for n in region)):
        expected[tuple(p[i] for p, i in zip(positions, index))] = f64(v)[index]
    tensor = make(a, device)
    check(tensor.slice_assign(ranges, make(v, device)), expected, dtype)
    check(tensor, f64(a), dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_slice_assign_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    a, v = random_array(rng, (4, 3), DType.F32), random_array(rng, (2, 3), DType.F32)
    expected = f64(a).copy()
    expected[1:3] = f64(v)
    result = laid_out(a, device, layout).slice_assign([slice(1, 3)], laid_out(v, device, layout))
    check(result, expected, DType.F32)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_slice_fill(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, SHAPE, dtype)
    expected = f64(a).copy()
    expected[1:3, ::2] = 7.5
    check(make(a, device).slice_fill([slice(1, 3), slice(None, None, 2)], 7.5), expected, dtype)
    expected = f64(a).copy()
    expected[-1] = -1.0
    check(make(a, device).slice_fill(-1, -1.0), expected, dtype)


# -- gather, scatter -----------------------------------------------------------------------------------
def gather_reference(a: np.ndarray, dim: int, indices: np.ndarray) -> np.ndarray:
    out = np.empty(indices.shape)
    for position in itertools.product(*(range(n) for n in indices.shape)):
        source = list(position)
        source[dim] = indices[position]
        out[position] = a[tuple(source)]
    return out


def scatter_reference(a: np.ndarray, dim: int, indices: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = a.copy()
    for position in itertools.product(*(range(n) for n in indices.shape)):
        target = list(position)
        target[dim] = indices[position]
        out[tuple(target)] += v[position]
    scattered: np.ndarray = out
    return scattered


GATHER_DIMS = [0, 1, 2, -1]


@pytest.mark.parametrize("dim", GATHER_DIMS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_gather(device: Device, rng: np.random.Generator, dtype: DType, dim: int) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, SHAPE, dtype)
    shape = list(SHAPE)
    shape[dim] = 6
    indices = rng.integers(0, SHAPE[dim], shape)
    check(
        make(a, device).gather(dim, index_tensor(indices, device)),
        gather_reference(f64(a), dim, indices),
        dtype,
    )


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_gather_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    a = random_array(rng, (4, 3), DType.F32)
    indices = rng.integers(0, 3, (4, 5))
    result = laid_out(a, device, layout).gather(
        1, laid_out(indices, device, layout, device.backend.int_dtype)
    )
    check(result, gather_reference(f64(a), 1, indices), DType.F32)


def test_gather_with_empty_indices(device: Device, rng: np.random.Generator) -> None:
    a = random_array(rng, (3, 4), DType.F32)
    check(
        make(a, device).gather(1, index_tensor(np.zeros((3, 0), np.int64), device)),
        np.zeros((3, 0)),
        DType.F32,
    )


@pytest.mark.parametrize("dim", GATHER_DIMS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_scatter_adds(device: Device, rng: np.random.Generator, dtype: DType, dim: int) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, SHAPE, dtype)
    shape = list(SHAPE)
    shape[dim] = 6  # more updates than positions: duplicates add up
    indices = rng.integers(0, SHAPE[dim], shape)
    v = random_array(rng, shape, dtype)
    expected = scatter_reference(f64(a), dim, indices, f64(v))
    result = make(a, device).scatter(dim, index_tensor(indices, device), make(v, device))
    check(result, expected, dtype, scale=6)
    check(
        make(a, device).scatter_add(dim, index_tensor(indices, device), make(v, device)),
        expected,
        dtype,
        scale=6,
    )


def test_scatter_example(device: Device) -> None:
    tensor = Tensor.zeros([2, 3], device, DType.F32)
    indices = index_tensor([[0, 0, 2], [1, 1, 1]], device)
    updates = Tensor.from_data([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device, DType.F32)
    check(tensor.scatter(1, indices, updates), [[3.0, 0.0, 3.0], [0.0, 15.0, 0.0]], DType.F32)


# -- select, select_assign -------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, 2, -2])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_select(device: Device, rng: np.random.Generator, dtype: DType, dim: int) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, SHAPE, dtype)
    indices = rng.integers(0, SHAPE[dim], 7)
    check(
        make(a, device).select(dim, index_tensor(indices, device)), np.take(f64(a), indices, axis=dim), dtype
    )


def test_select_with_no_indices(device: Device, rng: np.random.Generator) -> None:
    a = random_array(rng, SHAPE, DType.F32)
    check(
        make(a, device).select(1, index_tensor(np.zeros(0, np.int64), device)), np.zeros((4, 0, 3)), DType.F32
    )


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_select_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    a = random_array(rng, (4, 3), DType.F32)
    indices = np.array([3, 0, 3, 1, 2])
    result = laid_out(a, device, layout).select(
        0, laid_out(indices, device, layout, device.backend.int_dtype)
    )
    check(result, f64(a)[indices], DType.F32)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_select_assign_adds(device: Device, rng: np.random.Generator, dtype: DType, dim: int) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, SHAPE, dtype)
    indices = rng.integers(0, SHAPE[dim], 5)  # five slices into fewer positions: duplicates add up
    shape = list(SHAPE)
    shape[dim] = 5
    v = random_array(rng, shape, dtype)
    expected = f64(a).copy()
    for i, index in enumerate(indices):
        target: list[Any] = [slice(None)] * 3
        source: list[Any] = [slice(None)] * 3
        target[dim], source[dim] = index, i
        expected[tuple(target)] += f64(v)[tuple(source)]
    result = make(a, device).select_assign(dim, index_tensor(indices, device), make(v, device))
    check(result, expected, dtype, scale=5)


# -- masks ---------------------------------------------------------------------------------------------------
MASK_SHAPES = [
    ((3, 4), (3, 4), (3, 4)),
    ((3, 4), (3, 1), (1, 4)),
    ((3, 4), (1, 4), (3, 4)),
    ((0, 4), (1, 4), (1, 4)),
]


@pytest.mark.parametrize(
    ("shape", "mask_shape", "values_shape"), MASK_SHAPES, ids=["same", "broadcast", "mask-row", "empty"]
)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_mask_where(
    device: Device,
    rng: np.random.Generator,
    dtype: DType,
    shape: tuple[int, ...],
    mask_shape: tuple[int, ...],
    values_shape: tuple[int, ...],
) -> None:
    require_dtype(device, dtype)
    a, v = random_array(rng, shape, dtype), random_array(rng, values_shape, dtype)
    mask = rng.random(mask_shape) < 0.5
    expected = np.where(mask, f64(v), f64(a))
    check(make(a, device).mask_where(make(mask, device), make(v, device)), expected, dtype)


@pytest.mark.parametrize(
    ("shape", "mask_shape"), [((3, 4), (3, 4)), ((3, 4), (3, 1)), ((2, 3, 4), (1, 3, 1))], ids=str
)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_mask_fill(
    device: Device,
    rng: np.random.Generator,
    dtype: DType,
    shape: tuple[int, ...],
    mask_shape: tuple[int, ...],
) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, shape, dtype)
    mask = rng.random(mask_shape) < 0.5
    check(make(a, device).mask_fill(make(mask, device), -3.5), np.where(mask, -3.5, f64(a)), dtype)
    check(make(a, device).mask_fill(make(mask, device), 2), np.where(mask, 2.0, f64(a)), dtype)


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_masks_of_laid_out_inputs(device: Device, rng: np.random.Generator, layout: str) -> None:
    a, v = random_array(rng, (4, 3), DType.F32), random_array(rng, (4, 3), DType.F32)
    mask = rng.random((4, 3)) < 0.5
    tensor, mask_tensor = laid_out(a, device, layout), laid_out(mask, device, layout)
    check(tensor.mask_where(mask_tensor, laid_out(v, device, layout)), np.where(mask, v, a), DType.F32)
    check(tensor.mask_fill(mask_tensor, 0.0), np.where(mask, 0.0, a), DType.F32)


def test_mask_fill_with_nan_and_infinity(device: Device) -> None:
    tensor = Tensor.from_data([1.0, 2.0, 3.0], device, DType.F32)
    mask = Tensor.from_data([True, False, True], device)
    filled = tensor.mask_fill(mask, float("nan")).to_numpy()
    assert np.isnan(filled[0])
    assert np.isnan(filled[2])
    assert filled[1] == 2.0
    assert tensor.mask_fill(mask, float("inf")).to_numpy().tolist() == [np.inf, 2.0, np.inf]


# -- argwhere, nonzero ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 2), (0, 3)], ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_argwhere_and_nonzero(
    device: Device, rng: np.random.Generator, dtype: DType, shape: tuple[int, ...]
) -> None:
    require_dtype(device, dtype)
    a = random_array(rng, shape, dtype)
    a[rng.random(shape) < 0.4] = 0
    int_dtype = device.backend.int_dtype
    check(make(a, device).argwhere(), np.argwhere(a), int_dtype)
    for found, axis in zip(make(a, device).nonzero(), np.nonzero(a)):
        check(found, axis, int_dtype)
