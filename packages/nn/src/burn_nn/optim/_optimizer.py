"""``Optimizer`` (the update rule of one parameter) and ``ModuleOptimizer`` (a module's optimizer step and
the per-parameter state it keeps)."""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from burn_backend import AutodiffBackend, Device, Kind, ParamId, Tensor, TensorData

from .._config import Config
from .._module import Module, ModuleMapper, ModuleVisitor
from .._param import Param
from ._clipping import GradientClipping
from ._grads import GradientsParams

__all__ = ["ModuleOptimizer", "Optimizer", "OptimizerRecord", "OptimizerState"]

M = TypeVar("M", bound=Module)

OptimizerState = dict[str, Tensor | int]
"""One parameter's optimizer state: named tensors (on the parameter's inner device) and counters."""

OptimizerRecord = dict[str, dict[str, TensorData | int]]
"""A ``ModuleOptimizer``'s state on the host: ``str(ParamId)`` to that parameter's named ``TensorData``
and counters. It holds no backend or device, so a run can resume elsewhere."""


class Optimizer(abc.ABC):
    """The update rule of one parameter tensor, as Burn's ``Optimizer`` trait: ``Sgd``, ``Adam``,
    ``AdamW``, ``AdaGrad``, ``RmsProp``, ``Adan``, ``Muon``.

    A rule is stateless itself; the state it keeps per parameter (moments, step counts) is passed in
    and returned by ``step``, and ``ModuleOptimizer`` stores it by ``ParamId``. Write a new optimizer by
    implementing ``step`` and ``state_fields``, and wrap it with ``ModuleOptimizer(rule)``.
    """

    @abc.abstractmethod
    def step(
        self, lr: float, tensor: Tensor, grad: Tensor, state: OptimizerState | None
    ) -> tuple[Tensor, OptimizerState | None]:
        """One update of one parameter.

        Args:
            lr: the learning rate.
            tensor: the parameter's value, on the inner (non-autodiff) backend.
            grad: its gradient (clipped already where the optimizer clips), same shape, dtype, device.
            state: what the previous step returned for this parameter (``None`` at its first step).

        Returns:
            The new value and the state to pass to the next step (``None`` for none).
        """

    def step_many(
        self,
        lr: float,
        tensors: Sequence[Tensor],
        grads: Sequence[Tensor],
        states: Sequence[OptimizerState | None],
    ) -> list[tuple[Tensor, OptimizerState | None]]:
        """One update of every parameter of a module step, in one call: what ``ModuleOptimizer`` calls
        when a rule overrides it (``Adam`` and ``AdamW`` do, to update every parameter of a device in one
        backend op). By default, ``step`` on each; the lists are as ``step``'s arguments, one entry per
        parameter.

        Returns:
            Each parameter's new value and state, in the order given.
        """
        return [self.step(lr, t, g, s) for t, g, s in zip(tensors, grads, states, strict=True)]

    @abc.abstractmethod
    def state_fields(self) -> dict[str, type]:
        """The entries of the state ``step`` returns, each name to ``Tensor`` or ``int``: what a record
        must hold for each parameter (empty when the rule keeps no state)."""

    def check_state(self, state: OptimizerState, tensor: Tensor) -> None:
        """Raise ``ValueError`` if ``state`` (restored from a record) cannot be ``tensor``'s state. By
        default every tensor entry must have the parameter's shape."""
        for name, value in state.items():
            if isinstance(value, Tensor) and value.shape != tensor.shape:
                raise ValueError(
                    f"{type(self).__name__}: the state entry {name!r} has shape {value.dims()}, "
                    f"the parameter {tensor.dims()}"
                )


class _OptimizerConfig(Config):
    """What optimizer configs share: ``build`` makes the update rule, and ``init`` a ``ModuleOptimizer``
    applying it with the config's gradient clipping (the field ``_clipping_field``, where there is one)."""

    _clipping_field: ClassVar[str] = "grad_clipping"

    def build(self) -> Optimizer:
        """The bare update rule (without gradient clipping, which ``init`` adds)."""
        raise NotImplementedError(f"{type(self).__name__} defines no build")

    def init(self) -> ModuleOptimizer:
        """An optimizer for a module.

        Raises:
            ValueError: a setting is out of the range its field's documentation gives.
        """
        clipping = getattr(self, self._clipping_field, None)
        return ModuleOptimizer(self.build(), None if clipping is None else clipping.init())


