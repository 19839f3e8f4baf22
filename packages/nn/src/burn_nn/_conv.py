"""Convolution layers: ``Conv1d``, ``Conv2d``, ``Conv3d`` and the transposed ``ConvTranspose1d``,
``ConvTranspose2d``, ``ConvTranspose3d``, with their configs."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from burn_backend import ConvOptions, ConvTransposeOptions, Device, Tensor
from burn_backend import module as F

from ._config import Config
from ._initializer import Initializer
from ._module import Module
from ._padding import (
    PaddingConfig1d,
    PaddingConfig2d,
    PaddingConfig3d,
    SizesConfig,
    check_padding,
    check_sizes,
)
from ._param import Param

__all__ = [
    "Conv1d",
    "Conv1dConfig",
    "Conv2d",
    "Conv2dConfig",
    "Conv3d",
    "Conv3dConfig",
    "ConvTranspose1d",
    "ConvTranspose1dConfig",
    "ConvTranspose2d",
    "ConvTranspose2dConfig",
    "ConvTranspose3d",
    "ConvTranspose3dConfig",
]

Size = TypeVar("Size", bound=int | tuple[int, ...])  # of the sizes along the spatial dims
Padding = TypeVar("Padding", bound=PaddingConfig1d | PaddingConfig2d | PaddingConfig3d)

# PyTorch's default for convolution weights and biases: uniform on ±1/sqrt(fan_in)
_TORCH_DEFAULT = Initializer.KaimingUniform(gain=1 / math.sqrt(3.0))

_LAYOUTS = {
    1: "[batch, channels_in, length]",
    2: "[batch, channels_in, height, width]",
    3: "[batch, channels_in, depth, height, width]",
}


_CONV: dict[int, Callable[[Tensor, Tensor, Tensor | None, ConvOptions], Tensor]] = {
    1: F.conv1d,
    2: F.conv2d,
    3: F.conv3d,
}
_CONV_TRANSPOSE: dict[int, Callable[[Tensor, Tensor, Tensor | None, ConvTransposeOptions], Tensor]] = {
    1: F.conv_transpose1d,
    2: F.conv_transpose2d,
    3: F.conv_transpose3d,
}


def _weight_and_bias(
    shape: list[int], channels_out: int, bias: bool, initializer: Initializer, device: Device
) -> tuple[Param, Param | None]:
    """The weight of ``shape`` and the optional bias, with fans from the weight's shape as PyTorch
    computes them: ``fan_in = shape[1] * prod(kernel)``, ``fan_out = shape[0] * prod(kernel)``."""
    receptive = math.prod(shape[2:])
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
    weight = initializer.init(shape, device, fan_in=fan_in, fan_out=fan_out)
    bias_param = initializer.init([channels_out], device, fan_in=fan_in, fan_out=fan_out) if bias else None
    return weight, bias_param


def _check_channels(layer: str, channels_in: int, channels_out: int, groups: int) -> None:
    for name, count in (("channels_in", channels_in), ("channels_out", channels_out), ("groups", groups)):
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"{layer}: {name} must be a positive int, got {count!r}")
    if channels_in % groups or channels_out % groups:
        raise ValueError(
            f"{layer}: Both channels must be divisible by the number of groups: channels_in {channels_in} "
            f"and channels_out {channels_out}, groups {groups}"
        )


def _check_input(layer: str, input: Tensor, dims: int, channels_in: int) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{layer}: input must be a Tensor, got {type(input).__name__}")
    if input.rank != dims + 2:
        raise ValueError(
            f"{layer}: input must have rank {dims + 2} ({_LAYOUTS[dims]}), got shape {input.dims()}"
        )
    if input.dims()[1] != channels_in:
        raise ValueError(
            f"{layer}: input has {input.dims()[1]} channels (shape {input.dims()}), expected channels_in = "
            f"{channels_in}"
        )


# -- convolution -------------------------------------------------------------------------------------
class _Conv(Module, Generic[Size, Padding]):
    """The forward pass of ``Conv1d``/``Conv2d``/``Conv3d``."""

    _DIMS: ClassVar[int]
    weight: Param
    bias: Param | None
    stride: Size
    kernel_size: Size
    dilation: Size
    groups: int
    padding: Padding

    def _build(
        self,
        channels_in: int,
        channels_out: int,
        config: Any,
        device: Device,
    ) -> None:
        layer, dims = type(self).__name__, self._DIMS
        _check_channels(layer, channels_in, channels_out, config.groups)
        kernel = check_sizes(layer, "kernel_size", config.kernel_size, dims, 1)
        stride = check_sizes(layer, "stride", config.stride, dims, 1)
        dilation = check_sizes(layer, "dilation", config.dilation, dims, 1)
        check_padding(layer, config.padding, dims)
        # Same padding that cannot be symmetric fails here, not at the first forward
        padding = config.padding.calculate_padding(kernel, stride, dilation, layer=layer)
        self._options = ConvOptions(stride, padding, dilation, config.groups)
        shape = [channels_out, channels_in // config.groups, *kernel]
        self.weight, self.bias = _weight_and_bias(
            shape, channels_out, config.bias, config.initializer, device
        )
        self.stride = config.stride
        self.kernel_size = config.kernel_size
        self.dilation = config.dilation
        self.groups = config.groups
        self.padding = config.padding

    def forward(self, input: Tensor) -> Tensor:
        """``input`` of shape ``[batch, channels_in, *spatial_in]`` to ``[batch, channels_out,
        *spatial_out]``, each ``spatial_out = (spatial_in + 2 * padding - dilation * (kernel_size - 1) - 1)
        // stride + 1``."""
        layer, dims = type(self).__name__, self._DIMS
        _check_input(layer, input, dims, self.weight.shape[1] * self.groups)
        bias = None if self.bias is None else self.bias.val()
        return _CONV[dims](input, self.weight.val(), bias, self._options)


