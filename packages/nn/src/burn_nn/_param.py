"""Module parameters (``Param``, with stable ``ParamId``s and lazy initialization) and running state."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from burn_backend import AutodiffBackend, Device, DType, Kind, ParamId, Shape, Tensor
from burn_backend.quantization import QuantScheme

__all__ = ["Param", "RunningState"]


def _as_leaf(tensor: Tensor, require_grad: bool) -> Tensor:
    """``tensor`` as a fresh graph leaf that requires a gradient when asked to (float tensors on an
    autodiff backend only)."""
    if tensor.kind is not Kind.FLOAT or not isinstance(tensor.device.backend, AutodiffBackend):
        return tensor
    return tensor.detach().set_require_grad(require_grad)


class _Lazy:
    """A value computed at most once, by whichever thread asks first."""

    __slots__ = ("_init", "_lock", "_value")

    def __init__(self, init: Callable[[], Tensor] | None, value: Tensor | None = None) -> None:
        self._init = init
        self._value = value
        self._lock = threading.Lock()

    @property
    def ready(self) -> bool:
        return self._value is not None

    def get(self) -> Tensor:
        value = self._value
        if value is not None:
            return value
        with self._lock:
            if self._value is None:
                assert self._init is not None
                self._value = self._init()
                self._init = None  # the closure may hold large captured state
            return self._value


class Param:
    """A tensor of a module with a stable ``ParamId``.

    A parameter is a value: mapping it (``map``, ``with_value``) returns a new ``Param`` with the same
    id. Float parameters on an autodiff backend are graph leaves that require a gradient unless made
    with ``require_grad=False`` (or by ``Module.no_grad``). A parameter made with ``Param.lazy`` runs its
    initializer on first use only, at most once across every copy of it, so that loading a record right
    after ``Config.init`` never computes the random initial values.

    Example:
        >>> p = Param.initialized(Tensor.zeros([2, 3]))
        >>> p.shape, p.val().dims()
        (Shape([2, 3]), [2, 3])
    """

    __slots__ = ("_cell", "_device", "_dtype", "_shape", "id", "require_grad")

    def __init__(
        self,
        cell: _Lazy,
        shape: Shape,
        device: Device,
        dtype: DType,
        id: ParamId,
        require_grad: bool,
    ) -> None:
        self._cell = cell
        self._shape = shape
        self._device = device
        self._dtype = dtype
        self.id = id
        self.require_grad = require_grad

    @classmethod
    def initialized(cls, tensor: Tensor, *, id: ParamId | None = None, require_grad: bool = True) -> Param:
        """A parameter holding ``tensor`` (marked as a leaf requiring a gradient where that applies)."""
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Param.initialized: expected a Tensor, got {type(tensor).__name__}")
        tensor = _as_leaf(tensor, require_grad)
        # a quantized parameter's dtype is the float dtype its values stand for (see ``quant_scheme``)
        dtype = tensor.device.backend.float_dtype if tensor.is_quantized else tensor.dtype
        return cls(_Lazy(None, tensor), tensor.shape, tensor.device, dtype, id or ParamId(), require_grad)

    @classmethod
    def lazy(
        cls,
        init: Callable[[], Tensor],
        shape: Sequence[int],
        device: Device,
        *,
        dtype: DType | None = None,
        id: ParamId | None = None,
        require_grad: bool = True,
    ) -> Param:
        """A parameter of ``shape`` and ``dtype`` (default: the device's float dtype) on ``device`` whose
        value ``init()`` computes on first use."""
        param_id = id or ParamId()
        expected = Shape(list(shape))
        resolved = dtype if dtype is not None else device.backend.float_dtype

        def materialize() -> Tensor:
            tensor = init()
            if tensor.shape != expected or tensor.dtype != resolved:
                raise ValueError(
                    f"Param {param_id}: the initializer made {tensor.dims()} {tensor.dtype}, "
                    f"expected {list(expected)} {resolved}"
                )
            return _as_leaf(tensor, require_grad)

        return cls(_Lazy(materialize), expected, device, resolved, param_id, require_grad)

    @property
    def shape(self) -> Shape:
        """The parameter's shape (known without initializing it)."""
        return self._shape

    @property
    def device(self) -> Device:
        """The parameter's device (known without initializing it)."""
        return self._device

    @property
    def dtype(self) -> DType:
        """The parameter's dtype (known without initializing it)."""
        return self._dtype

    @property
    def quant_scheme(self) -> QuantScheme | None:
        """The ``QuantScheme`` of a quantized parameter (``Module.quantize_weights``), else ``None``."""
        return self._cell.get().quant_scheme if self._cell.ready else None

    @property
    def kind(self) -> Kind:
        """Float, Int or Bool."""
        return self.dtype.kind

    @property
    def is_initialized(self) -> bool:
        """Whether the value has been computed (always true for ``Param.initialized``)."""
        return self._cell.ready

    def num_elements(self) -> int:
        """The number of values in the parameter."""
        return self._shape.num_elements()

    def val(self) -> Tensor:
        """The parameter's tensor (computed now if the parameter is lazy and not yet initialized)."""
        return self._cell.get()

    def with_value(self, tensor: Tensor) -> Param:
        """A parameter with the same id holding ``tensor`` as a fresh graph leaf (what an optimizer step
        returns)."""
        return Param.initialized(tensor, id=self.id, require_grad=self.require_grad)

    def _stepped(self, tensor: Tensor, device: Device) -> Param:
        """``tensor`` (this parameter's updated value, on the inner backend of the autodiff ``device``) as
        a fresh graph leaf of ``device``, with this parameter's id: ``with_value(Tensor.from_inner(tensor,
        device))`` without the checks that an optimizer's results pass by construction (an optimizer step
        makes one per parameter)."""
        backend: AutodiffBackend = device.backend  # type: ignore[assignment]
        leaf = backend.float_set_require_grad(backend.float_from_inner(tensor.primitive), self.require_grad)
        value = Tensor(leaf, device)
        return Param(_Lazy(None, value), value.shape, device, value.dtype, self.id, self.require_grad)

    def map(self, function: Callable[[Tensor], Tensor]) -> Param:
        """``function`` applied to the value, as a parameter with the same id."""
        return self.with_value(function(self.val()))

    def to_device(self, device: Device) -> Param:
        """The parameter on ``device``, as a fresh leaf (lazy parameters stay lazy)."""
        if not self._cell.ready:
            cell = self._cell
            return Param.lazy(
                lambda: cell.get().to_device(device),
                self._shape,
                device,
                dtype=self._dtype,
                id=self.id,
                require_grad=self.require_grad,
            )
        return self.with_value(self.val().to_device(device))

    def set_require_grad(self, require_grad: bool) -> Param:
        """The parameter, marked (or unmarked) for gradients."""
        if not self._cell.ready:
            cell = self._cell
            return Param.lazy(
                cell.get, self._shape, self._device, dtype=self._dtype, id=self.id, require_grad=require_grad
            )
        return Param.initialized(self.val(), id=self.id, require_grad=require_grad)

    def __repr__(self) -> str:
        lazy = "" if self._cell.ready else ", lazy"
        dtype = self.quant_scheme or self._dtype
        return f"Param(shape={list(self._shape)}, {dtype}{lazy}, id={self.id})"


class RunningState:
    """A tensor a module updates during its forward pass, such as batch norm's running statistics.

    Running state is part of the module's record and follows it between devices, but it is not a
    trainable parameter: no gradient, not counted by ``num_params``. Copies of a module made by mapping
    its parameters share the state, as in Burn; ``to_device``, ``valid`` and ``load_record`` give new
    state.
    """

    __slots__ = ("_lock", "_value", "id")

    def __init__(self, value: Tensor, *, id: ParamId | None = None) -> None:
        self._value = value.detach()
        self._lock = threading.Lock()
        self.id = id or ParamId()

    @property
    def shape(self) -> Shape:
        """The state's shape."""
        return self._value.shape

    @property
    def device(self) -> Device:
        """The state's device."""
        return self._value.device

    def value(self) -> Tensor:
        """The current value."""
        with self._lock:
            return self._value

    def update(self, value: Tensor) -> None:
        """Replace the value (cut from any autodiff graph)."""
        if value.shape != self._value.shape:
            raise ValueError(
                f"RunningState.update: shape {value.dims()} differs from the state's {self._value.dims()}"
            )
        with self._lock:
            self._value = value.detach()

    def map(self, function: Callable[[Tensor], Tensor]) -> RunningState:
        """New state with ``function`` applied to the value (same id)."""
        return RunningState(function(self.value()), id=self.id)

    def __repr__(self) -> str:
        return f"RunningState(shape={self._value.dims()}, {self._value.dtype})"
