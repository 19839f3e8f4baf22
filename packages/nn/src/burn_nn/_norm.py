"""Normalization layers."""

from __future__ import annotations

from burn_backend import Device, Tensor
from burn_backend import module as F

from ._config import Config
from ._initializer import Initializer
from ._module import Module
from ._param import Param

__all__ = ["LayerNorm", "LayerNormConfig"]


class LayerNormConfig(Config):
    """Settings of a ``LayerNorm``: ``d_model`` (the size of the normalized last dim), ``epsilon``, and
    whether to learn the ``gamma`` scale and ``beta`` shift (``elementwise_affine``, ``bias``)."""

    d_model: int
    epsilon: float = 1e-5
    elementwise_affine: bool = True
    bias: bool = True

    def init(self, device: Device) -> LayerNorm:
        """A ``LayerNorm`` on ``device``."""
        return LayerNorm(self, device)


class LayerNorm(Module):
    """Normalizes the last dim to zero mean and unit (biased) variance, then scales by ``gamma`` (ones
    at first) and shifts by ``beta`` (zeros at first), as PyTorch's ``nn.LayerNorm(d_model)``."""

    def __init__(self, config: LayerNormConfig, device: Device) -> None:
        if config.d_model <= 0:
            raise ValueError(f"LayerNorm: d_model must be positive, got {config.d_model}")
        self.epsilon = float(config.epsilon)
        affine = config.elementwise_affine
        self.gamma: Param | None = Initializer.Ones().init([config.d_model], device) if affine else None
        self.beta: Param | None = (
            Initializer.Zeros().init([config.d_model], device) if affine and config.bias else None
        )

    def forward(self, input: Tensor) -> Tensor:
        """``input`` of shape ``[..., d_model]``, normalized over its last dim."""
        return F.layer_norm(
            input,
            None if self.gamma is None else self.gamma.val(),
            None if self.beta is None else self.beta.val(),
            self.epsilon,
        )