class Conv1dConfig(Config):
    """Settings of a ``Conv1d`` layer.

    Args:
        channels_in: the number of input channels.
        channels_out: the number of output channels.
        kernel_size: the kernel's length.
        stride: the step between windows.
        dilation: the spacing between kernel elements.
        groups: the number of groups the channels are split in (it divides both channel counts).
        padding: ``PaddingConfig1d.Valid()`` (default), ``Same()`` or ``Explicit(length)``.
        bias: whether to add a learned bias.
        initializer: how the weight and bias are drawn, with ``fan_in = channels_in / groups *
            kernel_size``; the default matches PyTorch's ``nn.Conv1d`` (uniform on ``±1/sqrt(fan_in)``).
    """

    channels_in: int
    channels_out: int
    kernel_size: int
    stride: int = 1
    dilation: int = 1
    groups: int = 1
    padding: PaddingConfig1d = PaddingConfig1d.Valid()
    bias: bool = True
    initializer: Initializer = _TORCH_DEFAULT

    def init(self, device: Device) -> Conv1d:
        """A ``Conv1d`` layer on ``device``.

        Raises:
            ValueError: non-positive sizes, groups not dividing the channels, or ``Same`` padding that
                cannot keep the length (stride other than 1, even kernel).
        """
        return Conv1d(self, device)


class Conv1d(_Conv[int, PaddingConfig1d]):
    """Applies a 1-d convolution (cross-correlation, as PyTorch's ``nn.Conv1d``) over inputs of shape
    ``[batch, channels_in, length]``.

    ``weight`` has shape ``[channels_out, channels_in / groups, kernel_size]`` (PyTorch's and Burn's
    layout) and ``bias`` ``[channels_out]``.

    Example:
        >>> conv = Conv1dConfig(4, 8, 3, padding=PaddingConfig1d.Same()).init(device)
        >>> conv(Tensor.ones([2, 4, 10], device)).dims()
        [2, 8, 10]
    """

    _DIMS = 1

    def __init__(self, config: Conv1dConfig, device: Device) -> None:
        self._build(config.channels_in, config.channels_out, config, device)


class Conv2dConfig(SizesConfig):
    """Settings of a ``Conv2d`` layer.

    Args:
        channels: ``(channels_in, channels_out)``.
        kernel_size: the kernel's ``(height, width)``.
        stride: the step between windows along each dim.
        dilation: the spacing between kernel elements along each dim.
        groups: the number of groups the channels are split in (it divides both channel counts).
        padding: ``PaddingConfig2d.Valid()`` (default), ``Same()`` or ``Explicit(height, width)``.
        bias: whether to add a learned bias.
        initializer: how the weight and bias are drawn, with ``fan_in = channels_in / groups * kh * kw``;
            the default matches PyTorch's ``nn.Conv2d`` (uniform on ``±1/sqrt(fan_in)``).

    Example:
        >>> Conv2dConfig((3, 8), (3, 3), padding=PaddingConfig2d.Explicit(1, 1)).init(device)
    """

    channels: tuple[int, int]
    kernel_size: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    padding: PaddingConfig2d = PaddingConfig2d.Valid()
    bias: bool = True
    initializer: Initializer = _TORCH_DEFAULT

    def init(self, device: Device) -> Conv2d:
        """A ``Conv2d`` layer on ``device`` (raises as ``Conv1dConfig.init``)."""
        return Conv2d(self, device)


