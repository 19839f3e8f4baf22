"""Cuda's reductions along a dim and over a whole tensor, at memory speed.

Each op is one launch of ``_reduce_kernels``' kernel (the input viewed as ``[outer, reduced, inner]``)
instead of CuPy's generic reductions, which took several launches and, for few long columns (a bias
gradient), a fraction of the GPU's bandwidth. What the kernels do not serve (an empty tensor, other
dtypes) takes the shared op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _reduce_kernels

Array = Any


def _whole(name: str, op: str) -> Callable[[Any, Array], Array]:
    """``name(tensor)``: ``op`` of the whole tensor, shape ``(1,)``."""

    def reduction(self: Any, tensor: Array) -> Array:
        found = _reduce_kernels.reduce(tensor, None, op)
        return getattr(super(ReduceOps, self), name)(tensor) if found is None else found[0]

    reduction.__name__ = reduction.__qualname__ = name
    return reduction


def _along(name: str, op: str) -> Callable[[Any, Array, int], Array]:
    """``name(tensor, dim)``: ``op`` along ``dim``, kept with size 1."""

    def reduction(self: Any, tensor: Array, dim: int) -> Array:
        found = _reduce_kernels.reduce(tensor, dim, op)
        return getattr(super(ReduceOps, self), name)(tensor, dim) if found is None else found[0]

    reduction.__name__ = reduction.__qualname__ = name
    return reduction


def _arg(name: str, op: str) -> Callable[[Any, Array, int], Array]:
    """``name(tensor, dim)``: the indices of ``op`` (``argmax``, ``argmin``) along ``dim``, kept with
    size 1, in the backend's int dtype."""

    def reduction(self: Any, tensor: Array, dim: int) -> Array:
        index_dtype = self.runtime.dtype(self.int_dtype)
        found = _reduce_kernels.reduce(tensor, dim, op, index_dtype, values=False)
        return getattr(super(ReduceOps, self), name)(tensor, dim) if found is None else found[1]

    reduction.__name__ = reduction.__qualname__ = name
    return reduction


def _with_indices(name: str, op: str) -> Callable[[Any, Array, int], tuple[Array, Array]]:
    """``name(tensor, dim)``: the extremes along ``dim`` and their indices, from one launch."""

    def reduction(self: Any, tensor: Array, dim: int) -> tuple[Array, Array]:
        index_dtype = self.runtime.dtype(self.int_dtype)
        found = _reduce_kernels.reduce(tensor, dim, op, index_dtype)
        if found is None:
            return getattr(super(ReduceOps, self), name)(tensor, dim)  # type: ignore[no-any-return]
        return found[0], found[1]

    reduction.__name__ = reduction.__qualname__ = name
    return reduction


class ReduceOps:
    """Cuda's overrides of the float (and int) reductions: sums, means, products, extremes and their
    indices, along a dim or over the whole tensor (a mixin ahead of the shared ops, which serve what the
    kernels do not). f16 and bf16 accumulate in f32; NaN propagates
    through maxima and minima, and is the extreme of the arg-reductions (the first one's index)."""

    float_sum = _whole("float_sum", "sum")
    float_mean = _whole("float_mean", "mean")
    float_prod = _whole("float_prod", "prod")
    float_max = _whole("float_max", "max")
    float_min = _whole("float_min", "min")
    float_sum_dim = _along("float_sum_dim", "sum")
    float_mean_dim = _along("float_mean_dim", "mean")
    float_prod_dim = _along("float_prod_dim", "prod")
    float_max_dim = _along("float_max_dim", "max")
    float_min_dim = _along("float_min_dim", "min")
    float_argmax = _arg("float_argmax", "argmax")
    float_argmin = _arg("float_argmin", "argmin")
    float_max_dim_with_indices = _with_indices("float_max_dim_with_indices", "argmax")
    float_min_dim_with_indices = _with_indices("float_min_dim_with_indices", "argmin")

    # i32 and i64 (sums wrap around in the tensor's dtype, as the shared ops' do)
    int_sum = _whole("int_sum", "sum")
    int_max = _whole("int_max", "max")
    int_min = _whole("int_min", "min")
    int_sum_dim = _along("int_sum_dim", "sum")
    int_max_dim = _along("int_max_dim", "max")
    int_min_dim = _along("int_min_dim", "min")
    int_argmax = _arg("int_argmax", "argmax")
    int_argmin = _arg("int_argmin", "argmin")
    int_max_dim_with_indices = _with_indices("int_max_dim_with_indices", "argmax")
    int_min_dim_with_indices = _with_indices("int_min_dim_with_indices", "argmin")
