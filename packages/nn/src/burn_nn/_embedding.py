"""``Embedding``: a lookup table of learned vectors."""

from __future__ import annotations

from burn_backend import Device, Kind, Tensor
from burn_backend import module as F

from ._config import Config
from ._initializer import Initializer
from ._module import Module
from ._param import Param

__all__ = ["Embedding", "EmbeddingConfig"]


class EmbeddingConfig(Config):
    """Settings of an ``Embedding`` layer.

    Args:
        n_embedding: the number of vectors (the indices lie in ``[0, n_embedding)``).
        d_model: the size of each vector.
        initializer: how the table is drawn; the default matches PyTorch's ``nn.Embedding`` (standard
            normal).
    """

    n_embedding: int
    d_model: int
    initializer: Initializer = Initializer.Normal(mean=0.0, std=1.0)

    def init(self, device: Device) -> Embedding:
        """An ``Embedding`` layer on ``device``."""
        return Embedding(self, device)


class Embedding(Module):
    """Looks up the rows of ``weight [n_embedding, d_model]`` that Int indices pick.

    Example:
        >>> table = EmbeddingConfig(100, 16).init(device)
        >>> table(Tensor.from_data([[1, 5, 7]], device)).dims()
        [1, 3, 16]
    """

    def __init__(self, config: EmbeddingConfig, device: Device) -> None:
        for name in ("n_embedding", "d_model"):
            size = getattr(config, name)
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise ValueError(f"Embedding: {name} must be a positive int, got {size!r}")
        shape = [config.n_embedding, config.d_model]
        # the fans PyTorch computes for its [num_embeddings, embedding_dim] table
        self.weight: Param = config.initializer.init(
            shape, device, fan_in=config.d_model, fan_out=config.n_embedding
        )

    def forward(self, input: Tensor) -> Tensor:
        """Int ``input [batch, seq]`` (any shape of rank >= 1) to ``[batch, seq, d_model]``."""
        if not isinstance(input, Tensor) or input.kind is not Kind.INT:
            described = input.dtype if isinstance(input, Tensor) else type(input).__name__
            raise TypeError(f"Embedding: input must be an Int tensor of indices, got {described}")
        return F.embedding(self.weight.val(), input)