class Conv2d(_Conv[tuple[int, int], PaddingConfig2d]):
    """Applies a 2-d convolution (as PyTorch's ``nn.Conv2d``) over inputs of shape ``[batch,
    channels_in, height, width]``.

    ``weight`` has shape ``[channels_out, channels_in / groups, kh, kw]`` and ``bias``
    ``[channels_out]``.
    """

    _DIMS = 2

    def __init__(self, config: Conv2dConfig, device: Device) -> None:
        channels = check_sizes("Conv2d", "channels", config.channels, 2, 1)
        self._build(channels[0], channels[1], config, device)


class Conv3dConfig(SizesConfig):
    """Settings of a ``Conv3d`` layer: as ``Conv2dConfig`` with ``(depth, height, width)`` sizes and a
    ``PaddingConfig3d``."""

    channels: tuple[int, int]
    kernel_size: tuple[int, int, int]
    stride: tuple[int, int, int] = (1, 1, 1)
    dilation: tuple[int, int, int] = (1, 1, 1)
    groups: int = 1
    padding: PaddingConfig3d = PaddingConfig3d.Valid()
    bias: bool = True
    initializer: Initializer = _TORCH_DEFAULT

    def init(self, device: Device) -> Conv3d:
        """A ``Conv3d`` layer on ``device`` (raises as ``Conv1dConfig.init``)."""
        return Conv3d(self, device)


class Conv3d(_Conv[tuple[int, int, int], PaddingConfig3d]):
    """Applies a 3-d convolution (as PyTorch's ``nn.Conv3d``) over inputs of shape ``[batch,
    channels_in, depth, height, width]``.

    ``weight`` has shape ``[channels_out, channels_in / groups, kd, kh, kw]`` and ``bias``
    ``[channels_out]``.
    """

    _DIMS = 3

    def __init__(self, config: Conv3dConfig, device: Device) -> None:
        channels = check_sizes("Conv3d", "channels", config.channels, 2, 1)
        self._build(channels[0], channels[1], config, device)


