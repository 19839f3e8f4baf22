"""Ops that are the same CuPy code for every kind; each op group binds them under its own names.

Each function takes the backend (``self``) first, so a class body can bind it as a method:
``float_reshape = int_reshape = reshape``. Primitives are CuPy arrays (0-d for rank 0), never written
to: results that must differ from an input are fresh arrays. Nothing here reads device values on the
host, except where the result's shape depends on them (``bool_argwhere``, ``mask_select``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from burn_backend import Device, DType, IndexingUpdateOp, TensorData

from .._cupy import cp
from . import _scatter

Array = Any  # cupy.ndarray
_BF16 = DType.BF16.numpy
_BOOL = np.dtype(np.bool_)
_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)


# One generator per device index, shared by every Cuda object: backends are values, and two equal
# backends must draw from the same stream.
GENERATORS: dict[int, Any] = {}


def rng(device: Device) -> Any:
    """The random generator (a ``cupy.random.Generator``) of ``device``; call it on that device."""
    generator = GENERATORS.get(device.index)
    if generator is None:
        generator = GENERATORS[device.index] = cp.random.default_rng()
    return generator


def check_device(device: Device) -> None:
    """Raise unless ``device`` is a device of the Cuda backend."""
    if device.backend.name != "cuda":
        raise ValueError(f"cuda: {device} is not a device of this backend")


def from_data(self: Any, data: TensorData, device: Device) -> Array:
    check_device(device)
    with cp.cuda.Device(device.index):
        return cp.asarray(data.to_numpy())


def into_data(self: Any, tensor: Array) -> TensorData:
    return TensorData._wrap(cp.asnumpy(tensor))


def device_of(self: Any, tensor: Array) -> Device:
    device: Device = self.device(tensor.device.id)
    return device


def to_device(self: Any, tensor: Array, device: Device) -> Array:
    check_device(device)
    if tensor.device.id == device.index:
        return tensor
    with cp.cuda.Device(tensor.device.id):
        source = cp.ascontiguousarray(tensor)
    with cp.cuda.Device(device.index):
        out = cp.empty(source.shape, dtype=source.dtype)
        if source.nbytes:
            # a peer copy on the target's stream, ordered after the source's pending work by the sync
            cp.cuda.Device(tensor.device.id).synchronize()
            out.data.copy_from_device_async(source.data, source.nbytes)
        return out


def empty(self: Any, shape: tuple[int, ...], device: Device, dtype: Any) -> Array:
    return cp.empty(shape, dtype=dtype.numpy)


def full(self: Any, shape: tuple[int, ...], fill_value: Any, device: Device, dtype: Any) -> Array:
    return cp.full(shape, fill_value, dtype=dtype.numpy)


def reshape(self: Any, tensor: Array, shape: tuple[int, ...]) -> Array:
    return cp.reshape(tensor, shape)


def swap_dims(self: Any, tensor: Array, dim1: int, dim2: int) -> Array:
    return cp.swapaxes(tensor, dim1, dim2)


def permute(self: Any, tensor: Array, axes: Sequence[int]) -> Array:
    return cp.transpose(tensor, tuple(axes))


def flip(self: Any, tensor: Array, axes: Sequence[int]) -> Array:
    if not axes:
        return tensor
    return cp.flip(tensor, axis=tuple(axes))


def expand(self: Any, tensor: Array, shape: tuple[int, ...]) -> Array:
    return cp.broadcast_to(tensor, shape)


def unfold(self: Any, tensor: Array, dim: int, size: int, step: int) -> Array:
    shape = list(tensor.shape)
    strides = list(tensor.strides)
    count = max(0, (shape[dim] - size) // step + 1)
    window_stride = strides[dim]
    shape[dim] = count
    strides[dim] = window_stride * step
    return cp.lib.stride_tricks.as_strided(tensor, shape=(*shape, size), strides=(*strides, window_stride))


def cat(self: Any, tensors: Sequence[Array], dim: int) -> Array:
    return cp.concatenate(list(tensors), axis=dim)


def repeat_dim(self: Any, tensor: Array, dim: int, times: int) -> Array:
    reps = [1] * tensor.ndim
    reps[dim] = times
    return cp.tile(tensor, reps)


def slice_(self: Any, tensor: Array, slices: Sequence[slice]) -> Array:
    return tensor[tuple(slices)]


def slice_assign(self: Any, tensor: Array, slices: Sequence[slice], value: Array) -> Array:
    out = tensor.copy()
    out[tuple(slices)] = value
    return out


def gather(self: Any, tensor: Array, dim: int, indices: Array) -> Array:
    return cp.take_along_axis(tensor, indices, axis=dim)


def scatter_add(self: Any, tensor: Array, dim: int, indices: Array, values: Array) -> Array:
    return _scatter.along_axis(tensor, dim, indices, values, IndexingUpdateOp.ADD)


def select(self: Any, tensor: Array, dim: int, indices: Array) -> Array:
    return cp.take(tensor, indices, axis=dim)


def select_add(self: Any, tensor: Array, dim: int, indices: Array, values: Array) -> Array:
    return _scatter.select(tensor, dim, indices, values, IndexingUpdateOp.ADD)


def mask_where(self: Any, tensor: Array, mask: Array, value: Array) -> Array:
    return _keep_dtype(cp.where(mask, value, tensor), tensor.dtype)


def mask_fill(self: Any, tensor: Array, mask: Array, value: Any) -> Array:
    return _keep_dtype(cp.where(mask, tensor.dtype.type(value), tensor), tensor.dtype)


def _keep_dtype(result: Array, dtype: Any) -> Array:
    # CuPy 14's where promotes bf16 operands to f32; the values are bf16's, so converting back is exact
    return result if result.dtype == dtype else result.astype(dtype)


def equal(self: Any, lhs: Array, rhs: Array) -> Array:
    return cp.equal(lhs, rhs)


def equal_elem(self: Any, lhs: Array, rhs: Any) -> Array:
    return cp.equal(lhs, rhs)


def greater(self: Any, lhs: Array, rhs: Any) -> Array:
    return cp.greater(lhs, rhs)


def greater_equal(self: Any, lhs: Array, rhs: Any) -> Array:
    return cp.greater_equal(lhs, rhs)


def lower(self: Any, lhs: Array, rhs: Any) -> Array:
    return cp.less(lhs, rhs)


def lower_equal(self: Any, lhs: Array, rhs: Any) -> Array:
    return cp.less_equal(lhs, rhs)


def not_equal(self: Any, lhs: Array, rhs: Any) -> Array:
    return cp.not_equal(lhs, rhs)


def convert(tensor: Array, dtype: Any) -> Array:
    """``tensor`` as ``dtype`` (itself where it has it): conversions to and from bf16 go through f32
    unless one side is f32, the only one CuPy converts bf16 with in every build."""
    if tensor.dtype == dtype:
        return tensor
    if (tensor.dtype == _BF16 or dtype == _BF16) and _F32 not in (tensor.dtype, dtype):
        tensor = tensor.astype(_F32)
    return tensor.astype(dtype)


def sortable(tensor: Array) -> Array:
    """``tensor`` in a dtype CuPy's sorts and arg-reductions take, with the same order (bf16 -> f32,
    bool -> u8); the tensor itself where it needs no conversion."""
    if tensor.dtype == _BF16:
        return tensor.astype(np.float32)
    if tensor.dtype == _BOOL:
        return tensor.astype(np.uint8)
    return tensor


def argmax(self: Any, tensor: Array, dim: int) -> Array:
    return cp.argmax(sortable(tensor), axis=dim, keepdims=True).astype(self.int_dtype.numpy)


def argmin(self: Any, tensor: Array, dim: int) -> Array:
    return cp.argmin(sortable(tensor), axis=dim, keepdims=True).astype(self.int_dtype.numpy)


LOW_PRECISION = (DType.F16.numpy, DType.BF16.numpy)


def widen(tensor: Array) -> Array:
    """``tensor`` in the dtype to compute in: f32 for f16 and bf16, else itself (not a copy)."""
    return tensor.astype(_F32) if tensor.dtype in LOW_PRECISION else tensor


def narrow(result: Array, dtype: Any) -> Array:
    """``result`` (computed in ``widen``'s dtype) back in ``dtype``: itself where it has it."""
    return result if result.dtype == dtype else convert(result, dtype)


def max_(self: Any, tensor: Array) -> Array:
    return narrow(cp.max(sortable(tensor)), tensor.dtype).reshape(1)


def max_dim(self: Any, tensor: Array, dim: int) -> Array:
    return narrow(cp.max(sortable(tensor), axis=dim, keepdims=True), tensor.dtype)


def min_(self: Any, tensor: Array) -> Array:
    return narrow(cp.min(sortable(tensor)), tensor.dtype).reshape(1)


def min_dim(self: Any, tensor: Array, dim: int) -> Array:
    return narrow(cp.min(sortable(tensor), axis=dim, keepdims=True), tensor.dtype)


def max_dim_with_indices(self: Any, tensor: Array, dim: int) -> tuple[Array, Array]:
    indices = cp.argmax(sortable(tensor), axis=dim, keepdims=True)
    return cp.take_along_axis(tensor, indices, axis=dim), indices.astype(self.int_dtype.numpy)


def min_dim_with_indices(self: Any, tensor: Array, dim: int) -> tuple[Array, Array]:
    indices = cp.argmin(sortable(tensor), axis=dim, keepdims=True)
    return cp.take_along_axis(tensor, indices, axis=dim), indices.astype(self.int_dtype.numpy)


def scan(tensor: Array, dim: int, combine: Any) -> Array:
    """The inclusive scan of ``combine`` (an associative CuPy ufunc) along ``dim``: log2(n) passes of
    Hillis and Steele's doubling scan, each one element-wise op over the whole tensor."""
    size = tensor.shape[dim]
    out = tensor.copy()
    shift = 1
    while shift < size:
        head = [slice(None)] * tensor.ndim
        tail = [slice(None)] * tensor.ndim
        head[dim] = slice(None, size - shift)
        tail[dim] = slice(shift, None)
        step = out.copy()
        step[tuple(tail)] = combine(out[tuple(head)], out[tuple(tail)])
        out = step
        shift *= 2
    return out


def cummin(self: Any, tensor: Array, dim: int) -> Array:
    return narrow(scan(sortable(tensor), dim, cp.minimum), tensor.dtype)


def cummax(self: Any, tensor: Array, dim: int) -> Array:
    return narrow(scan(sortable(tensor), dim, cp.maximum), tensor.dtype)


def sort_with_indices(self: Any, tensor: Array, dim: int, descending: bool) -> tuple[Array, Array]:
    indices = argsort(self, tensor, dim, descending)
    return cp.take_along_axis(tensor, indices, axis=dim), indices


def argsort(self: Any, tensor: Array, dim: int, descending: bool) -> Array:
    if tensor.ndim == 0:
        return cp.zeros((), dtype=self.int_dtype.numpy)
    key = sortable(tensor)
    if key.dtype == _F16:  # sorted as f32: the same order, and every CuPy build sorts f32
        key = key.astype(_F32)
    if descending:
        # flipping, sorting stably and flipping back keeps equal values in their original order
        flipped = cp.flip(key, axis=dim)
        order = cp.argsort(flipped, axis=dim, kind="stable")
        size = tensor.shape[dim]
        indices = size - 1 - cp.flip(order, axis=dim)
    else:
        indices = cp.argsort(key, axis=dim, kind="stable")
    return indices.astype(self.int_dtype.numpy)


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
    return cp.any(tensor).reshape(1)


def any_dim(self: Any, tensor: Array, dim: int) -> Array:
    return cp.any(tensor, axis=dim, keepdims=True)


def all_(self: Any, tensor: Array) -> Array:
    return cp.all(tensor).reshape(1)


def all_dim(self: Any, tensor: Array, dim: int) -> Array:
    return cp.all(tensor, axis=dim, keepdims=True)


def scatter(
    self: Any, tensor: Array, dim: int, indices: Array, values: Array, update: IndexingUpdateOp
) -> Array:
    return _scatter.along_axis(tensor, dim, indices, values, update)


def gather_nd(self: Any, tensor: Array, indices: Array) -> Array:
    depth = indices.shape[-1]
    if depth == 0:
        return cp.broadcast_to(tensor, (*indices.shape[:-1], *tensor.shape)).copy()
    return tensor[tuple(indices[..., j] for j in range(depth))]


def scatter_nd(self: Any, tensor: Array, indices: Array, values: Array, update: IndexingUpdateOp) -> Array:
    return _scatter.nd(tensor, indices, values, update)


def mask_select(self: Any, tensor: Array, mask: Array) -> Array:
    # the result's length is the mask's count: CuPy reads it back from the device here
    return tensor[cp.ascontiguousarray(cp.broadcast_to(mask, tensor.shape))]
