"""Gradient clipping: ``GradientClippingConfig`` and ``GradientClipping``, by value, by each gradient's
norm or by the global norm of all of them, and ``clip_grad_norm`` for custom training loops."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from burn_backend import DType, ParamId, Tensor

from .._config import variant
from .._module import Module, ModuleVisitor
from .._param import Param
from ._grads import GradientsParams

__all__ = ["GradientClipping", "GradientClippingConfig", "clip_grad_norm"]

# The smallest positive normal value of each float dtype (Burn's ``finfo().min_positive``), added to a
# gradient's norm so that a zero gradient divides by something.
_MIN_POSITIVE = {
    DType.F64: 2.0**-1022,
    DType.F32: 2.0**-126,
    DType.BF16: 2.0**-126,
    DType.F16: 2.0**-14,
}
# what PyTorch's ``clip_grad_norm_`` adds to the global norm before dividing by it
_GLOBAL_EPSILON = 1e-6


class GradientClipping:
    """How an optimizer limits the gradients before its update, as Burn's ``GradientClipping`` enum:
    ``GradientClipping.Value(threshold)``, ``GradientClipping.Norm(max_norm)`` or (not in Burn)
    ``GradientClipping.GlobalNorm(max_norm)``.

    ``Value`` and ``Norm`` apply to each parameter's gradient on its own, as in Burn: ``Norm`` scales a
    gradient whose own L2 norm exceeds ``max_norm``. ``GlobalNorm`` is PyTorch's ``clip_grad_norm_``:
    all the gradients of a step scaled together by their total L2 norm.

    Example:
        >>> optim = SgdConfig().init().with_grad_clipping(GradientClipping.GlobalNorm(1.0))
    """

    Value: ClassVar[type[ClipByValue]]
    Norm: ClassVar[type[ClipByNorm]]
    GlobalNorm: ClassVar[type[ClipByGlobalNorm]]

    def clip_gradient(self, grad: Tensor) -> Tensor:
        """``grad`` clipped (same shape, dtype and device)."""
        raise NotImplementedError(f"{type(self).__name__} is not a kind of gradient clipping")

    def clip_gradients(self, grads: Sequence[Tensor]) -> list[Tensor]:
        """Every gradient of one optimizer step clipped, in order (what ``ModuleOptimizer.step`` calls):
        by default each on its own with ``clip_gradient``; ``GlobalNorm`` scales them together."""
        return [self.clip_gradient(grad) for grad in grads]


def _check_limit(owner: str, name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0):
        raise ValueError(f"{owner}: {name} must be a number >= 0, got {value!r}")


@dataclass(frozen=True)
class ClipByValue(GradientClipping):
    """Limits every gradient value to ``[-threshold, threshold]`` (PyTorch's ``clip_grad_value_``)."""

    threshold: float

    def __post_init__(self) -> None:
        _check_limit("GradientClipping.Value", "threshold", self.threshold)

    def clip_gradient(self, grad: Tensor) -> Tensor:
        """``grad`` with values above ``threshold`` set to it and below ``-threshold`` to its negative."""
        threshold = float(self.threshold)
        if math.isinf(threshold):
            return grad
        return grad.clamp(-threshold, threshold)


@dataclass(frozen=True)
class ClipByNorm(GradientClipping):
    """Scales a gradient whose L2 norm exceeds ``max_norm`` down to that norm:
    ``grad * min(1, max_norm / (norm + tiny))``, where ``tiny`` is the dtype's smallest positive normal
    value (Burn's rule; PyTorch adds ``1e-6`` instead)."""

    max_norm: float

    def __post_init__(self) -> None:
        _check_limit("GradientClipping.Norm", "max_norm", self.max_norm)

    def clip_gradient(self, grad: Tensor) -> Tensor:
        """``grad`` scaled so that its L2 norm is at most ``max_norm``."""
        norm = grad.square().sum().sqrt()
        tiny = _MIN_POSITIVE.get(grad.dtype, _MIN_POSITIVE[DType.F32])
        denominator = norm.add_scalar(tiny)
        factor = denominator.full_like(float(self.max_norm)).div(denominator).clamp_max(1.0)
        return grad.mul(factor.reshape([1] * grad.rank))


@dataclass(frozen=True)
class ClipByGlobalNorm(GradientClipping):
    """Scales all the gradients of a step together where their global L2 norm (over every value of every
    gradient) exceeds ``max_norm``: each gradient times ``min(1, max_norm / (total + 1e-6))``, as
    PyTorch's ``clip_grad_norm_`` (L2 only). The norm is computed on the device; nothing is read back."""

    max_norm: float

    def __post_init__(self) -> None:
        _check_limit("GradientClipping.GlobalNorm", "max_norm", self.max_norm)

    def clip_gradient(self, grad: Tensor) -> Tensor:
        """``grad`` alone scaled to a norm of at most ``max_norm`` (PyTorch's ``1e-6`` added to its norm)."""
        return self.clip_gradients([grad])[0]

    def clip_gradients(self, grads: Sequence[Tensor]) -> list[Tensor]:
        """``grads`` scaled together so that their global L2 norm is at most ``max_norm``."""
        return _scale_to_norm(grads, self.max_norm)[0] if grads else []


def _global_norm(grads: Sequence[Tensor]) -> Tensor:
    """The L2 norm of all the values of ``grads`` together, shape ``[1]``, on the first gradient's device:
    each gradient's sum of squares (f32 for f16 and bf16, so that it does not overflow), then one sum of
    those, in f64 where a gradient is f64."""
    partials = []
    for grad in grads:
        wide = grad.cast(DType.F32) if grad.dtype in (DType.F16, DType.BF16) else grad
        partials.append(wide.square().sum())
    device = partials[0].device
    dtype = DType.F64 if any(p.dtype == DType.F64 for p in partials) else DType.F32
    moved = [p.to_device(device) if p.device != device else p for p in partials]
    return Tensor.cat([p.cast(dtype) if p.dtype != dtype else p for p in moved], 0).sum().sqrt()


def _scale_to_norm(grads: Sequence[Tensor], max_norm: float) -> tuple[list[Tensor], Tensor]:
    """``grads`` scaled by ``min(1, max_norm / (total + 1e-6))``, and ``total``, their global L2 norm."""
    total = _global_norm(grads)
    factor = total.add_scalar(_GLOBAL_EPSILON).recip().mul_scalar(float(max_norm)).clamp_max(1.0)
    scaled = []
    for grad in grads:
        own = factor.to_device(grad.device) if factor.device != grad.device else factor
        own = own.cast(grad.dtype) if own.dtype != grad.dtype else own
        scaled.append(grad.mul(own.reshape([1] * grad.rank)))
    return scaled, total


class _GradientIds(ModuleVisitor):
    """The ids of a module's float parameters, each once, in field order."""

    def __init__(self) -> None:
        self.ids: dict[ParamId, None] = {}

    def visit_float(self, param: Param) -> None:
        self.ids[param.id] = None


def clip_grad_norm(grads: GradientsParams, module: Module, max_norm: float) -> tuple[GradientsParams, Tensor]:
    """PyTorch's ``clip_grad_norm_`` for a custom training loop: the gradients of ``module``'s parameters
    scaled together by ``min(1, max_norm / (total + 1e-6))``, where ``total`` is their global L2 norm.

    Nothing is read back to the host: the norm and the scale stay on the device (log ``total`` when you
    want it). ``grads`` is not changed; its gradients of other parameters are kept as they are.

    Args:
        grads: as ``GradientsParams.from_grads`` makes them.
        module: the module whose parameters' gradients count in the norm and are scaled.
        max_norm: the largest global norm kept (>= 0).

    Returns:
        The clipped gradients (a new ``GradientsParams``), and the global norm before clipping, a tensor of
        shape ``[1]`` on the first gradient's device.

    Raises:
        ValueError: ``max_norm`` is negative or not a number, or ``grads`` holds no gradient of ``module``.

    Example:
        >>> grads = GradientsParams.from_grads(loss.backward(), model)
        >>> grads, total_norm = clip_grad_norm(grads, model, 1.0)
        >>> model = optim.step(lr, model, grads)
    """
    if not isinstance(grads, GradientsParams):
        raise TypeError(f"clip_grad_norm: expected GradientsParams, got {type(grads).__name__}")
    _check_limit("clip_grad_norm", "max_norm", max_norm)
    visitor = _GradientIds()
    module.visit(visitor)
    own = [(id, grad) for id in visitor.ids if (grad := grads.get(id)) is not None]
    if not own:
        raise ValueError(
            f"clip_grad_norm: grads ({len(grads)} gradients) holds no gradient of a parameter of the "
            f"{type(module).__name__}"
        )
    scaled, total = _scale_to_norm([grad for _, grad in own], max_norm)
    clipped = GradientsParams()
    for id in grads:
        kept = grads.get(id)
        if kept is not None:
            clipped.register(id, kept)
    for (id, _), grad in zip(own, scaled, strict=True):
        clipped.register(id, grad)
    return clipped, total


@variant
class GradientClippingConfig:
    """Settings of gradient clipping, as Burn's ``GradientClippingConfig`` enum:
    ``GradientClippingConfig.Value(threshold)``, ``GradientClippingConfig.Norm(max_norm)`` (each
    parameter's gradient on its own) or ``GradientClippingConfig.GlobalNorm(max_norm)`` (all together, as
    PyTorch's ``clip_grad_norm_``; not in Burn).

    Optimizer configs take one in their ``grad_clipping`` field (``gradient_clipping`` for ``SgdConfig``,
    as in Burn); ``init()`` gives the ``GradientClipping``. Saved configs hold it as
    ``{"Value": {"threshold": 0.5}}``.

    Example:
        >>> optim = AdamConfig(grad_clipping=GradientClippingConfig.Norm(1.0)).init()
    """

    Value: ClassVar[type[ClipByValueConfig]]
    Norm: ClassVar[type[ClipByNormConfig]]
    GlobalNorm: ClassVar[type[ClipByGlobalNormConfig]]

    def init(self) -> GradientClipping:
        """The gradient clipping these settings describe.

        Raises:
            ValueError: the threshold or norm is negative or not a number.
        """
        raise NotImplementedError(f"{type(self).__name__} is not a kind of gradient clipping")


@dataclass(frozen=True)
class ClipByValueConfig(GradientClippingConfig):
    """Clip each gradient value to ``[-threshold, threshold]``."""

    threshold: float

    def init(self) -> GradientClipping:
        """``GradientClipping.Value(threshold)``."""
        return ClipByValue(self.threshold)


@dataclass(frozen=True)
class ClipByNormConfig(GradientClippingConfig):
    """Scale each parameter's gradient down to L2 norm ``max_norm`` where it is larger."""

    max_norm: float

    def init(self) -> GradientClipping:
        """``GradientClipping.Norm(max_norm)``."""
        return ClipByNorm(self.max_norm)


@dataclass(frozen=True)
class ClipByGlobalNormConfig(GradientClippingConfig):
    """Scale all the gradients of a step together down to global L2 norm ``max_norm`` where it is larger."""

    max_norm: float

    def init(self) -> GradientClipping:
        """``GradientClipping.GlobalNorm(max_norm)``."""
        return ClipByGlobalNorm(self.max_norm)


for _family, _kinds in (
    (GradientClipping, {"Value": ClipByValue, "Norm": ClipByNorm, "GlobalNorm": ClipByGlobalNorm}),
    (
        GradientClippingConfig,
        {"Value": ClipByValueConfig, "Norm": ClipByNormConfig, "GlobalNorm": ClipByGlobalNormConfig},
    ),
):
    for _name, _kind in _kinds.items():
        # the variant's name is what a saved config holds: {"Value": {...}}, as Burn writes it
        _kind.__name__ = _name
        _kind.__qualname__ = f"{_family.__name__}.{_name}"
        setattr(_family, _name, _kind)
