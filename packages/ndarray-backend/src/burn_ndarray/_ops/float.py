"""NdArray's float ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from burn_backend import Device, Distribution, DType, GridSampleOptions

from . import _array as a
from . import _grid_sample
from ._special import erf

Array = Any
_LOW_PRECISION = (DType.F16.numpy, DType.BF16.numpy)
_BF16 = DType.BF16.numpy


def _scalar(tensor: Array, value: float) -> Any:
    # NumPy keeps a float array's dtype for a Python float, except ml_dtypes' bf16: cast for that one.
    return _BF16.type(value) if tensor.dtype == _BF16 else value


def _accumulation_dtype(tensor: Array) -> Any:
    return np.float32 if tensor.dtype in _LOW_PRECISION else tensor.dtype


def sample(rng: np.random.Generator, shape: tuple[int, ...], distribution: Distribution) -> Array:
    """Float64 samples of ``distribution``."""
    if distribution.kind == "default":
        return rng.random(shape)
    if distribution.kind == "bernoulli":
        return (rng.random(shape) < distribution.probability).astype(np.float64)
    if distribution.kind == "uniform":
        return rng.uniform(distribution.low, distribution.high, shape)
    return rng.normal(distribution.mean, distribution.std, shape)


class FloatOps:
    """The float op group on NumPy arrays."""

    int_dtype: DType
    float_dtype: DType

    float_from_data = a.from_data
    float_into_data = a.into_data
    float_device = a.device_of
    float_to_device = a.to_device
    float_empty = a.empty
    float_full = a.full
    float_reshape = a.reshape
    float_swap_dims = a.swap_dims
    float_permute = a.permute
    float_flip = a.flip
    float_expand = a.expand
    float_unfold = a.unfold
    float_cat = a.cat
    float_repeat_dim = a.repeat_dim
    float_slice = a.slice_
    float_slice_assign = a.slice_assign
    float_gather = a.gather
    float_scatter_add = a.scatter_add
    float_select = a.select
    float_select_add = a.select_add
    float_mask_where = a.mask_where
    float_scatter = a.scatter
    float_gather_nd = a.gather_nd
    float_scatter_nd = a.scatter_nd
    float_mask_select = a.mask_select
    float_equal = a.equal
    float_not_equal = a.not_equal
    float_greater = a.greater
    float_greater_equal = a.greater_equal
    float_lower = a.lower
    float_lower_equal = a.lower_equal
    float_argmax = a.argmax
    float_argmin = a.argmin
    float_max = a.max_
    float_max_dim = a.max_dim
    float_min = a.min_
    float_min_dim = a.min_dim
    float_max_dim_with_indices = a.max_dim_with_indices
    float_min_dim_with_indices = a.min_dim_with_indices
    float_cummin = a.cummin
    float_cummax = a.cummax
    float_sort = a.sort
    float_sort_with_indices = a.sort_with_indices
    float_argsort = a.argsort
    float_topk = a.topk
    float_topk_with_indices = a.topk_with_indices
    float_argtopk = a.argtopk

    def float_random(
        self, shape: tuple[int, ...], distribution: Distribution, device: Device, dtype: DType
    ) -> Array:
        return sample(a.rng(device), shape, distribution).astype(dtype.numpy)

    def float_into_int(self, tensor: Array, dtype: DType) -> Array:
        with np.errstate(all="ignore"):
            return np.asarray(tensor).astype(dtype.numpy)

    def float_cast(self, tensor: Array, dtype: DType) -> Array:
        with np.errstate(all="ignore"):
            return np.asarray(tensor).astype(dtype.numpy)

    def float_mask_fill(self, tensor: Array, mask: Array, value: float) -> Array:
        return np.where(mask, tensor.dtype.type(value), tensor)

    def float_add(self, lhs: Array, rhs: Array) -> Array:
        try:
            return lhs + rhs
        except RuntimeWarning:  # overflow, with warnings raised as errors: give inf, as PyTorch
            with np.errstate(all="ignore"):
                return lhs + rhs

    def float_add_scalar(self, lhs: Array, rhs: float) -> Array:
        try:
            return lhs + _scalar(lhs, rhs)
        except RuntimeWarning:  # overflow, with warnings raised as errors: give inf, as PyTorch
            with np.errstate(all="ignore"):
                return lhs + _scalar(lhs, rhs)

    def float_sub(self, lhs: Array, rhs: Array) -> Array:
        try:
            return lhs - rhs
        except RuntimeWarning:  # overflow, with warnings raised as errors: give inf, as PyTorch
            with np.errstate(all="ignore"):
                return lhs - rhs

    def float_sub_scalar(self, lhs: Array, rhs: float) -> Array:
        try:
            return lhs - _scalar(lhs, rhs)
        except RuntimeWarning:  # overflow, with warnings raised as errors: give inf, as PyTorch
            with np.errstate(all="ignore"):
                return lhs - _scalar(lhs, rhs)

    def float_mul(self, lhs: Array, rhs: Array) -> Array:
        try:
            return lhs * rhs
        except RuntimeWarning:  # overflow, with warnings raised as errors: give inf, as PyTorch
            with np.errstate(all="ignore"):
                return lhs * rhs

    def float_mul_scalar(self, lhs: Array, rhs: float) -> Array:
        try:
            return lhs * _scalar(lhs, rhs)
        except RuntimeWarning:  # overflow, with warnings raised as errors: give inf, as PyTorch
            with np.errstate(all="ignore"):
                return lhs * _scalar(lhs, rhs)

    def float_div(self, lhs: Array, rhs: Array) -> Array:
        with np.errstate(all="ignore"):
            return lhs / rhs

    def float_div_scalar(self, lhs: Array, rhs: float) -> Array:
        with np.errstate(all="ignore"):
            return lhs / _scalar(lhs, rhs)

    def float_remainder(self, lhs: Array, rhs: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.remainder(lhs, rhs)

    def float_remainder_scalar(self, lhs: Array, rhs: float) -> Array:
        with np.errstate(all="ignore"):
            return np.remainder(lhs, _scalar(lhs, rhs))

    def float_recip(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.reciprocal(tensor)

    def float_neg(self, tensor: Array) -> Array:
        return np.negative(tensor)

    def float_sign(self, tensor: Array) -> Array:
        return np.sign(tensor)

    def float_clamp(self, tensor: Array, minimum: float, maximum: float) -> Array:
        # np.clip promotes bf16 to f32: keep the tensor's dtype
        return np.clip(tensor, _scalar(tensor, minimum), _scalar(tensor, maximum)).astype(
            tensor.dtype, copy=False
        )

    def float_clamp_min(self, tensor: Array, minimum: float) -> Array:
        return np.maximum(tensor, _scalar(tensor, minimum))

    def float_clamp_max(self, tensor: Array, maximum: float) -> Array:
        return np.minimum(tensor, _scalar(tensor, maximum))

    def float_matmul(self, lhs: Array, rhs: Array) -> Array:
        if lhs.dtype in _LOW_PRECISION:
            # NumPy has no BLAS for f16 / bf16: multiply in f32 and round once at the end
            with np.errstate(all="ignore"):
                return np.matmul(lhs.astype(np.float32), rhs.astype(np.float32)).astype(lhs.dtype)
        try:
            return np.matmul(lhs, rhs)
        except RuntimeWarning:  # overflow, with warnings raised as errors: give inf, as PyTorch
            with np.errstate(all="ignore"):
                return np.matmul(lhs, rhs)

    def float_cross(self, lhs: Array, rhs: Array, dim: int) -> Array:
        return np.cross(lhs, rhs, axis=dim)

    def float_equal_elem(self, lhs: Array, rhs: float) -> Array:
        return lhs == _scalar(lhs, rhs)

    def float_not_equal_elem(self, lhs: Array, rhs: float) -> Array:
        return lhs != _scalar(lhs, rhs)

    def float_greater_elem(self, lhs: Array, rhs: float) -> Array:
        if lhs.dtype == _BF16:  # ml_dtypes' bf16 comparisons warn on NaN
            with np.errstate(all="ignore"):
                return lhs > _scalar(lhs, rhs)
        return lhs > _scalar(lhs, rhs)

    def float_greater_equal_elem(self, lhs: Array, rhs: float) -> Array:
        if lhs.dtype == _BF16:  # ml_dtypes' bf16 comparisons warn on NaN
            with np.errstate(all="ignore"):
                return lhs >= _scalar(lhs, rhs)
        return lhs >= _scalar(lhs, rhs)

    def float_lower_elem(self, lhs: Array, rhs: float) -> Array:
        if lhs.dtype == _BF16:  # ml_dtypes' bf16 comparisons warn on NaN
            with np.errstate(all="ignore"):
                return lhs < _scalar(lhs, rhs)
        return lhs < _scalar(lhs, rhs)

    def float_lower_equal_elem(self, lhs: Array, rhs: float) -> Array:
        if lhs.dtype == _BF16:  # ml_dtypes' bf16 comparisons warn on NaN
            with np.errstate(all="ignore"):
                return lhs <= _scalar(lhs, rhs)
        return lhs <= _scalar(lhs, rhs)

    def float_is_nan(self, tensor: Array) -> Array:
        return np.isnan(tensor)

    def float_is_inf(self, tensor: Array) -> Array:
        return np.isinf(tensor)

    def float_sum(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.sum(tensor, dtype=_accumulation_dtype(tensor)).astype(tensor.dtype).reshape(1)

    def float_sum_dim(self, tensor: Array, dim: int) -> Array:
        with np.errstate(all="ignore"):
            return np.sum(tensor, axis=dim, keepdims=True, dtype=_accumulation_dtype(tensor)).astype(
                tensor.dtype
            )

    def float_mean(self, tensor: Array) -> Array:
        return self.float_mean_dim(np.reshape(tensor, (-1,)), 0)

    def float_mean_dim(self, tensor: Array, dim: int) -> Array:
        # sum / count rather than np.mean, which warns on empty input instead of giving NaN quietly
        count = np.shape(tensor)[dim]
        with np.errstate(all="ignore"):
            total = np.sum(tensor, axis=dim, keepdims=True, dtype=_accumulation_dtype(tensor))
            return (total / total.dtype.type(count) if count else total * np.nan).astype(tensor.dtype)

    def float_prod(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.prod(tensor, dtype=_accumulation_dtype(tensor)).astype(tensor.dtype).reshape(1)

    def float_prod_dim(self, tensor: Array, dim: int) -> Array:
        with np.errstate(all="ignore"):
            return np.prod(tensor, axis=dim, keepdims=True, dtype=_accumulation_dtype(tensor)).astype(
                tensor.dtype
            )

    def float_cumsum(self, tensor: Array, dim: int) -> Array:
        with np.errstate(all="ignore"):
            return np.cumsum(tensor, axis=dim, dtype=_accumulation_dtype(tensor)).astype(tensor.dtype)

    def float_cumprod(self, tensor: Array, dim: int) -> Array:
        with np.errstate(all="ignore"):
            return np.cumprod(tensor, axis=dim, dtype=_accumulation_dtype(tensor)).astype(tensor.dtype)

    def float_max_abs(self, tensor: Array) -> Array:
        return np.max(np.abs(tensor)).reshape(1)

    def float_max_abs_dim(self, tensor: Array, dim: int) -> Array:
        return np.max(np.abs(tensor), axis=dim, keepdims=True)

    def float_any(self, tensor: Array) -> Array:
        return np.array([np.any(tensor)])

    def float_any_dim(self, tensor: Array, dim: int) -> Array:
        return np.any(tensor, axis=dim, keepdims=True)

    def float_all(self, tensor: Array) -> Array:
        return np.array([np.all(tensor)])

    def float_all_dim(self, tensor: Array, dim: int) -> Array:
        return np.all(tensor, axis=dim, keepdims=True)

    def float_exp(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.exp(tensor)

    def float_log(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.log(tensor)

    def float_log1p(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.log1p(tensor)

    def float_sqrt(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.sqrt(tensor)

    def float_abs(self, tensor: Array) -> Array:
        return np.abs(tensor)

    def float_cos(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.cos(tensor)

    def float_sin(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.sin(tensor)

    def float_tan(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.tan(tensor)

    def float_cosh(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.cosh(tensor)

    def float_sinh(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.sinh(tensor)

    def float_tanh(self, tensor: Array) -> Array:
        return np.tanh(tensor)

    def float_acos(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.arccos(tensor)

    def float_acosh(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.arccosh(tensor)

    def float_asin(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.arcsin(tensor)

    def float_asinh(self, tensor: Array) -> Array:
        return np.arcsinh(tensor)

    def float_atan(self, tensor: Array) -> Array:
        return np.arctan(tensor)

    def float_atanh(self, tensor: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.arctanh(tensor)

    def float_atan2(self, lhs: Array, rhs: Array) -> Array:
        return np.arctan2(lhs, rhs)

    def float_round(self, tensor: Array) -> Array:
        return np.round(tensor)

    def float_floor(self, tensor: Array) -> Array:
        return np.floor(tensor)

    def float_ceil(self, tensor: Array) -> Array:
        return np.ceil(tensor)

    def float_trunc(self, tensor: Array) -> Array:
        return np.trunc(tensor)

    def float_erf(self, tensor: Array) -> Array:
        return erf(np.asarray(tensor))

    def float_powf(self, lhs: Array, rhs: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.power(lhs, rhs)

    def float_powf_scalar(self, tensor: Array, exponent: float) -> Array:
        with np.errstate(all="ignore"):
            if exponent == 2.0:
                return tensor * tensor
            return np.power(tensor, _scalar(tensor, exponent))

    def float_powi(self, lhs: Array, rhs: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.power(lhs, rhs.astype(lhs.dtype))

    def float_hypot(self, lhs: Array, rhs: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.hypot(lhs, rhs)

    # -- grid sampling ----------------------------------------------------------------------------
    def float_grid_sample_2d(self, tensor: Array, grid: Array, options: GridSampleOptions) -> Array:
        return _grid_sample.grid_sample_2d(tensor, grid, options)
