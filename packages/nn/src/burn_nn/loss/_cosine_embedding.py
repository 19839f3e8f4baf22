"""``CosineEmbeddingLoss``: pulls pairs of embeddings together or pushes them apart by cosine similarity."""

from __future__ import annotations

from burn_backend import Device, Tensor

from .._config import Config
from .._module import Module
from ._checks import check_float, check_int, check_same_dtype, check_same_shape
from ._reduction import Reduction, check_reduction, reduce

__all__ = ["CosineEmbeddingLoss", "CosineEmbeddingLossConfig"]

_LOSS = "CosineEmbeddingLoss"

# PyTorch's cosine_embedding_loss adds this to the squared norms: zero vectors have similarity 0 and a
# finite gradient
_NORM_EPSILON = 1e-12


class CosineEmbeddingLossConfig(Config):
    """Settings of a ``CosineEmbeddingLoss``.

    Args:
        margin: dissimilar pairs cost ``max(0, cos - margin)``; typically in ``[-1, 1]``.
        reduction: how ``forward`` reduces the loss of each pair: ``MEAN`` (the default, as ``AUTO``),
            ``SUM`` or ``NONE``.
    """

    margin: float = 0.0
    reduction: Reduction = Reduction.MEAN

    def init(self, device: Device | None = None) -> CosineEmbeddingLoss:
        """A ``CosineEmbeddingLoss`` (it holds no tensors; ``device`` is accepted for uniformity).

        Raises:
            ValueError: the reduction is ``BATCH_MEAN``.
        """
        return CosineEmbeddingLoss(self)


class CosineEmbeddingLoss(Module):
    """For each pair of rows ``(a, b)`` with target 1: ``1 - cos(a, b)``; with target -1:
    ``max(0, cos(a, b) - margin)``; other targets cost 0 (PyTorch's ``cosine_embedding_loss``).

    The similarity is ``a . b / sqrt((|a|^2 + 1e-12) (|b|^2 + 1e-12))``, as PyTorch computes it.
    """

    def __init__(self, config: CosineEmbeddingLossConfig) -> None:
        self.margin: float = float(config.margin)
        self.reduction: Reduction = check_reduction(_LOSS, config.reduction)

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """The loss of the pairs, reduced as configured (shape ``[1]``, or ``[batch_size]`` for ``NONE``).

        Args:
            input1: Float ``[batch_size, embedding_dim]``.
            input2: the same shape and dtype.
            target: Int ``[batch_size]``: 1 for similar pairs, -1 for dissimilar ones.

        Raises:
            TypeError: the inputs are not Float of one dtype, or ``target`` is not Int.
            ValueError: the shapes do not fit.
        """
        return reduce(_LOSS, self.forward_no_reduction(input1, input2, target), self.reduction)

    def forward_no_reduction(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """The loss of each pair: ``[batch_size]``."""
        input1 = check_float(_LOSS, "input1", input1, rank=2)
        input2 = check_float(_LOSS, "input2", input2, rank=2)
        target = check_int(_LOSS, "target", target, rank=1)
        check_same_shape(_LOSS, "input1", input1, "input2", input2)
        check_same_dtype(_LOSS, "input1", input1, "input2", input2)
        batch_size = input1.dims()[0]
        if target.dims() != [batch_size]:
            raise ValueError(
                f"{_LOSS}: target must have shape [{batch_size}] for inputs of shape {input1.dims()}, "
                f"got {target.dims()}"
            )
        dot = (input1 * input2).sum_dim(1)
        squared_norms = (input1.square().sum_dim(1) + _NORM_EPSILON) * (
            input2.square().sum_dim(1) + _NORM_EPSILON
        )
        cosine = (dot / squared_norms.sqrt()).reshape([batch_size])
        similar = (1.0 - cosine).mask_fill(target.not_equal_elem(1), 0.0)
        dissimilar = (cosine - self.margin).clamp_min(0.0).mask_fill(target.not_equal_elem(-1), 0.0)
        return similar + dissimilar
