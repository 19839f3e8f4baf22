"""``Momentum``: the velocity a gradient is accumulated into (SGD momentum, optionally Nesterov's)."""

from __future__ import annotations

from burn_backend import Tensor

from .._config import Config
from ._optimizer import check_range

__all__ = ["Momentum", "MomentumConfig"]


class MomentumConfig(Config):
    """Settings of momentum, as Burn's ``MomentumConfig``.

    Args:
        momentum: the factor ``μ`` (>= 0) the velocity decays by each step.
        dampening: the factor ``τ`` in ``[0, 1]``; each new gradient enters the velocity times ``1 - τ``
            (except the first, which starts it, as in PyTorch). Burn's default ``0.1``; PyTorch's ``SGD``
            has ``dampening=0``.
        nesterov: whether the step uses Nesterov's look-ahead ``grad + μ * velocity`` instead of the
            velocity.
    """

    momentum: float = 0.9
    dampening: float = 0.1
    nesterov: bool = False

    def init(self) -> Momentum:
        """The momentum these settings describe.

        Raises:
            ValueError: ``momentum`` is negative or ``dampening`` outside ``[0, 1]``.
        """
        return Momentum(self)


class Momentum:
    """Transforms a gradient with a velocity: ``v = μ v + (1 - τ) g`` (``v = g`` at the first step), then
    ``g + μ v`` (Nesterov) or ``v``. The same rule as PyTorch's SGD momentum."""

    def __init__(self, config: MomentumConfig) -> None:
        check_range("MomentumConfig", "momentum", config.momentum)
        check_range("MomentumConfig", "dampening", config.dampening, 0.0, 1.0)
        self.momentum = float(config.momentum)
        self.dampening = float(config.dampening)
        self.nesterov = bool(config.nesterov)

    def transform(self, grad: Tensor, velocity: Tensor | None) -> tuple[Tensor, Tensor]:
        """The transformed gradient and the new velocity, given the previous velocity (``None`` at the
        first step)."""
        if velocity is None:
            velocity = grad
        else:
            velocity = velocity.mul_scalar(self.momentum).add(grad.mul_scalar(1.0 - self.dampening))
        if self.nesterov:
            return velocity.mul_scalar(self.momentum).add(grad), velocity
        return velocity, velocity

    def __repr__(self) -> str:
        return f"Momentum(momentum={self.momentum}, dampening={self.dampening}, nesterov={self.nesterov})"
