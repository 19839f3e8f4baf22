"""``Linear``: ``y = x @ W + b``."""

from __future__ import annotations

import math

from burn_backend import Device, Tensor
from burn_backend import module as F

from ._config import Config
from ._initializer import Initializer
from ._module import Module
from ._param import Param

__all__ = ["Linear", "LinearConfig"]


class LinearConfig(Config):
    """Settings of a ``Linear`` layer.

    Args:
        d_input: the size of each input's last dim.
        d_output: the size of each output's last dim.
        bias: whether to add a learned bias.
        initializer: how the weight and bias are drawn; the default matches PyTorch's ``nn.Linear``
            (uniform on ``±1/sqrt(d_input)``).
    """

    d_input: int
    d_output: int
    bias: bool = True
    initializer: Initializer = Initializer.KaimingUniform(gain=1 / math.sqrt(3.0))

    def init(self, device: Device) -> Linear:
        """A ``Linear`` layer on ``device``."""
        return Linear(self, device)


class Linear(Module):
    """Applies ``x @ weight + bias`` over the last dim of inputs of any rank.

    ``weight`` has shape ``[d_input, d_output]`` (Burn's layout: the transpose of PyTorch's) and
    ``bias`` ``[d_output]``.

    Example:
        >>> layer = LinearConfig(4, 2).init(device)
        >>> layer(Tensor.ones([3, 4], device)).dims()
        [3, 2]
    """

    def __init__(self, config: LinearConfig, device: Device) -> None:
        if config.d_input <= 0 or config.d_output <= 0:
            raise ValueError(f"Linear: sizes must be positive, got {config.d_input} -> {config.d_output}")
        init, fan_in, fan_out = config.initializer.init, config.d_input, config.d_output
        self.weight: Param = init([fan_in, fan_out], device, fan_in=fan_in, fan_out=fan_out)
        self.bias: Param | None = (
            init([fan_out], device, fan_in=fan_in, fan_out=fan_out) if config.bias else None
        )

    def forward(self, input: Tensor) -> Tensor:
        """``input`` of shape ``[..., d_input]`` to ``[..., d_output]``."""
        return F.linear(input, self.weight.val(), None if self.bias is None else self.bias.val())