# -- transposed convolution --------------------------------------------------------------------------
class _ConvTranspose(Module, Generic[Size]):
    """The forward pass of ``ConvTranspose1d``/``2d``/``3d``."""

    _DIMS: ClassVar[int]
    weight: Param
    bias: Param | None
    stride: Size
    kernel_size: Size
    dilation: Size
    padding: Size
    padding_out: Size
    groups: int
    channels: tuple[int, int]

    def _build(self, config: Any, device: Device) -> None:
        layer, dims = type(self).__name__, self._DIMS
        channels_in, channels_out = check_sizes(layer, "channels", config.channels, 2, 1)
        _check_channels(layer, channels_in, channels_out, config.groups)
        kernel = check_sizes(layer, "kernel_size", config.kernel_size, dims, 1)
        stride = check_sizes(layer, "stride", config.stride, dims, 1)
        dilation = check_sizes(layer, "dilation", config.dilation, dims, 1)
        padding = check_sizes(layer, "padding", config.padding, dims, 0)
        padding_out = check_sizes(layer, "padding_out", config.padding_out, dims, 0)
        if any(q >= max(s, d) for q, s, d in zip(padding_out, stride, dilation)):
            raise ValueError(
                f"{layer}: padding_out {list(padding_out)} must be smaller than the stride {list(stride)} or "
                f"the dilation {list(dilation)} along each dim"
            )
        shape = [channels_in, channels_out // config.groups, *kernel]
        self.weight, self.bias = _weight_and_bias(
            shape, channels_out, config.bias, config.initializer, device
        )
        self.stride = config.stride
        self.kernel_size = config.kernel_size
        self.dilation = config.dilation
        self.groups = config.groups
        self.padding = config.padding
        self.padding_out = config.padding_out
        self.channels = (channels_in, channels_out)
        self._options = ConvTransposeOptions(stride, padding, padding_out, dilation, config.groups)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` of shape ``[batch, channels_in, *spatial_in]`` to ``[batch, channels_out,
        *spatial_out]``, each ``spatial_out = (spatial_in - 1) * stride - 2 * padding + dilation *
        (kernel_size - 1) + padding_out + 1``."""
        layer, dims = type(self).__name__, self._DIMS
        _check_input(layer, input, dims, self.channels[0])
        bias = None if self.bias is None else self.bias.val()
        return _CONV_TRANSPOSE[dims](input, self.weight.val(), bias, self._options)


class ConvTranspose1dConfig(SizesConfig):
    """Settings of a ``ConvTranspose1d`` layer.

    Args:
        channels: ``(channels_in, channels_out)``.
        kernel_size: the kernel's length.
        stride: the step between the input's samples in the output.
        dilation: the spacing between kernel elements.
        groups: the number of groups the channels are split in (it divides both channel counts).
        padding: samples removed at both ends of the full output.
        padding_out: samples added at the end of the output (smaller than the stride or the dilation), to
            pick among the output lengths that the stride maps to one input length.
        bias: whether to add a learned bias.
        initializer: how the weight and bias are drawn, with ``fan_in = channels_out / groups *
            kernel_size`` (PyTorch's fan of the transposed weight); the default matches PyTorch's
            ``nn.ConvTranspose1d`` (uniform on ``±1/sqrt(fan_in)``).
    """

    channels: tuple[int, int]
    kernel_size: int
    stride: int = 1
    dilation: int = 1
    groups: int = 1
    padding: int = 0
    padding_out: int = 0
    bias: bool = True
    initializer: Initializer = _TORCH_DEFAULT

    def init(self, device: Device) -> ConvTranspose1d:
        """A ``ConvTranspose1d`` layer on ``device``.

        Raises:
            ValueError: non-positive sizes, groups not dividing the channels, or ``padding_out`` not
                smaller than the stride or the dilation.
        """
        return ConvTranspose1d(self, device)


class ConvTranspose1d(_ConvTranspose[int]):
    """Applies a 1-d transposed convolution (the gradient of a convolution with respect to its input, as
    PyTorch's ``nn.ConvTranspose1d``) over inputs of shape ``[batch, channels_in, length]``.

    ``weight`` has shape ``[channels_in, channels_out / groups, kernel_size]`` (PyTorch's and Burn's
    layout) and ``bias`` ``[channels_out]``.
    """

    _DIMS = 1

    def __init__(self, config: ConvTranspose1dConfig, device: Device) -> None:
        self._build(config, device)


class ConvTranspose2dConfig(SizesConfig):
    """Settings of a ``ConvTranspose2d`` layer: as ``ConvTranspose1dConfig`` with ``(height, width)``
    sizes."""

    channels: tuple[int, int]
    kernel_size: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    padding: tuple[int, int] = (0, 0)
    padding_out: tuple[int, int] = (0, 0)
    bias: bool = True
    initializer: Initializer = _TORCH_DEFAULT

    def init(self, device: Device) -> ConvTranspose2d:
        """A ``ConvTranspose2d`` layer on ``device`` (raises as ``ConvTranspose1dConfig.init``)."""
        return ConvTranspose2d(self, device)


class ConvTranspose2d(_ConvTranspose[tuple[int, int]]):
    """Applies a 2-d transposed convolution (as PyTorch's ``nn.ConvTranspose2d``) over inputs of shape
    ``[batch, channels_in, height, width]``; ``weight`` has shape ``[channels_in, channels_out / groups,
    kh, kw]``."""

    _DIMS = 2

    def __init__(self, config: ConvTranspose2dConfig, device: Device) -> None:
        self._build(config, device)


class ConvTranspose3dConfig(SizesConfig):
    """Settings of a ``ConvTranspose3d`` layer: as ``ConvTranspose1dConfig`` with ``(depth, height,
    width)`` sizes."""

    channels: tuple[int, int]
    kernel_size: tuple[int, int, int]
    stride: tuple[int, int, int] = (1, 1, 1)
    dilation: tuple[int, int, int] = (1, 1, 1)
    groups: int = 1
    padding: tuple[int, int, int] = (0, 0, 0)
    padding_out: tuple[int, int, int] = (0, 0, 0)
    bias: bool = True
    initializer: Initializer = _TORCH_DEFAULT

    def init(self, device: Device) -> ConvTranspose3d:
        """A ``ConvTranspose3d`` layer on ``device`` (raises as ``ConvTranspose1dConfig.init``)."""
        return ConvTranspose3d(self, device)


class ConvTranspose3d(_ConvTranspose[tuple[int, int, int]]):
    """Applies a 3-d transposed convolution (as PyTorch's ``nn.ConvTranspose3d``) over inputs of shape
    ``[batch, channels_in, depth, height, width]``; ``weight`` has shape ``[channels_in, channels_out /
    groups, kd, kh, kw]``."""

    _DIMS = 3

    def __init__(self, config: ConvTranspose3dConfig, device: Device) -> None:
        self._build(config, device)
