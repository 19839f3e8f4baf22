"""``Autodiff(inner)``: the backend decorator that computes gradients."""

from __future__ import annotations

import abc
import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from burn_backend import (
    AutodiffBackend,
    Backend,
    Device,
    DType,
    Gradients,
    Kind,
    TensorData,
    interface_methods,
)

from ._checkpoint import BalancedCheckpointing, CheckpointStrategy, NoCheckpointing
from ._graph import AutodiffTensor, backward
from ._ops.activation import ActivationOps
from ._ops.float import FloatOps
from ._ops.module import ModuleOps


class Autodiff(FloatOps, ModuleOps, ActivationOps, AutodiffBackend):
    """Reverse-mode automatic differentiation over any backend.

    Float tensors carry a graph node when something they depend on requires a gradient; every op
    computes on the inner backend and records its backward step. Int and bool tensors are the inner
    backend's own. ``backward`` returns a ``Gradients`` container; nothing is stored on tensors.

    Args:
        inner: the backend that computes the values.
        checkpointing: ``NoCheckpointing()`` (default: ops keep what their backward needs) or
            ``BalancedCheckpointing()`` (memory-bound ops keep nothing and are recomputed during
            backward from the outputs of compute-bound ops).

    Example:
        >>> from burn_backend import Tensor
        >>> from burn_ndarray import NdArray
        >>> device = Autodiff(NdArray()).device()
        >>> x = Tensor.from_data([1.0, 2.0], device).require_grad()
        >>> x.mul(x).sum().backward() and x.grad(_).tolist()  # doctest: +SKIP
    """

    name: ClassVar[str] = "autodiff"
    is_decorator: ClassVar[bool] = True

    def __init__(self, inner: Backend, checkpointing: CheckpointStrategy | None = None) -> None:
        if not isinstance(inner, Backend):
            raise TypeError(f"Autodiff: the inner backend must be a Backend, got {inner!r}")
        if isinstance(inner, AutodiffBackend):
            raise TypeError("Autodiff: the inner backend is already an autodiff backend")
        super().__init__(inner.float_dtype, inner.int_dtype)
        self._inner = inner
        self.strategy = NoCheckpointing() if checkpointing is None else checkpointing
        self.checkpointing = isinstance(self.strategy, BalancedCheckpointing)

    @property
    def inner(self) -> Backend:
        """The backend that computes the values."""
        return self._inner

    @property
    def stack_name(self) -> str:
        return f"autodiff-{self._inner.stack_name}"

    @property
    def validates_index_values(self) -> bool:  # type: ignore[override]
        return self._inner.validates_index_values

    @property
    def conformance_exclusions(self) -> Mapping[str, str]:  # type: ignore[override]
        return self._inner.conformance_exclusions

    def settings(self) -> tuple[Any, ...]:
        return (self._inner, type(self.strategy))

    def __repr__(self) -> str:
        return f"Autodiff({self._inner!r}, checkpointing={self.strategy!r})"

    # -- devices ----------------------------------------------------------------------------------
    def device_count(self) -> int:
        return self._inner.device_count()

    def inner_device(self, device: Device) -> Device:
        """The inner backend's device behind one of ours."""
        if device.backend is not self and device.backend != self:
            raise ValueError(f"{self.stack_name}: {device} is not a device of this backend")
        return self._inner.device(device.index)

    def seed(self, device: Device, seed: int) -> None:
        self._inner.seed(self.inner_device(device), seed)

    def sync(self, device: Device) -> None:
        self._inner.sync(self.inner_device(device))

    # -- the autodiff interface -------------------------------------------------------------------
    def backward(self, tensor: Any) -> Gradients:
        if not isinstance(tensor, AutodiffTensor):
            raise TypeError(f"backward: expected a float tensor of this backend, got {type(tensor).__name__}")
        inner = self._inner
        seed = inner.float_ones(
            tuple(tensor.shape), inner.float_device(tensor.primitive), DType.of(tensor.dtype)
        )
        return backward(inner, tensor, seed)

    def grad(self, tensor: Any, grads: Gradients) -> Any:
        return grads.get(tensor)

    def grad_remove(self, tensor: Any, grads: Gradients) -> Any:
        return grads.remove(tensor)

    def grad_replace(self, tensor: Any, grads: Gradients, gradient: Any) -> None:
        grads.replace(tensor, gradient)

    def float_inner(self, tensor: Any) -> Any:
        return tensor.primitive

    def float_from_inner(self, tensor: Any) -> Any:
        return AutodiffTensor(tensor)

    # -- delegation -------------------------------------------------------------------------------
    def _unwrap(self, value: Any) -> Any:
        if isinstance(value, AutodiffTensor):
            return value.primitive
        if isinstance(value, Device):
            return self.inner_device(value)
        if isinstance(value, (list, tuple)):
            return type(value)(self._unwrap(v) for v in value)
        return value

    def _wrap(self, value: Any) -> Any:
        if isinstance(value, Device):
            return self.device(value.index)
        if isinstance(value, tuple):
            return tuple(self._wrap(v) for v in value)
        if isinstance(value, list):
            return [self._wrap(v) for v in value]
        if _is_float_primitive(value):
            return AutodiffTensor(value)
        return value


def _is_float_primitive(value: Any) -> bool:
    if isinstance(value, (TensorData, bool, int, float, frozenset)) or value is None:
        return False
    dtype = getattr(value, "dtype", None)
    if dtype is None or not hasattr(value, "shape"):
        return False
    try:
        return DType.of(dtype).kind is Kind.FLOAT
    except TypeError:
        return False


# Ops with no gradient, and every int and bool op, run on the inner backend as they are: float
# inputs unwrapped, float outputs wrapped untracked (int_into_float, for one), devices translated.
_NOT_DIFFERENTIABLE = {
    "float_into_data", "float_device", "float_empty", "float_zeros", "float_ones", "float_full",
    "float_random", "float_into_int", "float_argmax", "float_argmin", "float_argsort", "float_argtopk",
    "float_is_nan", "float_is_inf", "float_any", "float_any_dim", "float_all", "float_all_dim",
    "float_equal", "float_equal_elem", "float_not_equal", "float_not_equal_elem", "float_greater",
    "float_greater_elem", "float_greater_equal", "float_greater_equal_elem", "float_lower",
    "float_lower_elem", "float_lower_equal", "float_lower_equal_elem",
    "supports_dtype", "dtype_usage", "flush", "memory_cleanup", "tr_execute",
}  # fmt: skip


def _delegate(name: str, interface: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Autodiff, *args: Any) -> Any:
        return self._wrap(getattr(self._inner, name)(*self._unwrap(args)))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = interface.__doc__
    method.__signature__ = inspect.signature(interface)  # type: ignore[attr-defined]
    return method


def _install_delegates() -> None:
    own: set[str] = set()
    for klass in (FloatOps, ModuleOps, ActivationOps, Autodiff):
        own.update(name for name in vars(klass) if not name.startswith("_"))
    for name, interface in interface_methods().items():
        if name in own:
            continue
        if name in _NOT_DIFFERENTIABLE or name.startswith(("int_", "bool_", "bitwise_")):
            setattr(Autodiff, name, _delegate(name, interface))
    abc.update_abstractmethods(Autodiff)  # type: ignore[type-abstract]


_install_delegates()
