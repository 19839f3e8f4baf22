"""``BackendDecorator``: the base of the backends that wrap another one (Autodiff, Fusion, Router)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ._backend import BACKEND_METHODS, Backend, DTypeUsage, interface_methods
from ._data import TensorData
from ._device import Device
from ._dtype import DType
from ._fusion_ir import resolved
from ._transaction import PendingRead

if TYPE_CHECKING:
    from ._fusion_ir import ElementwiseBlock, ElementwisePlan, Scalar


class BackendDecorator(Backend):
    """A backend around an inner backend: the base of Autodiff, Fusion and Router.

    It holds ``inner`` and forwards what is the inner backend's: its devices (``device_count``,
    ``seed``, ``sync``, ``flush``, ``memory_cleanup``, ``supports_dtype``, ``dtype_usage``, device
    ``i`` of the decorator being device ``i`` of the inner backend), its capabilities
    (``validates_index_values``), its ``conformance_exclusions``, transactions (``tr_execute``,
    ``tr_execute_async``), DLPack imports (``from_dlpack``) and the fusion compile hook
    (``compile_elementwise``). Its
    ``stack_name`` is its ``name`` before the inner one's: ``"autodiff-ndarray"``.

    Every op a subclass does not define runs on the inner backend: arguments go through ``unwrap``
    (and devices through ``inner_device``), results through ``wrap`` (and devices back through
    ``outer_device``), in lists and tuples too. Those delegates are made once, when the subclass is
    defined; ``delegates(name)`` says which ops get one (Autodiff delegates its int and bool ops and
    the float ops without a gradient, and lets the interface's defaults build the others from its own
    differentiable ops). Subclasses define the hook pair ``wrap`` / ``unwrap`` where their primitives
    differ from the inner backend's; by default they are the inner backend's own.

    Args:
        inner: the backend that computes.

    Raises:
        TypeError: ``inner`` is not a Backend.

    Example:
        A decorator that changes nothing (every op delegated) is a class with a name:

        >>> from burn_backend import Tensor
        >>> from burn_ndarray import NdArray
        >>> class Identity(BackendDecorator):
        ...     name = "identity"
        >>> device = Identity(NdArray()).device()
        >>> device.backend.stack_name, (Tensor.from_data([1.0, 2.0], device) * 2).tolist()
        ('identity-ndarray', [2.0, 4.0])
    """

    is_decorator: ClassVar[bool] = True
    _inner: Backend

    def __init__(self, inner: Backend) -> None:
        if not isinstance(inner, Backend):
            raise TypeError(f"{type(self).__name__}: the inner backend must be a Backend, got {inner!r}")
        super().__init__(inner.float_dtype, inner.int_dtype)
        self._inner = inner

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, interface in interface_methods().items():
            # a method still the interface's own (abstract or default) is one the subclass left to us
            if name not in BACKEND_METHODS and getattr(cls, name) is interface and cls.delegates(name):
                setattr(cls, name, cls.delegate(name, interface))

    @classmethod
    def delegates(cls, name: str) -> bool:
        """Whether the op ``name``, where this class does not define it, runs on the inner backend
        (default: every op) rather than as the interface's default, built from this class's other ops.

        Args:
            name: an op of the interface (``"int_add"``).

        Returns:
            True to delegate it.
        """
        return True

    @classmethod
    def delegate(cls, name: str, interface: Callable[..., Any]) -> Callable[..., Any]:
        """The method that runs the op ``name`` (the interface's ``interface``) on the inner backend;
        by default it unwraps the arguments, calls the inner backend and wraps the results. Router
        overrides it to pick the inner backend from the arguments."""
        return _delegate(name, interface)

    # -- the hook pair ----------------------------------------------------------------------------
    def wrap(self, primitive: Any) -> Any:
        """This backend's primitive for a primitive the inner backend returned (default: that one).

        Example: Autodiff wraps float primitives in an untracked ``AutodiffTensor`` and shares the int
        and bool ones.
        """
        return primitive

    def unwrap(self, value: Any) -> Any:
        """The inner backend's value for an argument of this backend's ops: the inner primitive behind
        one of this backend's primitives, anything else (scalars, options) as it is (default: as it is).
        """
        return value

    # -- what is the inner backend's --------------------------------------------------------------
    @property
    def inner(self) -> Backend:
        """The backend this one wraps."""
        return self._inner

    @property
    def stack_name(self) -> str:
        return f"{self.name}-{self._inner.stack_name}"

    @property
    def validates_index_values(self) -> bool:  # type: ignore[override]
        return self._inner.validates_index_values

    @property
    def conformance_exclusions(self) -> Mapping[str, str]:  # type: ignore[override]
        return self._inner.conformance_exclusions

    def settings(self) -> tuple[Any, ...]:
        return (self._inner,)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inner!r})"

    # -- devices ----------------------------------------------------------------------------------
    def inner_device(self, device: Device) -> Device:
        """The inner backend's device behind ``device``, one of this backend's.

        Raises:
            ValueError: ``device`` is not a device of this backend.
        """
        if device.backend is not self and device.backend != self:
            raise ValueError(f"{self.stack_name}: {device} is not a device of this backend")
        return self._inner.device(device.index)

    def outer_device(self, device: Device) -> Device:
        """This backend's device in front of ``device``, one of the inner backend's."""
        return self.device(device.index)

    def device_count(self) -> int:
        return self._inner.device_count()

    def seed(self, device: Device, seed: int) -> None:
        self._inner.seed(self.inner_device(device), seed)

    def sync(self, device: Device) -> None:
        self._inner.sync(self.inner_device(device))

    def flush(self, device: Device) -> None:
        self._inner.flush(self.inner_device(device))

    def memory_cleanup(self, device: Device) -> None:
        self._inner.memory_cleanup(self.inner_device(device))

    def supports_dtype(self, device: Device, dtype: DType) -> bool:
        return self._inner.supports_dtype(self.inner_device(device), dtype)

    def dtype_usage(self, device: Device, dtype: DType) -> frozenset[DTypeUsage]:
        return self._inner.dtype_usage(self.inner_device(device), dtype)

    def tr_execute(
        self, floats: Sequence[Any], ints: Sequence[Any], bools: Sequence[Any]
    ) -> tuple[list[TensorData], list[TensorData], list[TensorData]]:
        unwrap = self.unwrap
        return self._inner.tr_execute(
            [unwrap(t) for t in floats], [unwrap(t) for t in ints], [unwrap(t) for t in bools]
        )

    def tr_execute_async(
        self, floats: Sequence[Any], ints: Sequence[Any], bools: Sequence[Any]
    ) -> PendingRead[tuple[list[TensorData], list[TensorData], list[TensorData]]]:
        unwrap = self.unwrap
        return self._inner.tr_execute_async(
            [unwrap(t) for t in floats], [unwrap(t) for t in ints], [unwrap(t) for t in bools]
        )

    def from_dlpack(self, source: Any, device: Device) -> Any | None:
        primitive = self._inner.from_dlpack(source, self.inner_device(device))
        return None if primitive is None else self.wrap(primitive)

    def compile_elementwise(self, block: ElementwiseBlock, device: Device) -> ElementwisePlan | None:
        plan = self._inner.compile_elementwise(block, self.inner_device(device))
        if plan is None:
            return None
        inner_plan = plan

        def wrapped(inputs: Sequence[Any], scalars: Sequence[Scalar]) -> Sequence[Any]:
            outputs = inner_plan([self.unwrap(t) for t in inputs], scalars)
            # a Deferred output is the inner backend's: made into its primitive before it is wrapped
            return [self.wrap(t) for t in resolved(outputs)]

        return wrapped

    # -- delegation -------------------------------------------------------------------------------
    def _to_inner(self, value: Any) -> Any:
        if isinstance(value, Device):
            return self.inner_device(value)
        if isinstance(value, (list, tuple)):
            return type(value)(self._to_inner(v) for v in value)
        return self.unwrap(value)

    def _from_inner(self, value: Any) -> Any:
        if isinstance(value, tuple):
            return tuple(self._from_inner(v) for v in value)
        if isinstance(value, list):
            return [self._from_inner(v) for v in value]
        if isinstance(value, Device):
            return self.outer_device(value)
        if value is None or isinstance(value, _NOT_PRIMITIVES):
            return value
        return self.wrap(value) if hasattr(value, "shape") and hasattr(value, "dtype") else value


_NOT_PRIMITIVES = (TensorData, bool, int, float, str, frozenset)


# What a delegate does with each argument, from the interface's annotation: a primitive is unwrapped, a
# device made the inner backend's, a sequence of primitives unwrapped item by item, a plain value (an
# int, a dtype, a shape, options) passed as it is; any other annotation naming a primitive or a device
# (or none) gets the generic walk of ``_to_inner``.
_PASS, _UNWRAP, _DEVICE, _SEQUENCE, _WALK = range(5)
_ROLES = {
    "P": _UNWRAP, "P | None": _UNWRAP, "Device": _DEVICE,
    "Sequence[P]": _SEQUENCE, "Sequence[P | None]": _SEQUENCE,
}  # fmt: skip
_NAMES_A_VALUE = re.compile(r"\b(P|Device|Any)\b")


def _role(annotation: Any) -> int:
    if not isinstance(annotation, str):  # the interface's annotations are strings; anything else is walked
        return _WALK
    role = _ROLES.get(annotation)
    if role is not None:
        return role
    return _WALK if not annotation or _NAMES_A_VALUE.search(annotation) else _PASS


def _delegate(name: str, interface: Callable[..., Any]) -> Callable[..., Any]:
    # each argument handled as its annotation says (an op's shape, dtype and options are not walked),
    # and a primitive result wrapped at once: the whole host cost of the ops a decorator passes on
    signature = inspect.signature(interface)
    roles = tuple(_role(p.annotation) for p in list(signature.parameters.values())[1:])
    count = len(roles)
    wraps = signature.return_annotation == "P"

    def method(self: BackendDecorator, *args: Any) -> Any:
        unwrap = self.unwrap
        # one conditional expression in a comprehension, not a loop of appends: 0.1 - 0.3 us less a call
        inner_args = [
            arg
            if role == _PASS
            else unwrap(arg)
            if role == _UNWRAP
            else type(arg)(unwrap(item) for item in arg)
            if role == _SEQUENCE and isinstance(arg, (list, tuple))
            else self.inner_device(arg)
            if role == _DEVICE and isinstance(arg, Device)
            else self._to_inner(arg)
            for arg, role in zip(args, roles)
        ]
        if len(args) > count:
            inner_args.extend(self._to_inner(arg) for arg in args[count:])
        result = getattr(self._inner, name)(*inner_args)
        return self.wrap(result) if wraps else self._from_inner(result)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = interface.__doc__
    method.__signature__ = signature  # type: ignore[attr-defined]
    return method
