"""Ops that are the same NumPy code for every kind; each op group binds them under its own names.

Each function takes the backend (``self``) first, so a class body can bind it as a method:
``float_reshape = int_reshape = reshape``. Primitives are NumPy arrays (or NumPy scalars for rank 0)
and are never written to: results that must differ from an input are fresh arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from burn_backend import Device, DType, IndexingUpdateOp, TensorData

Array = Any  # np.ndarray or a NumPy scalar (rank 0)
_BF16 = DType.BF16.numpy


# One generator per device index, shared by every NdArray object: backends are values, and two equal
# backends must draw from the same stream.
GENERATORS: dict[int, np.random.Generator] = {}


def rng(device: Device) -> np.random.Generator:
    """The random generator of ``device``."""
    generator = GENERATORS.get(device.index)
    if generator is None:
        generator = GENERATORS[device.index] = np.random.default_rng()
    return generator


def check_device(device: Device) -> None:
    """Raise unless ``device`` is a device of the NdArray backend."""
    if device.backend.name != "ndarray" or device.index != 0:
        raise ValueError(f"ndarray: {device} is not a device of this backend (ndarray:0)")


def from_data(self: Any, data: TensorData, device: Device) -> Array:
    check_device(device)
    return data.to_numpy()


def into_data(self: Any, tensor: Array) -> TensorData:
    return TensorData._wrap(tensor)


def device_of(self: Any, tensor: Array) -> Device:
    device: Device = self.device(0)
    return device


def to_device(self: Any, tensor: Array, device: Device) -> Array:
    check_device(device)
    return tensor


def empty(self: Any, shape: tuple[int, ...], device: Device, dtype: Any) -> Array:
    return np.empty(shape, dtype=dtype.numpy)


def full(self: Any, shape: tuple[int, ...], fill_value: Any, device: Device, dtype: Any) -> Array:
    return np.full(shape, fill_value, dtype=dtype.numpy)


def reshape(self: Any, tensor: Array, shape: tuple[int, ...]) -> Array:
    return np.reshape(tensor, shape)


def swap_dims(self: Any, tensor: Array, dim1: int, dim2: int) -> Array:
    return np.swapaxes(tensor, dim1, dim2)


def permute(self: Any, tensor: Array, axes: Sequence[int]) -> Array:
    return np.transpose(tensor, axes)


def flip(self: Any, tensor: Array, axes: Sequence[int]) -> Array:
    return np.flip(tensor, axis=tuple(axes))


def expand(self: Any, tensor: Array, shape: tuple[int, ...]) -> Array:
    return np.broadcast_to(tensor, shape)


def unfold(self: Any, tensor: Array, dim: int, size: int, step: int) -> Array:
    windows = sliding_window_view(tensor, size, axis=dim)
    if step == 1:
        return windows
    index = [slice(None)] * windows.ndim
    index[dim] = slice(None, None, step)
    return windows[tuple(index)]


def cat(self: Any, tensors: Sequence[Array], dim: int) -> Array:
    return np.concatenate(tensors, axis=dim)


def repeat_dim(self: Any, tensor: Array, dim: int, times: int) -> Array:
    reps = [1] * np.ndim(tensor)
    reps[dim] = times
    return np.tile(tensor, reps)


def slice_(self: Any, tensor: Array, slices: Sequence[slice]) -> Array:
    return tensor[tuple(slices)]


def slice_assign(self: Any, tensor: Array, slices: Sequence[slice], value: Array) -> Array:
    out = np.array(tensor, copy=True)
    out[tuple(slices)] = value
    return out


def gather(self: Any, tensor: Array, dim: int, indices: Array) -> Array:
    return np.take_along_axis(tensor, indices, axis=dim)


def along_axis_index(indices: Array, dim: int) -> tuple[Array, ...]:
    """The fancy index that addresses ``out[..., indices[...], ...]`` at every position of ``indices``."""
    grids = list(np.indices(indices.shape, sparse=True))
    grids[dim] = indices
    return tuple(grids)


def scatter_add(self: Any, tensor: Array, dim: int, indices: Array, values: Array) -> Array:
    out = np.array(tensor, copy=True)
    np.add.at(out, along_axis_index(indices, dim), values)
    return out


def select(self: Any, tensor: Array, dim: int, indices: Array) -> Array:
    return np.take(tensor, indices, axis=dim)


def select_add(self: Any, tensor: Array, dim: int, indices: Array, values: Array) -> Array:
    out = np.array(tensor, copy=True)
    index: Any = (slice(None),) * dim + (indices,)
    np.add.at(out, index, values)
    return out


def mask_where(self: Any, tensor: Array, mask: Array, value: Array) -> Array:
    return np.where(mask, value, tensor)


def mask_fill(self: Any, tensor: Array, mask: Array, value: Any) -> Array:
    return np.where(mask, tensor.dtype.type(value), tensor)


def equal(self: Any, lhs: Array, rhs: Array) -> Array:
    return np.equal(lhs, rhs)


def equal_elem(self: Any, lhs: Array, rhs: Any) -> Array:
    return np.equal(lhs, rhs)


def greater(self: Any, lhs: Array, rhs: Any) -> Array:
    if lhs.dtype == _BF16:  # ml_dtypes' bf16 comparisons warn on NaN
        with np.errstate(all="ignore"):
            return np.greater(lhs, rhs)
    return np.greater(lhs, rhs)


def greater_equal(self: Any, lhs: Array, rhs: Any) -> Array:
    if lhs.dtype == _BF16:  # ml_dtypes' bf16 comparisons warn on NaN
        with np.errstate(all="ignore"):
            return np.greater_equal(lhs, rhs)
    return np.greater_equal(lhs, rhs)


def lower(self: Any, lhs: Array, rhs: Any) -> Array:
    if lhs.dtype == _BF16:  # ml_dtypes' bf16 comparisons warn on NaN
        with np.errstate(all="ignore"):
            return np.less(lhs, rhs)
    return np.less(lhs, rhs)


def lower_equal(self: Any, lhs: Array, rhs: Any) -> Array:
    if lhs.dtype == _BF16:  # ml_dtypes' bf16 comparisons warn on NaN
        with np.errstate(all="ignore"):
            return np.less_equal(lhs, rhs)
    return np.less_equal(lhs, rhs)


def not_equal(self: Any, lhs: Array, rhs: Any) -> Array:
    return np.not_equal(lhs, rhs)


def argmax(self: Any, tensor: Array, dim: int) -> Array:
    return np.argmax(tensor, axis=dim, keepdims=True).astype(self.int_dtype.numpy)


def argmin(self: Any, tensor: Array, dim: int) -> Array:
    return np.argmin(tensor, axis=dim, keepdims=True).astype(self.int_dtype.numpy)


def max_(self: Any, tensor: Array) -> Array:
    return np.max(tensor).reshape(1)


def max_dim(self: Any, tensor: Array, dim: int) -> Array:
    return np.max(tensor, axis=dim, keepdims=True)


def min_(self: Any, tensor: Array) -> Array:
    return np.min(tensor).reshape(1)


def min_dim(self: Any, tensor: Array, dim: int) -> Array:
    return np.min(tensor, axis=dim, keepdims=True)


def max_dim_with_indices(self: Any, tensor: Array, dim: int) -> tuple[Array, Array]:
    indices = np.argmax(tensor, axis=dim, keepdims=True)
    return np.take_along_axis(tensor, indices, axis=dim), indices.astype(self.int_dtype.numpy)


def min_dim_with_indices(self: Any, tensor: Array, dim: int) -> tuple[Array, Array]:
    indices = np.argmin(tensor, axis=dim, keepdims=True)
    return np.take_along_axis(tensor, indices, axis=dim), indices.astype(self.int_dtype.numpy)


def cummin(self: Any, tensor: Array, dim: int) -> Array:
    return np.minimum.accumulate(tensor, axis=dim)


def cummax(self: Any, tensor: Array, dim: int) -> Array:
    return np.maximum.accumulate(tensor, axis=dim)


def sort_with_indices(self: Any, tensor: Array, dim: int, descending: bool) -> tuple[Array, Array]:
    indices = argsort(self, tensor, dim, descending)
    return np.take_along_axis(tensor, indices, axis=dim), indices


def argsort(self: Any, tensor: Array, dim: int, descending: bool) -> Array:
    if descending:
        # flipping, sorting stably and flipping back keeps equal values in their original order
        flipped = np.flip(tensor, axis=dim)
        order = np.argsort(flipped, axis=dim, kind="stable")
        size = np.shape(tensor)[dim]
        indices = size - 1 - np.flip(order, axis=dim)
    else:
        indices = np.argsort(tensor, axis=dim, kind="stable")
    return indices.astype(self.int_dtype.numpy)


def sort(self: Any, tensor: Array, dim: int, descending: bool) -> Array:
    return sort_with_indices(self, tensor, dim, descending)[0]


def topk_with_indices(self: Any, tensor: Array, dim: int, k: int) -> tuple[Array, Array]:
    values, indices = sort_with_indices(self, tensor, dim, True)
    index = [slice(None)] * np.ndim(tensor)
    index[dim] = slice(0, k)
    return values[tuple(index)], indices[tuple(index)]


def topk(self: Any, tensor: Array, dim: int, k: int) -> Array:
    return topk_with_indices(self, tensor, dim, k)[0]


def argtopk(self: Any, tensor: Array, dim: int, k: int) -> Array:
    return topk_with_indices(self, tensor, dim, k)[1]


def any_(self: Any, tensor: Array) -> Array:
    return np.array([np.any(tensor)])


def any_dim(self: Any, tensor: Array, dim: int) -> Array:
    return np.any(tensor, axis=dim, keepdims=True)


def all_(self: Any, tensor: Array) -> Array:
    return np.array([np.all(tensor)])


def all_dim(self: Any, tensor: Array, dim: int) -> Array:
    return np.all(tensor, axis=dim, keepdims=True)


_UPDATE_UFUNCS: dict[IndexingUpdateOp, Any] = {
    IndexingUpdateOp.ADD: np.add,
    IndexingUpdateOp.MUL: np.multiply,
    IndexingUpdateOp.MIN: np.minimum,
    IndexingUpdateOp.MAX: np.maximum,
}


def _update_at(out: Array, index: Any, values: Array, update: IndexingUpdateOp) -> Array:
    with np.errstate(all="ignore"):
        if update is IndexingUpdateOp.ASSIGN:
            out[index] = values
        else:
            _UPDATE_UFUNCS[update].at(out, index, values)
    return out


def scatter(
    self: Any, tensor: Array, dim: int, indices: Array, values: Array, update: IndexingUpdateOp
) -> Array:
    return _update_at(np.array(tensor, copy=True), along_axis_index(indices, dim), values, update)


def gather_nd(self: Any, tensor: Array, indices: Array) -> Array:
    return np.asarray(tensor)[tuple(np.moveaxis(indices, -1, 0))]


def scatter_nd(self: Any, tensor: Array, indices: Array, values: Array, update: IndexingUpdateOp) -> Array:
    return _update_at(np.array(tensor, copy=True), tuple(np.moveaxis(indices, -1, 0)), values, update)


def mask_select(self: Any, tensor: Array, mask: Array) -> Array:
    return np.asarray(tensor)[np.broadcast_to(mask, np.shape(tensor))]
