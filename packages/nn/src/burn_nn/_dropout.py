"""``Dropout`` and ``Identity``."""

from __future__ import annotations

from burn_backend import Device, Distribution, Tensor

from ._config import Config
from ._module import Module, is_training

__all__ = ["Dropout", "DropoutConfig", "Identity"]


class DropoutConfig(Config):
    """Settings of a ``Dropout`` layer: ``prob``, the probability of zeroing each value."""

    prob: float = 0.5

    def init(self, device: Device | None = None) -> Dropout:
        """A ``Dropout`` layer (it has no parameters; ``device`` is accepted for uniformity)."""
        return Dropout(self)


class Dropout(Module):
    """While training (on an autodiff backend), zeroes each value with probability ``prob`` and scales the
    rest by ``1 / (1 - prob)``; in evaluation (``model.valid()``), the identity.

    The mask is drawn from the input's device generator, so ``device.seed(n)`` repeats it.
    """

    def __init__(self, config: DropoutConfig) -> None:
        if isinstance(config.prob, bool) or not 0.0 <= config.prob <= 1.0:
            raise ValueError(f"Dropout: prob must be a number in [0, 1], got {config.prob!r}")
        self.prob = float(config.prob)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` with dropout applied while training."""
        if not is_training(input) or self.prob == 0.0:
            return input
        if self.prob == 1.0:
            return input * 0.0  # zero, and still in the graph: the input's gradient is zero, not missing
        keep = Tensor.random(input.dims(), Distribution.bernoulli(1.0 - self.prob), input.device, input.dtype)
        # the scaled mask is a constant of the graph: one tracked multiplication
        return input * (keep * (1.0 / (1.0 - self.prob)))


class Identity(Module):
    """Returns its input unchanged (a placeholder where a layer is optional)."""

    def forward(self, input: Tensor) -> Tensor:
        """``input``."""
        return input
