"""``CrossEntropyLoss``: the negative log-likelihood of class indices under softmax logits, and the
functional forms ``cross_entropy`` (class indices) and ``cross_entropy_with_logits`` (probabilities)."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

from burn_backend import Device, Tensor
from burn_backend.activation import log_softmax

from .._config import Config
from .._module import Module
from ._checks import (
    check_class_indices,
    check_float,
    check_int,
    check_same_dtype,
    check_same_shape,
    class_weights_and_smoothing,
    constant_like,
    one_hot,
    tiny,
)
from ._reduction import Reduction, check_reduction

__all__ = ["CrossEntropyLoss", "CrossEntropyLossConfig", "cross_entropy", "cross_entropy_with_logits"]

_LOSS = "CrossEntropyLoss"


class CrossEntropyLossConfig(Config):
    """Settings of a ``CrossEntropyLoss``.

    Args:
        pad_tokens: target values to ignore (PyTorch's ``ignore_index``, but several may be given):
            their samples add nothing to the loss nor to the normalizer of the mean. A batch of pad
            tokens only has a mean loss of NaN (no valid sample), as in Burn and PyTorch.
        weights: a positive weight per class: the loss of a sample is scaled by the weight of its
            target class, and the mean is divided by the sum of the target weights (PyTorch's
            ``weight``).
        smoothing: label smoothing ``alpha`` in ``[0, 1]``: the one-hot targets become
            ``y * (1 - alpha) + alpha / num_classes`` (PyTorch's ``label_smoothing``).
        logits: whether the inputs are logits (softmax applied inside, stably through
            ``log_softmax``) or probabilities (logged after clamping away from zero).
    """

    pad_tokens: tuple[int, ...] | None = None
    weights: tuple[float, ...] | None = None
    smoothing: float | None = None
    logits: bool = True

    def init(self, device: Device) -> CrossEntropyLoss:
        """A ``CrossEntropyLoss`` whose class weights (if any) live on ``device``.

        Raises:
            ValueError: ``smoothing`` is outside ``[0, 1]`` or a weight is not positive.
        """
        return CrossEntropyLoss(self, device)


class CrossEntropyLoss(Module):
    """The cross-entropy between class-index targets and the softmax of logits (or given probabilities).

    For a sample with logits ``x``, target ``y`` and class weights ``w``, the loss is
    ``-w[y] * log_softmax(x)[y]``; with label smoothing it is ``-sum_c w[c] * t[c] * log_softmax(x)[c]``
    for the smoothed targets ``t``. The default reduction is the weighted mean over the samples that are
    not pad tokens, as Burn's ``CrossEntropyLoss`` and PyTorch's ``cross_entropy``.

    Example:
        >>> loss = CrossEntropyLossConfig(smoothing=0.1).init(device)
        >>> loss(logits, targets).dims()  # logits [batch, classes], targets [batch]
        [1]
    """

    def __init__(self, config: CrossEntropyLossConfig, device: Device) -> None:
        weights, smoothing = class_weights_and_smoothing(_LOSS, config.weights, config.smoothing, device)
        self.pad_tokens: tuple[int, ...] | None = _pad_tokens(config.pad_tokens, _LOSS)
        self.weights = weights
        self.smoothing = smoothing
        self.logits: bool = bool(config.logits)

    def forward(self, logits: Tensor, targets: Tensor, reduction: Reduction = Reduction.AUTO) -> Tensor:
        """The loss of ``logits`` against ``targets``.

        Args:
            logits: ``[batch_size, num_classes]`` Float logits (or probabilities when the config says
                ``logits=False``).
            targets: ``[batch_size]`` Int class indices in ``[0, num_classes)`` (or pad tokens).
            reduction: ``AUTO`` and ``MEAN`` (the default, Burn's only behaviour): the weighted mean over
                non-pad samples, shape ``[1]``; ``SUM``: the weighted sum, ``[1]``; ``NONE``: the
                weighted loss of each sample, ``[batch_size]``, 0 at pad tokens.

        Raises:
            TypeError: ``logits`` is not Float or ``targets`` not Int.
            ValueError: the shapes do not fit, a target is out of range, the number of class weights
                is not ``num_classes``, or the reduction is ``BATCH_MEAN``.
        """
        logits = check_float(_LOSS, "logits", logits, rank=2)
        weights = None if self.weights is None else constant_like(self.weights, logits)
        return _cross_entropy(
            _LOSS, logits, targets, weights, self.pad_tokens, self.smoothing, self.logits, reduction
        )


def _cross_entropy(
    loss: str,
    logits: Tensor,
    targets: Tensor,
    weights: Tensor | None,
    pad_tokens: tuple[int, ...] | None,
    smoothing: float | None,
    from_logits: bool,
    reduction: Reduction,
) -> Tensor:
    """The cross-entropy of ``CrossEntropyLoss.forward`` and ``cross_entropy``; errors name ``loss``."""
    logits = check_float(loss, "logits", logits, rank=2)
    targets = check_int(loss, "targets", targets, rank=1)
    reduction = check_reduction(loss, reduction)
    batch_size, num_classes = logits.dims()
    if targets.dims() != [batch_size]:
        raise ValueError(
            f"{loss}: targets must have shape [{batch_size}] for logits of shape "
            f"{logits.dims()}, got {targets.dims()}"
        )
    if weights is not None and weights.dims() != [num_classes]:
        raise ValueError(
            f"{loss}: {weights.dims()[0]} class weights given for logits of {num_classes} classes"
        )

    pad_mask = _padding_mask(targets, pad_tokens)
    # pad tokens need not be classes (PyTorch's -100): any class stands in for them, then is masked
    classes = targets if pad_mask is None else targets.mask_fill(pad_mask, 0)
    check_class_indices(loss, "targets", classes, num_classes)

    if from_logits:
        log_probs = log_softmax(logits, 1)
    else:
        log_probs = logits.clamp_min(math.sqrt(tiny(logits.dtype))).log()

    if smoothing is None:
        picked = log_probs.gather(1, classes.reshape([batch_size, 1])).reshape([batch_size])
        sample_weights = None if weights is None else weights.gather(0, classes)
        losses = -picked if sample_weights is None else -(picked * sample_weights)
    else:
        alpha = smoothing
        smoothed = one_hot(classes, num_classes, logits.dtype) * (1.0 - alpha) + alpha / num_classes
        terms = log_probs * smoothed
        if weights is not None:
            terms = terms * weights.reshape([1, num_classes])
        losses = -terms.sum_dim(1).reshape([batch_size])
        sample_weights = None if weights is None else weights.gather(0, classes)

    if pad_mask is not None:
        losses = losses.mask_fill(pad_mask, 0.0)
    if reduction is Reduction.NONE:
        return losses
    if reduction is Reduction.SUM:
        return losses.sum()
    if sample_weights is None and pad_mask is None:
        return losses.mean()
    normalizer = losses.ones_like() if sample_weights is None else sample_weights
    if pad_mask is not None:
        normalizer = normalizer.mask_fill(pad_mask, 0.0)
    return losses.sum() / normalizer.sum()


def _padding_mask(targets: Tensor, pad_tokens: tuple[int, ...] | None) -> Tensor | None:
    """The Bool ``[batch_size]`` mask of pad-token targets, or None without pad tokens."""
    if not pad_tokens:
        return None
    mask = targets.equal_elem(pad_tokens[0])
    for token in pad_tokens[1:]:
        mask = mask.bool_or(targets.equal_elem(token))
    return mask


def cross_entropy(
    logits: Tensor,
    targets: Tensor,
    weights: Tensor | Sequence[float] | None = None,
    pad_tokens: Sequence[int] | None = None,
    smoothing: float | None = None,
    reduction: Reduction = Reduction.AUTO,
) -> Tensor:
    """The cross-entropy between the class indices ``targets`` and the softmax of ``logits``, as
    ``torch.nn.functional.cross_entropy`` (``weights`` is its ``weight``, ``pad_tokens`` its
    ``ignore_index``, ``smoothing`` its ``label_smoothing``); the functional form of
    ``CrossEntropyLoss``, whose docstring details the formula.

    Args:
        logits: ``[batch_size, num_classes]`` Float logits.
        targets: ``[batch_size]`` Int class indices in ``[0, num_classes)`` (or pad tokens).
        weights: a positive weight per class (a Float tensor ``[num_classes]`` or a sequence), or ``None``.
        pad_tokens: target values whose samples are ignored, or ``None``.
        smoothing: label smoothing ``alpha`` in ``[0, 1]``, or ``None``.
        reduction: ``AUTO`` / ``MEAN`` (the weighted mean over non-pad samples, ``[1]``), ``SUM`` or
            ``NONE`` (``[batch_size]``).

    Returns:
        The loss, ``[1]`` or ``[batch_size]``.

    Example:
        >>> logits = Tensor.from_data([[2.0, 0.0], [0.0, 2.0]])
        >>> round(cross_entropy(logits, Tensor.from_data([0, 1])).item(), 4)
        0.1269
    """
    op = "cross_entropy"
    logits = check_float(op, "logits", logits, rank=2)
    if isinstance(weights, Tensor):
        weights = check_float(op, "weights", weights, rank=1)
        _, smoothing = class_weights_and_smoothing(op, None, smoothing, logits.device)
        if weights.dtype != logits.dtype:
            raise TypeError(
                f"{op}: weights and logits need one dtype, got {weights.dtype} and {logits.dtype}"
            )
    else:
        weight_values, smoothing = class_weights_and_smoothing(op, weights, smoothing, logits.device)
        weights = None if weight_values is None else constant_like(weight_values, logits)
    return _cross_entropy(
        op, logits, targets, weights, _pad_tokens(pad_tokens, op), smoothing, True, reduction
    )


def cross_entropy_with_logits(logits: Tensor, targets: Tensor) -> Tensor:
    """The cross-entropy between the class probabilities ``targets`` and the softmax of ``logits`` along
    the last dim, averaged over the other dims: ``mean(-sum_c targets[..., c] * log_softmax(logits)[...,
    c])``, as Burn's ``cross_entropy_with_logits`` (``torch.nn.functional.cross_entropy`` with
    probability targets).

    Args:
        logits: a Float tensor ``[..., num_classes]``.
        targets: class probabilities of ``logits``' shape and dtype (each row summing to 1).

    Returns:
        The loss, ``[1]``.

    Example:
        >>> logits = Tensor.from_data([[0.0, 0.0]])
        >>> round(cross_entropy_with_logits(logits, Tensor.from_data([[0.5, 0.5]])).item(), 4)
        0.6931
    """
    op = "cross_entropy_with_logits"
    logits = check_float(op, "logits", logits)
    targets = check_float(op, "targets", targets)
    check_same_shape(op, "logits", logits, "targets", targets)
    check_same_dtype(op, "logits", logits, "targets", targets)
    if logits.rank < 1:
        raise ValueError(f"{op}: logits must have rank >= 1 ([..., num_classes]), got a scalar")
    return -(targets * log_softmax(logits, logits.rank - 1)).sum_dim(-1).mean()


def _pad_tokens(tokens: Sequence[int] | None, loss: str) -> tuple[int, ...] | None:
    if tokens is None:
        return None
    try:
        if any(isinstance(token, bool) for token in tokens):
            raise TypeError
        return tuple(operator.index(token) for token in tokens)
    except TypeError:
        raise TypeError(f"{loss}: pad tokens must be ints, got {tokens!r}") from None
