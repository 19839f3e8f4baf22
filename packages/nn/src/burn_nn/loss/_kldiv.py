"""``KLDivLoss``: the Kullback-Leibler divergence of targets from predicted log-probabilities."""

from __future__ import annotations

from burn_backend import Device, Tensor

from .._config import Config
from .._module import Module
from ._checks import check_float, check_same_dtype, check_same_shape, tiny
from ._reduction import Reduction, check_reduction, reduce

__all__ = ["KLDivLoss", "KLDivLossConfig"]

_LOSS = "KLDivLoss"


class KLDivLossConfig(Config):
    """Settings of a ``KLDivLoss``: ``log_target``, whether the targets are log-probabilities too."""

    log_target: bool = False

    def init(self, device: Device | None = None) -> KLDivLoss:
        """A ``KLDivLoss`` (it holds no tensors; ``device`` is accepted for uniformity)."""
        return KLDivLoss(self)


class KLDivLoss(Module):
    """The point-wise KL divergence ``y * (log y - x)`` of targets ``y`` from log-probabilities ``x``
    (``exp(t) * (t - x)`` for log-targets ``t``), as PyTorch's ``kl_div``: targets of 0 contribute 0.

    Its ``AUTO`` reduction (the default) is ``BATCH_MEAN``, the sum divided by the batch size, which is the
    divergence of the distributions; ``MEAN`` divides by the number of values instead.
    """

    def __init__(self, config: KLDivLossConfig) -> None:
        self.log_target: bool = bool(config.log_target)

    def forward(self, predictions: Tensor, targets: Tensor, reduction: Reduction = Reduction.AUTO) -> Tensor:
        """The divergence of ``targets`` from ``predictions`` (log-probabilities), reduced.

        Args:
            predictions: Float log-probabilities, ``[batch_size, num_targets]`` (any shape works).
            targets: probabilities (or log-probabilities with ``log_target``), the same shape and dtype.
            reduction: ``AUTO``/``BATCH_MEAN`` (sum / batch size), ``MEAN``, ``SUM`` (all shape ``[1]``)
                or ``NONE`` (the point-wise values).

        Raises:
            TypeError: an input is not Float, or the dtypes differ.
            ValueError: the shapes differ.
        """
        check_reduction(_LOSS, reduction, batch_mean=True)
        losses = self.forward_no_reduction(predictions, targets)
        return reduce(_LOSS, losses, reduction, auto=Reduction.BATCH_MEAN)

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        """The point-wise divergence: the shape of the inputs."""
        predictions = check_float(_LOSS, "predictions", predictions)
        targets = check_float(_LOSS, "targets", targets)
        check_same_shape(_LOSS, "predictions", predictions, "targets", targets)
        check_same_dtype(_LOSS, "predictions", predictions, "targets", targets)
        if self.log_target:
            return targets.exp() * (targets - predictions)
        # clamping keeps log finite at y = 0, where y * (...) is then 0 (PyTorch's xlogy)
        log_targets = targets.clamp(tiny(targets.dtype), 1.0).log()
        return targets * (log_targets - predictions)
