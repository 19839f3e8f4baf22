"""Cuda's int ops (bitwise ops included)."""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import Device, Distribution, DType

from .._cupy import cp
from . import _array as a
from .float import sample

Array = Any


def _random_bits(generator: Any, shape: tuple[int, ...], dtype: Any) -> Array:
    """Uniform values over the whole range of the int ``dtype``: 64 random bits per value (two draws of
    32), truncated to the dtype's width and reinterpreted as its signedness."""
    scale = float(1 << 32)
    high = (generator.random(shape, dtype=np.float64) * scale).astype(np.uint64)
    low = (generator.random(shape, dtype=np.float64) * scale).astype(np.uint64)
    bits = (high << np.uint64(32)) | low
    unsigned = np.dtype(f"u{dtype.itemsize}")
    return bits.astype(unsigned).view(dtype)


# the answer of ``tensor (op) scalar`` for every element when the scalar lies above / below the dtype
_BEYOND_THE_DTYPE = {
    "equal": (False, False),
    "not_equal": (True, True),
    "greater": (False, True),
    "greater_equal": (False, True),
    "lower": (True, False),
    "lower_equal": (True, False),
}


def _compare_scalar(name: str, compare: Any) -> Any:
    """``compare(self, tensor, scalar)``, answered on the host where the Python int lies beyond the
    tensor's dtype (CuPy cannot convert one beyond 64 bits, nor compare with it)."""

    def method(self: Any, lhs: Array, rhs: int) -> Array:
        info = np.iinfo(lhs.dtype)
        if info.min <= rhs <= info.max:
            return compare(self, lhs, rhs)
        above, below = _BEYOND_THE_DTYPE[name]
        return cp.full(lhs.shape, above if rhs > info.max else below, dtype=np.bool_)

    method.__name__ = f"int_{name}_elem"
    return method


