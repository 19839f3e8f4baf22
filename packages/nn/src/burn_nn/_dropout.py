"""``Dropout`` and ``Identity``, and the functional ``dropout``."""

from __future__ import annotations

from burn_backend import Device, Distribution, Tensor

from ._config import Config
from ._module import Module, is_training

__all__ = ["Dropout", "DropoutConfig", "Identity", "dropout"]


def _check_prob(op: str, prob: object) -> float:
    if isinstance(prob, bool) or not isinstance(prob, (int, float)) or not 0.0 <= prob <= 1.0:
        raise ValueError(f"{op}: prob must be a number in [0, 1], got {prob!r}")
    return float(prob)


def dropout(x: Tensor, prob: float = 0.5, training: bool = True) -> Tensor:
    """``x`` with each value zeroed with probability ``prob`` and the others scaled by ``1 / (1 -
    prob)`` where ``training``, else ``x`` itself, as ``torch.nn.functional.dropout``.

    The mask is drawn from the device's generator of ``x``, so ``device.seed(n)`` repeats it. The
    ``Dropout`` layer calls it with ``training=is_training(x)``.

    Args:
        x: a Float tensor.
        prob: the probability of zeroing each value, in ``[0, 1]``.
        training: whether to drop (``False``: the identity).

    Returns:
        A tensor of ``x``'s shape and dtype.

    Example:
        >>> y = dropout(Tensor.ones([2, 4]), 0.5)  # about half zeros, the rest 2.0
        >>> dropout(Tensor.ones([2]), 0.5, training=False).tolist()
        [1.0, 1.0]
    """
    prob = _check_prob("dropout", prob)
    if not isinstance(x, Tensor):
        raise TypeError(f"dropout: x must be a Tensor, got {type(x).__name__}")
    if not training or prob == 0.0:
        return x
    if prob == 1.0:
        return x * 0.0  # zero, and still in the graph: the input's gradient is zero, not missing
    keep = Tensor.random(x.dims(), Distribution.bernoulli(1.0 - prob), x.device, x.dtype)
    # the scaled mask is a constant of the graph: one tracked multiplication
    return x * (keep * (1.0 / (1.0 - prob)))


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
        self.prob = _check_prob("Dropout", config.prob)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` with dropout applied while training (``dropout(input, prob, is_training(input))``)."""
        return dropout(input, self.prob, is_training(input))


class Identity(Module):
    """Returns its input unchanged (a placeholder where a layer is optional)."""

    def forward(self, input: Tensor) -> Tensor:
        """``input``."""
        return input
