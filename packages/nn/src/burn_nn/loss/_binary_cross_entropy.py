"""``BinaryCrossEntropyLoss``: the cross-entropy of binary (or multi-label) targets."""

from __future__ import annotations

from burn_backend import Device, Kind, Tensor
from burn_backend.activation import log_sigmoid

from .._config import Config
from .._module import Module
from ._checks import (
    check_class_indices,
    check_float,
    check_probabilities,
    check_same_shape,
    check_tensor,
    class_weights_and_smoothing,
    constant_like,
    describe,
)
from ._reduction import Reduction, reduce

__all__ = ["BinaryCrossEntropyLoss", "BinaryCrossEntropyLossConfig"]

_LOSS = "BinaryCrossEntropyLoss"

# PyTorch's and Burn's floor on log(p) and log(1 - p): a certain mistake costs 100, not infinity
_LOG_FLOOR = -100.0


class BinaryCrossEntropyLossConfig(Config):
    """Settings of a ``BinaryCrossEntropyLoss``.

    Args:
        weights: a positive weight per class. For multi-label inputs ``[batch_size, num_classes]``, the
            loss of label ``c`` is scaled by ``weights[c]`` (PyTorch's ``weight`` of shape
            ``[num_classes]``); for binary inputs ``[batch_size]``, the loss of a sample is scaled by the
            weight of its target, ``weights[0]`` or ``weights[1]``.
        smoothing: label smoothing ``alpha`` in ``[0, 1]``: targets become
            ``y * (1 - alpha) + alpha / num_classes``, with ``num_classes`` the size of the last dim for
            multi-label inputs and 2 for binary ones (Burn's rule).
        logits: whether the inputs are logits (the sigmoid is applied inside, stably) or probabilities.
    """

    weights: tuple[float, ...] | None = None
    smoothing: float | None = None
    logits: bool = False

    def init(self, device: Device) -> BinaryCrossEntropyLoss:
        """A ``BinaryCrossEntropyLoss`` whose class weights (if any) live on ``device``.

        Raises:
            ValueError: ``smoothing`` is outside ``[0, 1]`` or a weight is not positive.
        """
        return BinaryCrossEntropyLoss(self, device)


class BinaryCrossEntropyLoss(Module):
    """The binary cross-entropy ``-(y log p + (1 - y) log(1 - p))`` of each value.

    With ``logits=True``, ``p = sigmoid(x)`` and the loss is computed as ``(1 - y) x - log_sigmoid(x)``,
    which neither overflows nor loses precision for large ``|x|`` (PyTorch's
    ``binary_cross_entropy_with_logits``). With probabilities, ``log p`` and ``log(1 - p)`` are floored
    at -100 as in PyTorch's ``binary_cross_entropy``.

    Example:
        >>> loss = BinaryCrossEntropyLossConfig(logits=True).init(device)
        >>> loss(logits, targets).dims()  # both [batch] or [batch, num_classes]
        [1]
    """

    def __init__(self, config: BinaryCrossEntropyLossConfig, device: Device) -> None:
        self.weights, self.smoothing = class_weights_and_smoothing(
            _LOSS, config.weights, config.smoothing, device
        )
        self.logits: bool = bool(config.logits)

    def forward(self, logits: Tensor, targets: Tensor, reduction: Reduction = Reduction.AUTO) -> Tensor:
        """The loss of ``logits`` (or probabilities) against ``targets``.

        Args:
            logits: Float ``[batch_size]`` (binary) or ``[batch_size, num_classes]`` (multi-label); any
                rank works, the last dim holding the classes.
            targets: the same shape: Int labels 0 or 1 (as Burn), or Float targets in ``[0, 1]``.
            reduction: ``AUTO``/``MEAN`` (the default, Burn's only behaviour): the mean over every value,
                shape ``[1]``; ``SUM``: the sum, ``[1]``; ``NONE``: the weighted loss of each value.

        Raises:
            TypeError: ``logits`` is not Float, ``targets`` neither Int nor Float, or binary inputs with
                class weights have Float targets (the weight is picked by the label).
            ValueError: the shapes differ, the weights do not fit the classes, a binary target is not a
                class of the weights, the reduction is ``BATCH_MEAN``, or (without ``logits``) an input
                or a target lies outside ``[0, 1]`` or is NaN, which PyTorch refuses too, or an Int
                label is not 0 or 1 (checked where the backend ``validates_index_values``).
        """
        logits = check_float(_LOSS, "logits", logits)
        targets = check_tensor(_LOSS, "targets", targets)
        check_same_shape(_LOSS, "logits", logits, "targets", targets)
        if targets.kind is Kind.BOOL:
            raise TypeError(f"{_LOSS}: targets must be Int labels or Float targets, got {describe(targets)}")
        if logits.rank == 0:
            raise ValueError(f"{_LOSS}: logits must have rank >= 1, got {describe(logits)}")
        if not self.logits:
            hint = "; for unnormalized scores, use BinaryCrossEntropyLossConfig(logits=True)"
            check_probabilities(_LOSS, "the inputs (logits=False)", logits, hint)
            if targets.kind is Kind.FLOAT:
                check_probabilities(_LOSS, "targets", targets)
            elif self.weights is None:
                check_class_indices(_LOSS, "targets", targets, 2)
        weights = None if self.weights is None else constant_like(self.weights, logits)

        labels = targets.float(logits.dtype)
        if self.smoothing is not None:
            num_classes = logits.dims()[-1] if logits.rank > 1 else 2
            labels = labels * (1.0 - self.smoothing) + self.smoothing / num_classes

        if self.logits:
            losses = (1.0 - labels) * logits - log_sigmoid(logits)
        else:
            log_p = logits.log().clamp_min(_LOG_FLOOR)
            log_not_p = (-logits).log1p().clamp_min(_LOG_FLOOR)
            losses = (labels - 1.0) * log_not_p - labels * log_p

        if weights is not None:
            losses = losses * self._expanded_weights(weights, targets)
        return reduce(_LOSS, losses, reduction)

    def _expanded_weights(self, weights: Tensor, targets: Tensor) -> Tensor:
        """The weight of each value: per class along the last dim, or per label for binary inputs."""
        count = weights.dims()[0]
        if targets.rank > 1:
            num_classes = targets.dims()[-1]
            if count != num_classes:
                raise ValueError(
                    f"{_LOSS}: {count} class weights given for targets of {num_classes} classes "
                    f"(shape {targets.dims()})"
                )
            return weights.reshape([1] * (targets.rank - 1) + [count])
        if targets.kind is not Kind.INT:
            raise TypeError(
                f"{_LOSS}: binary targets with class weights must be Int labels (the weight is picked by "
                f"the label), got {describe(targets)}"
            )
        check_class_indices(_LOSS, "targets", targets, count)
        return weights.gather(0, targets)
