"""Options of the module ops (convolution, pooling, interpolation, attention), as in Burn."""

from __future__ import annotations

import enum
from dataclasses import dataclass


@dataclass(frozen=True)
class ConvOptions:
    """Options of an N-d convolution; every tuple has one entry per spatial dimension."""

    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int = 1


@dataclass(frozen=True)
class ConvTransposeOptions:
    """Options of an N-d transposed convolution; every tuple has one entry per spatial dimension."""

    stride: tuple[int, ...]
    padding: tuple[int, ...]
    padding_out: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int = 1


@dataclass(frozen=True)
class UnfoldOptions:
    """Options of ``unfold4d`` (im2col over a 2-d input)."""

    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)


class InterpolateMode(enum.Enum):
    """How ``interpolate`` computes values between input samples."""

    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


@dataclass(frozen=True)
class InterpolateOptions:
    """Options of ``interpolate``; corners are aligned as in Burn (``align_corners=True``)."""

    mode: InterpolateMode = InterpolateMode.NEAREST


@dataclass(frozen=True)
class AttentionOptions:
    """Options of scaled dot-product attention.

    Attributes:
        scale: the factor on ``q @ k^T``; ``None`` means ``1 / sqrt(head_dim)``.
        softcap: if set, scores become ``softcap * tanh(scores / softcap)`` before masking.
        is_causal: mask out keys after each query position.
    """

    scale: float | None = None
    softcap: float | None = None
    is_causal: bool = False
