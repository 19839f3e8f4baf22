"""``FloatTensorOps``: the float op group of the backend interface."""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._data import TensorData
from .._distribution import Distribution
from .._dtype import DType
from .._options import IndexingUpdateOp
from . import _generic as g
from . import _grid_sample
from ._low_precision import in_f32

if TYPE_CHECKING:
    from .._device import Device
    from .._options import GridSampleOptions

P = Any  # a primitive of the backend: opaque, exposing .shape and .dtype
Shape = tuple[int, ...]

_WINITZKI_A = 0.147  # Winitzki's erf approximation, inverted: relative error below 2e-3 for the start
_WINITZKI_T = 2.0 / (math.pi * _WINITZKI_A)
_SQRT_PI_2 = math.sqrt(math.pi) / 2


class FloatTensorOps(abc.ABC):
    """Ops on float primitives. Abstract methods are required; the rest have defaults built from them.

    Conventions, shared by every op group: primitives are never mutated; dims arrive non-negative;
    binary ops take operands of equal rank whose dims are equal or 1 (broadcast); ``*_dim`` reductions
    keep the reduced dim with size 1; whole-tensor reductions return shape ``(1,)``; ``slices`` are one
    canonical Python ``slice`` per dim (see ``burn_backend.kit.canonical_slices``).

    Special values are required, not implementation-defined: each element-wise op gives IEEE 754's
    results at infinities, NaN and signed zeros as its NumPy reference in ``burn_backend.kit``'s
    element-wise table does (NaN propagates through ``sign``, ``min``/``max`` and the clamps; a number
    exponent of 0.5 is a square root; ``float_remainder`` is Python's ``%``, infinite divisors included),
    and the conformance suite checks them on every backend.
    """

    int_dtype: DType
    float_dtype: DType

    # -- data, creation, device --------------------------------------------------------------------
    @abc.abstractmethod
    def float_from_data(self, data: TensorData, device: Device) -> P:
        """A tensor holding ``data`` (a float dtype) on ``device``."""

    @abc.abstractmethod
    def float_into_data(self, tensor: P) -> TensorData:
        """The tensor's values on the host."""

    @abc.abstractmethod
    def float_device(self, tensor: P) -> Device:
        """The device the tensor lives on."""

    @abc.abstractmethod
    def float_to_device(self, tensor: P, device: Device) -> P:
        """The tensor moved to another device of this backend."""

    @abc.abstractmethod
    def float_empty(self, shape: Shape, device: Device, dtype: DType) -> P:
        """A tensor of ``shape`` with unspecified values."""

    @abc.abstractmethod
    def float_random(self, shape: Shape, distribution: Distribution, device: Device, dtype: DType) -> P:
        """A tensor of values drawn from ``distribution`` with the device's generator."""

    def float_zeros(self, shape: Shape, device: Device, dtype: DType) -> P:
        """A tensor of zeros."""
        return self.float_full(shape, 0.0, device, dtype)

    def float_ones(self, shape: Shape, device: Device, dtype: DType) -> P:
        """A tensor of ones."""
        return self.float_full(shape, 1.0, device, dtype)

    def float_full(self, shape: Shape, fill_value: float, device: Device, dtype: DType) -> P:
        """A tensor filled with ``fill_value``."""
        return g.full(self, "float", shape, fill_value, device, dtype)

    @abc.abstractmethod
    def float_into_int(self, tensor: P, dtype: DType) -> P:
        """The values truncated toward zero, as an int tensor of ``dtype``."""

    @abc.abstractmethod
    def float_cast(self, tensor: P, dtype: DType) -> P:
        """The values converted to another float ``dtype``."""

    # -- arithmetic -------------------------------------------------------------------------------
    @abc.abstractmethod
    def float_add(self, lhs: P, rhs: P) -> P:
        """``lhs + rhs``."""

    @abc.abstractmethod
    def float_add_scalar(self, lhs: P, rhs: float) -> P:
        """``lhs + rhs``."""

    @abc.abstractmethod
    def float_sub(self, lhs: P, rhs: P) -> P:
        """``lhs - rhs``."""

    @abc.abstractmethod
    def float_sub_scalar(self, lhs: P, rhs: float) -> P:
        """``lhs - rhs``."""

    @abc.abstractmethod
    def float_mul(self, lhs: P, rhs: P) -> P:
        """``lhs * rhs``."""

    @abc.abstractmethod
    def float_mul_scalar(self, lhs: P, rhs: float) -> P:
        """``lhs * rhs``."""

    @abc.abstractmethod
    def float_div(self, lhs: P, rhs: P) -> P:
        """``lhs / rhs``."""

    @abc.abstractmethod
    def float_div_scalar(self, lhs: P, rhs: float) -> P:
        """``lhs / rhs``."""

    @abc.abstractmethod
    def float_remainder(self, lhs: P, rhs: P) -> P:
        """``lhs mod rhs`` with the sign of ``rhs`` (Python's ``%``), at special values too: NaN where
        ``lhs`` is infinite or ``rhs`` is 0; for an infinite ``rhs``, ``lhs`` where the signs agree, ``rhs``
        where they differ (``-1 % inf == inf``) and a zero where ``lhs`` is one, as NumPy, PyTorch and
        the Array API standard give (``lhs - rhs * floor(lhs / rhs)`` gives NaN there)."""

    @abc.abstractmethod
    def float_remainder_scalar(self, lhs: P, rhs: float) -> P:
        """``lhs mod rhs`` with the sign of ``rhs``, at special values as ``float_remainder``."""

    @abc.abstractmethod
    def float_matmul(self, lhs: P, rhs: P) -> P:
        """Matrix product over the last two dims; leading (batch) dims broadcast."""

    @abc.abstractmethod
    def float_cross(self, lhs: P, rhs: P, dim: int) -> P:
        """Cross product of 3-vectors along ``dim``."""

    @abc.abstractmethod
    def float_recip(self, tensor: P) -> P:
        """``1 / tensor``."""

    def float_neg(self, tensor: P) -> P:
        """``-tensor``."""
        return self.float_mul_scalar(tensor, -1.0)

    def float_sign(self, tensor: P) -> P:
        """-1, 0 or 1 by the sign of each value (NaN stays NaN)."""
        return self.float_mask_where(g.sign(self, "float", tensor), self.float_is_nan(tensor), tensor)

    def float_clamp(self, tensor: P, minimum: float, maximum: float) -> P:
        """Values limited to ``[minimum, maximum]``."""
        return self.float_clamp_max(self.float_clamp_min(tensor, minimum), maximum)

    def float_clamp_min(self, tensor: P, minimum: float) -> P:
        """Values limited to at least ``minimum``."""
        return g.clamp_min(self, "float", tensor, minimum)

    def float_clamp_max(self, tensor: P, maximum: float) -> P:
        """Values limited to at most ``maximum``."""
        return g.clamp_max(self, "float", tensor, maximum)

    # -- layout -----------------------------------------------------------------------------------
    @abc.abstractmethod
    def float_reshape(self, tensor: P, shape: Shape) -> P:
        """The same values in C order with another shape of as many elements."""

    @abc.abstractmethod
    def float_swap_dims(self, tensor: P, dim1: int, dim2: int) -> P:
        """Dims ``dim1`` and ``dim2`` exchanged."""

    @abc.abstractmethod
    def float_permute(self, tensor: P, axes: Sequence[int]) -> P:
        """Dims reordered: result dim ``i`` is input dim ``axes[i]``."""

    @abc.abstractmethod
    def float_flip(self, tensor: P, axes: Sequence[int]) -> P:
        """Values reversed along each dim of ``axes``."""

    @abc.abstractmethod
    def float_expand(self, tensor: P, shape: Shape) -> P:
        """Broadcast to ``shape`` (dims of size 1 grow; new leading dims may be added)."""

    @abc.abstractmethod
    def float_unfold(self, tensor: P, dim: int, size: int, step: int) -> P:
        """Windows of ``size`` every ``step`` along ``dim``: that dim becomes the window count and a
        new last dim of ``size`` holds each window."""

    def float_transpose(self, tensor: P) -> P:
        """The last two dims swapped."""
        return g.transpose(self, "float", tensor)

    def float_repeat_dim(self, tensor: P, dim: int, times: int) -> P:
        """The tensor repeated ``times`` along ``dim``."""
        return g.repeat_dim(self, "float", tensor, dim, times)

    def float_cat(self, tensors: Sequence[P], dim: int) -> P:
        """Tensors joined along ``dim``."""
        return g.cat(self, "float", tensors, dim)

    # -- indexing ---------------------------------------------------------------------------------
    @abc.abstractmethod
    def float_slice(self, tensor: P, slices: Sequence[slice]) -> P:
        """The values selected by one canonical slice per dim."""

    @abc.abstractmethod
    def float_slice_assign(self, tensor: P, slices: Sequence[slice], value: P) -> P:
        """A copy of ``tensor`` with the sliced region replaced by ``value`` (of the region's shape)."""

    @abc.abstractmethod
    def float_gather(self, tensor: P, dim: int, indices: P) -> P:
        """``out[..., i, ...] = tensor[..., indices[..., i, ...], ...]`` along ``dim``."""

    @abc.abstractmethod
    def float_scatter_add(self, tensor: P, dim: int, indices: P, values: P) -> P:
        """A copy of ``tensor`` with ``values`` added at ``indices`` along ``dim`` (duplicates sum)."""

    @abc.abstractmethod
    def float_select(self, tensor: P, dim: int, indices: P) -> P:
        """The slices at 1-d ``indices`` along ``dim``."""

    @abc.abstractmethod
    def float_select_add(self, tensor: P, dim: int, indices: P, values: P) -> P:
        """A copy of ``tensor`` with ``values`` added to the slices at ``indices`` (duplicates sum)."""

    @abc.abstractmethod
    def float_mask_where(self, tensor: P, mask: P, value: P) -> P:
        """``value`` where ``mask`` is true, else ``tensor`` (all three broadcast)."""

    @abc.abstractmethod
    def float_mask_fill(self, tensor: P, mask: P, value: float) -> P:
        """``value`` where ``mask`` is true, else ``tensor``."""

    def float_mask_select(self, tensor: P, mask: P) -> P:
        """The values where ``mask`` is true, in row-major order, as a 1-d tensor."""
        return g.mask_select(self, "float", tensor, mask)

    def float_gather_nd(self, tensor: P, indices: P) -> P:
        """``out[i...] = tensor[indices[i..., 0], ..., indices[i..., k - 1]]`` for an int ``indices`` of
        shape ``[..., k]`` (k at most the tensor's rank); the result is ``indices.shape[:-1]`` plus the
        tensor's dims after the first k."""
        return g.gather_nd(self, "float", tensor, indices)

    def float_scatter_nd(self, tensor: P, indices: P, values: P, update: IndexingUpdateOp) -> P:
        """A copy of ``tensor`` with ``values`` combined by ``update`` at the positions ``indices``
        (shaped as for ``float_gather_nd``; ``values`` has the shape ``float_gather_nd`` would return)."""
        return g.scatter_nd(self, "float", tensor, indices, values, update)

    def float_scatter(self, tensor: P, dim: int, indices: P, values: P, update: IndexingUpdateOp) -> P:
        """A copy of ``tensor`` with ``values`` combined by ``update`` at ``indices`` along ``dim``."""
        return g.scatter(self, "float", tensor, dim, indices, values, update)

    # -- comparison -------------------------------------------------------------------------------
    @abc.abstractmethod
    def float_equal(self, lhs: P, rhs: P) -> P:
        """``lhs == rhs`` as a bool tensor."""

    @abc.abstractmethod
    def float_equal_elem(self, lhs: P, rhs: float) -> P:
        """``lhs == rhs`` as a bool tensor."""

    def float_not_equal(self, lhs: P, rhs: P) -> P:
        """``lhs != rhs`` as a bool tensor."""
        return self.bool_not(self.float_equal(lhs, rhs))  # type: ignore[attr-defined]

    def float_not_equal_elem(self, lhs: P, rhs: float) -> P:
        """``lhs != rhs`` as a bool tensor."""
        return self.bool_not(self.float_equal_elem(lhs, rhs))  # type: ignore[attr-defined]

    @abc.abstractmethod
    def float_greater(self, lhs: P, rhs: P) -> P:
        """``lhs > rhs``."""

    @abc.abstractmethod
    def float_greater_elem(self, lhs: P, rhs: float) -> P:
        """``lhs > rhs``."""

    @abc.abstractmethod
    def float_greater_equal(self, lhs: P, rhs: P) -> P:
        """``lhs >= rhs``."""

    @abc.abstractmethod
    def float_greater_equal_elem(self, lhs: P, rhs: float) -> P:
        """``lhs >= rhs``."""

    @abc.abstractmethod
    def float_lower(self, lhs: P, rhs: P) -> P:
        """``lhs < rhs``."""

    @abc.abstractmethod
    def float_lower_elem(self, lhs: P, rhs: float) -> P:
        """``lhs < rhs``."""

    @abc.abstractmethod
    def float_lower_equal(self, lhs: P, rhs: P) -> P:
        """``lhs <= rhs``."""

    @abc.abstractmethod
    def float_lower_equal_elem(self, lhs: P, rhs: float) -> P:
        """``lhs <= rhs``."""

    def float_is_nan(self, tensor: P) -> P:
        """Where values are NaN."""
        return self.float_not_equal(tensor, tensor)

    def float_is_inf(self, tensor: P) -> P:
        """Where values are +inf or -inf."""
        return self.float_equal_elem(self.float_abs(tensor), math.inf)

    # -- reductions -------------------------------------------------------------------------------
    @abc.abstractmethod
    def float_sum(self, tensor: P) -> P:
        """The sum of all values, shape (1,)."""

    @abc.abstractmethod
    def float_sum_dim(self, tensor: P, dim: int) -> P:
        """Sums along ``dim`` (kept with size 1)."""

    @abc.abstractmethod
    def float_mean_dim(self, tensor: P, dim: int) -> P:
        """Means along ``dim`` (kept with size 1)."""

    def float_mean(self, tensor: P) -> P:
        """The mean of all values, shape (1,)."""
        count = math.prod(tensor.shape)
        return self.float_div_scalar(self.float_sum(tensor), float(count))

    def float_prod(self, tensor: P) -> P:
        """The product of all values, shape (1,)."""
        return g.reduce_all(self, "float", "prod", tensor)

    def float_prod_dim(self, tensor: P, dim: int) -> P:
        """Products along ``dim`` (kept with size 1)."""
        return g.last_along(self, "float", self.float_cumprod(tensor, dim), dim)

    @abc.abstractmethod
    def float_cumsum(self, tensor: P, dim: int) -> P:
        """Running sums along ``dim``."""

    @abc.abstractmethod
    def float_cumprod(self, tensor: P, dim: int) -> P:
        """Running products along ``dim``."""

    @abc.abstractmethod
    def float_cummin(self, tensor: P, dim: int) -> P:
        """Running minima along ``dim``."""

    @abc.abstractmethod
    def float_cummax(self, tensor: P, dim: int) -> P:
        """Running maxima along ``dim``."""

    @abc.abstractmethod
    def float_argmax(self, tensor: P, dim: int) -> P:
        """Index of the first maximum along ``dim`` (kept with size 1), as ints."""

    @abc.abstractmethod
    def float_argmin(self, tensor: P, dim: int) -> P:
        """Index of the first minimum along ``dim`` (kept with size 1), as ints."""

    def float_max(self, tensor: P) -> P:
        """The largest value, shape (1,)."""
        return g.reduce_all(self, "float", "max", tensor)

    def float_max_dim(self, tensor: P, dim: int) -> P:
        """Maxima along ``dim`` (kept with size 1)."""
        return self.float_max_dim_with_indices(tensor, dim)[0]

    def float_max_dim_with_indices(self, tensor: P, dim: int) -> tuple[P, P]:
        """Maxima along ``dim`` and their indices."""
        return g.pick_dim(self, "float", "argmax", tensor, dim)

    def float_min(self, tensor: P) -> P:
        """The smallest value, shape (1,)."""
        return g.reduce_all(self, "float", "min", tensor)

    def float_min_dim(self, tensor: P, dim: int) -> P:
        """Minima along ``dim`` (kept with size 1)."""
        return self.float_min_dim_with_indices(tensor, dim)[0]

    def float_min_dim_with_indices(self, tensor: P, dim: int) -> tuple[P, P]:
        """Minima along ``dim`` and their indices."""
        return g.pick_dim(self, "float", "argmin", tensor, dim)

    def float_max_abs(self, tensor: P) -> P:
        """The largest absolute value, shape (1,)."""
        return self.float_max(self.float_abs(tensor))

    def float_max_abs_dim(self, tensor: P, dim: int) -> P:
        """Largest absolute values along ``dim``."""
        return self.float_max_dim(self.float_abs(tensor), dim)

    def float_any(self, tensor: P) -> P:
        """Whether any value is non-zero, shape (1,)."""
        return g.any_nonzero(self, "float", tensor, None)

    def float_any_dim(self, tensor: P, dim: int) -> P:
        """Whether any value along ``dim`` is non-zero."""
        return g.any_nonzero(self, "float", tensor, dim)

    def float_all(self, tensor: P) -> P:
        """Whether every value is non-zero, shape (1,)."""
        return g.all_nonzero(self, "float", tensor, None)

    def float_all_dim(self, tensor: P, dim: int) -> P:
        """Whether every value along ``dim`` is non-zero."""
        return g.all_nonzero(self, "float", tensor, dim)

    # -- sorting ----------------------------------------------------------------------------------
    def float_sort(self, tensor: P, dim: int, descending: bool) -> P:
        """Values sorted along ``dim`` (stable)."""
        return self.float_sort_with_indices(tensor, dim, descending)[0]

    def float_sort_with_indices(self, tensor: P, dim: int, descending: bool) -> tuple[P, P]:
        """Values sorted along ``dim`` (stable) and the indices they came from."""
        return g.host_sort(self, "float", tensor, dim, descending)

    def float_argsort(self, tensor: P, dim: int, descending: bool) -> P:
        """Indices that sort the values along ``dim`` (stable)."""
        return self.float_sort_with_indices(tensor, dim, descending)[1]

    def float_topk_with_indices(self, tensor: P, dim: int, k: int) -> tuple[P, P]:
        """The ``k`` largest values along ``dim``, in descending order, and their indices."""
        return g.topk(self, "float", tensor, dim, k)

    def float_topk(self, tensor: P, dim: int, k: int) -> P:
        """The ``k`` largest values along ``dim``, in descending order."""
        return self.float_topk_with_indices(tensor, dim, k)[0]

    def float_argtopk(self, tensor: P, dim: int, k: int) -> P:
        """Indices of the ``k`` largest values along ``dim``."""
        return self.float_topk_with_indices(tensor, dim, k)[1]

    # -- element-wise math ------------------------------------------------------------------------
    @abc.abstractmethod
    def float_exp(self, tensor: P) -> P:
        """``e ** x``."""

    @abc.abstractmethod
    def float_log(self, tensor: P) -> P:
        """Natural logarithm."""

    @abc.abstractmethod
    def float_log1p(self, tensor: P) -> P:
        """``log(1 + x)``, accurate near 0."""

    @abc.abstractmethod
    def float_sqrt(self, tensor: P) -> P:
        """Square root."""

    @abc.abstractmethod
    def float_abs(self, tensor: P) -> P:
        """Absolute value."""

    @abc.abstractmethod
    def float_cos(self, tensor: P) -> P:
        """Cosine."""

    @abc.abstractmethod
    def float_sin(self, tensor: P) -> P:
        """Sine."""

    @abc.abstractmethod
    def float_tan(self, tensor: P) -> P:
        """Tangent."""

    @abc.abstractmethod
    def float_cosh(self, tensor: P) -> P:
        """Hyperbolic cosine."""

    @abc.abstractmethod
    def float_sinh(self, tensor: P) -> P:
        """Hyperbolic sine."""

    @abc.abstractmethod
    def float_tanh(self, tensor: P) -> P:
        """Hyperbolic tangent."""

    @abc.abstractmethod
    def float_acos(self, tensor: P) -> P:
        """Inverse cosine."""

    @abc.abstractmethod
    def float_acosh(self, tensor: P) -> P:
        """Inverse hyperbolic cosine."""

    @abc.abstractmethod
    def float_asin(self, tensor: P) -> P:
        """Inverse sine."""

    @abc.abstractmethod
    def float_asinh(self, tensor: P) -> P:
        """Inverse hyperbolic sine."""

    @abc.abstractmethod
    def float_atan(self, tensor: P) -> P:
        """Inverse tangent."""

    @abc.abstractmethod
    def float_atanh(self, tensor: P) -> P:
        """Inverse hyperbolic tangent."""

    @abc.abstractmethod
    def float_atan2(self, lhs: P, rhs: P) -> P:
        """The angle of the point ``(rhs, lhs)``: ``atan(lhs / rhs)`` in the right quadrant."""

    @abc.abstractmethod
    def float_round(self, tensor: P) -> P:
        """Rounded to the nearest integer, halves to even."""

    @abc.abstractmethod
    def float_floor(self, tensor: P) -> P:
        """Rounded down."""

    @abc.abstractmethod
    def float_ceil(self, tensor: P) -> P:
        """Rounded up."""

    @abc.abstractmethod
    def float_trunc(self, tensor: P) -> P:
        """Rounded toward zero."""

    @abc.abstractmethod
    def float_erf(self, tensor: P) -> P:
        """The error function."""

    def float_erfinv(self, tensor: P) -> P:
        """The inverse error function: ``x`` with ``erf(x) = y`` for ``y`` in ``(-1, 1)``; ``-inf`` and
        ``inf`` at ``-1`` and ``1``, NaN beyond.

        Default: Winitzki's approximation refined by three Newton steps on ``float_erf``, in the
        tensor's dtype (to its precision for ``|y|`` up to about 0.999; closer to 1 the steps lose digits
        to ``erf(x) - y``).
        """
        b: Any = self
        magnitude = b.float_abs(tensor)
        # log(1 - y^2) as log((1 - |y|)(1 + |y|)): no cancellation in 1 - y^2 near |y| = 1
        ln = b.float_log(
            b.float_mul(b.float_add_scalar(b.float_neg(magnitude), 1.0), b.float_add_scalar(magnitude, 1.0))
        )
        t = b.float_add_scalar(b.float_mul_scalar(ln, 0.5), _WINITZKI_T)
        inner = b.float_sub(b.float_mul(t, t), b.float_mul_scalar(ln, 1.0 / _WINITZKI_A))
        x = b.float_sqrt(b.float_sub(b.float_sqrt(inner), t))
        for _ in range(3):
            residual = b.float_sub(b.float_erf(x), magnitude)
            slope = b.float_mul_scalar(b.float_exp(b.float_mul(x, x)), _SQRT_PI_2)
            x = b.float_sub(x, b.float_mul(residual, slope))
        edge = b.float_equal_elem(magnitude, 1.0)  # erfinv(+-1) = +-inf, where the steps give NaN
        x = b.float_mask_fill(x, edge, math.inf)
        return b.float_mul(x, b.float_sign(tensor))  # the sign back (0 stays 0, NaN stays NaN)

    @abc.abstractmethod
    def float_powf(self, lhs: P, rhs: P) -> P:
        """``lhs ** rhs`` element-wise."""

    @abc.abstractmethod
    def float_powf_scalar(self, tensor: P, exponent: float) -> P:
        """``tensor ** exponent``."""

    def float_powi(self, lhs: P, rhs: P) -> P:
        """``lhs ** rhs`` with an int tensor of exponents."""
        return self.float_powf(lhs, self.int_into_float(rhs, DType.of(lhs.dtype)))  # type: ignore[attr-defined]

    def float_powi_scalar(self, tensor: P, exponent: int) -> P:
        """``tensor ** exponent`` for an integer exponent."""
        return self.float_powf_scalar(tensor, float(exponent))

    @in_f32
    def float_hypot(self, lhs: P, rhs: P) -> P:
        """``sqrt(lhs**2 + rhs**2)`` without overflow or underflow on the way; infinite where either
        operand is, even if the other is NaN (as IEEE 754's ``hypot``)."""
        a, b = self.float_abs(lhs), self.float_abs(rhs)
        # big * sqrt(1 + (small / big)**2): the squares are at most 1. NaN compares false, so a NaN
        # lands in big or small and makes the ratio NaN
        a_larger = self.float_greater_equal(a, b)
        big = self.float_mask_where(b, a_larger, a)
        small = self.float_mask_where(a, a_larger, b)
        ratio = self.float_div(small, self.float_mask_fill(big, self.float_equal_elem(big, 0.0), 1.0))
        root = self.float_sqrt(self.float_add_scalar(self.float_mul(ratio, ratio), 1.0))
        infinite = self.bool_or(self.float_is_inf(a), self.float_is_inf(b))  # type: ignore[attr-defined]
        return self.float_mask_fill(self.float_mul(big, root), infinite, math.inf)

    # -- autodiff hooks (no-ops outside an autodiff backend) --------------------------------------
    def float_detach(self, tensor: P) -> P:
        """The tensor cut from the autodiff graph."""
        return tensor

    def float_set_require_grad(self, tensor: P, require_grad: bool) -> P:
        """The tensor marked (or unmarked) as a leaf that gradients are computed for."""
        return tensor

    def float_is_require_grad(self, tensor: P) -> bool:
        """Whether gradients are computed for the tensor."""
        return False

    # -- grid sampling ----------------------------------------------------------------------------
    @in_f32
    def float_grid_sample_2d(self, tensor: P, grid: P, options: GridSampleOptions) -> P:
        """``tensor [n, c, h, w]`` sampled at the normalized coordinates ``grid [n, h_out, w_out, 2]``
        (x, then y, in ``[-1, 1]``): ``[n, c, h_out, w_out]``, as PyTorch's ``F.grid_sample`` with the
        ``options``' mode, padding mode and corner alignment."""
        return _grid_sample.grid_sample_2d(self, tensor, grid, options)
