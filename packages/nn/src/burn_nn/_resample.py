"""Resampling and reshaping layers: ``Interpolate1d``, ``Interpolate2d``, ``PixelShuffle``,
``PixelUnshuffle`` and ``Unfold4d``, with their configs."""

from __future__ import annotations

import enum

from burn_backend import Device, InterpolateOptions, Tensor, UnfoldOptions
from burn_backend import InterpolateMode as BackendInterpolateMode
from burn_backend import module as F

from ._config import Config
from ._module import Module
from ._padding import SizesConfig, check_sizes

__all__ = [
    "InterpolateMode",
    "Interpolate1d",
    "Interpolate1dConfig",
    "Interpolate2d",
    "Interpolate2dConfig",
    "PixelShuffle",
    "PixelShuffleConfig",
    "PixelUnshuffle",
    "PixelUnshuffleConfig",
    "Unfold4d",
    "Unfold4dConfig",
]


class InterpolateMode(enum.Enum):
    """How ``Interpolate1d``/``Interpolate2d`` compute values between input samples, as Burn's
    ``nn::interpolate::InterpolateMode``.

    ``NEAREST`` reads input sample ``floor(o * size_in / size_out)`` (PyTorch's ``nearest``); ``LINEAR``
    and ``CUBIC`` align the corners (PyTorch's ``linear``/``bilinear``/``bicubic`` with
    ``align_corners=True``).
    """

    NEAREST = "nearest"
    LINEAR = "linear"
    CUBIC = "cubic"

    def to_options(self) -> InterpolateOptions:
        """The backend's interpolation options for this mode (linear is bilinear, cubic bicubic)."""
        modes = {
            InterpolateMode.NEAREST: BackendInterpolateMode.NEAREST,
            InterpolateMode.LINEAR: BackendInterpolateMode.BILINEAR,
            InterpolateMode.CUBIC: BackendInterpolateMode.BICUBIC,
        }
        return InterpolateOptions(modes[self])


def _check_input(layer: str, input: Tensor, rank: int, layout: str) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{layer}: input must be a Tensor, got {type(input).__name__}")
    if input.rank != rank:
        raise ValueError(f"{layer}: input must have rank {rank} ({layout}), got shape {input.dims()}")


def _check_resize(
    layer: str, dims: int, output_size: object, scale_factor: object, mode: object
) -> tuple[tuple[int, ...] | None, tuple[float, ...] | None]:
    """The checked output size or scale factor (exactly one of them given) as ``dims``-tuples."""
    if (output_size is None) == (scale_factor is None):
        raise ValueError(
            f"{layer}: Either output_size or scale_factor must be provided (exactly one), got output_size "
            f"{output_size!r} and scale_factor {scale_factor!r}"
        )
    if not isinstance(mode, InterpolateMode):
        raise TypeError(f"{layer}: mode must be an InterpolateMode, got {mode!r}")
    if output_size is not None:
        return check_sizes(layer, "output_size", output_size, dims, 1), None
    factors = (scale_factor,) * dims if isinstance(scale_factor, (int, float)) else scale_factor
    if (
        not isinstance(factors, (tuple, list))
        or len(factors) != dims
        or any(isinstance(f, bool) or not isinstance(f, (int, float)) or not f > 0 for f in factors)
    ):
        raise ValueError(
            f"{layer}: scale_factor must be {'a number' if dims == 1 else f'{dims} numbers'} > 0, "
            f"got {scale_factor!r}"
        )
    return None, tuple(float(f) for f in factors)


def _output_size(
    layer: str, input: Tensor, output_size: tuple[int, ...] | None, scale_factor: tuple[float, ...] | None
) -> tuple[int, ...]:
    """``output_size``, or each spatial size times its scale factor, rounded down (Burn and PyTorch)."""
    if output_size is not None:
        return output_size
    assert scale_factor is not None
    spatial = input.dims()[2:]
    sizes = tuple(int(size * factor) for size, factor in zip(spatial, scale_factor))
    if min(sizes) < 1:
        raise ValueError(
            f"{layer}: scale_factor {list(scale_factor)} makes an empty output from input of shape "
            f"{input.dims()}"
        )
    return sizes


