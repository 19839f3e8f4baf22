"""The int op group over an array namespace: arithmetic (floor division, Python's remainder), bitwise
ops and shifts, reductions in the tensor's dtype, random draws over the whole range of a dtype."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from .._distribution import Distribution
from .._dtype import DType
from .._ops.int import IntTensorOps
from .._tensor_base import int_range
from . import _common as c

if TYPE_CHECKING:
    from .._device import Device
    from ._runtime import ArrayRuntime

Array = Any
# whether ``x (op) number`` holds for every x when the number lies above / below the dtype's range
_BEYOND = {
    "equal": (False, False),
    "not_equal": (True, True),
    "greater": (False, True),
    "greater_equal": (False, True),
    "lower": (True, False),
    "lower_equal": (True, False),
}


def _compare_scalar(name: str) -> Callable[..., Array]:
    """``c.<name>(self, tensor, number)``, answered without the number where it lies beyond the tensor's
    dtype (NumPy compares such Python ints; CuPy raises on those beyond 64 bits)."""
    compare = getattr(c, name)
    above, below = _BEYOND[name]

    def method(self: Any, lhs: Array, rhs: int) -> Array:
        bounds = int_range(lhs.dtype)
        if bounds[0] <= rhs <= bounds[1]:
            return compare(self, lhs, rhs)
        truth = above if rhs > bounds[1] else below
        return self.xp.full_like(lhs, truth, dtype=self.runtime.dtype(DType.BOOL))

    method.__name__ = f"int_{name}_elem"
    return method


class ArrayIntOps(IntTensorOps):
    """The int op group written once against ``self.xp``."""

    runtime: ClassVar[ArrayRuntime]
    xp: ClassVar[Any]
    generator: Callable[[Device], Any]

    int_from_data = c.from_data
    int_into_data = c.into_data
    int_device = c.device_of
    int_to_device = c.to_device
    int_empty = c.empty
    int_full = c.full
    int_reshape = c.reshape
    int_swap_dims = c.swap_dims
    int_permute = c.permute
    int_flip = c.flip
    int_expand = c.expand
    int_unfold = c.unfold
    int_cat = c.cat
    int_repeat_dim = c.repeat_dim
    int_slice = c.slice_
    int_slice_assign = c.slice_assign
    int_gather = c.gather
    int_scatter = c.scatter
    int_scatter_add = c.scatter_add
    int_select = c.select
    int_select_add = c.select_add
    int_gather_nd = c.gather_nd
    int_scatter_nd = c.scatter_nd
    int_mask_select = c.mask_select
    int_mask_where = c.mask_where
    int_mask_fill = c.mask_fill
    int_equal = c.equal
    int_not_equal = c.not_equal
    int_greater = c.greater
    int_greater_equal = c.greater_equal
    int_lower = c.lower
    int_lower_equal = c.lower_equal
    int_equal_elem = _compare_scalar("equal")
    int_not_equal_elem = _compare_scalar("not_equal")
    int_greater_elem = _compare_scalar("greater")
    int_greater_equal_elem = _compare_scalar("greater_equal")
    int_lower_elem = _compare_scalar("lower")
    int_lower_equal_elem = _compare_scalar("lower_equal")
    int_argmax = c.argmax
    int_argmin = c.argmin
    int_max = c.max_
    int_max_dim = c.max_dim
    int_min = c.min_
    int_min_dim = c.min_dim
    int_max_dim_with_indices = c.max_dim_with_indices
    int_min_dim_with_indices = c.min_dim_with_indices
    int_cummin = c.cummin
    int_cummax = c.cummax
    int_sort = c.sort
    int_sort_with_indices = c.sort_with_indices
    int_argsort = c.argsort
    int_topk = c.topk
    int_topk_with_indices = c.topk_with_indices
    int_argtopk = c.argtopk
    int_cast = int_into_float = c.cast
    int_any = c.any_
    int_any_dim = c.any_dim
    int_all = c.all_
    int_all_dim = c.all_dim

    def int_random(
        self, shape: tuple[int, ...], distribution: Distribution, device: Device, dtype: DType
    ) -> Array:
        runtime = self.runtime
        f64, target = runtime.dtype(DType.F64), runtime.dtype(dtype)
        with runtime.on_device(device.index), runtime.quiet():
            generator = self.generator(device)
            if distribution.kind not in ("default", "uniform"):
                samples = runtime.sample(generator, shape, distribution, f64)
                return runtime.cast(self.xp.trunc(samples), target)
            # 64 random bits per value, two draws of 32 (an f64 draw holds 53 random bits)
            u64, uniform = runtime.dtype(DType.U64), Distribution.default()
            high, low = (runtime.sample(generator, shape, uniform, f64) * 2.0**32 for _ in range(2))
            bits = (runtime.cast(high, u64) << 32) | runtime.cast(low, u64)
            if distribution.kind == "uniform":
                start, span = int(distribution.low), int(distribution.high) - int(distribution.low)
                # start + bits % span, modulo 2**64: exact in the dtype's bits for any span and sign
                bits = self.xp.remainder(bits, span) + start % 2**64
            # the cast keeps the low bits (two's complement): uniform over every value of the dtype
            return runtime.cast(bits, target)

    def int_add(self, lhs: Array, rhs: Array) -> Array:
        return lhs + rhs

    def int_add_scalar(self, lhs: Array, rhs: int) -> Array:
        return self.xp.add(lhs, rhs)  # not the operator: see the float ops' ``_arithmetic``

    def int_sub(self, lhs: Array, rhs: Array) -> Array:
        return lhs - rhs

    def int_sub_scalar(self, lhs: Array, rhs: int) -> Array:
        return self.xp.subtract(lhs, rhs)  # not the operator: see the float ops' ``_arithmetic``

    def int_mul(self, lhs: Array, rhs: Array) -> Array:
        return lhs * rhs

    def int_mul_scalar(self, lhs: Array, rhs: int) -> Array:
        return self.xp.multiply(lhs, rhs)  # not the operator: see the float ops' ``_arithmetic``

    def int_div(self, lhs: Array, rhs: Any) -> Array:
        with self.runtime.quiet():  # a zero divisor (unchecked below the Tensor API) gives 0, silently
            return self.xp.floor_divide(lhs, rhs)

    int_div_scalar = int_div

    def int_remainder(self, lhs: Array, rhs: Any) -> Array:
        with self.runtime.quiet():
            return self.xp.remainder(lhs, rhs)

    int_remainder_scalar = int_remainder

    def int_matmul(self, lhs: Array, rhs: Array) -> Array:
        return self.xp.matmul(lhs, rhs)

    def int_abs(self, tensor: Array) -> Array:
        return self.xp.abs(tensor)

    def int_neg(self, tensor: Array) -> Array:
        return -tensor

    def int_sign(self, tensor: Array) -> Array:
        return self.xp.sign(tensor)

    def int_clamp(self, tensor: Array, minimum: int, maximum: int) -> Array:
        return self.xp.clip(tensor, minimum, maximum)

    def int_clamp_min(self, tensor: Array, minimum: int) -> Array:
        return self.xp.maximum(tensor, minimum)

    def int_clamp_max(self, tensor: Array, maximum: int) -> Array:
        return self.xp.minimum(tensor, maximum)

    def int_powi(self, lhs: Array, rhs: Array) -> Array:
        return self.xp.pow(lhs, self.runtime.cast(rhs, lhs.dtype))

    def int_powi_scalar(self, tensor: Array, exponent: int) -> Array:
        if exponent < 0:
            raise ValueError(f"int_powi_scalar: negative exponent {exponent} on an int tensor")
        return self.xp.pow(tensor, exponent)

    def int_sum(self, tensor: Array) -> Array:
        return self.xp.reshape(self.xp.sum(tensor, dtype=tensor.dtype), (1,))

    def int_sum_dim(self, tensor: Array, dim: int) -> Array:
        return self.xp.sum(tensor, axis=dim, keepdims=True, dtype=tensor.dtype)

    def int_prod(self, tensor: Array) -> Array:
        return self.xp.reshape(self.xp.prod(tensor, dtype=tensor.dtype), (1,))

    def int_prod_dim(self, tensor: Array, dim: int) -> Array:
        return self.xp.prod(tensor, axis=dim, keepdims=True, dtype=tensor.dtype)

    def int_mean(self, tensor: Array) -> Array:
        return self.xp.reshape(self.int_mean_dim(self.xp.reshape(tensor, (-1,)), 0), (1,))

    def int_mean_dim(self, tensor: Array, dim: int) -> Array:
        total = self.xp.sum(tensor, axis=dim, keepdims=True, dtype=self.runtime.dtype(DType.I64))
        return self.runtime.cast(total // max(tensor.shape[dim], 1), tensor.dtype)

    def int_cumsum(self, tensor: Array, dim: int) -> Array:
        return self.xp.cumulative_sum(tensor, axis=dim, dtype=tensor.dtype)

    def int_cumprod(self, tensor: Array, dim: int) -> Array:
        return self.xp.cumulative_prod(tensor, axis=dim, dtype=tensor.dtype)

    def int_max_abs(self, tensor: Array) -> Array:
        return self.xp.reshape(self.xp.max(self.xp.abs(tensor)), (1,))

    def int_max_abs_dim(self, tensor: Array, dim: int) -> Array:
        return self.xp.max(self.xp.abs(tensor), axis=dim, keepdims=True)

    def bitwise_and(self, lhs: Array, rhs: Any) -> Array:
        return lhs & rhs

    bitwise_and_scalar = bitwise_and

    def bitwise_or(self, lhs: Array, rhs: Any) -> Array:
        return lhs | rhs

    bitwise_or_scalar = bitwise_or

    def bitwise_xor(self, lhs: Array, rhs: Any) -> Array:
        return lhs ^ rhs

    bitwise_xor_scalar = bitwise_xor

    def bitwise_not(self, tensor: Array) -> Array:
        return ~tensor

    # Shifts by a count below 0 or of the dtype's width and more follow NumPy: 0, or the sign's fill for a
    # right shift. The Array API standard leaves them to the library (a GPU's shift instruction reads
    # a 64-bit count's low 32 bits, so CuPy shifted by INT64_MIN as by 0)
    def bitwise_left_shift(self, lhs: Array, rhs: Array) -> Array:
        return _shift(self, lhs, self.runtime.cast(rhs, lhs.dtype), left=True)

    def bitwise_left_shift_scalar(self, lhs: Array, rhs: int) -> Array:
        return _shift_by(self, lhs, rhs, left=True)

    def bitwise_right_shift(self, lhs: Array, rhs: Array) -> Array:
        return _shift(self, lhs, self.runtime.cast(rhs, lhs.dtype), left=False)

    def bitwise_right_shift_scalar(self, lhs: Array, rhs: int) -> Array:
        return _shift_by(self, lhs, rhs, left=False)


def _width(lhs: Array) -> int:
    return 8 * DType.of(lhs.dtype).numpy.itemsize


def _outside_fill(ops: Any, lhs: Array, left: bool) -> Array:
    """What a shift by a count outside ``[0, width)`` gives: 0, or for a right shift of a signed dtype
    the sign's fill (the value shifted by ``width - 1``: -1 for a negative value)."""
    if left or DType.of(lhs.dtype).numpy.kind != "i":
        return ops.xp.zeros_like(lhs)
    return lhs >> (_width(lhs) - 1)


def _shift(ops: Any, lhs: Array, counts: Array, left: bool) -> Array:
    xp = ops.xp
    outside = xp.logical_or(xp.less(counts, 0), xp.greater_equal(counts, _width(lhs)))
    inside = xp.where(outside, xp.zeros_like(counts), counts)
    shifted = lhs << inside if left else lhs >> inside
    return xp.where(outside, _outside_fill(ops, lhs, left), shifted)


def _shift_by(ops: Any, lhs: Array, count: int, left: bool) -> Array:
    if not 0 <= count < _width(lhs):
        return _outside_fill(ops, lhs, left)
    return lhs << count if left else lhs >> count
