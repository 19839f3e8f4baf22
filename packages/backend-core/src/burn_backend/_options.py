"""Options of the module ops (convolution, pooling, interpolation, attention), as in Burn."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Literal


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


class IndexingUpdateOp(enum.Enum):
    """How ``scatter`` and ``scatter_nd`` combine a value with the one already at its index.

    With ``ASSIGN`` and repeated indices, which value lands is unspecified; the others are exact
    reductions (duplicates add, multiply, or keep the smallest or largest).
    """

    ASSIGN = "assign"
    ADD = "add"
    MUL = "mul"
    MIN = "min"
    MAX = "max"


@dataclass(frozen=True)
class DeformConvOptions:
    """Options of ``deform_conv2d`` (as torchvision's ``deform_conv2d``).

    Attributes:
        stride, padding, dilation: per spatial dim (height, width), as for ``conv2d``.
        weight_groups: groups of the convolution proper (the ``groups`` of ``ConvOptions``).
        offset_groups: groups of input channels that share one set of offsets (and mask).
    """

    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    weight_groups: int = 1
    offset_groups: int = 1


# -- grid sampling -------------------------------------------------------------------------------------
GridSampleMode = Literal["bilinear", "nearest"]
GridSamplePaddingMode = Literal["zeros", "border", "reflection"]
_GRID_SAMPLE_MODES = ("bilinear", "nearest")
_GRID_SAMPLE_PADDING_MODES = ("zeros", "border", "reflection")


@dataclass(frozen=True)
class GridSampleOptions:
    """Options of ``grid_sample_2d``, with the meanings of PyTorch's ``F.grid_sample``.

    Attributes:
        mode: ``"bilinear"`` (the four neighbours, weighted) or ``"nearest"`` (the closest sample,
            halves rounded to even).
        padding_mode: what a sample outside the input reads: ``"zeros"``, ``"border"`` (the coordinate
            clamped to the edge) or ``"reflection"`` (the coordinate reflected at the edges, then clamped).
        align_corners: whether -1 and 1 are the centres of the corner samples (``True``) or the outer
            edges of the corner samples (``False``).
    """

    mode: GridSampleMode = "bilinear"
    padding_mode: GridSamplePaddingMode = "zeros"
    align_corners: bool = False

    def __post_init__(self) -> None:
        if self.mode not in _GRID_SAMPLE_MODES:
            raise ValueError(
                f"GridSampleOptions: unknown mode {self.mode!r}; expected one of {_GRID_SAMPLE_MODES}"
            )
        if self.padding_mode not in _GRID_SAMPLE_PADDING_MODES:
            raise ValueError(
                f"GridSampleOptions: unknown padding_mode {self.padding_mode!r}; expected one of "
                f"{_GRID_SAMPLE_PADDING_MODES}"
            )
        if not isinstance(self.align_corners, bool):
            raise TypeError(f"GridSampleOptions: align_corners must be a bool, got {self.align_corners!r}")


# -- optimizer updates -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class AdamOptions:
    """The settings of one Adam or AdamW update (``OptimizerOps.float_adam_step``).

    Attributes:
        lr: the learning rate.
        beta_1, beta_2: the decays of the first and second moments, in ``[0, 1)``.
        epsilon: added to the denominator.
        time: the number of this step, from 1 (the bias corrections ``1 - beta^time`` use it).
        weight_decay: the decay factor; 0 for none.
        decoupled: AdamW's decay (the parameter scaled by ``1 - lr * weight_decay``) rather than Adam's
            L2 penalty (``weight_decay * param`` added to the gradient).
    """

    lr: float
    beta_1: float
    beta_2: float
    epsilon: float
    time: int
    weight_decay: float = 0.0
    decoupled: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.time, bool) or not isinstance(self.time, int) or self.time < 1:
            raise ValueError(f"AdamOptions: time is the step number, from 1; got {self.time!r}")
        for name in ("beta_1", "beta_2"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"AdamOptions: {name} must be in [0, 1), got {value!r}")

    def scalars(self) -> tuple[float, float, float, float, float, float, float, float]:
        """The update's constants, computed once in double precision: ``beta_1``, ``1 - beta_1``,
        ``beta_2``, ``1 - beta_2``, ``sqrt(1 - beta_2^time)``, ``epsilon``, ``lr / (1 - beta_1^time)``,
        and the factor on the parameter (``1 - lr * weight_decay`` with AdamW's decay, else 1)."""
        correction_1 = 1.0 - self.beta_1**self.time
        correction_2 = 1.0 - self.beta_2**self.time
        keep = 1.0 - self.lr * self.weight_decay if self.decoupled else 1.0
        return (
            self.beta_1,
            1.0 - self.beta_1,
            self.beta_2,
            1.0 - self.beta_2,
            math.sqrt(correction_2),
            self.epsilon,
            self.lr / correction_1,
            keep,
        )


@dataclass(frozen=True)
class SgdOptions:
    """The settings of one SGD update (``OptimizerOps.float_sgd_step``), as ``torch.optim.SGD``'s.

    Attributes:
        lr: the learning rate.
        momentum: the factor the velocity decays by each step; 0 for plain gradient descent (no
            velocity is kept).
        dampening: in ``[0, 1]``; each gradient after the first enters the velocity times
            ``1 - dampening``.
        nesterov: step along ``grad + momentum * velocity`` instead of the velocity.
        weight_decay: the L2 penalty added to the gradient (``weight_decay * param``); 0 for none.
    """

    lr: float
    momentum: float = 0.0
    dampening: float = 0.0
    nesterov: bool = False
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        if not self.momentum >= 0.0:
            raise ValueError(f"SgdOptions: momentum must be >= 0, got {self.momentum!r}")
        if not 0.0 <= self.dampening <= 1.0:
            raise ValueError(f"SgdOptions: dampening must be in [0, 1], got {self.dampening!r}")
