"""Regression losses: ``MseLoss``, ``HuberLoss`` and ``SmoothL1Loss``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from burn_backend import Device, Tensor

from .._config import Config
from .._module import Module
from ._checks import check_float, check_same_dtype, check_same_shape
from ._reduction import Reduction, check_reduction, reduce

__all__ = [
    "HuberLoss",
    "HuberLossConfig",
    "MseLoss",
    "SmoothL1Loss",
    "SmoothL1LossConfig",
]


def _pair(loss: str, first: str, a: object, second: str, b: object) -> tuple[Tensor, Tensor]:
    """Two Float tensors of one shape and dtype."""
    x = check_float(loss, first, a)
    y = check_float(loss, second, b)
    check_same_shape(loss, first, x, second, y)
    check_same_dtype(loss, first, x, second, y)
    return x, y


def _reduced(loss: str, losses: Callable[[], Tensor], reduction: Reduction) -> Tensor:
    """``losses()`` reduced as ``reduction`` says (checked before the losses are computed)."""
    check_reduction(loss, reduction)
    return reduce(loss, losses(), reduction)


# -- mean squared error ------------------------------------------------------------------------------
class MseLoss(Module):
    """The squared error ``(logits - targets)^2`` of each value (PyTorch's ``mse_loss``).

    Example:
        >>> MseLoss()(predictions, targets, Reduction.SUM).dims()
        [1]
    """

    def forward(self, logits: Tensor, targets: Tensor, reduction: Reduction = Reduction.AUTO) -> Tensor:
        """The loss of ``logits`` against ``targets`` (Float tensors of one shape and dtype).

        ``AUTO`` (the default) and ``MEAN`` return the mean, ``SUM`` the sum (both of shape ``[1]``),
        ``NONE`` the squared errors.

        Raises:
            TypeError: an input is not Float, or the dtypes differ.
            ValueError: the shapes differ, or the reduction is ``BATCH_MEAN``.
        """
        return _reduced("MseLoss", lambda: self.forward_no_reduction(logits, targets), reduction)

    def forward_no_reduction(self, logits: Tensor, targets: Tensor) -> Tensor:
        """The squared error of each value: the shape of the inputs."""
        logits, targets = _pair("MseLoss", "logits", logits, "targets", targets)
        return (logits - targets).square()


# -- Huber -------------------------------------------------------------------------------------------
class HuberLossConfig(Config):
    """Settings of a ``HuberLoss``: ``delta``, where the loss turns from quadratic to linear (>= 0)."""

    delta: float

    def init(self, device: Device | None = None) -> HuberLoss:
        """A ``HuberLoss`` (it holds no tensors; ``device`` is accepted for uniformity).

        Raises:
            ValueError: ``delta`` is negative or NaN.
        """
        return HuberLoss(self)


class HuberLoss(Module):
    """The Huber loss of each residual ``r = targets - predictions``:

    ``0.5 r^2`` where ``|r| <= delta``, and ``delta * (|r| - 0.5 delta)`` beyond (PyTorch's
    ``huber_loss``). Quadratic near zero like the squared error, linear for outliers.

    Example:
        >>> HuberLossConfig(0.5).init()(predictions, targets).dims()
        [1]
    """

    def __init__(self, config: HuberLossConfig) -> None:
        delta = float(config.delta)
        if not delta >= 0.0:  # NaN fails too
            raise ValueError(f"HuberLoss: delta must be a non-negative number, got {config.delta!r}")
        self.delta: float = delta
        self.lin_bias: float = delta * delta * 0.5

    def forward(self, predictions: Tensor, targets: Tensor, reduction: Reduction = Reduction.AUTO) -> Tensor:
        """The loss of ``predictions`` against ``targets`` (Float, one shape and dtype), reduced:
        ``AUTO`` (the default) and ``MEAN`` give the mean, ``SUM`` the sum, ``NONE`` each value's loss.

        Raises:
            TypeError: an input is not Float, or the dtypes differ.
            ValueError: the shapes differ, or the reduction is ``BATCH_MEAN``.
        """
        return _reduced("HuberLoss", lambda: self.forward_no_reduction(predictions, targets), reduction)

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        """The loss of each value: the shape of the inputs."""
        predictions, targets = _pair("HuberLoss", "predictions", predictions, "targets", targets)
        return self.forward_residuals(targets - predictions)

    def forward_residuals(self, residuals: Tensor) -> Tensor:
        """The loss of each of the given residuals."""
        residuals = check_float("HuberLoss", "residuals", residuals)
        is_large = residuals.abs().greater_elem(self.delta)
        # beyond delta, clamp(r) = delta * sign(r), so clamp(r) * r = delta * |r|, without sign's jump at 0
        outside = residuals.clamp(-self.delta, self.delta) * residuals - self.lin_bias
        inside = residuals.square() * 0.5
        return inside.mask_where(is_large, outside)


# -- smooth L1 ---------------------------------------------------------------------------------------
class SmoothL1LossConfig(Config):
    """Settings of a ``SmoothL1Loss``: ``beta``, where the loss turns from quadratic to linear (> 0)."""

    beta: float = 1.0

    def init(self, device: Device | None = None) -> SmoothL1Loss:
        """A ``SmoothL1Loss`` (it holds no tensors; ``device`` is accepted for uniformity).

        Raises:
            ValueError: ``beta`` is not positive.
        """
        return SmoothL1Loss(self)


class SmoothL1Loss(Module):
    """The smooth L1 loss of each error ``e = predictions - targets``:

    ``0.5 e^2 / beta`` where ``|e| < beta``, and ``|e| - 0.5 beta`` beyond (PyTorch's ``smooth_l1_loss``;
    the Huber loss divided by ``beta``).

    As in Burn, ``forward`` returns the unreduced loss; ``forward_with_reduction`` reduces it and
    ``forward_reduce_dims`` averages it over chosen dims.
    """

    def __init__(self, config: SmoothL1LossConfig) -> None:
        beta = float(config.beta)
        if not beta > 0.0:  # NaN fails too
            raise ValueError(f"SmoothL1Loss: the parameter beta must be positive, got {config.beta!r}")
        self.beta: float = beta

    def forward(self, predictions: Tensor, targets: Tensor) -> Tensor:
        """The loss of each value (Float inputs of one shape and dtype): the shape of the inputs.

        Raises:
            TypeError: an input is not Float, or the dtypes differ.
            ValueError: the shapes differ.
        """
        predictions, targets = _pair("SmoothL1Loss", "predictions", predictions, "targets", targets)
        error = predictions - targets
        abs_error = error.abs()
        l1 = abs_error - 0.5 * self.beta
        l2 = error.square() * (0.5 / self.beta)
        return l1.mask_where(abs_error.lower_elem(self.beta), l2)

    def forward_with_reduction(
        self, predictions: Tensor, targets: Tensor, reduction: Reduction = Reduction.AUTO
    ) -> Tensor:
        """The loss reduced: ``AUTO`` (the default) and ``MEAN`` give the mean, ``SUM`` the sum (shape
        ``[1]``), ``NONE`` the loss of each value.

        Raises:
            ValueError: as ``forward``, or the reduction is ``BATCH_MEAN``.
        """
        return _reduced("SmoothL1Loss", lambda: self.forward(predictions, targets), reduction)

    def forward_reduce_dims(self, predictions: Tensor, targets: Tensor, dims: Sequence[int]) -> Tensor:
        """The mean loss over ``dims`` (any order, negative counting from the end), each kept with size 1:
        ``[1, 2, 3]`` on images ``[batch, C, H, W]`` gives a loss per image, ``[batch, 1, 1, 1]``.

        Raises:
            IndexError: a dim is out of range.
            ValueError: as ``forward``, or a dim repeats.
        """
        losses = self.forward(predictions, targets)
        rank = losses.rank
        normalized = []
        for dim in dims:
            if not -rank <= dim < rank:
                raise IndexError(f"SmoothL1Loss: dim {dim} is out of range for rank {rank}")
            normalized.append(dim % rank)
        if len(set(normalized)) != len(normalized):
            raise ValueError(f"SmoothL1Loss: dims repeat: {list(dims)}")
        for dim in sorted(normalized):
            losses = losses.mean_dim(dim)
        return losses
