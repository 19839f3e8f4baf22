"""Gradient clipping: ``GradientClippingConfig`` and ``GradientClipping``, by value or by norm."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from burn_backend import DType, Tensor

from .._config import variant

__all__ = ["GradientClipping", "GradientClippingConfig"]

# The smallest positive normal value of each float dtype (Burn's ``finfo().min_positive``), added to a
# gradient's norm so that a zero gradient divides by something.
_MIN_POSITIVE = {
    DType.F64: 2.0**-1022,
    DType.F32: 2.0**-126,
    DType.BF16: 2.0**-126,
    DType.F16: 2.0**-14,
}


class GradientClipping:
    """How an optimizer limits each parameter's gradient before its update, as Burn's
    ``GradientClipping`` enum: ``GradientClipping.Value(threshold)`` or ``GradientClipping.Norm(max_norm)``.

    Clipping applies to each parameter's gradient on its own, as in Burn: ``Norm`` scales a gradient whose
    own L2 norm exceeds ``max_norm``. (PyTorch's ``clip_grad_norm_`` scales all gradients together by
    their total norm; call it on each parameter separately to get Burn's behaviour.)
    """

    Value: ClassVar[type[ClipByValue]]
    Norm: ClassVar[type[ClipByNorm]]

    def clip_gradient(self, grad: Tensor) -> Tensor:
        """``grad`` clipped (same shape, dtype and device)."""
        raise NotImplementedError(f"{type(self).__name__} is not a kind of gradient clipping")


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


@variant
class GradientClippingConfig:
    """Settings of gradient clipping, as Burn's ``GradientClippingConfig`` enum:
    ``GradientClippingConfig.Value(threshold)`` or ``GradientClippingConfig.Norm(max_norm)``.

    Optimizer configs take one in their ``grad_clipping`` field (``gradient_clipping`` for ``SgdConfig``,
    as in Burn); ``init()`` gives the ``GradientClipping``. Saved configs hold it as
    ``{"Value": {"threshold": 0.5}}``.

    Example:
        >>> optim = AdamConfig(grad_clipping=GradientClippingConfig.Norm(1.0)).init()
    """

    Value: ClassVar[type[ClipByValueConfig]]
    Norm: ClassVar[type[ClipByNormConfig]]

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


for _family, _kinds in (
    (GradientClipping, {"Value": ClipByValue, "Norm": ClipByNorm}),
    (GradientClippingConfig, {"Value": ClipByValueConfig, "Norm": ClipByNormConfig}),
):
    for _name, _kind in _kinds.items():
        # the variant's name is what a saved config holds: {"Value": {...}}, as Burn writes it
        _kind.__name__ = _name
        _kind.__qualname__ = f"{_family.__name__}.{_name}"
        setattr(_family, _name, _kind)
