"""Cuda's bool ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import DType, IndexingUpdateOp

from .._cupy import cp
from . import _array as a
from . import _scatter

Array = Any


class BoolOps:
    """The bool op group on CuPy arrays."""

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
        return cp.zeros(shape, dtype=np.bool_)

    def bool_ones(self, shape: tuple[int, ...], device: Any, dtype: DType) -> Array:
        return cp.ones(shape, dtype=np.bool_)

    def bool_into_int(self, tensor: Array, dtype: DType) -> Array:
        return tensor.astype(dtype.numpy)

    def bool_into_float(self, tensor: Array, dtype: DType) -> Array:
        return a.convert(tensor, dtype.numpy)

    def bool_not(self, tensor: Array) -> Array:
        return cp.logical_not(tensor)

    def bool_and(self, lhs: Array, rhs: Array) -> Array:
        return cp.logical_and(lhs, rhs)

    def bool_or(self, lhs: Array, rhs: Array) -> Array:
        return cp.logical_or(lhs, rhs)

    def bool_xor(self, lhs: Array, rhs: Array) -> Array:
        return cp.logical_xor(lhs, rhs)

    def bool_scatter_or(self, tensor: Array, dim: int, indices: Array, values: Array) -> Array:
        return _scatter.along_axis(tensor, dim, indices, values, IndexingUpdateOp.ADD)

    def bool_select_or(self, tensor: Array, dim: int, indices: Array, values: Array) -> Array:
        return _scatter.select(tensor, dim, indices, values, IndexingUpdateOp.ADD)

    def bool_argwhere(self, tensor: Array) -> Array:
        # the result's length is the count of true values: CuPy reads it back from the device here
        if tensor.ndim == 0:
            return cp.argwhere(tensor.reshape(1))[:, :0].astype(self.int_dtype.numpy)
        return cp.argwhere(tensor).astype(self.int_dtype.numpy)
