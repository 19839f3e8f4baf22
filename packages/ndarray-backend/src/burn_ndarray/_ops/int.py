"""NdArray's int ops (bitwise ops included)."""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import Device, Distribution, DType

from . import _array as a
from .float import sample

Array = Any


class IntOps:
    """The int op group on NumPy arrays."""

    int_dtype: DType
    float_dtype: DType

    int_from_data = a.from_data
    int_into_data = a.into_data
    int_device = a.device_of
    int_to_device = a.to_device
    int_empty = a.empty
    int_full = a.full
    int_reshape = a.reshape
    int_swap_dims = a.swap_dims
    int_permute = a.permute
    int_flip = a.flip
    int_expand = a.expand
    int_unfold = a.unfold
    int_cat = a.cat
    int_repeat_dim = a.repeat_dim
    int_slice = a.slice_
    int_slice_assign = a.slice_assign
    int_gather = a.gather
    int_scatter_add = a.scatter_add
    int_select = a.select
    int_select_add = a.select_add
    int_mask_where = a.mask_where
    int_scatter = a.scatter
    int_gather_nd = a.gather_nd
    int_scatter_nd = a.scatter_nd
    int_mask_select = a.mask_select
    int_mask_fill = a.mask_fill
    int_equal = a.equal
    int_equal_elem = a.equal_elem
    int_not_equal = a.not_equal
    int_not_equal_elem = a.not_equal
    int_greater = a.greater
    int_greater_elem = a.greater
    int_greater_equal = a.greater_equal
    int_greater_equal_elem = a.greater_equal
    int_lower = a.lower
    int_lower_elem = a.lower
    int_lower_equal = a.lower_equal
    int_lower_equal_elem = a.lower_equal
    int_argmax = a.argmax
    int_argmin = a.argmin
    int_max = a.max_
    int_max_dim = a.max_dim
    int_min = a.min_
    int_min_dim = a.min_dim
    int_max_dim_with_indices = a.max_dim_with_indices
    int_min_dim_with_indices = a.min_dim_with_indices
    int_cummin = a.cummin
    int_cummax = a.cummax
    int_sort = a.sort
    int_sort_with_indices = a.sort_with_indices
    int_argsort = a.argsort
    int_topk = a.topk
    int_topk_with_indices = a.topk_with_indices
    int_argtopk = a.argtopk
    int_any = a.any_
    int_any_dim = a.any_dim
    int_all = a.all_
    int_all_dim = a.all_dim

    def int_random(
        self, shape: tuple[int, ...], distribution: Distribution, device: Device, dtype: DType
    ) -> Array:
        rng = a.rng(device)
        if distribution.kind == "uniform":
            return rng.integers(int(distribution.low), int(distribution.high), shape, dtype=dtype.numpy)
        if distribution.kind == "default":
            info = np.iinfo(dtype.numpy)
            return rng.integers(info.min, info.max, shape, dtype=dtype.numpy, endpoint=True)
        return np.trunc(sample(rng, shape, distribution)).astype(dtype.numpy)

    def int_into_float(self, tensor: Array, dtype: DType) -> Array:
        return np.asarray(tensor).astype(dtype.numpy)

    def int_cast(self, tensor: Array, dtype: DType) -> Array:
        return np.asarray(tensor).astype(dtype.numpy)

    def int_add(self, lhs: Array, rhs: Array) -> Array:
        return lhs + rhs

    def int_add_scalar(self, lhs: Array, rhs: int) -> Array:
        return lhs + rhs

    def int_sub(self, lhs: Array, rhs: Array) -> Array:
        return lhs - rhs

    def int_sub_scalar(self, lhs: Array, rhs: int) -> Array:
        return lhs - rhs

    def int_mul(self, lhs: Array, rhs: Array) -> Array:
        return lhs * rhs

    def int_mul_scalar(self, lhs: Array, rhs: int) -> Array:
        return lhs * rhs

    def int_div(self, lhs: Array, rhs: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.floor_divide(lhs, rhs)

    def int_div_scalar(self, lhs: Array, rhs: int) -> Array:
        with np.errstate(all="ignore"):
            return np.floor_divide(lhs, rhs)

    def int_remainder(self, lhs: Array, rhs: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.remainder(lhs, rhs)

    def int_remainder_scalar(self, lhs: Array, rhs: int) -> Array:
        with np.errstate(all="ignore"):
            return np.remainder(lhs, rhs)

    def int_matmul(self, lhs: Array, rhs: Array) -> Array:
        return np.matmul(lhs, rhs)

    def int_abs(self, tensor: Array) -> Array:
        return np.abs(tensor)

    def int_neg(self, tensor: Array) -> Array:
        return np.negative(tensor)

    def int_sign(self, tensor: Array) -> Array:
        return np.sign(tensor)

    def int_clamp(self, tensor: Array, minimum: int, maximum: int) -> Array:
        return np.clip(tensor, minimum, maximum)

    def int_clamp_min(self, tensor: Array, minimum: int) -> Array:
        return np.maximum(tensor, minimum)

    def int_clamp_max(self, tensor: Array, maximum: int) -> Array:
        return np.minimum(tensor, maximum)

    def int_powi(self, lhs: Array, rhs: Array) -> Array:
        return np.power(lhs, rhs.astype(lhs.dtype))

    def int_powi_scalar(self, tensor: Array, exponent: int) -> Array:
        if exponent < 0:
            raise ValueError(f"int_powi_scalar: negative exponent {exponent} on an int tensor")
        return np.power(tensor, exponent)

    def int_sum(self, tensor: Array) -> Array:
        return np.sum(tensor, dtype=tensor.dtype).reshape(1)

    def int_sum_dim(self, tensor: Array, dim: int) -> Array:
        return np.sum(tensor, axis=dim, keepdims=True, dtype=tensor.dtype)

    def int_prod(self, tensor: Array) -> Array:
        return np.prod(tensor, dtype=tensor.dtype).reshape(1)

    def int_prod_dim(self, tensor: Array, dim: int) -> Array:
        return np.prod(tensor, axis=dim, keepdims=True, dtype=tensor.dtype)

    def int_mean(self, tensor: Array) -> Array:
        return (
            np.floor_divide(np.sum(tensor, dtype=np.int64), max(np.size(tensor), 1))
            .astype(tensor.dtype)
            .reshape(1)
        )

    def int_mean_dim(self, tensor: Array, dim: int) -> Array:
        total = np.sum(tensor, axis=dim, keepdims=True, dtype=np.int64)
        return np.floor_divide(total, max(np.shape(tensor)[dim], 1)).astype(tensor.dtype)

    def int_cumsum(self, tensor: Array, dim: int) -> Array:
        return np.cumsum(tensor, axis=dim, dtype=tensor.dtype)

    def int_cumprod(self, tensor: Array, dim: int) -> Array:
        return np.cumprod(tensor, axis=dim, dtype=tensor.dtype)

    def int_max_abs(self, tensor: Array) -> Array:
        return np.max(np.abs(tensor)).reshape(1)

    def int_max_abs_dim(self, tensor: Array, dim: int) -> Array:
        return np.max(np.abs(tensor), axis=dim, keepdims=True)

    def bitwise_and(self, lhs: Array, rhs: Array) -> Array:
        return np.bitwise_and(lhs, rhs)

    def bitwise_and_scalar(self, lhs: Array, rhs: int) -> Array:
        return np.bitwise_and(lhs, rhs)

    def bitwise_or(self, lhs: Array, rhs: Array) -> Array:
        return np.bitwise_or(lhs, rhs)

    def bitwise_or_scalar(self, lhs: Array, rhs: int) -> Array:
        return np.bitwise_or(lhs, rhs)

    def bitwise_xor(self, lhs: Array, rhs: Array) -> Array:
        return np.bitwise_xor(lhs, rhs)

    def bitwise_xor_scalar(self, lhs: Array, rhs: int) -> Array:
        return np.bitwise_xor(lhs, rhs)

    def bitwise_not(self, tensor: Array) -> Array:
        return np.invert(tensor)

    def bitwise_left_shift(self, lhs: Array, rhs: Array) -> Array:
        return np.left_shift(lhs, rhs.astype(lhs.dtype))

    def bitwise_left_shift_scalar(self, lhs: Array, rhs: int) -> Array:
        return np.left_shift(lhs, rhs)

    def bitwise_right_shift(self, lhs: Array, rhs: Array) -> Array:
        return np.right_shift(lhs, rhs.astype(lhs.dtype))

    def bitwise_right_shift_scalar(self, lhs: Array, rhs: int) -> Array:
        return np.right_shift(lhs, rhs)
