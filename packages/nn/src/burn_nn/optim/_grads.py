"""``GradientsParams`` (gradients keyed by parameter id) and ``GradientsAccumulator``."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence

from burn_backend import AutodiffBackend, Device, Gradients, Kind, ParamId, Tensor

from .._module import Module, ModuleVisitor
from .._param import Param

__all__ = ["GradientsAccumulator", "GradientsParams"]


class GradientsParams:
    """The gradients of a module's parameters, keyed by ``ParamId``, on the inner (non-autodiff) backend.

    ``loss.backward()`` returns gradients keyed by graph node; an optimizer needs them keyed by the
    parameter they belong to, which is what this container holds. Keying by id is what lets gradients
    from several backward passes (or several devices) be accumulated for the same parameter.

    Example:
        >>> grads = GradientsParams.from_grads(loss.backward(), model)
        >>> model = optim.step(1e-3, model, grads)
    """

    def __init__(self) -> None:
        self._grads: dict[ParamId, Tensor] = {}

    @classmethod
    def from_grads(cls, grads: Gradients, module: Module) -> GradientsParams:
        """The gradients of ``module``'s float parameters, taken out of ``grads``.

        Burn consumes ``grads`` here; in Python the gradients found are removed from ``grads`` (as
        ``from_module`` does), so that they are not kept alive twice.

        Args:
            grads: what ``loss.backward()`` returned.
            module: the module (on an autodiff backend) whose parameters the gradients belong to.

        Returns:
            One gradient per parameter that took part in the loss; parameters that did not (or that do not
            require a gradient) have none.

        Raises:
            TypeError: a parameter of ``module`` is not on an autodiff backend.
        """
        return cls.from_module(grads, module)

    @classmethod
    def from_module(cls, grads: Gradients, module: Module) -> GradientsParams:
        """The gradients of ``module``'s float parameters, removed from ``grads`` (whose other gradients,
        of another module say, stay there)."""
        found = cls()
        module.visit(_GradientsCollector(grads, found, None))
        return found

    @classmethod
    def from_params(cls, grads: Gradients, module: Module, params: Sequence[ParamId]) -> GradientsParams:
        """The gradients of the parameters of ``module`` whose ids are in ``params``, removed from
        ``grads``; the other gradients stay there."""
        found = cls()
        module.visit(_GradientsCollector(grads, found, set(params)))
        return found

    def get(self, id: ParamId) -> Tensor | None:
        """The gradient of parameter ``id``, or ``None``."""
        return self._grads.get(id)

    def remove(self, id: ParamId) -> Tensor | None:
        """Remove and return the gradient of parameter ``id`` (``None`` if there is none)."""
        return self._grads.pop(id, None)

    def register(self, id: ParamId, gradient: Tensor) -> None:
        """Set the gradient of parameter ``id``, replacing any already there.

        Gradients live on the inner backend: a tensor of an autodiff backend is stored as its inner
        tensor, cut from the graph.

        Raises:
            TypeError: ``id`` is not a ``ParamId`` or ``gradient`` is not a Float tensor.
        """
        if not isinstance(id, ParamId):
            raise TypeError(f"GradientsParams.register: expected a ParamId, got {type(id).__name__}")
        if not isinstance(gradient, Tensor) or gradient.kind is not Kind.FLOAT:
            what = gradient.dtype if isinstance(gradient, Tensor) else type(gradient).__name__
            raise TypeError(f"GradientsParams.register: expected a Float tensor for {id!r}, got {what}")
        if isinstance(gradient.device.backend, AutodiffBackend):
            gradient = gradient.inner()
        self._grads[id] = gradient

    def param_ids(self) -> list[ParamId]:
        """The ids of the parameters that have a gradient, in registration order."""
        return list(self._grads)

    def is_empty(self) -> bool:
        """Whether no gradient is held."""
        return not self._grads

    def to_device(self, device: Device, module: Module) -> GradientsParams:
        """These gradients with those of ``module``'s parameters moved to ``device`` (the others stay
        where they are); returns ``self``."""
        mover = _GradientsMover(self, device)
        module.visit(mover)
        return self

    def __len__(self) -> int:
        return len(self._grads)

    def __contains__(self, id: object) -> bool:
        return id in self._grads

    def __iter__(self) -> Iterator[ParamId]:
        return iter(self._grads)

    def __repr__(self) -> str:
        return f"GradientsParams({len(self._grads)} gradients)"


class _GradientsCollector(ModuleVisitor):
    """Moves the gradient of each visited float parameter from the backward pass's ``Gradients`` into a
    ``GradientsParams``."""

    def __init__(self, grads: Gradients, into: GradientsParams, only: Collection[ParamId] | None) -> None:
        self._grads = grads
        self._into = into
        self._only = only

    def visit_float_with_path(self, path: Sequence[str], param: Param) -> None:
        if self._only is not None and param.id not in self._only:
            return
        if not param.is_initialized:
            return  # a parameter never computed took no part in any graph
        if not isinstance(param.device.backend, AutodiffBackend):
            raise TypeError(
                f"GradientsParams: parameter {'.'.join(path) or '<root>'} is on {param.device}, which has "
                "no autodiff; train the module on an Autodiff(...) device"
            )
        gradient = param.val().grad_remove(self._grads)
        if gradient is not None:
            self._into.register(param.id, gradient)


class _GradientsMover(ModuleVisitor):
    def __init__(self, grads: GradientsParams, device: Device) -> None:
        self._grads = grads
        self._device = device

    def visit_float(self, param: Param) -> None:
        gradient = self._grads.remove(param.id)
        if gradient is not None:
            self._grads.register(param.id, gradient.to_device(self._device))


class GradientsAccumulator:
    """Sums the gradients of several backward passes, per parameter (gradient accumulation).

    Example:
        >>> accumulator = GradientsAccumulator()
        >>> for batch in micro_batches:
        ...     grads = GradientsParams.from_grads(loss(model, batch).backward(), model)
        ...     accumulator.accumulate(model, grads)
        >>> model = optim.step(lr, model, accumulator.grads())
    """

    def __init__(self) -> None:
        self._grads = GradientsParams()

    def accumulate(self, module: Module, grads: GradientsParams) -> None:
        """Add ``grads``' gradients of ``module``'s float parameters to the running sums (``grads`` is
        left as it was; gradients of parameters not in ``module`` are ignored)."""
        module.visit(_GradientsAdder(self._grads, grads))

    def grads(self) -> GradientsParams:
        """The accumulated gradients; the accumulator starts over empty."""
        grads, self._grads = self._grads, GradientsParams()
        return grads

    def __repr__(self) -> str:
        return f"GradientsAccumulator({len(self._grads)} gradients)"


class _GradientsAdder(ModuleVisitor):
    def __init__(self, sums: GradientsParams, new: GradientsParams) -> None:
        self._sums = sums
        self._new = new
        self._seen: set[ParamId] = set()

    def visit_float(self, param: Param) -> None:
        new = self._new.get(param.id)
        if new is None or param.id in self._seen:
            return  # a parameter shared by two fields is summed once
        self._seen.add(param.id)
        total = self._sums.get(param.id)
        if total is not None and total.shape != new.shape:
            raise ValueError(
                f"GradientsAccumulator.accumulate: the gradient of {param.id!r} has shape {new.dims()}, "
                f"the accumulated one {total.dims()}"
            )
        self._sums.register(param.id, new if total is None else total.add(new))