class ModuleOptimizer:
    """Optimizes a module: applies an ``Optimizer`` to each parameter with a gradient and keeps each
    parameter's state by ``ParamId`` (Burn's ``ModuleOptimizer``; ``XConfig.init()`` makes one).

    Example:
        >>> optim = AdamConfig().init()
        >>> grads = GradientsParams.from_grads(loss.backward(), model)
        >>> model = optim.step(1e-3, model, grads)
    """

    def __init__(self, optimizer: Optimizer, grad_clipping: GradientClipping | None = None) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"ModuleOptimizer: expected an Optimizer, got {type(optimizer).__name__}")
        if grad_clipping is not None and not isinstance(grad_clipping, GradientClipping):
            raise TypeError(
                f"ModuleOptimizer: expected a GradientClipping, got {type(grad_clipping).__name__}"
            )
        self._optimizer = optimizer
        self._grad_clipping = grad_clipping
        self._states: dict[ParamId, dict[str, Tensor | TensorData | int]] = {}

    @property
    def optimizer(self) -> Optimizer:
        """The update rule applied to each parameter."""
        return self._optimizer

    @property
    def grad_clipping(self) -> GradientClipping | None:
        """The clipping applied to the gradients before the update, if any."""
        return self._grad_clipping

    def has_gradient_clipping(self) -> bool:
        """Whether gradients are clipped before the update."""
        return self._grad_clipping is not None

    def with_grad_clipping(self, grad_clipping: GradientClipping | None) -> ModuleOptimizer:
        """A copy of this optimizer (state included) that clips gradients with ``grad_clipping``."""
        copy = ModuleOptimizer(self._optimizer, grad_clipping)
        copy._states = dict(self._states)
        return copy

    def step(self, lr: float, module: M, grads: GradientsParams) -> M:
        """Update ``module``'s parameters with their gradients and advance the optimizer state.

        Each float parameter with a gradient in ``grads`` gets a new value (same ``ParamId``, a fresh
        graph leaf that requires a gradient as before); the others are kept as they are. ``grads`` is
        not changed. On an error nothing is updated: neither the state nor (as always) ``module``.

        Args:
            lr: the learning rate (>= 0).
            module: the module to update (it is not changed; the updated one is returned).
            grads: gradients by ``ParamId``, as ``GradientsParams.from_grads`` makes them. A gradient on
                another device than its parameter is moved to the parameter's device.

        Returns:
            The updated module.

        Raises:
            ValueError: ``lr`` is negative or not a number, a gradient's shape or dtype differs from its
                parameter's, or the optimizer cannot update a parameter (``Muon`` and a 1-d bias, say).
        """
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not lr >= 0:
            raise ValueError(f"ModuleOptimizer.step: the learning rate must be a number >= 0, got {lr!r}")
        if not isinstance(grads, GradientsParams):
            raise TypeError(f"ModuleOptimizer.step: expected GradientsParams, got {type(grads).__name__}")
        pending: dict[ParamId, Tensor] = {}
        for id in grads:
            grad = grads.get(id)
            if grad is not None:
                pending[id] = grad
        collector = _StepCollector(self, pending)
        module.visit(collector)
        entries = collector.entries
        if self._grad_clipping is not None and entries:
            # all of the step's gradients at once: a global norm needs every one of them
            clipped = self._grad_clipping.clip_gradients([entry.grad for entry in entries])
            for entry, grad in zip(entries, clipped, strict=True):
                entry.grad = grad
        optimizer = self._optimizer
        lr = float(lr)
        results: list[tuple[Tensor, OptimizerState | None]]
        if type(optimizer).step_many is Optimizer.step_many:
            results = []
            for entry in entries:  # one at a time, so that an error names its parameter
                try:
                    results.append(optimizer.step(lr, entry.tensor, entry.grad, entry.state))
                except ValueError as error:
                    raise ValueError(f"ModuleOptimizer.step: parameter {entry.where}: {error}") from None
        else:
            try:
                results = optimizer.step_many(
                    lr, [e.tensor for e in entries], [e.grad for e in entries], [e.state for e in entries]
                )
            except ValueError as error:
                raise ValueError(f"ModuleOptimizer.step: {error}") from None
        updated: dict[ParamId, Param] = {}
        new_states: dict[ParamId, dict[str, Tensor | TensorData | int]] = {}
        stateless: list[ParamId] = []
        for entry, (new_tensor, new_state) in zip(entries, results, strict=True):
            param = entry.param
            if new_state is None:
                stateless.append(param.id)
            else:
                new_states[param.id] = dict(new_state)
            outer = entry.outer
            updated[param.id] = (
                param.with_value(new_tensor) if outer is None else param._stepped(new_tensor, outer)
            )
        result = module.map(_Replace(updated))
        self._states.update(new_states)
        for id in stateless:
            self._states.pop(id, None)
        return result

    def into_record(self) -> OptimizerRecord:
        """The state of every parameter stepped so far, on the host (see ``OptimizerRecord``)."""
        return {
            str(id): {
                name: value.to_data() if isinstance(value, Tensor) else value for name, value in state.items()
            }
            for id, state in self._states.items()
        }

    def load_record(self, record: Mapping[str, Mapping[str, Any]]) -> ModuleOptimizer:
        """Replace the state with ``record``'s (as made by ``into_record``, possibly by another backend or
        process); each tensor moves to its parameter's device and dtype at the parameter's next step.

        Returns:
            This optimizer, so that ``optim = config.init().load_record(record)`` reads as in Burn.

        Raises:
            ValueError: an entry is not keyed by a parameter id, or does not hold exactly the state this
                optimizer keeps (``Optimizer.state_fields``) with tensors as ``TensorData`` and counters
                as ints. The state is unchanged then.
        """
        if not isinstance(record, Mapping):
            raise ValueError(
                f"ModuleOptimizer.load_record: expected a dict record, got {type(record).__name__}"
            )
        rule = type(self._optimizer).__name__
        fields = self._optimizer.state_fields()
        states: dict[ParamId, dict[str, Tensor | TensorData | int]] = {}
        for key, entry in record.items():
            try:
                id = ParamId.parse(str(key))
            except (TypeError, ValueError):
                raise ValueError(f"ModuleOptimizer.load_record: {key!r} is not a parameter id") from None
            if not isinstance(entry, Mapping):
                raise ValueError(
                    f"ModuleOptimizer.load_record: the state of parameter {key} is a {type(entry).__name__}, "
                    "expected a dict"
                )
            missing = sorted(set(fields) - set(entry))
            unexpected = sorted(set(entry) - set(fields))
            if missing or unexpected:
                raise ValueError(
                    f"ModuleOptimizer.load_record: the state of parameter {key} does not fit {rule}: "
                    f"missing {missing}, unexpected {unexpected}"
                )
            state: dict[str, Tensor | TensorData | int] = {}
            for name, value in entry.items():
                state[name] = _record_value(rule, key, name, value, fields[name])
            if state:
                states[id] = state
        self._states = states
        return self

    def __repr__(self) -> str:
        clipping = f", grad_clipping={self._grad_clipping!r}" if self._grad_clipping is not None else ""
        return f"ModuleOptimizer({type(self._optimizer).__name__}{clipping}, {len(self._states)} states)"