class Interpolate1dConfig(Config):
    """Settings of an ``Interpolate1d`` layer: exactly one of ``output_size`` (the output's length) and
    ``scale_factor`` (the output's length is the input's times it, rounded down), and the ``mode``."""

    output_size: int | None = None
    scale_factor: float | None = None
    mode: InterpolateMode = InterpolateMode.NEAREST

    def init(self, device: Device | None = None) -> Interpolate1d:
        """An ``Interpolate1d`` layer (it has no parameters; ``device`` is accepted for uniformity).

        Raises:
            ValueError: neither or both of ``output_size`` and ``scale_factor`` given, or a size or factor
                that is not positive.
        """
        return Interpolate1d(self)


class Interpolate1d(Module):
    """Resamples inputs ``[batch, channels, length]`` along their length.

    Example:
        >>> layer = Interpolate1dConfig(scale_factor=2.0, mode=InterpolateMode.LINEAR).init()
        >>> layer(Tensor.ones([1, 2, 5], device)).dims()
        [1, 2, 10]
    """

    def __init__(self, config: Interpolate1dConfig) -> None:
        _check_resize("Interpolate1d", 1, config.output_size, config.scale_factor, config.mode)
        self.output_size: int | None = config.output_size
        self.scale_factor: float | None = config.scale_factor
        self.mode: InterpolateMode = config.mode

    def forward(self, input: Tensor) -> Tensor:
        """``input [batch, channels, length_in]`` to ``[batch, channels, length_out]``."""
        _check_input("Interpolate1d", input, 3, "[batch, channels, length]")
        output_size, scale_factor = _check_resize(
            "Interpolate1d", 1, self.output_size, self.scale_factor, self.mode
        )
        (length,) = _output_size("Interpolate1d", input, output_size, scale_factor)
        # a plane of height 1: every mode then reads along the length only
        plane = F.interpolate(input.unsqueeze_dim(2), (1, length), self.mode.to_options())
        return plane.squeeze_dim(2)


class Interpolate2dConfig(SizesConfig):
    """Settings of an ``Interpolate2d`` layer: exactly one of ``output_size`` (the output's ``(height,
    width)``) and ``scale_factor`` (per-dim factors; sizes are rounded down), and the ``mode``."""

    output_size: tuple[int, int] | None = None
    scale_factor: tuple[float, float] | None = None
    mode: InterpolateMode = InterpolateMode.NEAREST

    def init(self, device: Device | None = None) -> Interpolate2d:
        """An ``Interpolate2d`` layer (raises as ``Interpolate1dConfig.init``)."""
        return Interpolate2d(self)


class Interpolate2d(Module):
    """Resamples inputs ``[batch, channels, height, width]`` along their height and width."""

    def __init__(self, config: Interpolate2dConfig) -> None:
        _check_resize("Interpolate2d", 2, config.output_size, config.scale_factor, config.mode)
        self.output_size: tuple[int, int] | None = config.output_size
        self.scale_factor: tuple[float, float] | None = config.scale_factor
        self.mode: InterpolateMode = config.mode

    def forward(self, input: Tensor) -> Tensor:
        """``input [batch, channels, height_in, width_in]`` to ``[batch, channels, height_out,
        width_out]``."""
        _check_input("Interpolate2d", input, 4, "[batch, channels, height, width]")
        output_size, scale_factor = _check_resize(
            "Interpolate2d", 2, self.output_size, self.scale_factor, self.mode
        )
        sizes = _output_size("Interpolate2d", input, output_size, scale_factor)
        return F.interpolate(input, sizes, self.mode.to_options())


class PixelShuffleConfig(Config):
    """Settings of a ``PixelShuffle`` layer: ``upscale_factor``, the factor ``r`` of the height and
    width."""

    upscale_factor: int

    def init(self, device: Device | None = None) -> PixelShuffle:
        """A ``PixelShuffle`` layer (it has no parameters; ``device`` is accepted for uniformity)."""
        return PixelShuffle(self)


