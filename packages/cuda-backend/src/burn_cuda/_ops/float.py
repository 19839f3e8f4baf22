"""Cuda's float ops.

f16 computes natively (matrix products through cuBLAS, accumulating in f32). bf16 (ml_dtypes'
``bfloat16``, which CuPy 14 stores but has few kernels for) computes in f32 and is rounded once per
op: ``in_f32`` wraps those ops. Reductions and running sums of f16 and bf16 accumulate in f32.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from burn_backend import Device, Distribution, DType, FloatTensorOps, GridSampleOptions

from .._cupy import cp
from . import _array as a
from . import _elementwise
from ._array import LOW_PRECISION, narrow, widen
from ._special import erf

Array = Any
_BF16 = DType.BF16.numpy
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_F16 = np.dtype(np.float16)
F = TypeVar("F", bound=Callable[..., Any])


def in_f32(method: F) -> F:
    """``method`` computed in f32 where an operand is bf16, float results rounded back to bf16; with
    NumPy's floating-point warnings off where it is f16 (CuPy converts a Python scalar operand to f16 on
    the host, and one beyond f16's range becomes inf with a warning, an error under ``-W error``)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any) -> Any:
        for arg in args:  # the common case first: every array operand f32 or f64, nothing to convert
            kind = getattr(arg, "dtype", None)
            if kind is not None and kind is not _F32 and kind is not _F64:
                break
        else:
            return method(self, *args)
        dtype = getattr(args[0], "dtype", None)
        if dtype == _F16:
            with np.errstate(all="ignore"):
                return method(self, *args)
        if not any(getattr(arg, "dtype", None) == _BF16 for arg in args):
            return method(self, *args)
        wide = [arg.astype(_F32) if getattr(arg, "dtype", None) == _BF16 else arg for arg in args]
        result = method(self, *wide)
        return result.astype(_BF16) if result.dtype == _F32 else result

    return wrapper  # type: ignore[return-value]


def sample(generator: Any, shape: tuple[int, ...], distribution: Distribution) -> Array:
    """Float64 samples of ``distribution`` drawn on the current device."""
    if distribution.kind == "default":
        return generator.random(shape, dtype=np.float64)
    if distribution.kind == "bernoulli":
        return (generator.random(shape, dtype=np.float64) < distribution.probability).astype(np.float64)
    if distribution.kind == "uniform":
        low, high = float(distribution.low), float(distribution.high)
        return generator.random(shape, dtype=np.float64) * (high - low) + low
    normal = generator.standard_normal(shape, dtype=np.float64)
    return normal * float(distribution.std) + float(distribution.mean)


def _arithmetic(name: str, compute: Callable[[Any, Any], Array]) -> tuple[Any, Any]:
    """The tensor-tensor and tensor-scalar forms of ``name``: the vectorized f32 kernel where it applies
    (``_elementwise`` returns ``None`` where it does not), else CuPy's operator, computed in f32 for bf16."""

    @in_f32
    def fallback(self: Any, lhs: Array, rhs: Any) -> Array:
        return compute(lhs, rhs)

    def with_tensor(self: Any, lhs: Array, rhs: Array) -> Array:
        out = _elementwise.binary(name, lhs, rhs)
        return fallback(self, lhs, rhs) if out is None else out

    def with_scalar(self: Any, lhs: Array, rhs: float) -> Array:
        out = _elementwise.scalar(name, lhs, rhs)
        return fallback(self, lhs, rhs) if out is None else out

    return with_tensor, with_scalar