def _record_value(rule: str, key: str, name: str, value: Any, field: type) -> TensorData | int:
    where = f"ModuleOptimizer.load_record: {rule} state {name!r} of parameter {key}"
    if field is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{where}: expected an int, got {type(value).__name__}")
        return value
    if isinstance(value, Tensor):
        value = value.to_data()
    if not isinstance(value, TensorData) or value.kind is Kind.BOOL:
        what = value.dtype if isinstance(value, TensorData) else type(value).__name__
        raise ValueError(f"{where}: expected float or int TensorData, got {what}")
    return value


class _Entry:
    """One parameter to update: where it is, its value on the inner backend, its gradient and state, and
    the autodiff device its new value goes back to (``None``: the parameter is not tracked)."""

    __slots__ = ("grad", "outer", "param", "state", "tensor", "where")

    def __init__(
        self,
        param: Param,
        where: str,
        tensor: Tensor,
        grad: Tensor,
        state: OptimizerState | None,
        outer: Device | None,
    ) -> None:
        self.param = param
        self.where = where
        self.tensor = tensor
        self.grad = grad
        self.state = state
        self.outer = outer


class _StepCollector(ModuleVisitor):
    """Collects each float parameter with a gradient (once, where two fields share it), its gradient
    checked and moved, and its state restored, for ``ModuleOptimizer.step`` to update."""

    def __init__(self, owner: ModuleOptimizer, grads: dict[ParamId, Tensor]) -> None:
        self._owner = owner
        self._grads = grads
        self.entries: list[_Entry] = []

    def visit_float_with_path(self, path: Sequence[str], param: Param) -> None:
        grad = self._grads.pop(param.id, None)
        if grad is None:
            return  # no gradient, or a parameter shared by two fields and collected already
        where = ".".join(path) or "<root>"
        value = param.val()
        device = value.device
        autodiff = isinstance(device.backend, AutodiffBackend)
        tensor = value.inner() if autodiff else value
        if grad.primitive.shape != tensor.primitive.shape or grad.dtype != tensor.dtype:
            raise ValueError(
                f"ModuleOptimizer.step: the gradient of {where} is {grad.dims()} {grad.dtype}, "
                f"the parameter {tensor.dims()} {tensor.dtype}"
            )
        if grad.device != tensor.device:
            grad = grad.to_device(tensor.device)
        try:
            state = self._state(param.id, tensor)
        except ValueError as error:
            raise ValueError(f"ModuleOptimizer.step: parameter {where}: {error}") from None
        self.entries.append(_Entry(param, where, tensor, grad, state, device if autodiff else None))

    def _state(self, id: ParamId, tensor: Tensor) -> OptimizerState | None:
        """The stored state of parameter ``id`` on ``tensor``'s device and dtype."""
        stored = self._owner._states.get(id)
        if stored is None:
            return None
        state: OptimizerState = {}
        restored = False
        # float entries (moments) follow the parameter's dtype; int ones (a step count on the device)
        # keep theirs
        for name, value in stored.items():
            if isinstance(value, TensorData):
                restored = True
                data = value.convert(tensor.dtype) if value.kind is Kind.FLOAT else value
                value = Tensor.from_data(data, tensor.device)
            elif isinstance(value, Tensor):
                if value.device != tensor.device:
                    value = value.to_device(tensor.device)
                if value.dtype != tensor.dtype and value.dtype.kind is Kind.FLOAT:
                    value = value.cast(tensor.dtype)
            state[name] = value
        if restored:
            self._owner.optimizer.check_state(state, tensor)
        return state


