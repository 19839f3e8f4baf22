"""Autodiff and the Python protocol of ``Tensor`` (operators, conversions, ``len``, iteration, ``repr``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

import numpy as np

from ._backend import AutodiffBackend, Gradients
from ._device import Device
from ._dtype import DType, Kind
from ._tensor_arith import binary_method
from ._tensor_base import (
    KIND_NAMES,
    NDArray,
    Number,
    TensorBase,
)
from ._tensor_hints import SPELLINGS
from ._tensor_math import TensorMath

if TYPE_CHECKING:
    from ._tensor import Tensor


def _check_gradients(op: str, grads: object) -> None:
    if not isinstance(grads, Gradients):
        raise TypeError(f"{op}: expected the Gradients that backward() returned, got {grads!r}")


class TensorProtocol(TensorMath):
    """Autodiff and Python's operators and conversions."""

    __slots__ = ()

    # == autodiff ==================================================================================
    def _autodiff(self, op: str) -> AutodiffBackend:
        backend = self._device.backend
        if not isinstance(backend, AutodiffBackend):
            raise TypeError(
                f"{op}: the tensor's backend {backend.name!r} has no autodiff; use an Autodiff(...) device"
            )
        return backend

    def require_grad(self) -> Tensor:
        """This Float tensor marked as a leaf whose gradient ``backward`` computes."""
        return self.set_require_grad(True)

    def set_require_grad(self, require_grad: bool) -> Tensor:
        """This Float tensor, marked (or unmarked) for gradients."""
        self._require_kind("set_require_grad", Kind.FLOAT)
        return self._new(self._device.backend.float_set_require_grad(self._primitive, require_grad))

    def is_require_grad(self) -> bool:
        """Whether gradients are computed for this tensor."""
        return self.kind is Kind.FLOAT and self._device.backend.float_is_require_grad(self._primitive)

    def detach(self) -> Tensor:
        """This tensor cut from the autodiff graph."""
        if self.kind is not Kind.FLOAT:
            return cast("Tensor", self)
        return self._new(self._device.backend.float_detach(self._primitive))

    def backward(self) -> Gradients:
        """Gradients of this tensor (seeded with ones) with respect to every tensor that requires them."""
        self._require_kind("backward", Kind.FLOAT)
        return self._autodiff("backward").backward(self._primitive)

    def _inner_device(self) -> Device:
        return self._autodiff("inner").inner.device(self._device.index)

    def grad(self, grads: Gradients) -> Tensor | None:
        """This tensor's gradient in ``grads``, on the inner backend (``None`` if it has none)."""
        backend = self._autodiff("grad")
        _check_gradients("grad", grads)
        gradient = backend.grad(self._primitive, grads)
        return None if gradient is None else self._cls(gradient, self._inner_device())

    def grad_remove(self, grads: Gradients) -> Tensor | None:
        """Remove and return this tensor's gradient from ``grads``."""
        backend = self._autodiff("grad_remove")
        _check_gradients("grad_remove", grads)
        gradient = backend.grad_remove(self._primitive, grads)
        return None if gradient is None else self._cls(gradient, self._inner_device())

    def grad_replace(self, grads: Gradients, gradient: Tensor) -> None:
        """Replace this tensor's gradient in ``grads``."""
        backend = self._autodiff("grad_replace")
        _check_gradients("grad_replace", grads)
        if not isinstance(gradient, TensorBase):
            raise TypeError(f"grad_replace: the gradient must be a Tensor, got {type(gradient).__name__}")
        inner = backend.inner.device(self._device.index)
        if gradient._device != inner:
            raise ValueError(
                f"grad_replace: the gradient must live on the inner device {inner}, got a tensor on "
                f"{gradient._device}"
            )
        backend.grad_replace(self._primitive, grads, gradient._primitive)

    def inner(self) -> Tensor:
        """This tensor on the inner backend of its autodiff backend, cut from the graph."""
        backend = self._autodiff("inner")
        primitive = getattr(backend, self.kind.prefix + "inner")(self._primitive)
        return self._cls(primitive, self._inner_device())

    # == Python protocol ===========================================================================
    # the operators are the methods themselves: no call in between on the hot path
    __add__ = TensorMath.add
    __radd__ = TensorMath.add
    __sub__ = TensorMath.sub

    def __rsub__(self, other: Number | NDArray) -> Tensor:
        return self.neg()._arith("add", other)

    __mul__ = TensorMath.mul
    __rmul__ = TensorMath.mul

    def _true_division(self, other: object) -> Tensor:
        if self.kind is Kind.INT:
            raise TypeError("/: true division of an Int tensor; use // for floor division or .float() first")
        return self._arith("div", other)

    __truediv__ = binary_method("div", "``self / other`` for Float tensors.", _true_division)

    def __rtruediv__(self, other: Number | NDArray) -> Tensor:
        self._require_kind("/", Kind.FLOAT)
        return self.recip()._arith("mul", other)

    def __floordiv__(self, other: Tensor | Number | NDArray) -> Tensor:
        if self.kind is Kind.FLOAT:
            return self._arith("div", other).floor()
        return self._arith("div", other)

    def __rfloordiv__(self, other: Number | NDArray) -> Tensor:
        return self._reflected("div", other).__floordiv__(cast("Tensor", self))

    __mod__ = TensorMath.remainder

    def __rmod__(self, other: Number | NDArray) -> Tensor:
        return self._reflected("remainder", other)._arith("remainder", self)

    def _reflected(self, op: str, other: object) -> Tensor:
        """The left operand of a reflected operator as a tensor of this tensor's dtype and device."""
        if isinstance(other, np.ndarray):
            return self._array_operand(op, other)
        return self.full_like(self._scalar(op, other))

    def __pow__(self, exponent: Tensor | Number | NDArray) -> Tensor:
        return self.pow(exponent)

    def __rpow__(self, base: Number | NDArray) -> Tensor:
        if isinstance(base, np.ndarray):
            return self._array_operand("pow", base).pow(cast("Tensor", self))
        return self.full_like(base).pow(cast("Tensor", self))

    def __matmul__(self, other: Tensor) -> Tensor:
        return self.matmul(other)

    def __neg__(self) -> Tensor:
        return self.neg()

    def __pos__(self) -> Tensor:
        return cast("Tensor", self)

    def __abs__(self) -> Tensor:
        return self.abs()

    def __invert__(self) -> Tensor:
        return self.bool_not() if self.kind is Kind.BOOL else self.bitwise_not()

    def __and__(self, other: Tensor | int | NDArray) -> Tensor:
        return self.bool_and(other) if self.kind is Kind.BOOL else self.bitwise_and(other)  # type: ignore[arg-type]

    def __or__(self, other: Tensor | int | NDArray) -> Tensor:
        return self.bool_or(other) if self.kind is Kind.BOOL else self.bitwise_or(other)  # type: ignore[arg-type]

    def __xor__(self, other: Tensor | int | NDArray) -> Tensor:
        return self.bool_xor(other) if self.kind is Kind.BOOL else self.bitwise_xor(other)  # type: ignore[arg-type]

    def __lshift__(self, other: Tensor | int | NDArray) -> Tensor:
        return self.bitwise_left_shift(other)

    def __rshift__(self, other: Tensor | int | NDArray) -> Tensor:
        return self.bitwise_right_shift(other)

    def __eq__(self, other: object) -> Tensor:  # type: ignore[override]
        return self.equal(other)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> Tensor:  # type: ignore[override]
        return self.not_equal(other)  # type: ignore[arg-type]

    def __gt__(self, other: Tensor | Number) -> Tensor:
        return self.greater(other)

    def __ge__(self, other: Tensor | Number) -> Tensor:
        return self.greater_equal(other)

    def __lt__(self, other: Tensor | Number) -> Tensor:
        return self.lower(other)

    def __le__(self, other: Tensor | Number) -> Tensor:
        return self.lower_equal(other)

    def __dir__(self) -> list[str]:
        # the PyTorch spellings are attributes only to raise their errors: not names to offer
        return [name for name in super().__dir__() if name not in SPELLINGS]

    __hash__ = TensorBase.__hash__  # identity, as PyTorch's tensors: usable as dict keys

    def __bool__(self) -> bool:
        if self.num_elements() != 1:
            raise ValueError(
                f"the truth value of a tensor of shape {self.dims()} is ambiguous; use .any() or .all()"
            )
        return bool(self.into_scalar())

    def __float__(self) -> float:
        return float(self.into_scalar())

    def __int__(self) -> int:
        return int(self.into_scalar())

    def __index__(self) -> int:
        if self.kind is not Kind.INT:
            raise TypeError(
                f"only Int tensors of one element can be used as an index, got a {self._describe()}"
            )
        return int(self.into_scalar())

    def __len__(self) -> int:
        if self.rank == 0:
            raise TypeError("len() of a tensor of rank 0")
        return int(self._primitive.shape[0])

    def __iter__(self) -> Iterator[Tensor]:
        """The sub-tensors along dim 0, each without that dim."""
        if self.rank == 0:
            raise TypeError("iteration over a tensor of rank 0")
        for index in range(self._primitive.shape[0]):
            yield self.narrow(0, index, 1).squeeze_dim(0)

    def __repr__(self) -> str:
        data = self.to_data()
        array = data.to_numpy()
        if data.dtype is DType.BF16:
            array = array.astype(np.float32)
        with np.printoptions(threshold=1000, edgeitems=3, precision=4):
            values = np.array2string(array, separator=", ")
        return (
            "Tensor {\n"
            f"  data:\n{values},\n"
            f"  shape:  {self.dims()},\n"
            f"  device:  {self._device},\n"
            f"  backend:  {self._device.backend.name!r},\n"
            f"  kind:  {KIND_NAMES[self.kind]!r},\n"
            f"  dtype:  {str(self.dtype)!r},\n"
            "}"
        )