class FloatOps:
    """The float op group on CuPy arrays."""

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
    float_equal = in_f32(a.equal)
    float_not_equal = in_f32(a.not_equal)
    float_greater = in_f32(a.greater)
    float_greater_equal = in_f32(a.greater_equal)
    float_lower = in_f32(a.lower)
    float_lower_equal = in_f32(a.lower_equal)
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
        with cp.cuda.Device(device.index):
            return a.convert(sample(a.rng(device), shape, distribution), dtype.numpy)

    def float_into_int(self, tensor: Array, dtype: DType) -> Array:
        return a.convert(tensor, dtype.numpy)

    def float_cast(self, tensor: Array, dtype: DType) -> Array:
        return a.convert(tensor, dtype.numpy)

    float_mask_fill = a.mask_fill

    float_add, float_add_scalar = _arithmetic("add", operator.add)
    float_sub, float_sub_scalar = _arithmetic("sub", operator.sub)
    float_mul, float_mul_scalar = _arithmetic("mul", operator.mul)
    float_div, float_div_scalar = _arithmetic("div", operator.truediv)

    @in_f32
    def float_remainder(self, lhs: Array, rhs: Array) -> Array:
        return cp.remainder(lhs, rhs)

    @in_f32
    def float_remainder_scalar(self, lhs: Array, rhs: float) -> Array:
        return cp.remainder(lhs, rhs)

    @in_f32
    def float_recip(self, tensor: Array) -> Array:
        return cp.reciprocal(tensor)

    @in_f32
    def float_neg(self, tensor: Array) -> Array:
        return cp.negative(tensor)

    @in_f32
    def float_sign(self, tensor: Array) -> Array:
        return cp.where(cp.isnan(tensor), tensor, cp.sign(tensor))  # NaN stays NaN

    @in_f32
    def float_clamp(self, tensor: Array, minimum: float, maximum: float) -> Array:
        return cp.minimum(cp.maximum(tensor, minimum), maximum)

    @in_f32
    def float_clamp_min(self, tensor: Array, minimum: float) -> Array:
        return cp.maximum(tensor, minimum)

    @in_f32
    def float_clamp_max(self, tensor: Array, maximum: float) -> Array:
        return cp.minimum(tensor, maximum)

    @in_f32
    def float_matmul(self, lhs: Array, rhs: Array) -> Array:
        # cuBLAS; TF32 stays off unless CUPY_TF32=1 is set before CuPy is imported
        return cp.matmul(lhs, rhs)

    @in_f32
    def float_cross(self, lhs: Array, rhs: Array, dim: int) -> Array:
        return cp.cross(lhs, rhs, axis=dim)

    @in_f32
    def float_equal_elem(self, lhs: Array, rhs: float) -> Array:
        return lhs == rhs

    @in_f32
    def float_not_equal_elem(self, lhs: Array, rhs: float) -> Array:
        return lhs != rhs

    @in_f32
    def float_greater_elem(self, lhs: Array, rhs: float) -> Array:
        return lhs > rhs

    @in_f32
    def float_greater_equal_elem(self, lhs: Array, rhs: float) -> Array:
        return lhs >= rhs

    @in_f32
    def float_lower_elem(self, lhs: Array, rhs: float) -> Array:
        return lhs < rhs

    @in_f32
    def float_lower_equal_elem(self, lhs: Array, rhs: float) -> Array:
        return lhs <= rhs

    @in_f32
    def float_is_nan(self, tensor: Array) -> Array:
        return cp.isnan(tensor)

    @in_f32
    def float_is_inf(self, tensor: Array) -> Array:
        return cp.isinf(tensor)

    def float_sum(self, tensor: Array) -> Array:
        return narrow(cp.sum(widen(tensor)), tensor.dtype).reshape(1)

    def float_sum_dim(self, tensor: Array, dim: int) -> Array:
        return narrow(cp.sum(widen(tensor), axis=dim, keepdims=True), tensor.dtype)

    def float_mean(self, tensor: Array) -> Array:
        return self.float_mean_dim(cp.reshape(tensor, (-1,)), 0)

    def float_mean_dim(self, tensor: Array, dim: int) -> Array:
        # sum / count rather than cupy.mean, so that an empty dim gives NaN as NdArray does
        count = tensor.shape[dim]
        total = cp.sum(widen(tensor), axis=dim, keepdims=True)
        mean = total / total.dtype.type(count) if count else total * np.nan
        return narrow(mean, tensor.dtype)

    def float_prod(self, tensor: Array) -> Array:
        return narrow(cp.prod(widen(tensor)), tensor.dtype).reshape(1)

    def float_prod_dim(self, tensor: Array, dim: int) -> Array:
        return narrow(cp.prod(widen(tensor), axis=dim, keepdims=True), tensor.dtype)

    def float_cumsum(self, tensor: Array, dim: int) -> Array:
        return narrow(cp.cumsum(widen(tensor), axis=dim), tensor.dtype)

    def float_cumprod(self, tensor: Array, dim: int) -> Array:
        return narrow(cp.cumprod(widen(tensor), axis=dim), tensor.dtype)

    @in_f32
    def float_max_abs(self, tensor: Array) -> Array:
        return cp.max(cp.abs(tensor)).reshape(1)

    @in_f32
    def float_max_abs_dim(self, tensor: Array, dim: int) -> Array:
        return cp.max(cp.abs(tensor), axis=dim, keepdims=True)

    @in_f32
    def float_any(self, tensor: Array) -> Array:
        return cp.any(tensor).reshape(1)

    @in_f32
    def float_any_dim(self, tensor: Array, dim: int) -> Array:
        return cp.any(tensor, axis=dim, keepdims=True)

    @in_f32
    def float_all(self, tensor: Array) -> Array:
        return cp.all(tensor).reshape(1)

    @in_f32
    def float_all_dim(self, tensor: Array, dim: int) -> Array:
        return cp.all(tensor, axis=dim, keepdims=True)

    @in_f32
    def float_exp(self, tensor: Array) -> Array:
        return cp.exp(tensor)

    @in_f32
    def float_log(self, tensor: Array) -> Array:
        return cp.log(tensor)

    @in_f32
    def float_log1p(self, tensor: Array) -> Array:
        return cp.log1p(tensor)

    @in_f32
    def float_sqrt(self, tensor: Array) -> Array:
        return cp.sqrt(tensor)

    @in_f32
    def float_abs(self, tensor: Array) -> Array:
        return cp.abs(tensor)

    @in_f32
    def float_cos(self, tensor: Array) -> Array:
        return cp.cos(tensor)

    @in_f32
    def float_sin(self, tensor: Array) -> Array:
        return cp.sin(tensor)

    @in_f32
    def float_tan(self, tensor: Array) -> Array:
        return cp.tan(tensor)

    @in_f32
    def float_cosh(self, tensor: Array) -> Array:
        return cp.cosh(tensor)

    @in_f32
    def float_sinh(self, tensor: Array) -> Array:
        return cp.sinh(tensor)

    @in_f32
    def float_tanh(self, tensor: Array) -> Array:
        return cp.tanh(tensor)

    @in_f32
    def float_acos(self, tensor: Array) -> Array:
        return cp.arccos(tensor)

    @in_f32
    def float_acosh(self, tensor: Array) -> Array:
        return cp.arccosh(tensor)

    @in_f32
    def float_asin(self, tensor: Array) -> Array:
        return cp.arcsin(tensor)

    @in_f32
    def float_asinh(self, tensor: Array) -> Array:
        return cp.arcsinh(tensor)

    @in_f32
    def float_atan(self, tensor: Array) -> Array:
        return cp.arctan(tensor)

    @in_f32
    def float_atanh(self, tensor: Array) -> Array:
        return cp.arctanh(tensor)

    @in_f32
    def float_atan2(self, lhs: Array, rhs: Array) -> Array:
        return cp.arctan2(lhs, rhs)

    @in_f32
    def float_round(self, tensor: Array) -> Array:
        return cp.rint(tensor)

    @in_f32
    def float_floor(self, tensor: Array) -> Array:
        return cp.floor(tensor)

    @in_f32
    def float_ceil(self, tensor: Array) -> Array:
        return cp.ceil(tensor)

    @in_f32
    def float_trunc(self, tensor: Array) -> Array:
        return cp.trunc(tensor)

    def float_erf(self, tensor: Array) -> Array:
        return erf(tensor)

    @in_f32
    def float_powf(self, lhs: Array, rhs: Array) -> Array:
        return cp.power(lhs, rhs)

    @in_f32
    def float_powf_scalar(self, tensor: Array, exponent: float) -> Array:
        if exponent == 2.0:
            return tensor * tensor
        return cp.power(tensor, exponent)

    @in_f32
    def float_powi(self, lhs: Array, rhs: Array) -> Array:
        return cp.power(lhs, rhs.astype(lhs.dtype))

    @in_f32
    def float_hypot(self, lhs: Array, rhs: Array) -> Array:
        return cp.hypot(lhs, rhs)

    def float_grid_sample_2d(self, tensor: Array, grid: Array, options: GridSampleOptions) -> Array:
        # the default in f32 for f16 and bf16: its bilinear weights lose too much in f16
        default: Any = FloatTensorOps.float_grid_sample_2d
        if tensor.dtype not in LOW_PRECISION:
            return default(self, tensor, grid, options)
        return narrow(default(self, widen(tensor), widen(grid), options), tensor.dtype)
