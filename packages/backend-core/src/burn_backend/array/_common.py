"""Ops that are the same code for every kind; each op group binds them under its own names.

Each function takes the backend (``self``, an ``ArrayBackend``) first, so a class body can bind it as a
method: ``float_reshape = int_reshape = reshape``. Primitives are arrays of the backend's namespace
``self.xp`` and are never written to: results that must differ from an input are fresh arrays.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .._data import TensorData
from .._device import Device
from .._dtype import DType
from .._options import IndexingUpdateOp

Array = Any
# a set: membership compares hashes first, so another library's dtype (array_api_strict's warn when
# compared with NumPy's) never meets NumPy's bf16, and it is quicker than ==
_BF16 = frozenset({DType.BF16.numpy})


def from_data(self: Any, data: TensorData, device: Device) -> Array:
    self.check_device(device)
    with self.runtime.on_device(device.index):
        return self.runtime.from_host(data.to_numpy(), device)


def into_data(self: Any, tensor: Array) -> TensorData:
    return TensorData._wrap(self.runtime.to_host(tensor))


def device_of(self: Any, tensor: Array) -> Device:
    device: Device = self.device(self.runtime.device_index(tensor))
    return device


def to_device(self: Any, tensor: Array, device: Device) -> Array:
    self.check_device(device)
    return self.runtime.move(tensor, device.index)


def cast(self: Any, tensor: Array, dtype: DType) -> Array:
    return self.runtime.cast(tensor, self.runtime.dtype(dtype))


def empty(self: Any, shape: tuple[int, ...], device: Device, dtype: DType) -> Array:
    with self.runtime.on_device(device.index):
        return self.xp.empty(shape, dtype=self.runtime.dtype(dtype))


def full(self: Any, shape: tuple[int, ...], fill_value: Any, device: Device, dtype: DType) -> Array:
    with self.runtime.on_device(device.index):
        return self.xp.full(shape, fill_value, dtype=self.runtime.dtype(dtype))


def reshape(self: Any, tensor: Array, shape: tuple[int, ...]) -> Array:
    return self.xp.reshape(tensor, shape)


def swap_dims(self: Any, tensor: Array, dim1: int, dim2: int) -> Array:
    axes = list(range(tensor.ndim))
    axes[dim1], axes[dim2] = dim2, dim1
    return self.xp.permute_dims(tensor, tuple(axes))


def permute(self: Any, tensor: Array, axes: Sequence[int]) -> Array:
    return self.xp.permute_dims(tensor, tuple(axes))


def flip(self: Any, tensor: Array, axes: Sequence[int]) -> Array:
    if not axes:
        return tensor
    return self.xp.flip(tensor, axis=tuple(axes))


def expand(self: Any, tensor: Array, shape: tuple[int, ...]) -> Array:
    return self.xp.broadcast_to(tensor, shape)


def unfold(self: Any, tensor: Array, dim: int, size: int, step: int) -> Array:
    return self.runtime.windows(tensor, dim, size, step)


def cat(self: Any, tensors: Sequence[Array], dim: int) -> Array:
    return self.xp.concat(list(tensors), axis=dim)


def repeat_dim(self: Any, tensor: Array, dim: int, times: int) -> Array:
    reps = [1] * tensor.ndim
    reps[dim] = times
    return self.xp.tile(tensor, tuple(reps))


def slice_(self: Any, tensor: Array, slices: Sequence[slice]) -> Array:
    return tensor[tuple(slices)]


def slice_assign(self: Any, tensor: Array, slices: Sequence[slice], value: Array) -> Array:
    out = self.xp.asarray(tensor, copy=True)
    out[tuple(slices)] = value
    return out


def gather(self: Any, tensor: Array, dim: int, indices: Array) -> Array:
    return self.runtime.gather(tensor, dim, indices)


def scatter(
    self: Any, tensor: Array, dim: int, indices: Array, values: Array, update: IndexingUpdateOp
) -> Array:
    return self.runtime.scatter(tensor, dim, indices, values, update)


def scatter_add(self: Any, tensor: Array, dim: int, indices: Array, values: Array) -> Array:
    return self.runtime.scatter(tensor, dim, indices, values, IndexingUpdateOp.ADD)


def select(self: Any, tensor: Array, dim: int, indices: Array) -> Array:
    return self.xp.take(tensor, indices, axis=dim)


def select_add(self: Any, tensor: Array, dim: int, indices: Array, values: Array) -> Array:
    return self.runtime.select_update(tensor, dim, indices, values, IndexingUpdateOp.ADD)


def gather_nd(self: Any, tensor: Array, indices: Array) -> Array:
    depth = indices.shape[-1]
    if depth == 0:
        return self.xp.asarray(self.xp.broadcast_to(tensor, (*indices.shape[:-1], *tensor.shape)), copy=True)
    if depth == tensor.ndim:
        return tensor[tuple(indices[..., j] for j in range(depth))]
    # the standard indexes with integer arrays on every dim or on none: the first dims become one
    shape = tensor.shape
    index = self.runtime.cast(indices, self.runtime.dtype(DType.I64))
    rows = index[..., 0]
    for j in range(1, depth):
        rows = rows * shape[j] + index[..., j]
    table = self.xp.reshape(tensor, (math.prod(shape[:depth]), *shape[depth:]))
    picked = self.xp.take(table, self.xp.reshape(rows, (-1,)), axis=0)
    return self.xp.reshape(picked, (*indices.shape[:-1], *shape[depth:]))


def scatter_nd(self: Any, tensor: Array, indices: Array, values: Array, update: IndexingUpdateOp) -> Array:
    return self.runtime.scatter_nd(tensor, indices, values, update)


def mask_select(self: Any, tensor: Array, mask: Array) -> Array:
    # the result's length is the mask's count: a device backend reads it back here
    return tensor[self.xp.broadcast_to(mask, tensor.shape)]


def mask_where(self: Any, tensor: Array, mask: Array, value: Array) -> Array:
    return self.runtime.cast(self.xp.where(mask, value, tensor), tensor.dtype)


def mask_fill(self: Any, tensor: Array, mask: Array, value: Any) -> Array:
    fill = self.xp.asarray(value, dtype=tensor.dtype)
    return self.runtime.cast(self.xp.where(mask, fill, tensor), tensor.dtype)


def equal(self: Any, lhs: Array, rhs: Any) -> Array:
    return lhs == rhs


def not_equal(self: Any, lhs: Array, rhs: Any) -> Array:
    return lhs != rhs


def greater(self: Any, lhs: Array, rhs: Any) -> Array:
    if lhs.dtype in _BF16:  # ml_dtypes' bf16 comparisons warn on NaN
        with self.runtime.quiet():
            return lhs > rhs
    return lhs > rhs


def greater_equal(self: Any, lhs: Array, rhs: Any) -> Array:
    if lhs.dtype in _BF16:
        with self.runtime.quiet():
            return lhs >= rhs
    return lhs >= rhs


def lower(self: Any, lhs: Array, rhs: Any) -> Array:
    if lhs.dtype in _BF16:
        with self.runtime.quiet():
            return lhs < rhs
    return lhs < rhs


def lower_equal(self: Any, lhs: Array, rhs: Any) -> Array:
    if lhs.dtype in _BF16:
        with self.runtime.quiet():
            return lhs <= rhs
    return lhs <= rhs


def _indices(self: Any, indices: Array) -> Array:
    return self.runtime.cast(indices, self.runtime.dtype(self.int_dtype))


def argmax(self: Any, tensor: Array, dim: int) -> Array:
    return _indices(self, self.xp.argmax(self.runtime.sortable(tensor), axis=dim, keepdims=True))


def argmin(self: Any, tensor: Array, dim: int) -> Array:
    return _indices(self, self.xp.argmin(self.runtime.sortable(tensor), axis=dim, keepdims=True))


def max_(self: Any, tensor: Array) -> Array:
    maximum = self.xp.max(self.runtime.sortable(tensor))
    return self.runtime.cast(self.xp.reshape(maximum, (1,)), tensor.dtype)


def max_dim(self: Any, tensor: Array, dim: int) -> Array:
    key = self.runtime.sortable(tensor)
    return self.runtime.cast(self.xp.max(key, axis=dim, keepdims=True), tensor.dtype)


def min_(self: Any, tensor: Array) -> Array:
    minimum = self.xp.min(self.runtime.sortable(tensor))
    return self.runtime.cast(self.xp.reshape(minimum, (1,)), tensor.dtype)


def min_dim(self: Any, tensor: Array, dim: int) -> Array:
    key = self.runtime.sortable(tensor)
    return self.runtime.cast(self.xp.min(key, axis=dim, keepdims=True), tensor.dtype)


def max_dim_with_indices(self: Any, tensor: Array, dim: int) -> tuple[Array, Array]:
    indices = self.xp.argmax(self.runtime.sortable(tensor), axis=dim, keepdims=True)
    return self.xp.take_along_axis(tensor, indices, axis=dim), _indices(self, indices)


def min_dim_with_indices(self: Any, tensor: Array, dim: int) -> tuple[Array, Array]:
    indices = self.xp.argmin(self.runtime.sortable(tensor), axis=dim, keepdims=True)
    return self.xp.take_along_axis(tensor, indices, axis=dim), _indices(self, indices)


def cummin(self: Any, tensor: Array, dim: int) -> Array:
    key = self.runtime.sortable(tensor)
    return self.runtime.cast(self.runtime.scan(key, dim, self.xp.minimum), tensor.dtype)


def cummax(self: Any, tensor: Array, dim: int) -> Array:
    key = self.runtime.sortable(tensor)
    return self.runtime.cast(self.runtime.scan(key, dim, self.xp.maximum), tensor.dtype)


def argsort(self: Any, tensor: Array, dim: int, descending: bool) -> Array:
    xp = self.xp
    if tensor.ndim == 0:
        return xp.zeros((), dtype=self.runtime.dtype(self.int_dtype))
    key = self.runtime.sortable(tensor)
    if descending:
        # flipping, sorting stably and flipping back keeps equal values in their original order
        order = self.runtime.argsort(xp.flip(key, axis=dim), dim)
        indices = (tensor.shape[dim] - 1) - xp.flip(order, axis=dim)
    else:
        indices = self.runtime.argsort(key, dim)
    return _indices(self, indices)


def sort_with_indices(self: Any, tensor: Array, dim: int, descending: bool) -> tuple[Array, Array]:
    indices = argsort(self, tensor, dim, descending)
    if tensor.ndim == 0:
        return tensor, indices
    return self.xp.take_along_axis(tensor, indices, axis=dim), indices


def sort(self: Any, tensor: Array, dim: int, descending: bool) -> Array:
    return sort_with_indices(self, tensor, dim, descending)[0]


def topk_with_indices(self: Any, tensor: Array, dim: int, k: int) -> tuple[Array, Array]:
    values, indices = sort_with_indices(self, tensor, dim, True)
    index = [slice(None)] * tensor.ndim
    index[dim] = slice(0, k)
    return values[tuple(index)], indices[tuple(index)]


def topk(self: Any, tensor: Array, dim: int, k: int) -> Array:
    return topk_with_indices(self, tensor, dim, k)[0]


def argtopk(self: Any, tensor: Array, dim: int, k: int) -> Array:
    return topk_with_indices(self, tensor, dim, k)[1]


def any_(self: Any, tensor: Array) -> Array:
    return self.xp.reshape(self.xp.any(tensor), (1,))


def any_dim(self: Any, tensor: Array, dim: int) -> Array:
    return self.xp.any(tensor, axis=dim, keepdims=True)


def all_(self: Any, tensor: Array) -> Array:
    return self.xp.reshape(self.xp.all(tensor), (1,))


def all_dim(self: Any, tensor: Array, dim: int) -> Array:
    return self.xp.all(tensor, axis=dim, keepdims=True)
