"""The masks attention takes: the causal mask (``generate_autoregressive_mask``) and padding masks of
token sequences (``generate_padding_mask``, sized by a ``SeqLengthOption``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from burn_backend import Device, DType, Tensor

from ._config import variant

__all__ = [
    "GeneratePaddingMask",
    "SeqLengthOption",
    "generate_autoregressive_mask",
    "generate_padding_mask",
]


def generate_autoregressive_mask(batch_size: int, seq_length: int, device: Device) -> Tensor:
    """The causal attention mask: Bool ``[batch_size, seq_length, seq_length]``, true above the diagonal
    (position ``i`` may not attend to positions after it).

    Example:
        >>> generate_autoregressive_mask(1, 3, device).to_data().tolist()
        [[[False, True, True], [False, False, True], [False, False, False]]]
    """
    if batch_size < 0 or seq_length < 0:
        raise ValueError(
            f"generate_autoregressive_mask: sizes must be non-negative, got {batch_size} and {seq_length}"
        )
    upper = np.triu(np.ones((seq_length, seq_length), dtype=np.bool_), k=1)
    return Tensor.from_data(np.broadcast_to(upper, (batch_size, seq_length, seq_length)), device, DType.BOOL)


@variant
class SeqLengthOption:
    """How ``generate_padding_mask`` sizes its sequences (Burn's ``SeqLengthOption``):
    ``SeqLengthOption.NoMax()`` (the longest sequence), ``Max(length)`` (the longest, truncated to
    ``length``), ``Fixed(length)`` (exactly ``length``: padded or truncated)."""

    NoMax: ClassVar[type[NoMax]]
    Max: ClassVar[type[Max]]
    Fixed: ClassVar[type[Fixed]]

    def size(self, longest: int) -> int:
        """The padded length for a batch whose longest sequence has ``longest`` tokens."""
        raise NotImplementedError(f"{type(self).__name__} is not a SeqLengthOption kind")


@dataclass(frozen=True)
class NoMax(SeqLengthOption):
    """As long as the longest sequence."""

    def size(self, longest: int) -> int:
        return longest


@dataclass(frozen=True)
class Max(SeqLengthOption):
    """As long as the longest sequence, at most ``length``."""

    length: int

    def size(self, longest: int) -> int:
        return min(longest, self.length)


@dataclass(frozen=True)
class Fixed(SeqLengthOption):
    """Exactly ``length``."""

    length: int

    def size(self, longest: int) -> int:
        return self.length


for _kind in (NoMax, Max, Fixed):
    _kind.__qualname__ = f"SeqLengthOption.{_kind.__name__}"
    setattr(SeqLengthOption, _kind.__name__, _kind)


@dataclass(frozen=True)
class GeneratePaddingMask:
    """The result of ``generate_padding_mask``.

    Attributes:
        tensor: Int ``[batch, seq]``, the tokens padded with the pad token (and truncated).
        mask: Bool ``[batch, seq]``, true where ``tensor`` holds the pad token.
    """

    tensor: Tensor
    mask: Tensor


def generate_padding_mask(
    pad_token: int,
    tokens_list: Sequence[Sequence[int]],
    seq_length: SeqLengthOption | int | None,
    device: Device,
) -> GeneratePaddingMask:
    """Pad a batch of token sequences to one length and mark the padding.

    Args:
        pad_token: the token that pads; every position holding it is masked (as in Burn, also a pad
            token inside a sequence).
        tokens_list: the token ids of each sequence.
        seq_length: a ``SeqLengthOption``; an int is ``SeqLengthOption.Max(int)`` and ``None`` is
            ``NoMax()``, as Burn's conversion from ``Option<usize>``.
        device: where the tensors go.

    Returns:
        ``GeneratePaddingMask`` with the padded Int ``tensor`` and the Bool ``mask``.

    Example:
        >>> generate_padding_mask(0, [[3, 4], [5]], None, device).mask.to_data().tolist()
        [[False, False], [False, True]]
    """
    if seq_length is None:
        option: SeqLengthOption = NoMax()
    elif isinstance(seq_length, SeqLengthOption):
        option = seq_length
    elif isinstance(seq_length, int) and not isinstance(seq_length, bool):
        option = Max(seq_length)
    else:
        raise TypeError(
            f"generate_padding_mask: seq_length must be a SeqLengthOption, an int or None, "
            f"got {type(seq_length).__name__}"
        )
    longest = max((len(tokens) for tokens in tokens_list), default=1)
    size = option.size(longest)
    if size < 0:
        raise ValueError(f"generate_padding_mask: the sequence length must be non-negative, got {size}")
    padded = np.full((len(tokens_list), size), pad_token, dtype=np.int64)
    for row, tokens in enumerate(tokens_list):
        kept = list(tokens)[:size]
        padded[row, : len(kept)] = kept
    tensor = Tensor.from_data(padded, device)
    return GeneratePaddingMask(tensor=tensor, mask=tensor.equal_elem(pad_token))
