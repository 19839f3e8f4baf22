"""NdArray's bool ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import DType

from . import _array as a

Array = Any


class BoolOps:
    """The bool op group on NumPy arrays."""

    int_dtype: DType
    float_dtype: DType

    bool_from_data = a.from_data
    bool_into_data = a.into_data
    bool_device = a.device_of
    bool_to_device = a.to_device
    bool_empty = a.empty
    bool_reshape = a.reshape
    bool_swap_dims = a.swap_dims
    bool_permute = a.permute
    bool_flip = a.flip
    bool_expand = a.expand
    bool_unfold = a.unfold
    bool_cat = a.cat
    bool_repeat_dim = a.repeat_dim
    bool_slice = a.slice_
    bool_slice_assign = a.slice_assign
    bool_gather = a.gather
    bool_select = a.select
    bool_mask_where = a.mask_where
    bool_scatter = a.scatter
    bool_gather_nd = a.gather_nd
    bool_scatter_nd = a.scatter_nd
    bool_mask_select = a.mask_select
    bool_mask_fill = a.mask_fill
    bool_equal = a.equal
    bool_equal_elem = a.equal_elem
    bool_not_equal = a.not_equal
    bool_not_equal_elem = a.not_equal
    bool_any = a.any_
    bool_any_dim = a.any_dim
    bool_all = a.all_
    bool_all_dim = a.all_dim

    def bool_zeros(self, shape: tuple[int, ...], device: Any, dtype: DType) -> Array:
        return np.zeros(shape, dtype=np.bool_)

    def bool_ones(self, shape: tuple[int, ...], device: Any, dtype: DType) -> Array:
        return np.ones(shape, dtype=np.bool_)

    def bool_into_int(self, tensor: Array, dtype: DType) -> Array:
        return np.asarray(tensor).astype(dtype.numpy)

    def bool_into_float(self, tensor: Array, dtype: DType) -> Array:
        return np.asarray(tensor).astype(dtype.numpy)

    def bool_not(self, tensor: Array) -> Array:
        return np.logical_not(tensor)

    def bool_and(self, lhs: Array, rhs: Array) -> Array:
        return np.logical_and(lhs, rhs)

    def bool_or(self, lhs: Array, rhs: Array) -> Array:
        return np.logical_or(lhs, rhs)

    def bool_xor(self, lhs: Array, rhs: Array) -> Array:
        return np.logical_xor(lhs, rhs)

    def bool_scatter_or(self, tensor: Array, dim: int, indices: Array, values: Array) -> Array:
        out = np.array(tensor, copy=True)
        np.logical_or.at(out, a.along_axis_index(indices, dim), values)
        return out

    def bool_select_or(self, tensor: Array, dim: int, indices: Array, values: Array) -> Array:
        out = np.array(tensor, copy=True)
        index: Any = (slice(None),) * dim + (indices,)
        np.logical_or.at(out, index, values)
        return out

    def bool_argwhere(self, tensor: Array) -> Array:
        return np.argwhere(tensor).astype(self.int_dtype.numpy)
