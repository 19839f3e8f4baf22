"""Pooling layers: ``MaxPool1d``, ``MaxPool2d``, ``AvgPool1d``, ``AvgPool2d``, ``AdaptiveAvgPool1d`` and
``AdaptiveAvgPool2d``, with their configs."""

from __future__ import annotations

from typing import Any

from burn_backend import Device, Tensor
from burn_backend import module as F

from ._config import Config
from ._module import Module
from ._padding import PaddingConfig1d, PaddingConfig2d, SizesConfig, check_padding, check_sizes, frozen_sizes

__all__ = [
    "MaxPool1d",
    "MaxPool1dConfig",
    "MaxPool2d",
    "MaxPool2dConfig",
    "AvgPool1d",
    "AvgPool1dConfig",
    "AvgPool2d",
    "AvgPool2dConfig",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool1dConfig",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool2dConfig",
]

_LAYOUTS = {1: "[batch, channels, length]", 2: "[batch, channels, height, width]"}


def _check_input(layer: str, input: Tensor, dims: int) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{layer}: input must be a Tensor, got {type(input).__name__}")
    if input.rank != dims + 2:
        raise ValueError(
            f"{layer}: input must have rank {dims + 2} ({_LAYOUTS[dims]}), got shape {input.dims()}"
        )


def _default_stride(config: Any, name: str) -> None:
    """Burn's pools step by the kernel size unless told otherwise (as PyTorch's)."""
    frozen_sizes(config)
    if getattr(config, name) is None:
        object.__setattr__(config, name, config.kernel_size)


