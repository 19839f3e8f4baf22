"""Element-wise math of ``Tensor`` composed of other ops, so that every backend (and Autodiff, Fusion,
Router over it) has it, with gradients: pairwise extrema, a ternary ``where``, more exponentials and
logarithms, ``lerp``, ``fmod``, ``nan_to_num``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast, overload

import ml_dtypes
import numpy as np

from ._dtype import Kind
from ._shape import broadcast_shapes
from ._tensor_base import NDArray, Number, TensorBase
from ._tensor_reduce import TensorReductions

if TYPE_CHECKING:
    from ._tensor import Tensor

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _where(condition: Tensor, x: Tensor | Number, y: Tensor | Number) -> Tensor:
    """``x`` where ``condition`` is true, else ``y`` (``torch.where(condition, x, y)``, ``np.where``).

    ``condition`` is a Bool tensor; ``x`` and ``y`` are tensors of one dtype and device, or numbers
    (taken in the other operand's dtype; two numbers make a tensor of their kind on the condition's
    device). The three shapes broadcast. Gradients flow to ``x`` where the condition holds and to ``y``
    elsewhere.

    Example:
        >>> x = Tensor.from_data([1.0, -2.0, 3.0])
        >>> Tensor.where(x > 0, x, 0.0).tolist()
        [1.0, 0.0, 3.0]
    """
    if not isinstance(condition, TensorBase) or condition.kind is not Kind.BOOL:
        got = condition._describe() if isinstance(condition, TensorBase) else type(condition).__name__
        raise TypeError(f"where: the condition must be a Bool tensor, got {got} (compare first: x > 0)")
    cond_shape = tuple(condition.primitive.shape)
    if isinstance(x, TensorBase) and isinstance(y, TensorBase):
        x._check_other("where", y)
        x._check_device_of("where", condition)
        broadcast_shapes("where", cond_shape, tuple(x.primitive.shape), tuple(y.primitive.shape))
        return y.mask_where(condition, x)
    if isinstance(x, TensorBase):
        x._check_device_of("where", condition)
        broadcast_shapes("where", cond_shape, tuple(x.primitive.shape))
        return x.mask_fill(condition.bool_not(), x._scalar("where", y))
    if isinstance(y, TensorBase):
        y._check_device_of("where", condition)
        broadcast_shapes("where", cond_shape, tuple(y.primitive.shape))
        return y.mask_fill(condition, y._scalar("where", x))
    for value in (x, y):
        if not isinstance(value, (int, float)):
            raise TypeError(f"where: x and y must be tensors or numbers, got {type(value).__name__}")
    if isinstance(x, float) or isinstance(y, float):
        x, y = float(x), float(y)
    elif isinstance(x, bool) != isinstance(y, bool):
        x, y = int(x), int(y)
    base = condition._cls.full(condition.dims(), y, condition.device)
    return base.mask_fill(condition, x)


class _Where:
    """``Tensor.where(condition, x, y)`` on the class (``torch.where``); ``x.where(condition, y)`` on a
    tensor (PyTorch's ``Tensor.where``: ``x`` where ``condition``, else ``y``)."""

    def __init__(self) -> None:
        self.__doc__ = _where.__doc__

    @overload
    def __get__(
        self, instance: None, owner: type[Any]
    ) -> Callable[[Tensor, Tensor | Number, Tensor | Number], Tensor]: ...

    @overload
    def __get__(
        self, instance: TensorBase, owner: type[Any]
    ) -> Callable[[Tensor, Tensor | Number], Tensor]: ...

    def __get__(self, instance: TensorBase | None, owner: type[Any]) -> Callable[..., Tensor]:
        if instance is None:
            return _where
        this = cast("Tensor", instance)

        def where(condition: Tensor, other: Tensor | Number) -> Tensor:
            return _where(condition, this, other)

        where.__doc__ = _where.__doc__
        return where


class TensorMath(TensorReductions):
    """Element-wise math composed of other ops."""

    __slots__ = ()

    where = _Where()
    """``Tensor.where(condition, x, y)``: ``x`` where the Bool ``condition`` holds, else ``y``
    (``torch.where``, ``np.where``); ``x.where(condition, y)`` on a tensor, as PyTorch's
    ``Tensor.where``. Tensors of one dtype and device, or numbers; the three shapes broadcast."""

    def _pair(self, op: str, other: Tensor | Number | NDArray, larger: bool) -> Tensor:
        kind = self._require_kind(op, Kind.FLOAT, Kind.INT)
        if isinstance(other, np.ndarray):
            other = self._array_operand(op, other)
        if not isinstance(other, TensorBase):
            value = self._scalar(op, other)
            return self.clamp_min(value) if larger else self.clamp_max(value)
        self._check_binary(op, other)
        # where the other value wins (and where it is NaN: NaN propagates, as torch.maximum)
        wins = self.lower(other) if larger else self.greater(other)
        if kind is Kind.FLOAT:
            wins = wins.bool_or(other.is_nan())
        return cast("Tensor", self).mask_where(wins, other)

    def max_pair(self, other: Tensor | Number | NDArray) -> Tensor:
        """The element-wise maximum of this tensor and ``other`` (Burn's ``max_pair``; PyTorch's
        ``torch.maximum``, NumPy's ``np.maximum``).

        ``other`` is a tensor of the same dtype (the shapes broadcast), a NumPy array or a number. NaN
        propagates. On ties the gradient goes to this tensor.

        Example:
            >>> Tensor.from_data([1.0, 5.0]).max_pair(Tensor.from_data([3.0, 2.0])).tolist()
            [3.0, 5.0]
        """
        return self._pair("max_pair", other, larger=True)

    def min_pair(self, other: Tensor | Number | NDArray) -> Tensor:
        """The element-wise minimum of this tensor and ``other`` (Burn's ``min_pair``; PyTorch's
        ``torch.minimum``, NumPy's ``np.minimum``); as ``max_pair``.

        Example:
            >>> Tensor.from_data([1, 5]).min_pair(Tensor.from_data([3, 2])).tolist()
            [1, 2]
        """
        return self._pair("min_pair", other, larger=False)

    def log2(self) -> Tensor:
        """Base-2 logarithm, element-wise (``torch.log2``, ``np.log2``); Float tensors only.

        Example:
            >>> Tensor.from_data([1.0, 8.0]).log2().tolist()
            [0.0, 3.0]
        """
        self._require_kind("log2", Kind.FLOAT)
        return self.log().mul_scalar(1.0 / _LN2)

    def log10(self) -> Tensor:
        """Base-10 logarithm, element-wise (``torch.log10``, ``np.log10``); Float tensors only.

        Example:
            >>> Tensor.from_data([1.0, 100.0]).log10().tolist()
            [0.0, 2.0]
        """
        self._require_kind("log10", Kind.FLOAT)
        return self.log().mul_scalar(1.0 / _LN10)

    def exp2(self) -> Tensor:
        """``2 ** x``, element-wise (``torch.exp2``, ``np.exp2``); Float tensors only.

        Example:
            >>> Tensor.from_data([0.0, 3.0]).exp2().tolist()
            [1.0, 8.0]
        """
        self._require_kind("exp2", Kind.FLOAT)
        return self.mul_scalar(_LN2).exp()

    def expm1(self) -> Tensor:
        """``exp(x) - 1``, accurate near zero (``torch.expm1``, ``np.expm1``); Float tensors only.

        Example:
            >>> Tensor.from_data([0.0]).expm1().tolist()
            [0.0]
        """
        self._require_kind("expm1", Kind.FLOAT)
        # near zero, exp(x) - 1 cancels: 2 t / (1 - t) with t = tanh(x / 2) does not. The input of that
        # branch is clamped so that its unused values (and their gradients) stay finite.
        half = self.clamp(-0.5, 0.5).mul_scalar(0.5).tanh()
        near = half.mul_scalar(2.0).div(half.neg().add_scalar(1.0))
        far = self.exp().sub_scalar(1.0)
        return far.mask_where(self.abs().lower_elem(0.5), near)

    def deg2rad(self) -> Tensor:
        """Degrees to radians (Burn's ``deg2rad``; ``torch.deg2rad``, ``np.deg2rad``); Float only.

        Example:
            >>> round(Tensor.from_data([180.0]).deg2rad().item(), 5)
            3.14159
        """
        self._require_kind("deg2rad", Kind.FLOAT)
        return self.mul_scalar(math.pi / 180.0)

    def rad2deg(self) -> Tensor:
        """Radians to degrees (Burn's ``rad2deg``; ``torch.rad2deg``, ``np.rad2deg``); Float only.

        Example:
            >>> round(Tensor.from_data([math.pi]).rad2deg().item(), 3)
            180.0
        """
        self._require_kind("rad2deg", Kind.FLOAT)
        return self.mul_scalar(180.0 / math.pi)

    def lerp(self, end: Tensor | Number, weight: Tensor | Number) -> Tensor:
        """Linear interpolation ``self + weight * (end - self)`` (``torch.lerp(self, end, weight)``);
        Float tensors only. ``end`` and ``weight`` are tensors of this dtype (the shapes broadcast) or
        numbers.

        Example:
            >>> Tensor.from_data([0.0, 10.0]).lerp(20.0, 0.5).tolist()
            [10.0, 15.0]
        """
        self._require_kind("lerp", Kind.FLOAT)
        if isinstance(end, TensorBase):
            self._check_binary("lerp", end)
            span = end.sub(cast("Tensor", self))
        else:
            span = self.neg().add_scalar(self._scalar("lerp", end))
        if isinstance(weight, TensorBase):
            self._check_binary("lerp", weight)
            return span.mul(weight).add(cast("Tensor", self))
        return span.mul_scalar(self._scalar("lerp", weight)).add(cast("Tensor", self))

    def fmod(self, other: Tensor | Number | NDArray) -> Tensor:
        """The remainder of division truncated toward zero, with the sign of this tensor (Burn's
        ``fmod``; ``torch.fmod``, ``np.fmod``, C's ``fmod``). ``%`` and ``remainder`` take the sign of
        the divisor instead (Python's and ``torch.remainder``'s convention).

        ``other`` is a tensor of the same dtype (the shapes broadcast), a NumPy array or a number. For
        Float tensors a zero divisor gives NaN.

        Raises:
            ZeroDivisionError: an Int tensor divided by zero (a tensor divisor is read where the
                backend ``validates_index_values``).

        Example:
            >>> Tensor.from_data([5.5, -5.5]).fmod(2.0).tolist()
            [1.5, -1.5]
        """
        kind = self._require_kind("fmod", Kind.FLOAT, Kind.INT)
        if isinstance(other, np.ndarray):
            other = self._array_operand("fmod", other)
        if isinstance(other, TensorBase):
            self._check_binary("fmod", other)
            if kind is Kind.INT:
                self._check_divisor("fmod", other.primitive)
            magnitude = self.abs().remainder(other.abs())
        else:
            value = self._scalar("fmod", other)
            if kind is Kind.INT and value == 0:
                raise ZeroDivisionError(f"fmod: integer division by zero (of the {self._describe()})")
            magnitude = self.abs().remainder_scalar(abs(value))
        return magnitude.mul(self.sign())

    def fmod_scalar(self, other: Number) -> Tensor:
        """``fmod`` by a number (Burn's ``fmod_scalar``).

        Example:
            >>> Tensor.from_data([-7.5]).fmod_scalar(2.0).tolist()
            [-1.5]
        """
        if not isinstance(other, (int, float)):
            raise TypeError(f"fmod_scalar: expected a number, got {type(other).__name__}; use fmod(...)")
        return self.fmod(other)

    def nan_to_num(
        self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
    ) -> Tensor:
        """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (``torch.nan_to_num``,
        ``np.nan_to_num``): by default 0, the dtype's largest and its lowest finite value. Float
        tensors only; the gradient is zero where a value was replaced.

        Example:
            >>> Tensor.from_data([float("nan"), 1.0]).nan_to_num().tolist()
            [0.0, 1.0]
        """
        self._require_kind("nan_to_num", Kind.FLOAT)
        info = ml_dtypes.finfo(self.dtype.numpy)  # type: ignore[no-untyped-call]
        high = float(info.max) if posinf is None else self._scalar("nan_to_num", posinf)
        low = float(info.min) if neginf is None else self._scalar("nan_to_num", neginf)
        infinite = self.is_inf()
        result = self.mask_fill(self.is_nan(), self._scalar("nan_to_num", nan))
        result = result.mask_fill(infinite.bool_and(self.greater_elem(0.0)), high)
        return result.mask_fill(infinite.bool_and(self.lower_elem(0.0)), low)
