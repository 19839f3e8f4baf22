"""``WeightDecay``: the L2 penalty added to a gradient."""

from __future__ import annotations

from burn_backend import Tensor

from .._config import Config
from ._optimizer import check_range

__all__ = ["WeightDecay", "WeightDecayConfig"]


class WeightDecayConfig(Config):
    """Settings of an L2 weight decay (``Sgd``, ``Adam``, ``AdaGrad``, ``RmsProp``, ``Muon``).

    Args:
        penalty: the L2 factor ``λ`` (>= 0); the gradient becomes ``grad + λ * param``, as PyTorch's
            ``weight_decay`` argument does.
    """

    penalty: float

    def init(self) -> WeightDecay:
        """The weight decay these settings describe.

        Raises:
            ValueError: ``penalty`` is negative or not a number.
        """
        return WeightDecay(self)


class WeightDecay:
    """Adds ``penalty * param`` to a gradient (L2 regularization, coupled with the gradient)."""

    def __init__(self, config: WeightDecayConfig) -> None:
        check_range("WeightDecayConfig", "penalty", config.penalty)
        self.penalty = float(config.penalty)

    def transform(self, grad: Tensor, tensor: Tensor) -> Tensor:
        """``grad + penalty * tensor``, where ``tensor`` is the parameter's value before the step."""
        return tensor.mul_scalar(self.penalty).add(grad)

    def __repr__(self) -> str:
        return f"WeightDecay(penalty={self.penalty})"
