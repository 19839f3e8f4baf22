"""``IntTensorOps``: the int op group of the backend interface (bitwise ops included)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._data import TensorData
from .._distribution import Distribution
from .._dtype import DType
from .._options import IndexingUpdateOp
from . import _generic as g

if TYPE_CHECKING:
    from .._device import Device

P = Any
Shape = tuple[int, ...]


class IntTensorOps(abc.ABC):
    """Ops on int primitives; the conventions of ``FloatTensorOps`` hold.

    ``int_div`` floors like Python's ``//`` and ``int_remainder`` takes the sign of the divisor like
    Python's ``%``, so that ``a == (a // b) * b + a % b``.

    Edge values: unsigned arithmetic wraps modulo ``2**bits`` (as in C, NumPy and PyTorch), a left shift
    loses the bits past the width and a signed right shift fills with the sign; every backend gives
    these. Where C, NumPy and PyTorch disagree the result is implementation-defined, in the groups of
    ``burn_backend.testing.IMPLEMENTATION_DEFINED`` that the conformance suite tests against NumPy and a
    backend may declare: ``int-division-by-zero`` (``int_div`` and ``int_remainder`` by 0),
    ``int-overflow`` (a signed ``add``, ``sub``, ``mul``, ``neg``, ``abs``, ``square``, ``powi`` or
    floor division whose exact result does not fit the dtype, and the minimum's remainder by -1: NumPy
    and PyTorch wrap) and ``shift-out-of-range`` (shift counts outside ``[0, bits)``).
    """

    int_dtype: DType
    float_dtype: DType

    # -- data, creation, device --------------------------------------------------------------------
    @abc.abstractmethod
    def int_from_data(self, data: TensorData, device: Device) -> P:
        """A tensor holding ``data`` (an int dtype) on ``device``."""

    @abc.abstractmethod
    def int_into_data(self, tensor: P) -> TensorData:
        """The tensor's values on the host."""

    @abc.abstractmethod
    def int_device(self, tensor: P) -> Device:
        """The device the tensor lives on."""

    @abc.abstractmethod
    def int_to_device(self, tensor: P, device: Device) -> P:
        """The tensor moved to another device of this backend."""

    @abc.abstractmethod
    def int_empty(self, shape: Shape, device: Device, dtype: DType) -> P:
        """A tensor of ``shape`` with unspecified values."""

    @abc.abstractmethod
    def int_random(self, shape: Shape, distribution: Distribution, device: Device, dtype: DType) -> P:
        """Values drawn from ``distribution`` with the device's generator: for the default distribution,
        integers uniform over the dtype's whole range (``[min, max]``, as Burn's); for a uniform one,
        integers uniform in ``[low, high)``; for Bernoulli and normal, the draws truncated toward zero."""

    def int_zeros(self, shape: Shape, device: Device, dtype: DType) -> P:
        """A tensor of zeros."""
        return self.int_full(shape, 0, device, dtype)

    def int_ones(self, shape: Shape, device: Device, dtype: DType) -> P:
        """A tensor of ones."""
        return self.int_full(shape, 1, device, dtype)

    def int_full(self, shape: Shape, fill_value: int, device: Device, dtype: DType) -> P:
        """A tensor filled with ``fill_value``."""
        return g.full(self, "int", shape, fill_value, device, dtype)

    def int_arange(self, start: int, end: int, device: Device, dtype: DType) -> P:
        """``start, start + 1, ..., end - 1``."""
        return self.int_arange_step(start, end, 1, device, dtype)

    def int_arange_step(self, start: int, end: int, step: int, device: Device, dtype: DType) -> P:
        """``start, start + step, ...`` up to (not including) ``end``."""
        values = np.arange(start, end, step, dtype=dtype.numpy)
        return self.int_from_data(TensorData._wrap(values), device)

    @abc.abstractmethod
    def int_into_float(self, tensor: P, dtype: DType) -> P:
        """The values as a float tensor of ``dtype``."""

    @abc.abstractmethod
    def int_cast(self, tensor: P, dtype: DType) -> P:
        """The values converted to another int ``dtype`` (wrapping on overflow)."""

    # -- arithmetic -------------------------------------------------------------------------------
    @abc.abstractmethod
    def int_add(self, lhs: P, rhs: P) -> P:
        """``lhs + rhs``."""

    @abc.abstractmethod
    def int_add_scalar(self, lhs: P, rhs: int) -> P:
        """``lhs + rhs``."""

    @abc.abstractmethod
    def int_sub(self, lhs: P, rhs: P) -> P:
        """``lhs - rhs``."""

    @abc.abstractmethod
    def int_sub_scalar(self, lhs: P, rhs: int) -> P:
        """``lhs - rhs``."""

    @abc.abstractmethod
    def int_mul(self, lhs: P, rhs: P) -> P:
        """``lhs * rhs``."""

    @abc.abstractmethod
    def int_mul_scalar(self, lhs: P, rhs: int) -> P:
        """``lhs * rhs``."""

    @abc.abstractmethod
    def int_div(self, lhs: P, rhs: P) -> P:
        """``lhs // rhs`` (floor division: rounded toward -inf).

        Implementation-defined (the conformance suite's groups, which a backend may declare): a zero
        divisor (``int-division-by-zero``: NumPy gives 0, PyTorch raises, C traps; the Tensor API raises
        ``ZeroDivisionError`` first where ``validates_index_values``), and the dtype's minimum over -1
        (``int-overflow``: NumPy and PyTorch give the minimum, C traps)."""

    @abc.abstractmethod
    def int_div_scalar(self, lhs: P, rhs: int) -> P:
        """``lhs // rhs`` (floor division), implementation-defined where ``int_div``'s is."""

    @abc.abstractmethod
    def int_remainder(self, lhs: P, rhs: P) -> P:
        """``lhs % rhs`` with the sign of ``rhs`` (``lhs - rhs * (lhs // rhs)``).

        Implementation-defined: a zero divisor (``int-division-by-zero``: NumPy gives 0, PyTorch raises)
        and the dtype's minimum by -1 (``int-overflow``: NumPy and PyTorch give 0, C's division traps)."""

    @abc.abstractmethod
    def int_remainder_scalar(self, lhs: P, rhs: int) -> P:
        """``lhs % rhs`` (sign of ``rhs``), implementation-defined where ``int_remainder``'s is."""

    @abc.abstractmethod
    def int_matmul(self, lhs: P, rhs: P) -> P:
        """Matrix product over the last two dims; leading dims broadcast."""

    @abc.abstractmethod
    def int_abs(self, tensor: P) -> P:
        """Absolute value (of a signed dtype's minimum: implementation-defined, ``int-overflow``)."""

    def int_neg(self, tensor: P) -> P:
        """``-tensor`` (for unsigned dtypes modulo ``2**bits``, as ``0 - tensor``)."""
        dtype = DType.of(tensor.dtype)
        if dtype.is_signed:
            return self.int_mul_scalar(tensor, -1)
        # -1 does not fit an unsigned dtype, and scalars must fit the tensor's dtype
        zero = self.int_zeros((1,) * len(tensor.shape), self.int_device(tensor), dtype)
        return self.int_sub(zero, tensor)

    def int_sign(self, tensor: P) -> P:
        """-1, 0 or 1 by the sign of each value."""
        return g.sign(self, "int", tensor)

    def int_square(self, tensor: P) -> P:
        """``tensor * tensor``."""
        return self.int_mul(tensor, tensor)

    def int_powi(self, lhs: P, rhs: P) -> P:
        """``lhs ** rhs`` for non-negative int exponents, by repeated squaring over the exponent's bits
        (exact: unsigned results wrap modulo ``2**bits`` as ``int_mul``'s do). A signed result that does
        not fit the dtype is implementation-defined (``int-overflow``: NumPy and PyTorch wrap)."""
        exponent_dtype = DType.of(rhs.dtype)
        bits = np.dtype(exponent_dtype.numpy).itemsize * 8 - int(exponent_dtype.is_signed)
        shape = np.broadcast_shapes(tuple(lhs.shape), tuple(rhs.shape))
        result = self.int_ones(shape, self.int_device(lhs), DType.of(lhs.dtype))
        base, exponent = lhs, rhs
        # every bit of a non-negative exponent, without reading the largest one back from the device
        for bit in range(bits):
            odd = self.int_equal_elem(self.bitwise_and_scalar(exponent, 1), 1)
            result = self.int_mask_where(result, odd, self.int_mul(result, base))
            if bit + 1 < bits:
                exponent = self.bitwise_right_shift_scalar(exponent, 1)
                base = self.int_mul(base, base)
        return result

    def int_powi_scalar(self, tensor: P, exponent: int) -> P:
        """``tensor ** exponent`` for a non-negative integer exponent, by repeated squaring."""
        if exponent < 0:
            raise ValueError(f"int_powi_scalar: negative exponent {exponent} on an int tensor")
        result = self.int_ones(tuple(tensor.shape), self.int_device(tensor), DType.of(tensor.dtype))
        base = tensor
        while exponent:
            if exponent & 1:
                result = self.int_mul(result, base)
            exponent >>= 1
            if exponent:
                base = self.int_mul(base, base)
        return result

    def int_clamp(self, tensor: P, minimum: int, maximum: int) -> P:
        """Values limited to ``[minimum, maximum]``."""
        return self.int_clamp_max(self.int_clamp_min(tensor, minimum), maximum)

    def int_clamp_min(self, tensor: P, minimum: int) -> P:
        """Values limited to at least ``minimum``."""
        return g.clamp_min(self, "int", tensor, minimum)

    def int_clamp_max(self, tensor: P, maximum: int) -> P:
        """Values limited to at most ``maximum``."""
        return g.clamp_max(self, "int", tensor, maximum)

    # -- bitwise ----------------------------------------------------------------------------------
    @abc.abstractmethod
    def bitwise_and(self, lhs: P, rhs: P) -> P:
        """``lhs & rhs``."""

    @abc.abstractmethod
    def bitwise_and_scalar(self, lhs: P, rhs: int) -> P:
        """``lhs & rhs``."""

    @abc.abstractmethod
    def bitwise_or(self, lhs: P, rhs: P) -> P:
        """``lhs | rhs``."""

    @abc.abstractmethod
    def bitwise_or_scalar(self, lhs: P, rhs: int) -> P:
        """``lhs | rhs``."""

    @abc.abstractmethod
    def bitwise_xor(self, lhs: P, rhs: P) -> P:
        """``lhs ^ rhs``."""

    @abc.abstractmethod
    def bitwise_xor_scalar(self, lhs: P, rhs: int) -> P:
        """``lhs ^ rhs``."""

    @abc.abstractmethod
    def bitwise_not(self, tensor: P) -> P:
        """``~tensor``."""

    @abc.abstractmethod
    def bitwise_left_shift(self, lhs: P, rhs: P) -> P:
        """``lhs << rhs``: the bits shifted past the width are lost. A count outside ``[0, bits)`` is
        implementation-defined (``shift-out-of-range``: NumPy gives 0; C leaves it undefined)."""

    @abc.abstractmethod
    def bitwise_left_shift_scalar(self, lhs: P, rhs: int) -> P:
        """``lhs << rhs`` (a count outside ``[0, bits)``: implementation-defined)."""

    @abc.abstractmethod
    def bitwise_right_shift(self, lhs: P, rhs: P) -> P:
        """``lhs >> rhs`` (arithmetic for signed dtypes: the sign fills). A count outside ``[0, bits)``
        is implementation-defined (``shift-out-of-range``: NumPy gives the sign's fill, 0 or -1)."""

    @abc.abstractmethod
    def bitwise_right_shift_scalar(self, lhs: P, rhs: int) -> P:
        """``lhs >> rhs`` (a count outside ``[0, bits)``: implementation-defined)."""

    # -- layout -----------------------------------------------------------------------------------
    @abc.abstractmethod
    def int_reshape(self, tensor: P, shape: Shape) -> P:
        """The same values in C order with another shape."""

    @abc.abstractmethod
    def int_swap_dims(self, tensor: P, dim1: int, dim2: int) -> P:
        """Dims ``dim1`` and ``dim2`` exchanged."""

    @abc.abstractmethod
    def int_permute(self, tensor: P, axes: Sequence[int]) -> P:
        """Dims reordered: result dim ``i`` is input dim ``axes[i]``."""

    @abc.abstractmethod
    def int_flip(self, tensor: P, axes: Sequence[int]) -> P:
        """Values reversed along each dim of ``axes``."""

    @abc.abstractmethod
    def int_expand(self, tensor: P, shape: Shape) -> P:
        """Broadcast to ``shape``."""

    @abc.abstractmethod
    def int_unfold(self, tensor: P, dim: int, size: int, step: int) -> P:
        """Windows of ``size`` every ``step`` along ``dim`` (see ``float_unfold``)."""

    def int_transpose(self, tensor: P) -> P:
        """The last two dims swapped."""
        return g.transpose(self, "int", tensor)

    def int_repeat_dim(self, tensor: P, dim: int, times: int) -> P:
        """The tensor repeated ``times`` along ``dim``."""
        return g.repeat_dim(self, "int", tensor, dim, times)

    def int_cat(self, tensors: Sequence[P], dim: int) -> P:
        """Tensors joined along ``dim``."""
        return g.cat(self, "int", tensors, dim)

    # -- indexing ---------------------------------------------------------------------------------
    @abc.abstractmethod
    def int_slice(self, tensor: P, slices: Sequence[slice]) -> P:
        """The values selected by one canonical slice per dim."""

    @abc.abstractmethod
    def int_slice_assign(self, tensor: P, slices: Sequence[slice], value: P) -> P:
        """A copy with the sliced region replaced by ``value``."""

    @abc.abstractmethod
    def int_gather(self, tensor: P, dim: int, indices: P) -> P:
        """Values picked along ``dim`` by ``indices`` (see ``float_gather``)."""

    @abc.abstractmethod
    def int_scatter_add(self, tensor: P, dim: int, indices: P, values: P) -> P:
        """A copy with ``values`` added at ``indices`` along ``dim``."""

    @abc.abstractmethod
    def int_select(self, tensor: P, dim: int, indices: P) -> P:
        """The slices at 1-d ``indices`` along ``dim``."""

    @abc.abstractmethod
    def int_select_add(self, tensor: P, dim: int, indices: P, values: P) -> P:
        """A copy with ``values`` added to the slices at ``indices``."""

    @abc.abstractmethod
    def int_mask_where(self, tensor: P, mask: P, value: P) -> P:
        """``value`` where ``mask`` is true, else ``tensor``."""

    @abc.abstractmethod
    def int_mask_fill(self, tensor: P, mask: P, value: int) -> P:
        """``value`` where ``mask`` is true, else ``tensor``."""

    def int_mask_select(self, tensor: P, mask: P) -> P:
        """The values where ``mask`` is true, in row-major order, as a 1-d tensor."""
        return g.mask_select(self, "int", tensor, mask)

    def int_gather_nd(self, tensor: P, indices: P) -> P:
        """``out[i...] = tensor[indices[i..., 0], ..., indices[i..., k - 1]]`` for an int ``indices`` of
        shape ``[..., k]`` (k at most the tensor's rank); the result is ``indices.shape[:-1]`` plus the
        tensor's dims after the first k."""
        return g.gather_nd(self, "int", tensor, indices)

    def int_scatter_nd(self, tensor: P, indices: P, values: P, update: IndexingUpdateOp) -> P:
        """A copy of ``tensor`` with ``values`` combined by ``update`` at the positions ``indices``
        (shaped as for ``int_gather_nd``; ``values`` has the shape ``int_gather_nd`` would return)."""
        return g.scatter_nd(self, "int", tensor, indices, values, update)

    def int_scatter(self, tensor: P, dim: int, indices: P, values: P, update: IndexingUpdateOp) -> P:
        """A copy of ``tensor`` with ``values`` combined by ``update`` at ``indices`` along ``dim``."""
        return g.scatter(self, "int", tensor, dim, indices, values, update)

    # -- comparison -------------------------------------------------------------------------------
    @abc.abstractmethod
    def int_equal(self, lhs: P, rhs: P) -> P:
        """``lhs == rhs``."""

    @abc.abstractmethod
    def int_equal_elem(self, lhs: P, rhs: int) -> P:
        """``lhs == rhs``."""

    def int_not_equal(self, lhs: P, rhs: P) -> P:
        """``lhs != rhs``."""
        return self.bool_not(self.int_equal(lhs, rhs))  # type: ignore[attr-defined]

    def int_not_equal_elem(self, lhs: P, rhs: int) -> P:
        """``lhs != rhs``."""
        return self.bool_not(self.int_equal_elem(lhs, rhs))  # type: ignore[attr-defined]

    @abc.abstractmethod
    def int_greater(self, lhs: P, rhs: P) -> P:
        """``lhs > rhs``."""

    @abc.abstractmethod
    def int_greater_elem(self, lhs: P, rhs: int) -> P:
        """``lhs > rhs``."""

    @abc.abstractmethod
    def int_greater_equal(self, lhs: P, rhs: P) -> P:
        """``lhs >= rhs``."""

    @abc.abstractmethod
    def int_greater_equal_elem(self, lhs: P, rhs: int) -> P:
        """``lhs >= rhs``."""

    @abc.abstractmethod
    def int_lower(self, lhs: P, rhs: P) -> P:
        """``lhs < rhs``."""

    @abc.abstractmethod
    def int_lower_elem(self, lhs: P, rhs: int) -> P:
        """``lhs < rhs``."""

    @abc.abstractmethod
    def int_lower_equal(self, lhs: P, rhs: P) -> P:
        """``lhs <= rhs``."""

    @abc.abstractmethod
    def int_lower_equal_elem(self, lhs: P, rhs: int) -> P:
        """``lhs <= rhs``."""

    # -- reductions -------------------------------------------------------------------------------
    @abc.abstractmethod
    def int_sum(self, tensor: P) -> P:
        """The sum of all values, shape (1,)."""

    @abc.abstractmethod
    def int_sum_dim(self, tensor: P, dim: int) -> P:
        """Sums along ``dim``."""

    @abc.abstractmethod
    def int_prod(self, tensor: P) -> P:
        """The product of all values, shape (1,)."""

    @abc.abstractmethod
    def int_prod_dim(self, tensor: P, dim: int) -> P:
        """Products along ``dim``."""

    @abc.abstractmethod
    def int_mean_dim(self, tensor: P, dim: int) -> P:
        """Means along ``dim``, floor-divided."""

    def int_mean(self, tensor: P) -> P:
        """The mean of all values, floor-divided, shape (1,)."""
        count = int(np.prod(tensor.shape))
        return self.int_div_scalar(self.int_sum(tensor), count)

    @abc.abstractmethod
    def int_cumsum(self, tensor: P, dim: int) -> P:
        """Running sums along ``dim``."""

    @abc.abstractmethod
    def int_cumprod(self, tensor: P, dim: int) -> P:
        """Running products along ``dim``."""

    @abc.abstractmethod
    def int_cummin(self, tensor: P, dim: int) -> P:
        """Running minima along ``dim``."""

    @abc.abstractmethod
    def int_cummax(self, tensor: P, dim: int) -> P:
        """Running maxima along ``dim``."""

    @abc.abstractmethod
    def int_argmax(self, tensor: P, dim: int) -> P:
        """Index of the first maximum along ``dim``."""

    @abc.abstractmethod
    def int_argmin(self, tensor: P, dim: int) -> P:
        """Index of the first minimum along ``dim``."""

    def int_max(self, tensor: P) -> P:
        """The largest value, shape (1,)."""
        return g.reduce_all(self, "int", "max", tensor)

    def int_max_dim(self, tensor: P, dim: int) -> P:
        """Maxima along ``dim``."""
        return self.int_max_dim_with_indices(tensor, dim)[0]

    def int_max_dim_with_indices(self, tensor: P, dim: int) -> tuple[P, P]:
        """Maxima along ``dim`` and their indices."""
        return g.pick_dim(self, "int", "argmax", tensor, dim)

    def int_min(self, tensor: P) -> P:
        """The smallest value, shape (1,)."""
        return g.reduce_all(self, "int", "min", tensor)

    def int_min_dim(self, tensor: P, dim: int) -> P:
        """Minima along ``dim``."""
        return self.int_min_dim_with_indices(tensor, dim)[0]

    def int_min_dim_with_indices(self, tensor: P, dim: int) -> tuple[P, P]:
        """Minima along ``dim`` and their indices."""
        return g.pick_dim(self, "int", "argmin", tensor, dim)

    def int_max_abs(self, tensor: P) -> P:
        """The largest absolute value, shape (1,)."""
        return self.int_max(self.int_abs(tensor))

    def int_max_abs_dim(self, tensor: P, dim: int) -> P:
        """Largest absolute values along ``dim``."""
        return self.int_max_dim(self.int_abs(tensor), dim)

    def int_any(self, tensor: P) -> P:
        """Whether any value is non-zero, shape (1,)."""
        return g.any_nonzero(self, "int", tensor, None)

    def int_any_dim(self, tensor: P, dim: int) -> P:
        """Whether any value along ``dim`` is non-zero."""
        return g.any_nonzero(self, "int", tensor, dim)

    def int_all(self, tensor: P) -> P:
        """Whether every value is non-zero, shape (1,)."""
        return g.all_nonzero(self, "int", tensor, None)

    def int_all_dim(self, tensor: P, dim: int) -> P:
        """Whether every value along ``dim`` is non-zero."""
        return g.all_nonzero(self, "int", tensor, dim)

    # -- sorting ----------------------------------------------------------------------------------
    def int_sort(self, tensor: P, dim: int, descending: bool) -> P:
        """Values sorted along ``dim`` (stable)."""
        return self.int_sort_with_indices(tensor, dim, descending)[0]

    def int_sort_with_indices(self, tensor: P, dim: int, descending: bool) -> tuple[P, P]:
        """Values sorted along ``dim`` (stable) and their indices."""
        return g.host_sort(self, "int", tensor, dim, descending)

    def int_argsort(self, tensor: P, dim: int, descending: bool) -> P:
        """Indices that sort the values along ``dim``."""
        return self.int_sort_with_indices(tensor, dim, descending)[1]

    def int_topk_with_indices(self, tensor: P, dim: int, k: int) -> tuple[P, P]:
        """The ``k`` largest values along ``dim`` and their indices."""
        return g.topk(self, "int", tensor, dim, k)

    def int_topk(self, tensor: P, dim: int, k: int) -> P:
        """The ``k`` largest values along ``dim``."""
        return self.int_topk_with_indices(tensor, dim, k)[0]

    def int_argtopk(self, tensor: P, dim: int, k: int) -> P:
        """Indices of the ``k`` largest values along ``dim``."""
        return self.int_topk_with_indices(tensor, dim, k)[1]