class _Replace(ModuleMapper):
    """Puts the updated parameters in place, by ``ParamId``."""

    def __init__(self, updated: dict[ParamId, Param]) -> None:
        self._updated = updated

    def map_float_with_path(self, path: Sequence[str], param: Param) -> Param:
        return self._updated.get(param.id, param)


def check_range(
    owner: str,
    name: str,
    value: float,
    low: float = 0.0,
    high: float = math.inf,
    *,
    high_open: bool = False,
) -> None:
    """Raise ``ValueError`` unless ``low <= value <= high`` (``< high`` when ``high_open``); NaN fails."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = ok and low <= value and (value < high if high_open else value <= high)
    if not ok:
        bracket = ")" if high_open else "]"
        raise ValueError(f"{owner}: {name} must be in [{low:g}, {high:g}{bracket}, got {value!r}")


def state_tensor(state: OptimizerState, name: str) -> Tensor:
    """The tensor entry ``name`` of ``state``."""
    value = state[name]
    if not isinstance(value, Tensor):
        raise ValueError(f"the state entry {name!r} is a {type(value).__name__}, expected a Tensor")
    return value


def state_int(state: OptimizerState, name: str) -> int:
    """The counter entry ``name`` of ``state``."""
    value = state[name]
    if isinstance(value, Tensor):
        raise ValueError(f"the state entry {name!r} is a Tensor, expected an int")
    return value


def maximum(a: Tensor, b: Tensor) -> Tensor:
    """The element-wise maximum of two tensors of the same shape."""
    return a.mask_where(b.greater(a), b)