class PixelShuffle(Module):
    """Rearranges ``[batch, channels * r * r, height, width]`` into ``[batch, channels, height * r,
    width * r]``: output pixel ``(h * r + i, w * r + j)`` of channel ``c`` is input channel ``c * r * r +
    i * r + j`` at ``(h, w)``, as PyTorch's ``nn.PixelShuffle``. The inverse of ``PixelUnshuffle``."""

    def __init__(self, config: PixelShuffleConfig) -> None:
        (self.upscale_factor,) = check_sizes("PixelShuffle", "upscale_factor", config.upscale_factor, 1, 1)

    def forward(self, input: Tensor) -> Tensor:
        """``input [batch, channels * r * r, height, width]`` to ``[batch, channels, height * r,
        width * r]``."""
        _check_input("PixelShuffle", input, 4, "[batch, channels, height, width]")
        batch, channels, height, width = input.dims()
        r = self.upscale_factor
        if channels % (r * r):
            raise ValueError(
                f"PixelShuffle: input channels ({channels}, shape {input.dims()}) must be divisible by "
                f"upscale_factor^2 ({r * r})"
            )
        out_channels = channels // (r * r)
        return (
            input.reshape([batch, out_channels, r, r, height, width])
            .permute([0, 1, 4, 2, 5, 3])
            .reshape([batch, out_channels, height * r, width * r])
        )


class PixelUnshuffleConfig(Config):
    """Settings of a ``PixelUnshuffle`` layer: ``downscale_factor``, the factor ``r`` dividing the height
    and width."""

    downscale_factor: int

    def init(self, device: Device | None = None) -> PixelUnshuffle:
        """A ``PixelUnshuffle`` layer (it has no parameters; ``device`` is accepted for uniformity)."""
        return PixelUnshuffle(self)


class PixelUnshuffle(Module):
    """Rearranges ``[batch, channels, height * r, width * r]`` into ``[batch, channels * r * r, height,
    width]``, as PyTorch's ``nn.PixelUnshuffle``; the inverse of ``PixelShuffle``."""

    def __init__(self, config: PixelUnshuffleConfig) -> None:
        (self.downscale_factor,) = check_sizes(
            "PixelUnshuffle", "downscale_factor", config.downscale_factor, 1, 1
        )

    def forward(self, input: Tensor) -> Tensor:
        """``input [batch, channels, height * r, width * r]`` to ``[batch, channels * r * r, height,
        width]``."""
        _check_input("PixelUnshuffle", input, 4, "[batch, channels, height, width]")
        batch, channels, height, width = input.dims()
        r = self.downscale_factor
        if height % r or width % r:
            raise ValueError(
                f"PixelUnshuffle: input height and width ({height}, {width}; shape {input.dims()}) must be "
                f"divisible by downscale_factor ({r})"
            )
        return (
            input.reshape([batch, channels, height // r, r, width // r, r])
            .permute([0, 1, 3, 5, 2, 4])
            .reshape([batch, channels * r * r, height // r, width // r])
        )


class Unfold4dConfig(SizesConfig):
    """Settings of an ``Unfold4d`` layer: the window's ``kernel_size``, ``stride``, ``dilation`` and
    ``padding`` (zeros on both sides), each a ``(height, width)`` pair."""

    kernel_size: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)

    def init(self, device: Device | None = None) -> Unfold4d:
        """An ``Unfold4d`` layer (it has no parameters; ``device`` is accepted for uniformity)."""
        return Unfold4d(self)


class Unfold4d(Module):
    """The sliding windows of inputs ``[batch, channels, height, width]`` as columns (im2col), as
    PyTorch's ``nn.Unfold``: ``[batch, channels * kh * kw, windows]``, channel-major then kernel row and
    column, windows in row-major order."""

    def __init__(self, config: Unfold4dConfig) -> None:
        kh, kw = check_sizes("Unfold4d", "kernel_size", config.kernel_size, 2, 1)
        sh, sw = check_sizes("Unfold4d", "stride", config.stride, 2, 1)
        dh, dw = check_sizes("Unfold4d", "dilation", config.dilation, 2, 1)
        ph, pw = check_sizes("Unfold4d", "padding", config.padding, 2, 0)
        self.kernel_size: tuple[int, int] = (kh, kw)
        self.stride: tuple[int, int] = (sh, sw)
        self.dilation: tuple[int, int] = (dh, dw)
        self.padding: tuple[int, int] = (ph, pw)

    def forward(self, input: Tensor) -> Tensor:
        """``input [batch, channels, height, width]`` to ``[batch, channels * kh * kw, windows]``."""
        _check_input("Unfold4d", input, 4, "[batch, channels, height, width]")
        return F.unfold4d(input, self.kernel_size, UnfoldOptions(self.stride, self.padding, self.dilation))