class IntOps:
    """The int op group on CuPy arrays."""

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
    int_equal_elem = _compare_scalar("equal", a.equal_elem)
    int_not_equal = a.not_equal
    int_not_equal_elem = _compare_scalar("not_equal", a.not_equal)
    int_greater = a.greater
    int_greater_elem = _compare_scalar("greater", a.greater)
    int_greater_equal = a.greater_equal
    int_greater_equal_elem = _compare_scalar("greater_equal", a.greater_equal)
    int_lower = a.lower
    int_lower_elem = _compare_scalar("lower", a.lower)
    int_lower_equal = a.lower_equal
    int_lower_equal_elem = _compare_scalar("lower_equal", a.lower_equal)
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
        with cp.cuda.Device(device.index):
            generator = a.rng(device)
            if distribution.kind == "uniform":
                low, high = int(distribution.low), int(distribution.high)
                span = float(high - low)
                offset = cp.floor(generator.random(shape, dtype=np.float64) * span)
                # u * span can round up to span itself: keep the draws below ``high``
                offset = cp.minimum(offset, max(span - 1.0, 0.0)).astype(np.int64)
                return (offset + low).astype(dtype.numpy)
            if distribution.kind == "default":
                return _random_bits(generator, shape, dtype.numpy)
            return cp.trunc(sample(generator, shape, distribution)).astype(dtype.numpy)

    def int_into_float(self, tensor: Array, dtype: DType) -> Array:
        return a.convert(tensor, dtype.numpy)

    def int_cast(self, tensor: Array, dtype: DType) -> Array:
        return tensor.astype(dtype.numpy)

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
        return cp.floor_divide(lhs, rhs)

    def int_div_scalar(self, lhs: Array, rhs: int) -> Array:
        return cp.floor_divide(lhs, rhs)

    def int_remainder(self, lhs: Array, rhs: Array) -> Array:
        return cp.remainder(lhs, rhs)

    def int_remainder_scalar(self, lhs: Array, rhs: int) -> Array:
        return cp.remainder(lhs, rhs)

    def int_matmul(self, lhs: Array, rhs: Array) -> Array:
        # cuBLAS has no integer GEMM: products broadcast over [.., m, k, n], summed over k, wrapping
        # in the dtype as NumPy's integer matmul does
        products = lhs[..., :, :, None] * rhs[..., None, :, :]
        return cp.sum(products, axis=-2, dtype=lhs.dtype)

    def int_abs(self, tensor: Array) -> Array:
        return cp.abs(tensor)

    def int_neg(self, tensor: Array) -> Array:
        return cp.negative(tensor)

    def int_sign(self, tensor: Array) -> Array:
        return cp.sign(tensor)

    def int_clamp(self, tensor: Array, minimum: int, maximum: int) -> Array:
        return cp.minimum(cp.maximum(tensor, minimum), maximum)

    def int_clamp_min(self, tensor: Array, minimum: int) -> Array:
        return cp.maximum(tensor, minimum)

    def int_clamp_max(self, tensor: Array, maximum: int) -> Array:
        return cp.minimum(tensor, maximum)

    def int_powi(self, lhs: Array, rhs: Array) -> Array:
        return cp.power(lhs, rhs.astype(lhs.dtype))

    def int_powi_scalar(self, tensor: Array, exponent: int) -> Array:
        if exponent < 0:
            raise ValueError(f"int_powi_scalar: negative exponent {exponent} on an int tensor")
        return cp.power(tensor, exponent)

    def int_sum(self, tensor: Array) -> Array:
        return cp.sum(tensor, dtype=tensor.dtype).reshape(1)

    def int_sum_dim(self, tensor: Array, dim: int) -> Array:
        return cp.sum(tensor, axis=dim, keepdims=True, dtype=tensor.dtype)

    def int_prod(self, tensor: Array) -> Array:
        return cp.prod(tensor, dtype=tensor.dtype).reshape(1)

    def int_prod_dim(self, tensor: Array, dim: int) -> Array:
        return cp.prod(tensor, axis=dim, keepdims=True, dtype=tensor.dtype)

    def int_mean(self, tensor: Array) -> Array:
        total = cp.sum(tensor, dtype=np.int64)
        return cp.floor_divide(total, max(tensor.size, 1)).astype(tensor.dtype).reshape(1)

    def int_mean_dim(self, tensor: Array, dim: int) -> Array:
        total = cp.sum(tensor, axis=dim, keepdims=True, dtype=np.int64)
        return cp.floor_divide(total, max(tensor.shape[dim], 1)).astype(tensor.dtype)

    def int_cumsum(self, tensor: Array, dim: int) -> Array:
        return cp.cumsum(tensor, axis=dim, dtype=tensor.dtype)

    def int_cumprod(self, tensor: Array, dim: int) -> Array:
        return cp.cumprod(tensor, axis=dim, dtype=tensor.dtype)

    def int_max_abs(self, tensor: Array) -> Array:
        return cp.max(cp.abs(tensor)).reshape(1)

    def int_max_abs_dim(self, tensor: Array, dim: int) -> Array:
        return cp.max(cp.abs(tensor), axis=dim, keepdims=True)

    def bitwise_and(self, lhs: Array, rhs: Array) -> Array:
        return cp.bitwise_and(lhs, rhs)

    def bitwise_and_scalar(self, lhs: Array, rhs: int) -> Array:
        return cp.bitwise_and(lhs, rhs)

    def bitwise_or(self, lhs: Array, rhs: Array) -> Array:
        return cp.bitwise_or(lhs, rhs)

    def bitwise_or_scalar(self, lhs: Array, rhs: int) -> Array:
        return cp.bitwise_or(lhs, rhs)

    def bitwise_xor(self, lhs: Array, rhs: Array) -> Array:
        return cp.bitwise_xor(lhs, rhs)

    def bitwise_xor_scalar(self, lhs: Array, rhs: int) -> Array:
        return cp.bitwise_xor(lhs, rhs)

    def bitwise_not(self, tensor: Array) -> Array:
        return cp.invert(tensor)

    def bitwise_left_shift(self, lhs: Array, rhs: Array) -> Array:
        return cp.left_shift(lhs, rhs.astype(lhs.dtype))

    def bitwise_left_shift_scalar(self, lhs: Array, rhs: int) -> Array:
        return cp.left_shift(lhs, rhs)

    def bitwise_right_shift(self, lhs: Array, rhs: Array) -> Array:
        return cp.right_shift(lhs, rhs.astype(lhs.dtype))

    def bitwise_right_shift_scalar(self, lhs: Array, rhs: int) -> Array:
        return cp.right_shift(lhs, rhs)