def _window(
    layer: str, dims: int, kernel_size: Any, stride: Any, dilation: Any, padding: Any
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The checked kernel, stride, dilation and padding of a pool as ``dims``-tuples."""
    kernel = check_sizes(layer, "kernel_size", kernel_size, dims, 1)
    strides = check_sizes(layer, "stride", stride, dims, 1)
    dilations = check_sizes(layer, "dilation", dilation, dims, 1)
    check_padding(layer, padding, dims)
    return kernel, strides, dilations, padding.calculate_padding(kernel, strides, dilations, layer=layer)


# -- max pooling -------------------------------------------------------------------------------------
class MaxPool1dConfig(Config):
    """Settings of a ``MaxPool1d`` layer.

    Args:
        kernel_size: the window length.
        stride: the step between windows (default: ``kernel_size``, as Burn and PyTorch).
        padding: ``PaddingConfig1d.Valid()`` (default), ``Same()`` (needs stride 1) or ``Explicit(n)``;
            padding never wins the maximum.
        dilation: the spacing between window elements.
        ceil_mode: keep a last partial window.
    """

    kernel_size: int
    stride: int | None = None
    padding: PaddingConfig1d = PaddingConfig1d.Valid()
    dilation: int = 1
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        _default_stride(self, "stride")

    def init(self, device: Device | None = None) -> MaxPool1d:
        """A ``MaxPool1d`` layer (it has no parameters; ``device`` is accepted for uniformity)."""
        return MaxPool1d(self)


class MaxPool1d(Module):
    """The maximum of each window of inputs ``[batch, channels, length]``, as PyTorch's ``nn.MaxPool1d``.

    Example:
        >>> MaxPool1dConfig(2).init()(Tensor.ones([1, 3, 8], device)).dims()
        [1, 3, 4]
    """

    def __init__(self, config: MaxPool1dConfig) -> None:
        stride = config.stride if config.stride is not None else config.kernel_size
        self._window = _window("MaxPool1d", 1, config.kernel_size, stride, config.dilation, config.padding)
        self.stride: int = stride
        self.kernel_size: int = config.kernel_size
        self.padding: PaddingConfig1d = config.padding
        self.dilation: int = config.dilation
        self.ceil_mode: bool = bool(config.ceil_mode)

    def forward(self, input: Tensor) -> Tensor:
        """``input [batch, channels, length_in]`` to ``[batch, channels, length_out]``."""
        _check_input("MaxPool1d", input, 1)
        (kernel,), (stride,), (dilation,), (padding,) = self._window
        return F.max_pool1d(input, kernel, stride, padding, dilation, self.ceil_mode)


class MaxPool2dConfig(Config):
    """Settings of a ``MaxPool2d`` layer.

    Args:
        kernel_size: the window's ``(height, width)``.
        strides: the step between windows along each dim (default: ``kernel_size``, as Burn and PyTorch).
        padding: ``PaddingConfig2d.Valid()`` (default), ``Same()`` (needs strides 1) or
            ``Explicit(height, width)``; padding never wins the maximum.
        dilation: the spacing between window elements along each dim.
        ceil_mode: keep last partial windows.
    """

    kernel_size: tuple[int, int]
    strides: tuple[int, int] | None = None
    padding: PaddingConfig2d = PaddingConfig2d.Valid()
    dilation: tuple[int, int] = (1, 1)
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        _default_stride(self, "strides")

    def init(self, device: Device | None = None) -> MaxPool2d:
        """A ``MaxPool2d`` layer (it has no parameters; ``device`` is accepted for uniformity)."""
        return MaxPool2d(self)


class MaxPool2d(Module):
    """The maximum of each window of inputs ``[batch, channels, height, width]``, as PyTorch's
    ``nn.MaxPool2d``."""

    def __init__(self, config: MaxPool2dConfig) -> None:
        strides = config.strides if config.strides is not None else config.kernel_size
        self._window = _window("MaxPool2d", 2, config.kernel_size, strides, config.dilation, config.padding)
        self.stride: tuple[int, int] = strides
        self.kernel_size: tuple[int, int] = config.kernel_size
        self.padding: PaddingConfig2d = config.padding
        self.dilation: tuple[int, int] = config.dilation
        self.ceil_mode: bool = bool(config.ceil_mode)

    def forward(self, input: Tensor) -> Tensor:
        """``input [batch, channels, height_in, width_in]`` to ``[batch, channels, height_out,
        width_out]``."""
        _check_input("MaxPool2d", input, 2)
        kernel, stride, dilation, padding = self._window
        return F.max_pool2d(input, kernel, stride, padding, dilation, self.ceil_mode)


# -- average pooling ---------------------------------------------------------------------------------
class AvgPool1dConfig(Config):
    """Settings of an ``AvgPool1d`` layer.

    Args:
        kernel_size: the window length.
        stride: the step between windows (default: ``kernel_size``, as Burn and PyTorch).
        padding: ``PaddingConfig1d.Valid()`` (default), ``Same()`` (needs stride 1) or ``Explicit(n)``
            (zeros, at most half the kernel).
        count_include_pad: whether the padding counts in a window's divisor.
        ceil_mode: keep a last partial window (its overhang never counts in the divisor).
    """

    kernel_size: int
    stride: int | None = None
    padding: PaddingConfig1d = PaddingConfig1d.Valid()
    count_include_pad: bool = True
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        _default_stride(self, "stride")

    def init(self, device: Device | None = None) -> AvgPool1d:
        """An ``AvgPool1d`` layer (it has no parameters; ``device`` is accepted for uniformity)."""
        return AvgPool1d(self)


class AvgPool1d(Module):
    """The mean of each window of inputs ``[batch, channels, length]``, as PyTorch's ``nn.AvgPool1d``."""

    def __init__(self, config: AvgPool1dConfig) -> None:
        stride = config.stride if config.stride is not None else config.kernel_size
        self._window = _window("AvgPool1d", 1, config.kernel_size, stride, 1, config.padding)
        self.stride: int = stride
        self.kernel_size: int = config.kernel_size
        self.padding: PaddingConfig1d = config.padding
        self.count_include_pad: bool = bool(config.count_include_pad)
        self.ceil_mode: bool = bool(config.ceil_mode)

    def forward(self, input: Tensor) -> Tensor:
        """``input [batch, channels, length_in]`` to ``[batch, channels, length_out]``."""
        _check_input("AvgPool1d", input, 1)
        (kernel,), (stride,), _, (padding,) = self._window
        return F.avg_pool1d(input, kernel, stride, padding, self.count_include_pad, self.ceil_mode)


class AvgPool2dConfig(Config):
    """Settings of an ``AvgPool2d`` layer.

    Args:
        kernel_size: the window's ``(height, width)``.
        strides: the step between windows along each dim (default: ``kernel_size``, as Burn and PyTorch).
        padding: ``PaddingConfig2d.Valid()`` (default), ``Same()`` (needs strides 1) or
            ``Explicit(height, width)`` (zeros, at most half the kernel).
        count_include_pad: whether the padding counts in a window's divisor.
        ceil_mode: keep last partial windows (their overhang never counts in the divisor).
    """

    kernel_size: tuple[int, int]
    strides: tuple[int, int] | None = None
    padding: PaddingConfig2d = PaddingConfig2d.Valid()
    count_include_pad: bool = True
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        _default_stride(self, "strides")

    def init(self, device: Device | None = None) -> AvgPool2d:
        """An ``AvgPool2d`` layer (it has no parameters; ``device`` is accepted for uniformity)."""
        return AvgPool2d(self)


class AvgPool2d(Module):
    """The mean of each window of inputs ``[batch, channels, height, width]``, as PyTorch's
    ``nn.AvgPool2d``."""

    def __init__(self, config: AvgPool2dConfig) -> None:
        strides = config.strides if config.strides is not None else config.kernel_size
        self._window = _window("AvgPool2d", 2, config.kernel_size, strides, 1, config.padding)
        self.stride: tuple[int, int] = strides
        self.kernel_size: tuple[int, int] = config.kernel_size
        self.padding: PaddingConfig2d = config.padding
        self.count_include_pad: bool = bool(config.count_include_pad)
        self.ceil_mode: bool = bool(config.ceil_mode)

    def forward(self, input: Tensor) -> Tensor:
        """``input [batch, channels, height_in, width_in]`` to ``[batch, channels, height_out,
        width_out]``."""
        _check_input("AvgPool2d", input, 2)
        kernel, stride, _, padding = self._window
        return F.avg_pool2d(input, kernel, stride, padding, self.count_include_pad, self.ceil_mode)


# -- adaptive pooling --------------------------------------------------------------------------------
class AdaptiveAvgPool1dConfig(Config):
    """Settings of an ``AdaptiveAvgPool1d`` layer: ``output_size``, the output's length."""

    output_size: int

    def init(self, device: Device | None = None) -> AdaptiveAvgPool1d:
        """An ``AdaptiveAvgPool1d`` layer (it has no parameters; ``device`` is accepted for uniformity)."""
        return AdaptiveAvgPool1d(self)


class AdaptiveAvgPool1d(Module):
    """Averages inputs ``[batch, channels, length]`` over ``output_size`` windows that cover the length
    (window ``i`` spans ``[floor(i * length / output_size), ceil((i + 1) * length / output_size))``), as
    PyTorch's ``nn.AdaptiveAvgPool1d``."""

    def __init__(self, config: AdaptiveAvgPool1dConfig) -> None:
        (self.output_size,) = check_sizes("AdaptiveAvgPool1d", "output_size", config.output_size, 1, 1)

    def forward(self, input: Tensor) -> Tensor:
        """``input [batch, channels, length]`` to ``[batch, channels, output_size]``."""
        _check_input("AdaptiveAvgPool1d", input, 1)
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2dConfig(SizesConfig):
    """Settings of an ``AdaptiveAvgPool2d`` layer: ``output_size``, the output's ``(height, width)``."""

    output_size: tuple[int, int]

    def init(self, device: Device | None = None) -> AdaptiveAvgPool2d:
        """An ``AdaptiveAvgPool2d`` layer (it has no parameters; ``device`` is accepted for uniformity)."""
        return AdaptiveAvgPool2d(self)


class AdaptiveAvgPool2d(Module):
    """Averages inputs ``[batch, channels, height, width]`` over ``output_size`` windows per plane
    (``AdaptiveAvgPool1d``'s windows along each dim), as PyTorch's ``nn.AdaptiveAvgPool2d``."""

    def __init__(self, config: AdaptiveAvgPool2dConfig) -> None:
        height, width = check_sizes("AdaptiveAvgPool2d", "output_size", config.output_size, 2, 1)
        self.output_size: tuple[int, int] = (height, width)

    def forward(self, input: Tensor) -> Tensor:
        """``input [batch, channels, height, width]`` to ``[batch, channels, *output_size]``."""
        _check_input("AdaptiveAvgPool2d", input, 2)
        return F.adaptive_avg_pool2d(input, self.output_size)
