"""``Reduction``: how a loss turns its element-wise values into the value it returns."""

from __future__ import annotations

import enum

from burn_backend import Tensor

__all__ = ["Reduction"]


class Reduction(enum.Enum):
    """How a loss reduces its element-wise values (Burn's ``Reduction``, plus ``NONE``).

    Members:
        MEAN: the mean of the values (shape ``[1]``).
        SUM: the sum of the values (shape ``[1]``).
        AUTO: the loss's natural default: ``MEAN`` for every loss but ``KLDivLoss``, where it is
            ``BATCH_MEAN`` (the mathematical definition of the divergence).
        BATCH_MEAN: the sum divided by the size of dim 0 (PyTorch's ``"batchmean"``; ``KLDivLoss`` only).
        NONE: no reduction: the element-wise values, shaped as the loss defines (Burn's
            ``forward_no_reduction``).
    """

    MEAN = "mean"
    SUM = "sum"
    AUTO = "auto"
    BATCH_MEAN = "batch_mean"
    NONE = "none"


def check_reduction(loss: str, reduction: object, *, batch_mean: bool = False) -> Reduction:
    """``reduction`` when ``loss`` supports it; raises otherwise (``BATCH_MEAN`` only where allowed)."""
    if not isinstance(reduction, Reduction):
        raise TypeError(f"{loss}: reduction must be a Reduction, got {reduction!r}")
    if reduction is Reduction.BATCH_MEAN and not batch_mean:
        raise ValueError(f"{loss}: Reduction.BATCH_MEAN is not supported; use MEAN, SUM, AUTO or NONE")
    return reduction


def reduce(loss: str, values: Tensor, reduction: Reduction, *, auto: Reduction = Reduction.MEAN) -> Tensor:
    """``values`` reduced as ``reduction`` says (``AUTO`` means ``auto``)."""
    reduction = check_reduction(loss, reduction, batch_mean=auto is Reduction.BATCH_MEAN)
    if reduction is Reduction.AUTO:
        reduction = auto
    if reduction is Reduction.NONE:
        return values
    if reduction is Reduction.SUM:
        return values.sum()
    if reduction is Reduction.BATCH_MEAN:
        return values.sum() / float(values.dims()[0])
    return values.mean()
