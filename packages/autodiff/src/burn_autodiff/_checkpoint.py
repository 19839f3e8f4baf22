"""Checkpointing strategies: what the graph keeps for backward."""

from __future__ import annotations


class CheckpointStrategy:
    """What ops keep for their backward pass; chosen per ``Autodiff`` instance."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


class NoCheckpointing(CheckpointStrategy):
    """Every op keeps what its backward reads (the default: fastest backward, most memory)."""


class BalancedCheckpointing(CheckpointStrategy):
    """Memory-bound ops (element-wise ops, reshapes, reductions) keep nothing and are recomputed during
    backward from the outputs of compute-bound ops (matmul, convolution), which are kept."""
